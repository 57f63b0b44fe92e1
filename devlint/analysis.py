"""Analyses shared by the rules: where an expression is used as a device, and whether a parameter is. The
guards (what runs only with an accelerator) are in guards.py. Rules ask; nothing here reports."""

from __future__ import annotations

import builtins
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from devlint import devices
from devlint.bindings import bindings
from devlint.context import Context, dotted_name, own_method, string_value, walk
from devlint.devices import UseKind
from devlint.lazy import LazyModule
from devlint.project import callee

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

# The device model (devices.py) is the one source of what these analyses look for.
AVAILABILITY_CALLS = devices.AVAILABILITY_CALLS
CUDA_INIT_CALLS = devices.CUDA_INIT_CALLS


is_device_var_name = devices.is_device_name


@dataclass(frozen=True)
class DeviceUse:
    """How an expression is used as a device."""

    kind: UseKind
    expr: cst.BaseExpression  # the outermost expression in the device position
    target: str | None = None  # the variable assigned, for kind "assign"


class DeviceUses:
    """Where string literals (and names) are used as a torch device."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        # every argument in a device position: .to(dev), device=dev, torch.device(dev), map_location=
        self._device_arg_nodes: dict[cst.Arg, UseKind] = {}
        # (enclosing function or None, name) for names passed where a device goes
        self.device_names: set[tuple[cst.FunctionDef | None, str]] = set()
        self._anywhere: set[str] = set()
        # the same, for positions that certainly reach torch (torch.device(), .to(), a torch API's device=)
        self.torch_device_names: set[tuple[cst.FunctionDef | None, str]] = set()
        local_calls: list[tuple[cst.Arg, cst.FunctionDef]] = []
        for call in ctx.nodes(cst.Call):
            for arg, kind in self._device_args(call):
                self._device_arg_nodes[arg] = kind
                local = self._local_function(call)
                if local is not None:
                    local_calls.append((arg, local))
        # device= to a function of this file that only compares or reads its parameter: not a device use
        for arg, func in local_calls:
            param = next((p for p in (*func.params.params, *func.params.kwonly_params)
                          if arg.keyword is not None and p.name.value == arg.keyword.value), None)
            if param is not None and not parameter_used_as_device(ctx, param, self):
                del self._device_arg_nodes[arg]
        for arg in list(self._device_arg_nodes):
            parent = ctx.parent(arg)
            name = dotted_name(arg.value)
            if name and isinstance(parent, cst.Call):
                where = (ctx.enclosing_function(parent), name)
                self.device_names.add(where)
                self._anywhere.add(name)
                if self.reaches_torch(arg):
                    self.torch_device_names.add(where)

    def _local_function(self, call: cst.Call) -> cst.FunctionDef | None:
        """The module-level function of this file that ``call`` calls by name (one definition), or None."""
        if not isinstance(call.func, cst.Name) or self.ctx.qualname(call.func) is not None:
            return None
        defs = [s for s in self.ctx.module.body if isinstance(s, cst.FunctionDef) and s.name.value == call.func.value]
        return defs[0] if len(defs) == 1 else None

    def reaches_torch(self, arg: cst.Arg) -> bool:
        """Is this device argument certainly handed to torch: ``torch.device(arg)``, ``x.to(arg)``, or the
        ``device=`` of a torch-ecosystem API?"""
        call = self.ctx.parent(arg)
        if not isinstance(call, cst.Call):
            return False
        qn = self.ctx.qualname(call.func)
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        return devices.reaches_torch(qn, method)

    def reaches_torch_as(self, name: str, where: cst.CSTNode) -> bool:
        """Is ``name``, bound at ``where``, handed to torch as a device in the same function (or, for a
        module-level name, anywhere)?"""
        func = self.ctx.enclosing_function(where)
        if func is None:
            return any(n == name for _, n in self.torch_device_names)
        return (func, name) in self.torch_device_names

    def used_as_device(self, name: str, where: cst.CSTNode) -> bool:
        """Is ``name``, bound at ``where``, passed as a device in the same function (or, for a
        module-level name, anywhere)?"""
        func = self.ctx.enclosing_function(where)
        if func is None:
            return name in self._anywhere
        return (func, name) in self.device_names

    def is_device_arg(self, arg: cst.Arg) -> bool:
        """Is ``arg`` in a device position (``.to(arg)``, ``device=arg``, ``torch.device(arg)``, ...)?"""
        return arg in self._device_arg_nodes

    def _device_args(self, call: cst.Call) -> list[tuple[cst.Arg, UseKind]]:
        qn = self.ctx.qualname(call.func)
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) and qn is None else None
        out = []
        for i, arg in enumerate(call.args):
            index = i if arg.keyword is None and arg.star == "" else None
            keyword = arg.keyword.value if arg.keyword is not None else None
            kind = devices.call_position(qn, method, index, keyword)
            if kind is not None:
                out.append((arg, kind))
        return out

    def use_of(self, node: cst.BaseExpression) -> DeviceUse | None:
        ctx = self.ctx
        expr: cst.CSTNode = node
        parent = ctx.parent(expr)
        # climb through conditional expressions: "cuda" if ok else "cpu" is used where the IfExp is
        while isinstance(parent, (cst.IfExp, cst.BooleanOperation)) and getattr(parent, "test", None) is not expr:
            expr, parent = parent, ctx.parent(parent)
        assert isinstance(expr, cst.BaseExpression)
        if isinstance(parent, cst.Arg):
            return self._argument_use(parent, expr)
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is expr:
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            for target in targets:
                name = dotted_name(target)
                if name and (self.used_as_device(name, parent) or devices.is_device_name(name)):
                    return DeviceUse(UseKind.ASSIGN, expr, name)
            return None
        if isinstance(parent, cst.DictElement) and parent.value is expr:
            key = string_value(parent.key)
            if key is not None and devices.is_device_name(key):
                return DeviceUse(UseKind.DICT, expr)
            return None
        if isinstance(parent, cst.Param) and parent.default is expr and devices.is_device_name(parent.name.value):
            return DeviceUse(UseKind.DEFAULT, expr)
        return None

    def _argument_use(self, arg: cst.Arg, expr: cst.BaseExpression) -> DeviceUse | None:
        call = self.ctx.parent(arg)
        if not isinstance(call, cst.Call):
            return None
        kind = self._device_arg_nodes.get(arg)
        if kind is not None:
            if kind is UseKind.TORCH_DEVICE and _only_inspected(self.ctx, call):
                return None  # torch.device("cuda") in devices / == x.device / .type: compared, never used
            return DeviceUse(kind, expr)
        func = call.func
        if arg.keyword is None or arg.keyword.value != devices.ARGPARSE_KEYWORD or not isinstance(func, cst.Attribute):
            return None
        options = [string_value(a.value) for a in call.args if a.keyword is None]
        if devices.is_argparse_device(func.attr.value, options) and (
                func.attr.value == devices.ARGPARSE_METHOD or self.ctx.qualname(func) == devices.CLICK_OPTION):
            return DeviceUse(UseKind.ARGPARSE, expr)
        return None


def is_cuda_call(ctx: Context, call: cst.Call) -> bool:
    """``x.cuda(...)``: torch's ``Tensor.cuda`` / ``Module.cuda`` (:func:`devices.is_cuda_method_call`); not
    ``self.cuda(*items)`` in a class that defines its own ``cuda`` method (edge-connect's helper that moves
    items with ``.to(config.DEVICE)``)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or not devices.is_cuda_method_call(
            func.attr.value, ctx.qualname(func) is not None,
            [a.keyword.value if a.keyword is not None else None for a in call.args]):
        return False
    if isinstance(func.value, cst.Name) and func.value.value == "self":
        cls = next((a for a in ctx.ancestors(call) if isinstance(a, cst.ClassDef)), None)
        if cls is not None and any(isinstance(s, cst.FunctionDef) and s.name.value == func.attr.value
                                   for s in cls.body.body):
            return False
    return True


