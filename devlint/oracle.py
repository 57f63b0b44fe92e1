"""The fix oracle: does ``--fix --unsafe-fixes`` leave a module that still works?

For one module text it runs the fixer (``fix_text(..., unsafe=True)`` with every rule) and checks:

- ``crash``: the fixer raised, or a rule crashed (``remaining.crashes``);
- ``grammar``: the fixed text does not parse on Python 3.10 (:func:`devlint.compat.syntax_error`) although
  the original did (a file that already needs a newer grammar is judged by LibCST's parser only);
- ``unbound-name``: a name access the fix added (the fixed module has more accesses of that name in that
  scope than the original) resolves to nothing (LibCST's ``ScopeProvider``), resolves to a local
  assignment that comes after it, or, for the torch module's name (``torch``, ``T`` in
  ``import torch as T``), to something other than an import (a parameter or local that shadows it);
- ``not-idempotent``: fixing the fixed text again changes it or applies a fix;
- ``offered-not-applied``: a finding left after fixing still carries an applicable fix (the fixer offers
  a fix it cannot apply).

Failures of the oracle itself (an exception in its own checks) are kept apart in ``oracle_errors``.
:func:`check` is the checking half, callable on any (original, fixed) pair; :func:`run` fixes and checks.
No torch, no pytest: the tests and ``bench/fix_oracle.py`` import this module.
"""

from __future__ import annotations

import difflib
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from devlint.context import DEFAULT_SETTINGS, Settings

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import Access, BaseAssignment, GlobalScope, Scope
    from libcst.metadata.scope_provider import LocalScope

    from devlint.rules.base import Rule

CRASH = "crash"
GRAMMAR = "grammar"
COMPILE = "compile-3.10"  # reported by bench/fix_oracle.py (a real python3.10), not here
UNBOUND = "unbound-name"
NOT_IDEMPOTENT = "not-idempotent"
OFFERED = "offered-not-applied"
ORACLE_ERROR = "oracle-error"
KINDS = (CRASH, GRAMMAR, COMPILE, UNBOUND, NOT_IDEMPOTENT, OFFERED, ORACLE_ERROR)

# bound in every module at run time, though not in ``builtins``
_MODULE_DUNDERS = frozenset({"__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__",
                             "__path__", "__builtins__", "__cached__", "__annotations__", "__dict__"})


@dataclass
class OracleResult:
    path: str
    fixes: int = 0  # findings whose fixes were applied
    changed: bool = False
    failures: list[str] = field(default_factory=list)  # "KIND: line N: message" (see kind_of)
    oracle_errors: list[str] = field(default_factory=list)
    fixed_text: str | None = None  # the fixer's output, where it changed the text

    @property
    def ok(self) -> bool:
        return not self.failures and not self.oracle_errors


def failure(kind: str, line: int | None, message: str) -> str:
    return f"{kind}: line {line}: {message}" if line else f"{kind}: {message}"


def kind_of(entry: str) -> str:
    return entry.split(":", 1)[0]


def line_of(entry: str) -> int | None:
    rest = entry.split(": ", 1)[1] if ": " in entry else ""
    if rest.startswith("line "):
        number = rest[5:].split(":", 1)[0]
        if number.isdigit():
            return int(number)
    return None


def default_rules() -> list[Rule]:
    from devlint.rules import all_rules, select_rules

    return select_rules(set(all_rules()))


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    last = f" ({frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{last}"


