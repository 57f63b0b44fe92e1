"""Where the results cache goes: a FIFO at the cache directory, the cache file or its lock, a path of hundreds
or thousands of levels, or one longer than PATH_MAX never hangs a run or fails it (the run is only uncached);
and a file write holds Ctrl-C / SIGTERM back until the file is written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import devlint
from devlint import cache
from devlint.cli import main

BUGGY = 'import torch\n\ndevice = "cuda"\n'


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# --- the cache ------------------------------------------------------------------------------------------
def _lint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "devlint", "-q", *args, "a.py"], cwd=cwd, capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_fifo_at_the_cache_paths_never_hangs(tmp_path):
    (tmp_path / "a.py").write_text(BUGGY)
    expected = 'a.py:3:10: DEV001 Hard-coded device "cuda"'
    os.mkfifo(tmp_path / "cache-as-fifo")  # the cache directory itself
    result = _lint(tmp_path, "--cache-dir", "cache-as-fifo")
    assert result.returncode == 1 and result.stdout.startswith(expected)
    cache_dir = tmp_path / "cdir"
    cache_dir.mkdir()
    name = f"{devlint.__version__}-{cache.code_digest()}.json"
    os.mkfifo(cache_dir / name)  # the cache file and its lock
    os.mkfifo(cache_dir / f"{name}.lock")
    for _ in range(2):
        result = _lint(tmp_path, "--cache-dir", "cdir")
        assert result.returncode == 1 and result.stdout.startswith(expected)


@pytest.mark.parametrize("depth", [200, 1500])
def test_deeply_nested_cache_dir(tmp_path, monkeypatch, depth):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(BUGGY)
    deep = "/".join(["d"] * depth)
    first = invoke("-q", "--cache-dir", deep, "a.py")
    assert first.exit_code == 1 and first.output.startswith('a.py:3:10: DEV001 Hard-coded device "cuda"')
    assert len(os.listdir(tmp_path / deep)) >= 2  # the cache file, its markers: written
    again = invoke("-q", "--cache-dir", deep, "a.py")
    assert again.output == first.output
    _remove_chain(tmp_path)


def _remove_chain(top: Path) -> None:
    """Remove ``top``/d/d/.../d with rm, which needs no recursion (shutil.rmtree, and so pytest's cleanup,
    recurse once per level: a thousand levels are a RecursionError)."""
    subprocess.run(["rm", "-rf", str(top / "d")], check=True, timeout=60)
    assert not (top / "d").exists()


def test_cache_path_too_long_is_no_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(BUGGY)
    result = invoke("-q", "--cache-dir", "/".join(["d"] * 3000), "a.py")  # longer than PATH_MAX
    assert result.exit_code == 1 and result.output.startswith('a.py:3:10: DEV001')
    _remove_chain(tmp_path)


def test_cache_dir_below_a_file_is_no_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "plain").write_text("")
    result = invoke("-q", "--cache-dir", "plain/sub", "a.py")
    assert result.exit_code == 1 and result.output.startswith('a.py:3:10: DEV001')


# --- writes ---------------------------------------------------------------------------------------------
def test_a_write_holds_signals_back(tmp_path):
    """A signal during write_fixed acts after the rename: the file is new and no temporary file is left."""
    from devlint import source

    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    received = []
    old = signal.signal(signal.SIGTERM, lambda *a: received.append(len(os.listdir(tmp_path))))
    real_replace = os.replace

    def replace(src, dst):
        os.kill(os.getpid(), signal.SIGTERM)  # arrives mid-write
        assert received == []  # held back
        real_replace(src, dst)

    try:
        os.replace = replace
        source.write_fixed(str(target), b"old\n", b"new\n")
    finally:
        os.replace = real_replace
        signal.signal(signal.SIGTERM, old)
    assert received == [1]  # delivered once the write was done, with only the file in the directory
    assert target.read_bytes() == b"new\n"