def _only_inspected(ctx: Context, expr: cst.CSTNode) -> bool:
    """Is the value of ``expr`` only compared (``==``, ``in``, ``is``) or read (``.type``, ``.index``)?
    Making a ``torch.device`` object never touches a GPU; only placing a tensor there does."""
    parent = ctx.parent(expr)
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
        return True
    return isinstance(parent, cst.Attribute) and parent.value is expr and parent.attr.value in ("type", "index")


def parameter_used_as_device(ctx: Context, param: cst.Param, uses: DeviceUses | None = None) -> bool:
    """Does the function of ``param`` use it where a device matters: in a device position (``.to(p)``,
    ``device=p``, ``torch.device(p)``), passed on to a callee outside torch (which may do so), or let out
    (assigned, returned, stored)? Reading it (``p == "cuda"``, ``p.type``) or handing it to a torch call in
    no device position (``torch.get_autocast_dtype(p)``) places no tensor."""
    params = ctx.parent(param)  # Param -> Parameters -> FunctionDef / Lambda
    func = ctx.parent(params) if params is not None else None
    name = param.name.value
    default = string_value(param.default) if param.default is not None else None
    uses = uses if uses is not None else device_uses(ctx)
    for node in ctx.nodes(cst.Name):
        if node.value != name or node is param.name or not any(a is func for a in ctx.ancestors(node)):
            continue
        if default is not None and _ruled_out(ctx, node, func, default):
            continue  # if device != "cuda": kwargs["device_map"] = {"": device} (never the default there)
        parent = ctx.parent(node)
        if isinstance(parent, (cst.Attribute, cst.Comparison, cst.ComparisonTarget, cst.Param)):
            continue  # x.device (another object's), device.type (a read), device == "cpu", the parameter itself
        if _rebound_or_unread(ctx, parent):
            continue
        if isinstance(parent, cst.Arg):
            if parent.keyword is node:
                continue  # f(device=...): the keyword, not the variable
            if uses.is_device_arg(parent):
                return True
            call = ctx.parent(parent)
            qn = ctx.qualname(call.func) if isinstance(call, cst.Call) else None
            if qn is None or not qn.startswith("torch."):
                return True  # passed on: the callee may put tensors there
            continue
        return True  # assigned, returned, stored, formatted: it gets out of sight
    return False


