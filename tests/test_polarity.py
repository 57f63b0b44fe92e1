"""What a condition says about CUDA (guards.Guards.polarity), read on a small script: a flag that turns the GPU
off (`--no-cuda`) is a setting, not a check, so `not args.no_cuda and torch.cuda.is_available()` is a check by its
availability call alone (it was read as "no CUDA": the flag's name counted as an opt-in to the GPU)."""

from __future__ import annotations

import libcst as cst
import pytest

from devlint.context import Context
from devlint.guards import Polarity, guards

SCRIPT = """\
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--no-cuda", action="store_true", default=False)
parser.add_argument("--disable-cuda", action="store_true")
parser.add_argument("--use-gpu", action="store_true")
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()
"""


@pytest.mark.parametrize(("condition", "expected"), [
    ("not args.no_cuda and torch.cuda.is_available()", Polarity.AVAILABLE),
    ("args.cuda", Polarity.AVAILABLE),
    ("not args.disable_cuda and torch.cuda.is_available()", Polarity.AVAILABLE),
    ("args.no_cuda", Polarity.NONE),
    ("not args.no_cuda", Polarity.NONE),
    ("args.use_gpu", Polarity.AVAILABLE),
    ("not torch.cuda.is_available()", Polarity.UNAVAILABLE),
])
def test_condition_polarity(condition: str, expected: Polarity) -> None:
    text = SCRIPT + f"if {condition}:\n    pass\n"
    ctx = Context(cst.parse_module(text), "train.py", text)
    test = list(ctx.nodes(cst.If))[-1].test
    assert guards(ctx).polarity(test) is expected
