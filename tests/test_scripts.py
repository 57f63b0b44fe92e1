"""Colab-style scripts: they crash on a CPU-only machine; after `devlint --fix --unsafe-fixes` they run."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from fixturelib import FIXTURES

torch = pytest.importorskip("torch")
SCRIPTS = sorted(p for p in (FIXTURES / "scripts").glob("*.py") if not p.name.endswith((".fixed.py", ".safe.py")))


def _run(path, cwd):
    return subprocess.run([sys.executable, str(path)], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_script_runs_after_fix(script, tmp_path):
    target = tmp_path / script.name
    shutil.copy(script, target)
    if not torch.cuda.is_available():
        before = _run(target, tmp_path)
        assert before.returncode != 0
        assert "Torch not compiled with CUDA enabled" in before.stderr or "No CUDA GPUs" in before.stderr

    fix = subprocess.run(
        [sys.executable, "-m", "devlint", "--fix", "--unsafe-fixes", str(target)],
        capture_output=True, text=True, timeout=120,
    )
    assert fix.returncode == 0, fix.stdout + fix.stderr  # nothing left to report
    after = _run(target, tmp_path)
    assert after.returncode == 0, after.stderr
    assert target.read_text() == (FIXTURES / "scripts" / (script.stem + ".fixed.py")).read_text()
