"""What is known about a tensor's provenance: may it require grad, may it live off the CPU?

A small abstract interpreter over each scope's statements in order (branches merged, loops run twice).
It knows a value only from evidence in the code — a torch factory, ``nn.Parameter``, a module call, a
``.cuda()``/``.to(device)`` move — and forgets it at the first unknown call: precision beats recall.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from devlint import devices
from devlint.analysis import frozen_class, parameterless_class
from devlint.bindings import Binding, bindings
from devlint.context import Context, children, dotted_name, own_method, string_value, walk
from devlint.guards import Polarity, guards
from devlint.lazy import LazyModule
from devlint.project import call_sites, callee, resolve_definition

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

# Methods whose result cannot require grad (integer/bool results), device kept.
NON_DIFFERENTIABLE = frozenset({  # each checked on torch 2.13: the result of a tensor that requires grad does not
    # (not sign() or unique(): their results still require grad)
    "argmax", "argmin", "argsort", "long", "int", "bool", "byte", "short", "eq", "ne", "lt", "gt", "le", "ge",
    "nonzero", "isnan", "isinf", "isfinite", "topk_indices",
})
# Methods (and attributes) that leave the tensor world.
NOT_TENSOR = frozenset({
    "numpy", "item", "tolist", "size", "dim", "numel", "shape", "dtype", "device", "is_cuda",
    "requires_grad", "ndim", "stride", "data_ptr", "element_size", "nelement", "__len__", "keys", "items",
    "parameters", "named_parameters", "state_dict", "modules", "children", "buffers", "type",
})
MODULE_KEEP = frozenset({"to", "cuda", "cpu", "eval", "train", "half", "float", "double", "bfloat16",
                         "requires_grad_", "share_memory", "apply", "zero_grad"})
FACTORIES = devices.FACTORIES
NO_GRAD_CONTEXTS = devices.NO_GRAD_CONTEXTS
# torch.set_grad_enabled and its aliases (a statement of its own turns autograd off or on from there on)
_GRAD_SETTERS = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled",
                           "torch.autograd.grad_mode.set_grad_enabled"})
MODULE_ROOTS = devices.MODULE_ROOTS
MODULE_FACTORIES_SUFFIX = devices.MODULE_FACTORIES_SUFFIX


# What a pretrained package loads that holds no parameters (AutoTokenizer.from_pretrained, CLIPProcessor, a
# feature extractor): it counts as a module (DEV008: its output may be no tensor), but its tensors (token ids,
# pixel values computed in NumPy) never require grad.
_PREPROCESSOR = re.compile(r"\w*(Tokenizer(Fast)?|Processor|FeatureExtractor)")
# Modules with no parameters: their output requires grad only if their input does.
_PARAMETERLESS = re.compile(
    r"((Zero|Reflection|Replication|Constant|Circular)Pad[123]d|(Max|Avg|AdaptiveMax|AdaptiveAvg|LP|FractionalMax)"
    r"Pool[123]d|Dropout\w*|ReLU6?|GELU|SiLU|Sigmoid|Tanh|Softmax2?d?|LogSoftmax|Softmin|LeakyReLU|"
    r"ELU|CELU|SELU|Mish|Hardswish|Hardsigmoid|Hardtanh|Softplus|Softsign|Tanhshrink|Threshold|GLU|Identity|"
    r"Flatten|Unflatten|Upsample\w*|PixelShuffle|PixelUnshuffle|ChannelShuffle|Fold|Unfold|CosineSimilarity|"
    r"PairwiseDistance|\w+Loss)"
)


@dataclass(frozen=True)
class Val:
    kind: str = "tensor"  # "tensor", "module", or "object" (of a project class that is no module: _OBJECT)
    grad: str | None = None  # why it may require grad
    gpu: str | None = None  # why it may live off the CPU
    # a module with parameters (its output requires grad); an object of unknown type (``moved``) that a class
    # call built (Net().to(device)), where False: one a function returned (pickle.load(f).to(device))
    params: bool = True
    # What is proven (the fix needs proof, a finding only evidence): a torch object; requires no grad;
    # lives on the CPU.
    torch: bool = False
    nograd: bool = False
    cpu: bool = False
    moved: bool = False  # an object of unknown type moved with .cuda()/.to(): a tensor or a module
    # maybe no tensor (DEV008): the output of a module call or another method of a module (a tuple, a dict, a
    # ModelOutput, a tokenizer's BatchEncoding: AutoTokenizer.from_pretrained counts as a module), or what a
    # torch API building objects returns (devices.OBJECT_APIS: torch.jit.trace gives a ScriptModule)
    output: bool = False


# What the interpreter knows at a point of a scope: a name (or a dotted ``self.x``) -> its value, or None
# for a name bound to something unknown.
Env = dict[str, "Val | None"]


def _union(*vals: Val | None, complete: bool = False) -> Val | None:
    """What is known of a value computed from ``vals`` (arithmetic, torch functions). ``complete``: every
    operand is one of ``vals`` or a plain constant; only then can the result be proven grad-free or on
    the CPU."""
    known = [v for v in vals if v is not None and v.kind == "tensor"]
    if not known:
        return None
    grad = next((v.grad for v in known if v.grad), None)
    gpu = next((v.gpu for v in known if v.gpu), None)
    complete = complete and all(v is None or v.kind == "tensor" for v in vals)
    return Val("tensor", grad, gpu, torch=any(v.torch for v in known),
               nograd=complete and all(v.nograd for v in known), cpu=complete and all(v.cpu for v in known))


def _unproven(v: Val) -> Val:
    return replace(v, torch=False, nograd=False, cpu=False)


def _neutral(expr: cst.BaseExpression) -> bool:
    """A constant that is no tensor: a number, string, True/False/None, or a tuple/list of them."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False", "None")
    if isinstance(expr, cst.UnaryOperation):
        return _neutral(expr.expression)
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(_neutral(el.value) for el in expr.elements)
    return False


def _merge_env(a: Env, b: Env) -> Env:
    out: Env = {}
    for key in a.keys() | b.keys():
        va, vb = a.get(key), b.get(key)
        if va is None or vb is None:
            known = va or vb
            out[key] = _unproven(known) if known is not None else None  # unknown on one path: nothing proven
        elif va.kind != vb.kind:
            out[key] = _unproven(va)
        else:
            out[key] = Val(va.kind, va.grad or vb.grad, va.gpu or vb.gpu, va.params,
                           torch=va.torch and vb.torch, nograd=va.nograd and vb.nograd, cpu=va.cpu and vb.cpu,
                           moved=va.moved or vb.moved, output=va.output or vb.output)
    return out


def _grad_branches(test: cst.BaseExpression, env: Env) -> tuple[Env, Env]:
    """The environments of an ``if``'s two branches when its test reads ``x.requires_grad`` (``not`` allowed):
    in the branch where it is false, ``x`` needs no ``.detach()`` (``x.detach().numpy() if x.requires_grad else
    x.numpy()``). Otherwise ``env`` for both."""
    wanted = True
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        wanted, test = not wanted, test.expression
    name = dotted_name(test.value) if isinstance(test, cst.Attribute) and test.attr.value == "requires_grad" else None
    held = env.get(name) if name else None
    if name is None or held is None:
        return env, env
    narrowed = dict(env)
    narrowed[name] = replace(held, grad=None, nograd=True)
    return (env, narrowed) if wanted else (narrowed, env)


def _is_cpu_device(ctx: Context, expr: cst.BaseExpression, follow: bool = True) -> bool:
    """``"cpu"``, ``torch.device("cpu")``, or a name or attribute every assignment of the file binds to one of
    those (``cpu_device = torch.device("cpu")`` then ``boxes.to(cpu_device)``; ``self._cpu_device =
    torch.device("cpu")`` in ``__init__`` then ``output["instances"].to(self._cpu_device)``)."""
    value = string_value(expr)
    if value is not None:
        return devices.is_cpu_device(value)
    if isinstance(expr, cst.Call) and ctx.qualname(expr.func) == devices.DEVICE_CONSTRUCTOR and expr.args:
        return _is_cpu_device(ctx, expr.args[0].value, follow=False)
    name = dotted_name(expr) if follow and isinstance(expr, (cst.Name, cst.Attribute)) else None
    if name is not None and ctx.qualname(expr) is None:
        values = [a.value for a in ctx.nodes(cst.Assign) if any(dotted_name(t.target) == name for t in a.targets)]
        if values:
            return all(_is_cpu_device(ctx, v, follow=False) for v in values)
        return _CPU_NAMED.search(name.rpartition(".")[2]) is not None  # self._cpu_device set by a base class
    return False


