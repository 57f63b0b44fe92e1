"""The second pre-filter stage: a screen over CPython's ``ast``, before LibCST.

LibCST is the source of truth (findings, positions, fixes), but it parses at about 0.4 MB/s; CPython's
C parser is ten times faster. A file whose raw bytes pass a rule's trigger is parsed with ``ast`` and the
rule's :meth:`~devlint.rules.base.Rule.screen` asks this index whether the file has any *site* where the
rule could report: a string in a device position, a ``.cuda()`` call, a ``.numpy()`` call in a scope that
holds grad or device evidence, ... Only files with a site are parsed with LibCST.

Every question here over-approximates the LibCST analyses it stands for (it may say "maybe" where the
rule finds nothing, never "no" where the rule reports): findings are identical with and without it
(tests/test_scale.py compares them over the fixtures and over generated programs).
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from devlint import devices

if TYPE_CHECKING:
    from devlint.project import Project

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
# The nodes the walk indexes (and descends into as any other node)
_RECORDED = frozenset({ast.Call, ast.Assign, ast.AnnAssign, ast.Dict, ast.arguments, ast.Attribute})
# The fields of a statement that hold statements (handlers and match cases hold them one level down)
_BODIES = ("body", "orelse", "finalbody")
# Fields that never hold a node the screen looks at (expression context, names and constants)
_LEAF_FIELDS = frozenset({"ctx", "type_comment", "kind", "id", "attr", "n", "s", "name", "asname", "module",
                          "level", "conversion", "is_async"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
# The nodes whose body the walk enters in a scope of its own (None for a class body: its methods are scopes)
_OPENERS = (*_SCOPES, ast.ClassDef)


def parse(data: bytes) -> ast.Module | None:
    """The ``ast`` of a file, or None when CPython cannot parse it (LibCST then decides and reports)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like: not devlint's report
            return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _fields(kind: type[ast.AST]) -> tuple[str, ...]:
    """The fields of a node type that may hold a node (computed once per type)."""
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f not in _LEAF_FIELDS)
    return fields


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` (itself included), as :func:`ast.walk` but several times faster: it skips the
    fields that never hold a node (names, constants, expression contexts) and reads the others directly."""
    stack = [node]
    node_type = ast.AST
    while stack:
        node = stack.pop()
        yield node
        for name in _fields(type(node)):
            value = getattr(node, name, None)
            if type(value) is list:
                stack.extend(v for v in value if isinstance(v, node_type))
            elif isinstance(value, node_type):
                stack.append(value)


_Tag = TypeVar("_Tag")


def _push_children(stack: list[tuple[ast.AST, _Tag]], node: ast.AST, tag: _Tag) -> None:
    """Push each child of ``node`` with ``tag`` (:func:`walk`'s way of finding them)."""
    for name in _fields(type(node)):
        value = getattr(node, name, None)
        if type(value) is list:
            stack.extend((v, tag) for v in value if isinstance(v, ast.AST))
        elif isinstance(value, ast.AST):
            stack.append((value, tag))


def walk_with_parents(node: ast.AST) -> list[tuple[ast.AST, int]]:
    """Every node under ``node`` with the ``id`` of its parent (0 for ``node``), in pre-order: reversed, each
    node comes before its parent."""
    out: list[tuple[ast.AST, int]] = []
    stack: list[tuple[ast.AST, int]] = [(node, 0)]
    while stack:
        node, parent = stack.pop()
        out.append((node, parent))
        _push_children(stack, node, id(node))
    return out


def import_bindings(node: ast.Import | ast.ImportFrom) -> list[tuple[str, str]]:
    """(bound name, qualified name) of each name an absolute import binds: ``import torch`` -> torch,
    ``import torch.nn as nn`` -> torch.nn, ``from torch import optim`` -> torch.optim (not ``*``, nor a relative
    import: the project resolves those)."""
    if isinstance(node, ast.Import):
        out = []
        for alias in node.names:
            root = alias.name.split(".")[0]
            out.append((alias.asname, alias.name) if alias.asname else (root, root))
        return out
    if node.level or node.module is None:
        return []
    return [(alias.asname or alias.name, f"{node.module}.{alias.name}") for alias in node.names if alias.name != "*"]


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def strings(expr: ast.AST | None) -> Iterator[str]:
    """String constants that stand where ``expr`` stands: through conditional expressions and boolean
    operations ("cuda" if ok else "cpu" is used where the whole expression is)."""
    stack: list[ast.AST | None] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                yield node.value
        elif isinstance(node, ast.IfExp):
            stack.extend((node.body, node.orelse))
        elif isinstance(node, ast.BoolOp):
            stack.extend(node.values)
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant) \
                and isinstance(node.values[0].value, str):
            yield node.values[0].value + "{}"  # f"cuda:{ids}": its literal head and a placeholder
        elif isinstance(node, (ast.BinOp, ast.Call)):
            yield from _built_head(node)


def _built_head(node: ast.BinOp | ast.Call) -> Iterator[str]:
    """The literal head of a string built with ``+`` or ``%`` (``"cuda:" + ...``, ``"cuda:%d,%d" % (a, b)``,
    ``"cuda:" + a + ","``), or the template of ``"cuda: {}".format(i)``, with a placeholder after it."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant) \
                and isinstance(func.value.value, str):
            yield func.value.value + "{}"
        return
    head: ast.AST = node
    while isinstance(head, ast.BinOp) and isinstance(head.op, (ast.Add, ast.Mod)):
        head = head.left
    if head is not node and isinstance(head, ast.Constant) and isinstance(head.value, str):
        yield f"{head.value}+"


def _roots(target: ast.AST) -> Iterator[str]:
    """The names a binding target writes: ``x``, the roots of ``x.attr`` / ``x[i]`` (the object changes),
    each name of a tuple or a starred target."""
    stack = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, (ast.Tuple, ast.List)):
            stack.extend(node.elts)
        elif isinstance(node, (ast.Starred, ast.Attribute, ast.Subscript)):
            stack.append(node.value)


_KEEPS = frozenset({"requires_grad_", "cuda", "to"})  # (methods that may undo a detach or a move to the CPU)


def _constant(node: ast.AST) -> bool:
    """A number, string, ``-1``, or a tuple/list of them: an argument that brings no tensor in."""
    while isinstance(node, ast.UnaryOp):
        node = node.operand
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_constant(el) for el in node.elts)
    return isinstance(node, ast.Constant)


def _settled(receiver: ast.AST, no_grad: bool = False) -> bool:
    """Is ``receiver`` (of ``.numpy()``) certainly detached and on the CPU by its own chain, read from the
    outside in: ``x.detach().cpu()``, ``out[i].data.float().cpu()``, ``y.cpu().detach()[0]``? Only calls
    whose arguments are constants (``.permute(0, 2, 3, 1)``), indexing and attributes may sit between (an
    argument may bring another tensor's grad or device in; ``.cuda()`` / ``.requires_grad_()`` undo them).
    ``no_grad``: the call runs under ``torch.no_grad()`` / ``inference_mode()``, where torch lets
    ``.numpy()`` through on a tensor that requires grad (provenance.py's ``_record_numpy``): the CPU is enough."""
    cpu, detached = False, no_grad
    node = receiver
    while not (cpu and detached):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method == "to" and not node.keywords and len(node.args) == 1 \
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value == "cpu":
                cpu = True
            elif method in _KEEPS or not all(_constant(a) for a in (*node.args, *(k.value for k in node.keywords))) \
                    or any(k.arg is None for k in node.keywords):
                return False
            elif method == "cpu":
                cpu = True
            elif method in ("detach", "detach_"):
                detached = True
            node = node.func.value
        elif isinstance(node, ast.Attribute):
            detached = detached or node.attr in ("data", "grad")
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return False
    return True


def _spread(seeds: set[str], binds: list[tuple[frozenset[str], ast.AST]],
            carries: Callable[[ast.AST, set[str]], bool]) -> set[str]:
    """``seeds`` and the names each binding binds from a value that ``carries`` says holds one of them, to a
    fixed point (bindings read in any order)."""
    held = set(seeds)
    changed = True
    while changed:
        changed = False
        for roots, value in binds:
            if not roots <= held and carries(value, held):
                held |= roots
                changed = True
    return held


def _root_name(expr: ast.AST) -> str | None:
    """The name a value is a part of, through indexing, attributes and method calls (``videos[i].float()``:
    ``videos``); None for anything else (a function's result, a literal)."""
    while True:
        if isinstance(expr, (ast.Subscript, ast.Attribute)):
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            expr = expr.func.value
        else:
            return expr.id if isinstance(expr, ast.Name) else None


def _forced(call: ast.Call) -> bool:
    """``.numpy(force=True)``: torch detaches and copies to the CPU itself."""
    return any(k.arg == "force" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords)


def _parameter_defaults(args: ast.arguments) -> Iterator[tuple[ast.arg, ast.expr]]:
    """Each parameter that has a default, with it: the defaults belong to the last positional parameters;
    every keyword-only one has its slot (None: no default)."""
    positional = [*args.posonlyargs, *args.args]
    yield from zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True)
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if default is not None:
            yield arg, default


def _scope_binds(node: ast.AST, out: list[tuple[frozenset[str], ast.AST]], declared: set[str],
                 imported: set[str] | frozenset[str]) -> None:
    """The bindings in the body of one scope's statement (not in the functions and classes defined in it)
    into ``out``; the names it declares ``global`` / ``nonlocal`` into ``declared``."""
    stack: list[ast.AST] = list(getattr(node, "body", []))
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in _SCOPES or kind is ast.ClassDef:
            continue  # a scope of its own
        bound = _binding(item)
        if bound is not None:
            if kind is ast.Call:  # a method of a module (``torch.zeros(...)``) changes no value
                bound = (bound[0] - imported, bound[1])
            if bound[0]:
                out.append(bound)
        elif kind is ast.Global or kind is ast.Nonlocal:
            declared.update(item.names)  # type: ignore[attr-defined]
        for field_name in _fields(kind):
            value = getattr(item, field_name, None)
            if type(value) is list:
                stack.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)


def _pattern_names(pattern: ast.AST) -> Iterator[str]:
    for node in walk(pattern):
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name is not None:
            yield node.name
        elif isinstance(node, ast.MatchMapping) and node.rest is not None:
            yield node.rest


def _binding(node: ast.AST) -> tuple[frozenset[str], ast.AST] | None:
    """(the names, the expression they are bound from) of a statement or expression that binds names: an
    assignment of any kind, ``for``, ``with ... as``, a comprehension's ``for``, ``match``, and a method call
    on a name (``outs.append(y)``, ``d.update(v)``: the object may now hold its arguments)."""
    names: list[str]
    if isinstance(node, ast.Assign):
        names = [n for t in node.targets for n in _roots(t)]
        value: ast.AST | None = node.value
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
        names, value = list(_roots(node.target)), node.value
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        names, value = list(_roots(node.target)), node.iter
    elif isinstance(node, ast.withitem):
        if node.optional_vars is None:
            return None
        names, value = list(_roots(node.optional_vars)), node.context_expr
    elif isinstance(node, ast.Match):
        names = [n for case in node.cases for n in _pattern_names(case.pattern)]
        value = node.subject
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        names, value = list(_roots(node.func.value)), node
    else:
        return None
    if not names or value is None:
        return None
    return frozenset(names), value


@dataclass
class Scope:
    """A function body (or the module's top level), not counting nested functions and classes: the unit
    provenance.py interprets."""

    numpy_calls: int = 0
    calls: list[ast.Call] = field(default_factory=list)  # calls that may be grad/device evidence, judged after the walk
    cls: ast.ClassDef | None = None  # a method's class (its methods share what __init__ sets on self)
    children: list[Scope] = field(default_factory=list)  # the functions and class bodies defined in this one
    numpy: list[ast.Call] = field(default_factory=list)  # its ``.numpy()`` calls
    node: ast.AST | None = None  # the function or class statement (the module for the top level)

    def add_call(self, call: ast.Call) -> None:
        """Count a ``.numpy()`` call (not ``force=True``); keep any other call for the evidence check."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "numpy":
            self.numpy.append(call)
            if not any(k.arg == "force" and isinstance(k.value, ast.Constant) and k.value.value is True
                       for k in call.keywords):
                self.numpy_calls += 1
        else:
            self.calls.append(call)


@dataclass
class AstIndex:
    tree: ast.Module
    aliases: dict[str, set[str]] = field(default_factory=dict)  # bound name -> qualified names (any import)
    imported_modules: set[str] = field(default_factory=set)
    class_names: set[str] = field(default_factory=set)
    classes: list[ast.ClassDef] = field(default_factory=list)  # every class statement, nested ones too
    module_class_names: set[str] = field(default_factory=set)  # classes that may be torch modules (by base)
    # other classes with a base named ...Pipeline (a diffusion pipeline: no module, run under torch.no_grad())
    pipeline_class_names: set[str] = field(default_factory=set)
    # The facts below come from a walk of every node, made when one of them is first asked for (__getattr__):
    # a rule whose screen needs only the imports and classes (DEV007, DEV008, DEV009) never pays for it.
    calls: list[ast.Call] = field(init=False, repr=False, compare=False)
    assigns: list[ast.Assign | ast.AnnAssign] = field(init=False, repr=False, compare=False)
    dicts: list[ast.Dict] = field(init=False, repr=False, compare=False)
    arguments: list[ast.arguments] = field(init=False, repr=False, compare=False)
    legacy_types: list[ast.Attribute] = field(init=False, repr=False, compare=False)  # x.FloatTensor, ...
    module_scope: Scope = field(init=False, repr=False, compare=False)
    scopes: list[Scope] = field(init=False, repr=False, compare=False)
    function_names: set[str] = field(init=False, repr=False, compare=False)  # functions and methods of the file
    function_scopes: dict[str, Scope] = field(init=False, repr=False, compare=False)  # "f" / "Class.method"
    path: str | None = None
    relative_names: set[str] = field(default_factory=set)  # names bound by relative imports (the project's)
    project: Project | None = None
    _device_strings: list[tuple[str, str]] | None = None
    _bind_cache: tuple[dict[int, list[tuple[frozenset[str], ast.AST]]], frozenset[str]] | None = None
    _taint_cache: dict[int, set[str] | None] = field(default_factory=dict)
    _summaries: dict[int, tuple[frozenset[str], bool, frozenset[str] | bool | None]] = field(default_factory=dict)
    _self_attrs: frozenset[str] | None = None
    _selfish_cache: dict[int, bool] = field(default_factory=dict)
    _parents: dict[int, Scope] = field(default_factory=dict)  # id of a scope -> the scope it is defined in

    @classmethod
    def build(cls, tree: ast.Module, project: Project | None = None, path: str | None = None) -> AstIndex:
        index = cls(tree, project=project, path=path)
        index._statements()
        return index

    _WALKED = frozenset({"calls", "assigns", "dicts", "arguments", "legacy_types", "module_scope", "scopes",
                         "function_names", "function_scopes", "_owner"})

    def __getattr__(self, name: str) -> Any:
        """A fact of the walk of every node, asked for the first time: walk (once)."""
        if name not in AstIndex._WALKED or "calls" in self.__dict__:
            raise AttributeError(name)
        self._walk()
        return self.__dict__[name]

    # --- the statements: imports and classes ---------------------------------------------------
    def _statements(self) -> None:
        """Imports and class statements, wherever they are (statements hold them: no expression is visited)."""
        self._relative: dict[str, tuple[int, str, str]] = {}
        stack: list[list[ast.stmt]] = [self.tree.body]
        while stack:
            for stmt in stack.pop():
                kind = type(stmt)
                if kind is ast.Import or kind is ast.ImportFrom:
                    self._import(stmt)  # type: ignore[arg-type]
                    continue
                if kind is ast.ClassDef:
                    self._class(stmt)  # type: ignore[arg-type]
                for name in _BODIES:
                    value = getattr(stmt, name, None)
                    if value:
                        stack.append(value)
                for handler in getattr(stmt, "handlers", ()):
                    stack.append(handler.body)
                for case in getattr(stmt, "cases", ()):
                    stack.append(case.body)

    def _class(self, node: ast.ClassDef) -> None:
        self.class_names.add(node.name)
        self.classes.append(node)
        if any("Module" in (dotted(b) or "") or "Model" in (dotted(b) or "") or (dotted(b) or "").startswith("nn.")
               for b in node.bases):
            self.module_class_names.add(node.name)
        elif any((dotted(b) or "").endswith("Pipeline") for b in node.bases):
            self.pipeline_class_names.add(node.name)

    # --- one walk --------------------------------------------------------------------------
    def _walk(self) -> None:
        self.calls, self.assigns, self.dicts, self.arguments, self.legacy_types = [], [], [], [], []
        self.scopes, self.function_names, self.function_scopes = [], set(), {}
        self.module_scope = Scope(node=self.tree)
        self._owner: dict[int, ast.ClassDef] = {}
        stack: list[tuple[ast.AST, Scope | None]] = [(self.tree, self.module_scope)]
        recorded, openers, fields_of, node_type = _RECORDED, _OPENERS, _CHILD_FIELDS, ast.AST
        while stack:
            node, scope = stack.pop()
            kind = type(node)
            if kind in recorded:
                self._record(node, scope)
            elif isinstance(node, openers):
                self._enter(node, scope, stack)
                continue
            fields = fields_of.get(kind)
            if fields is None:
                fields = _fields(kind)
            for name in fields:  # ast.iter_child_nodes, inlined (the walk visits every node of every file)
                value = getattr(node, name, None)
                if type(value) is list:
                    stack.extend((v, scope) for v in value if isinstance(v, node_type))
                elif isinstance(value, node_type):
                    stack.append((value, scope))

    def _record(self, node: ast.AST, scope: Scope | None) -> None:
        """Index a node of :data:`_RECORDED`."""
        if isinstance(node, ast.Call):
            self.calls.append(node)
            if scope is not None:
                scope.add_call(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            self.assigns.append(node)
        elif isinstance(node, ast.Dict):
            self.dicts.append(node)
        elif isinstance(node, ast.arguments):
            self.arguments.append(node)
        elif isinstance(node, ast.Attribute) and node.attr in devices.LEGACY_CUDA_TENSORS:
            self.legacy_types.append(node)

    def _enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, scope: Scope | None,
               stack: list[tuple[ast.AST, Scope | None]]) -> None:
        """Push a function's or class's body in a scope of its own (None for a class body: it is not
        interpreted) and the rest of it (decorators, arguments, bases, ...) in the enclosing ``scope``."""
        inner: Scope
        if isinstance(node, ast.ClassDef):
            inner = Scope(node=node)  # a class body: not interpreted (not in self.scopes)
            for sub in node.body:  # a method's scope knows its class
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self._owner[id(sub)] = node
        else:
            self.function_names.add(node.name)
            owner = self._owner.get(id(node))
            inner = Scope(cls=owner, node=node)
            self.scopes.append(inner)
            self.function_scopes.setdefault(f"{owner.name}.{node.name}" if owner else node.name, inner)
        if scope is not None:
            scope.children.append(inner)
            self._parents[id(inner)] = scope  # (not on the scope: a cycle would outlive the file)
        for sub in node.body:
            stack.append((sub, inner))
        for name in ("decorator_list", "args", "returns", "bases", "keywords", "type_params"):
            value = getattr(node, name, None)
            if isinstance(value, list):
                stack.extend((v, scope) for v in value)
            elif value is not None:
                stack.append((value, scope))

    def parent_scope(self, scope: Scope) -> Scope | None:
        """The scope ``scope`` is defined in (a class body's for a method; None for the module's)."""
        return self._parents.get(id(scope))

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            self.imported_modules.update(alias.name for alias in node.names)
        elif node.level:
            for alias in node.names:
                if alias.name != "*":
                    bound = alias.asname or alias.name
                    self.relative_names.add(bound)
                    self._relative[bound] = (node.level, node.module or "", alias.name)
        elif node.module is not None:
            self.imported_modules.add(node.module)
        for bound, target in import_bindings(node):
            self.aliases.setdefault(bound, set()).add(target)
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            self._star_import(node)

    def _star_import(self, node: ast.ImportFrom) -> None:
        """``from utils import *``: the imports of the project's module come with it (Project.star_exports)."""
        if node.module is None or self.project is None or self.path is None:
            return
        for bound, target in self.project.star_exports("." * node.level + node.module, self.path).items():
            if bound not in self.aliases and bound not in self.relative_names:
                self.aliases[bound] = {target}
                self.imported_modules.add(target)

    def _is_evidence(self, call: ast.Call) -> bool:
        """May this call be a source in provenance.py: a tensor made with requires_grad/device, an
        nn.Parameter, a module, a ``.cuda()``/``.to(...)`` move, ``.requires_grad_()``?"""
        if self._moved_or_marked(call):
            return True
        func = call.func
        name = dotted(func)
        if name is None:
            return False
        root, dot, rest = name.partition(".")
        if not dot and root in self.class_names:
            return True  # may instantiate an nn.Module subclass of this file
        for target in self.aliases.get(root, ()):
            top = target.split(".")[0]
            if top not in devices.EVIDENCE_ROOTS:
                continue
            if top in ("torchvision", "timm"):
                return True
            last = (rest or target).rsplit(".", 1)[-1]
            if last[:1].isupper() or last == "from_pretrained":
                return True
            if any(k.arg in ("requires_grad", devices.DEVICE_KEYWORD) for k in call.keywords):
                return True
        return False

    def _moved_or_marked(self, call: ast.Call) -> bool:
        """``x.cuda()``, ``x.requires_grad_()``, or an ``x.to(...)`` that may move ``x`` to a device."""
        func = call.func
        return isinstance(func, ast.Attribute) and (
            func.attr in (devices.CUDA_METHOD, "requires_grad_")
            or (func.attr == devices.MOVE_METHOD and self._moves(call)))

    def _moves(self, call: ast.Call) -> bool:
        """May ``x.to(...)`` put ``x`` on a device (provenance.py's ``_moved``)? Not when it names no device (only
        ``dtype=`` and the like) or its target is a torch attribute that names none (``torch.float32``,
        ``torch.cuda.HalfTensor``: a conversion)."""
        if call.args:
            target: ast.expr | None = call.args[0]
        else:
            target = next((k.value for k in call.keywords if k.arg == devices.DEVICE_KEYWORD), None)
        if target is None:
            return False
        if not isinstance(target, (ast.Name, ast.Attribute)):
            return True
        names = self.qualnames(target)
        if any(q is None or not q.startswith("torch.") for q in names):
            return True
        if isinstance(target, ast.Attribute):
            return "device" in (dotted(target) or "device")
        return not all(q is not None and q.count(".") == 1 and q.rsplit(".", 1)[-1][:1].islower() for q in names)

    def _has_evidence(self, scope: Scope) -> bool:
        return any(self._is_evidence(call) for call in scope.calls)

    def _has_move(self, scope: Scope) -> bool:
        """A ``.cuda()`` / ``.to(x)`` / ``.requires_grad_()`` call, or a torch call with ``device=`` or
        ``requires_grad=``: what another method of the class may leave on ``self``."""
        for call in scope.calls:
            if self._moved_or_marked(call):
                return True
            if any(k.arg in ("requires_grad", devices.DEVICE_KEYWORD) for k in call.keywords):
                return True
        return False

    def scope_evidence(self, scope: Scope) -> bool:
        """Evidence in ``scope``, in the module's top level, or in another method of its class."""
        if self._has_evidence(scope) or self._has_evidence(self.module_scope):
            return True
        return scope.cls is not None and any(self._has_evidence(s) for s in self.scopes if s.cls is scope.cls)

    def calls_project(self, scope: Scope) -> bool:
        return self._calls_project(scope)

    def _calls_project(self, scope: Scope) -> bool:
        """Does the scope call a function of the file (``helper(x)``, ``self.helper(x)``) or of the project
        (a relative import, a module among the run's files), whose returned value provenance.py follows?"""
        return any(self._returns_evidence(scope, call) for call in scope.calls)

    def _returns_evidence(self, scope: Scope, call: ast.Call) -> bool:
        """Is ``call`` one of :meth:`_calls_project`'s: a function of the file or the project that holds
        evidence (or may: no project to look in)?"""
        name = dotted(call.func)
        if name is None:
            return False
        root, _, rest = name.partition(".")
        if root in ("self", "cls") or root in self.function_names:
            # what a function or method of the file returns: evidence in its own body (or the module's)
            symbol = f"{scope.cls.name}.{rest}" if root in ("self", "cls") and scope.cls is not None else root
            target = self.function_scopes.get(symbol)
            if target is not None and target is not scope and (
                    self._has_evidence(target) or self._has_evidence(self.module_scope)):
                return True
            return target is None and root in ("self", "cls") and scope.cls is not None \
                and self._inherited_evidence(scope.cls, rest)
        if self.project is not None:
            return self._project_returns_evidence(root, rest)
        return root in self.relative_names  # no project to look in: it may

    def _inherited_evidence(self, cls: ast.ClassDef, method: str) -> bool:
        """Does ``method`` of a direct base of ``cls`` (of the file or the project) hold evidence?"""
        for base in cls.bases:
            name = dotted(base)
            if name is None:
                continue
            if name in self.class_names:
                target = self.function_scopes.get(f"{name}.{method}")
                if target is not None and (self._has_evidence(target) or self._has_evidence(self.module_scope)):
                    return True
                continue
            root, _, rest = name.partition(".")
            symbol = ".".join(p for p in (rest, method) if p)
            if self.project is not None and self._project_returns_evidence(root, symbol):
                return True
            if self.project is None and root in self.relative_names:
                return True
        return False

    def _project_returns_evidence(self, root: str, rest: str) -> bool:
        """Does the project function a call names (imported from the project) hold evidence in its body, so
        that what it returns may be a GPU tensor or one that requires grad?"""
        assert self.project is not None
        project = self.project
        return any(project.function_evidence(path, symbol) for path, symbol in self._project_symbols(root, rest))

    def _project_symbols(self, root: str, rest: str) -> list[tuple[str, str]]:
        assert self.project is not None
        project = self.project
        found = []
        if root in self.relative_names and self.path is not None:
            target = project.resolve_relative_name(self.path, self._relative[root])
            if target is not None:
                found.append((target[0], ".".join(p for p in (target[1], rest) if p)))
        for qualified in self.aliases.get(root, ()):
            parts = (f"{qualified}.{rest}" if rest else qualified).split(".")
            for i in range(len(parts) - 1, 0, -1):
                path = project.module_file(".".join(parts[:i]), self.path or "")
                if path is not None:
                    found.append(project.follow_export(path, ".".join(parts[i:])))
                    break
        return found

    def _project_target(self, target: str, rest: str) -> bool:
        assert self.project is not None
        parts = (f"{target}.{rest}" if rest else target).split(".")
        return any(self.project.has_module(".".join(parts[:i])) for i in range(len(parts) - 1, 0, -1))

    # --- questions ---------------------------------------------------------------------------
    @property
    def imports_torch(self) -> bool:
        return any(m == "torch" or m.startswith("torch.") for m in self.imported_modules)

    def availability_guarded(self) -> set[int]:
        """The ids of the calls in the body of an ``if`` (or the true arm of a conditional expression) whose
        test is an availability check by itself or in an ``and`` (``if torch.cuda.is_available():``,
        ``if torch.cuda.device_count() and x:``), in the same function: what guards.py takes as guarded
        first (a nested function, class or lambda is left out: its guard is decided elsewhere)."""
        found: set[int] = set()
        stack: list[tuple[ast.AST, bool]] = [(self.tree, False)]
        openers = (*_OPENERS, ast.Lambda)
        while stack:
            node, guarded = stack.pop()
            kind = type(node)
            if kind is ast.If:
                assert isinstance(node, ast.If)
                stack.append((node.test, guarded))
                inner = guarded or self._checks_availability(node.test)
                stack.extend((stmt, inner) for stmt in node.body)
                stack.extend((stmt, guarded) for stmt in node.orelse)
                continue
            if kind is ast.IfExp:
                assert isinstance(node, ast.IfExp)
                stack.extend(((node.test, guarded), (node.orelse, guarded),
                              (node.body, guarded or self._checks_availability(node.test))))
                continue
            if guarded:
                if kind is ast.Call:
                    found.add(id(node))
                elif isinstance(node, openers):
                    guarded = False
            _push_children(stack, node, guarded)
        return found

    def _checks_availability(self, test: ast.expr) -> bool:
        """``torch.cuda.is_available()`` and the like (every name the callee may be bound to), alone or as
        one operand of an ``and``."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(self._checks_availability(value) for value in test.values)
        return isinstance(test, ast.Call) and all(q in devices.AVAILABILITY_CALLS for q in self.qualnames(test.func))

    def imported(self, name: str) -> bool:
        """Is the root of ``name`` bound by an import (LibCST's ``ctx.qualname`` is not None)?"""
        return name.partition(".")[0] in self.aliases

    def qualnames(self, func: ast.expr) -> set[str | None]:
        """What LibCST's ``ctx.qualname`` may say of a callee: the imported qualified names its root may
        be bound to, or None when the root is not imported (a method, a local function)."""
        name = dotted(func)
        if name is None:
            return {None}
        root, dot, rest = name.partition(".")
        targets = self.aliases.get(root)
        if not targets:
            return {None}
        return {f"{t}.{rest}" if dot else t for t in targets}

    @staticmethod
    def _in_position(qualnames: set[str | None], method: str | None, index: int | None, keyword: str | None) -> bool:
        return any(devices.call_position(q, method if q is None else None, index, keyword) is not None
                   for q in qualnames)

    def device_strings(self) -> list[tuple[str, str]]:
        """(value, kind) for every string constant that may stand in a device position (DeviceUses in
        analysis.py): kind "strict" for an argument of a call, "loose" for an assignment, a dict entry, a
        parameter default or an argparse default."""
        if self._device_strings is not None:
            return self._device_strings
        out: list[tuple[str, str]] = []
        passed: set[str] = set()  # dotted names passed in a device position somewhere
        for call in self.calls:
            for value in self._device_arguments(call, out):
                out.extend((s, "strict") for s in strings(value))
                name = dotted(value)
                if name:
                    passed.add(name)
        self._assigned_device_strings(passed, out)
        self._declared_device_strings(out)
        self._device_strings = out
        return out

    def _device_arguments(self, call: ast.Call, out: list[tuple[str, str]]) -> list[ast.expr]:
        """The arguments of ``call`` that may be in a device position; the strings of an argparse
        ``--device`` option's default go to ``out`` ("loose")."""
        qualnames = self.qualnames(call.func)
        method = call.func.attr if isinstance(call.func, ast.Attribute) else None
        first = call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None
        slots: list[ast.expr] = []
        if first is not None and self._in_position(qualnames, method, 0, None):
            slots.append(first)
        for kw in call.keywords:
            if kw.arg is None:
                continue
            if self._in_position(qualnames, method, None, kw.arg):
                slots.append(kw.value)
            elif kw.arg == devices.ARGPARSE_KEYWORD and method is not None and devices.is_argparse_device(
                    method, [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None
                             for a in call.args]):
                out.extend((s, "loose") for s in strings(kw.value))
        return slots

    def _assigned_device_strings(self, passed: set[str], out: list[tuple[str, str]]) -> None:
        """Strings assigned to a device-named variable or to one ``passed`` in a device position ("loose")."""
        for assign in self.assigns:
            if assign.value is None:
                continue
            targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
            names = [dotted(t) for t in targets]
            if any(n and (devices.is_device_name(n) or n in passed) for n in names):
                out.extend((s, "loose") for s in strings(assign.value))

    def _declared_device_strings(self, out: list[tuple[str, str]]) -> None:
        """Strings of a device-named dict key's value or a device-named parameter's default ("loose")."""
        for d in self.dicts:
            for key, value in zip(d.keys, d.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and devices.is_device_name(key.value):
                    out.extend((s, "loose") for s in strings(value))
        for args in self.arguments:
            for arg, default in _parameter_defaults(args):
                if devices.is_device_name(arg.arg):
                    out.extend((s, "loose") for s in strings(default))

    def numpy_with_evidence(self) -> bool:
        """Is there a ``.numpy()`` call (not ``force=True``) in a scope that, itself or through the module's
        top level, holds evidence of grad or a device (provenance.py's only sources)?"""
        module = self.module_scope
        with_numpy = [s for s in (module, *self.scopes) if s.numpy_calls]
        if not with_numpy:
            return False
        module_values = self._has_evidence(module)
        for scope in with_numpy:
            # evidence at the top, in the scope, self.model built or moved to a device (or made to require
            # grad) in another method of the class; and a ``.numpy()`` receiver that such a value may reach
            if (module_values or self._holds_values(scope)) and self._numpy_reached(scope):
                return True
        return self._numpy_helper_called_with_evidence(with_numpy) or self._numpy_on_parameters(with_numpy)

    # --- where values flow (an over-approximation of provenance.py, per scope) ----------------------------
    MAX_BINDS = 2000  # a scope with more bindings than this: every receiver may be reached

    def _numpy_reached(self, scope: Scope) -> bool:
        """May a value that holds evidence reach the receiver of one of the scope's ``.numpy()`` calls? Names
        bound from such a value (assigned, iterated, ``with ... as``, appended to, in any order: the
        bindings are read flow-insensitively to a fixed point) carry it, as do the names the enclosing
        scopes and the module bind so, any name declared ``global`` / ``nonlocal``, and ``self`` / ``cls`` in a
        class whose methods hold evidence or move values."""
        receivers = self._open_numpy(scope)
        if not receivers:
            return False
        tainted = self._tainted(scope)
        if tainted is None:
            return True
        return any(self._flows(scope, receiver, tainted) for receiver in receivers)

    def _open_numpy(self, scope: Scope) -> list[ast.expr]:
        """The receivers of the scope's ``.numpy()`` calls (not ``force=True``) that their own chain does not
        settle."""
        quiet = self._no_grad_numpy(scope)
        return [call.func.value for call in scope.numpy if isinstance(call.func, ast.Attribute)
                and not _forced(call) and not _settled(call.func.value, id(call) in quiet)]

    def _no_grad(self, expr: ast.expr) -> bool:
        """``torch.no_grad()``, ``torch.inference_mode()``, ``torch.set_grad_enabled(False)`` (as a decorator or
        a ``with`` item), by every name its root may be bound to (provenance.py's ``_no_grad_expr``)."""
        target = expr.func if isinstance(expr, ast.Call) else expr
        names = self.qualnames(target)
        if names == {"torch.set_grad_enabled"}:
            return isinstance(expr, ast.Call) and bool(expr.args) and isinstance(expr.args[0], ast.Constant) \
                and expr.args[0].value is False
        return all(n in devices.NO_GRAD_CONTEXTS and n != "torch.enable_grad" for n in names)

    def _no_grad_numpy(self, scope: Scope) -> set[int]:
        """The ids of the scope's ``.numpy()`` calls that run under no-grad: all of them in a function
        decorated so, else those in the body of a ``with`` whose item is one (not in a lambda, a nested
        function or class: each is interpreted on its own)."""
        node = scope.node
        if not scope.numpy or node is None:
            return set()
        if isinstance(node, _SCOPES) and any(self._no_grad(d) for d in node.decorator_list):
            return {id(call) for call in scope.numpy}
        found: set[int] = set()
        body = node.body if isinstance(node, (ast.Module, *_SCOPES)) else []
        stack: list[tuple[ast.AST, bool]] = [(stmt, False) for stmt in body]
        while stack:
            item, quiet = stack.pop()
            if isinstance(item, (*_OPENERS, ast.Lambda)):
                continue
            if quiet and isinstance(item, ast.Call) and isinstance(item.func, ast.Attribute) \
                    and item.func.attr == "numpy":
                found.add(id(item))
            if isinstance(item, (ast.With, ast.AsyncWith)):
                inner = quiet or any(self._no_grad(w.context_expr) for w in item.items)
                stack.extend((w, quiet) for w in item.items)
                stack.extend((stmt, inner) for stmt in item.body)
                continue
            _push_children(stack, item, quiet)
        return found

    def _selfish(self, scope: Scope) -> bool:
        """May ``self`` hold a value with evidence: does a method of the scope's class hold or make one?"""
        cls = scope.cls
        if cls is None:
            return False
        found = self._selfish_cache.get(id(cls))
        if found is None:
            found = self._class_holds_values(cls) or any(self._calls_project(s) for s in self.scopes if s.cls is cls)
            self._selfish_cache[id(cls)] = found
        return found

    def _class_holds_values(self, cls: ast.ClassDef) -> bool:
        """Does a method of ``cls`` hold evidence or move a value (what it may leave on ``self``)?"""
        return any(self._has_move(s) or self._has_evidence(s) for s in self.scopes if s.cls is cls)

    def _tainted(self, scope: Scope) -> set[str] | None:
        """The names of ``scope`` that may hold a value with evidence (None: too many bindings to tell)."""
        cache = self._taint_cache
        key = id(scope)
        if key in cache:
            return cache[key]
        binds, declared = self._binds()
        seeds = set(declared)
        outer = self._parents.get(key)
        while outer is not None and isinstance(outer.node, ast.ClassDef):
            outer = self._parents.get(id(outer))  # a class body's names are not visible in its methods
        if outer is not None:
            above = self._tainted(outer)
            if above is None:
                cache[key] = None
                return None
            seeds |= above
        mine = binds.get(key, [])
        if len(mine) > self.MAX_BINDS:
            cache[key] = None
            return None
        tainted = _spread(seeds, mine, lambda value, held: self._flows(scope, value, held))
        cache[key] = tainted
        return tainted

    def _flows(self, scope: Scope, expr: ast.AST, tainted: set[str]) -> bool:
        """Does ``expr`` mention a tainted name (``self`` of a class that holds values), make a value with
        evidence, or call a function that returns one?"""
        names, source, selves = self._summary(scope, expr)
        if source or not names.isdisjoint(tainted):
            return True
        if selves is None or not self._selfish(scope):
            return False
        # self.vae of a class that never sets it (a base class of a library does): provenance.py reads
        # only what the class's own methods bind on self, and what its methods return
        return selves is True or (isinstance(selves, frozenset) and not selves.isdisjoint(self._self_attributes()))

    def _summary(self, scope: Scope, expr: ast.AST) -> tuple[frozenset[str], bool, frozenset[str] | bool | None]:
        """The names ``expr`` mentions; whether it holds a call with evidence or one that returns it; and how
        it reads ``self`` / ``cls``: None (not at all), True (the object itself: ``self(x)``, ``f(self)``) or
        the attributes read on it (``self.model(x)``: ``{"model"}``). Computed once per expression."""
        key = id(expr)
        found = self._summaries.get(key)
        if found is None:
            names: set[str] = set()
            source = False
            attrs: set[str] = set()
            rooted: set[int] = set()  # self / cls names read as the object of an attribute
            bare = False
            for node in walk(expr):
                kind = type(node)
                if kind is ast.Name:
                    names.add(node.id)  # type: ignore[attr-defined]
                    if node.id in ("self", "cls") and id(node) not in rooted:  # type: ignore[attr-defined]
                        bare = True
                elif kind is ast.Attribute:
                    value = node.value  # type: ignore[attr-defined]
                    if type(value) is ast.Name and value.id in ("self", "cls"):
                        attrs.add(node.attr)  # type: ignore[attr-defined]
                        rooted.add(id(value))
                elif kind is ast.Call and not source:
                    assert isinstance(node, ast.Call)
                    source = self._is_evidence(node) or self._returns_evidence(scope, node)
            selves: frozenset[str] | bool | None = True if bare else frozenset(attrs) if attrs else None
            found = self._summaries[key] = (frozenset(names), source, selves)
        return found

    def _self_attributes(self) -> frozenset[str]:
        """The attributes of ``self`` / ``cls`` that the file may give a value (``self.x = ...``, ``self.x[k] =
        ...``, ``self.x.y = ...``, ``for self.x in ...``: provenance.py binds dotted names, not what a method
        call puts in an object), and every function name of the file (a method or property: what it returns,
        provenance.py follows). Computed once per file."""
        if self._self_attrs is None:
            found = set(self.function_names)
            for node in walk(self.tree):
                if not isinstance(node, (ast.Attribute, ast.Subscript)) or not isinstance(node.ctx, ast.Store):
                    continue
                target: ast.expr = node
                while isinstance(target, (ast.Attribute, ast.Subscript)):
                    value = target.value
                    if isinstance(target, ast.Attribute) and isinstance(value, ast.Name) \
                            and value.id in ("self", "cls"):
                        found.add(target.attr)
                        break
                    target = value
            self._self_attrs = frozenset(found)
        return self._self_attrs

    def _binds(self) -> tuple[dict[int, list[tuple[frozenset[str], ast.AST]]], frozenset[str]]:
        """Per scope (by ``id``), each binding as (the names it binds, the expression it binds them from);
        and the names declared ``global`` or ``nonlocal`` anywhere (computed once per file)."""
        if self._bind_cache is not None:
            return self._bind_cache
        binds: dict[int, list[tuple[frozenset[str], ast.AST]]] = {}
        declared: set[str] = set()
        imported = self.aliases.keys() | self.relative_names
        for scope in (self.module_scope, *self.scopes):
            if scope.node is not None:
                out = binds.setdefault(id(scope), [])
                if isinstance(scope.node, _SCOPES):
                    out.extend((frozenset({arg.arg}), default) for arg, default in _parameter_defaults(scope.node.args))
                _scope_binds(scope.node, out, declared, imported)
        self._bind_cache = (binds, frozenset(declared))
        return self._bind_cache

    def _numpy_helper_called_with_evidence(self, with_numpy: list[Scope]) -> bool:
        """A function of the file with a ``.numpy()`` call (on a parameter) that a scope holding values
        calls by name (``show(out)``, ``self.to_numpy(out)``): provenance.py follows arguments into it."""
        helpers = {name.rsplit(".", 1)[-1] for name, scope in self.function_scopes.items()
                   if scope in with_numpy and self._open_numpy(scope)}
        if not helpers:
            return False
        for scope in (self.module_scope, *self.scopes):
            for call in scope.calls:
                root, _, rest = (dotted(call.func) or "").partition(".")
                if (rest if root in ("self", "cls") else root if not rest else "") in helpers:
                    if self._holds_values(scope):
                        return True
                    break
        return False

    def _numpy_on_parameters(self, with_numpy: list[Scope]) -> bool:
        """A function of the module's top level whose ``.numpy()`` receiver is part of a parameter: provenance.py
        follows the project's other files' calls into it (a metric helper, ``calculate_psnr(videos1, videos2)``,
        called by an eval script that moved the videos to the device)."""
        binds, _declared = self._binds()
        for scope in with_numpy:
            node = scope.node
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or scope.cls is not None \
                    or self._parents.get(id(scope)) is not self.module_scope:
                continue
            receivers = self._open_numpy(scope)
            mine = binds.get(id(scope), [])
            if not receivers or len(mine) > self.MAX_BINDS:
                continue
            params = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}
            # and the names bound from a part of a parameter: video = videos[i], for frame in video
            tainted = _spread(params, mine, lambda value, held: _root_name(value) in held)
            if any(_root_name(receiver) in tainted for receiver in receivers):
                return True
        return False

    def _holds_values(self, scope: Scope) -> bool:
        """Evidence in the scope, a sibling method, or what it calls in the project."""
        if self._has_evidence(scope) or self._calls_project(scope):
            return True
        return scope.cls is not None and self._class_holds_values(scope.cls)
