"""The fix oracle (devlint/oracle.py) on the fixtures, on the runnable fixtures before and after fixing, on
generated programs with device code spliced in; and proof that the oracle can fail."""

from __future__ import annotations

import random
import re

import libcst as cst
import pytest
from fixturelib import FIXTURES, fixture_inputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from programs import check_fixer, generated_program

from devlint import oracle
from devlint.engine import FixResult, LintResult
from devlint.rules import all_rules, select_rules

RULES = select_rules(set(all_rules()))
INPUTS = fixture_inputs() + sorted((FIXTURES / "demo").glob("*.py"))
IDS = [str(p.relative_to(FIXTURES)) for p in INPUTS]


def assert_ok(result: oracle.OracleResult, text: str) -> None:
    assert not result.failures and not result.oracle_errors, (
        "\n".join(result.failures + result.oracle_errors) + "\n--- input:\n" + text
        + ("\n--- fixed:\n" + result.fixed_text if result.fixed_text else ""))


# --- fixtures -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("src", INPUTS, ids=IDS)
def test_oracle_on_fixture(src):
    text = src.read_text()
    assert_ok(oracle.run(text, str(src), RULES), text)


# --- runnable fixtures: the error gone, nothing new ------------------------------------------------------
# what a rule's bug raises on a CPU-only machine
DEVICE_ERRORS = re.compile(
    r"Torch not compiled with CUDA enabled|No CUDA GPUs are available|Found no NVIDIA driver"
    r"|Can't call numpy\(\) on Tensor that requires grad|can't convert cuda"
    r"|Invalid device string|Expected one of .* device type at start of device string"
    r"|Attempting to deserialize object on a CUDA device"
)


def _last_error(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    for line in reversed(lines):  # the exception line of the last traceback
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line) or line.startswith("AssertionError"):
            return line.strip()
    return lines[-1].strip() if lines else ""


def _error_line(stderr: str, script: str) -> int | None:
    lines = re.findall(rf'File "{re.escape(script)}", line (\d+)', stderr)
    return int(lines[-1]) if lines else None


@pytest.mark.slow
@pytest.mark.xdist_group("fixture-runs")  # one worker runs them all (conftest.fixture_runs)
@pytest.mark.parametrize("name", IDS)
def test_fixture_runs_after_fix(fixture_runs, name):
    """Each fixture input run on the CPU as written and after `fix_text(unsafe=True)` (conftest.fixture_runs:
    one process imports torch once and forks a child per run)."""
    if pytest.importorskip("torch").cuda.is_available():
        pytest.skip("the device errors these scripts raise need a machine without CUDA")
    run = fixture_runs[name]
    before, after, left = run["before"], run["after"], set(run["left"])
    before_error = _last_error(before["stderr"]) if before["rc"] != 0 else ""
    after_error = _last_error(after["stderr"]) if after["rc"] != 0 else ""
    if before["rc"] == "timeout":
        pytest.skip("does not finish in 60 s on a CPU before the fix")
    if before["rc"] != 0 and not DEVICE_ERRORS.search(before["stderr"]):
        # not runnable here for another reason (a missing package, a name the snippet leaves undefined):
        # the fix must not change how it fails, and there is nothing more to see
        assert after["rc"] != 0 and after_error == before_error, (before_error, after["stderr"])
        pytest.skip(f"fails before the fix for a reason other than a device error: {before_error}")
    assert after["rc"] != "timeout", "the fixed script no longer finishes in 60 s"
    if after["rc"] == 0:
        return
    # a device error is acceptable only where devlint still reports a finding it cannot fix
    line = _error_line(after["stderr"], after["script"])
    assert DEVICE_ERRORS.search(after["stderr"]) and line in left, (
        f"the fixed script fails: {after_error} (line {line}; unfixed findings on lines {sorted(left)})\n"
        + after["stderr"][-3000:])