# a device variable named for the CPU (cpu_device, self._cpu_device, CPU): never a GPU
_CPU_NAMED = re.compile(r"(?:^|_)cpu(?:_|$)", re.IGNORECASE)


# a variable named for a dtype (dtype, torch_dtype, self.weight_dtype): ``.to()`` of it casts
_DTYPE_NAMED = re.compile(r"(?:\w+_)?dtype", re.IGNORECASE)


def _is_dtype(ctx: Context, expr: cst.BaseExpression) -> bool:
    """``torch.float16``, another tensor's dtype (``img.dtype``) or a variable named for one (``dtype``,
    ``self.weight_dtype``): ``.to()`` of it casts, it does not move."""
    if isinstance(expr, cst.Attribute) and _DTYPE_NAMED.fullmatch(expr.attr.value):
        return True
    if isinstance(expr, cst.Name) and _DTYPE_NAMED.fullmatch(expr.value):
        return True
    qn = ctx.qualname(expr) or ""
    return (qn.startswith("torch.") and qn.split(".")[-1][:1].islower() and qn.count(".") == 1
            and not isinstance(expr, cst.Call))


def _is_torch_non_device(ctx: Context, expr: cst.BaseExpression) -> bool:
    """A torch attribute whose spelling names no device (``torch.cuda.HalfTensor``, ``torch.nn.Module``):
    ``.to()`` of it converts, it does not move."""
    return (isinstance(expr, cst.Attribute) and (ctx.qualname(expr) or "").startswith("torch.")
            and "device" not in ctx.code(expr))


def _arithmetic(expr: cst.BinaryOperation, left: Val | None, right: Val | None, no_grad: bool) -> Val | None:
    """``left <op> right``, given what is known of both operands."""
    out = _union(left, right, complete=(left is not None or _neutral(expr.left))
                 and (right is not None or _neutral(expr.right)))
    return replace(out, grad=None, nograd=True) if out and no_grad else out


def _as_module_method(method: str, recv: Val) -> bool:
    """Is ``recv.method(...)`` a module's method: any method of a module, or a method modules have
    (``.cpu()``, ``.eval()``, ``.forward()``, ...) of an object of unknown type moved with ``.to()``/``.cuda()``?"""
    if recv.kind == "module":
        return True
    return recv.moved and (method == devices.CPU_METHOD or method in MODULE_KEEP or method == "forward")


