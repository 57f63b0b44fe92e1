"""Results cache: lint findings keyed by file content, devlint version, enabled rules and settings.

Content-addressed (the path is not in the key), so a renamed or copied file hits too. The cache file is
written atomically (temp file + rename) by the main process only, so an interrupted run never leaves a
torn cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from devlint import __version__
from devlint.diagnostics import Applicability, Edit, Evidence, Finding, Fix, Position


def _pos(p: Position) -> list[int]:
    return [p.row, p.column]


def dump(findings: list[Finding]) -> list[dict[str, object]]:
    return [{
        "code": f.code, "message": f.message, "start": _pos(f.start), "end": _pos(f.end), "name": f.name,
        "cell": f.cell,
        "evidence": f.evidence.to_json() if f.evidence is not None else None,
        "fix": None if f.fix is None else {
            "applicability": f.fix.applicability.value, "message": f.fix.message,
            "edits": [[_pos(e.start), _pos(e.end), e.content, e.old, e.before] for e in f.fix.edits],
        },
    } for f in findings]


def load(items: list[dict[str, Any]], path: str) -> list[Finding]:
    """The findings of :func:`dump`'s ``items`` as ``json.load`` returned them, unchecked: an entry that does
    not fit raises KeyError, TypeError or ValueError (:meth:`Cache.get` takes it for a miss)."""
    out = []
    for d in items:
        fix = None
        if d["fix"] is not None:
            fix = Fix(tuple(Edit(Position(*s), Position(*e), c, o, b) for s, e, c, o, b in d["fix"]["edits"]),
                      Applicability(d["fix"]["applicability"]), d["fix"]["message"])
        out.append(Finding(d["code"], d["message"], Position(*d["start"]), Position(*d["end"]), fix, path,
                           d["name"], _evidence(d["code"], d["evidence"]), d["cell"]))
    return out


def _evidence(code: str, data: dict[str, Any] | None) -> Evidence | None:
    """A finding's evidence, rebuilt as its rule's kind (devlint.rules registry)."""
    if data is None:
        return None
    from devlint.rules import all_rules

    rule = all_rules().get(code)
    return rule.evidence_type(**data) if rule is not None else None


_CODE_DIGEST: str | None = None


def code_digest() -> str:
    """A digest of devlint's own source: a development build with changed rules never reads old entries."""
    global _CODE_DIGEST
    if _CODE_DIGEST is None:
        root = os.path.dirname(os.path.abspath(__file__))
        digest = hashlib.sha256()
        for dirpath, dirnames, filenames in sorted(os.walk(root)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(".py"):
                    with open(os.path.join(dirpath, name), "rb") as fh:
                        digest.update(name.encode() + b"\0" + fh.read())
        _CODE_DIGEST = digest.hexdigest()[:12]
    return _CODE_DIGEST


_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _open_regular(path: str, flags: int) -> int:
    """A descriptor of the regular file at ``path``, opened without blocking (a FIFO or device put where a
    cache file goes would block ``open`` or never end a read), else OSError."""
    fd = os.open(path, flags | _NONBLOCK | getattr(os, "O_NOCTTY", 0), 0o666)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_regular(path: str) -> bytes:
    with os.fdopen(_open_regular(path, os.O_RDONLY), "rb") as fh:
        return fh.read()


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    """An exclusive advisory lock (POSIX ``flock``) for the read-merge-write of the cache file; without
    fcntl (Windows) concurrent saves may drop each other's new entries, never corrupt the file."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with os.fdopen(_open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "ab") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _makedirs(directory: str) -> None:
    """``os.makedirs(directory, exist_ok=True)`` without its recursion (a path of a thousand levels would
    raise RecursionError); OSError when a component is no directory or the path is too long."""
    missing = []
    head = os.path.abspath(directory)
    while not os.path.isdir(head):
        parent = os.path.dirname(head)
        if parent == head:
            break
        missing.append(head)
        head = parent
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:
            if not os.path.isdir(path):
                raise NotADirectoryError(f"{path}: not a directory") from None


def _make_cache_dir(directory: str) -> None:
    """The cache directory, marked like ruff's: a ``.gitignore`` of ``*`` keeps it out of ``git add .`` and of
    pre-commit's view, a ``CACHEDIR.TAG`` keeps it out of backups."""
    _makedirs(directory)
    for name, text in ((".gitignore", "# Automatically created by devlint.\n*\n"),
                       ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n"
                                        "# This file is a cache directory tag created by devlint.\n")):
        marker = os.path.join(directory, name)
        if not os.path.exists(marker):
            with open(marker, "w", encoding="utf-8") as fh:
                fh.write(text)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# A file modified within this long of its hashing may change again with the same mtime (a coarse clock,
# or a write in the same tick): its record is kept but not trusted, so the next run hashes it again
# (ruff's and git's "racy" files).
RACY_NS = 2_000_000_000