def _ruled_out(ctx: Context, node: cst.Name, func: cst.CSTNode | None, value: str) -> bool:
    """Is ``node`` (a read of a parameter whose default is the string ``value``) where a condition says the
    parameter is not ``value``: in the body of ``if device != "cuda":`` / ``if device not in ("cuda", ...):``,
    or in the ``else`` of ``if device == "cuda":``? There the default never arrives."""
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if ancestor is func:
            return False
        if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test:
            in_body = child is ancestor.body
            if _compares_with(ancestor.test, node.value, value, ("!=", "not in") if in_body else ("==", "in")):
                return True
        child = ancestor
    return False


def _compares_with(test: cst.BaseExpression, name: str, value: str, operators: tuple[str, ...]) -> bool:
    """Is ``test`` ``name <op> "value"`` (or, for ``in`` / ``not in``, a tuple, list or set holding it) with
    ``<op>`` one of ``operators``?"""
    if not (isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value == name
            and len(test.comparisons) == 1):
        return False
    target = test.comparisons[0]
    op = {cst.NotEqual: "!=", cst.NotIn: "not in", cst.Equal: "==", cst.In: "in"}.get(type(target.operator))
    if op not in operators:
        return False
    if op in ("!=", "=="):
        return string_value(target.comparator) == value
    return isinstance(target.comparator, (cst.Tuple, cst.List, cst.Set)) and any(
        string_value(e.value) == value for e in target.comparator.elements)


def _rebound_or_unread(ctx: Context, parent: cst.CSTNode | None) -> bool:
    """``device, enabled = "cpu", False`` (the parameter rebound, not used), or ``self.device = device``
    that nothing reads."""
    target = parent
    while isinstance(target, (cst.Element, cst.Tuple, cst.List, cst.StarredElement)):
        target = ctx.parent(target)
    return isinstance(target, cst.AssignTarget) or (isinstance(parent, cst.Assign) and _stored_unread(ctx, parent))


def _stored_unread(ctx: Context, assign: cst.Assign) -> bool:
    """``self.<attr> = value`` where no ``<attr>`` attribute is read anywhere in the file."""
    if len(assign.targets) != 1:
        return False
    target = assign.targets[0].target
    if not (isinstance(target, cst.Attribute) and _is_self(target.value)):
        return False
    attr = target.attr.value
    cls = next((a for a in ctx.ancestors(assign) if isinstance(a, cst.ClassDef)), None)
    if cls is None:
        return False
    # read by the class (self.device) or through an object of it elsewhere (loss.device): any read counts, but
    # a tensor's (`out.device` where the same function reads `out.shape`: no instance of a class that stores
    # its device has a shape)
    # (not a part of what an attribute holds: `self.model.positional_embedding.device` is a tensor's)
    tensors = ctx.shared("analysis.tensor_names", _tensor_names)
    return not any(a.attr.value == attr and a is not target and not isinstance(ctx.parent(a), cst.AssignTarget)
                   and ctx.qualname(a) is None  # torch.device is no read of it
                   and (any(c is cls for c in ctx.ancestors(a)) and not _rebound_first(ctx, a, assign)
                        if _is_self(a.value) else not (
                       isinstance(a.value, cst.Name) and (id(ctx.enclosing_function(a)), a.value.value) in tensors)
                       and not _held_part(a.value))
                   for a in ctx.nodes(cst.Attribute))


