"""What a rule is and what it reports. A rule knows nothing about files, output or the CLI."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, ClassVar, Iterable


from devlint.context import Context
from devlint.lazy import LazyModule
from devlint.screen import AstIndex

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

class Applicability(str, Enum):
    SAFE = "safe"  # applied by --fix
    UNSAFE = "unsafe"  # applied by --fix --unsafe-fixes: may change behaviour


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


@dataclass
class Finding:
    code: str
    message: str
    start: Position
    end: Position
    fix: Fix | None = None
    path: str = ""
    name: str = ""  # the rule's kebab-case name
    evidence: dict | None = None  # what `devlint verify` needs to rebuild the bug (see Rule.probe)

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.start, self.code)


def node_start(ctx: Context, node: cst.CSTNode) -> Position:
    """Start of ``node``, before its opening parentheses if it has any."""
    lpar = getattr(node, "lpar", None)
    pos = ctx.range(lpar[0] if lpar else node).start
    line, column = ctx.position(pos.line, pos.column)
    return Position(line, column + 1)


def node_end(ctx: Context, node: cst.CSTNode) -> Position:
    """End of ``node``, after its closing parentheses if it has any."""
    rpar = getattr(node, "rpar", None)
    pos = ctx.range(rpar[-1] if rpar else node).end
    line, column = ctx.position(pos.line, pos.column, end=True)
    return Position(line, column + 1)


def replace(ctx: Context, node: cst.CSTNode, content: str) -> Edit:
    """Replace ``node`` with its parentheses."""
    return Edit(node_start(ctx, node), node_end(ctx, node), content, old=ctx.code(node))


def replace_token(ctx: Context, node: cst.CSTNode, content: str) -> Edit:
    """Replace ``node`` inside its parentheses (and the comments there): the smallest edit."""
    pos = ctx.range(node)
    line, column = ctx.position(pos.start.line, pos.start.column)
    end_line, end_column = ctx.position(pos.end.line, pos.end.column, end=True)
    bare = node.with_changes(lpar=(), rpar=()) if getattr(node, "lpar", None) else node
    return Edit(Position(line, column + 1), Position(end_line, end_column + 1), content,
                old=ctx.module.code_for_node(bare))


def insert_after(ctx: Context, node: cst.CSTNode, content: str) -> Edit:
    end = node_end(ctx, node)
    return Edit(end, end, content, old="", before=ctx.code(node)[-40:])


@dataclass(frozen=True)
class Probe:
    """A snippet `devlint verify` runs in a fresh interpreter with ``torch`` imported and ``ACCEL`` set to
    the target's accelerator ("cuda", "mps") or None. It fails by raising; it may set ``RESULT`` (a
    JSON-able value) for :attr:`judge` to read.

    ``expect``: a regex on "ExceptionType: message" that counts as the bug reproduced.
    ``needs``: "accelerator" (GPU evidence must be placed on one) or "cuda" (only observable with CUDA).
    ``isolated``: the probe must run alone in its process (it initialises CUDA).
    ``judge``: for probes that observe an effect rather than an error: a function of RESULT returning
    (verdict, detail) or None to use the default (raised and matched -> confirmed).
    """

    before: str
    after: str | None  # None: the rule has no fix to check
    expect: str
    needs: str | None = None
    isolated: bool = False
    judge: object = None
    note: str = ""  # what part of the finding the probe reproduces


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

    # The byte-level pre-filter: a file whose raw bytes do not match cannot produce this rule's findings,
    # so it is not parsed for it. None: always parse. Keep it in step with check() (a test compares
    # findings with and without the pre-filter over every fixture).
    triggers: ClassVar["re.Pattern[bytes] | None"] = None

    def screen(self, index: AstIndex) -> bool:
        """The second pre-filter stage, on CPython's ``ast`` (devlint/screen.py): False only when this file
        has no site where :meth:`check` could report. True: parse with LibCST and check."""
        return True

    # Evidence examples that `devlint verify --rules` runs: the rule's claims about torch, checked live.
    EVIDENCE: ClassVar[tuple[dict, ...]] = ()

    def check(self, ctx: Context) -> Iterable[Finding]:
        raise NotImplementedError

    @classmethod
    def probe(cls, evidence: dict) -> "Probe | None":
        """The program that reproduces a finding from its evidence, and the same after the fix."""
        return None

    def finding(self, ctx: Context, node: cst.CSTNode, message: str, fix: Fix | None = None,
                evidence: dict | None = None) -> Finding:
        return Finding(
            code=self.code,
            message=message,
            start=node_start(ctx, node),
            end=node_end(ctx, node),
            fix=fix,
            path=ctx.path,
            name=self.name,
            evidence=evidence,
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
