"""What a name certainly refers to where a fix puts it.

A fix may only write a name that is bound there when the fixed code runs: ``torch`` (or the alias the file
binds to the torch module), ``device`` (or another device variable). This module answers, per module and
with Python's scoping rules (function, lambda, class and comprehension scopes; class scopes are not seen
from their methods; ``global``/``nonlocal``), two questions:

- :func:`module_name_at`: a name bound to an imported module at a node, by an import that certainly ran
  (not under ``if TYPE_CHECKING:`` or any other condition) and is not shadowed by a parameter or local;
- :func:`device_name_at`: a variable certainly holding a device at a node: every binding of it in its
  scope is a device expression, and one of them runs before the node on every path.

Both are conservative: "not sure" is None, and the fixer then writes an inline expression or no fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from devlint.context import Context, dotted_name, own_method
from devlint.devices import (
    CANONICAL_DEVICE_VARS,
    CURRENT_ACCELERATOR,
    DEVICE_ATTRIBUTE,
    DEVICE_CONSTRUCTOR,
    InvalidDeviceString,
    parse_device,
)
from devlint.lazy import LazyModule

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

# torch functions that return a torch.device
_DEVICE_FUNCS = frozenset({DEVICE_CONSTRUCTOR, "torch.get_default_device"})


def _scope_types() -> tuple[type[cst.CSTNode], ...]:
    return (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


@dataclass
class Binding:
    name: str
    node: cst.CSTNode  # the construct that binds: Assign, For, Param, Import, FunctionDef, ...
    value: cst.BaseExpression | None = None  # the value, for `name = value` / `name: T = value`


@dataclass
class Scope:
    node: cst.CSTNode  # Module, FunctionDef, Lambda, ClassDef or a comprehension
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    declared: set[str] = field(default_factory=set)  # global / nonlocal names

    def add(self, binding: Binding) -> None:
        self.bindings.setdefault(binding.name, []).append(binding)


class Bindings:
    """Every binding of every name, by scope (one pass over the indexed nodes)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.scopes: dict[cst.CSTNode, Scope] = {ctx.module: Scope(ctx.module)}
        for kind in _scope_types():
            for node in ctx.nodes(kind):
                self.scopes[node] = Scope(node)
        self._add_assignments()
        self._add_targets()
        self._add_imports()
        self._add_definitions()
        self._add_declarations()
        self._add_match_captures()

    def _add_assignments(self) -> None:
        """``x = ...`` (the value kept for a plain ``name = value``), ``x: T = ...``, ``x += ...``."""
        ctx = self.ctx
        for assign in ctx.nodes(cst.Assign):
            for target in assign.targets:
                value = assign.value if isinstance(target.target, cst.Name) and len(assign.targets) == 1 else None
                self._targets(target.target, assign, value)
        for ann in ctx.nodes(cst.AnnAssign):
            self._targets(ann.target, ann, ann.value)
        for aug in ctx.nodes(cst.AugAssign):
            self._targets(aug.target, aug, None)

    def _add_targets(self) -> None:
        """The other bindings of a target: ``for``, comprehensions, ``with ... as``, ``except ... as``, ``:=``
        (in the enclosing function's scope) and ``del``."""
        ctx = self.ctx
        for loop in ctx.nodes(cst.For):
            self._targets(loop.target, loop, None)
        for comp in ctx.nodes(cst.CompFor):
            self._targets(comp.target, comp, None)
        for item in ctx.nodes(cst.WithItem):
            if item.asname is not None:
                self._targets(item.asname.name, item, None)
        for handler in ctx.nodes(cst.ExceptHandler):
            if handler.name is not None:
                self._targets(handler.name.name, handler, None)
        for walrus in ctx.nodes(cst.NamedExpr):
            self._bind(walrus.target, walrus, self._function_scope(walrus))
        for dele in ctx.nodes(cst.Del):
            self._targets(dele.target, dele, None)

    def _add_imports(self) -> None:
        """``import a.b`` binds ``a``, ``import a.b as c`` binds ``c``, ``from a import b [as c]`` binds ``b``
        (``c``); a star import binds nothing this can name."""
        ctx = self.ctx
        for imp in ctx.nodes(cst.Import):
            for alias in imp.names:
                asname = alias.asname.name if alias.asname is not None else None
                bound = asname.value if isinstance(asname, cst.Name) else (dotted_name(alias.name) or "").split(".")[0]
                self._add(Binding(bound, imp), imp)
        for imp_from in ctx.nodes(cst.ImportFrom):
            if isinstance(imp_from.names, cst.ImportStar):
                continue
            for alias in imp_from.names:
                name = alias.asname.name if alias.asname is not None else alias.name
                if isinstance(name, cst.Name):
                    self._add(Binding(name.value, imp_from), imp_from)

    def _add_definitions(self) -> None:
        """``def f`` / ``class C`` bind their name; a function's or lambda's parameters bind in its scope."""
        ctx = self.ctx
        for func in ctx.nodes(cst.FunctionDef):
            self._add(Binding(func.name.value, func), func)
        for cls in ctx.nodes(cst.ClassDef):
            self._add(Binding(cls.name.value, cls), cls)
        for func in ctx.nodes(cst.FunctionDef):
            self._add_params(func)
        for lam in ctx.nodes(cst.Lambda):
            self._add_params(lam)

    def _add_params(self, func: cst.FunctionDef | cst.Lambda) -> None:
        params = func.params
        for p in [*params.posonly_params, *params.params, *params.kwonly_params]:
            self.scopes[func].add(Binding(p.name.value, p, p.default))
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                self.scopes[func].add(Binding(star.name.value, star))

    def _add_declarations(self) -> None:
        """``global`` / ``nonlocal`` names: declared in the scope, bound elsewhere."""
        declarations: list[cst.Global | cst.Nonlocal] = [*self.ctx.nodes(cst.Global), *self.ctx.nodes(cst.Nonlocal)]
        for decl in declarations:
            scope = self.scopes[self.scope_of(decl)]
            scope.declared.update(item.name.value for item in decl.names)

    def _add_match_captures(self) -> None:
        """``case x`` / ``case [*rest]`` capture patterns (a LibCST without match statements has none)."""
        for kind_name in ("MatchAs", "MatchStar"):
            kind: type[cst.CSTNode] | None = getattr(cst, kind_name, None)
            if kind is not None:
                for node in self.ctx.nodes(kind):
                    name = getattr(node, "name", None)
                    if isinstance(name, cst.Name):
                        self._add(Binding(name.value, node), node)

    # --- building ------------------------------------------------------------------------
    def _targets(self, target: cst.CSTNode, node: cst.CSTNode, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self._add(Binding(target.value, node, value), node)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._targets(el.value, node, None)
        elif isinstance(target, cst.StarredElement):
            self._targets(target.value, node, None)

    def _add(self, binding: Binding, node: cst.CSTNode) -> None:
        self.scopes[self.scope_of(node)].add(binding)

    def _bind(self, target: cst.CSTNode, node: cst.CSTNode, scope: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            self.scopes[scope].add(Binding(target.value, node, None))

    # --- scopes --------------------------------------------------------------------------
    def scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The scope a name used (or bound) at ``node`` belongs to."""
        kinds = _scope_types()
        child = node
        for anc in self.ctx.ancestors(node):
            if isinstance(anc, kinds):
                if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
                    if child is anc.body:
                        return anc
                elif isinstance(anc, cst.Lambda):
                    if child is anc.body or isinstance(child, cst.Parameters):
                        return anc
                else:
                    return anc  # a comprehension (its first iterable is the enclosing scope's: not told apart)
            child = anc
        return self.ctx.module

    def _function_scope(self, node: cst.CSTNode) -> cst.CSTNode:
        """Where a walrus binds: the nearest enclosing scope that is not a comprehension."""
        scope = self.scope_of(node)
        while isinstance(scope, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            scope = self.scope_of(scope)
        return scope

    def chain(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """The scopes whose names ``node`` can see, innermost first (class scopes only when innermost)."""
        out = []
        scope = self.scope_of(node)
        first = True
        while True:
            if first or not isinstance(scope, cst.ClassDef):
                out.append(scope)
            first = False
            if scope is self.ctx.module:
                return out
            scope = self.scope_of(scope)

    def resolve(self, node: cst.CSTNode, name: str) -> Scope | None:
        """The scope whose binding of ``name`` a use at ``node`` reads, or None (a builtin, unbound, or
        declared global/nonlocal somewhere on the way: not followed)."""
        for scope_node in self.chain(node):
            scope = self.scopes[scope_node]
            if name in scope.declared:
                return None
            if name in scope.bindings:
                return scope
        return None


def bindings(ctx: Context) -> Bindings:
    return ctx.shared("bindings", Bindings)


# --- statements and dominance -------------------------------------------------------------------
def _body(scope: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(scope, cst.Module):
        return list(scope.body)
    body = getattr(scope, "body", None)
    if isinstance(body, cst.IndentedBlock):
        return list(body.body)
    return [body] if isinstance(body, cst.CSTNode) else []


def _top_statement(ctx: Context, node: cst.CSTNode, scope: cst.CSTNode) -> cst.CSTNode | None:
    """The statement of ``scope``'s own body that contains ``node``."""
    body = set(map(id, _body(scope)))
    if id(node) in body:
        return node
    for anc in ctx.ancestors(node):
        if id(anc) in body:
            return anc
        if anc is scope:
            return None
    return None


def _unconditional(ctx: Context, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
    """Does ``node`` run whenever its scope's body runs to its statement (no if/loop/try/with around it
    inside the scope, except a try body)?"""
    for anc in ctx.ancestors(node):
        if anc is scope:
            return True
        if isinstance(anc, (cst.If, cst.For, cst.While, cst.ExceptHandler, cst.Else, cst.Finally, cst.Match,
                            cst.IfExp, cst.BooleanOperation, cst.Lambda)):
            return False
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)) and anc is not scope:
            return False
    return False


# --- modules --------------------------------------------------------------------------------------
def _imports_module(ctx: Context, binding: Binding, module: str) -> bool:
    """Does this binding bind the module itself (``import torch``, ``import torch.nn``,
    ``import torch as T``)?"""
    node = binding.node
    if not isinstance(node, cst.Import):
        return False
    for alias in node.names:
        full = dotted_name(alias.name) or ""
        if alias.asname is not None:
            if isinstance(alias.asname.name, cst.Name) and alias.asname.name.value == binding.name and full == module:
                return True
        elif full.split(".")[0] == binding.name == module.split(".")[0] and binding.name == module:
            return True
    return False


def _type_checking_only(ctx: Context, node: cst.CSTNode) -> bool:
    return any(
        isinstance(anc, cst.If) and (dotted_name(anc.test) or "").split(".")[-1] == "TYPE_CHECKING"
        for anc in ctx.ancestors(node)
    )


def _module_names(ctx: Context, table: Bindings, module: str) -> list[str]:
    """The names bound anywhere in the module to ``module`` itself, the module's own name first."""
    return sorted({b.name for s in table.scopes.values() for bs in s.bindings.values() for b in bs
                   if _imports_module(ctx, b, module)}, key=lambda n: (n != module, n))


def module_name_at(ctx: Context, node: cst.CSTNode, module: str = "torch") -> str | None:
    """A name that certainly refers to ``module`` at ``node``, or None."""
    table = bindings(ctx)
    candidates = ctx.shared(f"bindings.module_names.{module}", lambda c: _module_names(c, table, module))
    for name in candidates:
        scope = table.resolve(node, name)
        if scope is None:
            continue
        found = scope.bindings[name]
        if not all(_imports_module(ctx, b, module) and not _type_checking_only(ctx, b.node) for b in found):
            continue  # also bound to something else in that scope (a parameter, `torch = None`, ...)
        if not any(_unconditional(ctx, b.node, scope.node) or _in_try_body(ctx, b.node, scope.node) for b in found):
            continue
        if scope.node is table.scope_of(node) and not _bound_before(ctx, found, node, scope.node):
            continue
        return name
    return None


def _in_try_body(ctx: Context, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
    child = node
    for anc in ctx.ancestors(node):
        if anc is scope:
            return True
        if isinstance(anc, cst.Try) and child is not anc.body:
            return False
        if isinstance(anc, (cst.If, cst.For, cst.While, cst.With, cst.FunctionDef, cst.ClassDef, cst.Match)):
            return False
        child = anc
    return False


def _bound_before(ctx: Context, found: list[Binding], node: cst.CSTNode, scope: cst.CSTNode) -> bool:
    """Does one of ``found`` (bindings in ``scope``, the scope of ``node``) run before ``node`` on every path?"""
    site = _top_statement(ctx, node, scope)
    if site is None:
        return False
    body = _body(scope)
    index = {id(s): i for i, s in enumerate(body)}
    at = index[id(site)]
    for b in found:
        stmt = _top_statement(ctx, b.node, scope)
        if stmt is not None and index[id(stmt)] < at and (
                _unconditional(ctx, b.node, scope) or _in_try_body(ctx, b.node, scope)):
            return True
    return False


def module_importable_at(ctx: Context, node: cst.CSTNode, name: str = "torch") -> bool:
    """Would a module-level ``import torch`` make ``name`` refer to torch at ``node``? Only when no scope
    on the way binds ``name`` otherwise and the module does not bind it at all."""
    table = bindings(ctx)
    for scope_node in table.chain(node):
        scope = table.scopes[scope_node]
        if name in scope.bindings or name in scope.declared:
            return False
    return True


# --- devices --------------------------------------------------------------------------------------
def is_device_expr(ctx: Context, expr: cst.BaseExpression | None, self_name: str | None = None) -> bool:
    """Does ``expr`` certainly evaluate to a device: a valid device string, ``torch.device(...)``,
    ``x.device``, a conditional whose branches are devices, a function of this file that only returns
    devices? ``self_name``: a name that holds a device or None (``device = device or "cpu"``)."""
    if expr is None:
        return False
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        return _is_device_string(expr)
    if isinstance(expr, cst.IfExp):
        return is_device_expr(ctx, expr.body, self_name) and is_device_expr(ctx, expr.orelse, self_name)
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):
        left = expr.left
        ok_left = (isinstance(left, cst.Name) and left.value == self_name) or is_device_expr(ctx, left, self_name)
        return ok_left and is_device_expr(ctx, expr.right, self_name)
    if _is_accelerator_device(ctx, expr):
        return True
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == DEVICE_ATTRIBUTE and ctx.qualname(expr) is None  # x.device, not torch.device
    if isinstance(expr, cst.Call):
        qn = ctx.qualname(expr.func)
        if qn in _DEVICE_FUNCS:
            return True
        if isinstance(expr.func, cst.Name) and qn is None:
            return _returns_device(ctx, expr.func.value)
    return False


def _is_accelerator_device(ctx: Context, expr: cst.BaseExpression) -> bool:
    """What a ``device-fallback = "accelerator"`` fix writes: ``torch.accelerator.current_accelerator().type``,
    or with an index ``f"{torch.accelerator.current_accelerator().type}:1"``."""
    if isinstance(expr, cst.FormattedString):
        return _is_accelerator_index(ctx, expr)
    return _is_accelerator_type(ctx, expr)


def _is_accelerator_type(ctx: Context, expr: cst.BaseExpression) -> bool:
    """``torch.accelerator.current_accelerator().type``: a device type string where there is an accelerator
    (without one it raises; it never gives a non-device)."""
    return (isinstance(expr, cst.Attribute) and expr.attr.value == "type" and isinstance(expr.value, cst.Call)
            and ctx.qualname(expr.value.func) == CURRENT_ACCELERATOR)


def _is_accelerator_index(ctx: Context, expr: cst.FormattedString) -> bool:
    """``f"{torch.accelerator.current_accelerator().type}:1"`` (what a device-fallback fix writes for ``cuda:1``)."""
    parts = expr.parts
    return (len(parts) == 2 and isinstance(parts[0], cst.FormattedStringExpression)
            and parts[0].conversion is None and parts[0].format_spec is None
            and _is_accelerator_type(ctx, parts[0].expression) and isinstance(parts[1], cst.FormattedStringText)
            and parts[1].value[:1] == ":" and parts[1].value[1:].isdigit() and parts[1].value[1:].isascii()
            and (parts[1].value == ":0" or not parts[1].value.startswith(":0")))


def _is_device_string(expr: cst.SimpleString | cst.ConcatenatedString) -> bool:
    """A plain string literal that ``torch.device`` accepts."""
    from devlint.context import string_value

    value = string_value(expr)
    if value is None:
        return False
    try:
        parse_device(value)
    except InvalidDeviceString:
        return False
    return True


def _returns_device(ctx: Context, name: str) -> bool:
    """Is ``name`` a module-level function of this file whose every return is a device expression?"""
    funcs = [s for s in ctx.module.body if isinstance(s, cst.FunctionDef) and s.name.value == name]
    if len(funcs) != 1:
        return False
    func = funcs[0]
    returns = [r for r in ctx.nodes(cst.Return) if ctx.enclosing_function(r) is func]
    if not returns or not all(is_device_expr(ctx, r.value) and not isinstance(r.value, cst.Call) for r in returns):
        return False
    # it must not fall off its end (returning None): the last statement returns
    body = _body(func)
    last = body[-1] if body else None
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)


