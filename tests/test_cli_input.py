"""The command line's input side, through click's runner (and pre-commit for real): help and mistyped
commands, standard input, --force-exclude, --add-noqa, --show-fixes, --statistics and baselines."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import main

BUGGY = textwrap.dedent('''\
    import torch

    device = "cuda"
    x = torch.ones(2, requires_grad=True)
    print(x.numpy())
    y = torch.device("CUDA")
''')
DEV001 = '3:10: DEV001 Hard-coded device "cuda"'
DEV002 = "5:7: DEV002 .numpy() on a tensor that may require grad"
DEV003 = '6:18: DEV003 Invalid device string "CUDA"'


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(BUGGY)
    return tmp_path


def invoke(runner, *args, input=None):
    return runner.invoke(main, list(args), catch_exceptions=False, input=input)


def codes(output):
    return [line.split(": ")[1].split()[0] for line in output.splitlines() if ": DEV" in line]


# --- help and mistyped commands ------------------------------------------------------------------
def test_top_level_help_shows_the_lint_options_and_the_commands(runner):
    result = invoke(runner, "--help")
    assert result.exit_code == 0
    out = result.output
    for option in ("--fix", "--select", "--output-format", "--diff", "--stdin-filename", "--force-exclude",
                   "--add-noqa", "--baseline", "--statistics"):
        assert f"  {option}" in out, option
    assert out.splitlines()[0].endswith(" [OPTIONS] [PATH]... | COMMAND [ARGS]...")
    assert "Lint options (devlint [OPTIONS] [PATH]..., the same as devlint check)" in out
    commands = out[out.index("Commands:"):]
    for command in ("check", "rule", "rules", "verify"):
        assert f"\n  {command} " in commands
    assert invoke(runner, "-h").output == out


def test_a_mistyped_command_is_a_usage_error(runner, project):
    result = invoke(runner, "chekc", "pkg")
    assert result.exit_code == 2
    assert "Error: No such file or command: 'chekc'. Did you mean 'check'?" in result.output
    assert "All checks passed" not in result.output
    result = invoke(runner, "verfy")
    assert result.exit_code == 2 and "Did you mean 'verify'?" in result.output
    # an existing file or folder of that name is linted
    (project / "rules").mkdir()
    (project / "rules" / "bad.py").write_text(BUGGY)
    assert invoke(runner, "pkg").exit_code == 1
    (project / "chekc").write_text(BUGGY)
    result = invoke(runner, "chekc")
    assert result.exit_code == 1 and f"chekc:{DEV001}" in result.output


def test_a_missing_path_as_first_argument_is_a_usage_error_after_check_an_E902(runner, project):
    result = invoke(runner, "nosuch.py")
    assert result.exit_code == 2
    assert "Error: No such file or command: 'nosuch.py'." in result.output
    # `devlint check PATH` (and any later path) reports it as ruff check does: E902, exit 1
    result = invoke(runner, "check", "-q", "nosuch.py")
    assert result.exit_code == 1
    assert result.output == "nosuch.py:1:1: E902 cannot read file: No such file or directory\n"
    result = invoke(runner, "pkg", "nosuch.py")
    assert result.exit_code == 1 and "nosuch.py:1:1: E902" in result.output


def test_verify_of_a_missing_path_is_exit_2(runner, project):
    result = invoke(runner, "verify", "nosuch.py")
    assert result.exit_code == 2
    assert result.output == "devlint: error: no such file or directory: nosuch.py\n"


# --- standard input -----------------------------------------------------------------------------
def test_stdin_is_linted_under_the_given_name_with_its_config(runner, project):
    (project / "pyproject.toml").write_text('[tool.devlint]\nper-file-ignores = { "pkg/train.py" = ["DEV003"] }\n')
    result = invoke(runner, "-", "--stdin-filename", "pkg/train.py", input=BUGGY)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"pkg/train.py:{DEV001}")
    assert lines[1].startswith(f"pkg/train.py:{DEV002}")
    assert "DEV003" not in result.stdout  # per-file-ignores of that name apply
    assert lines[2] == "Found 2 errors."
    # `check -`, from a sub-folder: the config is found from the name's folder, not only the cwd
    os.chdir(project / "pkg")
    result = invoke(runner, "check", "-", "--stdin-filename", "train.py", input=BUGGY)
    assert codes(result.stdout) == ["DEV001", "DEV002"]
    result = invoke(runner, "check", "-", "--stdin-filename", "other.py", input=BUGGY)
    assert codes(result.stdout) == ["DEV001", "DEV002", "DEV003"]
    # no name: "-"; a clean input passes
    result = invoke(runner, "-", input="import torch\n")
    assert result.exit_code == 0 and result.stdout == "All checks passed!\n"
    assert invoke(runner, "-", "pkg", input="").exit_code == 2


def test_stdin_fix_prints_only_the_code_and_the_report_on_stderr(runner, project):
    result = invoke(runner, "-", "--fix", "--stdin-filename", "pkg/train.py", input=BUGGY)
    fixed = BUGGY.replace("x.numpy()", "x.detach().numpy()").replace('"CUDA"', '"cuda"')
    assert result.stdout == fixed
    assert f"pkg/train.py:{DEV001}" in result.stderr
    assert "Found 4 errors (2 fixed, 2 remaining)." in result.stderr
    assert result.exit_code == 1
    assert (project / "pkg" / "bad.py").read_text() == BUGGY  # nothing written anywhere
    assert not (project / "pkg" / "train.py").exists()
    # nothing to fix: the input comes back as it was, byte for byte (CRLF too)
    clean = "import torch\r\nx = 1\r\n"
    result = invoke(runner, "-", "--fix", "--stdin-filename", "t.py", input=clean.encode())
    assert result.stdout_bytes == clean.encode() and result.exit_code == 0
    # --diff: the diff on stdout, named after the file
    result = invoke(runner, "-", "--diff", "--stdin-filename", "pkg/train.py", input=BUGGY)
    assert result.stdout.startswith("--- pkg/train.py\n+++ pkg/train.py\n")
    assert "-print(x.numpy())\n" in result.stdout and "+print(x.detach().numpy())\n" in result.stdout
    assert result.exit_code == 1


def test_stdin_add_noqa_prints_the_commented_code(runner, project):
    result = invoke(runner, "-", "--add-noqa", "--stdin-filename", "t.py", input='import torch\ndevice = "cuda"\n')
    assert result.stdout == 'import torch\ndevice = "cuda"  # noqa: DEV001\n'
    assert result.stderr == "Added 1 noqa directive.\n"
    assert result.exit_code == 0


def test_stdin_notebook(runner, project):
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# t"]},
                    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": ["import torch\n", "x = torch.ones(2, requires_grad=True)\n", "print(x.numpy())"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    data = json.dumps(nb, indent=1) + "\n"
    result = invoke(runner, "-", "--stdin-filename", "nb.ipynb", input=data)
    assert result.stdout.startswith("nb.ipynb:cell 2:3:7: DEV002")
    result = invoke(runner, "-", "--fix", "--stdin-filename", "nb.ipynb", input=data)
    assert json.loads(result.stdout)["cells"][1]["source"][2] == "print(x.detach().numpy())"
    assert result.exit_code == 0


def test_stdin_force_exclude(runner, project):
    (project / "pyproject.toml").write_text('[tool.devlint]\nextend-exclude = ["generated"]\n')
    result = invoke(runner, "-", "--stdin-filename", "generated/x.py", input=BUGGY)
    assert result.exit_code == 1  # named: linted, as ruff does without --force-exclude
    result = invoke(runner, "-", "--force-exclude", "--stdin-filename", "generated/x.py", input=BUGGY)
    assert result.exit_code == 0 and result.stdout == "All checks passed!\n"
    result = invoke(runner, "-", "--force-exclude", "--fix", "--stdin-filename", "generated/x.py", input=BUGGY)
    assert result.stdout == BUGGY  # excluded: given back unchanged


# --- --force-exclude ------------------------------------------------------------------------------
def test_force_exclude_applies_the_exclusions_to_named_files(runner, project):
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("*_gen.py\n")
    (project / "pyproject.toml").write_text('[tool.devlint]\nextend-exclude = ["generated", "pkg/skip.py"]\n')
    for rel in ("generated/out.py", "generated/deep/more.py", "pkg/skip.py", "pkg/x_gen.py", "pkg/generated.py"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(BUGGY)
    named = ["generated/out.py", "generated/deep/more.py", "pkg/skip.py", "pkg/x_gen.py", "pkg/bad.py",
             "pkg/generated.py", "generated"]
    result = invoke(runner, "-q", *named)
    files = {line.split(":")[0] for line in result.output.splitlines()}
    assert files == {os.path.normpath(p) for p in named[:-1]}  # named: linted
    result = invoke(runner, "-q", "--force-exclude", *named)
    files = {line.split(":")[0] for line in result.output.splitlines()}
    assert files == {os.path.join("pkg", "bad.py"), os.path.join("pkg", "generated.py")}
    # the same files as a walk of the tree
    walked = {line.split(":")[0] for line in invoke(runner, "-q", ".").output.splitlines()}
    assert walked == files
    result = invoke(runner, "--force-exclude", "pkg/skip.py")
    assert result.exit_code == 0 and result.output == "All checks passed!\n"


def test_force_exclude_default_excludes_and_paths_outside_the_root(runner, project, tmp_path_factory):
    (project / "pyproject.toml").write_text("[tool.devlint]\n")
    (project / ".venv" / "lib").mkdir(parents=True)
    (project / ".venv" / "lib" / "m.py").write_text(BUGGY)
    assert invoke(runner, "-q", ".venv/lib/m.py").exit_code == 1
    assert invoke(runner, "-q", "--force-exclude", ".venv/lib/m.py").exit_code == 0
    # a project inside a folder named like a default exclude is not excluded by its parent's name
    outer = tmp_path_factory.mktemp("o") / "venv" / "proj"
    outer.mkdir(parents=True)
    (outer / "pyproject.toml").write_text("[tool.devlint]\n")
    (outer / "a.py").write_text(BUGGY)
    assert invoke(runner, "-q", "--force-exclude", str(outer / "a.py")).exit_code == 1
    assert invoke(runner, "-q", "--force-exclude", str(outer)).exit_code == 1


# --- --add-noqa ---------------------------------------------------------------------------------
NOQA_SOURCE = textwrap.dedent('''\
    import torch

    device = "cuda"  # the default
    x = torch.ones(2, requires_grad=True)
    print(x.numpy())  # noqa: DEV003
    y = torch.device("CUDA"); print(x.numpy())
    z = torch.device(
        "CUDA")
    w = (1, torch.device("""CUDA
    """))
''')


def test_add_noqa_writes_merges_and_a_rerun_reports_nothing(runner, project):
    path = project / "pkg" / "bad.py"
    path.write_text(NOQA_SOURCE)
    before = invoke(runner, "-q", "pkg")
    assert codes(before.output) == ["DEV001", "DEV002", "DEV003", "DEV002", "DEV003", "DEV003"]
    result = invoke(runner, "--add-noqa", "pkg")
    assert result.exit_code == 0
    assert result.stderr == "Added 5 noqa directives.\n"
    assert result.stdout == ""
    assert path.read_text() == textwrap.dedent('''\
        import torch

        device = "cuda"  # the default  # noqa: DEV001
        x = torch.ones(2, requires_grad=True)
        print(x.numpy())  # noqa: DEV002, DEV003
        y = torch.device("CUDA"); print(x.numpy())  # noqa: DEV002, DEV003
        z = torch.device(
            "CUDA")  # noqa: DEV003
        w = (1, torch.device("""CUDA
        """))  # noqa: DEV003
    ''')
    again = invoke(runner, "pkg")
    assert again.exit_code == 0 and again.output == "All checks passed!\n"
    rerun = invoke(runner, "--add-noqa", "pkg")
    assert rerun.exit_code == 0 and rerun.output == ""
    assert path.read_text().count("noqa") == 5
    wrong = invoke(runner, "--add-noqa", "--fix", "pkg")
    assert wrong.exit_code == 2 and "--add-noqa cannot be combined with --fix" in wrong.output


def test_add_noqa_keeps_crlf_and_a_line_continued_by_a_backslash(runner, project):
    path = project / "pkg" / "bad.py"
    path.write_bytes(b'import torch\r\ny = torch.device("CUDA") + \\\r\n    0\r\n')
    result = invoke(runner, "--add-noqa", "pkg")
    # the finding spans one line only and that line is continued: a comment there would not parse, so the
    # comment goes on no line and the finding stays
    assert result.exit_code == 0 and result.output == ""
    assert b"noqa" not in path.read_bytes()
    assert codes(invoke(runner, "pkg").output) == ["DEV003"]
    path.write_bytes(b'import torch\r\ndevice = "cuda"\r\n')
    invoke(runner, "--add-noqa", "pkg")
    assert path.read_bytes() == b'import torch\r\ndevice = "cuda"  # noqa: DEV001\r\n'


def test_add_noqa_in_a_notebook_goes_into_the_cell(runner, project):
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": ["import torch\n", "x = torch.ones(2, requires_grad=True)"]},
                    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": ["!nvidia-smi\n", "print(x.numpy())  # noqa: DEV003\n", "y = torch.zeros(2).cuda()"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = project / "nb.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n")
    result = invoke(runner, "--add-noqa", "nb.ipynb")
    assert result.stderr == "Added 2 noqa directives.\n"
    cells = json.loads(path.read_text())["cells"]
    assert cells[0]["source"] == nb["cells"][0]["source"]
    assert cells[1]["source"] == ["!nvidia-smi\n", "print(x.numpy())  # noqa: DEV002, DEV003\n",
                                  "y = torch.zeros(2).cuda()  # noqa: DEV001"]
    assert invoke(runner, "nb.ipynb").output == "All checks passed!\n"


# --- --show-fixes and --statistics ---------------------------------------------------------------
def test_show_fixes_lists_the_fixes_per_file(runner, project):
    (project / "pkg" / "two.py").write_text(BUGGY)
    result = invoke(runner, "--show-fixes", "pkg")
    assert result.exit_code == 1
    assert "\nFixable with `--fix` (4 errors):\n- pkg/bad.py:\n    1 \u00d7 DEV002 (numpy-needs-detach-cpu)\n" \
           "    1 \u00d7 DEV003 (invalid-device-string)\n- pkg/two.py:\n" in result.output.replace(os.sep, "/")
    result = invoke(runner, "--fix", "--show-fixes", "pkg")
    out = result.output.replace(os.sep, "/")
    assert "\nFixed 4 errors:\n- pkg/bad.py:\n    1 \u00d7 DEV002 (numpy-needs-detach-cpu)\n" \
           "    1 \u00d7 DEV003 (invalid-device-string)\n- pkg/two.py:\n" in out
    assert "(4 fixed, 4 remaining)" in out
    result = invoke(runner, "--fix", "--show-fixes", "pkg")
    assert "Fixed" not in result.output.split("Found")[0]  # nothing fixed: nothing listed


def test_statistics_as_ruff_prints_them(runner, project):
    (project / "pkg" / "two.py").write_text(BUGGY)
    result = invoke(runner, "--statistics", "pkg")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[:3] == [
        "2\tDEV001\t[ ] hard-coded-cuda",
        "2\tDEV002\t[*] numpy-needs-detach-cpu",
        "2\tDEV003\t[*] invalid-device-string",
    ]
    assert lines[3] == "Found 6 errors."
    assert invoke(runner, "-q", "--statistics", "pkg").output.splitlines() == lines[:3]
    result = invoke(runner, "--statistics", "--unsafe-fixes", "pkg")
    assert result.output.splitlines()[0] == "2\tDEV001\t[*] hard-coded-cuda"
    result = invoke(runner, "--statistics", "--output-format", "json", "pkg")
    assert json.loads(result.output) == [
        {"code": "DEV001", "name": "hard-coded-cuda", "count": 2, "fixable": False, "fixable_count": 0},
        {"code": "DEV002", "name": "numpy-needs-detach-cpu", "count": 2, "fixable": True, "fixable_count": 2},
        {"code": "DEV003", "name": "invalid-device-string", "count": 2, "fixable": True, "fixable_count": 2},
    ]


# --- baseline -------------------------------------------------------------------------------------
def test_baseline_hides_recorded_findings_across_line_shifts(runner, project):
    path = project / "pkg" / "bad.py"
    result = invoke(runner, "--baseline", "base.json", "--update-baseline", "pkg")
    assert result.exit_code == 0
    assert result.stderr == "Wrote 3 findings to the baseline base.json.\n"
    data = json.loads((project / "base.json").read_text())
    assert data == {"version": 1, "findings": [
        {"code": "DEV001", "path": "pkg/bad.py", "line": 'device = "cuda"', "count": 1},
        {"code": "DEV002", "path": "pkg/bad.py", "line": "print(x.numpy())", "count": 1},
        {"code": "DEV003", "path": "pkg/bad.py", "line": 'y = torch.device("CUDA")', "count": 1},
    ]}
    result = invoke(runner, "--baseline", "base.json", "pkg")
    assert result.exit_code == 0 and result.output == "All checks passed!\n"

    # lines added above, and a change of indentation: still hidden
    path.write_text("import os\n\n\n" + BUGGY.replace('device = "cuda"', 'if True:\n    device  =  "cuda"'))
    result = invoke(runner, "--baseline", "base.json", "pkg")
    assert result.exit_code == 0 and result.output == "All checks passed!\n"
    # the same finding once more, on another line: one is new (the count is 1)
    path.write_text(BUGGY + "print(x.numpy())\n")
    result = invoke(runner, "--baseline", "base.json", "pkg")
    assert result.exit_code == 1
    assert codes(result.output) == ["DEV002"]
    assert result.output.startswith(os.path.join("pkg", "bad.py") + ":7:7: DEV002")
    # an edited line is a new finding, and the old entry is no longer found
    path.write_text(BUGGY.replace("print(x.numpy())", "print(x.numpy(), 1)"))
    result = invoke(runner, "--baseline", "base.json", "pkg")
    assert result.exit_code == 1 and codes(result.output) == ["DEV002"]
    assert result.output.splitlines()[-1] == "1 baseline entry no longer found: run --update-baseline"
    # a fixed finding: reported in the summary, not a failure
    path.write_text(BUGGY.replace("print(x.numpy())", "pass"))
    result = invoke(runner, "--baseline", "base.json", "pkg")
    assert result.exit_code == 0
    assert result.output == "All checks passed!\n1 baseline entry no longer found: run --update-baseline\n"


def test_baseline_file_is_stable_and_keeps_files_not_linted(runner, project):
    (project / "pyproject.toml").write_text("[tool.devlint]\n")
    (project / "pkg" / "two.py").write_text(BUGGY + BUGGY.split("\n", 2)[2])  # each finding twice
    assert invoke(runner, "--baseline", "b.json", "--update-baseline", "pkg").exit_code == 0
    first = (project / "b.json").read_bytes()
    entries = json.loads(first)["findings"]
    assert [e["count"] for e in entries if e["path"] == "pkg/two.py"] == [2, 2, 2]
    assert invoke(runner, "--baseline", "b.json", "--update-baseline", "pkg").exit_code == 0
    assert (project / "b.json").read_bytes() == first
    # an update from one file (pre-commit) keeps the other files' entries
    assert invoke(runner, "--baseline", "b.json", "--update-baseline", "pkg/two.py").exit_code == 0
    assert (project / "b.json").read_bytes() == first
    os.chdir(project / "pkg")  # paths are relative to the project root, not the cwd
    assert invoke(runner, "--baseline", "../b.json", "--update-baseline", ".").exit_code == 0
    assert (project / "b.json").read_bytes() == first


def test_baseline_from_the_config(runner, project):
    (project / "pyproject.toml").write_text('[tool.devlint]\nbaseline = "devlint-baseline.json"\n')
    result = invoke(runner, "pkg")
    assert result.exit_code == 2
    assert "devlint-baseline.json: no such file (write it with --update-baseline)" in result.output
    assert invoke(runner, "--update-baseline", "pkg").exit_code == 0
    assert (project / "devlint-baseline.json").is_file()
    os.chdir(project / "pkg")
    assert invoke(runner, ".").output == "All checks passed!\n"
    (project / "pkg" / "new.py").write_text('import torch\ndevice = "cuda"\n')
    result = invoke(runner, ".")
    assert result.exit_code == 1 and result.output.startswith("new.py:2:10: DEV001")


def test_bad_baseline_usage_is_exit_2(runner, project):
    result = invoke(runner, "--update-baseline", "pkg")
    assert result.exit_code == 2 and "--update-baseline needs --baseline FILE" in result.output
    (project / "b.json").write_text('{"version": 99, "findings": []}')
    result = invoke(runner, "--baseline", "b.json", "pkg")
    assert result.exit_code == 2 and "not a devlint baseline" in result.output
    (project / "b.json").write_text("{")
    assert "not JSON" in invoke(runner, "--baseline", "b.json", "pkg").output


# --- pre-commit, for real -----------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parent.parent


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})


@pytest.mark.slow
def test_pre_commit_try_repo_force_excludes_and_checks_notebooks(tmp_path):
    """`pre-commit try-repo` on a copy of this checkout (with its uncommitted hook definition): the hook names
    each file, so only --force-exclude keeps an excluded file out; one report for all files."""
    hook_repo = tmp_path / "devlint"
    shutil.copytree(ROOT, hook_repo, ignore=shutil.ignore_patterns(
        ".git", ".venv", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "build", "dist",
        ".devlint_cache", ".ci-venv*", ".mypy_cache", ".ruff_cache", "fixtures", "bench"))
    _git(hook_repo, "init", "-q")
    _git(hook_repo, "add", ".")
    _git(hook_repo, "commit", "-q", "-m", "snapshot")
    repo = tmp_path / "repo"
    (repo / "generated").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "pyproject.toml").write_text('[tool.devlint]\nextend-exclude = ["generated"]\n')
    (repo / "train.py").write_text(BUGGY)
    (repo / "generated" / "out.py").write_text(BUGGY)
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": ["import torch\n", "x = torch.zeros(2).cuda()"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (repo / "nb.ipynb").write_text(json.dumps(nb))
    # more than 4 files: without require_serial pre-commit would run one devlint per batch (4 files or more
    # each, one batch per core), each with its own report
    for i in range(6):
        (repo / f"f{i}.py").write_text('import torch\ndevice = "cuda"\n')
    _git(repo, "add", ".")
    exe = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    result = subprocess.run([exe, "try-repo", str(hook_repo), "devlint", "--all-files"], cwd=repo,
                            capture_output=True, text=True, timeout=900,
                            env={**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "home")})
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert f"train.py:{DEV001}" in out
    assert "nb.ipynb:cell 1:2:5: DEV001" in out
    assert "generated" not in out
    assert out.count("Found ") == 1 and "Found 10 errors." in out  # one report: require_serial
