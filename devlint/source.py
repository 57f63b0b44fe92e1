"""Reading and writing Python source without losing a byte: BOM, PEP 263 cookies, line endings, mode."""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import re
import stat
import tempfile
import tokenize
from dataclasses import dataclass

from devlint.interrupt import held

_BOM = codecs.BOM_UTF8


class SourceError(Exception):
    """A file that cannot be read or decoded; the message is the diagnostic shown to the user."""


@dataclass
class Source:
    """Decoded text plus what is needed to write it back byte-for-byte."""

    text: str  # decoded, without the BOM, with the file's own line endings
    encoding: str = "utf-8"
    bom: bool = False

    def encode(self, text: str | None = None) -> bytes:
        data = (self.text if text is None else text).encode(self.encoding)
        return _BOM + data if self.bom else data


def decode(data: bytes) -> Source:
    """Decode bytes as Python does (BOM, then an encoding cookie in the first two lines, else UTF-8)."""
    if b"\x00" in data[:8192]:
        raise SourceError("binary file (contains NUL bytes), not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "unknown encoding" in str(exc) or "encoding problem" in str(exc):
            raise SourceError(f"bad encoding declaration: {exc}") from None
        encoding = "utf-8"  # not valid UTF-8 in the first lines: the decode below says where
    bom = data.startswith(_BOM)
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    body = data[len(_BOM):] if bom else data
    try:
        codecs.lookup(encoding)
        text = body.decode(encoding)
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r}") from None
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n") + 1
        raise SourceError(f"cannot decode line {line} as {encoding}: {exc.reason}") from None
    return Source(text=text, encoding=encoding, bom=bom)


MAX_BYTES = 64 * 1024 * 1024  # not read at all: no source file is this large
# LibCST parses ~0.4 MB/s and holds ~0.6 GB per MB of source: a larger file would stall a pre-commit hook
# and could exhaust a CI runner's memory. The largest file in torch, transformers, timm and ultralytics is
# 1.4 MB (10 s, 0.8 GB). A larger file passes the byte triggers only; where one matches it is reported as
# not checked.
LIBCST_MAX_BYTES = 2 * 1024 * 1024


