"""`devlint verify`: findings proven by running them (CPU here; the CUDA path is marked `cuda`).

Every test here that runs probes or scripts starts fresh interpreters that import torch: they are marked
`slow`. The CLI runs ask for the machine's targets once per session (conftest.targets_detected_once)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixturelib import BLOCK_TORCH

from devlint.cli import main
from devlint.verify import Target, run_probes

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"
torch = pytest.importorskip("torch")
HAS_CUDA = torch.cuda.is_available()
# what `import torch; torch.zeros(1).cuda()` raises with CUDA hidden: a CPU build, or a CUDA build
NO_CUDA_ERRORS = ("AssertionError: Torch not compiled with CUDA enabled", "RuntimeError: No CUDA GPUs are available")


def verify_json(*args):
    result = CliRunner().invoke(main, ["verify", "--output-format", "json", *args], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return {(Path(d["filename"]).name, d["location"]["row"], d["code"]): d for d in json.loads(result.output)}


@pytest.fixture(scope="module")
def verdicts(verify_targets):
    with pytest.MonkeyPatch.context() as mp:  # as conftest.targets_detected_once, for the module
        mp.setattr("devlint.verify.detect_targets", lambda timeout=120: list(verify_targets))
        return verify_json(str(FIX / "DEV001" / "aliases.py"), str(FIX / "DEV002" / "numpy_bad.py"),
                           str(FIX / "DEV003" / "invalid.py"), str(FIX / "DEV004" / "late_env.py"))


def reads_verdicts(test):
    """The tests of `verdicts`: slow, and one xdist group, so that the module fixture runs once."""
    return pytest.mark.slow(pytest.mark.xdist_group("verify-verdicts")(test))


@reads_verdicts
def test_every_finding_gets_a_verdict_per_target(verdicts):
    targets = {"cpu", "no-gpu"} | ({"cuda"} if HAS_CUDA else set())
    assert len(verdicts) == 30
    for d in verdicts.values():
        assert targets <= set(d["targets"])
        assert all(o["verdict"] in ("confirmed", "not reproduced", "inconclusive") for o in d["targets"].values())


@reads_verdicts
def test_dev001_confirmed_without_cuda_and_fix_runs_clean(verdicts):
    d = verdicts[("aliases.py", 7, "DEV001")]  # layer.to("cuda")
    assert d["targets"]["no-gpu"]["verdict"] == "confirmed"
    assert "Torch not compiled with CUDA enabled" in d["targets"]["no-gpu"]["detail"] or \
        "No CUDA GPUs are available" in d["targets"]["no-gpu"]["detail"]
    if not HAS_CUDA:
        assert d["targets"]["cpu"] == d["targets"]["no-gpu"]
    assert {o["verdict"] for o in d["fixed"].values()} == {"clean"}


@reads_verdicts
def test_dev002_grad_confirmed_with_torchs_text(verdicts):
    d = verdicts[("numpy_bad.py", 7, "DEV002")]
    for target in ("cpu", "no-gpu"):
        assert d["targets"][target] == {
            "verdict": "confirmed",
            "detail": "RuntimeError: Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
        }
    assert {o["verdict"] for o in d["fixed"].values()} == {"clean"}


@reads_verdicts
def test_dev002_gpu_only_needs_a_gpu(verdicts):
    d = verdicts[("numpy_bad.py", 20, "DEV002")]  # g = torch.zeros(3, device=device); g.numpy()
    assert d["targets"]["no-gpu"] == {"verdict": "inconclusive", "detail": "needs a GPU to put the tensor on"}


@reads_verdicts
def test_dev003_confirmed_everywhere_and_fixes_checked(verdicts):
    multi = verdicts[("invalid.py", 4, "DEV003")]
    assert multi["targets"]["cpu"] == {"verdict": "confirmed", "detail": "RuntimeError: Invalid device string: 'cuda:1,2'"}
    assert multi["fixed"] is None  # no fix to check
    upper = verdicts[("invalid.py", 6, "DEV003")]
    assert upper["targets"]["no-gpu"]["verdict"] == "confirmed"
    assert upper["targets"]["no-gpu"]["detail"].endswith("device type at start of device string: CUDA")
    assert {o["verdict"] for o in upper["fixed"].values()} == {"clean"}


@reads_verdicts
def test_dev004_inconclusive_without_cuda(verdicts):
    d = verdicts[("late_env.py", 6, "DEV004")]
    assert d["targets"]["no-gpu"] == {
        "verdict": "inconclusive", "detail": "needs a CUDA GPU: without one the effect cannot be observed"}


@pytest.mark.slow
def test_text_table(tmp_path, targets_detected_once):
    result = CliRunner().invoke(main, ["verify", str(FIX / "DEV003" / "invalid.py")])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].split() == ["finding", "code", "cpu", *(["cuda"] if HAS_CUDA else []), "no-gpu", "after", "fix"]
    assert lines[1].split()[:2] == [f"{FIX / 'DEV003' / 'invalid.py'}:4:22", "DEV003"]
    assert lines[1].split()[-2:] == ["no", "fix"]
    assert "DEV003 confirmed on cpu: RuntimeError: Invalid device string: 'cuda:1,2'" in result.output
    assert lines[-1] == ("10 findings: 10 confirmed on at least one target, 0 not reproduced on some target, "
                         "0 inconclusive on some target.")


@pytest.mark.slow
def test_rules_matrix(targets_detected_once):
    result = CliRunner().invoke(main, ["verify", "--rules", "--output-format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert {r["code"] for r in rows} == {"DEV001", "DEV002", "DEV003", "DEV004", "DEV005", "DEV006", "DEV007",
                                         "DEV008", "DEV009"}
    for r in rows:
        if r["code"] == "DEV003":
            assert {o["verdict"] for o in r["targets"].values()} == {"confirmed"}
        if r["code"] == "DEV001":
            assert r["targets"]["no-gpu"]["verdict"] == "confirmed"
            assert r["targets"].get("cuda", {"verdict": "not reproduced"})["verdict"] == "not reproduced"
    # DEV008: a discarded cast or move leaves the tensor as it was, on the CPU too (dtype, or the meta device)
    for r in rows_of(rows, "DEV008"):
        if r["evidence"]["method"] in ("double", "half", "float", "to"):
            assert r["targets"]["cpu"]["verdict"] == "confirmed", r
            assert r["targets"]["cpu"]["detail"].startswith("x stayed on cpu as torch.float")
            assert {o["verdict"] for o in r["fixed"].values()} == {"clean"}
    # DEV007: only MPS raises; on the CPU the probe shows the flagged code's tensor is float64 (inconclusive)
    dev007 = rows_of(rows, "DEV007")
    assert {r["evidence"]["kind"] for r in dev007} == {"factory", "to_dtype", "move", "numpy", "numpy_tensor", "cast",
                                                       "default_dtype"}
    for r in dev007:
        assert r["targets"]["cpu"] == {"verdict": "inconclusive", "detail": (
            "the code makes a torch.float64 tensor (built on cpu here); only an MPS device raises the TypeError")}, r
        if "mps" in r["targets"]:
            assert r["targets"]["mps"]["verdict"] == "confirmed", r
        assert {o["verdict"] for o in r["fixed"].values()} == {"clean"}, r
    _check_dev009(rows_of(rows, "DEV009"))
    dev004 = next(r for r in rows if r["code"] == "DEV004")
    if not HAS_CUDA:
        assert dev004["targets"]["cpu"]["verdict"] == "inconclusive"


@pytest.mark.slow
def test_run_turns_a_crashing_colab_script_into_a_clean_run(targets_detected_once):
    script = FIX / "scripts" / "colab_regression.py"
    result = CliRunner().invoke(main, ["verify", "--run", str(script), "--output-format", "json", "--timeout", "240"])
    assert result.exit_code == 0, result.output
    runs = {r["target"]: r for r in json.loads(result.output)}
    nogpu = runs["no-gpu"]
    assert nogpu["before"]["returncode"] not in (0, None)
    assert nogpu["before"]["error"] in NO_CUDA_ERRORS
    assert nogpu["after"] == {"returncode": 0, "error": ""}
    assert nogpu["fixes_applied"] == 3
    assert script.read_text() == (FIX / "scripts" / "colab_regression.py").read_text()  # the original is untouched


@pytest.mark.slow
def test_run_text_output_and_timeout(tmp_path, verify_targets, monkeypatch):
    # on the no-gpu target alone: every target waits the timeout out, and --run on each target of the machine
    # is test_run_turns_a_crashing_colab_script_into_a_clean_run's
    no_gpu = [t for t in verify_targets if t.name == "no-gpu"]
    monkeypatch.setattr("devlint.verify.detect_targets", lambda timeout=120: list(no_gpu))
    hang = tmp_path / "hang.py"
    # crashes at once without CUDA; once fixed it runs on into the sleep and is stopped by the timeout (10 s
    # leaves the crashing run, `import torch` and all, several times what it needs)
    hang.write_text("import time\nimport torch\nx = torch.zeros(1).cuda()\ntime.sleep(300)\n")
    result = CliRunner().invoke(main, ["verify", "--run", str(hang), "--timeout", "10"])
    assert result.exit_code == 1
    line = next(line for line in result.output.splitlines() if " on no-gpu:" in line)
    assert any(f"before: crashed (exit 1: {error})" in line for error in NO_CUDA_ERRORS)
    assert "after 1 fixes: did not finish (timed out after 10 s)" in line


@pytest.mark.slow
def test_a_hanging_probe_is_stopped():
    results = run_probes([("slow", "import time\ntime.sleep(30)"), ("fast", "RESULT = 1 + 1")],
                         Target("cpu", None), timeout=2)
    assert results["slow"]["status"] == "timeout"
    assert results["slow"]["detail"] == "timed out after 2 s"
    assert results["fast"] == {"key": "fast", "status": "ok", "detail": "", "result": 2}


@pytest.mark.slow
def test_targets_always_include_cpu_and_no_gpu(verify_targets):
    names = [t.name for t in verify_targets]  # detect_targets(), run once per session by the fixture
    assert names[0] == "cpu" and names[-1] == "no-gpu"
    assert ("cuda" in names) == HAS_CUDA


def test_verify_without_torch_exits_2(tmp_path):
    script = BLOCK_TORCH + textwrap.dedent('''
        from devlint.cli import main
        main(["verify", "."])
    ''')

    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 2
    assert "install `devlint[verify]`" in result.stderr


def _check_dev009(dev009):
    """DEV009: without a GPU the meta device stands in for one: torch's meta kernels raise on the CPU tensor that
    an elementwise op, a comparison, torch.cat or masked_fill mixes in; the fixed module runs clean."""
    assert {r["evidence"]["op"] for r in dev009} == {"add", "compare", "cat", "masked_fill", "matmul", "layer"}
    for r in dev009:
        cpu = r["targets"]["cpu"]
        if r["evidence"]["op"] in ("add", "compare", "cat", "masked_fill"):
            assert cpu["verdict"] == "confirmed", r
            assert re.fullmatch(r"RuntimeError: Tensor on device (cpu|meta) is not on the expected device "
                                r"(meta|cpu)!", cpu["detail"]), r
            assert r["fixed"]["cpu"]["verdict"] == "clean", r
        else:  # matmul, a layer's parameters: meta does not check them
            assert cpu == {"verdict": "inconclusive", "detail": "needs a GPU to put the tensor on"}, r
        if HAS_CUDA:
            assert r["targets"]["cuda"]["verdict"] == "confirmed", r
            assert r["fixed"]["cuda"]["verdict"] == "clean", r


def rows_of(rows, code):
    return [r for r in rows if r["code"] == code]


@pytest.mark.cuda
@pytest.mark.slow
def test_cuda_path(tmp_path, targets_detected_once):
    """On a CUDA machine: DEV004 confirmed, DEV002 GPU tensor confirmed, DEV001 not reproduced on cuda."""
    d = verify_json(str(FIX / "DEV004" / "late_env.py"), str(FIX / "DEV002" / "numpy_bad.py"),
                    str(FIX / "DEV001" / "aliases.py"))
    late = d[("late_env.py", 6, "DEV004")]  # CUDA_VISIBLE_DEVICES="1,2" after torch.cuda.device_count()
    assert late["targets"]["cuda"]["verdict"] in ("confirmed", "not reproduced", "inconclusive"), late
    assert late["fixed"]["cuda"]["verdict"] == "clean"
    rules = json.loads(CliRunner().invoke(main, ["verify", "--rules", "--output-format", "json"]).output)
    by_init = {r["evidence"]["init"]: r["targets"]["cuda"] for r in rows_of(rules, "DEV004")}
    # a CUDA tensor (the probe's stand-in for an init it does not know) certainly initialises CUDA:
    # hiding every GPU afterwards has no effect
    assert by_init[None]["verdict"] == "confirmed", by_init
    assert "stayed" in by_init[None]["detail"]
    gpu = d[("numpy_bad.py", 20, "DEV002")]
    assert gpu["targets"]["cuda"]["verdict"] == "confirmed"
    assert "can't convert cuda:0 device type tensor to numpy" in gpu["targets"]["cuda"]["detail"]
    assert gpu["fixed"]["cuda"]["verdict"] == "clean"
    hard = d[("aliases.py", 7, "DEV001")]  # layer.to("cuda")
    assert hard["targets"]["no-gpu"]["verdict"] == "confirmed"
    assert hard["targets"]["cuda"]["verdict"] == "not reproduced"


# --- targets: named by what the probe ran with -------------------------------------------------------------
SITE_TORCH = "/opt/py/lib/python3.11/site-packages/torch/__init__.py"


def fake_machine(monkeypatch, **info):
    """`devlint verify` on a machine whose torch answers ``info`` (no GPU here: the detection is faked)."""
    from devlint import verify

    monkeypatch.setattr(verify, "device_info", lambda timeout=120: {"cuda": False, "mps": False,
                                                                     "torch": SITE_TORCH, **info})


@pytest.mark.parametrize(("info", "names"), [
    ({}, ["cpu", "no-gpu"]), ({"cuda": True}, ["cpu", "cuda", "no-gpu"]), ({"mps": True}, ["cpu", "mps", "no-gpu"]),
])
def test_targets_are_named_by_what_the_probe_ran_with(monkeypatch, info, names):
    from devlint.verify import child_env, detect_targets, program

    fake_machine(monkeypatch, **info)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # a GPU machine's setting: only `cpu`/`no-gpu` override it
    targets = {t.name: t for t in detect_targets()}
    assert list(targets) == names
    cpu = targets["cpu"]
    # the cpu probe: the CPU device selected, every CUDA/ROCm GPU hidden, GPU evidence left on the CPU
    assert child_env(cpu)["CUDA_VISIBLE_DEVICES"] == "" and child_env(cpu)["HIP_VISIBLE_DEVICES"] == ""
    cpu_program = program([("k", "RESULT = 1")], cpu, 5)
    assert "ACCEL = None\n" in cpu_program
    assert "torch.set_default_device('cpu')" in cpu_program
    assert child_env(targets["no-gpu"])["CUDA_VISIBLE_DEVICES"] == ""
    assert "ACCEL = None\n" in program([("k", "RESULT = 1")], targets["no-gpu"], 5)
    for accel in ("cuda", "mps"):
        if accel in targets:
            # GPU evidence placed on the accelerator, which stays visible as the machine set it
            assert f"ACCEL = {accel!r}\n" in program([("k", "RESULT = 1")], targets[accel], 5)
            assert child_env(targets[accel])["CUDA_VISIBLE_DEVICES"] == "0"
            assert targets[accel].default_device is None


def test_probes_per_target_on_a_faked_gpu_machine(monkeypatch, tmp_path):
    """Which probe runs on which target, with what: on a (faked) CUDA machine the GPU-only DEV002 probe runs
    on `cuda` alone, DEV004's on `cuda` alone, the grad probe everywhere."""
    from devlint import verify

    fake_machine(monkeypatch, cuda=True)
    ran = []

    def fake_run(probes, target, timeout):
        ran.append((target.name, dict(target.env), target.accel, [k.split("|")[0] + k.split('"')[1] for k, _ in probes]))
        return {k: {"key": k, "status": "raised", "detail": "RuntimeError: x", "result": None} for k, _ in probes}

    monkeypatch.setattr(verify, "run_probes", fake_run)
    src = tmp_path / "t.py"
    src.write_text("import os\nimport torch\ng = torch.ones(2, requires_grad=True)\ng.numpy()\n"
                   "d = torch.zeros(2, device='cuda')\nd.numpy()\ntorch.cuda.device_count()\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n")
    result = CliRunner().invoke(main, ["verify", "--output-format", "json", str(src)], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    per_target = {}
    for name, env, accel, keys in ran:
        per_target.setdefault(name, (env, accel, []))[2].extend(keys)
    assert per_target["cpu"][:2] == ({"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}, None)
    assert per_target["cuda"][:2] == ({}, "cuda")
    assert per_target["no-gpu"][:2] == ({"CUDA_VISIBLE_DEVICES": ""}, None)
    assert sorted(per_target["cuda"][2]) == ["aDEV001", "aDEV002", "aDEV002", "aDEV004", "bDEV001", "bDEV002", "bDEV002",
                                             "bDEV004"]
    for name in ("cpu", "no-gpu"):
        assert sorted(per_target[name][2]) == ["aDEV001", "aDEV002", "bDEV001", "bDEV002"]
    rows = json.loads(result.output)
    assert list(rows[0]["targets"]) == ["cpu", "cuda", "no-gpu"]


# --- probes are built from facts, never from the flagged code ------------------------------------------------
PAYLOAD = '__import__("os").system("touch PWNED")'


def _calls_import(code: str) -> bool:
    import ast

    return any(isinstance(n, ast.Name) and n.id == "__import__" for n in ast.walk(ast.parse(code)))


def test_dev001_evidence_holds_facts_not_source():
    from devlint.engine import lint_text
    from devlint.probes import probe_for
    from devlint.rules import select_rules
    from devlint.rules.dev001_hardcoded_cuda import CudaEvidence

    src = f"import torch\nm = torch.nn.Linear(2, 2)\nm.cuda({PAYLOAD})\nm.cuda(1)\nm.cuda(device=0x2)\n"
    findings = lint_text(src, "x.py", select_rules({"DEV001"})).findings
    assert [(f.start.row, f.evidence) for f in findings] == [
        (3, CudaEvidence(cuda_call=True)), (4, CudaEvidence(cuda_call=True, cuda_index=1)),
        (5, CudaEvidence(cuda_call=True, cuda_index=2))]
    probes = [probe_for(f) for f in findings]
    assert [p.before for p in probes] == ["torch.nn.Linear(2, 2).cuda()", "torch.nn.Linear(2, 2).cuda(1)",
                                          "torch.nn.Linear(2, 2).cuda(2)"]
    assert probes[1].after == "torch.nn.Linear(2, 2).to('cuda:1' if torch.cuda.is_available() else 'cpu')"


def test_no_probe_runs_an_expression_put_in_its_evidence():
    """Every probe module, fed evidence whose every string field is an expression that would run code: the
    probe is refused (None) or its program holds that text as inert data at most (no call of __import__)."""
    import dataclasses
    import typing

    from devlint.probes import probe_module
    from devlint.rules import all_rules

    checked = 0
    for code in all_rules():
        module = probe_module(code)
        if module is None:
            continue
        for example in module.EVIDENCE:
            hints = typing.get_type_hints(type(example))
            for f in dataclasses.fields(example):
                if "str" not in str(hints[f.name]):
                    continue
                for payload in (PAYLOAD, f"'cpu'){PAYLOAD}#", f'"cuda:0"\n{PAYLOAD}'):
                    probe = module.probe(dataclasses.replace(example, **{f.name: payload}))
                    checked += 1
                    if probe is None:
                        continue
                    for body in (probe.before, probe.after or ""):
                        assert not _calls_import(body), (code, f.name, body)
    assert checked >= 30


@pytest.mark.slow
def test_verify_never_runs_the_flagged_expression(tmp_path, targets_detected_once):
    marker = tmp_path / "PWNED"
    src = tmp_path / "train.py"
    src.write_text(f"import torch\nm = torch.nn.Linear(2, 2)\nm.cuda(__import__('os').system('touch {marker}'))\n")
    d = verify_json(str(src))
    assert d[("train.py", 3, "DEV001")]["targets"]["no-gpu"]["verdict"] == "confirmed"
    assert not marker.exists()


# --- a torch of the project is never imported by a probe --------------------------------------------------------
def _shadowing_project(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    marker = tmp_path / "local-torch-imported"
    shadow = f"open({str(marker)!r}, 'w').write('imported')\nraise SystemExit('a local torch')\n"
    (project / "torch.py").write_text(shadow)
    (project / "pkg" / "torch").mkdir()
    (project / "pkg" / "torch" / "__init__.py").write_text(shadow)
    monkeypatch.chdir(project)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([".", str(project / "pkg"), ""]))
    return marker


@pytest.mark.slow
def test_a_local_torch_is_not_imported_by_probes(tmp_path, monkeypatch):
    from devlint.verify import CPU, device_info

    marker = _shadowing_project(tmp_path, monkeypatch)
    results = run_probes([("where", "RESULT = torch.__file__")], CPU, timeout=30)
    assert results["where"]["status"] == "ok", results
    assert "site-packages" in results["where"]["result"] or "dist-packages" in results["where"]["result"]
    assert device_info()["torch"] == os.path.realpath(results["where"]["result"])
    assert not marker.exists()


def test_a_torch_inside_the_project_is_an_error(tmp_path, monkeypatch):
    """A torch the probe's interpreter would import from inside the project (not an installed one) stops
    verify with a clear error (exit 2)."""
    from devlint import verify

    (tmp_path / "torch").mkdir()
    monkeypatch.chdir(tmp_path)
    answer = json.dumps({"cuda": False, "mps": False, "torch": str(tmp_path / "torch" / "__init__.py")})
    monkeypatch.setattr(verify.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, answer + "\n", ""))
    with pytest.raises(verify.VerifyError, match="inside the project"):
        verify.device_info()
    monkeypatch.setattr(verify, "torch_available", lambda: True)
    result = CliRunner().invoke(main, ["verify", str(tmp_path)])
    assert result.exit_code == 2
    assert "torch would be imported from" in result.output


def test_pythonpath_inside_the_project_is_dropped(tmp_path, monkeypatch):
    from devlint.verify import NO_GPU, child_env

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([".", str(tmp_path / "src"), "", "/opt/site"]))
    assert child_env(NO_GPU)["PYTHONPATH"] == "/opt/site"
    monkeypatch.setenv("PYTHONPATH", "src")
    assert "PYTHONPATH" not in child_env(NO_GPU)


# --- a probe that ignores SIGALRM is killed with its process group ---------------------------------------------
def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for a reaper that never comes (PID 1 of a container) is not running
        return " Z " not in Path(f"/proc/{pid}/stat").read_text().split(")", 1)[1][:4]
    except OSError:
        return True


@pytest.mark.slow
def test_a_probe_ignoring_sigalrm_is_killed_with_its_children(tmp_path):
    import time

    pidfile = tmp_path / "child.pid"
    stubborn = ("import signal, subprocess, sys, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
                f"open({str(pidfile)!r}, 'w').write(str(child.pid))\ntime.sleep(300)")
    start = time.monotonic()
    results = run_probes([("stubborn", stubborn), ("after", "RESULT = 2 + 2")], Target("cpu", None), timeout=2)
    elapsed = time.monotonic() - start
    assert results["stubborn"] == {"status": "timeout", "result": None,
                                   "detail": "timed out after 2 s (its process was killed)"}
    assert results["after"]["result"] == 4  # the probes after it ran in a new process
    assert elapsed < 120  # two interpreters importing torch, 2 s + the grace; not the 300 s it asked for
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)