def _rebound_first(ctx: Context, read: cst.Attribute, stored: cst.Assign) -> bool:
    """Is ``read`` (``self.device``) preceded, in its function's own body, by another statement of the function
    that assigns the attribute anew, ``self.device = self.model.positional_embedding.device`` (VideoCrafter's
    OpenCLIP embedder's ``forward``)? It reads that value, not the one ``stored``."""
    func = ctx.enclosing_function(read)
    body = func.body.body if func is not None and isinstance(func.body, cst.IndentedBlock) else []
    attr = read.attr.value
    for stmt in body:
        if ctx.order[stmt] >= ctx.order[read]:
            return False
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if isinstance(small, cst.Assign) and small is not stored and any(
                isinstance(t.target, cst.Attribute) and _is_self(t.target.value) and t.target.attr.value == attr
                for t in small.targets):
            return True
    return False


def _held_part(expr: cst.BaseExpression) -> bool:
    """``self.model.positional_embedding``: a part of an object an attribute of ``self`` holds (two attributes
    or more below ``self``), no object of a class that stores its own device."""
    hops = 0
    while isinstance(expr, cst.Attribute):
        expr, hops = expr.value, hops + 1
    return hops >= 2 and _is_self(expr)


def _tensor_names(ctx: Context) -> frozenset[tuple[int, str]]:
    """(the id of a function, or of None for the module's top, a name) for each plain name the function reads a
    tensor-only attribute of (``x.shape``, ``x.dtype``, ``x.view(...)``: devices.TENSOR_ONLY_ATTRIBUTES)."""
    return frozenset((id(ctx.enclosing_function(a)), a.value.value) for a in ctx.nodes(cst.Attribute)
                     if a.attr.value in devices.TENSOR_ONLY_ATTRIBUTES and isinstance(a.value, cst.Name)
                     and a.value.value != "self")


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def device_uses(ctx: Context) -> DeviceUses:
    return ctx.shared("device_uses", DeviceUses)


@dataclass(frozen=True)
class CommandLineOption:
    """An ``argparse`` option: ``parser.add_argument("--device", default="0", help=...)``."""

    dest: str
    keywords: dict[str, cst.BaseExpression]

    def text(self, keyword: str) -> str | None:
        node = self.keywords.get(keyword)
        return string_value(node) if node is not None else None


def command_line_option(call: cst.Call) -> CommandLineOption | None:
    """The option ``call`` (an ``add_argument`` call) declares, with the attribute name argparse gives it."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != devices.ARGPARSE_METHOD:
        return None
    options = [string_value(a.value) for a in call.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    dest = keywords.get("dest")
    name = string_value(dest) if dest is not None else None
    if name is None:
        longs = [o for o in options if o and o.startswith("--")]
        first = longs[0] if longs else next((o for o in options if o), None)
        name = first.lstrip("-").replace("-", "_") if first else None
    return CommandLineOption(name, keywords) if name else None


def command_line_options(ctx: Context) -> dict[str, CommandLineOption]:
    """The file's argparse options by attribute name (``args.<dest>``)."""
    found: dict[str, CommandLineOption] = {}
    for call in ctx.nodes(cst.Call):
        option = command_line_option(call)
        if option is not None:
            found.setdefault(option.dest, option)
    return found


def parameterless_module(ctx: Context, receiver: cst.BaseExpression) -> bool:
    """``Loss().cuda()`` where ``Loss`` is a module class of the project with no parameters, buffers or
    submodules, or torch's own (``nn.CrossEntropyLoss()``, ``nn.ReLU()``: devices.PARAMETERLESS_MODULES, built
    with constant arguments only, also through a name every binding of which is one): ``Module.cuda()`` then
    moves nothing and does not touch CUDA (checked on torch 2.13 CPU)."""
    return _parameterless_value(ctx, receiver, depth=3)


