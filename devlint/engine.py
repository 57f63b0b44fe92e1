"""Lint and fix one source text: parse once, run every rule on the shared context, filter, apply edits."""

from __future__ import annotations

import bisect
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from devlint import compat
from devlint.context import DEFAULT_SETTINGS, Context, Settings
from devlint.diagnostics import INTERNAL_ERROR, SYNTAX_ERROR, Applicability, Edit, Finding, Fix, Position
from devlint.lazy import LazyModule
from devlint.noqa import is_suppressed, noqa_lines
from devlint.rules.base import Rule
from devlint.source import split_lines

if TYPE_CHECKING:
    import libcst as cst

    from devlint.project import Project
else:
    cst = LazyModule("libcst", globals(), "cst")


T = TypeVar("T")


@dataclass
class LintResult:
    findings: list[Finding] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)  # "rule CODE crashed: ..." (an internal error)


def syntax_finding(path: str, exc: Exception) -> Finding:
    """E999 for a parser's exception (LibCST's or CPython's), at the position it names."""
    line = getattr(exc, "raw_line", None) or getattr(exc, "lineno", None) or 1
    col = getattr(exc, "raw_column", None)
    col = (col + 1) if isinstance(col, int) else (getattr(exc, "offset", None) or 1)
    if isinstance(exc, SyntaxError) and exc.msg:  # CPython's (a notebook cell's check): without "(file, line)"
        return SYNTAX_ERROR.at(path, f"SyntaxError: {exc.msg}", int(line), int(col))
    message = getattr(exc, "message", None) or str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return SYNTAX_ERROR.at(path, f"SyntaxError: {message}", int(line), int(col))


def _crash(path: str, rule: Rule, exc: BaseException) -> str:
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})" if where else ""
    return f"{path}: rule {rule.code} crashed: {type(exc).__name__}: {exc}{at}"


def _lint(text: str, path: str, rules: list[Rule], project: Project | None,
          settings: Settings) -> tuple[LintResult, bool]:
    """One lint; the flag says a RecursionError cut something short (worth a deeper stack)."""
    result = LintResult()
    deep = False
    try:
        module = cst.parse_module(text)
    except RecursionError:
        return result, True
    except Exception as exc:  # noqa: BLE001 - ParserSyntaxError, and anything else the parser may raise on odd input
        result.findings.append(syntax_finding(path, exc))
        return result, False
    ctx = Context(module, path, text, settings)
    if project is not None:
        project.adopt(ctx)
    for rule in rules:
        try:
            result.findings.extend(rule.check(ctx))
        except RecursionError as exc:
            deep = True
            result.crashes.append(_crash(path, rule, exc))
        except Exception as exc:  # noqa: BLE001 - one rule failing must not stop the others
            result.crashes.append(_crash(path, rule, exc))
    if any(f.fix is not None for f in result.findings):
        exact = _positions_exact(ctx)
        deep = deep or exact is None
        if not exact:  # positions could not be mapped onto the text: no edit may be trusted
            for finding in result.findings:
                finding.fix = None
    return result, deep


def _positions_exact(ctx: Context) -> bool | None:
    """Can positions be mapped onto the text as read (None: too deep to tell)?"""
    try:
        return ctx.exact
    except RecursionError:
        return None


def _in_deep_stack(func: Callable[[], T]) -> T:
    """Run ``func`` in a thread with a 512 MiB stack and a recursion limit to match: deeply nested
    expressions (a 3,000-term ``a + b + ...``) recurse in LibCST and in the analyses."""
    value: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            value.append(func())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            error.append(exc)

    old_size = threading.stack_size()
    old_limit = sys.getrecursionlimit()
    threading.stack_size(DEEP_STACK)
    sys.setrecursionlimit(max(old_limit, DEEP_RECURSION))
    try:
        thread = threading.Thread(target=target, name="devlint-deep")
        thread.start()
        thread.join()
    finally:
        threading.stack_size(old_size)
        sys.setrecursionlimit(old_limit)
    if error:
        raise error[0]
    return value[0]


DEEP_STACK = 512 * 1024 * 1024
DEEP_RECURSION = 200_000


def lint_text(text: str, path: str, rules: Iterable[Rule], noqa: bool = True,
              project: Project | None = None, settings: Settings = DEFAULT_SETTINGS) -> LintResult:
    """Lint one module. ``project``: the run's files, for the analyses that look across them; ``settings``:
    what the configuration tells the rules."""
    rules = list(rules)
    result, deep = _lint(text, path, rules, project, settings)
    if deep:  # retry with room to recurse; if even that is not enough, say so
        try:
            result, deep = _in_deep_stack(lambda: _lint(text, path, rules, project, settings))
        except RecursionError:
            result, deep = LintResult(), True
        if deep and not result.crashes:
            result.crashes.append(f"{path}: too deeply nested to analyse (RecursionError)")
    if noqa and result.findings:
        suppress = noqa_lines(text)
        if suppress:
            result.findings = [
                f for f in result.findings
                if not is_suppressed(suppress, f.code, (f.start.row, f.end.row))
            ]
    # an internal error is a diagnostic of its own, in every output format (and never suppressed)
    result.findings.extend(
        INTERNAL_ERROR.at(path, crash.split(": ", 1)[1] + " (an internal error; please report it)")
        for crash in result.crashes
    )
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
    return ((a[0] < b[1] and b[0] < a[1])
            or (a[0] == a[1] and b[0] < a[0] < b[1])
            or (b[0] == b[1] and a[0] < b[0] < a[1]))


