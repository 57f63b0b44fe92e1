"""Lint and fix one source text: parse once, run every rule on the shared context, filter, apply edits."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable


from devlint.context import Context
from devlint.lazy import LazyModule
from devlint.noqa import is_suppressed, noqa_lines
from devlint.rules.base import Applicability, Finding, Fix, Position, Rule
from devlint.source import split_lines

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

SYNTAX_ERROR = "E999"
IO_ERROR = "E902"


@dataclass
class LintResult:
    findings: list[Finding] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)  # "rule CODE crashed: ..." (an internal error)


def _syntax_finding(path: str, exc: Exception) -> Finding:
    line = getattr(exc, "raw_line", None) or getattr(exc, "lineno", None) or 1
    col = getattr(exc, "raw_column", None)
    col = (col + 1) if isinstance(col, int) else (getattr(exc, "offset", None) or 1)
    message = getattr(exc, "message", None) or str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    pos = Position(int(line), int(col))
    return Finding(SYNTAX_ERROR, f"SyntaxError: {message}", pos, pos, path=path, name="syntax-error")


def lint_text(text: str, path: str, rules: Iterable[Rule], noqa: bool = True) -> LintResult:
    result = LintResult()
    try:
        module = cst.parse_module(text)
    except Exception as exc:  # ParserSyntaxError, and anything else the parser may raise on odd input
        result.findings.append(_syntax_finding(path, exc))
        return result
    ctx = Context(module, path)
    for rule in rules:
        try:
            result.findings.extend(rule.check(ctx))
        except Exception as exc:  # one rule failing must not stop the others
            where = traceback.extract_tb(exc.__traceback__)[-1]
            result.crashes.append(
                f"{path}: rule {rule.code} crashed: {type(exc).__name__}: {exc} "
                f"({where.filename.rsplit('/', 1)[-1]}:{where.lineno})"
            )
    if noqa and result.findings:
        suppress = noqa_lines(text)
        if suppress:
            result.findings = [
                f for f in result.findings
                if not is_suppressed(suppress, f.code, (f.start.row, f.end.row))
            ]
    result.findings.sort(key=lambda f: (f.start, f.code))
    return result


# --- applying edits ---------------------------------------------------------------------------
class _Offsets:
    def __init__(self, text: str) -> None:
        self.starts = [0]
        for line in split_lines(text):
            self.starts.append(self.starts[-1] + len(line))
        self.size = len(text)

    def __call__(self, pos: Position) -> int:
        if pos.row - 1 >= len(self.starts):
            return self.size
        return min(self.starts[pos.row - 1] + pos.column - 1, self.size)


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    if a[0] == a[1] and b[0] == b[1]:
        return a[0] == b[0]  # two insertions at one point: order would be ambiguous
    return a[0] < b[1] and b[0] < a[1] or (a[0] == a[1] and b[0] < a[0] < b[1]) or (b[0] == b[1] and a[0] < b[0] < a[1])


def _choose(text: str, fixes: list[Fix]) -> list[tuple[int, list[tuple[int, int, str]]]]:
    """Greedy, in source order: each fix whose edits overlap no earlier chosen fix's edits.
    Returns (index into ``fixes``, [(start offset, end offset, content)]) per chosen fix."""
    offsets = _Offsets(text)
    taken: list[tuple[int, int]] = []
    chosen = []
    order = sorted(range(len(fixes)), key=lambda i: min(e.start for e in fixes[i].edits))
    for i in order:
        spans = [(offsets(e.start), offsets(e.end)) for e in fixes[i].edits]
        if any(_overlaps(s, t) for s in spans for t in taken) or any(
            _overlaps(s, t) for j, s in enumerate(spans) for t in spans[j + 1:]
        ):
            continue
        taken.extend(spans)
        chosen.append((i, [(s, e, edit.content) for (s, e), edit in zip(spans, fixes[i].edits)]))
    return chosen


def apply_fixes(text: str, fixes: list[Fix]) -> tuple[str, list[int]]:
    """Apply every fix whose edits do not overlap an earlier one; return the text and the indices applied."""
    chosen = _choose(text, fixes)
    edits = sorted((edit for _, group in chosen for edit in group), key=lambda c: (c[0], c[1]), reverse=True)
    for start, end, content in edits:
        text = text[:start] + content + text[end:]
    return text, sorted(i for i, _ in chosen)


def _parses(text: str) -> bool:
    try:
        cst.parse_module(text)
    except Exception:
        return False
    return True


@dataclass
class FixResult:
    text: str
    fixed: list[Finding]
    remaining: LintResult


def wanted(fix: Fix | None, unsafe: bool) -> bool:
    return fix is not None and (fix.applicability is Applicability.SAFE or unsafe)


def fix_text(text: str, path: str, rules: list[Rule], unsafe: bool, max_passes: int = 10) -> FixResult:
    """Lint and apply fixes until nothing more applies; never returns text that does not parse."""
    fixed: list[Finding] = []
    result = lint_text(text, path, rules)
    for _ in range(max_passes):
        candidates = [f for f in result.findings if wanted(f.fix, unsafe)]
        if not candidates or result.crashes:
            break
        new_text, applied = apply_fixes(text, [f.fix for f in candidates])  # type: ignore[misc]
        if applied and not _parses(new_text):
            # drop the fixes that break the code on their own; keep the rest
            candidates = [f for f in candidates if _parses(apply_fixes(text, [f.fix])[0])]  # type: ignore[list-item]
            new_text, applied = apply_fixes(text, [f.fix for f in candidates])  # type: ignore[misc]
            if applied and not _parses(new_text):
                break
        if not applied or new_text == text:
            break
        fixed.extend(candidates[i] for i in applied)
        text = new_text
        result = lint_text(text, path, rules)
    return FixResult(text, fixed, result)