def _parameterless_value(ctx: Context, value: cst.BaseExpression, depth: int) -> bool:
    """:func:`parameterless_module` of a value: a construction, either arm of a conditional expression, a name
    every binding of which is one (``criterion = criterion.cuda()``, a move of the name itself, aside), or a call
    of a function of the project whose every ``return`` is one (CvT's ``build_criterion(config)`` returning
    ``SoftTargetCrossEntropy()``, its own parameterless class, or ``nn.CrossEntropyLoss()``), ``depth`` steps
    deep."""
    if depth < 0:
        return False
    if isinstance(value, cst.IfExp):
        return _parameterless_value(ctx, value.body, depth) and _parameterless_value(ctx, value.orelse, depth)
    if isinstance(value, cst.Name):
        scope = bindings(ctx).resolve(value, value.value)
        bound = scope.bindings.get(value.value, []) if scope is not None else []
        if not bound or not all(isinstance(b.node, (cst.Assign, cst.AnnAssign)) and b.value is not None
                                for b in bound):
            return False
        own = [b.value for b in bound if b.value is not None and not _moves_itself(b.value, value.value)]
        return bool(own) and all(_parameterless_value(ctx, v, depth - 1) for v in own)
    if not isinstance(value, cst.Call):
        return False
    if _torch_parameterless(ctx, value):
        return True
    found = callee(ctx, value)
    if found is not None and isinstance(found[1], cst.ClassDef):
        return parameterless_class(found[0], found[1], value)
    return found is not None and isinstance(found[1], cst.FunctionDef) and depth > 0 \
        and _returns_parameterless(found[0], found[1], depth - 1)


def _returns_parameterless(ctx: Context, func: cst.FunctionDef, depth: int) -> bool:
    """Does every ``return`` of ``func`` give a module that holds nothing to move (:func:`_parameterless_value`)?
    Not a generator, a function with a bare ``return``, or one that defines functions (not read so)."""
    returns = [node for node in walk(func.body) if isinstance(node, (cst.Return, cst.Yield, cst.FunctionDef,
                                                                        cst.Lambda))]
    values = [r.value for r in returns if isinstance(r, cst.Return) and r.value is not None]
    return bool(values) and len(values) == len(returns) and all(_parameterless_value(ctx, v, depth) for v in values)


def _moves_itself(value: cst.BaseExpression, name: str) -> bool:
    """``criterion = criterion.cuda()`` / ``criterion.to(device)``: the name's own module, moved."""
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
        and value.func.attr.value in (devices.CUDA_METHOD, devices.MOVE_METHOD) \
        and isinstance(value.func.value, cst.Name) and value.func.value.value == name


def parameterless_class(cls_ctx: Context, cls: cst.ClassDef, construction: cst.Call | None = None) -> bool:
    """Is ``cls`` a direct ``nn.Module`` subclass of the project whose body can give it no parameter, buffer or
    submodule (a wrapper of a custom autograd function, a loss holding only ``nn.MSELoss()``)? With the
    ``construction`` that builds it, an argument of its ``__init__`` handed to a loss's buffer argument is read
    at that call: ``CrossEntropyLoss2d(ignore_index=255)`` of a class whose ``__init__(self, weight=None, ...)``
    keeps ``nn.NLLLoss(weight, ...)`` holds no buffer, ``CrossEntropyLoss2d(weight=w)`` does."""
    if not any((cls_ctx.qualname(b.value) or "") in ("torch.nn.Module", "torch.nn.modules.module.Module")
               for b in cls.bases):
        return False  # only a direct nn.Module subclass: a base of the project may hold parameters
    init = own_method(cls, "__init__")
    passed = _init_arguments(init, construction) if init is not None and construction is not None else {}
    if init is not None and _keeps_an_argument(cls, init, passed):
        return False  # TemporalShift(net, ...) keeping `self.net = net`: the module it wraps moves with it
    return not any(_may_hold_parameters(cls_ctx, call, cls, passed if cls_ctx.enclosing_function(call) is init
                                        else {})
                   for call in cls_ctx.nodes(cst.Call) if any(a is cls for a in cls_ctx.ancestors(call)))


