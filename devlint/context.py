"""One parsed module and what every rule asks of it: parents, import aliases, positions.

The module is traversed once, here. Import aliases are resolved from the import statements themselves
(``import torch as T``, ``from torch import device as Device``, ``from os import environ``): LibCST's
QualifiedNameProvider gives the same answer for these but costs several times a parse, and devlint must
stay fast on large trees. Positions come from LibCST's PositionProvider, resolved only when a rule
reports something (devlint/positions.py: the same positions, counted more cheaply).
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar, cast

from devlint.lazy import LazyModule

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import CodeRange

    from devlint.positions import Positions
    from devlint.project import Project
else:
    cst = LazyModule("libcst", globals(), "cst")

N = TypeVar("N", bound="cst.CSTNode")
T = TypeVar("T")


def dotted_name(node: cst.BaseExpression | None) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def decorator_target(decorator: cst.Decorator) -> cst.BaseExpression:
    """What a decorator names: ``pytest.fixture`` of ``@pytest.fixture`` and of ``@pytest.fixture(scope=...)``."""
    expr = decorator.decorator
    return expr.func if isinstance(expr, cst.Call) else expr


def own_method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    """The method ``name`` defined in the body of ``cls`` itself (not inherited), or None."""
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)


def _import_target(node: cst.BaseExpression) -> str:
    return dotted_name(node) or ""


# Leaves and whitespace no rule asks about: not indexed, not descended into.
_SKIP_NAMES = (
    "SimpleWhitespace", "ParenthesizedWhitespace", "TrailingWhitespace", "EmptyLine", "Newline", "Comment",
    "Comma", "Dot", "LeftParen", "RightParen", "LeftSquareBracket", "RightSquareBracket", "LeftCurlyBrace",
    "RightCurlyBrace", "Colon", "Semicolon", "AssignEqual", "BaseBinaryOp", "BaseBooleanOp", "BaseCompOp",
    "BaseUnaryOp", "BaseAugOp", "ImportStar",
)
_SKIP: tuple[type, ...] = ()  # the classes, resolved when LibCST is first used (see children())
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return names


def _index(ctx: Context, module: cst.Module) -> None:
    """One walk over the tree, straight through the dataclass fields (several times faster than
    LibCST's visitor dispatch): parents, source order, nodes by type, import aliases."""
    parents, order, by_type = ctx.parents, ctx.order, ctx.by_type
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(module, None)]
    while stack:
        node, parent = stack.pop()
        if parent is not None:
            parents[node] = parent
        order[node] = len(order)
        kind = type(node)
        by_type[kind].append(node)
        if kind is cst.Import or kind is cst.ImportFrom:
            _record_import(ctx, node)
        for child in reversed(children(node)):
            stack.append((child, node))


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node below it that rules care about (:func:`children`), depth first."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(children(cur))


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The child nodes rules care about (no whitespace or punctuation), in field order."""
    global _SKIP
    if not _SKIP:
        _SKIP = tuple(getattr(cst, name) for name in _SKIP_NAMES)
    out: list[cst.CSTNode] = []
    kept = _KEPT
    for name in _fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for item in value:
                item_kind = type(item)
                keep = kept.get(item_kind)
                if keep is None:
                    keep = kept[item_kind] = _kept(item_kind)
                if keep:
                    out.append(item)
            continue
        keep = kept.get(kind)
        if keep is None:
            keep = kept[kind] = _kept(kind)
        if keep:
            out.append(value)
    return out


# node class -> is it a child rules care about (a LibCST node, not whitespace or punctuation)? Decided once per
# class: isinstance against LibCST's abstract classes goes through ABCMeta, millions of times a run.
_KEPT: dict[type, bool] = {}


def _kept(kind: type) -> bool:
    return issubclass(kind, cst.CSTNode) and not issubclass(kind, _SKIP)


def _record_import(ctx: Context, node: cst.CSTNode) -> None:
    """Record the aliases and modules an ``Import`` or ``ImportFrom`` binds."""
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = _import_target(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                ctx.aliases[alias.asname.name.value] = full
            else:
                root = full.split(".")[0]
                ctx.aliases[root] = root
            ctx.imported_modules.add(full)
    if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar) and node.module is not None \
            and ctx.parent(ctx.parent(node)) is ctx.module:
        # from utils import *: what it binds is the project's to tell (Project.adopt)
        ctx.star_imports.append("." * len(node.relative) + _import_target(node.module))
    if isinstance(node, cst.ImportFrom) and node.relative:
        # from .env import init_env / from .. import utils: the project resolves these (project.py)
        level = len(node.relative)
        module = _import_target(node.module) if node.module is not None else ""
        for bound, name in _from_names(node):
            ctx.relative_imports[bound] = (level, module, name)
    elif isinstance(node, cst.ImportFrom) and node.module is not None:
        module = _import_target(node.module)
        ctx.imported_modules.add(module)
        for bound, name in _from_names(node):
            ctx.aliases[bound] = f"{module}.{name}"


def _from_names(node: cst.ImportFrom) -> list[tuple[str, str]]:
    """(bound name, imported name) of ``from m import a, b as c`` (none for ``import *``)."""
    if isinstance(node.names, cst.ImportStar):
        return []
    out = []
    for alias in node.names:
        name = _import_target(alias.name)
        bound = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) \
            else name
        out.append((bound, name))
    return out


# What ``device-fallback`` may say: the device choice the fixes write (devlint/rules/fixes.py).
DEVICE_FALLBACKS = ("cuda-cpu", "cuda-mps-cpu", "accelerator")


@dataclasses.dataclass(frozen=True)
class Settings:
    """What the configuration tells the rules (``[tool.devlint]`` and the command line). Part of the results
    cache's key (:meth:`key`): a setting that changes a finding or its fix must be a field here."""

    device_fallback: str | None = None  # one of DEVICE_FALLBACKS; None: the file decides (fixes.fallback_expr)

    def key(self) -> str:
        return ";".join(f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self))