# --- progress on a terminal, never in pipes or machine output -------------------------------------------------
def _fake_probe_run(monkeypatch):
    from devlint import verify

    fake_machine(monkeypatch)
    monkeypatch.setattr(verify, "torch_available", lambda: True)
    monkeypatch.setattr(verify, "run_probes", lambda probes, target, timeout: {
        k: {"key": k, "status": "raised", "detail": "RuntimeError: Invalid device string: 'cuda:1,2'", "result": None}
        for k, _ in probes})


def test_no_progress_in_pipes_or_machine_output(monkeypatch):
    _fake_probe_run(monkeypatch)
    monkeypatch.delenv("DEVLINT_PROGRESS", raising=False)
    target = str(FIX / "DEV003" / "invalid.py")
    for fmt in ("text", "json"):
        result = CliRunner().invoke(main, ["verify", "--output-format", fmt, target])
        assert result.exit_code == 1, result.output
        assert "probes on" not in result.output and "\r" not in result.output
    monkeypatch.setenv("DEVLINT_PROGRESS", "1")  # forced: shown on stderr for text, still never for JSON
    text = CliRunner().invoke(main, ["verify", target])
    # 19 probes per target: the 10 findings' distinct probes, flagged and fixed; each line erased when done
    assert text.stderr == "".join(f"\r\x1b[Kdevlint verify: probes on {t}: 0/19\r\x1b[Kdevlint verify: probes on {t}: "
                                  f"19/19\r\x1b[K" for t in ("cpu", "no-gpu"))
    assert "probes on" not in text.stdout
    data = CliRunner().invoke(main, ["verify", "--output-format", "json", target])
    assert data.stderr == "" and json.loads(data.stdout)