# --- generated programs ----------------------------------------------------------------------------------
# device snippets, "{T}" standing for the torch module's name
SNIPPETS = [
    "x_ = {T}.ones(2, requires_grad=True)\ny_ = x_.numpy()",
    "m_ = {T}.nn.Linear(2, 2).cuda()",
    't_ = {T}.zeros(1, device="cuda")',
    'd_ = {T}.device("CUDA")',
    "z_ = (lambda: m_.cuda())()",
    'print(f"{m_.cuda()}")',
    "print(f'{{T}.zeros(1, device=\"cuda\")}')",
    'print(f"{x_.to(\'cuda:0\')!r:>10}")',
    "def dev_fn(x):\n    return x.cuda()",
    "def dev_default(device='cuda'):\n    return {T}.zeros(1, device=device)",
    "class DevNet({T}.nn.Module):\n    def forward(self, x):\n        return x.to('cuda:0')",
    "with {T}.no_grad():\n    w_ = {T}.ones(1).cuda()",
    "if flag_:\n    v_ = {T}.zeros(2).to('gpu')",
    "for i_ in range(2):\n    u_ = {T}.randn(2, device='cuda:0')",
    'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"',
    "q_ = [a.cuda() for a in xs_]",
    'dev_ = "cuda:0"\nmodel_.to(dev_)',
    "r_ = model_(inp_).numpy()",
    'c_ = {T}.load("f.pt", map_location="gpu")',
    "async def dev_async(x):\n    return x.to('cuda')",
]


def _statements(snippet: str, torch_name: str) -> list[cst.BaseStatement]:
    return list(cst.parse_module(snippet.replace("{T}", torch_name) + "\n").body)


def _is_future(stmt: cst.BaseStatement) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and bool(stmt.body)
            and isinstance(stmt.body[0], cst.ImportFrom) and isinstance(stmt.body[0].module, cst.Name)
            and stmt.body[0].module.value == "__future__")


class _Splice(cst.CSTTransformer):
    """Insert snippets at statement boundaries of function bodies (the module body is done apart)."""

    def __init__(self, rng: random.Random, torch_name: str) -> None:
        self.rng, self.torch_name = rng, torch_name

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        if not isinstance(updated.body, cst.IndentedBlock) or self.rng.random() < 0.3:
            return updated
        body = list(updated.body.body)
        for _ in range(self.rng.randint(1, 2)):
            at = self.rng.randint(0, len(body))
            body[at:at] = _statements(self.rng.choice(SNIPPETS), self.torch_name)
        return updated.with_changes(body=updated.body.with_changes(body=body))


def splice(source: str, rng: random.Random) -> str:
    """``import torch`` (or ``import torch as T``) after any __future__ imports of ``source``, and device
    snippets at statement boundaries of its module body and its function bodies."""
    torch_name = "T" if rng.random() < 0.3 else "torch"
    header = "import torch as T" if torch_name == "T" else "import torch"
    try:
        module = cst.parse_module(source)
    except Exception:  # noqa: BLE001 - hypothesmith can emit what LibCST will not parse: prepend only
        return header + "\n" + rng.choice(SNIPPETS).replace("{T}", torch_name) + "\n" + source
    module = module.visit(_Splice(rng, torch_name))
    body = list(module.body)
    first = 0
    while first < len(body) and _is_future(body[first]):
        first += 1
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(first, len(body))
        body[at:at] = _statements(rng.choice(SNIPPETS), torch_name)
    body[first:first] = _statements(header, torch_name)
    return module.with_changes(body=body).code


def test_splice_makes_device_programs():
    """The spliced programs parse and give the fixer work, at module level and in function bodies."""
    changed = 0
    for seed in range(10):
        text = splice("from __future__ import annotations\ndef f(a):\n    return a\n\nclass C:\n    pass\n",
                      random.Random(seed))
        cst.parse_module(text)
        assert text.startswith("from __future__ import annotations\nimport torch")
        result = oracle.run(text, "<spliced>", RULES)
        assert_ok(result, text)
        changed += result.changed
    assert changed >= 7, changed


