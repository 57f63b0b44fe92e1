"""The pre-filter (byte triggers + the ``ast`` screen) and the rules read one device model (devices.py): the
pre-filter never drops a file that the full analysis reports. Checked here over every rule's own examples
and variants of them (the fixtures and generated programs are checked in tests/test_scale.py), with a
mutation check that shows the check can fail."""

from __future__ import annotations

import os
import textwrap

import pytest

from devlint.engine import lint_text
from devlint.rules import all_rules, select_rules
from devlint.runner import applicable
from devlint.screen import AstIndex


def hidden_findings(text: str) -> list[tuple[str, int]]:
    """Findings of the rules the pre-filter drops for ``text`` (it must have none)."""
    rules = select_rules(set(all_rules()))
    kept = {r.code for r in applicable(text.encode(), rules)}
    dropped = [r for r in rules if r.code not in kept]
    if not dropped:
        return []
    return [(f.code, f.start.row) for f in lint_text(text, "<example>", dropped).findings]


def _variants(code: str) -> list[str]:
    """The example as written, inside a function, inside a method, after a __future__ import, with CRLF."""
    imports = [line for line in code.splitlines() if line.startswith(("import ", "from "))]
    body = [line for line in code.splitlines() if not line.startswith(("import ", "from "))]
    head = "\n".join(imports)
    in_func = head + "\ndef wrapped():\n" + textwrap.indent("\n".join(body) or "pass", "    ") + "\n"
    in_method = head + "\nclass Wrapped:\n    def run(self):\n" + textwrap.indent("\n".join(body) or "pass", "        ") + "\n"
    return [code, in_func, in_method, "from __future__ import annotations\n" + code, code.replace("\n", "\r\n")]


EXAMPLES = [(code, kind, i, example.code)
            for code, cls in all_rules().items()
            for kind, examples in (("valid", cls.VALID), ("invalid", cls.INVALID))
            for i, example in enumerate(examples)]


@pytest.mark.parametrize("code, kind, i, source", EXAMPLES, ids=[f"{c}-{k}-{i}" for c, k, i, _ in EXAMPLES])
def test_prefilter_keeps_every_example_finding(code, kind, i, source):
    for variant in _variants(source):
        try:
            compile(variant, "<variant>", "exec")
        except SyntaxError:
            continue  # a variant that is not Python (a wrapped `from __future__`): nothing to compare
        assert hidden_findings(variant) == [], variant


def test_the_invalid_examples_pass_the_prefilter_for_their_rule():
    for code, cls in all_rules().items():
        for example in cls.INVALID:
            assert code in {r.code for r in applicable(example.code.encode(), select_rules({code}))}, example.code


def _all_hidden() -> list[tuple[str, int]]:
    return [h for _, _, _, source in EXAMPLES for variant in _variants(source) for h in hidden_findings(variant)]


@pytest.mark.parametrize("mutation", ["strings-only-strict", "no-numpy-evidence", "no-cuda-method", "no-trigger",
                                      "receivers-settled", "no-taint", "all-no-grad", "no-self-attributes",
                                      "all-availability-guarded"])
def test_mutation_check_can_fail(monkeypatch, mutation):
    """Break one question of the pre-filter (not the rules): the differential check must notice."""
    if mutation == "strings-only-strict":
        real = AstIndex.device_strings
        monkeypatch.setattr(AstIndex, "device_strings", lambda self: [s for s in real(self) if s[1] == "strict"])
    elif mutation == "no-numpy-evidence":
        monkeypatch.setattr(AstIndex, "numpy_with_evidence", lambda self: False)
    elif mutation == "receivers-settled":  # every .numpy() receiver taken as detached and on the CPU
        monkeypatch.setattr("devlint.screen._settled", lambda receiver, no_grad=False: True)
    elif mutation == "all-no-grad":  # every .numpy() taken to run under torch.no_grad()
        monkeypatch.setattr(AstIndex, "_no_grad_numpy", lambda self, scope: {id(call) for call in scope.numpy})
    elif mutation == "no-self-attributes":  # no attribute of self taken to hold a value
        monkeypatch.setattr(AstIndex, "_self_attributes", lambda self: frozenset())
    elif mutation == "all-availability-guarded":  # every call taken to be under `if torch.cuda.is_available():`
        monkeypatch.setattr(AstIndex, "availability_guarded", lambda self: {id(c) for c in self.calls})
    elif mutation == "no-taint":  # bindings not followed: only the receiver itself counts
        monkeypatch.setattr(AstIndex, "_tainted", lambda self, scope: set())
    elif mutation == "no-cuda-method":  # DEV001's screen forgets .cuda() calls
        from devlint import devices

        rule = all_rules()["DEV001"]
        monkeypatch.setattr(rule, "screen", lambda self, index: index.imports_torch and any(
            devices.is_cuda_device(value) for value, _ in index.device_strings()))
    else:
        rule = all_rules()["DEV004"]
        monkeypatch.setattr(rule, "triggers", _Never())
    assert _all_hidden(), f"mutation {mutation} went unnoticed"


