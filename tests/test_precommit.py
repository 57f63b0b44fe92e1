"""The pre-commit hook, run for real with `pre-commit run` in a scratch git repository whose
`.pre-commit-config.yaml` names this checkout (committed to a scratch repository) at its commit, as a user's
config names devlint's repository at a tag. pre-commit installs the hook's environment (a virtualenv,
`pip install .`) once into the module's PRE_COMMIT_HOME and every run here reuses it; `pre-commit try-repo`
would build a fresh one per call."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# slow: runs pip and pre-commit; one xdist group: the tests share the hook repository and its environment
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("pre-commit")]


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """This checkout's working tree as a committed git repository (pre-commit clones committed files)."""
    dst = tmp_path_factory.mktemp("hook-repo") / "devlint"
    shutil.copytree(ROOT, dst, ignore=shutil.ignore_patterns(
        ".git", ".venv", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "build", "dist",
        ".devlint_cache", ".ci-venv*", ".mypy_cache", ".ruff_cache",
    ))
    _git(dst, "init", "-q")
    _git(dst, "add", ".")
    _git(dst, "commit", "-q", "-m", "snapshot")
    return dst


@pytest.fixture(scope="module")
def config(hook_repo):
    rev = _git(hook_repo, "rev-parse", "HEAD").stdout.strip()
    return f"repos:\n-   repo: {hook_repo}\n    rev: {rev}\n    hooks:\n    -   id: devlint\n"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def repo(tmp_path, config):
    """A scratch repository with the config staged (pre-commit refuses to run on an unstaged config)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".pre-commit-config.yaml").write_text(config)
    _git(repo, "add", ".pre-commit-config.yaml")
    return repo


def _pre_commit(cwd, home, *args):
    exe = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    env = {**os.environ, "PRE_COMMIT_HOME": str(home)}
    return subprocess.run([exe, "run", "devlint", *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=600)


def test_hook_reports_findings_and_passes_on_clean_files(repo, home):
    (repo / "train.py").write_text('import torch\nx = torch.zeros(2).cuda()\n')
    (repo / "notes.md").write_text("device = 'cuda'\n")
    _git(repo, "add", ".")
    result = _pre_commit(repo, home, "--all-files")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "train.py:2:5: DEV001 .cuda() crashes without a GPU" in result.stdout
    assert "notes.md" not in result.stdout

    (repo / "train.py").write_text('import torch\nx = torch.zeros(2)\n')
    _git(repo, "add", ".")
    result = _pre_commit(repo, home, "--all-files")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout


def test_hook_checks_notebooks(repo, home):
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# t"]},
                    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": ["!nvidia-smi\n", "import torch\n", "x = torch.zeros(2).cuda()"]}],
          "metadata": {"accelerator": "GPU"}, "nbformat": 4, "nbformat_minor": 5}
    (repo / "train.ipynb").write_text(json.dumps(nb, indent=1) + "\n")
    _git(repo, "add", ".")
    result = _pre_commit(repo, home)  # the staged files: the notebook is one
    assert result.returncode == 1, result.stdout + result.stderr
    assert "train.ipynb:cell 2:3:5: DEV001 .cuda() crashes without a GPU" in result.stdout

    nb["cells"][1]["source"][2] = "x = torch.zeros(2)"
    (repo / "train.ipynb").write_text(json.dumps(nb, indent=1) + "\n")
    _git(repo, "add", ".")
    result = _pre_commit(repo, home)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout


def test_hook_with_no_python_files_staged(repo, home):
    (repo / "README.md").write_text("hello\n")
    _git(repo, "add", ".")
    result = _pre_commit(repo, home)  # only staged files: none of them Python
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(no files to check)Skipped" in result.stdout


# --- the README's snippet, as written, and `pre-commit try-repo` -------------------------------------------------
NOTEBOOK = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                       "source": ["import torch\n", "x = torch.zeros(2).cuda()"]}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _project(repo):
    """A notebook with a finding, a clean module, and a file with a finding under `extend-exclude`."""
    (repo / "pyproject.toml").write_text('[tool.devlint]\nextend-exclude = ["legacy/"]\n')
    (repo / "train.ipynb").write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
    (repo / "ok.py").write_text("import torch\nx = torch.zeros(2)\n")
    (repo / "legacy").mkdir()
    (repo / "legacy" / "old.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    _git(repo, "add", ".")


def _one_report(result):
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "train.ipynb:cell 1:2:5: DEV001 .cuda() crashes without a GPU" in out
    assert "legacy" not in out  # named by pre-commit, excluded by --force-exclude
    assert out.count("Found 1 error.") == 1  # one devlint process, one summary


def test_readme_snippet_works_as_written(repo, home, hook_repo):
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## pre-commit\n\n```yaml\n(.*?)```", readme, re.S).group(1)
    rev = _git(hook_repo, "rev-parse", "HEAD").stdout.strip()
    config = re.sub(r"(- repo: )\S+", lambda m: m.group(1) + str(hook_repo), block, count=1)
    config = re.sub(r"(rev: )\S+", lambda m: m.group(1) + rev, config, count=1)
    # only the two lines a user adapts differ from the README's block
    assert [a for a, b in zip(block.splitlines(), config.splitlines(), strict=True) if a != b] == [
        "  - repo: https://github.com/OWNER/devlint   # where you host devlint", "    rev: v0.2.0"]
    (repo / ".pre-commit-config.yaml").write_text(config)
    _project(repo)
    _one_report(_pre_commit(repo, home, "--all-files"))


def test_try_repo(repo, home, hook_repo):
    _project(repo)
    exe = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    result = subprocess.run([exe, "try-repo", str(hook_repo), "devlint", "--all-files"], cwd=repo,
                            capture_output=True, text=True, env={**os.environ, "PRE_COMMIT_HOME": str(home)},
                            timeout=600)
    _one_report(result)