def _device_binding(ctx: Context, b: Binding, name: str) -> bool:
    if isinstance(b.node, cst.Param):
        if b.node.default is None:
            # a required parameter: a device when annotated so, or used as one by its function
            annotation = b.node.annotation.annotation if b.node.annotation is not None else None
            if annotation is not None and ctx.qualname(annotation) == DEVICE_CONSTRUCTOR:
                return True
            from devlint.analysis import device_uses

            return b.node.star == "" and device_uses(ctx).used_as_device(name, b.node)
        return is_device_expr(ctx, b.node.default)
    if isinstance(b.node, (cst.Assign, cst.AnnAssign)):
        return is_device_expr(ctx, b.value, self_name=name)
    return False


def _resolves_none(ctx: Context, stmt: cst.CSTNode, name: str) -> bool:
    """``if name is None: name = <device>`` (no else)."""
    if not isinstance(stmt, cst.If) or stmt.orelse is not None:
        return False
    test = stmt.test
    is_none = isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value == name \
        and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Is) \
        and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) \
        and isinstance(test.expression, cst.Name) and test.expression.value == name
    if not (is_none or negated):
        return False
    return any(
        isinstance(s, cst.SimpleStatementLine) and any(
            isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
            and small.targets[0].target.value == name and is_device_expr(ctx, small.value, name)
            for small in s.body)
        for s in _body(stmt)
    )


