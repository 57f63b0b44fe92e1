"""Linting never needs torch: `import devlint` and `devlint PATH` work where torch cannot be imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from fixturelib import BLOCK_TORCH

ROOT = Path(__file__).resolve().parent.parent



def test_lint_and_fix_without_torch(tmp_path):
    target = tmp_path / "train.py"
    target.write_text((ROOT / "fixtures" / "demo" / "train.py").read_text())
    script = BLOCK_TORCH + textwrap.dedent(f'''
        import devlint
        from devlint.cli import main
        try:
            main([{str(target)!r}, "--fix", "--unsafe-fixes", "-q"])
        except SystemExit as exc:
            assert "torch" not in sys.modules, "linting imported torch"
            print("exit", exc.code)
    ''')
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "exit 1"  # DEV003 "cuda:1,2" has no fix: it remains
    assert "DEV003" in result.stdout
    assert "x = torch.randn(4, 10, device=device)" in target.read_text()


def test_torch_is_only_an_optional_dependency():
    import sys as _sys
    if _sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(dep.split()[0].startswith("torch") for dep in project["dependencies"])
    assert any(dep.startswith("torch") for dep in project["optional-dependencies"]["verify"])
