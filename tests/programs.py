"""Generated programs full of device code: the statements and scopes devlint's rules and pre-filter tell
apart (imports and aliases, module level, functions, methods, guards, no_grad, loops, lambdas); and the
fixer's basic contract, checked on any program (check_fixer)."""

from __future__ import annotations

import functools
import random

import libcst as cst

from devlint.engine import fix_text, lint_text
from devlint.rules import all_rules, select_rules

IMPORTS = ["import torch", "import torch as T", "from torch import nn", "import torch.nn as nn",
           "from torch import device as Device", "import os", "import os as osm", "import numpy as np",
           "import argparse", "from os import environ", "import tensorflow as tf"]
SIMPLE = [
    'device = "cuda"', 'device = "cuda:0"', 'device = "gpu"', 'device = "CUDA"', 'dev = "cuda:1,2"',
    'device = "cuda" if torch.cuda.is_available() else "cpu"', 'device = torch.device("cuda")',
    'device = torch.device("gpu" if ok else "cpu")', 'device = T.device("cuda: 0")', 'device = Device("cuda0")',
    'x = torch.zeros(2, device="cuda")', 'x = torch.zeros(2, device=device)', 'x = torch.zeros(2)',
    'x = torch.ones(2, requires_grad=True)', 'x = T.ones(2, device="cuda:0")', 'y = x * 2', 'y = x.sum()',
    'model = nn.Linear(2, 2)', 'model = model.to(device)', 'model.cuda()', 'model = Net()', 'out = model(x)',
    'a = out.numpy()', 'b = x.numpy()', 'c = y.detach().cpu().numpy()', 'd = y.numpy(force=True)',
    'e = x.cpu().numpy()', 'z = x.to("cuda:0")', 'z = x.to("gpu")', 'w = x.to(device)', 'x = x.cuda()',
    'p = nn.Parameter(torch.zeros(2))', 'q = p.numpy()', 'x.requires_grad_()', 'cfg = {"device": "cuda"}',
    'cfg = {"device": "gpu"}', 'cfg = {"device": "metadata"}', 'os.environ["CUDA_VISIBLE_DEVICES"] = "1"',
    'osm.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"', 'environ["CUDA_VISIBLE_DEVICES"] = "0,1"',
    'n = torch.cuda.device_count()', 'ok = torch.cuda.is_available()', 't = torch.load("f", map_location="cuda:0")',
    't = torch.load("f", map_location="gpu")', 'r = model(x).numpy()', 'mode = "metadata"', 'x.to(mode)',
    'parser.add_argument("--device", default="cuda")', 'parser.add_argument("--device", default="gpu")',
    'v = tf.constant(1).numpy()', 'arr = np.zeros(2)', 'arr.numpy()', 'device = "cpu"', 'x = x.to("cpu")',
    'if device == "cuda": pass', 'print("cuda")', 'use = "cuda" in name', 'h = model(x)', 'k = h.numpy()',
    'x = torch.randn(2, device=device).requires_grad_()', 'emb = T.nn.Embedding(2, 2)', 's = emb(x).numpy()',
    'net = self.net.cuda(0)', 'torch.set_default_device("cuda")', 'g = torch.zeros_like(x).numpy()',
    'x = torch.tensor([1.0], device="cuda" if ok else "gpu")', 'x = x.to(device="cuda:01")',
    'x = torch.zeros(2, device=dev if ok else "gpu")', 'x = torch.zeros(2, device=(\n    "cpu"\n    if ok else "gpu"))',
    'device = "cpu" if ok else "CUDA"', "device = r'cuda'", 'y = (x.cuda)()', 'y = x.cuda (0)', "y = x.to('cuda:0', non_blocking=True)",
    'device = "cpu" \\\n    if ok else "gpu"', 'device = ok and "gpu"', 'torch.device(type="gpu")',
    'device = torch.device("cuda: {}".format(i))', 'z = x.to("cuda:%d,%d" % (i, j))', 'ids = [0, 1]',
    'dev = f"cuda:{ids}"', 'device = "cuda:{},{}".format(i, j)', 'z = x.to(device="cuda: " + str(i))',
]
WRAPPERS = [
    "if torch.cuda.is_available():\n{body}", "with torch.no_grad():\n{body}", 'def f(device="cuda"):\n{body}',
    "def g(x):\n{body}", "def h(x, device=None):\n{body}", "class Net(nn.Module):\n    def forward(self, x):\n{body2}",
    "for i in range(2):\n{body}", "try:\n{body}\nexcept Exception:\n    pass", "if not ok:\n    raise SystemExit\n{flat}",
    "async def run(x):\n{body}", "lam = lambda x: x\n{flat}",
]


def generated_program(rng: random.Random) -> str:
    """Imports, module-level statements, then statements in functions, classes, loops and guards: the
    scopes and flows the analyses distinguish."""
    lines = [i for i in IMPORTS if rng.random() < (0.7 if i in ("import torch", "from torch import nn") else 0.25)]
    lines += [rng.choice(SIMPLE) for _ in range(rng.randint(0, 4))]
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.6:
            body = [rng.choice(SIMPLE) for _ in range(rng.randint(1, 4))]
            wrapper = rng.choice(WRAPPERS)
            lines.append(wrapper.format(body="\n".join("    " + b for b in body),
                                        body2="\n".join("        " + b for b in body), flat="\n".join(body)))
        else:
            lines.append(rng.choice(SIMPLE))
    return "\n".join(lines) + "\n"


@functools.cache
def _all_rules() -> list:
    return select_rules(set(all_rules()))


def check_fixer(text: str, path: str = "<generated>") -> bool:
    """Never crashes; fixed output parses; a second fix changes nothing; no findings -> no change. Returns
    whether the fixer changed the text."""
    rules = _all_rules()
    lint = lint_text(text, path, rules)
    assert not lint.crashes, lint.crashes
    fixed = fix_text(text, path, rules, unsafe=True)
    assert not fixed.remaining.crashes
    if fixed.text != text:
        cst.parse_module(fixed.text)
        assert fix_text(fixed.text, path, rules, unsafe=True).text == fixed.text
    if not any(f.fix for f in lint.findings):
        assert fixed.text == text
    return fixed.text != text
