"""One parsed module and what every rule asks of it: parents, import aliases, positions.

The module is traversed once, here. Import aliases are resolved from the import statements themselves
(``import torch as T``, ``from torch import device as Device``, ``from os import environ``): LibCST's
QualifiedNameProvider gives the same answer for these but costs several times a parse, and devlint must
stay fast on large trees. Positions come from LibCST's PositionProvider, resolved only when a rule
reports something.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import TYPE_CHECKING, Iterator, TypeVar

from devlint.lazy import LazyModule

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import CodeRange
else:
    cst = LazyModule("libcst", globals(), "cst")

N = TypeVar("N", bound="cst.CSTNode")


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


def _index(ctx: "Context", module: cst.Module) -> None:
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
            _record_import(ctx, node)  # type: ignore[arg-type]
        for child in reversed(children(node)):
            stack.append((child, node))


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The child nodes rules care about (no whitespace or punctuation), in field order."""
    global _SKIP
    if not _SKIP:
        _SKIP = tuple(getattr(cst, name) for name in _SKIP_NAMES)
    out: list[cst.CSTNode] = []
    for name in _fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            if not isinstance(value, _SKIP):
                out.append(value)
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, cst.CSTNode) and not isinstance(item, _SKIP):
                    out.append(item)
    return out


def _record_import(ctx: "Context", node: cst.Import | cst.ImportFrom) -> None:
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = _import_target(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                ctx.aliases[alias.asname.name.value] = full
            else:
                root = full.split(".")[0]
                ctx.aliases[root] = root
            ctx.imported_modules.add(full)
    elif not node.relative and node.module is not None:
        module = _import_target(node.module)
        ctx.imported_modules.add(module)
        if not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                name = _import_target(alias.name)
                bound = name
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    bound = alias.asname.name.value
                ctx.aliases[bound] = f"{module}.{name}"


class Context:
    """Everything rules may ask about one module."""

    def __init__(self, module: cst.Module, path: str = "<string>") -> None:
        self.module = module
        self.path = path
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.order: dict[cst.CSTNode, int] = {}  # pre-order index: source order
        self.by_type: dict[type, list[cst.CSTNode]] = defaultdict(list)
        self.aliases: dict[str, str] = {}  # bound name -> qualified name
        self.imported_modules: set[str] = set()
        self._positions: dict | None = None
        self._cache: dict[str, object] = {}  # shared analyses, computed once per module
        _index(self, module)

    # --- structure -------------------------------------------------------------------------
    def nodes(self, kind: type[N]) -> list[N]:
        return self.by_type.get(kind, [])  # type: ignore[return-value]

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

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

    def shared(self, key: str, factory):  # type: ignore[no-untyped-def]
        """A per-module analysis computed once and shared by every rule that asks for it."""
        if key not in self._cache:
            self._cache[key] = factory(self)
        return self._cache[key]

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

    # --- positions -------------------------------------------------------------------------
    def range(self, node: cst.CSTNode) -> CodeRange:
        if self._positions is None:
            from libcst.metadata import MetadataWrapper, PositionProvider

            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._positions = dict(wrapper.resolve(PositionProvider))
        return self._positions[node]

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)