def _keeps_an_argument(cls: cst.ClassDef, init: cst.FunctionDef, passed: dict[str, cst.BaseExpression]) -> bool:
    """Does ``__init__`` store one of its parameters on ``self`` that the class calls as a module (``self.net =
    net``, then ``self.net(x)``), with a value that is no constant at this construction? The module it wraps
    is its submodule (``self.epsilon = epsilon`` read as a number is none)."""
    params = {p.name.value for p in (*init.params.params, *init.params.kwonly_params)} - {"self"}
    called = {node.func.attr.value for node in walk(cls.body) if isinstance(node, cst.Call)
              and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name)
              and node.func.value.value == "self"}
    for node in walk(init.body):
        if not isinstance(node, cst.Assign) or not isinstance(node.value, cst.Name) \
                or node.value.value not in params:
            continue
        if not any(isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name)
                   and t.target.value.value == "self" and t.target.attr.value in called for t in node.targets):
            continue
        value = passed.get(node.value.value)
        if value is None or not _constant_arg(value):
            return True
    return False


def _init_arguments(init: cst.FunctionDef, call: cst.Call) -> dict[str, cst.BaseExpression]:
    """The value each parameter of ``__init__`` has at ``call`` (passed, else its default), for the parameters
    ``__init__`` never rebinds; nothing when the call unpacks (``*args``, ``**kwargs``)."""
    if any(a.star for a in call.args):
        return {}
    params = list(init.params.params)[1:]  # after self
    values: dict[str, cst.BaseExpression] = {p.name.value: p.default for p in (*params, *init.params.kwonly_params)
                                             if p.default is not None}
    positional = [a.value for a in call.args if a.keyword is None]
    if len(positional) > len(params):
        return {}
    values.update((p.name.value, v) for p, v in zip(params, positional, strict=False))
    values.update((a.keyword.value, a.value) for a in call.args if a.keyword is not None)
    rebound = {t.value for node in walk(init) if isinstance(node, (cst.AssignTarget, cst.AugAssign))
               for t in [node.target] if isinstance(t, cst.Name)}
    return {name: value for name, value in values.items() if name not in rebound}


def frozen_class(cls: cst.ClassDef, built: cst.Call | None) -> bool:
    """Does the module class's ``__init__`` freeze every parameter it made (pytorch-fid's InceptionV3:
    ``for param in self.parameters(): param.requires_grad = requires_grad`` at the end of ``__init__``, the
    parameter defaulting to False), when built by the call ``built``? The value set must be ``False``, or a
    parameter of ``__init__`` whose default is ``False`` that ``built`` does not pass (a construction that is
    not seen, ``built`` None, passes nothing it can be told from)."""
    init = own_method(cls, "__init__")
    if init is None or not isinstance(init.body, cst.IndentedBlock):
        return False
    for stmt in init.body.body:
        value = _freezing_loop(stmt)
        if value is None:
            continue
        if isinstance(value, cst.Name) and value.value == "False":
            return True
        if not isinstance(value, cst.Name):
            return False
        params = [*init.params.posonly_params, *init.params.params]
        found = next((i for i, p in enumerate(params) if p.name.value == value.value), None)
        if found is None:
            param = next((p for p in init.params.kwonly_params if p.name.value == value.value), None)
        else:
            param = params[found]
        default = param.default if param is not None else None
        if not (isinstance(default, cst.Name) and default.value == "False"):
            return False
        if built is None:
            return False
        if any(a.star for a in built.args) or any(a.keyword is not None and a.keyword.value == value.value
                                                  for a in built.args):
            return False
        positional = [a for a in built.args if a.keyword is None]
        return found is None or len(positional) < found  # (`self` is params[0]: argument i is params[i + 1])
    return False


def _freezing_loop(stmt: cst.BaseStatement) -> cst.BaseExpression | None:
    """``for p in self.parameters(): p.requires_grad = X`` (the loop's body that one statement): X."""
    if not (isinstance(stmt, cst.For) and isinstance(stmt.target, cst.Name) and isinstance(stmt.iter, cst.Call)
            and dotted_name(stmt.iter.func) == "self.parameters" and isinstance(stmt.body, cst.IndentedBlock)
            and len(stmt.body.body) == 1 and isinstance(stmt.body.body[0], cst.SimpleStatementLine)):
        return None
    small = stmt.body.body[0].body
    if len(small) != 1 or not isinstance(small[0], cst.Assign) or len(small[0].targets) != 1:
        return None
    target = small[0].targets[0].target
    if dotted_name(target) != f"{stmt.target.value}.requires_grad":
        return None
    return small[0].value


