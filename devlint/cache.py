"""Results cache: lint findings keyed by file content, devlint version, enabled rules and settings.

Content-addressed (the path is not in the key), so a renamed or copied file hits too. Entries are written
atomically (temp file + rename), so parallel workers and interrupted runs never leave a torn entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile

from devlint import __version__
from devlint.rules.base import Applicability, Edit, Finding, Fix, Position


def _pos(p: Position) -> list[int]:
    return [p.row, p.column]


def dump(findings: list[Finding]) -> list[dict]:
    return [{
        "code": f.code, "message": f.message, "start": _pos(f.start), "end": _pos(f.end), "name": f.name,
        "evidence": f.evidence,
        "fix": None if f.fix is None else {
            "applicability": f.fix.applicability.value, "message": f.fix.message,
            "edits": [[_pos(e.start), _pos(e.end), e.content] for e in f.fix.edits],
        },
    } for f in findings]


def load(items: list[dict], path: str) -> list[Finding]:
    out = []
    for d in items:
        fix = None
        if d["fix"] is not None:
            fix = Fix(tuple(Edit(Position(*s), Position(*e), c) for s, e, c in d["fix"]["edits"]),
                      Applicability(d["fix"]["applicability"]), d["fix"]["message"])
        out.append(Finding(d["code"], d["message"], Position(*d["start"]), Position(*d["end"]), fix, path,
                           d["name"], d["evidence"]))
    return out


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


class Cache:
    def __init__(self, directory: str, settings_key: str) -> None:
        self.directory = os.path.join(directory, f"{__version__}-{code_digest()}")
        self.settings = hashlib.sha256(settings_key.encode()).hexdigest()[:16]

    def _path(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        return os.path.join(self.directory, self.settings, digest[:2], digest + ".json")

    def get(self, data: bytes, path: str) -> list[Finding] | None:
        try:
            with open(self._path(data), encoding="utf-8") as fh:
                return load(json.load(fh), path)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, data: bytes, findings: list[Finding]) -> None:
        target = self._path(data)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(dump(findings), fh)
            os.replace(tmp, target)
        except OSError:
            pass  # a cache that cannot be written is only slower