def test_progress_shows_on_a_terminal():
    import pty

    code = ("from devlint.progress import Progress\nimport sys\n"
            "with Progress('devlint verify: probes on cpu', 2, interval=0) as p:\n    p.advance(); p.advance()\n"
            "print('report')\n")
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("DEVLINT_PROGRESS", "TERM")}
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closed
            break
        if not chunk:
            break
        out += chunk
    proc.wait()
    os.close(master)
    text = out.decode()
    assert "\r\x1b[Kdevlint verify: probes on cpu: 1/2" in text
    assert "\r\x1b[Kdevlint verify: probes on cpu: 2/2\r\x1b[Kreport" in text
    piped = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert piped.stdout == "report\n" and piped.stderr == ""


# --- --run: a copy of the script's project ----------------------------------------------------------------------
def _project(tmp_path):
    root = tmp_path / "proj"
    (root / "scripts").mkdir(parents=True)
    (root / ".venv").mkdir()
    (root / ".venv" / "big.bin").write_text("x")
    (root / "pyproject.toml").write_text("[tool.devlint]\n")
    (root / "scripts" / "settings.py").write_text("SIZE = 3\n")
    (root / "scripts" / "train.py").write_text(
        "import torch\nfrom settings import SIZE\nx = torch.zeros(SIZE).cuda()\nprint(x.sum())\n")
    return root


