"""What devlint reports: findings, their fixes, and the diagnostics that are not rule findings.

This is the data that flows out of the engine to the reports, the cache, the fixer and the verifier. It
imports nothing else of devlint.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Any


class StrEnum(str, Enum):
    """An enum whose members are their string values, in f-strings too (on every Python; 3.11's
    ``enum.StrEnum`` is not in 3.10, and ``(str, Enum)`` formats as ``Name.MEMBER`` from 3.12)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Applicability(StrEnum):
    SAFE = "safe"  # applied by --fix
    UNSAFE = "unsafe"  # applied by --fix --unsafe-fixes: may change behaviour


class FixAvailability(StrEnum):
    """Does a rule come with a fix (ruff's "Fix is always / sometimes available")?"""

    ALWAYS = "always"
    SOMETIMES = "sometimes"
    NONE = "none"


@dataclass(frozen=True, order=True)
class Position:
    row: int  # 1-based line
    column: int  # 1-based column, in characters


@dataclass(frozen=True)
class Edit:
    """Replace the text from ``start`` up to ``end`` (exclusive) with ``content``.

    ``old``: the text the edit expects to replace, and ``before``: the text it expects right before
    ``start``; an edit whose anchors do not match the file is not applied (it would land elsewhere).
    """

    start: Position
    end: Position
    content: str
    old: str | None = None
    before: str | None = None


@dataclass(frozen=True)
class Fix:
    edits: tuple[Edit, ...]
    applicability: Applicability
    message: str = ""


@dataclass(frozen=True)
class Evidence:
    """What ``devlint verify`` needs to rebuild a finding's bug in a probe; each rule has its own kind."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Finding:
    code: str
    message: str
    start: Position
    end: Position
    fix: Fix | None = None
    path: str = ""
    name: str = ""  # the rule's kebab-case name
    evidence: Evidence | None = None
    cell: int | None = None  # in a notebook: the cell (1-based, counting every cell); rows are in the cell

    @property
    def sort_key(self) -> tuple[str, int, Position, str]:
        return (self.path, self.cell or 0, self.start, self.code)


# --- diagnostics that are not rule findings --------------------------------------------------------
@dataclass(frozen=True)
class Diagnostic:
    """A code devlint reports about a file rather than about its code (ruff's E902, invalid-syntax)."""

    code: str
    name: str
    summary: str

    def at(self, path: str, message: str, row: int = 1, column: int = 1) -> Finding:
        pos = Position(row, column)
        return Finding(self.code, message, pos, pos, path=path, name=self.name)


INTERNAL_ERROR = Diagnostic("E001", "internal-error", "a rule crashed, or the file could not be analysed")
IO_ERROR = Diagnostic("E902", "io-error", "the file could not be read, decoded or written")
NOTEBOOK_ERROR = Diagnostic("E903", "invalid-notebook", "the file is not a notebook devlint reads (nbformat 4 JSON)")
SYNTAX_ERROR = Diagnostic("E999", "syntax-error", "the file (or a notebook's cell) does not parse")
DIAGNOSTICS = {d.code: d for d in (INTERNAL_ERROR, IO_ERROR, NOTEBOOK_ERROR, SYNTAX_ERROR)}
