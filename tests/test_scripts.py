"""Colab-style scripts: they crash on a CPU-only machine; after `devlint --fix --unsafe-fixes` they run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixturelib import FIXTURES

torch = pytest.importorskip("torch")
SCRIPTS = sorted(p for p in (FIXTURES / "scripts").glob("*.py") if not p.name.endswith((".fixed.py", ".safe.py")))
NO_CUDA_ERRORS = ("Torch not compiled with CUDA enabled", "No CUDA GPUs")


@pytest.mark.slow
@pytest.mark.xdist_group("fixture-runs")  # beside test_fix_oracle.py's readers of fixture_runs
@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_script_runs_after_fix(script, tmp_path, fixture_runs):
    target = tmp_path / script.name
    shutil.copy(script, target)
    fix = subprocess.run(
        [sys.executable, "-m", "devlint", "--fix", "--unsafe-fixes", str(target)],
        capture_output=True, text=True, timeout=120,
    )
    assert fix.returncode == 0, fix.stdout + fix.stderr  # nothing left to report
    fixed = target.read_text()
    assert fixed == (FIXTURES / "scripts" / (script.stem + ".fixed.py")).read_text()

    # The script as written and as fixed, each run as __main__ on this machine in a child of one process
    # that imported torch once (conftest.fixture_runs runs every runnable fixture so, once per session):
    # the text run after the fix is the text the command above wrote.
    run = fixture_runs[f"scripts/{script.name}"]
    before, after = run["before"], run["after"]
    assert Path(before["script"]).read_text() == script.read_text()
    assert Path(after["script"]).read_text() == fixed
    if not torch.cuda.is_available():
        assert before["rc"] != 0
        assert any(error in before["stderr"] for error in NO_CUDA_ERRORS), before["stderr"][-3000:]
    assert after["rc"] == 0, after["stderr"][-3000:]