def _certain_in_scope(ctx: Context, scope: Scope, name: str, site: cst.CSTNode) -> bool:
    """Every binding of ``name`` in ``scope`` is a device (or the ``None`` a resolution replaces), and
    one of them runs before ``site`` on every path."""
    found = scope.bindings[name]
    return _only_devices(ctx, found, name) and _device_before(ctx, scope, found, name, site)


def _only_devices(ctx: Context, found: list[Binding], name: str) -> bool:
    """Is every one of ``found`` a device binding, a ``device=None`` parameter, or an assignment of
    ``if name is None: name = <device>``?"""
    resolvers = [b for b in found if isinstance(b.node, cst.Assign) and any(
        _resolves_none(ctx, anc, name) for anc in ctx.ancestors(b.node) if isinstance(anc, cst.If))]
    for b in found:
        if b in resolvers or _device_binding(ctx, b, name):
            continue
        if isinstance(b.node, cst.Param) and isinstance(b.node.default, cst.Name) and b.node.default.value == "None":
            continue  # device=None: a device only once resolved (checked in _device_before)
        return False
    return True


def _device_before(ctx: Context, scope: Scope, found: list[Binding], name: str, site: cst.CSTNode) -> bool:
    """Does a device binding among ``found`` run before ``site`` on every path: a parameter that is a device,
    or a statement of ``scope``'s body before the site's that resolves ``name is None`` or binds a device
    unconditionally?"""
    site_stmt = _top_statement(ctx, site, scope.node)
    if site_stmt is None:
        return False
    body = _body(scope.node)
    at = next(i for i, s in enumerate(body) if s is site_stmt)
    certain = False
    for b in found:
        if isinstance(b.node, cst.Param):
            certain = certain or _device_binding(ctx, b, name)
    for stmt in body[:at]:
        if _resolves_none(ctx, stmt, name):
            certain = True
            continue
        for b in found:
            if (b.node is stmt or any(a is stmt for a in ctx.ancestors(b.node))) \
                    and _unconditional(ctx, b.node, scope.node) and _device_binding(ctx, b, name):
                certain = True
    return certain


