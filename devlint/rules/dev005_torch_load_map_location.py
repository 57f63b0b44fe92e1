"""DEV005: torch.load (or torch.jit.load) without map_location in code that can run without CUDA."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from devlint import devices
from devlint.analysis import is_cuda_call, parameterless_module, test_module
from devlint.bindings import device_name_at
from devlint.context import Context, dotted_name, string_value, walk
from devlint.diagnostics import Applicability, Evidence, Finding, Fix, FixAvailability
from devlint.guards import gpu_flag, guards
from devlint.lazy import LazyModule
from devlint.rules.base import Invalid, Rule, Valid, insert_after, replace_token
from devlint.rules.fixes import preferred_quote, quote_at
from devlint.screen import AstIndex, Scope, dotted
from devlint.screen import walk as screen_walk
from devlint.templates import template

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

# torch 2.13's own error for a checkpoint saved on a GPU, loaded where CUDA is unavailable
TORCH_ERROR = ("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False")
# torch.jit.load of a module saved on a GPU, on a CPU-only build of torch 2.13
JIT_ERROR = "Could not run 'aten::empty_strided' with arguments from the 'CUDA' backend"


@dataclass(frozen=True)
class CheckpointEvidence(Evidence):
    """The loader called (``torch.load`` / ``torch.jit.load``) and the ``map_location`` the fix passes
    (``'"cpu"'``, ``"device"``; None: no fix)."""

    loader: str
    map_location: str | None


_OMITTED = "omitted"  # no map_location at all


def _map_location(call: cst.Call, position: int) -> cst.Arg | str | None:
    """What ``call`` (a loader whose ``map_location`` is positional argument ``position``) passes as
    ``map_location``: :data:`_OMITTED` when it certainly passes none (no such keyword, fewer positional
    arguments, no ``*args`` / ``**kwargs`` that may hold it, and at least one argument), the argument when
    it passes the literal ``None`` (torch's default: the same as none), else None (given, or unknown)."""
    if not call.args:
        return None
    positional = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            positional += 1
            if positional == position + 1:
                return arg if _is_none(arg.value) else None
        elif arg.keyword.value == devices.MAP_LOCATION_KEYWORD:
            return arg if _is_none(arg.value) else None
    return _OMITTED


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _ast_omits_map_location(call: ast.Call, position: int) -> bool:
    """Does ``call`` pass no ``map_location``, or ``None`` (:func:`_map_location` on CPython's ``ast``, for
    the screen)?"""
    if not (call.args or call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return False
    if any(k.arg is None for k in call.keywords):
        return False
    given = [k.value for k in call.keywords if k.arg == devices.MAP_LOCATION_KEYWORD]
    if len(call.args) > position:
        given.append(call.args[position])
    return all(isinstance(v, ast.Constant) and v.value is None for v in given)


def _all_scopes(scope: Scope) -> Iterator[Scope]:
    """The scopes defined in ``scope``, at any depth."""
    for child in scope.children:
        yield child
        yield from _all_scopes(child)


def _screen_model_state(tree: ast.Module, scope: ast.AST) -> bool:
    """:func:`_model_state` over CPython's ``ast``, saying "maybe" wherever it could say yes: in the function
    the load runs in (``scope``; the module for a load outside every function, or in a class body), a
    ``load_state_dict`` call, a module-only method (``.eval()``, ``.parameters()``), an item under a
    model-state key (``ckpt["state_dict"]``), a call of a name the code binds (``model = torch.load(p)`` then
    ``model(x)``), or a ``return`` with a value (a loader function whose callers the rule follows)."""
    function = isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef))
    nodes = list(screen_walk(scope if function else tree))
    bound = {dotted(n) for n in nodes if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Store)}
    bound |= {dotted(n.value) for n in nodes if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)}
    for node in nodes:
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else (dotted(func) or "").split(".")[-1]
            if name.endswith(devices.STATE_LOADER) or (isinstance(func, ast.Attribute)
                                                       and name in devices.MODULE_ONLY_METHODS):
                return True
            if isinstance(func, (ast.Name, ast.Attribute)) and dotted(func) in bound:
                return True
        elif isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.lower() in _STATE_KEYS:
                return True
        elif function and isinstance(node, ast.Return) and node.value is not None:
            return True
    return False


def _scope(ctx: Context, node: cst.CSTNode) -> cst.CSTNode:
    """The function a node runs in, or the module."""
    func = ctx.enclosing_function(node)
    return func if func is not None else ctx.module


def _in_scope(ctx: Context, node: cst.CSTNode, scope: cst.CSTNode, strict: bool = False) -> bool:
    """Is ``node`` in ``scope``'s code: inside the function (nested functions included), or anywhere in the
    module for the module (``strict``: only outside every function)?"""
    if scope is ctx.module:
        return not strict or ctx.enclosing_function(node) is None
    return any(anc is scope for anc in ctx.ancestors(node))


def _target_names(target: cst.BaseExpression) -> list[str]:
    """The names a binding target binds or updates: ``x``, ``self.x``, ``d`` of ``d[k] = ...``, each name of
    a tuple."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _target_names(el.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    if isinstance(target, cst.Subscript):
        return _target_names(target.value)
    name = dotted_name(target)
    return [name] if name else []


def _bindings(ctx: Context, scope: cst.CSTNode) -> list[tuple[list[str], cst.BaseExpression]]:
    """(names bound, the value they take) for every binding in ``scope``: assignments, ``for`` loops and
    comprehensions (the iterable), ``with ... as``."""
    out: list[tuple[list[str], cst.BaseExpression]] = []
    for assign in ctx.nodes(cst.Assign):
        if _in_scope(ctx, assign, scope):
            out.append(([n for t in assign.targets for n in _target_names(t.target)], assign.value))
    others: list[cst.AnnAssign | cst.AugAssign] = [*ctx.nodes(cst.AnnAssign), *ctx.nodes(cst.AugAssign)]
    for other in others:
        if other.value is not None and _in_scope(ctx, other, scope):
            out.append((_target_names(other.target), other.value))
    loops: list[cst.For | cst.CompFor] = [*ctx.nodes(cst.For), *ctx.nodes(cst.CompFor)]
    for loop in loops:
        if _in_scope(ctx, loop, scope):
            out.append((_target_names(loop.target), loop.iter))
    for item in ctx.nodes(cst.WithItem):
        if item.asname is not None and _in_scope(ctx, item, scope):
            out.append((_target_names(item.asname.name), item.item))
    return out


def _names_in(expr: cst.CSTNode) -> set[str]:
    """The dotted names read anywhere in ``expr`` (``ckpt``, ``self.ckpt``, ``self``)."""
    return {name for node in walk(expr) if isinstance(node, (cst.Name, cst.Attribute))
            for name in [dotted_name(node)] if name}


def _strip(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The value a part is taken from: ``ckpt`` of ``ckpt["model"]``, ``ckpt.model``, ``ckpt.get("model")``,
    ``model.to(device)``."""
    while True:
        if isinstance(expr, (cst.Subscript, cst.Attribute)):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                and expr.func.attr.value in ("get", "to", "cpu", "cuda", "float", "half"):
            expr = expr.func.value
        else:
            return expr