def run(text: str, path: str = "<string>", rules: list[Rule] | None = None,
        settings: Settings = DEFAULT_SETTINGS) -> OracleResult:
    """Fix ``text`` with every rule (unsafe fixes included) and check the outcome; ``settings``: what the
    rules are told (``device-fallback``)."""
    from devlint.engine import fix_text, wanted

    rules = default_rules() if rules is None else rules
    result = OracleResult(path)
    try:
        fixed = fix_text(text, path, rules, unsafe=True, settings=settings)
    except Exception as exc:  # noqa: BLE001 - the fixer must never raise
        result.failures.append(failure(CRASH, None, f"fix_text raised {_where(exc)}"))
        return result
    result.fixes = len(fixed.fixed)
    result.changed = fixed.text != text
    if result.changed:
        result.fixed_text = fixed.text
    for crash in fixed.remaining.crashes:
        result.failures.append(failure(CRASH, None, crash))
    for finding in fixed.remaining.findings:
        if finding.fix is not None and wanted(finding.fix, True):
            result.failures.append(failure(
                OFFERED, finding.start.row,
                f"{finding.code} fix offered but not applied ({finding.fix.message or finding.message})"))
    if result.changed or result.fixes:
        failures, errors = check(text, fixed.text, path, rules, settings=settings)
        result.failures += failures
        result.oracle_errors += errors
    return result


def check(original: str, fixed: str, path: str = "<string>", rules: list[Rule] | None = None,
          idempotence: bool = True, settings: Settings = DEFAULT_SETTINGS) -> tuple[list[str], list[str]]:
    """Check a fixer's output ``fixed`` against the ``original`` text: 3.10 grammar, bound names and (with
    ``idempotence``) that fixing it again changes nothing. Returns (failures, oracle errors)."""
    failures: list[str] = []
    errors: list[str] = []
    steps: list[tuple[str, Callable[[], list[str]]]] = [("grammar", lambda: _check_grammar(original, fixed))]
    if fixed != original:
        steps.append(("names", lambda: check_names(original, fixed)))
    if idempotence:
        steps.append(("idempotence", lambda: _check_idempotent(fixed, path, rules, settings)))
    for name, step in steps:
        try:
            failures += step()
        except Exception as exc:  # noqa: BLE001 - report, never crash the caller
            errors.append(f"{ORACLE_ERROR}: {name} check raised {_where(exc)}")
    return failures, errors


def _check_grammar(original: str, fixed: str) -> list[str]:
    import libcst as cst

    from devlint.compat import syntax_error

    if syntax_error(original) is None:
        why = syntax_error(fixed)
        if why is not None:
            return [failure(GRAMMAR, None, f"fixed text does not parse on Python 3.10: {why}")]
        return []
    try:
        cst.parse_module(original)
    except Exception:  # noqa: BLE001 - the original does not parse either: nothing to compare
        return []
    try:
        cst.parse_module(fixed)
    except Exception as exc:  # noqa: BLE001
        return [failure(GRAMMAR, None, f"fixed text does not parse (LibCST): {str(exc).splitlines()[0]}")]
    return []


def _check_idempotent(fixed: str, path: str, rules: list[Rule] | None, settings: Settings) -> list[str]:
    from devlint.engine import fix_text

    rules = default_rules() if rules is None else rules
    try:
        again = fix_text(fixed, path, rules, unsafe=True, settings=settings)
    except Exception as exc:  # noqa: BLE001
        return [failure(CRASH, None, f"fix_text raised on the fixed text: {_where(exc)}")]
    out = []
    if again.text != fixed or again.fixed:
        lines = sorted({f.start.row for f in again.fixed})
        what = ", ".join(f"{f.code} at line {f.start.row}" for f in again.fixed) or "text changed"
        out.append(failure(NOT_IDEMPOTENT, lines[0] if lines else _first_changed_line(fixed, again.text),
                           f"fixing the fixed text again applies more: {what}"))
    return out


def _first_changed_line(a: str, b: str) -> int | None:
    old, new = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(old, new, strict=False), 1):
        if x != y:
            return i
    return min(len(old), len(new)) + 1 if len(old) != len(new) else None


# --- names -----------------------------------------------------------------------------------------
_ScopeKey = tuple[tuple[str, int], ...]  # (label, ordinal among the siblings with that label), module down
_Start = Callable[["cst.CSTNode"], tuple[int, int]]  # a node's (line, column)


