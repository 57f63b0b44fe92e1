"""`--fix` writes files safely: through symlinks, keeping hard links, mode, owner and extended attributes,
never over a read-only file or over a change made on disk while devlint was fixing, and never leaving a
temporary file behind."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest
from click.testing import CliRunner

import devlint.runner
from devlint.cli import main

BUG = b"import torch\nx = torch.ones(2, requires_grad=True)\nprint(x.numpy())\n"
FIXED = BUG.replace(b"x.numpy()", b"x.detach().numpy()")
NEWER = b"import torch\nx = torch.ones(2, requires_grad=True)\nprint(x.numpy())  # edited meanwhile\n"
CHANGED = "E902 cannot fix: the file changed on disk while devlint was fixing it; run devlint again"


def fix(*paths: str):
    """`devlint --fix` in this process (so monkeypatches apply: one job, no cache)."""
    return CliRunner().invoke(main, ["-q", "--fix", "--no-cache", "--jobs", "1", *paths], catch_exceptions=False)


def leftovers(*directories) -> list[str]:
    """devlint's temporary or backup files left in these directories."""
    return [name for d in directories for name in os.listdir(d) if name.startswith(".devlint-")]


# --- symlinks --------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["named", "walked"])
def test_fix_through_a_symlink_writes_its_target_and_keeps_the_link(tmp_path, monkeypatch, how):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "outside").mkdir()
    (tmp_path / "pkg").mkdir()
    target = tmp_path / "outside" / "target.py"
    target.write_bytes(BUG)
    os.chmod(target, 0o640)
    link = tmp_path / "pkg" / "link.py"
    link.symlink_to(os.path.join("..", "outside", "target.py"))  # relative, as in a repository
    dangling = tmp_path / "pkg" / "dangling.py"
    dangling.symlink_to("missing.py")
    inode = os.stat(target).st_ino
    result = fix("pkg/link.py", "pkg/dangling.py") if how == "named" else fix("pkg")
    assert link.is_symlink() and os.readlink(link) == os.path.join("..", "outside", "target.py")
    assert target.read_bytes() == FIXED and stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert os.stat(target).st_ino != inode  # replaced by a rename (atomic), not rewritten in place
    # a dangling link (the walk lists it too) is reported by reading, as before, and stays as it was
    assert dangling.is_symlink() and os.readlink(dangling) == "missing.py"
    assert "pkg/dangling.py:1:1: E902 cannot read file: No such file or directory" in result.output
    assert "link.py" not in result.output and result.exit_code == 1
    assert leftovers(tmp_path / "pkg", tmp_path / "outside") == []