def device_name_at(ctx: Context, node: cst.CSTNode) -> str | None:
    """A variable that certainly holds a device at ``node`` (``device``, ``DEVICE``, ``self.device``, ...):
    the innermost scope's first."""
    table = bindings(ctx)
    for scope_node in table.chain(node):
        scope = table.scopes[scope_node]
        for name in CANONICAL_DEVICE_VARS:
            if name in scope.bindings and table.resolve(node, name) is scope \
                    and _certain_in_scope(ctx, scope, name, node):
                return name
    return _self_device(ctx, node)


def _self_device(ctx: Context, node: cst.CSTNode) -> str | None:
    """``self.device`` in a method of a class whose ``__init__`` sets it, unconditionally, to a device."""
    func = ctx.enclosing_function(node)
    if func is None or not func.params.params or func.params.params[0].name.value != "self":
        return None
    table = bindings(ctx)
    if table.resolve(node, "self") is not table.scopes.get(func):
        return None
    block = ctx.parent(func)  # FunctionDef -> IndentedBlock -> ClassDef
    cls = ctx.parent(block) if block is not None else None
    if not isinstance(cls, cst.ClassDef):
        return None
    init = own_method(cls, "__init__")
    if init is None or func is init:
        return None
    return "self.device" if _init_sets_device(ctx, cls, init) else None


def _init_sets_device(ctx: Context, cls: cst.ClassDef, init: cst.FunctionDef) -> bool:
    """Is every ``self.device = ...`` in ``cls`` a plain assignment of a device, one of them in ``init``
    where it always runs?"""
    sets = []
    for assign in ctx.nodes(cst.Assign):
        for target in assign.targets:
            if dotted_name(target.target) == "self.device" and any(a is cls for a in ctx.ancestors(assign)):
                sets.append(assign)
    others: list[cst.AnnAssign | cst.AugAssign] = [*ctx.nodes(cst.AnnAssign), *ctx.nodes(cst.AugAssign)]
    for aug in others:
        if dotted_name(aug.target) == "self.device" and any(a is cls for a in ctx.ancestors(aug)):
            return False
    if not sets or not all(is_device_expr(ctx, a.value) and len(a.targets) == 1 for a in sets):
        return False
    return any(ctx.enclosing_function(a) is init and _unconditional(ctx, a, init) for a in sets)