def _overlaps_taken(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    """Does ``span`` overlap one of ``taken`` (sorted, pairwise non-overlapping)? Only the spans that start
    between the one before ``span``'s start and ``span``'s end can: a binary search, not a scan."""
    lo = bisect.bisect_left(taken, (span[0], span[0]))
    hi = bisect.bisect_right(taken, (span[1], span[1]))
    return any(_overlaps(span, taken[k]) for k in range(max(0, lo - 1), min(len(taken), hi + 1)))


def _choose(text: str, fixes: list[Fix]) -> list[tuple[int, list[tuple[int, int, str]]]]:
    """Greedy, in source order: each fix whose edits overlap no earlier chosen fix's edits.
    Returns (index into ``fixes``, [(start offset, end offset, content)]) per chosen fix."""
    offsets = _Offsets(text)
    taken: list[tuple[int, int]] = []  # the chosen spans, sorted: they never overlap, so their ends are sorted too
    chosen = []
    order = sorted(range(len(fixes)), key=lambda i: min(e.start for e in fixes[i].edits))
    for i in order:
        spans = [(offsets(e.start), offsets(e.end)) for e in fixes[i].edits]
        if not all(_anchored(text, s, e) for s, e in zip(spans, fixes[i].edits, strict=True)):
            continue  # the edit would not land on the code it was built for
        if any(_overlaps_taken(s, taken) for s in spans) or any(
            _overlaps(s, t) for j, s in enumerate(spans) for t in spans[j + 1:]
        ):
            continue
        for span in spans:
            bisect.insort(taken, span)
        chosen.append((i, [(s, e, edit.content) for (s, e), edit in zip(spans, fixes[i].edits, strict=True)]))
    return chosen


def _anchored(text: str, span: tuple[int, int], edit: Edit) -> bool:
    start, end = span
    if edit.old is not None and text[start:end] != edit.old:
        return False
    return edit.before is None or text[max(0, start - len(edit.before)):start] == edit.before


def apply_fixes(text: str, fixes: list[Fix]) -> tuple[str, list[int]]:
    """Apply every fix whose edits do not overlap an earlier one; return the text and the indices applied."""
    chosen = _choose(text, fixes)
    # In source order (stable: insertions at one point keep their order, as one by one from the end did),
    # joined once: rebuilding the text per edit was quadratic in the number of fixes.
    edits = sorted((edit for _, group in chosen for edit in group), key=lambda c: (c[0], c[1]))
    parts: list[str] = []
    done = 0
    for start, end, content in edits:
        parts.append(text[done:start])
        parts.append(content)
        done = end
    parts.append(text[done:])
    return "".join(parts), sorted(i for i, _ in chosen)


def _parses(text: str, original_error: str | None) -> bool:
    """Does ``text`` parse, with LibCST and on the oldest Python devlint supports (unless the original
    text already did not parse there: then it is judged by LibCST alone)?"""
    try:
        module = cst.parse_module(text)
    except Exception:  # noqa: BLE001 - whatever the parser raises, the text does not parse
        return False
    return original_error is not None or compat.syntax_error(text, module) is None


@dataclass
class FixResult:
    text: str
    fixed: list[Finding]
    remaining: LintResult


def wanted(fix: Fix | None, unsafe: bool) -> bool:
    return fix is not None and (fix.applicability is Applicability.SAFE or unsafe)


def fix_text(text: str, path: str, rules: list[Rule], unsafe: bool, max_passes: int = 10,
             project: Project | None = None, settings: Settings = DEFAULT_SETTINGS) -> FixResult:
    """Lint and apply fixes until nothing more applies; never returns text that does not parse (with
    LibCST and on Python 3.10). A finding whose fix could not be applied is returned without its fix, so
    nothing announces it as fixable."""
    fixed: list[Finding] = []
    result = lint_text(text, path, rules, project=project, settings=settings)
    original_error: list[str | None] = []  # computed once, when a fix is first checked

    def parses(candidate: str) -> bool:
        if not original_error:
            original_error.append(compat.syntax_error(text))
        return _parses(candidate, original_error[0])

    for _ in range(max_passes):
        # (finding, its fix) for each fix wanted
        candidates = [(f, f.fix) for f in result.findings if f.fix is not None and wanted(f.fix, unsafe)]
        if not candidates or result.crashes:
            break
        new_text, applied = apply_fixes(text, [fix for _, fix in candidates])
        if applied and not parses(new_text):
            # drop the fixes that break the code on their own; keep the rest
            candidates = [(f, fix) for f, fix in candidates if parses(apply_fixes(text, [fix])[0])]
            new_text, applied = apply_fixes(text, [fix for _, fix in candidates])
            if applied and not parses(new_text):
                break
        if not applied or new_text == text:
            break
        fixed.extend(candidates[i][0] for i in applied)
        text = new_text
        result = lint_text(text, path, rules, project=project, settings=settings)
    for finding in result.findings:
        if wanted(finding.fix, unsafe):
            finding.fix = None  # offered, but it would not apply (or not parse): not a fix to announce
    return FixResult(text, fixed, result)
