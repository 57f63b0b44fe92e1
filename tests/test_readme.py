"""The README's Quick start and demo output are true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_second():
    block = re.search(r"## Quick start\n\n```bash\n(.*?)```", README, re.S).group(1)
    commands = block.strip().splitlines()
    assert commands == [
        "pip install . && devlint fixtures/demo/",
        'pip install torch==2.13.0 && pip install -e ".[test]" && python -m pytest',
    ]
    assert commands[1] in (ROOT / ".ci" / "run").read_text()


def test_demo_output_in_readme_is_real(monkeypatch):
    block = re.search(r"```console\n\$ devlint fixtures/demo/\n(.*?)```", README, re.S).group(1)
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(main, ["fixtures/demo/"])
    assert result.exit_code == 1
    assert result.output == block


@pytest.mark.slow  # runs the probes in fresh interpreters that import torch
def test_verify_output_in_readme_is_real(monkeypatch, targets_detected_once):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("the README shows a CPU-only machine")
    block = re.search(r"```console\n\$ devlint verify fixtures/demo/\n(.*?)```", README, re.S).group(1)
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(main, ["verify", "fixtures/demo/"])
    assert result.exit_code == 1
    assert result.output == block


@pytest.mark.cuda
@pytest.mark.slow
def test_gpu_verify_table_in_readme_is_real(monkeypatch, targets_detected_once):
    """The H100 block: the same verdicts per target on a machine with one GPU (the error texts vary by build)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    block = re.findall(r"```console\n\$ devlint verify fixtures/demo/\n(.*?)```", README, re.S)[1]
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(main, ["verify", "fixtures/demo/"])
    assert result.output.split("\n\n")[0] == block.split("\n\n")[0]
