"""DEV008: a tensor move or cast used as a statement (``x.to(device)``): its result is thrown away."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from devlint import devices
from devlint.bindings import bindings
from devlint.context import Context, dotted_name
from devlint.diagnostics import Applicability, Edit, Evidence, Finding, Fix, FixAvailability
from devlint.lazy import LazyModule
from devlint.provenance import Val, provenance
from devlint.rules.base import Invalid, Rule, Valid, node_start
from devlint.screen import AstIndex, dotted

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

_METHODS = devices.TENSOR_COPY_METHODS
_DEVICE_METHODS = frozenset({devices.MOVE_METHOD, devices.CUDA_METHOD, devices.CPU_METHOD, "xpu"})
# a notebook's cell separator in the module of its cells (devlint/notebook.py)
_CELL_SEPARATOR = re.compile(r"#\s*devlint-ipython\d*:cell \d+\s*")
_SHOWN = 60  # a call longer than this is shown as `x.to(...)` in the message


@dataclass(frozen=True)
class DiscardedMoveEvidence(Evidence):
    """The method whose result is discarded (``to``, ``cuda``, ``half``, ...) and, for ``.to()``, whether
    its argument is a dtype (a cast) rather than a device."""

    method: str
    dtype: bool = False


class _Trigger:
    """The byte pre-filter: a method of TENSOR_COPY_METHODS called (whitespace and line joins allowed around the
    name) where a statement may start with its receiver. The line's text before the call, cut at each ``;`` and
    ``:`` (``if c: x.cuda()``), must be empty (the call continues a line above), start with a dotted name
    followed by nothing, a subscript or a closing parenthesis (``x``, ``self.mask``, ``x[0]``, ``(x)``), or close
    a bracket without an ``=`` (the end of a receiver written over several lines). An assignment (``y =
    x.cuda()``), an argument (``f(x.cuda())``) or ``return x.cuda()`` is no statement of its own."""

    _call = re.compile(rb"\.[\s\\]*(?:" + b"|".join(m.encode() for m in sorted(_METHODS)) + rb")[\s\\]*\(")
    _head = re.compile(rb"\(*[ \t]*[A-Za-z_\x80-\xff][\w.\x80-\xff]*[ \t]*(?:\[|\)|$)")
    _cuts = re.compile(rb"[;:]")

    def search(self, data: bytes) -> bool:
        for match in self._call.finditer(data):
            start = match.start()
            line = data[data.rfind(b"\n", 0, start) + 1:start]
            for part in self._cuts.split(line):
                part = part.strip()
                if not part or self._head.match(part) or ((b"]" in part or b")" in part) and b"=" not in part):
                    return True
        return False


class DiscardedTensorMove(Rule):
    code = "DEV008"
    name = "discarded-tensor-move"
    summary = ("x.to(device) / x.cuda() / x.half() as a statement on a tensor: the moved copy is discarded "
               "and x stays as it was.")
    fix_availability = FixAvailability.SOMETIMES
    evidence_type = DiscardedMoveEvidence
    triggers = _Trigger()

    doc_what = '''
Finds a tensor move or cast whose result is thrown away: `x.to(device)`, `x.cuda()`, `x.cpu()`, `x.xpu()`,
`x.half()`, `x.float()`, `x.double()`, `x.bfloat16()`, `x.long()` (and the other dtype methods) or
`x.to(torch.float16)` written as a statement of its own, on a value the code proves to be a torch tensor:
made by a torch factory (`torch.zeros(...)`, `torch.tensor(...)`, `torch.from_numpy(...)`, ...), an
`nn.Parameter` or `Variable`, a torch function of tensors, a torch function that returns one tensor whatever
it is given (`torch.sigmoid(x)`, `F.relu(x)`, `torch.cat(xs)`, `torch.matmul(a, b)`: devices.TENSOR_FUNCTIONS,
each checked on torch 2.13; not `torch.max(x, 1)` or `torch.where(c)`, which return tuples), arithmetic on
tensors, a tensor method's result, the result of `.detach()` whatever it was called on (only a tensor has it:
`output.last_hidden_state.detach()`), indexing, or what a function of the project returns from those (the
values DEV002 follows, in provenance.py), per branch and loop iteration: a name that may hold something else on
some path is not proven. A chain of moves such as `x.to(device).float()` is one finding.

Not reported: modules (`model.to(device)`, `model.cuda()`, `model.half()` move the module's parameters in
place and are right); values of unknown type (a function parameter, `batch` from a data loader, `self.model`,
an optimizer); the output of a module or model call (it may be a tuple, a dict, a `ModelOutput` or, for a
tokenizer loaded with `from_pretrained`, a `BatchEncoding` whose `.to()` works in place); anything moved with
`.to()` before its type was known (`inputs = processor(...).to(device)`); what torch APIs that build objects
return (`torch.jit.trace`, `torch.fx`, `torch.utils`, `torch.distributions`, ...: a traced `ScriptModule`
moves in place); a statement whose receiver does something itself (`y.scatter_(...).float()`: the in-place
call is its point); `x = x.to(device)` and `return x.to(device)` (the result is used); in-place methods
(`x.requires_grad_()`, `x.share_memory_()`); and a move that is the last expression of a notebook cell
(IPython displays it).
'''
    doc_why = '''
`nn.Module.to()` moves a module in place, so `model.to(device)` as a statement is the idiom; `Tensor.to()`
does not: it returns a tensor on the device (or with the dtype) and leaves the original as it was (checked
on torch 2.13: after `x.to("meta")` or `x.double()` as a statement, `x.device` and `x.dtype` are unchanged,
while the same statements on an `nn.Linear` change its weight's). The statement does nothing, and the code
after it runs on the CPU (slowly, or into torch's "Expected all tensors to be on the same device" error when
it meets the model's GPU weights) or in the old dtype (on torch 2.13, a float32 input to a `.half()` model's
`nn.Linear` raises `RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Half`).
'''
    doc_use_instead = '''
Assign the result: `x = x.to(device)`. The fix inserts `x = ` (unsafe: see Fix safety).
'''
    doc_fix_safety = '''
Unsafe. The flagged statement does nothing, so the fix is no refactoring: it makes the move happen, and the
program runs differently after it. The code that follows now gets a GPU tensor (a later `x.numpy()`, or a
mix with CPU tensors, may now raise) or a half-precision one (other numerics, dtype mismatches with float32
tensors). That is what the statement asked for, but code that ran before may not run after, so `--fix` alone
does not apply it (`--unsafe-fixes` does). It is offered only where rebinding is right: the receiver is a
plain name bound in the statement's own function or module scope (a name read from an enclosing scope would
become a local and raise `UnboundLocalError`) or a `self.` attribute, and the tensor is not one that may
require grad (an `nn.Parameter`, or a tensor made with `requires_grad=True`, may be a leaf an optimizer
holds: rebinding the name would leave the optimizer with the unmoved tensor; create it on the device
instead). Comments and formatting are kept: the fix only inserts `x = ` before the call.
'''
    doc_known_problems = '''
Values are followed as DEV002 follows them, so a tensor passed in as a parameter, taken from a container or
a data loader's batch, or returned by a library call is of unknown type and not reported; nor is a module's
output (`out = model(x); out.cpu()`): precision beats recall here. A file that does not import torch is not
checked. An attribute set on `self` in `__init__` is taken to hold the same tensor in every method, also
when `__init__` sets it only under a condition (`if width: self.pos = nn.Parameter(...)`: where the
condition was false the attribute does not exist, so where it is read it holds that tensor). A
`c.cpu()` written to wait for the GPU (a timing loop) is reported: use `torch.cuda.synchronize()`.
'''
    doc_options = '''
None of its own: `select`, `ignore`, `per-file-ignores` and `# noqa: DEV008` apply as for every rule.
'''
    doc_references = '''
- [torch.Tensor.to](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html) ("Returns a Tensor with
  the specified device and (optional) dtype")
- [torch.nn.Module.to](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.to)
  ("This method modifies the module in-place")
- [torch.Tensor.cuda](https://pytorch.org/docs/stable/generated/torch.Tensor.cuda.html)
'''
    doc_notebooks = '''
Notebooks (`.ipynb`) are one module in cell order: a tensor made in one cell and moved by a statement in a later
cell is reported at the later cell (`nb.ipynb:cell 4:2:1`). A move that is the last statement of its cell is
not reported: IPython displays a cell's last expression, so `x.double()` there shows the converted tensor;
followed by `;` (which hides the output) it is reported. `--fix` rewrites only the changed cells' sources.
'''

    VALID = (
        Valid("import torch\nmodel = torch.nn.Linear(4, 2)\nmodel.to(device)\nmodel.half()\n"),
        Valid("import torch\nx = torch.zeros(3)\nx = x.to(device)\ny = x.double()\n"),
        Valid("import torch\ndef step(batch, optimizer):\n    batch.to(device)\n    optimizer.cuda()\n"),
        Valid("import torch\nw = torch.zeros(2)\nw.requires_grad_()\nw.share_memory_()\n"),
        Valid("import torch\ndef f():\n    x = torch.ones(2)\n    return x.to(device)\n"),
        Valid("import torch\nfrom transformers import AutoTokenizer\ntok = AutoTokenizer.from_pretrained('bert')\n"
              "enc = tok('hi', return_tensors='pt')\nenc.to(device)\n"),
        Valid("import torch\ntraced = torch.jit.trace(torch.nn.Linear(2, 2), torch.zeros(1, 2))\ntraced.cuda()\n"),
        Valid("import torch\ninputs = processor(images).to(device)\ninputs.half()\n"),
        Valid("import torch\nx = torch.zeros(2)\nif ok:\n    x = load()\nx.cuda()\n"),
    )
    INVALID = (
        Invalid(
            "import torch\n\nlabels = torch.tensor([0, 1, 1])\nlabels.to(device)\nloss = criterion(out, labels)\n",
            fixed="import torch\n\nlabels = torch.tensor([0, 1, 1])\nlabels = labels.to(device)\n"
                  "loss = criterion(out, labels)\n",
            doc=True,
        ),
        Invalid("import torch\nmask = torch.ones(4, 4).bool()\nif torch.cuda.is_available():\n"
                "    mask.cuda()  # move it\n",
                fixed="import torch\nmask = torch.ones(4, 4).bool()\nif torch.cuda.is_available():\n"
                      "    mask = mask.cuda()  # move it\n"),
        Invalid("import torch\nimport numpy as np\ndef load(a):\n    x = torch.from_numpy(np.asarray(a))\n"
                "    x.to(device).float()\n    return x\n",
                fixed="import torch\nimport numpy as np\ndef load(a):\n    x = torch.from_numpy(np.asarray(a))\n"
                      "    x = x.to(device).float()\n    return x\n"),
        Invalid("import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.scale = torch.ones(1)\n    def half_precision(self):\n        self.scale.half()\n",
                fixed="import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                      "        self.scale = torch.ones(1)\n    def half_precision(self):\n"
                      "        self.scale = self.scale.half()\n"),
        Invalid("import torch\nw = torch.zeros(3, requires_grad=True)\nw.cuda()\n"),
        Invalid("import torch\nx = torch.zeros(3)\ndef show():\n    x.double()\n"),
        Invalid("import torch\nx = torch.arange(6).view(2, 3)\nx[0].to(torch.float64)\n"),
        Invalid("import torch\nx = torch.zeros(2)\ny = x.to(device)\ny.half()\n",
                fixed="import torch\nx = torch.zeros(2)\ny = x.to(device)\ny = y.half()\n"),
    )

    def screen(self, index: AstIndex) -> bool:
        """A move statement whose receiver (``x``, ``self.mask``, ``x[0]``) starts with a name or ``self.``
        attribute that some assignment or ``for`` of the file may bind to a tensor: what provenance.py proves a
        tensor is always bound so (a parameter, an import or ``self`` itself never is), and not by a module
        constructor, a literal or a move of something unbound (``self.vae = self.vae.to(dtype)``)."""
        if not index.imports_torch:
            return False
        receivers, bindings_ = _screen_walk(index.tree.body)
        if not receivers:
            return False
        bound: set[str] = set()
        moves: list[tuple[list[str], set[str]]] = []
        for names, value in bindings_:
            moved = _receiver_prefixes(value) if value is not None else set()
            if moved:
                moves.append((names, moved))  # bound to a tensor only if what it moves is
            elif value is None or not _never_tensor(index, value):
                bound.update(names)
        changed = True
        while changed:
            changed = False
            for names, moved in moves:
                if not moved.isdisjoint(bound) and not bound.issuperset(names):
                    bound.update(names)
                    changed = True
        return any(not prefixes.isdisjoint(bound) for prefixes in receivers)

    def check(self, ctx: Context) -> Iterable[Finding]:
        if not ctx.imports_torch:
            return
        for call, val in provenance(ctx).discarded_moves().items():
            if not _proven_tensor(val) or not _reportable(ctx, call):
                continue
            assert val is not None and isinstance(call.func, cst.Attribute)
            yield self._finding(ctx, call, call.func, val)

    def _finding(self, ctx: Context, call: cst.Call, func: cst.Attribute, val: Val) -> Finding:
        method = func.attr.value
        root = _root(call)
        changes = set().union(*(_changes(ctx, c) for c in _chain(call)))
        subject = _short(dotted_name(root) or ctx.code(root)) or "the tensor"
        shown = _short(ctx.code(call)) or f"{subject}.{method}(...)"
        effect = "stays as it was" if len(changes) == 2 else "stays where it was" if "device" in changes \
            else "keeps its dtype"
        target = _target(ctx, call)
        advice = f"assign it: `{target} = {shown}`" if target is not None else "use the result"
        if val.grad:
            advice += " (it may require grad: a leaf an optimizer holds is better created on the device)"
        message = f"`{shown}` returns a new tensor and its result is discarded: {subject} {effect}; {advice}"
        fix = _fix(ctx, call, target) if target is not None and not val.grad else None
        evidence = DiscardedMoveEvidence(method, method == devices.MOVE_METHOD and _changes(ctx, call) == {"dtype"})
        return self.finding(ctx, call, message, fix, evidence)


def _short(code: str) -> str | None:
    return code if len(code) <= _SHOWN and "\n" not in code else None


def _proven_tensor(val: Val | None) -> bool:
    """A torch tensor by the evidence: not a module, not an object of unknown type moved with .to(), not a
    module's output (a tuple, a dict, a tokenizer's BatchEncoding, whose .to() works in place)."""
    return val is not None and val.kind == "tensor" and val.torch and not val.moved and not val.output


def _reportable(ctx: Context, call: cst.Call) -> bool:
    stmt = ctx.parent(call)
    if not isinstance(stmt, cst.Expr) or stmt.value is not call:
        return False
    func = call.func
    assert isinstance(func, cst.Attribute)
    if func.attr.value == devices.MOVE_METHOD and not call.args:
        return False  # x.to() with nothing: no move was asked for
    return _plain(_root(call)) and not _shown_in_notebook(ctx, stmt)


def _plain(expr: cst.BaseExpression) -> bool:
    """A name, attribute or subscript (``x``, ``self.mask``, ``x[0]``): the statement does nothing else, unlike
    ``y.scatter_(...).float()``, whose in-place call is its point."""
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return isinstance(expr, cst.Name)


def _chain(call: cst.Call) -> Iterator[cst.Call]:
    """The moves of a statement, outermost first: ``.float()`` then ``.to(device)`` of ``x.to(device).float()``."""
    expr: cst.BaseExpression = call
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _METHODS:
        yield expr
        expr = expr.func.value


def _root(call: cst.Call) -> cst.BaseExpression:
    """The receiver under a chain of moves: ``x`` of ``x.to(device).float()``."""
    *_, last = _chain(call)
    assert isinstance(last.func, cst.Attribute)
    return last.func.value


def _shown_in_notebook(ctx: Context, stmt: cst.Expr) -> bool:
    """In a notebook: is ``stmt`` the last statement of its cell, which IPython displays (unless ``;``)?"""
    if not ctx.path.endswith(".ipynb") or isinstance(stmt.semicolon, cst.Semicolon):
        return False
    line = ctx.parent(stmt)
    if not isinstance(line, cst.SimpleStatementLine) or ctx.parent(line) is not ctx.module or line.body[-1] is not stmt:
        return False
    body = list(ctx.module.body)
    at = next(i for i, s in enumerate(body) if s is line)
    if at == len(body) - 1:
        return True
    return any(el.comment is not None and _CELL_SEPARATOR.fullmatch(el.comment.value)
               for el in body[at + 1].leading_lines)


def _changes(ctx: Context, call: cst.Call) -> set[str]:
    """What the call changes: "device" (``.cuda()``, ``.to(device)``), "dtype" (``.half()``,
    ``.to(torch.float16)``, ``.to(dtype=dtype)``) or both (``.to(device, torch.float16)``)."""
    assert isinstance(call.func, cst.Attribute)
    method = call.func.attr.value
    if method != devices.MOVE_METHOD:
        return {"device" if method in _DEVICE_METHODS else "dtype"}
    out = set()
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    for i, value in enumerate(positional[:2]):
        if _dtype_like(ctx, value):
            out.add("dtype")
        elif i == 0:
            out.add("device")  # a device, or a tensor whose device and dtype it takes
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    out |= keywords & {"device", "dtype"}
    return out or {"device"}


def _dtype_like(ctx: Context, expr: cst.BaseExpression) -> bool:
    """``torch.float16`` (a lower-case attribute of torch), or a name ending in ``dtype``."""
    qn = ctx.qualname(expr) or ""
    if not isinstance(expr, cst.Call) and qn.startswith("torch.") and qn.count(".") == 1:
        return qn.split(".")[1][:1].islower()
    return (dotted_name(expr) or "").rsplit(".", 1)[-1].lower().endswith("dtype")


def _target(ctx: Context, call: cst.Call) -> str | None:
    """The name the fix assigns to: the receiver under the moves, a plain name bound in the statement's own
    function or module scope, or ``self.<attr>``; None otherwise."""
    root = _root(call)
    name = dotted_name(root)
    if name is None:
        return None
    if isinstance(root, cst.Name):
        found = bindings(ctx)
        scope = found.scope_of(call)
        if isinstance(scope, cst.ClassDef) or found.resolve(call, name) is not found.scopes[scope]:
            return None
        return name
    parts = name.split(".")
    return name if len(parts) == 2 and parts[0] == "self" else None


def _fix(ctx: Context, call: cst.Call, target: str) -> Fix:
    """Insert ``target = `` before the statement's call (anchored on the indentation before it)."""
    start = node_start(ctx, call)
    before = None
    if ctx.text is not None:
        at = 0
        for _ in range(start.row - 1):
            at = ctx.text.index("\n", at) + 1
        before = ctx.text[at:at + start.column - 1] or None
    edit = Edit(start, start, f"{target} = ", old="", before=before)
    return Fix((edit,), Applicability.UNSAFE, f"Assign the result to {target}")