@dataclass
class _Use:
    name: str
    line: int
    column: int
    problem: tuple[str, str] | None  # (kind, message); None: fine


def torch_names(module: cst.CSTNode) -> set[str]:
    """The names an ``import torch`` / ``import torch.x`` / ``import torch as T`` binds, anywhere."""
    import libcst as cst

    names: set[str] = set()
    stack = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Import):
            for alias in node.names:
                dotted = _dotted(alias.name)
                if alias.asname is not None:
                    if dotted == "torch" and isinstance(alias.asname.name, cst.Name):
                        names.add(alias.asname.name.value)
                elif dotted.split(".")[0] == "torch":
                    names.add("torch")
            continue
        stack.extend(node.children)
    return names


def _dotted(node: cst.CSTNode) -> str:
    import libcst as cst

    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _scope_label(scope: Scope) -> str:
    from libcst.metadata import GlobalScope

    if isinstance(scope, GlobalScope):
        return "module"
    node = getattr(scope, "node", None)
    name = getattr(getattr(node, "name", None), "value", None)
    return f"{type(scope).__name__}:{type(node).__name__}:{name or ''}"


def _uses(text: str, extra_torch: Iterable[str] = ()) -> tuple[dict[tuple[_ScopeKey, str], list[_Use]], set[str]]:
    """Every name access, keyed by (scope key, name), with what is wrong with it (if anything)."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider

    module = cst.parse_module(text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    wrapper.resolve_many([ScopeProvider, PositionProvider])  # one pass; resolve() below reads the results
    positions = wrapper.resolve(PositionProvider)
    torch = torch_names(module) | set(extra_torch)

    def start(node: cst.CSTNode) -> tuple[int, int]:
        pos = positions.get(node)
        return (pos.start.line, pos.start.column) if pos is not None else (0, 0)

    ordered = _ordered_scopes(wrapper.resolve(ScopeProvider).values(), start)
    keys = _scope_keys(ordered)
    uses: dict[tuple[_ScopeKey, str], list[_Use]] = {}
    for s in ordered:
        for access in s.accesses:
            name = _accessed_name(access.node)
            if not name:
                continue  # a string annotation
            line, column = start(access.node)
            uses.setdefault((keys[id(s)], name), []).append(
                _Use(name, line, column, _problem(access, name, torch, start)))
    return uses, torch


def _ordered_scopes(found: Iterable[Scope | None], start: _Start) -> list[GlobalScope | LocalScope]:
    """The scopes that hold code (the module's and the local ones, with every enclosing scope), parents first
    (a def's type-parameter scope and its body scope share the def node), then in source order."""
    from libcst.metadata import GlobalScope
    from libcst.metadata.scope_provider import LocalScope

    scopes = {s for s in found if s is not None}
    for s in list(scopes):
        while s.parent is not s and not isinstance(s, GlobalScope):
            s = s.parent
            scopes.add(s)
    kept = {s for s in scopes if isinstance(s, (GlobalScope, LocalScope))}

    def depth(s: Scope) -> int:
        n = 0
        while not isinstance(s, GlobalScope) and s.parent is not s:
            s, n = s.parent, n + 1
        return n

    return sorted(kept, key=lambda s: ((0, 0) if isinstance(s, GlobalScope) else start(s.node), depth(s)))


def _scope_keys(ordered: list[GlobalScope | LocalScope]) -> dict[int, _ScopeKey]:
    """A key per scope (by id) that survives edits elsewhere: the labels (kind, name) from the module down,
    and the ordinal among siblings with the same label, in source order (``ordered``: parents first)."""
    from libcst.metadata import GlobalScope

    keys: dict[int, _ScopeKey] = {}
    counts: dict[tuple[_ScopeKey, str], int] = {}
    for s in ordered:
        parent_key: _ScopeKey = () if isinstance(s, GlobalScope) else keys.get(id(s.parent), (("?", 0),))
        label = _scope_label(s)
        n = counts.get((parent_key, label), 0)
        counts[(parent_key, label)] = n + 1
        keys[id(s)] = (*parent_key, (label, n))
    return keys


def _accessed_name(node: cst.CSTNode) -> str:
    """The name an access reads (``a`` of ``a.b.c``); "" for a string annotation."""
    import libcst as cst

    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return _dotted(node).split(".")[0]
    return ""


def _problem(access: Access, name: str, torch: set[str], start: _Start) -> tuple[str, str] | None:
    from libcst.metadata import Assignment, ComprehensionScope, FunctionScope, ImportAssignment

    referents = list(access.referents)
    if not referents:
        if name in _MODULE_DUNDERS:
            return None
        return "unbound", f"`{name}` is not bound here"
    if name in torch and not any(isinstance(a, ImportAssignment) for a in referents):
        kinds = ", ".join(sorted({_assignment_kind(a) for a in referents}))
        return "shadowed", f"`{name}` here is not the torch module: it resolves to {kinds} that shadows the import"
    # a function's local is unbound until assigned: LibCST falls back to the enclosing scopes when every
    # local assignment comes later, Python raises UnboundLocalError
    where = access.scope
    while isinstance(where, ComprehensionScope):
        where = where.parent
    if isinstance(where, FunctionScope):
        local = [a.node for a in where.assignments[name] if a.scope is where and isinstance(a, Assignment)]
        if local and not any(start(node) < start(access.node) for node in local):
            first = min(start(node) for node in local)[0]
            return "before-assignment", f"`{name}` is used before its assignment on line {first}"
    return None


def _assignment_kind(assignment: BaseAssignment) -> str:
    import libcst as cst

    node = getattr(assignment, "node", None)
    if isinstance(node, cst.Param):
        return "a parameter"
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return f"a {'function' if isinstance(node, cst.FunctionDef) else 'class'} definition"
    if node is None:
        return "a builtin"
    return "a local assignment"


def check_names(original: str, fixed: str) -> list[str]:
    """Names the fix added must be bound where they are used (see the module docstring)."""
    before, torch = _uses(original)
    after, _ = _uses(fixed, extra_torch=torch)
    changed = _changed_lines(original, fixed)
    out = []
    for key, uses in sorted(after.items(), key=lambda kv: (kv[1][0].line, kv[0][1])):
        old = before.get(key, [])
        if len(uses) > len(old):
            out += _added_problems(old, uses, changed)
    return sorted(out, key=lambda s: (line_of(s) or 0, s))


def _added_problems(old: list[_Use], uses: list[_Use], changed: set[int]) -> list[str]:
    """Failures for the problems of one name in one scope that ``uses`` (after the fix) has more of than
    ``old`` (before it), the excess attributed to the uses on ``changed`` lines first."""
    bad_old: dict[str, int] = {}
    for u in old:
        if u.problem is not None:
            bad_old[u.problem[0]] = bad_old.get(u.problem[0], 0) + 1
    by_kind: dict[str, list[tuple[_Use, str]]] = {}
    for u in uses:
        if u.problem is not None:
            kind, message = u.problem
            by_kind.setdefault(kind, []).append((u, message))
    out = []
    for kind, bad in by_kind.items():
        excess = len(bad) - bad_old.get(kind, 0)
        if excess <= 0:
            continue
        bad.sort(key=lambda um: (um[0].line not in changed, um[0].line, um[0].column))  # the added ones first
        for u, message in bad[:excess]:
            out.append(failure(UNBOUND, u.line, f"{message} (added by a fix)"))
    return out


def _changed_lines(original: str, fixed: str) -> set[int]:
    """Lines of ``fixed`` (1-based) that are not lines of ``original``."""
    a, b = original.splitlines(), fixed.splitlines()
    out: set[int] = set()
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.update(range(j1 + 1, j2 + 1))
    return out