hypothesmith = pytest.importorskip("hypothesmith")


# 40 modules: the oracle on device programs is also checked on test_oracle_on_generated_device_programs' 150 and
# on every fixture; with test_robustness.py's 20, check_fixer sees 60 generated modules, as before.
@pytest.mark.slow  # generated modules (hypothesmith)
@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_node(), st.randoms(use_true_random=False))
def test_oracle_on_hypothesmith_programs(source, rng):
    """Each generated module as it is (the fixer's contract, as tests/test_robustness.py checks it), then with
    device code spliced in (the oracle). check_fixer: tests/programs.py."""
    check_fixer("import torch\n" + source)
    text = splice(source, rng)
    assert_ok(oracle.run(text, "<generated>", RULES), text)


@pytest.mark.slow  # a corpus of 150 generated programs
def test_oracle_on_generated_device_programs():
    rng = random.Random(7)
    changed = 0
    for _ in range(150):
        text = generated_program(rng)
        result = oracle.run(text, "<generated>", RULES)
        assert_ok(result, text)
        changed += result.changed
    assert changed > 75, changed


# --- the oracle can fail ------------------------------------------------------------------------------------
ORIGINAL = "import torch\n\ndef f(x, torch=None):\n    y = x\n    return y\n\nm = torch.nn.Linear(2, 2).cuda()\n"


def _check(fixed: str, original: str = ORIGINAL) -> list[str]:
    failures, errors = oracle.check(original, fixed, "<mutant>", RULES, idempotence=False)
    assert not errors, errors
    return failures


def test_check_passes_a_good_fix():
    good = ORIGINAL.replace('.cuda()', '.to("cuda" if torch.cuda.is_available() else "cpu")')
    assert _check(good) == []
    assert oracle.check(ORIGINAL, good, "<mutant>", RULES)[0] == []


def test_check_reports_an_unbound_name():
    bad = ORIGINAL.replace(".cuda()", ".to(device)")
    assert _check(bad) == ["unbound-name: line 7: `device` is not bound here (added by a fix)"]


def test_check_reports_torch_not_imported():
    original = "from torch import nn\nm = nn.Linear(2, 2).cuda()\n"
    bad = 'from torch import nn\nm = nn.Linear(2, 2).to("cuda" if torch.cuda.is_available() else "cpu")\n'
    assert _check(bad, original) == ["unbound-name: line 2: `torch` is not bound here (added by a fix)"]


def test_check_reports_a_shadowed_torch():
    bad = ORIGINAL.replace("    y = x\n", '    y = x.to("cuda" if torch.cuda.is_available() else "cpu")\n')
    (failure,) = _check(bad)
    assert failure.startswith("unbound-name: line 4: `torch` here is not the torch module: it resolves to a parameter")
    aliased = "import torch as T\n\ndef g(T):\n    return T\n"
    (failure,) = _check(aliased.replace("return T", "return T, T.device('cpu')"), aliased)
    assert "`T` here is not the torch module" in failure


def test_check_reports_a_use_before_assignment():
    original = "import torch\ndevice = 'cpu'\n\ndef f(x):\n    y = x\n    return y\n"
    bad = original.replace("    y = x\n", "    y = x.to(device)\n    device = torch.device('cpu')\n")
    assert _check(bad, original) == [
        "unbound-name: line 5: `device` is used before its assignment on line 6 (added by a fix)"]


def test_check_reports_a_312_only_fstring():
    original = 'import torch\nm = torch.nn.Linear(2, 2)\nprint(f"{m.cuda()}")\n'
    bad = 'import torch\nm = torch.nn.Linear(2, 2)\nprint(f"{m.to("cuda" if torch.cuda.is_available() else "cpu")}")\n'
    (failure,) = _check(bad, original)
    assert failure.startswith("grammar: fixed text does not parse on Python 3.10")
    # a file that already needs 3.12 is judged by LibCST's parser only
    newer = original + 'print(f"{"x"}")\n'
    assert _check(bad + 'print(f"{"x"}")\n', newer) == []


