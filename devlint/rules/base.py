"""What a rule is. A rule knows nothing about files, output or the CLI.

A rule is one module under ``devlint/rules/``: a :class:`Rule` subclass with its detection (:meth:`check`),
messages and fixes, its reference page (the ``doc_*`` sections), and its examples (``VALID`` / ``INVALID``,
as Fixit's rules carry them), which drive its tests, the page's "Example" / "Use instead" and the
pre-filter's differential test. What ``devlint verify`` runs for a finding lives apart, in
``devlint/probes/<code>.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from devlint.context import Context
from devlint.diagnostics import Edit, Evidence, Finding, Fix, FixAvailability, Position
from devlint.lazy import LazyModule

if TYPE_CHECKING:
    import libcst as cst

    from devlint.screen import AstIndex
else:
    cst = LazyModule("libcst", globals(), "cst")


class Trigger(Protocol):
    def search(self, data: bytes) -> object: ...


@dataclass(frozen=True)
class Valid:
    """A module the rule must not report."""

    code: str


@dataclass(frozen=True)
class Invalid:
    """A module the rule must report, and its text after ``--fix --unsafe-fixes`` with this rule alone
    (``fixed``: None when there is no fix). ``doc``: the example on the rule's page; ``note``: what the
    page says under "Use instead" (for a rule with no fix, the page shows ``use_instead``)."""

    code: str
    fixed: str | None = None
    doc: bool = False
    use_instead: str | None = None


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


_FIX_WORDS = {
    FixAvailability.ALWAYS: "Always available",
    FixAvailability.SOMETIMES: "Sometimes available",
    FixAvailability.NONE: "Not available",
}


class Rule:
    """One rule: subclass, set the class attributes, implement :meth:`check`.

    Modules under ``devlint/rules/`` are imported automatically and every ``Rule`` subclass with a
    ``code`` is registered (devlint/rules/__init__.py): the one list of rules the CLI, the reports, the
    docs and the tests iterate.
    """

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""  # kebab-case, like ruff's rule names
    summary: ClassVar[str] = ""  # one line for `devlint rules`
    fix_availability: ClassVar[FixAvailability] = FixAvailability.NONE
    evidence_type: ClassVar[type[Evidence]] = Evidence  # what a finding carries for `devlint verify`

    # The rule's page (rules/CODE.md, `devlint rule CODE`), in ruff's sections. Markdown.
    doc_what: ClassVar[str] = ""  # What it does
    doc_why: ClassVar[str] = ""  # Why is this bad?
    doc_use_instead: ClassVar[str] = ""  # after the "Use instead" example: what the fix does
    doc_fix_safety: ClassVar[str] = ""
    doc_known_problems: ClassVar[str] = ""
    doc_options: ClassVar[str] = ""
    doc_references: ClassVar[str] = ""
    doc_notebooks: ClassVar[str] = ""

    VALID: ClassVar[tuple[Valid, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()

    # The byte-level pre-filter: a file whose raw bytes do not match cannot produce this rule's findings,
    # so it is not parsed for it. None: always parse. Built from the device model (devices.py).
    triggers: ClassVar[Trigger | re.Pattern[bytes] | None] = None

    def screen(self, index: AstIndex) -> bool:
        """The second pre-filter stage, on CPython's ``ast`` (devlint/screen.py): False only when this file
        has no site where :meth:`check` could report. True: parse with LibCST and check."""
        return True

    def check(self, ctx: Context) -> Iterable[Finding]:
        raise NotImplementedError

    def finding(self, ctx: Context, node: cst.CSTNode, message: str, fix: Fix | None = None,
                evidence: Evidence | None = None) -> Finding:
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
    def doc_example(cls) -> Invalid:
        """The example the page shows: the INVALID marked ``doc=True``."""
        marked = [example for example in cls.INVALID if example.doc]
        if len(marked) != 1:
            raise ValueError(f"{cls.code}: exactly one INVALID example must be marked doc=True")
        return marked[0]

    @classmethod
    def page(cls) -> str:
        """The rule's reference page, as printed by ``devlint rule CODE`` and kept in rules/CODE.md."""
        example = cls.doc_example()
        instead = example.fixed if example.fixed is not None else example.use_instead
        sections = [
            ("What it does", cls.doc_what),
            ("Why is this bad?", cls.doc_why),
            ("Example", f"```python\n{example.code.rstrip()}\n```"),
            ("Use instead", f"```python\n{(instead or '').rstrip()}\n```\n\n{cls.doc_use_instead.strip()}"),
            ("Fix safety", cls.doc_fix_safety),
            ("Known problems", cls.doc_known_problems),
            ("Options", cls.doc_options),
            ("References", cls.doc_references),
            ("Notebook behaviour", cls.doc_notebooks),
        ]
        body = "".join(f"## {title}\n{text.strip()}\n\n" for title, text in sections)
        return (
            f"# {cls.code}: {cls.name}\n\n"
            f"{cls.summary}\n\n"
            f"Fix: {_FIX_WORDS[cls.fix_availability]}.\n\n"
            f"{body.rstrip()}\n"
        )


PAGE_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Known problems",
                 "Options", "References", "Notebook behaviour")