class Provenance:
    """Runs the interpreter over every scope; ``numpy_receivers`` maps each ``.numpy()`` call to what is
    known of its receiver."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.numpy_receivers: dict[cst.Call, Val] = {}
        self.statement_receivers: dict[cst.Call, Val | None] = {}  # see discarded_moves()
        self.call_args: dict[cst.Call, list[Val | None]] = {}
        self.module_classes = self._module_classes()
        # torch.set_default_device(...) anywhere: a factory's tensor may be created off the CPU
        self.default_device = any(ctx.qualname(c.func) == "torch.set_default_device" for c in ctx.nodes(cst.Call))
        # what each function of the file returns, and what each class's __init__ sets on self: computed on
        # demand (a function is interpreted when it holds a .numpy() call, or when one asks what it returns)
        self.returns: dict[cst.FunctionDef, Val | None] = {}
        self.class_attrs: dict[cst.ClassDef, Env] = {}
        self._running: set[cst.FunctionDef] = set()
        self._current: cst.FunctionDef | None = None
        self._cpu_path = 0  # inside the no-accelerator branch of a device check
        self._numpy_functions = self._with_numpy()
        self.grad_off = self._grad_off_at()
        _BUILDING.add(id(ctx))
        try:
            self.module_env: Env = {}
            body = ctx.module.body
            if self.grad_off is None:
                self.module_env = self._exec(body, {}, False)
            else:
                self.module_env = self._exec(body[:self.grad_off], {}, False)
                self.module_env = self._exec(body[self.grad_off:], self.module_env, True)
            for func in self._numpy_functions:
                self._ensure(func)
        finally:
            _BUILDING.discard(id(ctx))

    def _grad_off_at(self) -> int | None:
        """The index of the module's top-level ``torch.set_grad_enabled(False)`` statement (a script that turns
        autograd off for its whole run: what follows it at the top level, and every function, which runs after
        the module's top level has, makes no graph), unless the file turns grad on anywhere
        (``set_grad_enabled(True)`` or another value, ``torch.enable_grad``)."""
        ctx = self.ctx
        off: int | None = None
        for i, stmt in enumerate(ctx.module.body):
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
            if off is None and isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                    and ctx.qualname(small.value.func) in _GRAD_SETTERS and self._no_grad_expr_of(small.value):
                off = i
        if off is None:
            return None
        for call in ctx.nodes(cst.Call):
            qn = ctx.qualname(call.func)
            if qn == "torch.enable_grad" or (qn in _GRAD_SETTERS and not self._no_grad_expr_of(call)):
                return None
        return off

    @staticmethod
    def _no_grad_expr_of(call: cst.Call) -> bool:
        """``set_grad_enabled(False)``: one argument, the name ``False``."""
        return len(call.args) == 1 and call.args[0].keyword is None and isinstance(call.args[0].value, cst.Name) \
            and call.args[0].value.value == "False"

    def _with_numpy(self) -> list[cst.FunctionDef]:
        """The functions (in source order) whose own body calls ``.numpy()``."""
        ctx = self.ctx
        found = {ctx.enclosing_function(c) for c in ctx.nodes(cst.Call)
                 if isinstance(c.func, cst.Attribute) and c.func.attr.value == "numpy"}
        return [f for f in ctx.nodes(cst.FunctionDef) if f in found]

    def _ensure(self, func: cst.FunctionDef) -> None:
        """Interpret ``func`` once (what it returns, what its .numpy() calls see); not while it runs."""
        if func in self.returns or func in self._running:
            return
        self._running.add(func)
        try:
            self._run_function(func)
        finally:
            self._running.discard(func)

    def _attrs_of(self, cls: cst.ClassDef) -> Env:
        """What the class's ``__init__`` sets on ``self`` (interpreted on first use)."""
        if cls not in self.class_attrs:
            self.class_attrs[cls] = {}
            init = own_method(cls, "__init__")
            if init is not None:
                self._ensure(init)
            for name, value in self._modules_set_elsewhere(cls, init).items():
                self.class_attrs[cls].setdefault(name, value)
        return self.class_attrs[cls]

    def _modules_set_elsewhere(self, cls: cst.ClassDef, init: cst.FunctionDef | None) -> Env:
        """``self.model = Net(...)`` in another method than ``__init__`` (``fit``, ``setup``): an attribute
        that every assignment in the class sets to a module (or None) is a module in every method."""
        ctx = self.ctx
        values: dict[str, list[cst.BaseExpression]] = {}
        for assign in ctx.nodes(cst.Assign):
            method = ctx.enclosing_function(assign)
            if method is None or method is init or ctx.parent(ctx.parent(method)) is not cls:
                continue
            for target in assign.targets:
                name = dotted_name(target.target)
                if name is not None and name.startswith("self.") and name.count(".") == 1:
                    values.setdefault(name, []).append(assign.value)
        found: Env = {}
        for name, exprs in values.items():
            built = [e for e in exprs if not (isinstance(e, cst.Name) and e.value == "None")]
            if built and all(self._constructs_module(e) for e in built):
                found[name] = Val("module", torch=True)
        return found

    def _constructs_module(self, expr: cst.BaseExpression) -> bool:
        if not isinstance(expr, cst.Call):
            return False
        if isinstance(expr.func, cst.Name) and expr.func.value in self.module_classes:
            return True
        qn = self.ctx.qualname(expr.func)
        return qn is not None and self._is_module_factory(qn, qn.split("."))

    def _run_function(self, func: cst.FunctionDef) -> None:
        owner = self.ctx.parent(self.ctx.parent(func))
        cls = owner if isinstance(owner, cst.ClassDef) else None
        env = dict(self.module_env)
        if cls is not None and func.name.value != "__init__":
            env.update(self._attrs_of(cls))
        params = func.params
        flows = func in self._numpy_functions
        positional = [*params.posonly_params, *params.params]
        for p in [*params.params, *params.kwonly_params, *params.posonly_params]:
            env[p.name.value] = self._param_value(func, p, positional) if flows else None
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                env[star.name.value] = None
        no_grad = self.grad_off is not None or any(self._no_grad_expr(d.decorator) for d in func.decorators)
        outer, self._current = self._current, func
        body = func.body.body if isinstance(func.body, cst.IndentedBlock) else [func.body]
        final = self._exec(body, env, no_grad)
        self._current = outer
        self.returns.setdefault(func, None)
        if cls is not None and func.name.value == "__init__":
            self.class_attrs[cls] = {k: v for k, v in final.items() if k.startswith("self.") and v is not None}

    def _param_value(self, func: cst.FunctionDef, param: cst.Param, positional: list[cst.Param]) -> Val | None:
        """What the file's calls of ``func`` pass for ``param`` (``show(model(x))``): evidence from any call,
        proof from none (other calls may pass anything). For a function of the module's top level, the calls in
        the project's other files too (:meth:`_calls_elsewhere`)."""
        ctx = self.ctx
        name = func.name.value
        own = [c for c in ctx.nodes(cst.Call) if (dotted_name(c.func) or "").rpartition(".")[2] == name]
        own = [c for c in own if (target := callee(ctx, c, _no_other_file)) is not None and target[1] is func]
        sites: list[tuple[Provenance, cst.Call]] = [(self, c) for c in own]
        if ctx.project is not None and ctx.parent(func) is ctx.module and len(sites) <= _MAX_SITES:
            sites += self._calls_elsewhere(func)
        if not sites or len(sites) > _MAX_SITES:
            return None
        index = next((i for i, p in enumerate(positional) if p is param), None)
        bound = isinstance(self.ctx.parent(self.ctx.parent(func)), cst.ClassDef) and not any(
            (dotted_name(d.decorator) or "") == "staticmethod" for d in func.decorators)
        found: list[Val] = []
        for site, call in sites:
            caller = site.ctx.enclosing_function(call)
            if caller is func:
                continue
            if caller is not None:
                site._ensure(caller)
            args = site.call_args.get(call)
            position = _argument_index(call, param.name.value, index, bound and isinstance(call.func, cst.Attribute))
            value = args[position] if args is not None and position is not None else None
            if value is not None:
                found.append(value)
        gpu = next((v.gpu for v in found if v.gpu), None)
        grad = next((v.grad for v in found if v.grad), None)
        if not gpu and not grad:
            return None
        return Val("tensor", grad, gpu)  # not proven a torch tensor: another call may pass something else

    def _calls_elsewhere(self, func: cst.FunctionDef) -> list[tuple[Provenance, cst.Call]]:
        """The calls of ``func`` (a function of the module's top level) in the project's other files, each with
        that file's interpreter (Open-Sora-Plan's eval.py moves the videos to the device, then hands them to
        ``calculate_psnr`` of cal_psnr.py, whose own demo passes CPU tensors); not those of a file whose
        interpreter is being built (imports may cycle)."""
        found: list[tuple[Provenance, cst.Call]] = []
        for site_ctx, call in call_sites(self.ctx, func) or []:
            if site_ctx is self.ctx or id(site_ctx) in _BUILDING:
                continue
            found.append((provenance(site_ctx), call))
            if len(found) > _MAX_SITES:
                break
        return found

    # --- classes -------------------------------------------------------------------------
    def _module_classes(self) -> set[str]:
        ctx = self.ctx
        names: set[str] = set()
        changed = True
        while changed:
            changed = False
            for cls in ctx.nodes(cst.ClassDef):
                if cls.name.value in names:
                    continue
                for base in cls.bases:
                    qn = ctx.qualname(base.value) or ""
                    if (qn.startswith("torch.nn.") or qn.endswith("LightningModule")
                            or dotted_name(base.value) in names):
                        names.add(cls.name.value)
                        changed = True
                        break
        return names

    def _no_grad_expr(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call) and expr.args and self.ctx.qualname(expr.func) == "torch.set_grad_enabled":
            return isinstance(expr.args[0].value, cst.Name) and expr.args[0].value.value == "False"
        return _no_grad_call(self.ctx, expr)

    # --- statements ----------------------------------------------------------------------
    def _exec(self, body: Sequence[cst.CSTNode], env: Env, no_grad: bool) -> Env:
        entered = 0
        try:
            for stmt in body:
                env = self._stmt(stmt, env, no_grad)
                if self._leaves_on_accelerator(stmt):
                    entered += 1  # `if device.type == "cuda": return x.cpu().numpy()`: what follows is CPU
                    self._cpu_path += 1
        finally:
            self._cpu_path -= entered
        return env

    def _leaves_on_accelerator(self, stmt: cst.CSTNode) -> bool:
        """An ``if`` without ``else`` that checks for an accelerator and whose body always leaves the block."""
        if not isinstance(stmt, cst.If) or stmt.orelse is not None or not isinstance(stmt.body, cst.IndentedBlock):
            return False
        last = stmt.body.body[-1] if stmt.body.body else None
        leaves = isinstance(last, cst.SimpleStatementLine) and any(
            isinstance(s, (cst.Return, cst.Raise, cst.Continue, cst.Break)) for s in last.body)
        return leaves and guards(self.ctx).mode_polarity(stmt.test) is Polarity.AVAILABLE

    def _block(self, suite: cst.BaseSuite | None, env: Env, no_grad: bool) -> Env:
        if suite is None:
            return env
        if isinstance(suite, cst.IndentedBlock):
            return self._exec(suite.body, dict(env), no_grad)
        return self._exec([suite], dict(env), no_grad)

    def _stmt(self, stmt: cst.CSTNode, env: Env, no_grad: bool) -> Env:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            env = dict(env)
            env[stmt.name.value] = None
            return env
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in stmt.body:
                env = self._small(small, env, no_grad)
            return env
        if isinstance(stmt, cst.If):
            return self._if(stmt, env, no_grad)
        if isinstance(stmt, (cst.For, cst.While)):
            return self._loop(stmt, env, no_grad)
        if isinstance(stmt, cst.With):
            return self._with(stmt, env, no_grad)
        if isinstance(stmt, cst.Try):
            return self._try(stmt, env, no_grad)
        # anything else (match, try*, ...): still look inside for .numpy() calls
        self._scan(stmt, env, no_grad)
        return env

    def _if(self, stmt: cst.If, env: Env, no_grad: bool) -> Env:
        """Both branches from ``env``, merged (an ``elif`` is the ``else`` branch's ``if``)."""
        self._eval(stmt.test, env, no_grad)
        # the no-accelerator path of a device check (`else:` of `if device == "cuda":`, the body of
        # `if not use_cuda:`) is written for the CPU: no tensor there is on a GPU
        check = guards(self.ctx)
        body_env, else_env = _grad_branches(stmt.test, env)
        body_cpu = check.mode_polarity(stmt.test) is Polarity.UNAVAILABLE
        else_cpu = check.mode_falsity(stmt.test) is Polarity.UNAVAILABLE
        a = self._cpu_block(stmt.body, body_env, no_grad, body_cpu)
        b = self._cpu_block(stmt.orelse.body, else_env, no_grad, else_cpu) \
            if isinstance(stmt.orelse, cst.Else) else (
            self._stmt(stmt.orelse, dict(else_env), no_grad) if stmt.orelse is not None else env)
        merged = _merge_env(a, b)
        if stmt.orelse is None and check.mode_polarity(stmt.test) in (Polarity.AVAILABLE, Polarity.UNAVAILABLE):
            # `if device != "cpu": x = x.cpu()`: the branch handles the device case; trust what it bound
            for key, value in a.items():
                if value is not env.get(key):
                    merged[key] = value
        if self._current is not None and self._current.name.value == "__init__":
            # `if w: self.pos = nn.Parameter(...)` in __init__: where a branch does not set the attribute it is
            # not set at all (reading it raises), so what it holds when read is what the other branch set
            for key in (a.keys() ^ b.keys()) - env.keys():
                if key.startswith("self.") and key.count(".") == 1:
                    merged[key] = a.get(key) or b.get(key)
        return merged

    def _cpu_block(self, suite: cst.BaseSuite, env: Env, no_grad: bool, cpu_path: bool) -> Env:
        self._cpu_path += cpu_path
        try:
            return self._block(suite, env, no_grad)
        finally:
            self._cpu_path -= cpu_path

    def _loop(self, stmt: cst.For | cst.While, env: Env, no_grad: bool) -> Env:
        """The body run twice (what the first run binds, the second sees), merged with not running it."""
        it: Val | None = None
        if isinstance(stmt, cst.For):
            it = self._eval(stmt.iter, env, no_grad)
        else:
            self._eval(stmt.test, env, no_grad)
        out = env
        for _ in range(2):
            inner = dict(out)
            if isinstance(stmt, cst.For):
                self._bind(stmt.target, it if it is not None and it.kind == "tensor" else None, inner)
            inner = self._block(stmt.body, inner, no_grad)
            out = _merge_env(out, inner)
        if stmt.orelse is not None:
            out = _merge_env(out, self._block(stmt.orelse.body, out, no_grad))
        return out

    def _with(self, stmt: cst.With, env: Env, no_grad: bool) -> Env:
        """The body, under ``torch.no_grad()`` when an item is such a context."""
        inner_no_grad = no_grad
        inner = dict(env)
        for item in stmt.items:
            self._eval(item.item, env, no_grad)
            if self._no_grad_expr(item.item):
                inner_no_grad = True
            if item.asname is not None:
                self._bind(item.asname.name, None, inner)
        return self._block(stmt.body, inner, inner_no_grad)

    def _try(self, stmt: cst.Try, env: Env, no_grad: bool) -> Env:
        """The body merged with each handler (run from ``env``), then ``else`` and ``finally``."""
        out = self._block(stmt.body, env, no_grad)
        for handler in stmt.handlers:
            out = _merge_env(out, self._block(handler.body, env, no_grad))
        if stmt.orelse is not None:
            out = self._block(stmt.orelse.body, out, no_grad)
        if stmt.finalbody is not None:
            out = self._block(stmt.finalbody.body, out, no_grad)
        return out

    def _small(self, small: cst.BaseSmallStatement, env: Env, no_grad: bool) -> Env:
        if isinstance(small, cst.Assign):
            value = self._eval(small.value, env, no_grad)
            env = dict(env)
            for target in small.targets:
                self._bind(target.target, value, env, small.value)
            return env
        if isinstance(small, cst.AnnAssign):
            if small.value is None:
                return env
            value = self._eval(small.value, env, no_grad)
            env = dict(env)
            self._bind(small.target, value, env)
            return env
        if isinstance(small, cst.AugAssign):
            value = _union(self._eval(small.target, env, no_grad), self._eval(small.value, env, no_grad))
            env = dict(env)
            self._bind(small.target, value, env)
            return env
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            # model.to(device) / model.cuda() move a module in place
            func = small.value.func
            self._record_statement(small.value, env, no_grad)
            value = self._eval(small.value, env, no_grad)
            moves = (devices.MOVE_METHOD, devices.CUDA_METHOD, devices.CPU_METHOD)
            if isinstance(func, cst.Attribute) and func.attr.value in moves and isinstance(func.value, cst.Name):
                current = env.get(func.value.value)
                if current is not None and current.kind == "module" and value is not None:
                    env = dict(env)
                    env[func.value.value] = value
            return env
        if isinstance(small, cst.Return) and small.value is not None and self._current is not None:
            value = self._eval(small.value, env, no_grad)
            running = self._current
            self.returns[running] = _merge_values(self.returns[running], value) if running in self.returns else value
            return env
        self._scan(small, env, no_grad)
        return env

    def _bind(self, target: cst.CSTNode, value: Val | None, env: Env, source: cst.CSTNode | None = None) -> None:
        if isinstance(target, cst.Name):
            env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            elems = list(source.elements) if isinstance(source, (cst.Tuple, cst.List)) else None
            for i, el in enumerate(target.elements):
                if elems is not None and len(elems) == len(target.elements):
                    self._bind(el.value, self._eval(elems[i].value, env, False), env)
                else:
                    part = value if value is not None and value.kind == "tensor" else None
                    if part is not None and i == 1 and _returns_indices(self.ctx, source):
                        part = replace(part, grad=None, nograd=True)  # (values, indices): integers
                    self._bind(el.value, part, env)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, None, env)
        elif isinstance(target, (cst.Attribute, cst.Subscript)):
            name = dotted_name(target)
            if name:
                env[name] = value

    def _scan(self, node: cst.CSTNode, env: Env, no_grad: bool) -> None:
        for child in children(node):
            if isinstance(child, cst.BaseExpression):
                self._eval(child, env, no_grad)
            elif not isinstance(child, (cst.BaseSuite, cst.BaseCompoundStatement)):
                self._scan(child, env, no_grad)

    # --- expressions ---------------------------------------------------------------------
    def _eval(self, expr: cst.BaseExpression, env: Env, no_grad: bool) -> Val | None:
        if isinstance(expr, cst.Name):
            return env.get(expr.value)
        if isinstance(expr, cst.Call):
            return self._call(expr, env, no_grad)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr, env, no_grad)
        if isinstance(expr, cst.Subscript):
            return self._subscript(expr, env, no_grad)
        if isinstance(expr, cst.BinaryOperation):
            # operands evaluated here, not in a helper: a long `a + b + ...` chain recurses one frame a term
            left, right = self._eval(expr.left, env, no_grad), self._eval(expr.right, env, no_grad)
            return _arithmetic(expr, left, right, no_grad)
        if isinstance(expr, cst.UnaryOperation):
            val = self._eval(expr.expression, env, no_grad)
            return None if isinstance(expr.operator, cst.Not) else val
        return self._eval_compound(expr, env, no_grad)

    def _eval_compound(self, expr: cst.BaseExpression, env: Env, no_grad: bool) -> Val | None:
        """Comparisons, conditional expressions, comprehensions and lambdas; any other expression is only
        scanned for ``.numpy()`` calls."""
        if isinstance(expr, cst.Comparison):
            vals = [self._eval(expr.left, env, no_grad)]
            vals += [self._eval(c.comparator, env, no_grad) for c in expr.comparisons]
            out = _union(*vals)
            return replace(out, grad=None, nograd=True) if out else None
        if isinstance(expr, cst.IfExp):
            self._eval(expr.test, env, no_grad)
            # `out.cpu() if use_cuda else out`: the branch taken without an accelerator holds no GPU value
            check = guards(self.ctx)
            body_cpu = check.mode_polarity(expr.test) is Polarity.UNAVAILABLE
            else_cpu = check.mode_falsity(expr.test) is Polarity.UNAVAILABLE
            body_env, else_env = _grad_branches(expr.test, env)
            body = self._eval_on_path(expr.body, body_env, no_grad, body_cpu)
            orelse = self._eval_on_path(expr.orelse, else_env, no_grad, else_cpu)
            if else_cpu and orelse is not None:
                orelse = replace(orelse, gpu=None)
            if body_cpu and body is not None:
                body = replace(body, gpu=None)
            out = _union(body, orelse, complete=body is not None and orelse is not None)
            return out if out is None or (body is not None and orelse is not None) else _unproven(out)
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
            self._comprehension(expr, env, no_grad)
            return None
        if isinstance(expr, cst.Lambda):
            return None
        self._scan(expr, env, no_grad)
        return None

    def _eval_on_path(self, expr: cst.BaseExpression, env: Env, no_grad: bool, cpu_path: bool) -> Val | None:
        self._cpu_path += cpu_path
        try:
            return self._eval(expr, env, no_grad)
        finally:
            self._cpu_path -= cpu_path

    def _attribute(self, expr: cst.Attribute, env: Env, no_grad: bool) -> Val | None:
        """``x.attr``: what is bound to the dotted name, else the tensor ``x`` is (``.data``/``.grad``
        without grad); None for what leaves the tensor world (``.shape``, ``.device``, ...)."""
        name = dotted_name(expr)
        if name and name in env:
            return env[name]
        base = self._eval(expr.value, env, no_grad)
        attr = expr.attr.value
        if base is None or base.kind != "tensor" or attr in NOT_TENSOR:
            return None
        if attr in ("data", "grad"):
            return replace(base, grad=None, nograd=True)
        return base

    def _subscript(self, expr: cst.Subscript, env: Env, no_grad: bool) -> Val | None:
        """``x[...]``: what is bound to the dotted name, else the tensor ``x`` is (the index is scanned)."""
        name = dotted_name(expr)
        if name and name in env:
            return env[name]
        base = self._eval(expr.value, env, no_grad)
        for el in expr.slice:
            self._scan(el, env, no_grad)
        return base if base is not None and base.kind == "tensor" else None

    def _comprehension(self, expr: cst.ListComp | cst.GeneratorExp | cst.SetComp | cst.DictComp, env: Env,
                       no_grad: bool) -> None:
        """Look inside a comprehension for ``.numpy()`` calls, its targets bound to what they iterate."""
        inner = dict(env)
        comp: cst.CompFor | None = expr.for_in
        while comp is not None:
            it = self._eval(comp.iter, inner, no_grad)
            self._bind(comp.target, it if it is not None and it.kind == "tensor" else None, inner)
            for cond in comp.ifs:
                self._eval(cond.test, inner, no_grad)
            comp = comp.inner_for_in
        if isinstance(expr, cst.DictComp):
            self._eval(expr.key, inner, no_grad)
            self._eval(expr.value, inner, no_grad)
        else:
            self._eval(expr.elt, inner, no_grad)

    def _call(self, call: cst.Call, env: Env, no_grad: bool) -> Val | None:
        ctx = self.ctx
        func = call.func
        args = self._arguments(call, env, no_grad)
        # every argument is a known value or a constant: a result can be proven grad-free / on the CPU
        complete = all(v is not None or _neutral(a.value) for v, a in zip(args, call.args, strict=True))
        qn = ctx.qualname(func)
        kwargs = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        if qn is not None:
            found = self._qualified_call(qn, call, args, kwargs, env, no_grad)
            return found if found is not None or qn.split(".")[0] in devices.EVIDENCE_ROOTS else self._returned(call)
        built = self._module_class_call(call, env)
        if built is not None:
            module, called = built
            return self._module_output(module, args, complete, no_grad, ctx.code(func)) if called else module
        if isinstance(func, cst.Attribute):
            held = env.get(dotted_name(func) or "")
            if held is not None and (held.kind == "module" or held.moved):
                return self._module_output(held, args, complete, no_grad, ctx.code(func))  # self.model(x)
            if isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
                returned = self._returned(call)  # self.helper(...): what the method returns
                if returned is not None:
                    return returned
            return self._method_call(call, func, args, kwargs, complete, env, no_grad)
        if isinstance(func, cst.Name) and env.get(func.value) is None:
            # x = trans(x): a helper that returns its argument reshaped keeps its device
            returned = self._returned(call) or self._passed_through(call, args)
            if returned is not None:
                return returned
        callee = self._eval(func, env, no_grad)
        if callee is not None and (callee.kind == "module" or callee.moved):
            # a module, or an object moved with .to()/.cuda() and then called: a module
            return self._module_output(callee, args, complete, no_grad, ctx.code(func))
        return None

    def _module_class_call(self, call: cst.Call, env: Env) -> tuple[Val, bool] | None:
        """A call of a module class of the file: ``Net(...)``, (the module built, False), or ``self(x)`` /
        ``self.forward(x)`` in a method of one, (the module, True: called, its output is the call's value);
        None for any other call."""
        func = call.func
        if isinstance(func, cst.Name) and func.value in self.module_classes:
            cls = next((c for c in self.ctx.nodes(cst.ClassDef) if c.name.value == func.value), None)
            return _module_class(self.ctx, cls, call, not self.default_device), False
        own = self._own_module(func, env)
        return (_module_class(self.ctx, own, call, cpu=False), True) if own is not None else None

    def _own_module(self, func: cst.BaseExpression, env: Env) -> cst.ClassDef | None:
        """The module class (of the file) whose method calls itself: ``self(x)`` or ``self.forward(x)`` in a
        method other than ``forward`` (facexlib's RetinaFace: ``loc, conf, landmarks = self(inputs)`` in
        ``detect_faces``), ``self`` not rebound."""
        target = func.value if isinstance(func, cst.Attribute) and func.attr.value == "forward" else func
        if not isinstance(target, cst.Name) or target.value != "self" or env.get("self") is not None:
            return None
        method = self.ctx.enclosing_function(func)
        if method is None or method.name.value == "forward":
            return None
        owner = self.ctx.parent(self.ctx.parent(method))
        return owner if isinstance(owner, cst.ClassDef) and owner.name.value in self.module_classes else None

    def _arguments(self, call: cst.Call, env: Env, no_grad: bool) -> list[Val | None]:
        """What each argument of ``call`` is; kept for the helpers of the file (see :meth:`_param_value`)."""
        args = [self._eval(a.value, env, no_grad) for a in call.args]
        if any(a is not None for a in args):
            self.call_args[call] = args
        return args

    def _qualified_call(self, qn: str, call: cst.Call, args: list[Val | None], kwargs: dict[str, cst.BaseExpression],
                        env: Env, no_grad: bool) -> Val | None:
        parts = qn.split(".")
        if parts[0] == "torch" and len(parts) == 2 and parts[1] in FACTORIES:
            return self._factory(parts[1], args, kwargs, env, no_grad)
        if qn in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            rg = kwargs.get("requires_grad")
            frozen = isinstance(rg, cst.Name) and rg.value == "False"
            first = args[0] if args else None
            return Val("tensor", None if frozen else "an nn.Parameter", first.gpu if first else None, torch=True,
                       nograd=frozen, cpu=first is not None and first.cpu)
        if self._is_module_factory(qn, parts):
            preprocessor = len(parts) >= 2 and _PREPROCESSOR.fullmatch(parts[-2]) is not None
            params = not (_PARAMETERLESS.fullmatch(parts[-1]) or preprocessor)
            return Val("module", params=params, torch=True,
                       cpu=not self.default_device and not qn.endswith(MODULE_FACTORIES_SUFFIX))
        if qn == "torch.hub.load":  # whatever the entry point returns: a model, a predictor, a function
            return Val("tensor", torch=True, moved=True, params=False)
        if parts[0] == "torch" and qn not in NO_GRAD_CONTEXTS:
            elements = list(self._list_elements(call, env, no_grad))
            out = _union(*args, *elements, complete=False)
            if out is None and qn in devices.TENSOR_FUNCTIONS:
                out = Val("tensor")  # a tensor of its arguments' unknown grad and device
            if out is not None:
                out = replace(out, torch=True, output=qn.startswith(devices.OBJECT_APIS))
                if no_grad or (len(parts) == 2 and parts[1] in NON_DIFFERENTIABLE):
                    out = replace(out, grad=None, nograd=True)  # torch.argmax(q, 1): integers carry no grad
            return out
        return None

    def _factory(self, name: str, args: list[Val | None], kwargs: dict[str, cst.BaseExpression], env: Env,
                 no_grad: bool) -> Val:
        """``torch.<name>(...)``, a tensor factory: grad from ``requires_grad=``, place from ``device=`` (or,
        for ``*_like``, from the first argument)."""
        ctx = self.ctx
        grad = gpu = None
        rg = kwargs.get("requires_grad")
        if isinstance(rg, cst.Name) and rg.value == "True":
            grad = "created with requires_grad=True"
        nograd = rg is None or (isinstance(rg, cst.Name) and rg.value == "False")
        dev = kwargs.get(devices.DEVICE_KEYWORD)
        cpu = dev is None and not self.default_device
        if isinstance(dev, cst.Attribute) and dev.attr.value == devices.DEVICE_ATTRIBUTE:
            # device=other.device: wherever `other` is, if we know
            other = self._eval(dev.value, env, no_grad)
            gpu = other.gpu if other is not None else None
            cpu = other is not None and other.cpu
        elif dev is not None and not _is_cpu_device(ctx, dev):
            gpu = f"created with device={ctx.code(dev)}"
        elif dev is not None:
            cpu = True
        if name.endswith("_like") and dev is None:
            first = args[0] if args else None
            if first is not None and not gpu:
                gpu = first.gpu
            cpu = first is not None and first.cpu
        return Val("tensor", grad, gpu, torch=True, nograd=nograd, cpu=cpu)

    @staticmethod
    def _is_module_factory(qn: str, parts: list[str]) -> bool:
        if qn.startswith("torch.nn.") and parts[-1][:1].isupper() and "functional" not in parts:
            return True
        if qn.startswith(MODULE_ROOTS):
            return True
        if qn.endswith(MODULE_FACTORIES_SUFFIX) and parts[0] in devices.PRETRAINED_PACKAGES:
            # TFAutoModel / FlaxAutoModel.from_pretrained build TensorFlow and JAX models, not torch ones
            return not (len(parts) >= 2 and parts[-2].startswith(("TF", "Flax")))
        return False

    def _method_call(self, call: cst.Call, func: cst.Attribute, args: list[Val | None],
                     kwargs: dict[str, cst.BaseExpression], complete: bool, env: Env, no_grad: bool) -> Val | None:
        method = func.attr.value
        recv = self._eval(func.value, env, no_grad)
        if method == "numpy":
            self._record_numpy(call, recv, kwargs, no_grad)
            return None
        if method == devices.CUDA_METHOD:
            if recv is None:
                return Val("tensor", None, "moved with .cuda()", torch=True, moved=True,
                           params=not _loaded(func.value))
            return replace(recv, gpu="moved with .cuda()", cpu=False)
        if method == devices.MOVE_METHOD:
            return self._moved(call, recv, kwargs)
        if recv is None:
            # x.detach() of a value of unknown type: only a tensor has the method
            return Val("tensor", torch=True, nograd=True) if method in ("detach", "detach_") else None
        if recv.kind == "object":  # pipe.cpu(), pipe.eval(): the same object; any other method: not known
            return recv if method == devices.CPU_METHOD or method in MODULE_KEEP else None
        if _as_module_method(method, recv):
            return self._module_method(method, recv, args, complete, no_grad, func)
        return _tensor_method(method, recv, args, complete, no_grad)

    def _record_numpy(self, call: cst.Call, recv: Val | None, kwargs: dict[str, cst.BaseExpression],
                      no_grad: bool) -> None:
        """Remember what is known of the receiver of ``.numpy()`` (not ``.numpy(force=True)``). Under
        ``torch.no_grad()`` / ``inference_mode()`` torch lets ``.numpy()`` through on a tensor that requires
        grad (checked on torch 2.13): only its device can make the call fail there."""
        force = kwargs.get("force")
        if recv is None or recv.kind != "tensor" or (isinstance(force, cst.Name) and force.value == "True"):
            return
        if no_grad:
            recv = replace(recv, grad=None, nograd=True)
        if self._cpu_path:
            recv = replace(recv, gpu=None)
        prev = self.numpy_receivers.get(call)
        if prev is not None:  # a loop's second run: what may hold on either, what is proven on both
            recv = Val("tensor", recv.grad or prev.grad, recv.gpu or prev.gpu, torch=recv.torch and prev.torch,
                       nograd=recv.nograd and prev.nograd, cpu=recv.cpu and prev.cpu)
        self.numpy_receivers[call] = recv

    def _moved(self, call: cst.Call, recv: Val | None, kwargs: dict[str, cst.BaseExpression]) -> Val | None:
        """``recv.to(...)``: on the CPU, on the device named, or where it was (a dtype, a memory format)."""
        ctx = self.ctx
        if call.args and call.args[0].keyword is None:
            target: cst.BaseExpression | None = call.args[0].value
        else:
            target = kwargs.get(devices.DEVICE_KEYWORD)
        if target is not None and _is_dtype(ctx, target) and recv is not None \
                and (ctx.qualname(target) or "").split(".")[-1] in devices.INTEGER_DTYPES:
            return replace(recv, grad=None, nograd=True)  # .to(torch.uint8): integers carry no grad
        if target is None or _is_dtype(ctx, target) or _is_torch_non_device(ctx, target):
            return recv
        if _is_cpu_device(ctx, target):
            if recv is None:  # an object of unknown type put on the CPU: a tensor or a module
                return Val("tensor", None, None, torch=True, cpu=True, moved=True)
            return replace(recv, gpu=None, cpu=True)
        where = f"moved with .to({ctx.code(target)})"
        if recv is None:
            assert isinstance(call.func, cst.Attribute)
            return Val("tensor", None, where, torch=True, moved=True, params=not _loaded(call.func.value))
        return replace(recv, gpu=where, cpu=False)

    def _module_method(self, method: str, recv: Val, args: list[Val | None], complete: bool, no_grad: bool,
                       func: cst.Attribute) -> Val | None:
        """A method of a module (see :func:`_as_module_method`): ``.cpu()``, one that returns the module
        (``.eval()``, ``.half()``, ...), ``.forward(...)``; any other method's result is unknown."""
        if method == devices.CPU_METHOD:
            return replace(recv, gpu=None, cpu=True)
        if method in MODULE_KEEP:
            return recv
        if method == "state_dict":  # its tensors, detached, where the module is
            return Val("tensor", None, recv.gpu, torch=recv.torch, nograd=True, cpu=recv.cpu)
        if method == "forward":
            return self._module_output(recv, args, complete, no_grad, self.ctx.code(func.value))
        # another method of the module (model.compute_energy(z)): computed from its inputs, so on the GPU
        # when one is; whether it requires grad is not known
        gpu = next((a.gpu for a in args if a is not None and a.gpu), None)
        return Val("tensor", None, gpu, torch=recv.torch, output=True) if gpu else None

    def _returned(self, call: cst.Call) -> Val | None:
        """What a function of the file, a method of its class, or a function of the project returns."""
        project = self.ctx.project
        # another file is parsed only when its function holds evidence (the ast screen's cheap question)
        found = callee(self.ctx, call, project.function_evidence if project is not None else None)
        if found is None:
            return None
        other_ctx, definition = found
        if other_ctx is not self.ctx and id(other_ctx) in _BUILDING:
            return None  # a cycle of imports: what it returns is not known yet
        other = self if other_ctx is self.ctx else provenance(other_ctx)
        if isinstance(definition, cst.ClassDef):  # a module class of the project: Net()
            if definition.name.value in other.module_classes:
                return _module_class(other_ctx, definition, call, not self.default_device)
            return _OBJECT if _no_module_class(definition) else None
        other._ensure(definition)
        return other.returns.get(definition)

    def _passed_through(self, call: cst.Call, args: list[Val | None]) -> Val | None:
        """What a function of the file returns when it returns only its one tensor argument, reshaped
        (Open-Sora-Plan's ``def trans(x): x = x.permute(0, 2, 1, 3, 4); return x``): that argument's value, on its
        device. Reshaping, indexing and other methods of the tensor keep the device."""
        found = callee(self.ctx, call, _no_other_file)
        if found is None or found[0] is not self.ctx or not isinstance(found[1], cst.FunctionDef):
            return None
        func = found[1]
        params = [*func.params.posonly_params, *func.params.params]
        if len(params) != 1 or func.params.kwonly_params or len(call.args) != 1 or call.args[0].star:
            return None
        name = params[0].name.value
        body = list(walk(func.body))
        returns = [n for n in body if isinstance(n, cst.Return)]
        rebinds = [n for n in body if isinstance(n, cst.Assign)
                   and any(isinstance(t.target, cst.Name) and t.target.value == name for t in n.targets)]
        # bound some other way: a loop's or a with's target, an augmented assignment, a walrus, a nested scope
        elsewhere = any(isinstance(n, (cst.FunctionDef, cst.Lambda, cst.AugAssign, cst.NamedExpr, cst.Global))
                        or (isinstance(n, (cst.For, cst.CompFor)) and name in _names_in(n.target))
                        or (isinstance(n, cst.AsName) and name in _names_in(n.name)) for n in body)
        if not returns or elsewhere or any(n.value is None or _root_name(n.value) != name for n in returns) \
                or any(len(n.targets) != 1 or _root_name(n.value) != name for n in rebinds):
            return None
        value = args[0] if args else None
        return value if value is not None and value.kind == "tensor" else None

    def _list_elements(self, call: cst.Call, env: Env, no_grad: bool) -> Iterator[Val | None]:
        for arg in call.args:
            if isinstance(arg.value, (cst.List, cst.Tuple)):
                for el in arg.value.elements:
                    yield self._eval(el.value, env, no_grad)

    @staticmethod
    def _module_output(module: Val, args: Sequence[Val | None], complete: bool, no_grad: bool, name: str) -> Val | None:
        gpu = module.gpu or next((a.gpu for a in args if a is not None and a.gpu), None)
        known = [a for a in args if a is not None]
        cpu = module.cpu and complete and all(a.cpu for a in known)
        if module.nograd:  # its forward runs under torch.no_grad(): nothing it returns requires grad
            return Val("tensor", None, gpu, torch=module.torch, nograd=True, cpu=cpu, output=True)
        if module.kind != "module" and not module.params:
            # an object of unknown type that no class call built (pickle.load(f).to(device), torch.hub.load(...)),
            # called: a module, a predictor whose forward runs without grad (co-tracker's hub entry), a pickled
            # detector whose parameters are frozen: whether its output requires grad is not known
            grad = None
            nograd = no_grad
        elif module.params:
            grad = None if no_grad else f"output of {name}(...) outside torch.no_grad()"
            nograd = no_grad
        else:
            grad = None if no_grad else next((a.grad for a in known if a.grad), None)
            nograd = no_grad or (complete and all(a.nograd for a in known))
            if not known and not gpu:
                return None
        return Val("tensor", grad, gpu, torch=module.torch, nograd=nograd, cpu=cpu, output=True)

    # --- moves whose result a statement discards (DEV008) ------------------------------------
    def discarded_moves(self) -> dict[cst.Call, Val | None]:
        """Each ``x.to(...)`` / ``x.cuda()`` / ``x.half()`` ... (devices.TENSOR_COPY_METHODS) that is a whole
        expression statement -> what is known of its receiver ``x`` there (None: nothing). The functions
        holding one are interpreted on the first call (as if one asked what they return)."""
        ctx = self.ctx
        for stmt in ctx.nodes(cst.Expr):
            func = ctx.enclosing_function(stmt)
            if func is not None and _copy_call(stmt.value):
                self._ensure(func)
        return self.statement_receivers

    def _record_statement(self, call: cst.Call, env: Env, no_grad: bool) -> None:
        if not _copy_call(call):
            return
        assert isinstance(call.func, cst.Attribute)
        recv = self._eval(call.func.value, env, no_grad)
        if call in self.statement_receivers:  # a loop's second run: proven only if proven on both
            recv = _merge_values(self.statement_receivers[call], recv)
        self.statement_receivers[call] = recv