class _Never:
    def search(self, data: bytes) -> None:
        return None


def _passes(code: str, source: str) -> bool:
    return code in {r.code for r in applicable(textwrap.dedent(source).encode(), select_rules({code}))}


@pytest.mark.parametrize("source, expected", [
    # a CUDA-only call in the body of an availability check (alone or in an `and`) is guarded as guards.py
    # sees it first; anything else may not be
    ("import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n", False),
    ("import torch as T\ndef f(x):\n    if x and T.cuda.is_available():\n        T.cuda.synchronize()\n", False),
    ("import torch\nn = torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu'\n", False),
    ("import torch\nif torch.cuda.is_available():\n    pass\nelse:\n    torch.cuda.synchronize()\n", True),
    ("import torch\nif not torch.cuda.is_available():\n    torch.cuda.synchronize()\n", True),
    ("import torch\nif torch.cuda.is_available() or x:\n    torch.cuda.synchronize()\n", True),
    ("import torch\nif torch.cuda.is_available():\n    def f():\n        torch.cuda.synchronize()\n", True),
    ("import torch\nif torch.cuda.is_available():\n    f = lambda: torch.cuda.synchronize()\n", True),
    ("import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\ntorch.cuda.synchronize()\n", True),
    # a file with no fallback anywhere (no availability query, no "cpu" / "mps", no command-line option) is
    # GPU-only as written: DEV006 reports nothing in it
    ("import torch\ntorch.cuda.synchronize()\n", False),
    ("import torch\ndef f():\n    torch.cuda.synchronize()\n    return torch.cuda.get_device_name()\n", False),
    ("import torch\ndevice = 'cpu'\ntorch.cuda.synchronize()\n", True),
    ("import torch\ndef f(x):\n    if x.device.type != 'mps':\n        torch.cuda.synchronize()\n", True),
    ("import torch as T\nfrom torch.cuda import device_count as n\nk = n()\nT.cuda.synchronize()\n", True),
    ("import argparse, torch\np = argparse.ArgumentParser()\np.add_argument('--no-cuda', action='store_true')\n"
     "torch.cuda.synchronize()\n", True),
])
def test_dev006_screen_leaves_out_calls_under_an_availability_check(source, expected):
    assert _passes("DEV006", source) is expected
    for variant in _variants(source):
        assert hidden_findings(variant) == [], variant