def _torch_parameterless(ctx: Context, expr: cst.BaseExpression,
                         passed: dict[str, cst.BaseExpression] | None = None) -> bool:
    """``nn.CrossEntropyLoss()``, ``nn.Dropout(0.1)``, ``nn.CrossEntropyLoss(reduction=self.reduction)``: a
    torch module that holds no parameter or buffer. A loss that keeps a tensor argument as a buffer
    (``weight=w``, devices.BUFFER_ARGUMENT_MODULES) does so only when that argument is constant: its positional
    arguments and its ``weight`` / ``pos_weight`` keywords; no module takes ``*args`` / ``**kwargs`` here."""
    qualname = ctx.qualname(expr.func) if isinstance(expr, cst.Call) else None
    if isinstance(expr, cst.Call) and qualname in devices.LIBRARY_PARAMETERLESS_MODULES:
        return True  # timm's SoftTargetCrossEntropy(), JsdCrossEntropy(smoothing=s): nothing they are given is kept
    if not isinstance(expr, cst.Call) or qualname not in devices.PARAMETERLESS_MODULES:
        return False
    if any(a.star for a in expr.args):
        return False
    return qualname not in devices.BUFFER_ARGUMENT_MODULES or all(
        _constant_arg(passed[a.value.value] if passed and isinstance(a.value, cst.Name) and a.value.value in passed
                      else a.value) for a in expr.args
        if a.keyword is None or a.keyword.value in devices.BUFFER_KEYWORDS)


def _constant_arg(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)) or (
        isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"))


def _may_hold_parameters(ctx: Context, call: cst.Call, cls: cst.ClassDef,
                         passed: dict[str, cst.BaseExpression] | None = None) -> bool:
    """Can this call in a module class's body give it a parameter, a buffer or a submodule (``passed``: the values
    of its ``__init__``'s parameters at the construction in question, for a call in that ``__init__``)?"""
    if not isinstance(call.func, (cst.Name, cst.Attribute)):
        return True  # models_mae.__dict__[name](...), registry[kind](...), get_cls()(...): a lookup may build one
    qn = ctx.qualname(call.func) or ""
    name = (dotted_name(call.func) or "").split(".")[-1]
    if name in ("register_buffer", "register_parameter", "register_module", "add_module", "Parameter"):
        return True
    if _torch_parameterless(ctx, call, passed):
        return False  # self.criterion = nn.MSELoss(reduction="mean"): a submodule with nothing to move
    if qn.startswith("torch.nn.") and name[:1].isupper():
        return True  # a layer: a submodule with parameters
    if qn == "torch.hub.load":
        return True  # a hub model
    made = callee(ctx, call)
    if made is not None and isinstance(made[1], cst.ClassDef):
        other_ctx, other = made[0], made[1]
        return other is not cls and any(
            "Module" in (dotted_name(b.value) or "") or (other_ctx.qualname(b.value) or "").startswith("torch.nn")
            for b in other.bases)  # a submodule of the project
    enclosing = ctx.enclosing_function(call)
    if made is not None and isinstance(made[1], cst.FunctionDef) and made[1] is not enclosing \
            and enclosing is not None and enclosing.name.value == "__init__":
        return True  # a function of the project may build a model for __init__ to keep (MiDaS's load_model(t))
    if isinstance(ctx.parent(call), cst.Raise) or (not qn and name in _BUILTIN_NAMES):
        return False  # raise NotImplementedError(...): an exception, no submodule
    return name[:1].isupper() and made is None and not qn.startswith("torch.")  # unknown class: may be a module


_BUILTIN_NAMES = frozenset(vars(builtins))

_TEST_DIRS = frozenset({"test", "tests"})


def test_module(path: str) -> bool:
    """A test module (``test_*.py``, ``*_test.py``, ``conftest.py``, or a module right in a ``tests`` or ``test``
    folder): the files its tests load are the ones the test session writes (DEV005), the modules its tests
    build run where each test puts them (DEV009)."""
    folder, name = os.path.split(os.path.normpath(path))
    return pytest_module(path) or name == "conftest.py" or os.path.basename(folder) in _TEST_DIRS


def pytest_module(path: str) -> bool:
    """A module pytest collects (``test_*.py``, ``*_test.py``): run by the test runner, imported by no other
    module (not a test folder's helpers or ``conftest.py``, which others import or pytest loads for them)."""
    name = os.path.basename(path)
    return name.startswith("test_") or name.endswith("_test.py")


def is_script(module: cst.Module) -> bool:
    """Does the module run code at its top level: an ``if __name__ == "__main__":`` block, a loop, a ``with``, or
    a call as a statement (``train()``, ``print(model)``)?"""
    for stmt in module.body:
        if isinstance(stmt, (cst.For, cst.While, cst.With)):
            return True
        if isinstance(stmt, cst.If) and "__name__" in _dotted_names(stmt.test):
            return True
        if isinstance(stmt, cst.SimpleStatementLine) and any(
                isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) for small in stmt.body):
            return True
    return False