def _screen_walk(body: list[ast.stmt]) -> tuple[list[set[str]], list[tuple[list[str], ast.expr | None]]]:
    """The statements of ``body`` and the blocks under them (no expression is walked): for each expression
    statement calling a method of TENSOR_COPY_METHODS on a plain receiver, the dotted prefixes of its receiver
    (``x``, ``x.a`` of ``x.a[0].to(d)``); and the dotted names each assignment or ``for`` loop binds, with the
    value of a plain ``name = value`` (None for the others: a tuple target, a ``for``, ``+=``)."""
    receivers: list[set[str]] = []
    bound: list[tuple[list[str], ast.expr | None]] = []
    stack = list(body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.Expr):
            prefixes = _receiver_prefixes(stmt.value)
            if prefixes:
                receivers.append(prefixes)
            continue
        if isinstance(stmt, ast.Assign):
            names = _bound_names(stmt.targets)
            plain = all(isinstance(t, (ast.Name, ast.Attribute)) for t in stmt.targets)
            bound.append((names, stmt.value if plain else None))
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            bound.append((_bound_names([stmt.target]), None))
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                stack.extend(block)
    return receivers, bound


def _never_tensor(index: AstIndex, value: ast.expr) -> bool:
    """A value provenance.py never takes for a tensor: a literal, a comprehension, a lambda, or a call that
    builds a module (a class of the file, ``nn.Linear(...)``, ``X.from_pretrained(...)``, torchvision's
    models, ``timm.create_model``)."""
    if isinstance(value, (ast.Constant, ast.List, ast.Dict, ast.Set, ast.Tuple, ast.JoinedStr, ast.Lambda,
                          ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp)):
        return True
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Name) and func.id in index.class_names and not index.imported(func.id):
        return True
    qualnames = index.qualnames(func)
    return all(q is not None and _module_factory(q) for q in qualnames)