# An object of a class of the project that is no module (:func:`_no_module_class`): moved with .to() it stays
# one, and what calling it returns is not known (a diffusion pipeline's __call__ runs under torch.no_grad()).
_OBJECT = Val("object", params=False)


def _no_module_class(cls: cst.ClassDef) -> bool:
    """Is ``cls`` (not a module class of its file) a plain class (no base but ``object``) or a pipeline (a base
    named ``...Pipeline``: diffusers' DiffusionPipeline, whose pipelines' ``__call__`` run under
    ``torch.no_grad()``, or the project's own pipeline base), with no base named for a module or model?"""
    names = [(dotted_name(b.value) or "").split(".")[-1] for b in cls.bases if b.keyword is None]
    if any("Module" in n or "Model" in n for n in names):
        return False
    return all(n == "object" for n in names) or any(n.endswith("Pipeline") for n in names)


def _loaded(expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a call of a function (``pickle.load(f)``, ``create_metric(name)``), not of a class (``Net()``,
    ``models.Net(...)``: named in CapWords)? What it returns is an object of unknown type."""
    if not isinstance(expr, cst.Call):
        return False
    name = (dotted_name(expr.func) or "").split(".")[-1]
    return name[:1].islower()


def _copy_call(expr: cst.BaseExpression) -> bool:
    return (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value in devices.TENSOR_COPY_METHODS)


def _tensor_method(method: str, recv: Val, args: list[Val | None], complete: bool, no_grad: bool) -> Val | None:
    """``recv.method(...)`` of a tensor: ``.cpu()``, ``.detach()``, ``.requires_grad_()``, what leaves the
    tensor world (``.item()``, ``.tolist()``, ...), an integer result, or a tensor computed from ``recv`` and
    the arguments, where ``recv`` lives."""
    if method == devices.CPU_METHOD:
        return replace(recv, gpu=None, cpu=True)
    if method in ("detach", "detach_"):
        # only a tensor has .detach(): whatever the receiver was (a model's output.last_hidden_state), the
        # result is one
        return replace(recv, kind="tensor", grad=None, nograd=True, torch=True, output=False, moved=False)
    if method == "requires_grad_":
        return replace(recv, grad="made to require grad with .requires_grad_()", nograd=False)
    if method in ("values", "items"):  # a state_dict's tensors (a tensor has neither method)
        return recv
    if method in NOT_TENSOR:
        return None
    if method in NON_DIFFERENTIABLE:
        return replace(recv, grad=None, nograd=True)
    out = _union(recv, *args, complete=complete)
    if out is not None:
        out = replace(out, cpu=recv.cpu, torch=recv.torch,  # a method's result lives where its tensor does
                      output=recv.output and method in MODULE_KEEP)  # traced.eval(): still maybe a module
    return replace(out, grad=None, nograd=True) if out and no_grad else out


# torch functions and tensor methods that return (values, indices) when given a dimension
_WITH_INDICES = frozenset({"max", "min", "sort", "topk", "kthvalue", "mode", "median", "nanmedian", "cummax",
                           "cummin"})


def _returns_indices(ctx: Context, source: cst.CSTNode | None) -> bool:
    """Is ``source`` ``torch.max(x, 1)`` / ``x.max(dim=1)`` / ``x.topk(k)`` ...: a (values, indices) pair?"""
    if not isinstance(source, cst.Call):
        return False
    qn = ctx.qualname(source.func)
    if qn is not None:
        return qn.startswith("torch.") and qn.split(".")[-1] in _WITH_INDICES and len(source.args) >= 2
    func = source.func
    return isinstance(func, cst.Attribute) and func.attr.value in _WITH_INDICES \
        and (len(source.args) >= 1 or func.attr.value == "sort")


_MAX_SITES = 8  # a helper called from more places than this: its parameters are not followed


# Tensor methods that keep a tensor's device and grad: shapes, copies, casts
_SHAPE_METHODS = frozenset({"view", "reshape", "permute", "transpose", "contiguous", "squeeze", "unsqueeze",
                            "flatten", "clone", "float", "half", "double", "expand", "repeat", "flip"})
# Tensor methods that keep a tensor's (absence of) grad whatever their arguments: shapes, copies, moves, casts
_GRAD_KEEPING = frozenset({"view", "reshape", "permute", "transpose", "contiguous", "squeeze", "unsqueeze",
                           "flatten", "detach", "clone", "cpu", "cuda", "to", "float", "half", "double", "expand"})


def _module_class(ctx: Context, cls: cst.ClassDef | None, built: cst.Call, cpu: bool) -> Val:
    """A module of the class ``cls`` built by the call ``built`` (``cls`` None: a module class of the file whose
    definition is not found). A class whose ``forward`` runs without grad (:func:`forward_without_grad`) makes
    outputs that require no grad, whatever its inputs: ``nograd`` on a module says so. One with no parameter of
    its own (:func:`parameterless_class`), or that freezes them (:func:`frozen_class`), passes on its inputs'
    grad only."""
    quiet = cls is not None and forward_without_grad(ctx, cls)
    own = cls is None or not (quiet or parameterless_class(ctx, cls) or frozen_class(cls, built))
    return Val("module", params=own, torch=True, nograd=quiet, cpu=cpu)


def forward_without_grad(ctx: Context, cls: cst.ClassDef) -> bool:
    """Does the module class's ``forward`` return only tensors made under ``torch.no_grad()`` (a frozen
    wrapper: ``with torch.no_grad(): _, flow = self.raft(a, b)`` then ``return flow.view(...)``)? Its calls then
    make no graph from its own parameters (what requires grad comes from its inputs only). Every returned value
    is a name (or a tuple of names) whose every assignment in ``forward`` is inside a no-grad block, or a shape
    method of such a name (:data:`_GRAD_KEEPING`); or ``forward`` is decorated with ``@torch.no_grad()``."""
    return ctx.shared(f"provenance.forward_without_grad.{id(cls)}", lambda c: _forward_without_grad(c, cls))


def _forward_without_grad(ctx: Context, cls: cst.ClassDef) -> bool:
    forward = own_method(cls, "forward")
    if forward is None:
        return False
    if any(_no_grad_call(ctx, d.decorator) for d in forward.decorators):
        return True
    scope = bindings(ctx).scopes.get(forward)
    if scope is None or any(isinstance(b.node, (cst.For, cst.NamedExpr)) for bs in scope.bindings.values() for b in bs):
        return False  # names bound by loops or `:=`: not followed

    def quiet_binding(binding: Binding, quiet: set[str]) -> bool:
        """Made without grad: an assignment inside a no-grad block (a tuple target too: `_, flow = ...`), or of
        a quiet value; a name bound otherwise (a parameter, `with ... as`, an annotation) is not."""
        node = binding.node
        return isinstance(node, (cst.Assign, cst.AugAssign)) and (
            _in_no_grad_block(ctx, node, forward) or _keeps_quiet(node.value, quiet))

    quiet = set(scope.bindings)  # the names made without grad: the largest set that holds (a fixed point)
    changed = True
    while changed:
        changed = False
        for name in sorted(quiet):
            if not all(quiet_binding(b, quiet) for b in scope.bindings[name]):
                quiet.discard(name)
                changed = True
    returns = [r for r in ctx.nodes(cst.Return) if ctx.enclosing_function(r) is forward]
    return bool(returns) and all(r.value is not None and _keeps_quiet(r.value, quiet) for r in returns)


_NO_GRAD_CALLS = NO_GRAD_CONTEXTS - {"torch.enable_grad"}


def _no_grad_call(ctx: Context, expr: cst.BaseExpression) -> bool:
    """``torch.no_grad()`` / ``torch.inference_mode()`` (called or not)."""
    return ctx.qualname(expr.func if isinstance(expr, cst.Call) else expr) in _NO_GRAD_CALLS


def _in_no_grad_block(ctx: Context, node: cst.CSTNode, func: cst.FunctionDef) -> bool:
    """Is ``node`` inside a ``with torch.no_grad():`` block of ``func``?"""
    for anc in ctx.ancestors(node):
        if anc is func:
            return False
        if isinstance(anc, cst.With) and any(_no_grad_call(ctx, item.item) for item in anc.items):
            return True
    return False


def under_no_grad(ctx: Context, node: cst.CSTNode) -> bool:
    """Is ``node`` inside a ``with torch.no_grad():`` / ``torch.inference_mode()`` block, or in a function
    decorated with one of them (an enclosing one too)?"""
    for anc in ctx.ancestors(node):
        if isinstance(anc, cst.With) and any(_no_grad_call(ctx, item.item) for item in anc.items):
            return True
        if isinstance(anc, cst.FunctionDef) and any(_no_grad_call(ctx, d.decorator) for d in anc.decorators):
            return True
    return False


def called_only_without_grad(ctx: Context, node: cst.CSTNode) -> bool:
    """Is ``node`` in a function (or method) that the linted tree calls, and only under ``torch.no_grad()``
    (drqv2's ``agent.act(obs)``, called by the training loop in ``with torch.no_grad(), eval_mode(agent):``)?
    Every call of its name counts, whatever it is called on (``self.agent.act(...)``): a call of another
    function of that name outside no_grad keeps the answer no, as does a tree too wide to look at. A
    LightningModule's ``validation_step`` / ``test_step`` / ``predict_step`` needs no call in the tree: the
    Trainer runs them under no_grad / inference_mode."""
    func = ctx.enclosing_function(node)
    project = ctx.project
    if func is None:
        return False
    hook = _lightning_eval_hook(ctx, func)
    if project is None:
        return hook
    calls = project.calls_named(func.name.value, resolving=False)
    if calls is None or (not calls and not hook):
        return False  # too many files to look at, or no call seen
    return all(under_no_grad(c_ctx, c) for c_ctx, c in calls)


# The hooks a Lightning Trainer runs under torch.no_grad() / torch.inference_mode() (its evaluation loops:
# validate, test, predict)
_LIGHTNING_EVAL_HOOKS = frozenset({"validation_step", "test_step", "predict_step"})


def _lightning_eval_hook(ctx: Context, func: cst.FunctionDef) -> bool:
    """Is ``func`` the ``validation_step`` / ``test_step`` / ``predict_step`` of a class whose base is named for a
    LightningModule (``pl.LightningModule``, ``L.LightningModule``)? Lightning runs it without grad."""
    if func.name.value not in _LIGHTNING_EVAL_HOOKS:
        return False
    owner = ctx.parent(ctx.parent(func))
    return isinstance(owner, cst.ClassDef) and _lightning_module(ctx, owner, 3)


def _lightning_module(ctx: Context, cls: cst.ClassDef, depth: int) -> bool:
    """Does ``cls`` derive from a class named for a LightningModule, directly or through classes of the project
    (fastMRI's ``UnetModule(MriModule)``, ``MriModule(pl.LightningModule)``), ``depth`` classes up?"""
    names = [dotted_name(b.value) for b in cls.bases]
    if any("LightningModule" in (n or "") for n in names):
        return True
    if depth == 0:
        return False
    for name in names:
        found = resolve_definition(ctx, name) if name is not None else None
        if found is not None and isinstance(found[1], cst.ClassDef) and found[1] is not cls \
                and _lightning_module(found[0], found[1], depth - 1):
            return True
    return False


def _keeps_quiet(expr: cst.BaseExpression, quiet: set[str]) -> bool:
    """Is ``expr`` a name of ``quiet``, a tuple of such, or a grad-keeping method of one?"""
    if isinstance(expr, cst.Name):
        return expr.value in quiet
    if isinstance(expr, cst.Tuple):
        return all(_keeps_quiet(el.value, quiet) for el in expr.elements)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _GRAD_KEEPING:
        return _keeps_quiet(expr.func.value, quiet)
    return False


def _names_in(target: cst.CSTNode) -> set[str]:
    """The plain names a binding target binds (``x``, ``(x, y)``)."""
    return {n.value for n in walk(target) if isinstance(n, cst.Name)}


def _root_name(expr: cst.BaseExpression) -> str | None:
    """The name a value is a reshaped part of, through indexing and the methods that keep a tensor's device and
    grad (``x.permute(...)[0]``: ``x``; not ``x.cpu()``, ``x.detach()``, ``x.data``); None for anything else."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                and expr.func.attr.value in _SHAPE_METHODS:
            expr = expr.func.value
        else:
            return expr.value if isinstance(expr, cst.Name) else None


def _no_other_file(path: str, symbol: str) -> bool:
    return False  # callee(): no other file is parsed to find a helper's calls


def _argument_index(call: cst.Call, name: str, index: int | None, bound: bool) -> int | None:
    """The position in ``call.args`` of the argument for parameter ``name`` (positional ``index`` in the
    signature; ``bound``: ``self`` is passed implicitly); None when it cannot be told (``*args``)."""
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is not None and arg.keyword.value == name:
            return i
    if index is None:
        return None
    position = index - 1 if bound else index
    positional = [i for i, a in enumerate(call.args) if a.keyword is None]
    return positional[position] if 0 <= position < len(positional) else None


_BUILDING: set[int] = set()  # contexts whose provenance is being computed (imports may cycle)


def _merge_values(a: Val | None, b: Val | None) -> Val | None:
    """What a function returns over its return statements: evidence from any, proof from all."""
    if a is None or b is None:
        return None
    merged = _merge_env({"v": a}, {"v": b})["v"]
    return merged


def provenance(ctx: Context) -> Provenance:
    return ctx.shared("provenance", Provenance)