class _Flow:
    """Where a loaded value goes in the function that loads it: the names that hold it or a part of it
    (``direct``: the value itself or an item of it, ``ckpt["model"]``; ``derived``: anything computed from
    it, ``{k[7:]: v for k, v in ckpt.items()}``)."""

    def __init__(self, ctx: Context, load: cst.BaseExpression, scope: cst.CSTNode) -> None:
        self.ctx, self.load = ctx, load
        self.direct: set[str] = set()
        self.derived: set[str] = set()
        bindings = [(names, value, _names_in(value), self._holds_load(value)) for names, value in _bindings(ctx, scope)]
        for _ in range(6):  # a few steps of propagation: enough for a checkpoint's usual handling
            before = len(self.direct) + len(self.derived)
            for names, value, reads, has_load in bindings:
                if has_load or reads & (self.direct | self.derived):
                    self.derived.update(names)
                    if self.is_direct(value):
                        self.direct.update(names)
            if len(self.direct) + len(self.derived) == before:
                break

    def _holds_load(self, expr: cst.CSTNode) -> bool:
        return expr is self.load or any(anc is expr for anc in self.ctx.ancestors(self.load))

    def is_direct(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` the loaded value or an item of it?"""
        base = _strip(expr)
        return base is self.load or dotted_name(base) in self.direct

    def mentions(self, expr: cst.CSTNode) -> bool:
        return self._holds_load(expr) or bool(_names_in(expr) & (self.direct | self.derived))


def _flow(ctx: Context, load: cst.BaseExpression) -> _Flow:
    """The :class:`_Flow` of a loaded value in the function that loads it, built once per load (whether it is
    model state, read in BasicSR's layout, handed to an optimizer: each asks)."""
    flows = ctx.shared("dev005.flows", _no_flows)
    held = flows.get(id(load))
    if held is None:
        held = flows[id(load)] = _Flow(ctx, load, _scope(ctx, load))
    return held


def _no_flows(ctx: Context) -> dict[int, _Flow]:
    return {}


def _model_state(ctx: Context, load: cst.BaseExpression, depth: int = 1) -> bool:
    """Is the loaded value model state: handed (or something computed from it) to a ``load_state_dict``, or
    used as a module (called, ``.eval()``, ``.parameters()``, ...)? A function of the file that returns it
    (``return torch.load(path)``) is followed to its calls in the file, ``depth`` times."""
    scope = _scope(ctx, load)
    flow = _flow(ctx, load)
    if any(_uses_as_state(flow, call) for call in ctx.nodes(cst.Call) if _in_scope(ctx, call, scope)):
        return True
    if any(_state_item(flow, item) for item in ctx.nodes(cst.Subscript) if _in_scope(ctx, item, scope)):
        return True
    if depth <= 0 or not isinstance(scope, cst.FunctionDef):
        return False
    returned = any(r.value is not None and flow.is_direct(r.value) for r in ctx.nodes(cst.Return)
                   if ctx.enclosing_function(r) is scope)
    return returned and any(_model_state(ctx, site, depth - 1) for site in _calls_of(ctx, scope))


def _uses_as_state(flow: _Flow, call: cst.Call) -> bool:
    """Does ``call`` take the loaded value as model state?"""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else (dotted_name(func) or "").split(".")[-1]
    if name.endswith(devices.STATE_LOADER) and any(flow.mentions(a.value) for a in call.args):
        receiver = (dotted_name(func.value) or "") if isinstance(func, cst.Attribute) else ""
        return not devices.SCALAR_STATE_HOLDER.search(receiver.split(".")[-1])
    if isinstance(func, cst.Attribute) and name in devices.MODULE_ONLY_METHODS and flow.is_direct(func.value):
        return True
    return isinstance(func, (cst.Name, cst.Attribute)) and dotted_name(func) in flow.direct  # model(x)


# The keys under which a checkpoint keeps a model's state (``ckpt["state_dict"]``, ``ckpt["model"]``)
_STATE_KEYS = frozenset({"state_dict", "model_state_dict", "model_state", "model", "net", "network", "ema",
                         "model_ema"})


# BasicSR's checkpoint layout: its save_network (copied by every fork: KAIR, GFPGAN, CodeFormer, Hallo2's
# video super-resolution) writes ``{"params": ..., "params_ema": ...}`` after moving each parameter to the CPU
# (``state_dict[key] = param.cpu()``), and the weights published in that layout were written by it.
_CPU_SAVED_KEYS = frozenset({"params", "params_ema"})


def _cpu_saved_layout(ctx: Context, load: cst.Call) -> bool:
    """Is the loaded value read under a key of BasicSR's layout (:data:`_CPU_SAVED_KEYS`): ``torch.load(p)
    ["params_ema"]``, or ``ckpt[param_key]`` where ``param_key`` is a parameter whose default is one
    (KAIR's ``load_network(self, load_path, network, strict=True, param_key='params')``)?"""
    scope = _scope(ctx, load)
    flow = _flow(ctx, load)
    defaults: dict[str, str | None] = {}
    if isinstance(scope, cst.FunctionDef):
        params = scope.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is not None:
                defaults[param.name.value] = string_value(param.default)
    for item in ctx.nodes(cst.Subscript):
        if len(item.slice) != 1 or not isinstance(item.slice[0].slice, cst.Index) \
                or not _in_scope(ctx, item, scope) or not flow.is_direct(item.value):
            continue
        key = item.slice[0].slice.value
        name = string_value(key) if not isinstance(key, cst.Name) else defaults.get(key.value)
        if name in _CPU_SAVED_KEYS:
            return True
    return False


def _state_item(flow: _Flow, item: cst.Subscript) -> bool:
    """Is ``item`` the loaded value's (or a direct part's) entry under a key that names model state
    (``ckpt["state_dict"]``, ``ckpt["model"]``): what a training run saved from its devices?"""
    if len(item.slice) != 1 or not isinstance(item.slice[0].slice, cst.Index) or not flow.is_direct(item.value):
        return False
    key = string_value(item.slice[0].slice.value)
    return key is not None and key.lower() in _STATE_KEYS


def _calls_of(ctx: Context, func: cst.FunctionDef) -> list[cst.Call]:
    """The calls in this file of a function or method named like ``func`` (``load(p)``, ``self.load(p)``)."""
    name = func.name.value
    return [call for call in ctx.nodes(cst.Call)
            if (isinstance(call.func, cst.Name) and call.func.value == name)
            or (isinstance(call.func, cst.Attribute) and call.func.attr.value == name)]


def _saved_before(ctx: Context, load: cst.Call) -> bool:
    """Does the function that loads first write the same file with ``torch.save`` (``torch.save(obj, path)``
    ... ``torch.load(path)``, also in a function nested in it), or does every call of the loading function in
    the file come after such a save in its caller (``train()`` saves ``config.save_path``, then calls
    ``test(config, ...)``, which loads it)? A round trip in one process, whose tensors were on this machine's
    devices."""
    source = ctx.code(_unwrap_path(load.args[0].value))
    scope = _scope(ctx, load)
    if _saves_to(ctx, source, scope, load):
        return True
    if not isinstance(scope, cst.FunctionDef):
        return False
    calls = [c for c in _calls_of(ctx, scope) if not _in_scope(ctx, c, scope)]
    literal = isinstance(_unwrap_path(load.args[0].value), (cst.SimpleString, cst.ConcatenatedString))
    return bool(calls) and all(
        (_passes_path(ctx, scope, load, c) and _saves_to(ctx, source, _scope(ctx, c), c))
        or (literal and _saver_called_before(ctx, source, c)) for c in calls)


def _saver_called_before(ctx: Context, source: str, call: cst.Call) -> bool:
    """Is a function of the module's top level that saves to ``source`` (a string literal: the same file from
    any function) called before ``call`` in the same flow (``save()`` then ``restore_net()`` at a script's top
    level, each naming ``'net.pkl'``)?"""
    scope = _scope(ctx, call)
    defined = {stmt.name.value: stmt for stmt in ctx.module.body if isinstance(stmt, cst.FunctionDef)}
    for other in ctx.nodes(cst.Call):
        if ctx.order[other] >= ctx.order[call] or not _in_scope(ctx, other, scope, strict=True):
            continue
        saver = defined.get(other.func.value) if isinstance(other.func, cst.Name) else None
        if saver is not None and _saves_to(ctx, source, saver, call) and _runs_on_the_way(ctx, other, call):
            return True
    return False


def _runs_on_the_way(ctx: Context, first: cst.CSTNode, later: cst.CSTNode) -> bool:
    """Does every run that reaches ``later`` pass ``first`` (the block holding ``first``'s statement holds
    ``later`` too: not ``if args.train: save()`` before an unconditional ``restore()``)?"""
    block = next((a for a in ctx.ancestors(first) if isinstance(a, (cst.IndentedBlock, cst.Module))), None)
    return block is not None and any(a is block for a in ctx.ancestors(later))


def _saves_to(ctx: Context, source: str, scope: cst.CSTNode, before: cst.CSTNode) -> bool:
    """Is there a ``torch.save(obj, <source>)`` in ``scope`` before ``before`` (also ``torch.jit.save(m,
    <source>)``, or a traced module's ``traced.save(<source>)``, for a TorchScript load)?"""
    jit = ctx.qualname(before.func) == "torch.jit.load" if isinstance(before, cst.Call) else False
    for call in ctx.nodes(cst.Call):
        if ctx.order[call] > ctx.order[before] or not _in_scope(ctx, call, scope, strict=True):
            continue
        qualname = ctx.qualname(call.func)
        positional = [a for a in call.args if a.keyword is None]
        if qualname in (devices.SAVE_FUNC, "torch.jit.save"):
            target = positional[1:2] + [a for a in call.args if a.keyword is not None and a.keyword.value == "f"]
        elif jit and qualname is None and isinstance(call.func, cst.Attribute) and call.func.attr.value == "save":
            target = positional[:1]
        else:
            continue
        if any(ctx.code(_unwrap_path(a.value)) == source for a in target):
            return True
        if isinstance(before, cst.Call) and before.args and (template := _path_template(before.args[0].value)) \
                and any(_path_template(a.value) == template for a in target):
            return True  # torch.save(m, "{}.pkl".format(epoch)) ... torch.load("{}.pkl".format(best_epoch))
    return False


def _path_template(expr: cst.BaseExpression) -> str | None:
    """The file-name pattern of a path built from a string with holes, the holes blanked: ``"{}.pkl".format(e)``
    and ``f"{e}.pkl"`` both give ``"{}.pkl"``; None for any other path. A save and a load of the same pattern in
    one run write and read the run's own files (pyGAT saves each epoch's weights, then loads the best one)."""
    expr = _unwrap_path(expr)
    formatted = isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
        and expr.func.attr.value == "format" and isinstance(expr.func.value, cst.SimpleString)
    parts = template(expr) if formatted or isinstance(expr, cst.FormattedString) else None
    if parts is None or all(isinstance(part, str) for part in parts):
        return None
    return "".join(part if isinstance(part, str) else "{}" for part in parts)


def _unwrap_path(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The path inside ``str(path)`` / ``os.fspath(path)`` (the same file either way)."""
    if isinstance(expr, cst.Call) and len(expr.args) == 1 and not expr.args[0].keyword \
            and dotted_name(expr.func) in ("str", "os.fspath"):
        return expr.args[0].value
    return expr


def _passes_path(ctx: Context, func: cst.FunctionDef, load: cst.Call, call: cst.Call) -> bool:
    """Does ``call`` hand ``func`` the name its load's path starts from under the same name (``test(config,
    ...)`` for ``torch.load(config.save_path)``), so that the caller's ``config.save_path`` is the same file?
    A path from a module-level name needs nothing."""
    root = _root(load.args[0].value)
    params = [p.name.value for p in func.params.params]
    if root is None or root not in params:  # a literal path, or one built from a module-level name
        return not any(p.name.value == root for p in func.params.kwonly_params)
    by_keyword = [a for a in call.args if a.keyword is not None and a.keyword.value == root]
    positional = [a for a in call.args if a.keyword is None and a.star == ""]
    index = params.index(root)
    arg = by_keyword[0] if by_keyword else positional[index] if index < len(positional) else None
    return arg is not None and ctx.code(arg.value) == root


# A call that fetches a file from the internet: load_file_from_url, download_url_to_file, hf_hub_download,
# open_url, urlopen, gdown.download
_FETCH = re.compile(r"download|url|hub", re.IGNORECASE)


def _called_name(call: cst.Call) -> str:
    """The last part of the called name (``load_file_from_url`` of ``utils.load_file_from_url(...)``)."""
    return (dotted_name(call.func) or "").split(".")[-1]


def _fetches_or_ships(ctx: Context, expr: cst.CSTNode, depth: int = 1) -> bool:
    """Does ``expr`` name ``__file__`` (a file shipped beside the code) or call a fetch from the internet,
    also through a function of the project that returns what it fetched (``get_model_path(name)`` that
    returns ``hf_hub_download(...)``; ``depth`` such hops)?"""
    for node in walk(expr):
        if isinstance(node, cst.Name) and node.value == "__file__":
            return True
        if isinstance(node, cst.Call) and (_FETCH.search(_called_name(node))
                                           or (depth > 0 and _returns_fetched(ctx, node, depth - 1))):
            return True
    return False


def _returns_fetched(ctx: Context, call: cst.Call, depth: int) -> bool:
    """Is ``call`` a call of a function of the project every ``return`` of which hands back a path it fetched
    or ships (:func:`_fetches_or_ships`)?"""
    from devlint.project import callee

    found = callee(ctx, call)
    if found is None or not isinstance(found[1], cst.FunctionDef):
        return False
    other, func = found
    returns = [r.value for r in other.nodes(cst.Return) if r.value is not None and other.enclosing_function(r) is func]
    return bool(returns) and all(any(_fetches_or_ships(other, origin, depth) for origin in _origins(other, value, func))
                                 for value in returns)


_PRETRAINED = re.compile(r"pre_?train", re.IGNORECASE)


def _names_pretrained(expr: cst.CSTNode) -> bool:
    """Does ``expr`` read a name or attribute spelled ``pretrain*`` / ``pre_train*`` (``args.pretrained_path``,
    ``Config.pretrain_model_path``): the path of pretrained weights, published by someone else?"""
    return any(isinstance(node, cst.Name) and _PRETRAINED.search(node.value) for node in walk(expr))


def _if_arms(ctx: Context, node: cst.CSTNode, scope: cst.CSTNode,
             stop: tuple[type[cst.CSTNode], ...] = ()) -> Iterator[tuple[cst.If, bool, cst.CSTNode | None]]:
    """The ``if`` statements ``node`` is in an arm of, innermost first, up to ``scope`` (or a ``stop`` node):
    each with whether ``node`` is in its body (else in its ``else`` / ``elif``) and its other arm (None: none)."""
    child: cst.CSTNode = node
    for anc in ctx.ancestors(node):
        if anc is scope or isinstance(anc, stop):
            return
        if isinstance(anc, cst.If) and (child is anc.body or child is anc.orelse):
            in_body = child is anc.body
            yield anc, in_body, anc.orelse if in_body else anc.body
        child = anc


def _if_pretrained(ctx: Context, load: cst.Call, scope: cst.CSTNode) -> bool:
    """Does ``load`` run only when pretrained weights are asked for: in the body of an ``if`` (in the loading
    function) whose test reads a ``pretrain*`` name (``if self.pretrained:``, ``if args.pretrain == True:``)?"""
    return any(in_body and _names_pretrained(stmt.test) for stmt, in_body, _ in _if_arms(ctx, load, scope))


def _origins(ctx: Context, expr: cst.BaseExpression, scope: cst.CSTNode) -> list[cst.BaseExpression]:
    """``expr`` and the values the names it reads are bound to in ``scope``, three assignments back."""
    values: dict[str, list[cst.BaseExpression]] = {}
    for names, value in _bindings(ctx, scope):
        for name in names:
            values.setdefault(name, []).append(value)
    found, frontier = [expr], [expr]
    for _ in range(3):
        frontier = [v for e in frontier for name in _names_in(e) for v in values.get(name, []) if v not in found]
        found.extend(frontier)
    return found


def _published(ctx: Context, load: cst.Call) -> bool:
    """Is the loaded file one published with or for the code: a path built from ``__file__`` (shipped beside
    it) or a file fetched from the internet in the function that loads (``path = load_file_from_url(url)``,
    ``with open_url(url) as f``, ``gdown.download(url, path)``)? Its device is the publisher's choice, which
    devlint cannot see."""
    scope = _scope(ctx, load)
    arg = load.args[0].value
    origins = _origins(ctx, arg, scope)
    if any(_fetches_or_ships(ctx, e) for e in origins):
        return True
    # pretrained weights by name; not a checkpoint that resumes an optimizer (YOLOP's cfg.MODEL.PRETRAINED,
    # whose ['optimizer'] the training loads back: the project's own training checkpoint)
    named = any(_names_pretrained(e) for e in origins) or _if_pretrained(ctx, load, scope) \
        or (isinstance(scope, cst.FunctionDef) and _PRETRAINED.search(scope.name.value) is not None)
    if named and not _feeds_optimizer(ctx, load):
        return True  # (def load_pretrained_ckpt(self): the published weights the model starts from)
    # a download in the function to the path loaded, or to one of the paths it may hold (fastMRI's
    # `download_model(url, MODEL_FNAMES[c])` then `state_dict_file = MODEL_FNAMES[c]`)
    sources = {_path_key(ctx, arg)} | {_path_key(ctx, e) for e in origins}
    if any(_FETCH.search(_called_name(call))
           and any(_path_key(ctx, a.value) in sources for a in call.args)
           for call in ctx.nodes(cst.Call) if _in_scope(ctx, call, scope)):
        return True
    return _local_copy(ctx, load, arg, scope)


def _path_key(ctx: Context, expr: cst.BaseExpression) -> str:
    """What a path argument names, to match a download's target with the load's source: a string literal's
    normalised path (``'./model.pth'`` is ``"model.pth"``), else the expression's code."""
    value = string_value(expr) if isinstance(expr, cst.SimpleString) else None
    return os.path.normpath(value) if value else ctx.code(expr)


def _local_copy(ctx: Context, load: cst.Call, arg: cst.BaseExpression, scope: cst.CSTNode) -> bool:
    """Is the load one arm of an ``if`` (in the loading function) that tests the loaded path (``if path is
    None:``) and whose other arm fetches published weights (``load_state_dict_from_url(URL)``,
    ``torch.hub.load(...)``, ``load_pretrained_vgg16()``, ``vgg16(pretrained=True)``)? The path is then a
    local copy of those weights, for offline use."""
    path_names = _names_in(arg)
    return any(other is not None and _names_in(stmt.test) & path_names and any(_fetches_weights(n) for n in walk(other))
               for stmt, _, other in _if_arms(ctx, load, scope))


def _fetches_weights(node: cst.CSTNode) -> bool:
    """Is ``node`` a call that fetches published weights: a download from a URL or a hub, or a pretrained
    model (a function named ``*pretrained*``, a ``pretrained=True`` argument)?"""
    if not isinstance(node, cst.Call):
        return False
    name = _called_name(node)
    if _FETCH.search(name) or "pretrained" in name.lower():
        return True
    return any(a.keyword is not None and a.keyword.value == "pretrained"
               and isinstance(a.value, cst.Name) and a.value.value == "True" for a in node.args)


def _cpu_only_program(ctx: Context) -> bool:
    """Is the file part of a program that never touches an accelerator and writes its own checkpoints: no
    Python file of its directory (the file alone, outside a project; regular files only: a FIFO would block)
    mentions CUDA, a GPU, mps or xpu, and one of them calls ``torch.save``? What such a program loads, it
    saved from CPU tensors."""
    texts = list(_folder_texts(ctx))
    if any(devices.ACCELERATOR_MENTION.search(text) for text in texts):
        return False
    save = devices.SAVE_FUNC.rsplit(".", 1)[1].encode()
    return any(re.search(rb"\b" + save + rb"\s*\(", text) for text in texts)


def _moves_to_cpu(node: cst.CSTNode) -> bool:
    """A ``.cpu()`` call or ``.to("cpu")``."""
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return False
    if node.func.attr.value == "cpu":
        return True
    return node.func.attr.value == devices.MOVE_METHOD and bool(node.args) \
        and devices.is_cpu_device(string_value(node.args[0].value) or "")


def _root(expr: cst.BaseExpression) -> str | None:
    """The name a chain of attributes, items and method calls starts from (``model`` of
    ``model.eval().cpu()``, of ``model.module.state_dict()``)."""
    while True:
        if isinstance(expr, (cst.Subscript, cst.Attribute)):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        else:
            return expr.value if isinstance(expr, cst.Name) else None


# torch.save written out, or imported by name: what a sibling file's checkpoints may be written with
_TORCH_SAVE = re.compile(rb"\btorch\s*\.\s*save\s*\(|from\s+torch(?:\.serialization)?\s+import[^\n]*\bsave\b")
# what writes a TorchScript archive: torch.jit.save, or a traced or scripted module's .save() (a call: not
# the @torch.jit.script decorator of a function)
_JIT_WRITERS = re.compile(rb"\bjit\s*\.\s*(?:save|trace|trace_module|script)\s*\(")


# what writes a checkpoint: torch.save, and the trainers and hubs that call it for you; TorchScript's writers
_CHECKPOINT_WRITERS = re.compile(
    _TORCH_SAVE.pattern + rb"|\bsave_checkpoint\s*\(|\bModelCheckpoint\s*\(|\.save_pretrained\s*\(|\.save_state\s*\("
    rb"|\.save_model\s*\(|\b(?:xm|accelerator|fabric)\s*\.\s*save\s*\(|" + _JIT_WRITERS.pattern)


def _loads_others_checkpoints(ctx: Context) -> bool:
    """Is the file part of a project (a run over more than one file) none of whose files writes a checkpoint
    (no ``torch.save``, ``save_checkpoint``, Lightning's ``ModelCheckpoint``, ``save_pretrained``, ...)? The
    checkpoints it loads are then published by someone else, on a device devlint cannot see."""
    project = ctx.project
    return project is not None and len(project.paths) > 1 and not project.any_file(_CHECKPOINT_WRITERS)


def _no_jit_writer(ctx: Context) -> bool:
    """In a run over more than one file: does none of them write a TorchScript archive (no ``torch.jit.save``,
    no ``torch.jit.trace`` or ``torch.jit.script`` whose module's ``.save()`` writes one)? The archives
    ``torch.jit.load`` reads are then traced elsewhere (a user's export, a release), on a device devlint cannot
    see, whatever else the project saves (:func:`_loads_others_checkpoints` for TorchScript)."""
    project = ctx.project
    return project is not None and len(project.paths) > 1 and not project.any_file(_JIT_WRITERS)


def _may_hold_gpu_state(ctx: Context, load: cst.Call, loader: str) -> bool:
    """May the loaded file hold tensors a GPU run left there: model state (not data, a cache, metrics, scalar
    state), or a TorchScript module of a project that traces its own?"""
    if loader == "torch.jit.load":
        return not ctx.shared("dev005.no_jit_writer", _no_jit_writer)
    return _model_state(ctx, load)


def _no_writer_beside(ctx: Context) -> bool:
    """In a run over more than one file: does neither the file nor another Python file of its folder write a
    checkpoint? The load then reads what a program elsewhere wrote (a demo, an inference or conversion script
    beside no training): most often published weights, whose device devlint cannot see."""
    project = ctx.project
    if project is None or len(project.paths) <= 1:
        return False
    return not any(_CHECKPOINT_WRITERS.search(data) for data in _folder_texts(ctx))


def _folder_texts(ctx: Context) -> Iterator[bytes]:
    """The file's own bytes, then (in a project run) those of the other Python files of its folder, each read
    when asked for (Project.siblings: a caller that stops early depends on no more than it read)."""
    yield (ctx.text or ctx.module.code).encode("utf-8", "replace")
    if ctx.project is not None:
        yield from ctx.project.siblings(ctx.path)


def _saves_cpu_state(ctx: Context) -> bool:
    """Does the program write its checkpoints from the CPU: the file calls ``torch.save``, every call saves a
    value moved there (``torch.save(model.cpu().state_dict(), p)``, ``{k: v.cpu() ...}``) or a value of a
    name whose last move before it in the same function is to the CPU (``model.eval().cpu()`` then
    ``torch.save(model.state_dict(), p)``; a state dict whose items were replaced by CPU copies), leaving
    out optimizers' state, and no other Python file of its directory calls ``torch.save``? What such a
    program loads into a network, it saved from CPU tensors."""
    if not ctx.shared("dev005.saves_cpu_state", _cpu_saver):
        return False
    return ctx.project is None or not any(_TORCH_SAVE.search(data) for data in ctx.project.siblings(ctx.path))


def _cpu_saver(ctx: Context) -> bool:
    saves = [c for c in ctx.nodes(cst.Call) if ctx.qualname(c.func) == devices.SAVE_FUNC]
    saves = [save for save in saves if not (save.args and _optimizer_state(save.args[0].value))]
    if not saves:
        return False
    for save in saves:
        if not save.args or save.args[0].keyword is not None:
            return False
        saved = save.args[0].value
        if any(_moves_to_cpu(n) for n in walk(saved)):
            continue
        root = _root(saved)
        scope = _scope(ctx, save)
        moves: list[cst.CSTNode] = [call for call in ctx.nodes(cst.Call) if _in_scope(ctx, call, scope)
                                    and _root(call) == root and _is_move(call) and ctx.order[call] < ctx.order[save]]
        moves += [assign for assign in ctx.nodes(cst.Assign) if _in_scope(ctx, assign, scope)
                  and ctx.order[assign] < ctx.order[save] and _item_moved(assign, root)]
        if root is None or not moves or not _moves_to_cpu(_last_move(max(moves, key=lambda n: ctx.order[n]))):
            return False  # not moved, or moved back (``model.to(device).train()``) since
    return True


def _item_moved(assign: cst.Assign, root: str | None) -> bool:
    """Is ``assign`` ``root[key] = <value>`` with a move in its value (``state_dict[key] = param.cpu()`` in a
    loop over the state's items: BasicSR's and KAIR's ``save_network``)?"""
    return root is not None and any(
        isinstance(t.target, cst.Subscript) and _root(t.target) == root for t in assign.targets) \
        and any(_moves_to_cpu(n) or _is_move(n) for n in walk(assign.value))


def _is_move(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _MOVES


def _last_move(node: cst.CSTNode) -> cst.CSTNode:
    """The move a statement makes: the call itself, or the move in an item assignment's value."""
    if isinstance(node, cst.Assign):
        return next(n for n in walk(node.value) if _is_move(n))
    return node


def _optimizer_state(saved: cst.BaseExpression) -> bool:
    """Is ``saved`` an optimizer's state (``optimizer.state_dict()``, ``self.optimizer_G.state_dict()``)? A
    file of its own, read back by an optimizer's ``load_state_dict``: a network's load does not read it."""
    return isinstance(saved, cst.Call) and isinstance(saved.func, cst.Attribute) \
        and saved.func.attr.value == "state_dict" and _names_optimizer(saved.func.value)


def _feeds_optimizer(ctx: Context, load: cst.Call) -> bool:
    """Does the loaded value (or what is computed from it) go to an optimizer's ``load_state_dict``?"""
    scope = _scope(ctx, load)
    flow = _flow(ctx, load)
    for call in ctx.nodes(cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == devices.STATE_LOADER \
                and _names_optimizer(func.value) and _in_scope(ctx, call, scope) \
                and any(flow.mentions(a.value) for a in call.args):
            return True
    return False


def _names_optimizer(expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a name or attribute whose last part names an optimizer (``optimizer``, ``self.optim_G``)?"""
    return bool(_OPTIMIZER.search((dotted_name(expr) or "").rsplit(".", 1)[-1]))


_OPTIMIZER = re.compile(r"optim", re.IGNORECASE)


_MOVES = frozenset({"cpu", "cuda", devices.MOVE_METHOD})


def _gpu_only_as_written(ctx: Context) -> bool:
    """Does the file put its work on CUDA with no fallback anywhere (a hard-coded ``.cuda()`` / ``"cuda"``
    that DEV001 reports, and no path without CUDA: the test DEV006 makes)? Such a program stops at its first
    CUDA use on a machine without one, before a checkpoint's location matters: DEV001 reports that."""
    from devlint.rules.dev006_unguarded_cuda_call import device_agnostic

    if device_agnostic(ctx) or _gpu_flag_branch(ctx):
        return False
    return bool(_dev001_rows(ctx)) or any(_hardcoded_device_helper(ctx, call) for call in ctx.nodes(cst.Call))


def _gpu_flag_branch(ctx: Context) -> bool:
    """Does the file branch on a flag named for the GPU (``if self.gpu_mode:``, ``if cuda:``)? With the flag
    off it has a path without CUDA, whatever the flag's default."""
    return any(gpu_flag(stmt.test) for stmt in ctx.nodes(cst.If))


def _hardcoded_device_helper(ctx: Context, call: cst.Call) -> bool:
    """Is ``call`` a call of a device helper of another file of the project (``helper.get_device(args)``: its
    name says device or GPU) that builds its device from a ``"cuda"`` string (``gpu_string = "cuda:"`` then
    the ids), in a file with no fallback? The program's device is then CUDA on every path."""
    from devlint.project import callee
    from devlint.rules.dev006_unguarded_cuda_call import device_agnostic

    name = (dotted_name(call.func) or "").rsplit(".", 1)[-1].lower()
    if "device" not in name and "gpu" not in name:
        return False
    found = callee(ctx, call)
    if found is None or found[0] is ctx or not isinstance(found[1], cst.FunctionDef):
        return False
    other, func = found
    return not device_agnostic(other) and any(
        isinstance(node, cst.SimpleString) and (string_value(node) or "").startswith("cuda")
        for node in walk(func))


def _other_arm_maps(ctx: Context, load: cst.Call) -> bool:
    """Is ``load`` one arm of an ``if`` that tests the device (its test names the CPU, CUDA or a GPU) whose
    other arm loads onto the CPU (``if cpu: torch.load(p, map_location="cpu") else: torch.load(p)``)? The code
    handles the machine without CUDA in the other arm: this one is its GPU path."""
    innermost = next(_if_arms(ctx, load, _scope(ctx, load), stop=(cst.ClassDef, cst.Lambda)), None)
    if innermost is None:
        return False
    stmt, _, other = innermost
    return other is not None and _DEVICE_TEST.search(ctx.code(stmt.test)) is not None \
        and any(_maps_to_cpu(ctx, n) for n in walk(other))


# an if that chooses by the machine's device (`if cpu:`, `if args.gpu is None:`, `if not
# torch.cuda.is_available():`), not by another backend (`if is_torch_xla_available():`)
_DEVICE_TEST = re.compile(r"cpu|cuda|gpu", re.IGNORECASE)


def _maps_to_cpu(ctx: Context, node: cst.CSTNode) -> bool:
    """Is ``node`` a loader call whose ``map_location`` maps to the CPU (``"cpu"``, ``torch.device("cpu")``,
    ``lambda storage, loc: storage``)?"""
    if not isinstance(node, cst.Call):
        return False
    position = devices.CHECKPOINT_LOADERS.get(ctx.qualname(node.func) or "")
    if position is None:
        return False
    given = [a.value for a in node.args if a.keyword is not None and a.keyword.value == "map_location"]
    given += [a.value for a in node.args[position:position + 1] if a.keyword is None and not a.star]
    return any(isinstance(v, cst.Lambda) or "cpu" in ctx.code(v) for v in given)


def _after_cuda_crash(ctx: Context, load: cst.Call, moves_only: bool = False) -> bool:
    """Does every path to ``load`` in its function first stop a run without CUDA: a hard-coded CUDA use DEV001
    reports (``criterion = DataParallel(model).cuda()``), a ``.cuda()`` move DEV001 reads as GPU-only by design,
    ``torch.cuda.set_device(...)``, or an ``if`` whose every arm does one of these or raises? Without CUDA the
    program stops there, before the load: DEV001's finding (or the design) is what stands in its way.
    ``moves_only``: only what raises there without CUDA counts (a ``.cuda()`` move, ``set_device``), not any
    other line DEV001 reports (``torch.device("cpu" if opt.no_cuda else "cuda")`` stops nothing)."""
    rows = frozenset() if moves_only else _dev001_rows(ctx)
    scope = _scope(ctx, load)
    child: cst.CSTNode = load
    for anc in ctx.ancestors(load):
        body = getattr(anc, "body", None)
        statements = body if isinstance(body, (list, tuple)) else ()
        if child in statements and any(_crashes(ctx, s, rows) for s in statements[:statements.index(child)]):
            return True
        if anc is scope or isinstance(anc, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            return False
        child = anc
    return False


def _called_only_after_cuda_crash(ctx: Context, load: cst.Call) -> bool:
    """Is ``load`` in a function (or method) that the linted tree calls, each call after something that stops a
    run without CUDA (:func:`_after_cuda_crash` at the call: FUNIT's ``trainer.cuda()`` at the top of
    ``train.py``, then ``trainer.resume(checkpoint_directory, ...)``)? Every call of its name counts, whatever it
    is called on; none seen, or a tree too wide to look at, and it is reported."""
    func = ctx.enclosing_function(load)
    if func is None:
        return False
    project = ctx.project
    calls = project.calls_named(func.name.value, resolving=False) if project is not None else [
        (ctx, c) for c in ctx.nodes(cst.Call) if (dotted_name(c.func) or "").rpartition(".")[2] == func.name.value]
    return bool(calls) and all(
        site_ctx.enclosing_function(site) is not func and _after_cuda_crash(site_ctx, site, moves_only=True)
        for site_ctx, site in calls or ())


def _crashes(ctx: Context, statement: cst.CSTNode, rows: frozenset[int], arm: bool = False) -> bool:
    """Does ``statement`` stop a run without CUDA on every path through it: a simple statement on a line DEV001
    reports, one that moves something with ``.cuda()`` (not a module with nothing to move) or calls
    ``torch.cuda.set_device`` (it raises without CUDA on torch 2.13.0+cpu), an ``if`` with an ``else`` whose
    every arm does (an arm may also end by raising: ``raise NotImplementedError(...)``), a ``with`` whose body
    does?"""
    if isinstance(statement, cst.SimpleStatementLine):
        start, end = ctx.range(statement).start.line, ctx.range(statement).end.line
        if any(ctx.position(line, 0)[0] in rows for line in range(start, end + 1)):
            return True
        return any((arm and isinstance(small, cst.Raise)) or any(
            isinstance(node, cst.Call) and _cuda_move(ctx, node) for node in walk(small))
            for small in statement.body)
    if isinstance(statement, cst.With):
        return any(_crashes(ctx, s, rows, arm) for s in statement.body.body)
    if isinstance(statement, cst.If):
        orelse = statement.orelse
        if orelse is None or not any(_crashes(ctx, s, rows, True) for s in statement.body.body):
            return False
        if isinstance(orelse, cst.If):
            return _crashes(ctx, orelse, rows, True)
        return any(_crashes(ctx, s, rows, True) for s in orelse.body.body)
    return False


def _cuda_move(ctx: Context, call: cst.Call) -> bool:
    """``x.cuda()`` / ``x.cuda(gpu)`` of something that holds tensors, or ``torch.cuda.set_device(...)``: each
    raises without CUDA."""
    if ctx.qualname(call.func) in devices.CUDA_ONLY_CALLS:
        return True
    return is_cuda_call(ctx, call) and isinstance(call.func, cst.Attribute) \
        and not parameterless_module(ctx, call.func.value)


def _dev001_rows(ctx: Context) -> frozenset[int]:
    """The lines of DEV001's findings in this file (computed once per module)."""
    from devlint.rules.dev001_hardcoded_cuda import HardcodedCuda

    return ctx.shared("dev005.dev001_rows", lambda c: frozenset(f.start.row for f in HardcodedCuda().check(c)))


def _short(loader: str) -> str:
    return "torch.jit.load" if loader.startswith("torch.jit.") else "torch.load"


class _LoadTrigger:
    """``(?<!\\w)load[\\s\\\\]*\\(|\\bload\\s+as\\b`` as a search from the literal ``load`` with the word
    boundary before it checked by hand: a pattern that starts with a look-behind is scanned at every byte, five
    times slower on large trees."""

    _after = re.compile(rb"load(?:[\s\\]*\(|\s+as\b)")

    def search(self, data: bytes) -> bool:
        for match in self._after.finditer(data):
            start = match.start()
            if start == 0 or not (data[start - 1:start].isalnum() or data[start - 1] == 0x5F):
                return True
        return False


class TorchLoadMapLocation(Rule):
    code = "DEV005"
    name = "torch-load-map-location"
    summary = "torch.load / torch.jit.load without map_location in code that can run without CUDA."
    fix_availability = FixAvailability.SOMETIMES
    evidence_type = CheckpointEvidence
    # a loader call (`torch.load(`, `T.load (`, `jit.load(`, `load(` imported from torch; not `_load(` or
    # `offload(`), also across a line join, or a loader imported under another name (`from torch import load
    # as load_checkpoint`)
    triggers = _LoadTrigger()

    doc_what = '''
Finds `torch.load(...)` and `torch.jit.load(...)` calls that pass no `map_location` (neither the keyword
nor the second positional argument), or pass the literal `None` (torch's default: it behaves exactly as no
`map_location`), where the loaded value is model state, in code that can run without CUDA. Imports are
resolved: `import torch as T` then `T.load(path)`, `from torch import load`, `from torch.serialization
import load`, `from torch import jit` then `jit.load(path)` are the same call.

Model state is what a training run on a GPU leaves on the GPU, and so what a checkpoint saved there holds
as CUDA tensors: the loaded value (or an item of it, `ckpt["model"]`, or anything computed from it in the
same function, `{k[7:]: v for k, v in ckpt.items()}`) is handed to a `load_state_dict(...)` (of a module,
an optimizer, a scheduler), or used as a module (called, `.eval()`, `.parameters()`, `.state_dict()`, ...), or
read under a key that names a model's state (`ckpt["state_dict"]`, `ckpt["model"]`, `"model_state_dict"`,
`"net"`, `"ema"`, ...), whatever is done with it next (a converter that saves it again).
A function of the file that returns the loaded value (`return torch.load(path)`) is followed to its calls
in the file. `torch.jit.load` always loads a module: always model state.

Not reported:
- any other `map_location`, whatever its value (`"cpu"`, `device`, `torch.device("cpu")`, `{"cuda:0":
  "cpu"}`, `lambda storage, loc: storage`, `None if use_gpu else "cpu"`);
- a call with `*args` or `**kwargs` (they may carry `map_location`);
- a load whose value is not seen to become model state: data and dataset caches, evaluation results,
  scalar state (a scheduler's numbers, RNG states; also `self.lr_scheduler.load_state_dict(torch.load(p))`
  and `scaler.load_state_dict(...)`: a learning-rate scheduler's and a `GradScaler`'s state dicts hold
  Python numbers, no tensor), a checkpoint handed to a helper of another library
  (ignite's `Checkpoint.load_objects`) or to a function that is not `load_state_dict`;
- a round trip in one process: the function (or module) that loads first writes the same file with
  `torch.save` (`torch.save(model.state_dict(), path)` ... `model.load_state_dict(torch.load(path))`; for
  `torch.jit.load`, `torch.jit.save(m, path)` or `traced.save(path)`; `str(path)` is the same file, and so is a
  path of the same pattern, pyGAT's `"{}.pkl".format(epoch)` saved in the loop and `"{}.pkl".format(best_epoch)`
  loaded after it, f-strings alike), or
  every call of the loading function in its file comes after such a save in its caller, with the path's
  name passed on under the same name (`train(config, ...)` saves `config.save_path`, then calls
  `test(config, ...)`, which loads `config.save_path`), or after a call, on every path to it, of a function
  of the module that saves to the same string literal (a tutorial's `save()` writing `'net.pkl'`, then
  `restore_net()` loading `'net.pkl'`, at the script's top level): its tensors were on this machine's devices;
- a program that never touches an accelerator and writes its own checkpoints: no Python file of the
  loading file's directory mentions CUDA, a GPU, `mps` or `xpu`, and one of them calls `torch.save`;
- a program that writes its checkpoints from the CPU: the loading file calls `torch.save`, each call saves a
  value moved there (`torch.save(model.cpu().state_dict(), path)`, `{k: v.cpu() for ...}`) or a value whose
  last move before the save in the same function is to the CPU (`model.eval().cpu()` then
  `torch.save(model.state_dict(), path)`; not when `model.to(device)` came after it; also a state dict
  whose items were each replaced by a CPU copy, `for k, v in state_dict.items(): state_dict[k] = v.cpu()`,
  the `save_network` of BasicSR and KAIR), and no other Python file of its directory calls `torch.save`.
  An optimizer's state (`torch.save(optimizer.state_dict(), path)`) is a file of its own, left on the
  training device: it does not count against the network's saves, and a load handed to an optimizer's
  `load_state_dict` is still reported;
- a checkpoint in BasicSR's layout, read under `"params"` or `"params_ema"` (`torch.load(p)["params_ema"]`, or
  `ckpt[param_key]` where `param_key` is a parameter whose default is one of them, KAIR's `load_network`):
  BasicSR's `save_network`, which its forks copy (KAIR, GFPGAN, CodeFormer, Hallo2), moves every parameter to
  the CPU before `torch.save`, and the weights published in that layout were written by it;
- a file published with or for the code, whose device is its publisher's choice: a path built from
  `__file__` (weights shipped in the package), or fetched from the internet in the loading function
  (`path = load_file_from_url(url)`, `with open_url(url) as f:`, `gdown.download(url, path)`,
  `urllib.request.urlretrieve(url, "./model.pth")` then `torch.load("model.pth")`: paths compared normalised;
  also to a path the loaded name is set to, fastMRI's `download_model(url, MODEL_FNAMES[c])` then
  `state_dict_file = MODEL_FNAMES[c]`), `hf_hub_download(...)`; also through a function of the project that
  returns the path it fetched,
  `torch.load(get_model_path("decoder.pth"))` where `get_model_path` returns `hf_hub_download(...)`), or a
  local copy of such weights: the load is one arm of an `if` that tests its
  path (`if weights_path is None:`) and whose other arm fetches published weights (a download, a hub, a
  function named `*pretrained*`, `pretrained=True`), or pretrained weights by name: the path reads a name
  spelled `pretrain*` (`args.pretrained_weights`, `Config.pretrain_model_path`, also through local
  assignments), the load runs only under an `if` that tests one (`if self.pretrained:`), or in a function
  named for them (`def load_pretrained_ckpt(self):`); not when the checkpoint's optimizer state is loaded
  back (`optimizer.load_state_dict(checkpoint["optimizer"])`): that resumes the project's own training,
  whatever the option is called (YOLOP's `cfg.MODEL.PRETRAINED`);
- a project that writes no checkpoint: in a run over more than one file, no file of it calls `torch.save`,
  `save_checkpoint(...)`, `ModelCheckpoint(...)`, `.save_pretrained(...)`, `.save_state(...)`,
  `.save_model(...)`, `accelerator.save(...)`, `torch.jit.save(...)`, `torch.jit.trace(...)` or
  `torch.jit.script(...)` (a byte search: a comment that names one counts). What such a project loads was
  written by someone else, on a device devlint cannot see. For `torch.jit.load` only TorchScript's writers
  count (`torch.jit.save`, a traced or scripted module's `.save()`): a project that saves other things but
  traces nothing loads archives traced elsewhere (a user's export of the model). The same for a file
  of a larger project when neither it nor another Python file of its folder writes a checkpoint: a demo,
  an inference, evaluation or conversion script beside no training (`demo/`, `main_test_*.py` next to
  no saver) mostly loads published weights (on the real-code benchmark, 24 of the 29 labelled loads of this shape
  were no bug). A file linted alone is not judged so (devlint does not see the rest of its
  program);
- the GPU arm of an `if` that tests the device (its test names the CPU, CUDA or a GPU: `if cpu:`, `if
  args.gpu is None:`) whose other arm loads onto the CPU (`if cpu: torch.load(p,
  map_location=torch.device("cpu"))` / `else: torch.load(p)`): the code handles the machine without CUDA
  there. An other arm that maps to a GPU (`map_location=f"cuda:{args.gpu}"`) does not, nor an `if` on another
  backend (`if is_torch_xla_available():`);
- test code (`test_*.py`, `*_test.py`, `conftest.py`, a module right in a `tests/` or `test/` folder): the
  checkpoints a test loads are the ones its fixtures write during the session (`tmp_path`), on the machine
  that runs them;
- a load that runs only where CUDA was checked for, by the guards DEV001 uses: inside `if
  torch.cuda.is_available():` (or `if use_gpu:`, `if args.cuda:` off by default, `if x.is_cuda:`), after
  an early exit without CUDA, inside a `try:` whose handler catches the error and recovers (not one that
  only logs or prints it), in a function or class
  that declares itself GPU-only, in a function every call of which is guarded (a function handed to a
  runner, `parallel.run(evaluate, ...)` or `mp.spawn(evaluate, ...)` after `assert
  torch.cuda.is_available()`, counts as called there);
- CUDA-only code by the principle DEV001 uses: after `init_process_group("nccl")` or
  `torch.cuda.set_device(local_rank)` in the same flow, in a module that imports a CUDA-only library
  (TensorRT, PyCUDA, CuPy, flash_attn) or is marked GPU-only (`pytestmark = pytest.mark.skipif(not
  torch.cuda.is_available(), ...)`);
- a file that is GPU-only as written: it puts its work on CUDA with `.cuda()` / `"cuda"` that DEV001 reports,
  and has no path without CUDA anywhere (DEV006's test: it never asks whether a GPU is there, never chooses
  or compares `"cpu"` / `"mps"`, has no GPU option that is off by default). On a machine without CUDA it
  stops at its first CUDA use, before a checkpoint's location matters; DEV001's findings are the ones to
  fix, and once the file falls back to the CPU this rule reports its loads. The same when the file's device
  comes from a device helper of another file of the project (a function named for the device or the GPU,
  `helper.get_device(args)`) that builds it from a `"cuda"` string in a file with no fallback
  (`gpu_string = "cuda:" + ids`);
- a load that every path of its function reaches through something that stops a run without CUDA: a
  hard-coded CUDA use DEV001 reports, a `.cuda()` move DEV001 reads as GPU-only by design (after
  `torch.cuda.set_device`, in a NCCL flow) or `torch.cuda.set_device(...)` itself (it raises without CUDA), in
  a statement before it (`model = DataParallel(model).cuda()`) or in every arm of an `if` before it, `else`
  included (`model.cuda()` when distributed, `DataParallel(model).cuda()` otherwise; an arm may also end by
  raising, `raise NotImplementedError(...)`). The `.cuda()` of a module with nothing to move
  (`nn.CrossEntropyLoss().cuda()`) stops nothing. Without CUDA the program stops there first; after DEV001's
  fix (`--fix` runs until nothing changes) the load is reported and fixed too. The same for a load in a
  function or method every call of which in the linted tree comes after a `.cuda()` move or `set_device` as
  above (FUNIT's `trainer.cuda()` at the top of `train.py`, then `trainer.resume(...)`: every call of the name,
  on whatever object, counts; another line DEV001 reports, `torch.device("cpu" if opt.no_cuda else "cuda")`,
  stops nothing there);
- `pickle.load`, `np.load`, `json.load`, `safetensors` loaders (they take a device of their own), a method
  `.load(...)` of any other object, and files that never import torch (torch brought by `from utils import *`
  of a module of the project that imports it, and sets no `__all__`, counts as imported).
'''
    doc_why = '''
`torch.save` records, for each tensor, the device it was on; `torch.load` puts it back there. A checkpoint
saved during training on a GPU, loaded on a laptop, a Mac or a CPU-only CI runner, fails at once (torch
2.13, CPU build, checked with `devlint verify --rules`):

```
RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False.
If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to
map your storages to the CPU.
```

The same with `weights_only=True` (the default since torch 2.6; still the default in 2.13: without
`pickle_module`, `torch.load` uses the weights-only unpickler), `weights_only=False`, `mmap=True`, the legacy
(non-zip) format and `map_location=None`. `torch.jit.load` of a module saved on a GPU fails too, on a CPU
build with `NotImplementedError: Could not run 'aten::empty_strided' with arguments from the 'CUDA'
backend`; on a CUDA build with its GPU hidden (torch 2.11.0+cu130, H100 machine, 2026-11-26;
`bash bench/device_check.sh facts`) with `RuntimeError: No CUDA GPUs are available`, while `torch.load` of a
GPU-saved state dict raises the error above, and both load with `map_location="cpu"`. `devlint verify` reproduces
both without a GPU: `torch.save` asks `torch.serialization.location_tag` where each storage lives, and the
probe makes it answer `"cuda:0"` while saving (for `torch.jit.save`, the storage location `"cpu"` in the
archive's `data.pkl` is rewritten to `"cuda:0"`), then loads without `map_location` (torch's error) and with
the fix's (it loads). Moving the result afterwards (`torch.load(p).to(device)`, `model.load_state_dict(...)`
on a CPU model) does not help: the error is raised inside the load. Any `map_location` that maps the saved
device away works (`"cpu"`, `torch.device("cpu")`, `lambda storage, loc: storage`, `{"cuda:0": "cpu"}`);
`map_location="cuda"` or a dictionary that misses the saved device (`{"cuda:1": "cpu"}`) fails the same way.
'''
    doc_use_instead = '''
Say where the tensors go: `map_location=device` (the device the program chose, e.g. `"cuda" if
torch.cuda.is_available() else "cpu"`), or `map_location="cpu"` and move the model afterwards. The fix
adds `map_location=device` when a device variable (`device`, `DEVICE`, `dev`, `self.device`, ...) certainly
holds a device there, else `map_location="cpu"`.
'''
    doc_fix_safety = '''
Unsafe: it changes where the loaded tensors land. With `map_location="cpu"` a checkpoint saved on a GPU
now loads on the CPU also on a machine that has one: code that relied on the tensors coming back on the GPU
(an optimizer state, a tensor used without `.to(device)`) then mixes devices until it moves them. With
`map_location=device` they land on the program's device, which is what the rest of the code uses. The
device variable is reused only when every binding of it in its scope is a device and one of them runs
before the load on every path (`devlint/bindings.py`); if that variable is a hard-coded `"cuda"`, DEV001
reports it. The fix inserts `, map_location=...` right after the last argument: a trailing comma, line
breaks and comments inside the call stay as they are. Inside an f-string it uses the quote the f-string
does not; with both taken there is no fix.
'''
    doc_known_problems = '''
devlint does not know what a file holds. It reports a load whose value becomes model state, and that may
still be a file of CPU tensors (weights published after `.cpu()`, a checkpoint saved with
`torch.save(model.cpu().state_dict(), path)` by another program): pass `map_location` anyway (it costs
nothing) or add `# noqa: DEV005`. Proving that the same code saved the file from CPU tensors would need
to follow the path and the tensors' devices across programs and runs; devlint only recognises the round
trip within one function (or through the calls of the loading function in its file, the path matched by its
text) and a program directory that never mentions an accelerator.
A script in a folder that writes no checkpoint is left out, also when it loads what the project's training
in another folder saved from a GPU (`demo/live.py` loading the weights `train.py` writes one folder up, an
app loading a notebook's `model.pth`): devlint cannot tell those from published weights there.

Loads it leaves out, and that can fail the same way: a checkpoint whose use it does not see (passed to a
helper of the project or of a library, kept in an attribute and used in another method, returned from a
function whose callers are in other files), tensors that are not model state but were made on a GPU
(embeddings, features, a tensor cache written by a GPU run), and loaders that call `torch.load` for you
without a `map_location` (`torch.hub.load_state_dict_from_url(url)`). A `map_location` that is a variable
holding `None` is not followed: any expression other than the literal `None` counts as given. A
dictionary `map_location` that misses the saved device (`{"cuda:1": "cpu"}` for a checkpoint from
`cuda:0`) still fails and is not reported. Published weights (shipped beside the code, downloaded by
it, or a local copy of what the other arm of the same `if` downloads, or named pretrained) and test code
are left out even when the file does hold CUDA tensors (a project's own pretraining stage that saves
`pretrained.pth` from the GPU for a fine-tuning script is missed), and weights a user downloads by hand and
passes as a path under any other name are
reported even when they hold CPU tensors (a third-party checkpoint given as a path, `BEATs(ckp_path)`,
`torch.load("./sscd/model.pt")`, looks like a checkpoint of the project's own training: the keys it is read
with, `checkpoint["cfg"]`, do not tell them apart). A program that runs only on GPUs by
its README alone is not seen as such (`per-file-ignores`, `ignore = ["DEV005"]` or `# noqa: DEV005`).
'''
    doc_options = '''
`device-fallback` (see DEV001) does not change this rule's fix: `map_location="cpu"` is where the loaded
tensors go, not a choice of device, and it loads on every machine (it is what torch's own error message
advises); the model is then moved by the program's own device choice. Where a device variable is bound,
the fix uses it (`map_location=device`), whatever form that variable was written in. `select`, `ignore`,
`per-file-ignores` and `# noqa: DEV005` apply as for every rule.
'''
    doc_references = '''
- [torch.load](https://pytorch.org/docs/stable/generated/torch.load.html)
- [Saving and loading models across devices](https://pytorch.org/tutorials/beginner/saving_loading_models.html#saving-loading-model-across-devices)
- [torch.jit.load](https://pytorch.org/docs/stable/generated/torch.jit.load.html)
'''
    doc_notebooks = '''
Notebooks (`.ipynb`) are linted like scripts: the code cells, in order, are one module, so a device chosen
in one cell is the `map_location=device` of a load in a later cell, and a guard cell (`if not
torch.cuda.is_available(): raise ...`) covers the cells after it. Colab's `"accelerator": "GPU"` metadata
does not make a notebook CUDA-only: a checkpoint loaded in it still fails on a CPU runtime. `--fix` rewrites
only the changed cells' sources.
'''

    VALID = (
        Valid('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
              'model.load_state_dict(torch.load("model.pt", map_location=device))\n'),
        Valid('import torch\nmodel.load_state_dict(torch.load("model.pt", "cpu"))\n'),
        Valid('import torch\nif torch.cuda.is_available():\n    model.load_state_dict(torch.load("model.pt"))\n'),
        Valid('import torch\nckpt = torch.load(path, map_location=lambda storage, loc: storage)\n'
              'model.load_state_dict(ckpt["model"])\n'),
        Valid('import torch\nm = torch.jit.load("model.ts", map_location="cpu")\n'),
        Valid('import torch\nkwargs = {"map_location": "cpu"}\nmodel.load_state_dict(torch.load(path, **kwargs))\n'),
        Valid('import pickle\nimport numpy as np\nimport torch\nwith open(p, "rb") as f:\n'
              '    data = pickle.load(f)\narr = np.load("a.npy")\nmodel.load(path)\n'),
        Valid('import os\nimport torch\nimport torch.distributed as dist\n'
              'def main():\n    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))\n'
              '    dist.init_process_group("nccl")\n    model.load_state_dict(torch.load("ckpt.pt"))\n'),
        Valid('import torch\ndata = torch.load("cache/train.pt")  # tensors the preprocessing made on the CPU\n'
              'inputs, labels = data["inputs"], data["labels"]\n'),
        Valid('import torch\ndef train(model):\n    torch.save(model.state_dict(), "best.pt")\n'
              '    model.load_state_dict(torch.load("best.pt"))  # written by this run, on this machine\n'),
        Valid('def load(path):\n    return open(path).read()\ntext = load("notes.txt")\n'),
    )
    INVALID = (
        Invalid(
            'import torch\n\nmodel = Net()\nmodel.load_state_dict(torch.load("checkpoint.pt"))\n',
            fixed='import torch\n\nmodel = Net()\n'
                  'model.load_state_dict(torch.load("checkpoint.pt", map_location="cpu"))\n',
            doc=True,
        ),
        Invalid('import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
                'ckpt = torch.load(args.resume, weights_only=True)\nmodel.load_state_dict(ckpt["model"])\n',
                fixed='import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
                      'ckpt = torch.load(args.resume, weights_only=True, map_location=device)\n'
                      'model.load_state_dict(ckpt["model"])\n'),
        Invalid("import torch as T\nsd = T.load(\n    'best.pth',  # the best epoch\n)\nnet.load_state_dict(sd)\n",
                fixed="import torch as T\nsd = T.load(\n    'best.pth', map_location='cpu',  # the best epoch\n)\n"
                      "net.load_state_dict(sd)\n"),
        Invalid('from torch import load\nweights = load(path)\nweights = {k[7:]: v for k, v in weights.items()}\n'
                'model.load_state_dict(weights)\n',
                fixed='from torch import load\nweights = load(path, map_location="cpu")\n'
                      'weights = {k[7:]: v for k, v in weights.items()}\nmodel.load_state_dict(weights)\n'),
        Invalid('import torch\nmodel = torch.jit.load("traced.pt")\n',
                fixed='import torch\nmodel = torch.jit.load("traced.pt", map_location="cpu")\n'),
        Invalid('import torch\nclass Runner:\n    def __init__(self):\n'
                '        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
                '    def resume(self, path):\n        return torch.load(path)\n'
                '    def restore(self, model):\n        model.load_state_dict(self.resume("last.pt"))\n',
                fixed='import torch\nclass Runner:\n    def __init__(self):\n'
                      '        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
                      '    def resume(self, path):\n        return torch.load(path, map_location=self.device)\n'
                      '    def restore(self, model):\n        model.load_state_dict(self.resume("last.pt"))\n'),
        Invalid('import torch\nmodel = torch.load("model.pt", map_location=None)\nmodel.eval()\n',
                fixed='import torch\nmodel = torch.load("model.pt", map_location="cpu")\nmodel.eval()\n'),
        Invalid("import torch\nprint(f\"{net.load_state_dict(torch.load('x.pt'))}\")\n",
                fixed="import torch\nprint(f\"{net.load_state_dict(torch.load('x.pt', map_location='cpu'))}\")\n"),
    )

    def screen(self, index: AstIndex) -> bool:
        """A load that passes no ``map_location`` in a file that is not a test module, of a module
        (``torch.jit.load``) or in code that may use the loaded value as model state
        (:func:`_screen_model_state`)."""
        if not index.imports_torch or (index.path is not None and test_module(index.path)):
            return False
        scopes: dict[int, ast.AST] | None = None
        for call in index.calls:
            for qualname in index.qualnames(call.func):
                position = devices.CHECKPOINT_LOADERS.get(qualname or "")
                if position is None or not _ast_omits_map_location(call, position):
                    continue
                if qualname == "torch.jit.load":
                    return True
                if scopes is None:
                    scopes = {id(c): scope.node for scope in (index.module_scope, *_all_scopes(index.module_scope))
                              for c in scope.calls if scope.node is not None}
                if _screen_model_state(index.tree, scopes.get(id(call), index.tree)):
                    return True
        return False

    def check(self, ctx: Context) -> Iterable[Finding]:
        if not ctx.imports_torch or test_module(ctx.path):
            return
        guard = guards(ctx)
        cpu_only: bool | None = None
        for call in ctx.nodes(cst.Call):
            loader = ctx.qualname(call.func)
            position = devices.CHECKPOINT_LOADERS.get(loader or "")
            if loader is None or position is None:
                continue
            passed = _map_location(call, position)
            if passed is None or guard.is_guarded(call) or _saved_before(ctx, call) or _published(ctx, call) \
                    or _cpu_saved_layout(ctx, call):
                continue
            if not _may_hold_gpu_state(ctx, call, loader):
                continue
            if _after_cuda_crash(ctx, call) or _other_arm_maps(ctx, call) or _called_only_after_cuda_crash(ctx, call):
                continue
            if cpu_only is None:
                cpu_only = _cpu_only_program(ctx) or _gpu_only_as_written(ctx) \
                    or _loads_others_checkpoints(ctx) or _no_writer_beside(ctx)
            if cpu_only:
                return
            if _saves_cpu_state(ctx) and not _feeds_optimizer(ctx, call):
                continue
            yield self._report(ctx, call, _short(loader), passed if isinstance(passed, cst.Arg) else None)

    def _report(self, ctx: Context, call: cst.Call, loader: str, none: cst.Arg | None) -> Finding:
        fix = self._fix(ctx, call, none)
        error = JIT_ERROR if loader == "torch.jit.load" else TORCH_ERROR
        target = "module" if loader == "torch.jit.load" else "checkpoint"
        what = "with map_location=None (torch's default)" if none is not None else "without map_location"
        message = (f'{loader} {what} puts tensors back on the device they were saved from: a '
                   f'{target} saved on a GPU raises "{error}" on a machine without CUDA; pass '
                   f'map_location=device (or "cpu")')
        value = fix.message.split("=", 1)[1] if fix is not None else None
        return self.finding(ctx, call, message, fix, evidence=CheckpointEvidence(loader, value))

    @staticmethod
    def _fix(ctx: Context, call: cst.Call, none: cst.Arg | None) -> Fix | None:
        """``, map_location=device`` (a device variable certainly bound here) or ``, map_location="cpu"``,
        right after the last argument (a trailing comma and comments stay); a ``None`` passed is replaced."""
        value = device_name_at(ctx, call)
        if value is None:
            quote = quote_at(ctx, call, preferred_quote(ctx))
            if quote is None:
                return None
            value = f"{quote}cpu{quote}"
        if none is not None:
            edit = replace_token(ctx, none.value, value)
        else:
            edit = insert_after(ctx, call.args[-1].value, f", {devices.MAP_LOCATION_KEYWORD}={value}")
        return Fix((edit,), Applicability.UNSAFE, f"Pass {devices.MAP_LOCATION_KEYWORD}={value}")
