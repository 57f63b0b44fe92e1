"""Progress of a lint on standard error: only when a person is watching (or DEVLINT_PROGRESS=1 forces it),
never in pipes or machine output, and erased before the report."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from devlint.cli import main

BUGGY = "import torch\nx = torch.ones(2).cuda()\n"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(BUGGY)
    return tmp_path


def run(*args, env=None):
    return CliRunner().invoke(main, ["--no-cache", "-j", "1", *args, "."], env=env or {})


def test_no_progress_in_a_pipe(tree):
    result = run(env={"DEVLINT_PROGRESS": ""})
    assert result.exit_code == 1
    assert "files" not in result.stderr and "\x1b[K" not in result.stdout + result.stderr


def test_forced_progress_counts_the_files_and_is_erased(tree):
    result = run("--output-format", "concise", env={"DEVLINT_PROGRESS": "1"})
    assert result.exit_code == 1
    assert result.stderr.startswith("\r\x1b[Kdevlint: 3 files: 0/3")
    assert "devlint: 3 files: 3/3" in result.stderr and result.stderr.endswith("\r\x1b[K")
    assert "\x1b[K" not in result.stdout  # the report itself is untouched


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_never_with_machine_output(tree, fmt):
    result = run("--output-format", fmt, env={"DEVLINT_PROGRESS": "1"})
    assert result.exit_code == 1
    assert "\x1b[K" not in result.stdout + result.stderr