@pytest.mark.parametrize("source, expected", [
    # every DEV007 finding needs an mps string in a device position: NumPy alone is a float64 source, not a device
    ("import numpy as np\nimport torch\nx = torch.from_numpy(np.zeros(3)).to(device)\n", False),
    # a string compared with a device's type is a bool, not a device
    ("import numpy as np\nimport torch\ndef f(x):\n    if x.device.type == 'mps':\n        return x.double()\n", False),
    ("import numpy as np\nimport torch\nx = torch.from_numpy(np.zeros(3)).to('mps')\n", True),
    ("import torch\ndevice = 'mps'\nx = torch.zeros(3, dtype=torch.float64, device=device)\n", True),
    # nor is a string in a tuple, a dict key, another call's argument or a return value
    ("import torch\nx = torch.zeros(3, dtype=torch.float64)\nif x.device.type in ('mps', 'cuda'):\n    pass\n",
     False),
    ("import torch\nSUPPORTED = {'mps': torch.float32}\nx = torch.zeros(3, dtype=torch.float64)\n", False),
    ("import torch\ndef backend():\n    return 'mps'\nx = torch.zeros(3, dtype=torch.float64, device=backend())\n",
     False),
    ("import torch\nlog('mps')\nx = torch.zeros(3, dtype=torch.double)\n", False),
    # a device position through a conditional expression and torch.device(...)
    ("import torch\nx = torch.ones(2, dtype=torch.float64, device=torch.device('mps' if ok else 'cpu'))\n", True),
    ("import torch\nx = torch.ones(2).double().to(torch.device('mps'))\n", True),
    ("import torch\nx = torch.ones(2).to('mps', torch.float64)\n", True),
    ("import torch\nd: str = 'mps'\nx = torch.ones(2).double().to(d)\n", True),
])
def test_dev007_screen_needs_an_mps_device_string(source, expected):
    assert _passes("DEV007", source) is expected
    for variant in _variants(source):
        assert hidden_findings(variant) == [], variant


@pytest.mark.parametrize("source, expected", [
    # every DEV005 finding loads model state: handed to load_state_dict, used as a module, a model-state item,
    # a value a loader function returns (its callers decide), or a TorchScript module
    ("import torch\nvocab = torch.load('vocab.pt')\nprint(len(vocab))\n", False),
    ("import torch\ndef speakers(path):\n    for k, v in torch.load(path, weights_only=True).items():\n"
     "        print(k, v)\n", False),
    ("import torch\nstats = torch.load('stats.pt', map_location=None)\nmean = stats['mean']\n", False),
    ("import torch\nnet.load_state_dict(torch.load('net.pt'))\n", True),
    ("import torch\nckpt = torch.load('c.pt')\nweights = ckpt['state_dict']\n", True),
    ("import torch\nmodel = torch.load('m.pt')\nout = model(x)\n", True),
    ("import torch\nmodel = torch.load('m.pt')\nmodel.eval()\n", True),
    ("import torch\ndef restore(path):\n    return torch.load(path)\n", True),
    ("import torch\ndef restore(self, path):\n    self.net = torch.load(path)\n    self.net(x)\n", True),
    ("import torch\nscripted = torch.jit.load('m.pt')\n", True),
])
def test_dev005_screen_needs_model_state(source, expected):
    assert _passes("DEV005", source) is expected
    for variant in _variants(source):
        assert hidden_findings(variant) == [], variant


def test_dev005_screen_leaves_out_test_modules():
    source = b"import torch\nnet.load_state_dict(torch.load('net.pt'))\n"
    rules = select_rules({"DEV005"})
    assert [r.code for r in applicable(source, rules, path="pkg/train.py")] == ["DEV005"]
    assert applicable(source, rules, path="pkg/tests/helpers.py") == []
    assert applicable(source, rules, path="pkg/test_train.py") == []
    assert [f.code for f in lint_text(source.decode(), "pkg/test_train.py", rules).findings] == []


_MODULE = """\
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        {line}
        return self.fc(x)
"""


@pytest.mark.parametrize("line, expected", [
    # DEV009 follows only factories that make a CPU tensor of one or more dimensions (its _factory)
    ("drop = torch.rand([]) < 0.1", False),  # 0-dim: torch takes it with a GPU tensor
    ("scale = torch.tensor(self.fc.in_features)", False),  # torch.tensor(value): may be 0-dim
    ("z = torch.zeros((), dtype=x.dtype)", False),
    ("buf = torch.empty(3, out=x)", False),  # out= decides the device
    ("pos = torch.arange(x.size(1), device=x.device)", False),
    ("pos = torch.arange(x.size(1))\n        x = x + pos", True),
    ("mask = torch.tensor([1.0, 0.0, 1.0, 0.0])\n        x = x * mask", True),
    # ... and only where its CPU tensor reaches an operand of something that combines tensors, as _Env.kind
    # carries it: through names, arithmetic, subscripts, .float() and the like, not through .to(...) or a call
    ("pos = torch.arange(x.size(1)).float()[None]\n        x = self.fc(pos * x)", True),
    ("a, b = torch.ones(4), 2\n        x = torch.cat([x, a])", True),
    ("pos = torch.arange(x.size(1)).to(x.device)\n        x = x + pos", False),
    ("scale = torch.arange(4).float() / 4", False),  # with a number only
    ("def inner():\n            return torch.ones(4)\n        x = x + inner()", False),  # not followed into a call
])
def test_dev009_screen_reads_factories_as_the_rule_does(line, expected):
    assert _passes("DEV009", _MODULE.format(line=line)) is expected