def test_run_copies_the_configured_project(tmp_path):
    from devlint.verify import copy_project, project_root

    root = _project(tmp_path)
    script = root / "scripts" / "train.py"
    assert project_root(str(script)) == str(root)
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "a.py").write_text("")
    assert project_root(str(tmp_path / "loose" / "a.py")) == str(tmp_path / "loose")  # no config: its folder
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    copy = Path(copy_project(str(script), str(scratch)))
    assert copy == scratch / "proj" / "scripts" / "train.py"
    assert (copy.parent / "settings.py").read_text() == "SIZE = 3\n"
    assert (scratch / "proj" / "pyproject.toml").exists()
    assert not (scratch / "proj" / ".venv").exists()  # virtualenvs and caches are not copied


@pytest.mark.slow
def test_run_imports_the_scripts_sibling_module(tmp_path, verify_targets, monkeypatch):
    no_gpu = [t for t in verify_targets if t.name == "no-gpu"]
    monkeypatch.setattr("devlint.verify.detect_targets", lambda timeout=120: list(no_gpu))
    root = _project(tmp_path)
    script = root / "scripts" / "train.py"
    result = CliRunner().invoke(main, ["verify", "--run", str(script), "--output-format", "json", "--timeout", "120"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.output)
    assert run["before"]["error"] in NO_CUDA_ERRORS  # it got past `from settings import SIZE`
    assert run["after"] == {"returncode": 0, "error": ""}
    assert run["fixes_applied"] == 1
    assert "cuda()" in script.read_text()  # the original is untouched



def test_run_never_copies_the_copy(tmp_path):
    """A script whose folder holds the scratch directory (a script in /tmp) is copied without it."""
    from devlint.verify import copy_project

    (tmp_path / "a.py").write_text("print(1)\n")
    scratch = tmp_path / "devlint-run-x"
    scratch.mkdir()
    copy = Path(copy_project(str(tmp_path / "a.py"), str(scratch)))
    assert copy == scratch / tmp_path.name / "a.py"
    assert sorted(p.name for p in copy.parent.iterdir()) == ["a.py"]