def _dotted_names(expr: cst.BaseExpression) -> set[str]:
    """The names compared in a condition (``__name__`` of ``__name__ == "__main__"``)."""
    if isinstance(expr, cst.Comparison):
        return {dotted_name(expr.left) or "", *(dotted_name(c.comparator) or "" for c in expr.comparisons)}
    return set()


# What asks whether an accelerator is there, and the devices a fallback names.
AVAILABILITY_QUERIES = devices.AVAILABILITY_CALLS | {"torch.accelerator.current_accelerator"}
OTHER_DEVICES = ("cpu", "mps")


def chooses_device_with_fallback(ctx: Context, func: cst.FunctionDef) -> bool:
    """Does ``func`` (a function of the file ``ctx``) ask whether an accelerator is there, name "cpu" or "mps",
    and return a value? Kept per function: every file that calls it asks."""
    def answer(_ctx: Context) -> bool:
        nodes = list(walk(func.body))
        return (any(isinstance(n, cst.Call) and asks_availability(ctx, n) for n in nodes)
                and any(isinstance(n, cst.SimpleString) and string_value(n) in OTHER_DEVICES for n in nodes)
                and any(isinstance(n, cst.Return) and n.value is not None for n in nodes))

    return ctx.shared(f"analysis.chooser.{id(func)}", answer)


def asks_availability(ctx: Context, call: cst.Call) -> bool:
    """``torch.cuda.is_available()`` and the like anywhere; ``torch.cuda.device_count()`` as a test or
    compared with 0 (``> 0``, ``== 0``, ``>= 1``), not as a number of GPUs (``n * device_count()``,
    ``device_count() > 1``)."""
    name = ctx.qualname(call.func)
    if name not in AVAILABILITY_QUERIES or _only_reported(ctx, call):
        return False
    if not name.endswith("_count"):
        return True
    parent = ctx.parent(call)
    if isinstance(parent, (cst.If, cst.IfExp, cst.While, cst.Assert, cst.BooleanOperation, cst.UnaryOperation)):
        return True
    if isinstance(parent, cst.Comparison) and len(parent.comparisons) == 1:
        target = parent.comparisons[0]
        other = target.comparator if parent.left is call else parent.left
        number = int(other.value) if isinstance(other, cst.Integer) else None
        op = target.operator
        if parent.left is not call:  # 0 < n: read it as n > 0
            op = {cst.LessThan: cst.GreaterThan(), cst.GreaterThan: cst.LessThan(), cst.LessThanEqual:
                  cst.GreaterThanEqual(), cst.GreaterThanEqual: cst.LessThanEqual()}.get(type(op), op)
        return number is not None and _zero_test(op, number)
    return False


_REPORTERS = frozenset({"print", "info", "debug", "warning", "warn", "log", "format", "write"})


def _only_reported(ctx: Context, call: cst.Call) -> bool:
    """Is the query's answer only printed or logged (``print('CUDA available: {}'.format(
    torch.cuda.is_available()))``, ``logger.info(...)``, an f-string in one)? Such code chooses nothing."""
    node: cst.CSTNode = call
    for anc in ctx.ancestors(call):
        if isinstance(anc, cst.Call) and node is not anc.func:
            func = anc.func
            called = func.attr.value if isinstance(func, cst.Attribute) else (dotted_name(func) or "")
            if called not in _REPORTERS:
                return False
            if called != "format":
                return True
        elif not isinstance(anc, (cst.Arg, cst.FormattedStringExpression, cst.FormattedString, cst.Attribute)):
            return False  # a statement, an operator, an assignment: the answer is used
        node = anc
    return False


def _zero_test(op: cst.BaseCompOp, number: int) -> bool:
    """Does ``count <op> number`` tell none from some?"""
    if isinstance(op, (cst.Equal, cst.NotEqual, cst.GreaterThan, cst.LessThanEqual)):
        return number == 0
    return isinstance(op, (cst.GreaterThanEqual, cst.LessThan)) and number == 1