def _write_json(file: str, data: dict[str, object]) -> None:
    """Write ``data`` to ``file`` atomically (temp file + rename)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(file), suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, separators=(",", ":"))
        os.replace(tmp, file)
    except BaseException:
        os.unlink(tmp)
        raise


class Cache:
    """One JSON file per devlint build (version + source digest): ``{key: [day last used, findings]}``.

    The key is the file's content digest plus the enabled rules and settings that apply to it. The main
    process loads it once, answers hits, collects new entries from the workers and saves once at the end
    (merged with what is on disk, written atomically); entries unused for ``KEEP_DAYS`` are dropped.
    """

    KEEP_DAYS = 30

    def __init__(self, directory: str) -> None:
        self.file = os.path.join(directory, f"{__version__}-{code_digest()}.json")
        self.entries: dict[str, object] = self._read()  # key -> [day last used, dumped findings]
        self.dirty = False
        self.today = int(time.time() // 86400)
        # the stat records: absolute path -> [size, mtime_ns, content digest, trusted by stat alone]
        self.stat_file = self.file[:-len(".json")] + ".stat.json"
        self.stats: dict[str, object] = self._read(self.stat_file)
        self.new_stats: dict[str, list[object]] = {}

    def file_digest(self, path: str, read: Callable[[str], bytes]) -> str:
        """The digest of the bytes of the file at ``path``: from its stat record where the file's size and
        mtime match a trusted one (nothing read), else ``read(path)`` hashed (and recorded); what ``read``
        raises passes through."""
        try:
            st: os.stat_result | None = os.stat(path)
        except OSError:
            st = None  # ``read`` reports it
        here = os.path.abspath(path)
        record = self.stats.get(here)
        if (st is not None and stat.S_ISREG(st.st_mode) and isinstance(record, list) and len(record) == 4
                and record[0] == st.st_size and record[1] == st.st_mtime_ns and record[3] is True
                and isinstance(record[2], str)):
            return record[2]
        data = read(path)
        value = digest(data)
        if st is not None and stat.S_ISREG(st.st_mode) and len(data) == st.st_size:
            racy = st.st_mtime_ns >= time.time_ns() - RACY_NS  # (stat before the read: an edit after it
            self.new_stats[here] = [st.st_size, st.st_mtime_ns, value, not racy]  # changes the mtime)
        return value

    def _deps_unchanged(self, deps: object) -> bool:
        if not isinstance(deps, dict):
            return False
        for path, expected in deps.items():
            try:
                if self.file_digest(path, _read_regular) != expected:
                    return False
            except OSError:
                return False
        return True

    def _read(self, file: str | None = None) -> dict[str, object]:
        try:
            data = json.loads(_read_regular(file if file is not None else self.file))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @staticmethod
    def key(data: bytes, settings: str) -> str:
        return Cache.key_of(digest(data), settings)

    @staticmethod
    def key_of(content_digest: str, settings: str) -> str:
        """:meth:`key` from the digest of the bytes (:func:`digest`, :meth:`file_digest`)."""
        return content_digest + "-" + hashlib.sha256(settings.encode()).hexdigest()[:12]

    def get(self, key: str, path: str) -> list[Finding] | None:
        entry = self.entries.get(key)
        if not (isinstance(entry, list) and len(entry) in (2, 3)):
            return None
        if len(entry) == 3 and not self._deps_unchanged(entry[2]):
            return None  # a finding depended on another file of the project, which changed
        try:
            findings = load(entry[1], path)
        except (KeyError, TypeError, ValueError):
            return None
        if entry[0] != self.today:
            entry[0] = self.today
            self.dirty = True
        return findings

    def put(self, key: str, findings: list[Finding], deps: dict[str, str] | None = None) -> None:
        """``deps``: the other files the result depended on (path -> digest of their bytes)."""
        self.entries[key] = [self.today, dump(findings), deps] if deps else [self.today, dump(findings)]
        self.dirty = True

    def save(self) -> None:
        if self.new_stats:
            self._save_stats()
        if not self.dirty:
            return
        try:
            _make_cache_dir(os.path.dirname(self.file))
            with _locked(self.file + ".lock"):  # pre-commit runs several devlint processes at once
                merged = self._read()  # another run may have saved meanwhile: keep its entries too
                merged.update(self.entries)
                cutoff = self.today - self.KEEP_DAYS
                merged = {k: v for k, v in merged.items() if isinstance(v, list) and len(v) in (2, 3)
                          and isinstance(v[0], int) and v[0] >= cutoff}
                _write_json(self.file, merged)
        except OSError:
            pass  # a cache that cannot be written is only slower
        self.dirty = False

    def _save_stats(self) -> None:
        """Merge the stat records of this run into the stat file (records of vanished files dropped)."""
        try:
            _make_cache_dir(os.path.dirname(self.stat_file))
            with _locked(self.stat_file + ".lock"):
                merged = self._read(self.stat_file)
                merged.update(self.new_stats)
                merged = {k: v for k, v in merged.items() if k in self.new_stats or os.path.exists(k)}
                _write_json(self.stat_file, merged)
        except OSError:
            pass
        self.new_stats = {}
