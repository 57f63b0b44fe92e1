"""Fixes never break working code: regression tests for each way the fixer once did (issue "Fixes that
never break working code"). Each case is a small module and the exact text `--fix --unsafe-fixes` must
produce (or the findings it must keep without a fix)."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import main
from devlint.compat import syntax_error
from devlint.engine import fix_text, lint_text
from devlint.rules import all_rules, select_rules

RULES = select_rules(set(all_rules()))


def fixed(source: str, unsafe: bool = True) -> str:
    text = textwrap.dedent(source)
    out = fix_text(text, "case.py", RULES, unsafe=unsafe).text
    assert syntax_error(out) is None, out
    assert fix_text(out, "case.py", RULES, unsafe=unsafe).text == out  # idempotent
    return out


def findings(source: str) -> list[tuple[int, int, str, bool]]:
    result = lint_text(textwrap.dedent(source), "case.py", RULES)
    assert not result.crashes, result.crashes
    return [(f.start.row, f.start.column, f.code, f.fix is not None) for f in result.findings]


def same(source: str) -> str:
    return textwrap.dedent(source)


# --- a fix only names what is bound where it lands ----------------------------------------------
def test_torch_bound_only_as_a_submodule_alias_gets_an_import():
    assert fixed("""\
        import torch.nn as nn
        model = nn.Linear(2, 2).cuda()
    """) == same("""\
        import torch
        import torch.nn as nn
        model = nn.Linear(2, 2).to("cuda" if torch.cuda.is_available() else "cpu")
    """)


def test_torch_under_type_checking_only_gets_no_fix():
    src = """\
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            import torch
        def f(m):
            return m.cuda()
    """
    assert findings(src) == [(5, 12, "DEV001", False)]
    assert fixed(src) == same(src)


def test_torch_imported_only_in_another_function_gets_no_fix():
    src = """\
        def load():
            import torch
            return torch.zeros(1)
        def f(m):
            return m.cuda()
    """
    assert findings(src) == [(5, 12, "DEV001", False)]
    assert fixed(src) == same(src)


def test_torch_imported_in_the_same_function_is_used():
    assert fixed("""\
        def f(m):
            import torch as T
            return m.cuda()
    """) == same("""\
        def f(m):
            import torch as T
            return m.to("cuda" if T.cuda.is_available() else "cpu")
    """)


def test_a_parameter_named_torch_shadows_the_module():
    src = """\
        import torch
        def f(torch, m):
            return m.cuda()
        def g(m):
            torch = None
            return m.cuda()
    """
    assert findings(src) == [(3, 12, "DEV001", False), (6, 12, "DEV001", False)]
    assert fixed(src) == same(src)


def test_torch_alias_is_used():
    assert fixed("""\
        import torch as T
        x = T.zeros(1, device="cuda")
    """) == same("""\
        import torch as T
        x = T.zeros(1, device="cuda" if T.cuda.is_available() else "cpu")
    """)


@pytest.mark.parametrize("source", [
    # a loop variable
    """\
    import torch
    for device in ["cpu", "cuda"]:
        pass
    m = torch.nn.Linear(2, 2).cuda()
    """,
    # a parameter whose default is not a device
    """\
    import torch
    def f(x, device="0"):
        return x.cuda()
    """,
    # device=None never resolved
    """\
    import torch
    def f(x, device=None):
        return x.cuda()
    """,
    # bound in one branch only
    """\
    import torch
    def f(x, flag):
        if flag:
            device = torch.device("cpu")
        return x.cuda()
    """,
    # bound only later
    """\
    import torch
    def f(x):
        y = x.cuda()
        device = torch.device("cpu")
        return y
    """,
    # self.device never set
    """\
    import torch
    class A:
        def run(self, x):
            return x.cuda()
    """,
    # a global shadowed locally (reading it would raise UnboundLocalError)
    """\
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    def f(x):
        y = x.cuda()
        device = 3
        return y
    """,
    # a module-level device assigned after the function that uses it
    """\
    import torch
    def f(x):
        return x.cuda()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    """,
    # a comprehension run before the variable is bound
    """\
    import torch
    def f(xs):
        ys = [x.cuda() for x in xs]
        device = torch.device("cpu")
        return ys
    """,
    # a required parameter named like a device but never used as one
    """\
    import torch
    def f(x, dev):
        print(dev)
        return x.cuda()
    """,
])
def test_no_uncertain_device_variable_is_reused(source):
    out = fixed(source)
    assert ".to(\"cuda\" if torch.cuda.is_available() else \"cpu\")" in out
    assert ".to(device)" not in out and ".to(dev)" not in out


def test_certain_device_variables_are_reused():
    assert fixed("""\
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        def f(x):
            return x.cuda()
        def g(x, device="cpu"):
            return x.cuda(), torch.zeros(1, device="cuda")
        def h(x, device=None):
            if device is None:
                device = torch.device("cpu")
            return x.cuda()
        def k(x, dev: torch.device):
            return x.cuda()
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.device = torch.device("cpu")
            def forward(self, x):
                device = 0
                return x.cuda()
    """) == same("""\
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        def f(x):
            return x.to(device)
        def g(x, device="cpu"):
            return x.to(device), torch.zeros(1, device=device)
        def h(x, device=None):
            if device is None:
                device = torch.device("cpu")
            return x.to(device)
        def k(x, dev: torch.device):
            return x.to(dev)
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.device = torch.device("cpu")
            def forward(self, x):
                device = 0
                return x.to(self.device)
    """)


# --- fixed output parses on Python 3.10 ---------------------------------------------------------
def test_fix_inside_an_fstring_uses_the_other_quote():
    assert fixed("""\
        import torch
        a, b, c = "a", "b", "c"
        x = torch.ones(1)
        print(f"{x.cuda()} {torch.zeros(1, device='cuda')}")
        print(f'{x.cuda()}')
    """) == same("""\
        import torch
        a, b, c = "a", "b", "c"
        x = torch.ones(1)
        print(f"{x.to('cuda' if torch.cuda.is_available() else 'cpu')} {torch.zeros(1, device='cuda' if torch.cuda.is_available() else 'cpu')}")
        print(f'{x.to("cuda" if torch.cuda.is_available() else "cpu")}')
    """)


def test_fix_inside_fstrings_using_both_quotes_is_withheld():
    src = """\
        import torch
        x = torch.ones(1)
        print(f'''{f"{x.cuda()}"}''')
    """
    assert findings(src) == [(3, 15, "DEV001", False)]
    assert fixed(src) == same(src)


def test_compat_check_rejects_pep701_fstrings():
    assert syntax_error('x = f"{d["k"]}"\n') is not None
    assert syntax_error("x = f'{d[\"k\"]}'\n") is None
    assert syntax_error('x = f"{a:#x} {b!r:>{w}}"\n') is None
    assert "backslash" in (syntax_error('x = f"{chr(10) + \'\\\\n\'}"\n') or "backslash")


@pytest.mark.parametrize("text, want", [
    # a form feed before a statement: LibCST drops it from its code; positions are mapped back
    ("import torch\nx = torch.ones(1, requires_grad=True)\n\fif True: y = x.numpy()\n",
     "import torch\nx = torch.ones(1, requires_grad=True)\n\fif True: y = x.detach().numpy()\n"),
    ("import torch\nx = torch.ones(1, requires_grad=True)\n\fy = True and x.numpy()\n",
     "import torch\nx = torch.ones(1, requires_grad=True)\n\fy = True and x.detach().numpy()\n"),
    # \r-only line endings
    ("import torch\rx = torch.ones(1, requires_grad=True)\r\fy = x.numpy()\r",
     "import torch\rx = torch.ones(1, requires_grad=True)\r\fy = x.detach().numpy()\r"),
    # tabs and a backslash continuation
    ("import torch\nx = torch.ones(1, requires_grad=True)\nif x:\n\ty = \\\n\t\tx.numpy()\n",
     "import torch\nx = torch.ones(1, requires_grad=True)\nif x:\n\ty = \\\n\t\tx.detach().numpy()\n"),
    # a backslash-newline before a statement (also dropped by LibCST)
    ("import torch\n\\\nm = torch.nn.Linear(2, 2)\nx = m(torch.ones(2)).numpy()\n",
     "import torch\n\\\nm = torch.nn.Linear(2, 2)\nx = m(torch.ones(2)).detach().numpy()\n"),
    # a form feed inside an expression
    ("import torch\nx = torch.ones(1, requires_grad=True)\ny = [1,\f x.numpy()]\n",
     "import torch\nx = torch.ones(1, requires_grad=True)\ny = [1,\f x.detach().numpy()]\n"),
])
def test_fixes_land_on_their_node(text, want):
    out = fix_text(text, "case.py", RULES, unsafe=True).text
    assert out == want
    assert fix_text(out, "case.py", RULES, unsafe=True).text == out


def test_findings_point_at_the_right_column_after_a_form_feed():
    result = lint_text("import torch\nx = torch.ones(1, requires_grad=True)\n\fif True: y = x.numpy()\n", "c.py", RULES)
    assert [(f.start.row, f.start.column) for f in result.findings] == [(3, 15)]


# --- "safe" means correct code behaves as before ----------------------------------------------
def test_dev003_case_fix_only_where_the_string_reaches_torch():
    src = """\
        import torch
        import openvino as ov
        core = ov.Core()
        device = "CPU"
        compiled = core.compile_model(model, device)
        compiled = core.compile_model(model, "CPU")
        x = torch.zeros(1, device="CUDA")
    """
    assert findings(src) == [(7, 27, "DEV003", True)]


def test_dev003_not_where_torch_is_asked_on_purpose():
    src = """\
        import torch
        def valid(s):
            try:
                torch.device(s)
            except RuntimeError:
                return False
            return True
        try:
            d = torch.device("CUDA")
        except RuntimeError:
            d = torch.device("cpu")
        try:
            x = torch.zeros(1, device="CUDA")
        except Exception:
            x = None
    """
    assert findings(src) == [(13, 31, "DEV003", False)]


def test_dev003_no_fix_for_strings_that_may_not_reach_torch():
    src = """\
        # no torch import
        DEVICE = "CUDA:0"
    """
    assert findings(src) == [(2, 10, "DEV003", False)]
    src = """\
        import torch
        cfg = {"device": "CUDA"}
        def run(cfg, model):
            return model.to(cfg["device"])
    """
    assert findings(src) == [(2, 18, "DEV003", False)]


def test_dev002_never_fixes_tensorflow():
    src = """\
        import torch
        import tensorflow as tf
        from transformers import TFBertModel
        model = TFBertModel.from_pretrained("bert-base-uncased")
        out = model(tf.constant([[1, 2]]))
        logits = out.logits.numpy()
        x = tf.constant(1.0).numpy()
    """
    assert findings(src) == []


def test_dev002_fixes_what_is_not_proven():
    assert fixed("""\
        import torch
        from mypkg.models import Net
        x = torch.ones(2)
        model = Net().to("cpu")
        out = model(x)
        out.numpy()
        net = Net().cuda()
        net(x).numpy()
        w = torch.ones(2, requires_grad=True)
        w.numpy()
        y = torch.ones(2).cuda()
        y.numpy()
        def f(a):
            return (w + a).numpy()
    """) == same("""\
        import torch
        from mypkg.models import Net
        x = torch.ones(2)
        model = Net().to("cpu")
        out = model(x)
        out.detach().numpy()
        net = Net().to("cuda" if torch.cuda.is_available() else "cpu")
        net(x).detach().cpu().numpy()
        w = torch.ones(2, requires_grad=True)
        w.detach().numpy()
        y = torch.ones(2).to("cuda" if torch.cuda.is_available() else "cpu")
        y.cpu().numpy()
        def f(a):
            return (w + a).detach().cpu().numpy()
    """)


def test_comparisons_are_not_device_uses():
    src = """\
        import torch
        devices = []
        ok = torch.device("cuda") in devices
        same = x.device == torch.device("cuda:0")
        kind = torch.device("cuda").type
        def f(dev):
            if dev == "cuda":
                return 1
        assert x.device.type == "cuda"
        def helper(device="cpu"):
            return device == "cuda"
        helper(device="cuda")
    """
    assert findings(src) == []


def test_a_local_function_that_uses_its_device_is_still_a_use():
    src = """\
        import torch
        def make(device="cpu"):
            return torch.zeros(1, device=device)
        make(device="cuda")
    """
    assert findings(src) == [(4, 13, "DEV001", True)]


# --- comments, counts and errors ----------------------------------------------------------------
def test_fixes_keep_comments():
    assert fixed("""\
        import torch
        m = torch.nn.Linear(2, 2)
        m = m.cuda(  # why
        )
        n = m.cuda(0,  # which
                   non_blocking=True)
        x = torch.zeros(1, device=("cuda"  # why
        ))
        y = torch.zeros(1, device=("CUDA"  # typo
        ))
    """) == same("""\
        import torch
        m = torch.nn.Linear(2, 2)
        m = m.to("cuda" if torch.cuda.is_available() else "cpu"  # why
        )
        n = m.to("cuda:0" if torch.cuda.is_available() else "cpu",  # which
                   non_blocking=True)
        x = torch.zeros(1, device=("cuda" if torch.cuda.is_available() else "cpu"  # why
        ))
        y = torch.zeros(1, device=("cuda" if torch.cuda.is_available() else "cpu"  # typo
        ))
    """)


def test_conditional_expressions_are_parenthesised_where_they_would_bind_differently():
    assert fixed("""\
        import torch
        USE_GPU = True
        def pick(args):
            a = args.device or "cuda"
            b = "cuda" if USE_GPU else "cpu"
            return torch.device(a), torch.device(b)
    """) == same("""\
        import torch
        USE_GPU = True
        def pick(args):
            a = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
            b = ("cuda" if torch.cuda.is_available() else "cpu") if USE_GPU else "cpu"
            return torch.device(a), torch.device(b)
    """)


def _cli(tmp_path, *args):
    return CliRunner().invoke(main, [*args, "--no-cache", "--jobs", "1"], catch_exceptions=False)


def test_summary_counts_only_fixes_that_apply(tmp_path, monkeypatch):
    # a fix that would not parse is dropped; a run with --fix --unsafe-fixes must not announce it
    target = tmp_path / "t.py"
    target.write_text("import torch\nm = torch.nn.Linear(2, 2).cuda()\n")
    import devlint.engine as engine

    monkeypatch.setattr(engine, "_parses", lambda text, original_error: False)
    result = _cli(tmp_path, "--fix", "--unsafe-fixes", str(target))
    assert result.exit_code == 1
    assert "fixable" not in result.output and "hidden" not in result.output, result.output
    assert target.read_text() == "import torch\nm = torch.nn.Linear(2, 2).cuda()\n"


@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "text"])
def test_a_rule_crash_is_reported_in_every_output_format(tmp_path, monkeypatch, fmt):
    target = tmp_path / "t.py"
    target.write_text("import torch\nm = torch.nn.Linear(2, 2).cuda()\n")
    from devlint.rules.dev001_hardcoded_cuda import HardcodedCuda

    def boom(self, ctx):
        raise ValueError("boom")

    monkeypatch.setattr(HardcodedCuda, "check", boom)
    result = _cli(tmp_path, "--output-format", fmt, str(target))
    assert result.exit_code == 2
    if fmt == "json":
        codes = [d["code"] for d in json.loads(result.stdout)]
        assert codes == ["E001"]
    elif fmt == "sarif":
        results = json.loads(result.stdout)["runs"][0]["results"]
        assert [r["ruleId"] for r in results] == ["E001"]
        assert "boom" in results[0]["message"]["text"]
    else:
        assert "E001" in result.stdout and "boom" in result.stdout
    assert "All checks passed" not in result.output


def test_deep_expressions_are_analysed(tmp_path):
    chain = " + ".join(["x"] * 3000)
    text = f"import torch\nx = torch.ones(1, requires_grad=True)\ny = {chain}\nz = y.numpy()\nm = torch.nn.Linear(2, 2).cuda()\n"
    result = lint_text(text, "deep.py", RULES)
    assert not result.crashes
    assert [(f.start.row, f.code) for f in result.findings] == [(4, "DEV002"), (5, "DEV001")]


def test_a_file_that_cannot_be_analysed_says_so(tmp_path, monkeypatch):
    from devlint.rules.dev002_numpy_needs_detach_cpu import NumpyNeedsDetachCpu

    def recurse(self, ctx):
        return recurse(self, ctx)

    monkeypatch.setattr(NumpyNeedsDetachCpu, "check", recurse)
    target = tmp_path / "t.py"
    target.write_text("import torch\nx = torch.ones(1, requires_grad=True).numpy()\n")
    result = _cli(tmp_path, "--output-format", "json", str(target))
    assert result.exit_code == 2
    entries = json.loads(result.stdout)
    assert [e["code"] for e in entries] == ["E001"]
    assert "RecursionError" in entries[0]["message"]


# --- fix output on the oldest Python --------------------------------------------------------------
def oldest_python() -> str | None:
    """A Python 3.10 interpreter on this machine (PATH, then pyenv's versions), or None."""
    import shutil

    found = shutil.which("python3.10")
    if found and subprocess.run([found, "-c", "pass"], capture_output=True).returncode == 0:
        return found
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for candidate in sorted(root.glob("3.10*/bin/python3.10")):
        return str(candidate)
    return None


def test_fixed_outputs_compile_on_python_310(tmp_path):
    """Every fixture's fixed output and every fixed case above compiles on a real Python 3.10."""
    python = oldest_python()
    if python is None:
        pytest.skip("no Python 3.10 on this machine")
    from fixturelib import FIXTURES

    files = sorted(p for p in FIXTURES.rglob("*.py") if p.name.endswith((".fixed.py", ".safe.py")))
    assert len(files) > 15
    probe = (
        "import sys\n"
        "bad = []\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        compile(open(p, 'rb').read(), p, 'exec')\n"
        "    except SyntaxError as e:\n"
        "        bad.append(f'{p}: {e}')\n"
        "print('\\n'.join(bad))\n"
        "sys.exit(1 if bad else 0)\n"
    )
    # and a 3.12-only f-string, to prove the probe can fail
    pep701 = tmp_path / "pep701.py"
    pep701.write_text('x = f"{d["k"]}"\n')
    out = subprocess.run([python, "-c", probe, str(pep701)], capture_output=True, text=True)
    assert out.returncode == 1
    out = subprocess.run([python, "-c", probe, *map(str, files)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