def test_check_reports_a_non_idempotent_fix():
    original = "import torch\nx = torch.ones(1, requires_grad=True)\ny = x.numpy()\nz = x.numpy()\n"
    fixed = original.replace("y = x.numpy()", "y = x.detach().numpy()")  # the second .numpy() left unfixed
    failures, errors = oracle.check(original, fixed, "<mutant>", RULES)
    assert not errors
    assert [oracle.kind_of(f) for f in failures] == ["not-idempotent"]
    assert "DEV002 at line 4" in failures[0]


def test_run_reports_crash_dropped_fix_and_bad_output(monkeypatch):
    """A broken fixer, through oracle.run: it raises; it offers a fix and leaves it; it writes an unbound name."""
    import devlint.engine as engine

    text = "import torch\nm = torch.nn.Linear(2, 2).cuda()\n"
    real = engine.fix_text

    def raising(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(engine, "fix_text", raising)
    (failure,) = oracle.run(text, "<mutant>", RULES).failures
    assert failure.startswith("crash: fix_text raised RuntimeError: boom")

    def dropping(text, path, rules, unsafe, max_passes=10, **kwargs):
        lint = engine.lint_text(text, path, rules)
        return FixResult(text, [], LintResult(lint.findings, ["<mutant>: rule DEV001 crashed: KeyError: 'x'"]))

    monkeypatch.setattr(engine, "fix_text", dropping)
    failures = oracle.run(text, "<mutant>", RULES).failures
    assert [oracle.kind_of(f) for f in failures] == ["crash", "offered-not-applied"]
    assert oracle.line_of(failures[1]) == 2

    def unbound(text, path, rules, unsafe, max_passes=10, **kwargs):
        result = real(text, path, rules, unsafe, max_passes, **kwargs)
        result.text = result.text.replace("torch.cuda.is_available()", "cuda_ok()")
        return result

    monkeypatch.setattr(engine, "fix_text", unbound)
    result = oracle.run(text, "<mutant>", RULES)
    assert result.changed and result.fixes == 1
    assert [oracle.kind_of(f) for f in result.failures] == ["unbound-name"]
    assert "`cuda_ok` is not bound here" in result.failures[0]


def test_oracle_errors_are_kept_apart(monkeypatch):
    monkeypatch.setattr(oracle, "check_names", lambda a, b: 1 / 0)
    failures, errors = oracle.check(ORIGINAL, ORIGINAL.replace(".cuda()", ".cpu()"), "<x>", RULES)
    assert failures == []
    assert errors and errors[0].startswith("oracle-error: names check raised ZeroDivisionError")


@pytest.mark.parametrize("text", [
    "", "\n", "x = 1", "def f():\n    nonlocal x\n", "class C:\n    def f(self):\n        return __class__\n",
    "match x:\n    case [a, *rest]:\n        pass\n", "type X = int\n", "def f[T](x: T) -> T:\n    return x\n",
    "async def f():\n    async with a as b:\n        await b\n", "from x import *\nprint(y)\n",
    "lambda: (yield)\n", "global q\n", "print(f'{x!r:{w}.{p}}')\n", "try:\n    pass\nexcept* E:\n    pass\n",
    "import torch.nn.functional as F\nimport torch.cuda\n", "del x\n", "x: 'Undefined' = 1\n",
])
def test_check_never_crashes_on_odd_valid_python(text):
    for fixed in (text, text + "\nimport torch\nprint(torch.cuda.is_available())\n"):
        _, errors = oracle.check(text, fixed, "<odd>", RULES)
        assert errors == [], errors