# --- hard links ------------------------------------------------------------------------------------
def test_fix_keeps_hard_links_together(tmp_path):
    """Through the command line, with worker processes: a hard-linked file is written in place."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second, plain = tmp_path / "a" / "one.py", tmp_path / "b" / "two.py", tmp_path / "a" / "plain.py"
    first.write_bytes(BUG)
    os.link(first, second)
    plain.write_bytes(BUG)
    inode = os.stat(first).st_ino
    proc = subprocess.run([sys.executable, "-m", "devlint", "-q", "--fix", "--no-cache", "--jobs", "2",
                           str(first), str(plain)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert first.read_bytes() == second.read_bytes() == plain.read_bytes() == FIXED
    assert os.stat(first).st_ino == os.stat(second).st_ino == inode and os.stat(first).st_nlink == 2
    assert leftovers(tmp_path / "a", tmp_path / "b") == []  # the backup copy is removed


def _hard_linked(tmp_path):
    path = tmp_path / "one.py"
    path.write_bytes(BUG)
    os.link(path, tmp_path / "two.py")
    return path


def test_in_place_write_keeps_a_synced_backup_until_done(tmp_path, monkeypatch):
    """While a hard-linked file is rewritten in place, a backup of the old bytes lies next to it."""
    monkeypatch.chdir(tmp_path)
    _hard_linked(tmp_path)
    seen = []
    real = os.ftruncate

    def spy(fd, length):  # called once the new bytes are written, before they are synced
        seen.extend((name, (tmp_path / name).read_bytes()) for name in leftovers(tmp_path))
        return real(fd, length)

    monkeypatch.setattr(os, "ftruncate", spy)
    result = fix("one.py")
    assert result.exit_code == 0, result.output
    assert len(seen) == 1 and seen[0][0].startswith(".devlint-one.py.") and seen[0][0].endswith(".bak")
    assert seen[0][1] == BUG
    assert (tmp_path / "one.py").read_bytes() == (tmp_path / "two.py").read_bytes() == FIXED
    assert leftovers(tmp_path) == []


def test_failed_in_place_write_restores_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _hard_linked(tmp_path)
    real = os.ftruncate
    calls = []

    def full(fd, length):  # the disk fills up in the middle of the in-place write
        calls.append(length)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, length)

    monkeypatch.setattr(os, "ftruncate", full)
    result = fix("one.py")
    assert result.exit_code == 1
    assert "one.py:1:1: E902 cannot fix: No space left on device" in result.output
    assert (tmp_path / "one.py").read_bytes() == (tmp_path / "two.py").read_bytes() == BUG
    assert leftovers(tmp_path) == []


# --- mode, owner, extended attributes --------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another owner needs root")
@pytest.mark.parametrize("mode", [0o640, 0o755, 0o2775, 0o600], ids=oct)
def test_fix_keeps_mode_owner_and_xattrs(tmp_path, monkeypatch, mode):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "owned.py"
    path.write_bytes(BUG)
    os.chown(path, 1234, 1234)
    os.chmod(path, mode)  # after chown, which clears the set-group-ID bit
    try:
        os.setxattr(path, "user.devlint-test", b"kept")
        xattrs = True
    except OSError:  # a file system without user extended attributes
        xattrs = False
    result = fix("owned.py")
    assert result.exit_code == 0, result.output
    st = os.stat(path)
    assert path.read_bytes() == FIXED
    assert stat.S_IMODE(st.st_mode) == mode
    assert (st.st_uid, st.st_gid) == (1234, 1234)
    if xattrs:
        assert os.getxattr(path, "user.devlint-test") == b"kept"
    assert leftovers(tmp_path) == []


# --- read-only files -------------------------------------------------------------------------------
def test_read_only_file_is_reported_and_left_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ro, rw = tmp_path / "ro.py", tmp_path / "rw.py"
    ro.write_bytes(BUG)
    rw.write_bytes(BUG)
    os.chmod(ro, 0o444)
    before = os.stat(ro)
    result = fix("ro.py", "rw.py")
    assert result.exit_code == 1
    assert "ro.py:1:1: E902 cannot fix: read-only file" in result.output
    assert ro.read_bytes() == BUG
    after = os.stat(ro)
    assert stat.S_IMODE(after.st_mode) == 0o444 and after.st_ino == before.st_ino
    assert rw.read_bytes() == FIXED  # the other files of the run are still fixed
    assert leftovers(tmp_path) == []


# --- a change on disk between reading and writing --------------------------------------------------
@pytest.mark.parametrize("linked", [False, True], ids=["replaced", "in-place"])
@pytest.mark.parametrize("how", ["edit", "rename"])
def test_file_changed_on_disk_meanwhile_is_not_overwritten(tmp_path, monkeypatch, linked, how):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "busy.py"
    path.write_bytes(BUG)
    if linked:
        os.link(path, tmp_path / "other.py")
    real = devlint.runner.fix_text

    def fix_text(*args, **kwargs):
        outcome = real(*args, **kwargs)
        if how == "edit":  # an editor that saves in place
            path.write_bytes(NEWER)
        else:  # git checkout: a new file renamed over the old one
            (tmp_path / "new.tmp").write_bytes(NEWER)
            os.replace(tmp_path / "new.tmp", path)
        return outcome

    monkeypatch.setattr(devlint.runner, "fix_text", fix_text)
    result = fix("busy.py")
    assert result.exit_code == 1
    assert f"busy.py:1:1: {CHANGED}" in result.output
    assert path.read_bytes() == NEWER
    assert leftovers(tmp_path) == []


# --- errors leave no temporary file ----------------------------------------------------------------
@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_write_error_leaves_no_temp_file(tmp_path, monkeypatch, failing):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "a.py"
    path.write_bytes(BUG)

    def fail(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, failing, fail)
    result = fix("a.py")
    assert result.exit_code == 1
    assert "a.py:1:1: E902 cannot fix: No space left on device" in result.output
    assert path.read_bytes() == BUG
    assert leftovers(tmp_path) == []


# --- as a user other than root ---------------------------------------------------------------------
NOBODY = 65534


@contextlib.contextmanager
def as_nobody():
    """Run the rest of the block with the effective uid/gid of an unprivileged user (root only)."""
    os.setegid(NOBODY)
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to switch to another user")
def test_unprivileged_user_directory_owner_and_read_only(tmp_path):
    """An unwritable directory gives a clear diagnostic; a file the user may write but not own is written in
    place (a rename would change its owner); a file the user may not write is reported read-only."""
    base = tempfile.mkdtemp(prefix="devlint-nobody-")  # tmp_path's parents are private to root
    try:
        os.chmod(base, 0o755)
        closed = os.path.join(base, "closed")  # root's, not writable by nobody
        shared = os.path.join(base, "shared")  # writable by everyone
        os.mkdir(closed, 0o755)
        os.mkdir(shared)
        os.chmod(shared, 0o777)
        files = {
            "closed/a.py": (0, 0o666),  # writable file, unwritable directory
            "shared/b.py": (0, 0o666),  # root's file, writable by nobody: written in place
            "shared/c.py": (NOBODY, 0o444),  # nobody's own read-only file
            "shared/d.py": (NOBODY, 0o644),  # nobody's own file: replaced as usual
        }
        for name, (uid, mode) in files.items():
            path = os.path.join(base, name)
            with open(path, "wb") as fh:
                fh.write(BUG)
            os.chown(path, uid, uid)
            os.chmod(path, mode)
        warm = os.path.join(base, "warm.py")
        with open(warm, "wb") as fh:
            fh.write(BUG)
        cwd = os.getcwd()
        os.chdir(base)
        try:
            fix("warm.py")  # imports what the fixer needs while still root
            with as_nobody():
                result = fix(*files)
        finally:
            os.chdir(cwd)
        assert result.exit_code == 1
        out = result.output
        assert f"closed/a.py:1:1: E902 cannot fix: cannot create a temporary file in {closed}: Permission denied" in out
        assert "shared/c.py:1:1: E902 cannot fix: read-only file" in out
        assert "b.py" not in out and "d.py" not in out

        def read(name):
            with open(os.path.join(base, name), "rb") as fh:
                return fh.read()

        assert read("closed/a.py") == BUG and read("shared/c.py") == BUG
        assert read("shared/b.py") == FIXED and read("shared/d.py") == FIXED
        b = os.stat(os.path.join(shared, "b.py"))
        assert (b.st_uid, b.st_gid, stat.S_IMODE(b.st_mode)) == (0, 0, 0o666)
        d = os.stat(os.path.join(shared, "d.py"))
        assert (d.st_uid, stat.S_IMODE(d.st_mode)) == (NOBODY, 0o644)
        assert leftovers(closed, shared) == []
    finally:
        shutil.rmtree(base)