def read_bytes(path: str) -> bytes:
    """The file's bytes, or :class:`SourceError` for what devlint will not or cannot read."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise SourceError("not a regular file")  # a FIFO or device would block or never end
        if st.st_size > MAX_BYTES:
            raise SourceError(f"file too large to lint ({st.st_size / 1e6:.1f} MB; the limit is "
                              f"{MAX_BYTES // (1024 * 1024)} MiB), skipped")
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise SourceError(f"cannot read file: {exc.strerror or exc}") from None
    return data


def read_source(path: str) -> tuple[bytes, Source]:
    data = read_bytes(path)
    return data, decode(data)


_CHANGED = "cannot fix: the file changed on disk while devlint was fixing it; run devlint again"


def write_fixed(path: str, old: bytes, new: bytes) -> None:
    """Write ``new`` over the file at ``path``, which devlint read as ``old``, or raise :class:`SourceError`
    (its message, "cannot fix: ...", is the diagnostic shown to the user) and leave the file as it is.

    - A symlink is resolved (to its final target) and the target is written; the link itself is not touched.
      A dangling or looping link, or one changed since the read into one, is reported, not written.
    - The usual way is atomic: the new bytes go to a temporary file in the target's directory, get the
      original's owner, group, permission bits and extended attributes (POSIX ACLs, SELinux labels), are
      fsynced, and are renamed over the original (then the directory is fsynced). A kill at any moment
      leaves the old or the new file, never a mix.
    - A file with more than one hard link, or whose owner, group or extended attributes the temporary file
      cannot be given (an unprivileged user fixing someone else's writable file), is written in place
      instead: a rename would split the links or change the owner. The trade-off: an in-place write is not
      atomic, so first a backup of the old bytes, ``.devlint-<name>.<random>.bak``, is written next to the
      file and fsynced; the file is then rewritten and fsynced, and the backup removed. A crash in between
      leaves the backup (restore it by hand); a write error restores the old bytes (or, if even that
      fails, keeps the backup and names it in the diagnostic). Readers may see a partial file meanwhile.
    - A read-only file (no write permission bit when running as root, which could write it anyway; else
      the effective user may not write it) is not rewritten: "cannot fix: read-only file".
    - If the file on disk is no longer ``old`` (or its inode, mode, owner or link count changed) just before
      the rename or the in-place write, someone else changed it (an editor, ``git checkout``): it is left
      alone and reported. A change in the last microseconds before the rename cannot be detected.
    - No temporary file stays behind on any error; a directory where it cannot be created (not writable)
      is reported as such. (Encoding, BOM and line endings are the caller's: ``new`` is written as given.)
    """
    with held():  # Ctrl-C or SIGTERM acts once the file is written (or left as it was), no temporary file left
        _write_fixed(path, old, new)


def _write_fixed(path: str, old: bytes, new: bytes) -> None:
    try:
        target = os.path.realpath(path, strict=True)
        st = os.stat(target)
    except OSError as exc:
        raise SourceError(f"cannot fix: {_reason(exc)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise SourceError("cannot fix: not a regular file")
    if _read_only(target, st):
        raise SourceError("cannot fix: read-only file")
    if st.st_nlink > 1 or not _replace(target, st, old, new):
        _write_in_place(target, st, old, new)


_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _read_only(path: str, st: os.stat_result) -> bool:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return not st.st_mode & 0o222  # root may write anything: respect the mode bits
    if os.access in os.supports_effective_ids:
        return not os.access(path, os.W_OK, effective_ids=True)
    return not os.access(path, os.W_OK)


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino, a.st_mode, a.st_uid, a.st_gid, a.st_nlink) == \
           (b.st_dev, b.st_ino, b.st_mode, b.st_uid, b.st_gid, b.st_nlink)


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _check_unchanged(fd: int, st: os.stat_result, old: bytes) -> None:
    """Raise unless the file open as ``fd`` is the one stat'ed as ``st`` and still holds ``old``."""
    if not _same_file(os.fstat(fd), st) or _read_all(fd) != old:
        raise SourceError(_CHANGED)


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _copy_xattrs(src: str, fd: int) -> bool:
    """Give the file open as ``fd`` exactly the extended attributes of ``src``; False where that fails."""
    if not hasattr(os, "listxattr"):
        return True
    try:
        names = os.listxattr(src)
        present = os.listxattr(fd)
    except OSError:
        return True  # a file system without extended attributes
    try:
        for name in present:
            if name not in names:  # e.g. a default ACL of the directory that the original does not have
                os.removexattr(fd, name)
        for name in names:
            value = os.getxattr(src, name)
            if name not in present or os.getxattr(fd, name) != value:
                os.setxattr(fd, name, value)
    except OSError:
        return False
    return True


def _replace(target: str, st: os.stat_result, old: bytes, new: bytes) -> bool:
    """Write ``new`` to a temporary file with ``target``'s metadata and rename it over ``target``. False
    (nothing written) where the temporary file cannot get the owner, group or extended attributes."""
    directory = os.path.dirname(target)
    try:
        fd, created = tempfile.mkstemp(prefix=".devlint-", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise SourceError(f"cannot fix: cannot create a temporary file in {directory}: {_reason(exc)}") from None
    tmp: str | None = created
    try:
        try:
            if not _copy_metadata(target, st, fd, created):
                return False
            _write_all(fd, new)
            os.fsync(fd)
            os.close(fd)  # (Windows renames no open file)
            fd = -1
            check = os.open(target, os.O_RDONLY | _NONBLOCK)  # the last moment before the rename
            try:
                _check_unchanged(check, st, old)
            finally:
                os.close(check)
            os.replace(created, target)
            tmp = None
        except OSError as exc:
            raise SourceError(f"cannot fix: {_reason(exc)}") from None
    finally:
        if fd >= 0:
            _close(fd)
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    _fsync_dir(directory)
    return True


def _copy_metadata(target: str, st: os.stat_result, fd: int, path: str) -> bool:
    """Give the new file open as ``fd`` (at ``path``) the owner, group, extended attributes and mode of
    ``target`` (stat'ed as ``st``); False where it cannot have them all."""
    tst = os.fstat(fd)
    if hasattr(os, "fchown") and (tst.st_uid, tst.st_gid) != (st.st_uid, st.st_gid):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except PermissionError:
            return False
    if not _copy_xattrs(target, fd):  # (an access ACL sets the group bits: the mode comes after)
        return False
    os.chmod(path, stat.S_IMODE(st.st_mode))  # after chown, which clears set-user/group-ID bits
    return os.fstat(fd).st_mode == st.st_mode  # not so: a set-group-ID bit an unprivileged user cannot set


def _write_in_place(target: str, st: os.stat_result, old: bytes, new: bytes) -> None:
    """Rewrite ``target`` in place, with a synced backup of ``old`` next to it until the new bytes are synced."""
    directory, name = os.path.split(target)
    try:
        bfd, backup = tempfile.mkstemp(prefix=f".devlint-{name}.", suffix=".bak", dir=directory)
    except OSError as exc:
        raise SourceError(f"cannot fix: cannot create a temporary file in {directory}: {_reason(exc)}") from None
    keep_backup = False
    try:
        try:
            try:
                _write_all(bfd, old)
                os.fsync(bfd)
            finally:
                os.close(bfd)
            _fsync_dir(directory)  # the backup is on disk, under its name, before the file is touched
            fd = os.open(target, os.O_RDWR | _NONBLOCK)  # (a FIFO put there meanwhile must not block)
        except OSError as exc:
            raise SourceError(f"cannot fix: {_reason(exc)}") from None
        try:
            _check_unchanged(fd, st, old)
            try:
                _write_all(fd, new)
                os.ftruncate(fd, len(new))
                os.fsync(fd)
            except OSError as exc:
                try:  # put the old bytes back
                    _write_all(fd, old)
                    os.ftruncate(fd, len(old))
                    os.fsync(fd)
                except OSError:
                    keep_backup = True
                    raise SourceError(f"cannot fix: {_reason(exc)}; the file may be damaged, its original "
                                      f"content is in {backup}") from None
                raise SourceError(f"cannot fix: {_reason(exc)}") from None
        except OSError as exc:
            raise SourceError(f"cannot fix: {_reason(exc)}") from None
        finally:
            os.close(fd)
    finally:
        if not keep_backup:
            with contextlib.suppress(OSError):
                os.unlink(backup)


_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split on \\r\\n, \\r and \\n only (as Python's tokenizer and LibCST do)."""
    return _LINE_RE.findall(text)