DEFAULT_SETTINGS = Settings()


class Context:
    """Everything rules may ask about one module."""

    def __init__(self, module: cst.Module, path: str = "<string>", text: str | None = None,
                 settings: Settings = DEFAULT_SETTINGS) -> None:
        self.module = module
        self.path = path
        self.settings = settings
        self.text = text  # the source as read (LibCST's regenerated code may differ: see position())
        self._offset_map: list[int] | None = None
        self._aligned: bool | None = None
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.order: dict[cst.CSTNode, int] = {}  # pre-order index: source order
        self.by_type: dict[type, list[cst.CSTNode]] = defaultdict(list)
        self.aliases: dict[str, str] = {}  # bound name -> qualified name
        self.imported_modules: set[str] = set()
        self.relative_imports: dict[str, tuple[int, str, str]] = {}  # bound name -> (level, module, name)
        self.star_imports: list[str] = []  # modules the top level imports * from (leading dots as written)
        self.project: Project | None = None  # the linted tree, when the run has one (project.py)
        self._positions: Positions | None = None
        self._cache: dict[str, object] = {}  # shared analyses, computed once per module
        _index(self, module)

    # --- structure -------------------------------------------------------------------------
    def nodes(self, kind: type[N]) -> list[N]:
        # by_type holds the nodes of each type under that type: the list of ``kind`` is a list of N
        return cast("list[N]", self.by_type.get(kind, []))

    def parent(self, node: cst.CSTNode | None) -> cst.CSTNode | None:
        return self.parents.get(node) if node is not None else None

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        cur = self.parents.get(node)
        while cur is not None:
            yield cur
            cur = self.parents.get(cur)

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        for anc in self.ancestors(node):
            if isinstance(anc, cst.FunctionDef):
                return anc
        return None

    def shared(self, key: str, factory: Callable[[Context], T]) -> T:
        """A per-module analysis computed once and shared by every rule that asks for it (``key`` names
        what ``factory`` builds: one key, one type)."""
        if key not in self._cache:
            self._cache[key] = factory(self)
        return cast(T, self._cache[key])

    # --- names -----------------------------------------------------------------------------
    def qualname(self, node: cst.BaseExpression | None) -> str | None:
        """The imported qualified name of a Name/Attribute chain (``T.cuda.is_available`` ->
        ``torch.cuda.is_available``), or None when its root is not an imported name."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        root, _, rest = dotted.partition(".")
        target = self.aliases.get(root)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    @property
    def imports_torch(self) -> bool:
        return any(m == "torch" or m.startswith("torch.") for m in self.imported_modules)

    def module_alias(self, qualified: str) -> str | None:
        """A name bound to module ``qualified`` in this file (``T`` for ``import torch as T``)."""
        for name, target in self.aliases.items():
            if target == qualified:
                return name
        return None

    def release(self) -> None:
        """Drop the shared analyses: each holds this context, so that together they form a cycle that only
        the garbage collector would free (a whole syntax tree kept until then). Asked again, they are
        computed again."""
        self._cache.clear()

    # --- positions -------------------------------------------------------------------------
    def range(self, node: cst.CSTNode) -> CodeRange:
        if self._positions is None:
            from devlint.positions import Positions

            self._positions = Positions(self.module)
        return self._positions[node]

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    # LibCST drops a form feed, or a backslash-newline, that stands before a statement at the start of a
    # line: its regenerated code (which PositionProvider measures) is then shorter than the file. Positions
    # are mapped back onto the text as read, so findings point at the right column and fixes land on
    # the node they were built for.
    def position(self, line: int, column: int, end: bool = False) -> tuple[int, int]:
        """A (1-based line, 0-based column) of LibCST's regenerated code, on the text as read. ``end``: the
        position just after a node (mapped from its last character, so it never takes in what follows)."""
        if self._aligned is None:
            self._align()
        if self._offset_map is None:
            return line, column
        regen_starts = self._regen_starts
        offset = regen_starts[min(line - 1, len(regen_starts) - 1)] + column
        if end and offset > 0:
            mapped = self._offset_map[min(offset - 1, len(self._offset_map) - 1)] + 1
        else:
            mapped = self._offset_map[min(offset, len(self._offset_map) - 1)]
        text_starts = self._text_starts
        row = bisect.bisect_right(text_starts, mapped) - 1
        return row + 1, mapped - text_starts[row]

    @property
    def exact(self) -> bool:
        """Does LibCST's code equal the text as read (or could every position be mapped onto it)?"""
        if self._aligned is None:
            self._align()
        return bool(self._aligned)

    def _align(self) -> None:
        self._aligned = True
        if self.text is None:
            return
        regen = self.module.code
        if regen == self.text:
            return
        mapping = align(regen, self.text)
        if mapping is None:
            self._aligned = False
            return
        self._offset_map = mapping
        self._regen_starts = line_starts(regen)
        self._text_starts = line_starts(self.text)


