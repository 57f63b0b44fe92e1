"""``device-fallback`` (``[tool.devlint]`` and ``--device-fallback``): what DEV001's fixes write to choose a
device, in each mode; a bad value; the results cache keyed by it; and the fixed DEV001 fixtures of every mode
evaluated and run on this (CPU) machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from click.testing import CliRunner
from fixturelib import FIXTURES, fixed_path

from devlint import oracle
from devlint.cli import main
from devlint.context import DEVICE_FALLBACKS, Settings
from devlint.engine import fix_text
from devlint.rules import all_rules, select_rules
from devlint.runner import Options, _cache_key

RULES = select_rules(set(all_rules()))

# a string default relied on, .cuda(), device="cuda" and .to("cuda:0"), with no device variable to reuse
SOURCE = textwrap.dedent('''\
    import torch


    def run(x, device="cuda"):
        return x.to(device)


    model = torch.nn.Linear(2, 2).cuda()
    x = torch.zeros(2, device="cuda")
    y = run(torch.ones(2).to("cuda:0"))
''')


def _expected(choice: str, indexed: str) -> str:
    """SOURCE fixed, ``choice`` written for "cuda" and ``indexed`` for "cuda:0"."""
    return textwrap.dedent(f'''\
        import torch


        def run(x, device={choice}):
            return x.to(device)


        model = torch.nn.Linear(2, 2).to({choice})
        x = torch.zeros(2, device={choice})
        y = run(torch.ones(2).to({indexed}))
    ''')


CUDA_CPU = '"cuda" if torch.cuda.is_available() else "cpu"'
MPS = ' if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"'
ACCELERATOR = 'torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"'
EXPECTED = {
    "cuda-cpu": _expected(CUDA_CPU, '"cuda:0" if torch.cuda.is_available() else "cpu"'),
    "cuda-mps-cpu": _expected('"cuda"' + MPS, '"cuda:0"' + MPS),
    "accelerator": _expected(ACCELERATOR, 'f"{torch.accelerator.current_accelerator().type}:0" if '
                                          'torch.accelerator.is_available() else "cpu"'),
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SOURCE)
    return tmp_path


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _pyproject(root: Path, mode: str) -> None:
    (root / "pyproject.toml").write_text(f'[tool.devlint]\ndevice-fallback = "{mode}"\n')


# --- what each mode writes --------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", DEVICE_FALLBACKS)
def test_cli_option_decides_the_fix(project, mode):
    result = invoke("check", "--no-cache", "--fix", "--unsafe-fixes", "--device-fallback", mode, "train.py")
    assert result.exit_code == 0, result.output
    assert (project / "train.py").read_text() == EXPECTED[mode]


@pytest.mark.parametrize("mode", DEVICE_FALLBACKS)
def test_top_level_command_takes_the_option(project, mode):
    result = invoke("--no-cache", "--fix", "--unsafe-fixes", "--device-fallback", mode, "train.py")
    assert result.exit_code == 0, result.output
    assert (project / "train.py").read_text() == EXPECTED[mode]


@pytest.mark.parametrize("mode", DEVICE_FALLBACKS)
def test_pyproject_decides_the_fix(project, mode):
    _pyproject(project, mode)
    result = invoke("check", "--no-cache", "--fix", "--unsafe-fixes", "train.py")
    assert result.exit_code == 0, result.output
    assert (project / "train.py").read_text() == EXPECTED[mode]


def test_command_line_overrides_pyproject(project):
    _pyproject(project, "cuda-mps-cpu")
    result = invoke("check", "--no-cache", "--fix", "--unsafe-fixes", "--device-fallback", "accelerator", "train.py")
    assert result.exit_code == 0, result.output
    assert (project / "train.py").read_text() == EXPECTED["accelerator"]


def test_unset_is_cuda_cpu_and_the_chain_where_the_file_mentions_mps(project):
    result = invoke("check", "--no-cache", "--fix", "--unsafe-fixes", "train.py")
    assert result.exit_code == 0, result.output
    assert (project / "train.py").read_text() == EXPECTED["cuda-cpu"]
    mentions_mps = SOURCE + 'print(torch.backends.mps.is_available())\n'
    (project / "train.py").write_text(mentions_mps)
    invoke("check", "--no-cache", "--fix", "--unsafe-fixes", "train.py")
    assert (project / "train.py").read_text() == EXPECTED["cuda-mps-cpu"] + 'print(torch.backends.mps.is_available())\n'


def test_set_cuda_cpu_leaves_out_mps_also_where_the_file_mentions_it():
    text = SOURCE + 'print(torch.backends.mps.is_available())\n'
    fixed = fix_text(text, "t.py", RULES, unsafe=True, settings=Settings("cuda-cpu")).text
    assert fixed == EXPECTED["cuda-cpu"] + 'print(torch.backends.mps.is_available())\n'


def test_diff_shows_the_mode(project):
    result = invoke("check", "--no-cache", "--diff", "--unsafe-fixes", "--device-fallback", "accelerator", "train.py")
    assert f"+model = torch.nn.Linear(2, 2).to({ACCELERATOR})\n" in result.output
    assert (project / "train.py").read_text() == SOURCE  # --diff writes nothing


def test_messages_suggest_the_accelerator_form_in_that_mode(project):
    def messages(*args: str) -> list[str]:
        result = invoke("check", "--no-cache", "--output-format", "json", *args, "train.py")
        return [f["message"].split("; ", 1)[1] for f in json.loads(result.output)]

    cuda = ['fall back with "cuda" if torch.cuda.is_available() else "cpu"',
            "use .to(device) with a device chosen by torch.cuda.is_available()",
            'fall back with "cuda" if torch.cuda.is_available() else "cpu"',
            'fall back with "cuda:0" if torch.cuda.is_available() else "cpu"']
    assert messages() == cuda
    assert messages("--device-fallback", "cuda-mps-cpu") == cuda
    assert messages("--device-fallback", "accelerator") == [
        f"fall back with {ACCELERATOR}", "use .to(device) with a device chosen by torch.accelerator.is_available()",
        f"fall back with {ACCELERATOR}", f"fall back with {ACCELERATOR}"]


def test_accelerator_in_an_fstring_uses_the_other_quote():
    text = 'import torch\nx = torch.ones(2)\nprint(f"{x.to(\'cuda:1\')}")\n'
    fixed = fix_text(text, "t.py", RULES, unsafe=True, settings=Settings("accelerator")).text
    assert fixed == ('import torch\nx = torch.ones(2)\nprint(f"{x.to(f\'{torch.accelerator.current_accelerator().type}:1\''
                     ' if torch.accelerator.is_available() else \'cpu\')}")\n')


def test_accelerator_device_variable_is_reused():
    """A device chosen with the accelerator idiom (what the fix writes) is a device variable later fixes use."""
    text = ("import torch\ndevice = torch.accelerator.current_accelerator().type if torch.accelerator.is_available()"
            ' else "cpu"\nmodel = torch.nn.Linear(2, 2).cuda()\n')
    fixed = fix_text(text, "t.py", RULES, unsafe=True).text
    assert fixed == text.replace(".cuda()", ".to(device)")


@pytest.mark.parametrize("rule_code, text, fixed", [
    # a torch.cuda call needs CUDA itself, not any accelerator: the CUDA check stays in every mode
    ("DEV006", 'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\ntorch.cuda.synchronize()\n',
     'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\nif torch.cuda.is_available():\n'
     '    torch.cuda.synchronize()\n'),
    # map_location="cpu" loads anywhere; it is where the tensors go, not a device choice
    ("DEV005", 'import torch\nmodel = torch.nn.Linear(2, 2)\nif torch.cuda.is_available():\n    model.cuda()\n'
               'model.load_state_dict(torch.load("ckpt.pt"))\n',
     'import torch\nmodel = torch.nn.Linear(2, 2)\nif torch.cuda.is_available():\n    model.cuda()\n'
     'model.load_state_dict(torch.load("ckpt.pt", map_location="cpu"))\n'),
])
@pytest.mark.parametrize("mode", [None, *DEVICE_FALLBACKS])
def test_other_rules_fixes_do_not_follow_the_mode(rule_code, text, fixed, mode):
    result = fix_text(text, "t.py", select_rules({rule_code}), unsafe=True, settings=Settings(mode))
    assert [f.code for f in result.fixed] == [rule_code]
    assert result.text == fixed


def test_verify_run_fixes_in_the_mode(project, monkeypatch):
    """`devlint verify --run` fixes its copy of the script with the mode asked for."""
    pytest.importorskip("torch")
    from devlint import verify

    fixed: list[str] = []

    def fake_verify_script(script, targets, timeout, fix):  # type: ignore[no-untyped-def]
        copy = project / "copy.py"
        copy.write_text(Path(script).read_text())
        assert fix(str(copy)) == 4
        fixed.append(copy.read_text())
        return []

    monkeypatch.setattr(verify, "detect_targets", lambda timeout=120: ["cpu"])
    monkeypatch.setattr(verify, "verify_script", fake_verify_script)
    result = invoke("verify", "--run", "train.py", "--device-fallback", "accelerator")
    assert result.exit_code == 0, result.output
    assert fixed == [EXPECTED["accelerator"]]
    assert (project / "train.py").read_text() == SOURCE


# --- a bad value ------------------------------------------------------------------------------------------
def test_bad_value_on_the_command_line(project):
    result = CliRunner().invoke(main, ["check", "--device-fallback", "mps", "train.py"])
    assert result.exit_code == 2
    assert result.output == ("devlint: error: --device-fallback must be one of 'cuda-cpu', 'cuda-mps-cpu', "
                             "'accelerator' (got 'mps')\n")
    assert (project / "train.py").read_text() == SOURCE


@pytest.mark.parametrize("value, shown", [('"gpu"', "'gpu'"), ("true", "True"), ('["cuda-cpu"]', "['cuda-cpu']")])
def test_bad_value_in_pyproject(project, value, shown):
    (project / "pyproject.toml").write_text(f"[tool.devlint]\ndevice-fallback = {value}\n")
    result = CliRunner().invoke(main, ["check", "--fix", "--unsafe-fixes", "train.py"])
    assert result.exit_code == 2
    path = project / "pyproject.toml"
    assert result.output == (f"devlint: error: {path}: [tool.devlint] device-fallback must be one of 'cuda-cpu', "
                             f"'cuda-mps-cpu', 'accelerator' (got {shown})\n")
    assert (project / "train.py").read_text() == SOURCE


def test_bad_value_for_verify(project):
    pytest.importorskip("torch")
    result = CliRunner().invoke(main, ["verify", "--device-fallback", "cpu", "train.py"])
    assert result.exit_code == 2
    assert result.output.startswith("devlint: error: --device-fallback must be one of")
    assert result.output.count("\n") == 1


# --- the results cache ------------------------------------------------------------------------------------
def test_cache_key_includes_the_mode():
    data = SOURCE.encode()
    keys = {_cache_key(data, RULES, Options(select=set(), settings=Settings(mode)), "train.py")
            for mode in (None, *DEVICE_FALLBACKS)}
    assert len(keys) == 4
    assert _cache_key(data, RULES, Options(select=set()), "gpu/train.py") != _cache_key(
        data, RULES, Options(select=set()), "train.py")  # where the file is is part of its result


def _fix_contents(output: str) -> list[str]:
    return [e["content"] for f in json.loads(output) if f["fix"] for e in f["fix"]["edits"]]


def test_cached_findings_follow_the_mode(project):
    """Lint results (with their fixes) are cached; a run with another mode must not be answered with the
    fixes of the first."""
    args = ["check", "--output-format", "json", "--cache-dir", str(project / "cache"), "train.py"]
    first = _fix_contents(invoke(*args).output)
    assert CUDA_CPU in first
    assert os.listdir(project / "cache")  # the result was cached
    accelerator = _fix_contents(invoke(*args, "--device-fallback", "accelerator").output)
    assert ACCELERATOR in accelerator and CUDA_CPU not in accelerator
    _pyproject(project, "cuda-mps-cpu")
    chain = _fix_contents(invoke(*args).output)
    assert '"cuda"' + MPS in chain
    assert _fix_contents(invoke(*args, "--device-fallback", "cuda-cpu").output) == first


# --- the fixed DEV001 fixtures of every mode, on this machine --------------------------------------------
DEV001 = sorted(p for p in (FIXTURES / "DEV001").glob("*.py")
                if not p.name.endswith((".fixed.py", ".safe.py")) and fixed_path(p).exists())
IDS = [p.stem for p in DEV001]


def _fixed(src: Path, mode: str):  # type: ignore[no-untyped-def]
    return fix_text(src.read_text(), str(src), RULES, unsafe=True, settings=Settings(mode))


def _inserted(result) -> list[str]:  # type: ignore[no-untyped-def]
    """The device choices DEV001's fixes wrote (an edit's content: ``expr``, ``(expr)``, or ``expr, `` before
    the arguments of a ``.cuda(...)`` turned ``.to(...)``)."""
    out = []
    for finding in result.fixed:
        for edit in finding.fix.edits:
            content = edit.content.removesuffix(", ")
            if finding.code == "DEV001" and "is_available()" in content:
                out.append(content)
    return out


def test_default_output_of_the_fixtures_is_unchanged():
    """Unset, the fixes write what the fixtures' .fixed.py hold (cuda-cpu; the chain in mps_chain and
    param_default, which mention mps)."""
    for src in DEV001:
        result = fix_text(src.read_text(), str(src), RULES, unsafe=True)
        assert result.text == fixed_path(src).read_text(), src.name


@pytest.mark.parametrize("src", DEV001, ids=IDS)
@pytest.mark.parametrize("mode", DEVICE_FALLBACKS)
def test_inserted_device_choices_evaluate_to_the_cpu_here(src, mode):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() or torch.accelerator.is_available():
        pytest.skip("checks what the choices give on a machine without an accelerator")
    result = _fixed(src, mode)
    inserted = _inserted(result)
    assert inserted, "no device choice was written"
    names = {name: torch for name in oracle.torch_names(cst.parse_module(result.text))}
    for expr in inserted:
        assert expr in result.text
        plain = expr.strip("()")
        if mode == "accelerator":
            assert "accelerator.current_accelerator().type" in plain and "cuda" not in plain
        else:
            assert ("backends.mps.is_available()" in plain) == (mode == "cuda-mps-cpu")
        value = eval(compile(expr, "<inserted>", "eval"), {"__builtins__": {}}, dict(names))
        assert isinstance(value, str), (expr, value)  # a string: valid also where the program reads one
        assert torch.device(value) == torch.device("cpu")
        assert torch.zeros(1, device=value).device.type == "cpu"


@pytest.mark.parametrize("src", DEV001, ids=IDS)
@pytest.mark.parametrize("mode", DEVICE_FALLBACKS)
def test_fix_oracle_in_every_mode(src, mode):
    result = oracle.run(src.read_text(), str(src), RULES, Settings(mode))
    assert not result.failures and not result.oracle_errors, result.failures + result.oracle_errors
    assert result.changed


# One interpreter imports torch once and runs each script in a forked child: (exit code, last stderr line).
_RUNNER = textwrap.dedent('''
    import json, os, runpy, sys, traceback
    import torch  # noqa: F401
    out = []
    for script in json.load(open(sys.argv[1])):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            code, error = 0, ""
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.chdir(os.path.dirname(script))
                sys.argv = [script]
                runpy.run_path(script, run_name="__main__")
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException as exc:
                code, error = 1, traceback.format_exception_only(exc)[-1].strip()
                error += " @" + str(traceback.extract_tb(exc.__traceback__)[-1].lineno)
            os.write(write, json.dumps([code, error]).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as fh:
            data = fh.read()
        os.waitpid(pid, 0)
        out.append(json.loads(data))
    print(json.dumps(out))
''')


@pytest.mark.slow  # a dozen seconds: 36 runs of scripts that train small models
def test_fixed_fixtures_run_on_the_cpu_in_every_mode(tmp_path):
    """Each DEV001 fixture fails on this machine as written (a device error); fixed in each mode it runs as
    far as the default fix does, no device error left."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() or torch.accelerator.is_available():
        pytest.skip("the device errors these scripts raise need a machine without an accelerator")
    scripts, cases = [], []
    for src in DEV001:
        texts = {"before": src.read_text(), "default": fixed_path(src).read_text()}
        texts.update((mode, _fixed(src, mode).text) for mode in DEVICE_FALLBACKS)
        for stage, text in texts.items():
            folder = tmp_path / src.stem / stage
            folder.mkdir(parents=True)
            (folder / src.name).write_text(text)
            scripts.append(str(folder / src.name))
            cases.append((src.stem, stage))
    (tmp_path / "jobs.json").write_text(json.dumps(scripts))
    proc = subprocess.run([sys.executable, "-c", _RUNNER, str(tmp_path / "jobs.json")], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    outcome = {case: tuple(r) for case, r in zip(cases, json.loads(proc.stdout), strict=True)}
    for src in DEV001:
        before = outcome[(src.stem, "before")]
        default = outcome[(src.stem, "default")]
        if before[0] == 0:
            continue  # runs as written (its findings are on paths this run does not take)
        assert any(e in before[1] for e in ("Torch not compiled with CUDA enabled", "No CUDA GPUs are available")), \
            (src.stem, before)  # a CPU build's error, or a CUDA build's with its GPUs hidden
        if "CUDA" in default[1]:  # only where a finding is left that has no fix (a legacy tensor type)
            left = {f.start.row for f in _fixed(src, "cuda-cpu").remaining.findings if f.code == "DEV001"}
            assert int(default[1].rsplit("@", 1)[1]) in left, (src.stem, default, left)
        for mode in DEVICE_FALLBACKS:
            assert outcome[(src.stem, mode)] == default, (src.stem, mode, outcome[(src.stem, mode)], default)