@pytest.mark.parametrize("code, data, expected", [
    # DEV005's trigger: a loader call, not `_load(` / `offload(` / `reload (`
    ("DEV005", b"load(path)", True),
    ("DEV005", b"x = torch.load (p)", True),
    ("DEV005", b"x = T.load\\\n(p)", True),
    ("DEV005", b"from torch import load as restore", True),
    ("DEV005", b"self._load(p); offload(x); reload(m)", False),
    ("DEV005", b"loader = download_file(p)", False),
    # DEV001's trigger: a literal starting "cuda", a .cuda call, a legacy cuda tensor type
    ("DEV001", b"device = 'cuda:0'", True),
    ("DEV001", b'd = "cuda"', True),
    ("DEV001", b"x = x.cuda ()", True),
    ("DEV001", b"t = torch.cuda.FloatTensor(3)", True),
    ("DEV001", b"cuda", False),
    ("DEV001", b"if torch.cuda.is_available(): pass", False),
])
def test_byte_triggers(code, data, expected):
    assert bool(all_rules()[code].triggers.search(data)) is expected


@pytest.mark.parametrize("move, expected", [
    ("out.to(device)", True),
    ("out.to(device=dev)", True),
    ("out.to(torch.float32)", False),  # a conversion (provenance.py's _is_dtype)
    ("out.to(dtype=torch.float16)", False),  # names no device
    ("out.to(torch.cuda.HalfTensor)", False),  # a torch attribute that names no device
    ("out.to(torch.device('cuda'))", True),
])
def test_dev002_screen_reads_to_as_provenance_does(move, expected):
    # (a method: what other files pass a function of the module's top level lets that through on its own)
    source = f"import torch\nclass A:\n    def f(self, out, device, dev):\n        out = {move}\n        return out.numpy()\n"
    assert _passes("DEV002", source) is expected


@pytest.mark.parametrize("data, expected", [
    # DEV008's trigger: a move or cast where a statement may start with its receiver
    (b"x.cuda()", True),
    (b"    self.mask.to(device)", True),
    (b"x[:, 0].half()", True),
    (b"(x).cpu()", True),
    (b"if ok: x.to(dev)", True),
    (b"a = 1; x.to(dev)", True),
    ("\u5f20\u91cf.cuda()".encode(), True),
    (b"batch[\n    0\n].cuda()", True),  # a receiver over several lines
    (b"x = x \\\n    .cuda()", True),  # the call continues a line above: decided by the parser
    (b"y = x.cuda()", False),
    (b"return x.to(device)", False),
    (b"print(x.cpu())", False),
    (b"loss = criterion(out.float(), y)", False),
])
def test_dev008_trigger(data, expected):
    assert bool(all_rules()["DEV008"].triggers.search(data)) is expected


_GRAD = "import numpy as np\nimport torch\n"