_DROPPABLE = frozenset(" \t\f\\\r\n")


def align(short: str, long: str) -> list[int] | None:
    """For each offset of ``short`` (and its end), the offset of the same character in ``long``, where
    ``long`` is ``short`` with whitespace and backslashes added; None when it is not."""
    out = []
    j = 0
    n = len(long)
    for ch in short:
        while j < n and long[j] != ch:
            if long[j] not in _DROPPABLE:
                return None
            j += 1
        if j == n:
            return None
        out.append(j)
        j += 1
    if any(c not in _DROPPABLE for c in long[j:]):
        return None
    out.append(n if not out else out[-1] + 1)
    return out


def line_starts(text: str) -> list[int]:
    """The offset where each line starts (lines end at \\r\\n, \\r or \\n, as for the tokenizer)."""
    starts = [0]
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n" or ch == "\r":
            if ch == "\r" and i + 1 < n and text[i + 1] == "\n":
                i += 1
            starts.append(i + 1)
        i += 1
    return starts


def string_value(node: cst.CSTNode) -> str | None:
    """The value of a plain (non-f, non-bytes) string literal, else None."""
    if isinstance(node, cst.SimpleString):
        if "b" in node.prefix.lower():
            return None
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        left, right = string_value(node.left), string_value(node.right)
        if left is not None and right is not None:
            return left + right
    return None
