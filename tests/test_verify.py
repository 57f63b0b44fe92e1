"""`devlint verify`: findings proven by running them (CPU here; the CUDA path is marked `cuda`).

Every test here that runs probes or scripts starts fresh interpreters that import torch: they are marked
`slow`. The CLI runs ask for the machine's targets once per session (conftest.targets_detected_once)."""

from __future__ import annotations

import json
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
    assert {r["code"] for r in rows} == {"DEV001", "DEV002", "DEV003", "DEV004", "DEV005", "DEV006", "DEV008"}
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
    # a CUDA tensor certainly initialises CUDA: hiding every GPU afterwards has no effect
    assert by_init["torch.zeros(1, device='cuda')"]["verdict"] == "confirmed", by_init
    assert "stayed" in by_init["torch.zeros(1, device='cuda')"]["detail"]
    gpu = d[("numpy_bad.py", 20, "DEV002")]
    assert gpu["targets"]["cuda"]["verdict"] == "confirmed"
    assert "can't convert cuda:0 device type tensor to numpy" in gpu["targets"]["cuda"]["detail"]
    assert gpu["fixed"]["cuda"]["verdict"] == "clean"
    hard = d[("aliases.py", 7, "DEV001")]  # layer.to("cuda")
    assert hard["targets"]["no-gpu"]["verdict"] == "confirmed"
    assert hard["targets"]["cuda"]["verdict"] == "not reproduced"