@pytest.mark.parametrize("body, expected", [
    # the value with evidence reaches the receiver: appended, iterated, unpacked, through a closure, on self
    ("w = torch.zeros(3, requires_grad=True)\nys = []\nfor i in range(2):\n    ys.append(w * i)\nys[0].numpy()\n", True),
    ("w = torch.zeros(3, requires_grad=True)\nfor row in w:\n    row.numpy()\n", True),
    ("a, b = torch.zeros(2, requires_grad=True), 1\na.numpy()\n", True),
    ("class M:\n    def __init__(self):\n        self.w = torch.zeros(3, requires_grad=True)\n"
     "    def show(self):\n        return self.w.numpy()\n", True),
    ("def f():\n    w = torch.zeros(3, requires_grad=True)\n    d = {}\n    d['w'] = w\n    return d['w'].numpy()\n", True),
    ("w = torch.zeros(3, requires_grad=True)\nw.cpu().numpy()\n", True),  # still requires grad
    ("w = torch.zeros(3, requires_grad=True)\nw.detach().cpu().add(w).numpy()\n", True),  # grad again
    ("w = torch.zeros(3, requires_grad=True)\nw.detach().cpu().cuda().numpy()\n", True),  # on the GPU again
    # evidence in the scope that never reaches the receiver
    ("def f(path):\n    w = torch.zeros(3, requires_grad=True)\n    t = torch.from_numpy(np.load(path))\n"
     "    return t.numpy(), w\n", False),
    # the receiver settles itself: detached and on the CPU by its own chain
    ("w = torch.zeros(3, requires_grad=True).cuda()\nw.detach().cpu().numpy()\n", False),
    ("w = torch.zeros(3, requires_grad=True).cuda()\nw[0].data.float().cpu()[1:].numpy()\n", False),
    ("w = torch.zeros(3, requires_grad=True).cuda()\nw.to('cpu').detach().numpy()\n", False),
    ("w = torch.zeros(3, 4, requires_grad=True).cuda()\nw.detach().cpu().permute(1, -1).numpy()\n", False),
    ("w = torch.zeros(3, requires_grad=True).cuda()\nv = w\nw.detach().cpu().add(v).numpy()\n", True),
    # under no-grad torch lets .numpy() through on a tensor that requires grad: the CPU settles it
    ("w = torch.zeros(3, requires_grad=True).cuda()\n@torch.no_grad()\ndef f():\n    return w.cpu().numpy()\n",
     False),
    ("import torch as T\nw = T.zeros(3, requires_grad=True).cuda()\n@T.inference_mode()\ndef f():\n"
     "    return w.cpu().float().numpy()\n", False),
    ("w = torch.zeros(3, 4, requires_grad=True).cuda()\nwith torch.no_grad():\n    w.cpu().permute(1, 0).numpy()\n",
     False),
    ("w = torch.zeros(3, requires_grad=True)\nwith torch.set_grad_enabled(False):\n    w.cpu().numpy()\n", False),
    ("w = torch.zeros(3, requires_grad=True).cuda()\nwith torch.no_grad():\n    w.numpy()\n", True),  # on the GPU
    ("w = torch.zeros(3, requires_grad=True)\nwith torch.enable_grad():\n    w.cpu().numpy()\n", True),
    ("w = torch.zeros(3, requires_grad=True)\nwith torch.set_grad_enabled(True):\n    w.cpu().numpy()\n", True),
    ("w = torch.zeros(3, requires_grad=True)\nwith torch.no_grad():\n    y = w * 2\nw.cpu().numpy()\n", True),
    ("w = torch.zeros(3, requires_grad=True).cuda()\nv = w\nwith torch.no_grad():\n"
     "    w.cpu().add(v).numpy()\n", True),  # an argument may bring the GPU back
    ("w = torch.zeros(3, requires_grad=True)\nwith torch.no_grad():\n    f = lambda: w.cpu().numpy()\nf()\n",
     True),  # a lambda runs where it is called
    ("w = torch.zeros(3, requires_grad=True)\n@torch.no_grad()\ndef f():\n    def g():\n"
     "        return w.cpu().numpy()\n    return g()\n", True),  # a nested function is interpreted on its own
    # self: only the attributes the file's methods bind (or its methods and properties) carry values
    ("class P:\n    def prepare(self, x, device):\n        return x.to(device)\n"
     "    def decode(self, z):\n        return self.vae.decode(z).numpy()\n", False),
    ("class P:\n    def __init__(self):\n        self.vae = torch.nn.Linear(2, 2)\n"
     "    def prepare(self, x, device):\n        return x.to(device)\n"
     "    def decode(self, z):\n        return self.vae(z).numpy()\n", True),
    ("class P:\n    def setup(self, device):\n        self.parts = [torch.nn.Linear(2, 2).to(device)]\n"
     "    def decode(self, z):\n        return self.parts[0](z).numpy()\n", True),
    ("class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = torch.nn.Linear(2, 2)\n    def forward(self, x):\n        return self.fc(x)\n"
     "    def show(self, x):\n        return self.forward(x).numpy()\n", True),
    ("class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = torch.nn.Linear(2, 2)\n    def forward(self, x):\n        return self.fc(x)\n"
     "    def show(self, x):\n        return self(x).numpy()\n", True),
])
def test_dev002_screen_follows_values_to_the_receiver(body, expected):
    """The screen reads bindings as provenance.py does, over-approximating: a ``.numpy()`` whose receiver no
    value with evidence can reach drops the file, and what it drops the rule never reports."""
    for variant in _variants(_GRAD + body):
        assert hidden_findings(variant) == [], variant
    assert _passes("DEV002", _GRAD + body) is expected


