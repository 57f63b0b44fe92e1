"""What a rule is and what it reports. A rule knows nothing about files, output or the CLI."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar, Iterable

import libcst as cst

from devlint.context import Context


class Applicability(str, Enum):
    SAFE = "safe"  # applied by --fix
    UNSAFE = "unsafe"  # applied by --fix --unsafe-fixes: may change behaviour


@dataclass(frozen=True, order=True)
class Position:
    row: int  # 1-based line
    column: int  # 1-based column, in characters


@dataclass(frozen=True)
class Edit:
    """Replace the text from ``start`` up to ``end`` (exclusive) with ``content``."""

    start: Position
    end: Position
    content: str


@dataclass(frozen=True)
class Fix:
    edits: tuple[Edit, ...]
    applicability: Applicability
    message: str = ""


@dataclass
class Finding:
    code: str
    message: str
    start: Position
    end: Position
    fix: Fix | None = None
    path: str = ""
    name: str = ""  # the rule's kebab-case name

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.start, self.code)


def node_start(ctx: Context, node: cst.CSTNode) -> Position:
    """Start of ``node``, before its opening parentheses if it has any."""
    lpar = getattr(node, "lpar", None)
    pos = ctx.range(lpar[0] if lpar else node).start
    return Position(pos.line, pos.column + 1)


def node_end(ctx: Context, node: cst.CSTNode) -> Position:
    """End of ``node``, after its closing parentheses if it has any."""
    rpar = getattr(node, "rpar", None)
    pos = ctx.range(rpar[-1] if rpar else node).end
    return Position(pos.line, pos.column + 1)


def replace(ctx: Context, node: cst.CSTNode, content: str) -> Edit:
    return Edit(node_start(ctx, node), node_end(ctx, node), content)


def insert_after(ctx: Context, node: cst.CSTNode, content: str) -> Edit:
    end = node_end(ctx, node)
    return Edit(end, end, content)


class Rule:
    """One rule: subclass, set the class attributes, implement :meth:`check`.

    Modules under ``devlint/rules/`` are imported automatically and every ``Rule`` subclass with a
    ``code`` is registered.
    """

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""  # kebab-case, like ruff's rule names
    summary: ClassVar[str] = ""  # one line for `devlint rules`
    fix_availability: ClassVar[str] = "none"  # "always", "sometimes" or "none"
    doc: ClassVar[str] = ""  # Markdown: what it catches, why, example, fix (the rules/CODE.md page body)

    def check(self, ctx: Context) -> Iterable[Finding]:
        raise NotImplementedError

    def finding(self, ctx: Context, node: cst.CSTNode, message: str, fix: Fix | None = None) -> Finding:
        return Finding(
            code=self.code,
            message=message,
            start=node_start(ctx, node),
            end=node_end(ctx, node),
            fix=fix,
            path=ctx.path,
            name=self.name,
        )

    @classmethod
    def page(cls) -> str:
        """The rule's reference page, as printed by ``devlint rule CODE`` and kept in rules/CODE.md."""
        fix = {"always": "Always available", "sometimes": "Sometimes available", "none": "Not available"}
        return (
            f"# {cls.code}: {cls.name}\n\n"
            f"{cls.summary}\n\n"
            f"Fix: {fix[cls.fix_availability]}.\n\n"
            f"{cls.doc.strip()}\n"
        )