def _module_factory(qualname: str) -> bool:
    parts = qualname.split(".")
    if qualname.startswith("torch.nn.") and parts[-1][:1].isupper() and "functional" not in parts:
        return parts[-1] != "Parameter"
    if qualname.startswith(devices.MODULE_ROOTS):
        return True
    return qualname.endswith(devices.MODULE_FACTORIES_SUFFIX) and parts[0] in devices.PRETRAINED_PACKAGES \
        and not (len(parts) >= 2 and parts[-2].startswith(("TF", "Flax")))


def _receiver_prefixes(value: ast.expr) -> set[str]:
    """``{"x", "x.a"}`` for ``x.a[0].to(d).float()``; empty when ``value`` is no such call."""
    if not _ast_copy_call(value):
        return set()
    while _ast_copy_call(value):
        assert isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
        value = value.func.value
    parts: list[str] = []
    node: ast.expr = value
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
        else:
            parts.clear()  # x.a[0].b: what is bound is x or x.a
        node = node.value
    if not isinstance(node, ast.Name):
        return set()
    names = [node.id, *reversed(parts)]
    return {".".join(names[:i]) for i in range(1, len(names) + 1)}


def _ast_copy_call(value: ast.expr) -> bool:
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _METHODS


def _bound_names(targets: list[ast.expr]) -> list[str]:
    out: list[str] = []
    stack = list(targets)
    while stack:
        target = stack.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            stack.extend(target.elts)
        elif isinstance(target, (ast.Starred, ast.Subscript)):
            stack.append(target.value)
        else:
            name = dotted(target)
            if name is not None:
                out.append(name)
    return out