_ENGINE = "import torch\n\n\ndef step(model, x):\n    out = model(x)\n    torch.cuda.synchronize()\n    return out\n"


@pytest.mark.parametrize("caller, expected", [
    # a script of the project, with a fallback, calls the function: the rule may report its CUDA-only call
    ("import argparse\nfrom engine import step\np = argparse.ArgumentParser()\np.add_argument('--device')\n"
     "if __name__ == '__main__':\n    step(None, None)\n", True),
    ("import torch\nfrom engine import step\ndevice = 'cpu'\nstep(None, torch.zeros(1, device=device))\n", True),
    # a library module (no code at its top level) with a fallback of its own: its fallback does not count
    ("import torch\nfrom engine import step\n\n\ndef run(x):\n    return step(None, x.to('cpu'))\n", False),
    # a script with no fallback: GPU-only as written
    ("import torch\nfrom engine import step\nstep(None, torch.zeros(1).cuda())\n", False),
    # the script does not call the function
    ("import torch\nimport engine\ndevice = 'cpu'\nprint(engine, device)\n", False),
])
def test_dev006_screen_asks_the_scripts_calling_a_project_function(tmp_path, caller, expected):
    from devlint.project import Project

    (tmp_path / "engine.py").write_text(_ENGINE)
    (tmp_path / "main.py").write_text(caller)
    engine = str(tmp_path / "engine.py")
    project = Project([engine, str(tmp_path / "main.py")])
    kept = {r.code for r in applicable(_ENGINE.encode(), select_rules({"DEV006"}), project, engine)}
    assert ("DEV006" in kept) is expected
    assert "DEV006" not in {r.code for r in applicable(_ENGINE.encode(), select_rules({"DEV006"}))}  # no project
    if expected:  # and the rule itself reports it there (the screen said "maybe" where it was right)
        from click.testing import CliRunner

        from devlint.cli import main

        result = CliRunner().invoke(main, ["--no-cache", "--select", "DEV006", "-q", str(tmp_path)])
        assert result.output.replace(str(tmp_path) + os.sep, "").split(": DEV006")[0] == "engine.py:6:5"


@pytest.mark.parametrize("body, expected", [
    # a function of the module's top level: the project's other files may pass it a GPU tensor
    ("def psnr(videos):\n    for i in range(videos.shape[0]):\n        img = videos[i]\n"
     "        yield img.float().numpy()\n", True),
    ("def show(frames):\n    for frame in frames:\n        print(frame.numpy())\n", True),
    # the receiver is no part of a parameter: a function's result
    ("def read(path):\n    t = torch.from_numpy(np.load(path))\n    return t.numpy()\n", False),
    # a method: its calls are not looked for in other files
    ("class Metric:\n    def psnr(self, videos):\n        return videos[0].numpy()\n", False),
])
def test_dev002_screen_lets_through_helpers_other_files_may_call(body, expected):
    assert _passes("DEV002", "import numpy as np\nimport torch\n" + body) is expected
