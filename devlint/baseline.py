"""Baselines: record today's findings, then report only new ones (adopting devlint on a large codebase).

A finding's fingerprint survives edits elsewhere in the file: the rule code, the file's path relative to the
project root (posix), and the text of the finding's first line with its whitespace collapsed, but not its row
or column. Identical fingerprints (the same call twice in a file) are counted: the file records how many of
each there were, and that many current findings with the fingerprint, in file order, stay hidden (so a new
copy of a baselined line is reported, as is an edited line).

The file is JSON, ``{"version": 1, "findings": [{"code", "path", "line", "count"}, ...]}``, sorted, with no
timestamp: writing it again without a change in the code gives the same bytes.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from devlint import notebook
from devlint.config import ConfigError
from devlint.diagnostics import INTERNAL_ERROR, Finding
from devlint.source import SourceError, decode, read_bytes, split_lines

VERSION = 1

Key = tuple[str, str, str]  # (code, path relative to the root, the line's text with its whitespace collapsed)


@dataclass
class Outcome:
    findings: list[Finding]  # what the baseline does not hide
    hidden: int = 0  # findings the baseline hid
    stale: int = 0  # baseline entries (counting each occurrence) no longer found in the files linted
    entries: Counter[Key] = field(default_factory=Counter)  # what --update-baseline writes


def _rel(path: str, root: Path) -> str:
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        return absolute.as_posix()


class _Lines:
    """The text of a finding's first line (in a notebook: of its cell), each file read once."""

    def __init__(self, texts: dict[str, bytes]) -> None:
        self.texts = texts  # path -> bytes not on disk (standard input)
        self.lines: dict[tuple[str, int | None], list[str]] = {}
        self.loaded: set[str] = set()

    def _load(self, path: str) -> None:
        try:
            data = self.texts[path] if path in self.texts else read_bytes(path)
            if notebook.is_notebook(path):
                for cell in notebook.parse(data).cells:
                    self.lines[(path, cell.number)] = split_lines(cell.text)
            else:
                self.lines[(path, None)] = split_lines(decode(data).text)
        except (SourceError, notebook.NotebookError):
            pass

    def __call__(self, f: Finding) -> str:
        if f.path not in self.loaded:
            self.loaded.add(f.path)
            self._load(f.path)
        lines = self.lines.get((f.path, f.cell), [])
        line = lines[f.start.row - 1] if 0 < f.start.row <= len(lines) else ""
        return " ".join(line.split())


def _keys(findings: list[Finding], root: Path, texts: dict[str, bytes]) -> list[Key]:
    line = _Lines(texts)
    return [(f.code, _rel(f.path, root), line(f)) for f in findings]


def load(path: str) -> Counter[Key]:
    """The entries of a baseline file; :class:`ConfigError` (exit 2) for one that cannot be used."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"baseline {path}: no such file (write it with --update-baseline)") from None
    except OSError as exc:
        raise ConfigError(f"baseline {path}: cannot read: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"baseline {path}: not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("findings"), list):
        raise ConfigError(f"baseline {path}: not a devlint baseline (version {VERSION}); "
                          "write it again with --update-baseline")
    entries: Counter[Key] = Counter()
    for item in data["findings"]:
        try:
            key = (str(item["code"]), str(item["path"]), str(item["line"]))
            count = int(item.get("count", 1))
        except (TypeError, KeyError, ValueError):
            raise ConfigError(f"baseline {path}: bad entry {item!r}") from None
        entries[key] += max(count, 0)
    return entries


def dump(entries: Counter[Key]) -> str:
    items = [{"code": code, "path": path, "line": line, "count": count}
             for (code, path, line), count in sorted(entries.items()) if count > 0]
    return json.dumps({"version": VERSION, "findings": items}, indent=2, ensure_ascii=False) + "\n"


def write(path: str, entries: Counter[Key]) -> None:
    """Write the baseline file atomically (a temporary file renamed over it)."""
    text = dump(entries).encode("utf-8")
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise ConfigError(f"baseline {path}: cannot write: {exc.strerror or exc}") from None


def apply(findings: list[Finding], linted: list[str], baseline: Counter[Key], root: Path,
          texts: dict[str, bytes] | None = None) -> Outcome:
    """Hide the findings ``baseline`` records. ``findings``: sorted; ``linted``: the files of the run (their
    entries only are stale when not found, and only theirs are replaced in ``entries``)."""
    recorded = [f for f in findings if f.code != INTERNAL_ERROR.code]
    keys = _keys(recorded, root, texts or {})
    seen: Counter[Key] = Counter()
    hidden_ids: set[int] = set()
    for f, key in zip(recorded, keys, strict=True):
        if seen[key] < baseline[key]:
            hidden_ids.add(id(f))
        seen[key] += 1
    here = {_rel(p, root) for p in linted}
    stale = sum(max(0, count - seen[key]) for key, count in baseline.items() if key[1] in here)
    entries = Counter({key: count for key, count in baseline.items() if key[1] not in here})
    entries.update(seen)
    return Outcome([f for f in findings if id(f) not in hidden_ids], len(hidden_ids), stale, entries)
