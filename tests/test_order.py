"""A file's findings do not depend on which files its worker linted before it (per-worker caches of guards,
contexts and caller searches are keyed by what they depend on)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from devlint import runner
from devlint.config import Config
from devlint.runner import Options

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "projects"


def _findings_in_order(root: Path, files: list[str], order: list[str]) -> dict[str, list[tuple[str, int, int]]]:
    """Every file's findings, linted in ``order`` by one worker whose project is ``files``."""
    runner._init_worker(files)
    options = Options(select=set(runner.all_rules()), jobs=1)
    config = Config(root=root)
    found = {}
    for path in order:
        result = runner.process_file(path, config, options)
        found[os.path.relpath(path, root)] = sorted((f.code, f.start.row, f.start.column) for f in result.findings)
    return found


@pytest.mark.parametrize("project", sorted(p.name for p in PROJECTS.iterdir() if p.is_dir()))
def test_findings_do_not_depend_on_the_order_files_are_linted(project):
    root = PROJECTS / project
    files = sorted(str(p) for p in root.rglob("*.py") if not p.name.endswith((".fixed.py", ".safe.py")))
    forward = _findings_in_order(root, files, files)
    assert _findings_in_order(root, files, files[::-1]) == forward
    assert _findings_in_order(root, files, files[1::2] + files[::2]) == forward
