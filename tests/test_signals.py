"""Stopping and odd files: Ctrl-C and SIGTERM end a run and its worker pool at once; unreadable directories and
files are E902 findings; a bad or unreadable configuration is a one-line error (exit 2); a FIFO or a deeply
nested path where the cache goes never hangs."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import main

ROOT = Path(__file__).resolve().parent.parent
BUGGY = 'import torch\n\ndevice = "cuda"\n'
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# --- signals --------------------------------------------------------------------------------------------
def _tree(tmp_path: Path, n: int = 300) -> Path:
    src = (ROOT / "fixtures" / "scripts" / "colab_classifier.py").read_text()
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(n):
        (tree / f"f{i:03}.py").write_text(src)
    return tree


def _group(pgid: int) -> list[int]:
    """The live (not zombie) processes of the process group ``pgid``, from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            out.append(int(entry))
    return out


def _start(tree: Path, *args: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "devlint", "--no-cache", "-q", "-j", "2", *args, str(tree)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline and len(_group(proc.pid)) < 3:  # devlint and its two workers
        time.sleep(0.05)
    time.sleep(0.5)  # the workers are linting
    assert proc.poll() is None, "the run ended before it could be interrupted"
    return proc


def _stop(proc: subprocess.Popen[bytes], send) -> tuple[int, float, bytes]:
    start = time.time()
    send()
    try:
        code = proc.wait(10)
    finally:
        for pid in _group(proc.pid):
            os.kill(pid, signal.SIGKILL)
    elapsed = time.time() - start
    assert proc.stderr is not None
    return code, elapsed, proc.stderr.read()


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")


@needs_proc
@pytest.mark.slow  # a devlint process with a pool of two, interrupted
def test_ctrl_c_stops_within_a_second_with_exit_130_and_no_worker(tmp_path):
    proc = _start(_tree(tmp_path))
    code, elapsed, err = _stop(proc, lambda: os.killpg(proc.pid, signal.SIGINT))  # a terminal signals the group
    assert code == 130
    assert elapsed < 1.0
    assert err.decode().splitlines() == ["devlint: interrupted"]  # no traceback from the workers
    time.sleep(0.2)
    assert _group(proc.pid) == []


@needs_proc
@pytest.mark.slow  # a devlint process with a pool of two, interrupted
def test_sigint_to_the_main_process_alone(tmp_path):
    proc = _start(_tree(tmp_path))
    code, elapsed, _ = _stop(proc, lambda: proc.send_signal(signal.SIGINT))
    assert (code, elapsed < 1.0) == (130, True)
    time.sleep(0.2)
    assert _group(proc.pid) == []


@needs_proc
@pytest.mark.slow  # a devlint --fix process with a pool of two, terminated
def test_sigterm_kills_the_pool_and_nothing_writes_afterwards(tmp_path):
    tree = _tree(tmp_path)
    proc = _start(tree, "--fix", "--unsafe-fixes")
    code, elapsed, err = _stop(proc, lambda: proc.send_signal(signal.SIGTERM))
    assert code == 143
    assert elapsed < 2.0
    assert err.decode().splitlines() == ["devlint: terminated"]
    assert _group(proc.pid) == []
    snapshot = {p.name: p.read_bytes() for p in tree.iterdir()}
    time.sleep(1.0)
    assert {p.name: p.read_bytes() for p in tree.iterdir()} == snapshot  # no orphan goes on fixing
    assert sorted(snapshot) == [f"f{i:03}.py" for i in range(300)]  # no temporary file left


@needs_proc
@pytest.mark.slow  # a devlint process with a pool of two, killed
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_die_with_a_killed_main_process(tmp_path):
    proc = _start(_tree(tmp_path))
    code, _, _ = _stop(proc, lambda: proc.send_signal(signal.SIGKILL))
    assert code == -signal.SIGKILL
    deadline = time.time() + 5
    while _group(proc.pid) and time.time() < deadline:
        time.sleep(0.05)
    assert _group(proc.pid) == []


def test_keyboard_interrupt_in_process_is_exit_130(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(BUGGY)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("devlint.cli.run", interrupted)
    result = CliRunner().invoke(main, ["--no-cache", "a.py"])
    assert result.exit_code == 130
    assert result.output == "devlint: interrupted\n"


# --- unreadable directories and files -------------------------------------------------------------------
def _deny(monkeypatch, denied: Path) -> None:
    """os.scandir(denied) raises PermissionError, as a directory without read permission does."""
    real = os.scandir

    def scandir(path="."):
        if os.path.abspath(os.fspath(path)) == str(denied):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def test_unreadable_directory_is_e902(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg" / "locked").mkdir(parents=True)
    (tmp_path / "pkg" / "locked" / "x.py").write_text(BUGGY)
    (tmp_path / "pkg" / "ok.py").write_text("import torch\n")
    _deny(monkeypatch, tmp_path / "pkg" / "locked")
    result = invoke("--no-cache", "-j", "1", "pkg")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"{os.path.join('pkg', 'locked')}:1:1: E902 cannot read directory: Permission denied",
        "Found 1 error.",
    ]


def test_unreadable_top_directory_is_e902(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    _deny(monkeypatch, tmp_path / "pkg")
    result = invoke("--no-cache", "-q", "pkg")
    assert (result.exit_code, result.output) == (1, "pkg:1:1: E902 cannot read directory: Permission denied\n")


def test_unreadable_file_is_e902(tmp_path, monkeypatch):
    from devlint import source

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(BUGGY)
    real = open

    def fake_open(path, *args, **kwargs):
        if str(path).endswith("a.py"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(source, "open", fake_open, raising=False)
    result = invoke("--no-cache", "-q", "-j", "1", "pkg")
    assert (result.exit_code, result.output) == (
        1, f"{os.path.join('pkg', 'a.py')}:1:1: E902 cannot read file: Permission denied\n")


@pytest.mark.skipif(AS_ROOT, reason="root reads every file and directory")
def test_chmod_000_directory_and_file_are_e902(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg" / "locked").mkdir(parents=True)
    (tmp_path / "pkg" / "locked" / "x.py").write_text(BUGGY)
    (tmp_path / "pkg" / "secret.py").write_text(BUGGY)
    os.chmod(tmp_path / "pkg" / "locked", 0)
    os.chmod(tmp_path / "pkg" / "secret.py", 0)
    try:
        result = invoke("--no-cache", "-q", "pkg")
    finally:
        os.chmod(tmp_path / "pkg" / "locked", 0o755)
        os.chmod(tmp_path / "pkg" / "secret.py", 0o644)
    assert result.exit_code == 1
    assert sorted(result.output.splitlines()) == [
        f"{os.path.join('pkg', 'locked')}:1:1: E902 cannot read directory: Permission denied",
        f"{os.path.join('pkg', 'secret.py')}:1:1: E902 cannot read file: Permission denied",
    ]


# --- configuration --------------------------------------------------------------------------------------
@pytest.mark.parametrize("body,message", [
    ("tool = 5", "`tool` must be a table (got int 5)"),
    ("[tool]\ndevlint = 5", "[tool.devlint] must be a table (got int 5)"),
    ("[tool.devlint]\nselect = 3", "[tool.devlint] select must be a list of strings (got 3)"),
    ('[tool.devlint]\nexclude = "x"', "[tool.devlint] exclude must be a list of strings (got 'x')"),
    ('[tool.devlint]\noutput-format = "xml"', "[tool.devlint] output-format must be one of 'concise', 'full', "
                                              "'json', 'sarif', 'github', 'text' (got 'xml')"),
    ("[tool.devlint]\nextend-exclude = [1]", "[tool.devlint] extend-exclude must be a list of strings (got [1])"),
    ("[tool.devlint]\nrespect-gitignore = 1", "[tool.devlint] respect-gitignore must be true or false (got 1)"),
    ("[tool.devlint]\nselekt = []", "unknown key 'selekt' in [tool.devlint]"),
    ("\xff", "invalid TOML"),
])
def test_bad_config_value_is_one_line_and_exit_2(tmp_path, body, message):
    (tmp_path / "pyproject.toml").write_bytes(body.encode("latin-1") if body == "\xff" else body.encode())
    (tmp_path / "a.py").write_text(BUGGY)
    proc = subprocess.run([sys.executable, "-m", "devlint", "--no-cache", "a.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"devlint: error: {tmp_path / 'pyproject.toml'}: ")
    assert message in lines[0]


def test_unsearchable_parent_directory_is_one_line_and_exit_2(tmp_path, monkeypatch):
    from devlint import config

    project = tmp_path / "outer" / "project"
    project.mkdir(parents=True)
    (project / "a.py").write_text(BUGGY)
    monkeypatch.chdir(project)
    real = os.stat

    def stat(path, *args, **kwargs):
        if os.fspath(path) == str(tmp_path / "outer" / "pyproject.toml"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(config.os, "stat", stat)
    result = CliRunner().invoke(main, ["--no-cache", "a.py"])
    assert result.exit_code == 2
    assert result.output == f"devlint: error: cannot look for pyproject.toml in {tmp_path / 'outer'}: Permission denied\n"


@pytest.mark.skipif(AS_ROOT, reason="root searches every directory")
def test_chmod_parent_directory_is_one_line_and_exit_2(tmp_path):
    outer = tmp_path / "outer"
    project = outer / "project"
    project.mkdir(parents=True)
    (project / "a.py").write_text(BUGGY)
    os.chmod(outer, 0o600)  # readable, not searchable: its pyproject.toml cannot be looked at
    try:
        proc = subprocess.run([sys.executable, "-m", "devlint", "--no-cache", str(project / "a.py")],
                              capture_output=True, text=True, timeout=60, check=False)
    finally:
        os.chmod(outer, 0o755)
    assert proc.returncode == 2
    assert proc.stderr == f"devlint: error: cannot look for pyproject.toml in {outer}: Permission denied\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_config_that_is_a_fifo_is_an_error_not_a_hang(tmp_path):
    os.mkfifo(tmp_path / "pyproject.toml")
    (tmp_path / "a.py").write_text(BUGGY)
    proc = subprocess.run([sys.executable, "-m", "devlint", "--no-cache", "--config", "pyproject.toml", "a.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert proc.stderr == "devlint: error: pyproject.toml: cannot read config: not a regular file\n"


def test_path_below_an_unsearchable_directory_is_one_line_and_exit_2(tmp_path, monkeypatch):
    from devlint import config

    (tmp_path / "locked" / "sub").mkdir(parents=True)
    (tmp_path / "locked" / "sub" / "a.py").write_text(BUGGY)
    monkeypatch.chdir(tmp_path)
    real = os.stat

    def stat(path, *args, **kwargs):  # as when `locked` has no search (x) permission
        if os.fspath(path).startswith(str(tmp_path / "locked") + os.sep):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(config.os, "stat", stat)
    result = CliRunner().invoke(main, ["check", "--no-cache", "locked/sub/a.py"])
    assert result.exit_code == 2
    assert result.output == (f"devlint: error: cannot look for pyproject.toml in {tmp_path / 'locked' / 'sub'}: "
                             "Permission denied\n")
