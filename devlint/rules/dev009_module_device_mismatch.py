"""DEV009: inside an ``nn.Module``, a CPU tensor (a factory without ``device=``, or a plain tensor attribute
that ``model.to()`` does not move) combined with a tensor on the module's device."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from devlint import devices
from devlint.analysis import is_script, test_module
from devlint.context import Context, children, dotted_name
from devlint.diagnostics import Applicability, Edit, Evidence, Finding, Fix, FixAvailability
from devlint.guards import Polarity, guards
from devlint.lazy import LazyModule
from devlint.rules.base import Invalid, Rule, Valid, insert_after, node_end, node_start
from devlint.rules.fixes import preferred_quote
from devlint.screen import AstIndex, dotted, walk, walk_with_parents

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
# what a value is: on the CPU for certain (a factory's tensor), on the module's device, or a Python number
_CPU, _DEV, _NUM = "cpu", "dev", "num"
# methods of a CPU tensor that keep it a CPU tensor of one dimension or more
_CPU_KEEPING_METHODS = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "bool", "byte", "short", "unsqueeze", "unsqueeze_",
    "view", "reshape", "expand", "expand_as", "repeat", "t", "transpose", "permute", "contiguous", "flip", "clone",
    "detach", "masked_fill", "masked_fill_", "tril", "triu", "tril_", "triu_", "exp", "log", "sin", "cos", "sqrt",
    "pow", "neg", "abs", "flatten", "fill_", "zero_", "requires_grad_", "cumsum", "mul", "add", "sub", "div",
    "logical_not", "fill_diagonal_",
})
_CPU_KEEPING_FUNCS = frozenset({
    "tril", "triu", "exp", "log", "sin", "cos", "sqrt", "pow", "outer", "flip", "unsqueeze", "cumsum", "cumprod",
    "abs", "cat", "stack", "logical_not",
})
# methods of a tensor on the module's device whose result is a tensor there too
_DEVICE_KEEPING_METHODS = frozenset({
    "view", "reshape", "transpose", "permute", "contiguous", "unsqueeze", "squeeze", "float", "half", "double",
    "bfloat16", "masked_fill", "softmax", "log_softmax", "sum", "mean", "matmul", "flatten", "expand", "expand_as",
    "repeat", "clone", "detach", "exp", "log", "tanh", "sigmoid", "relu", "abs", "pow", "sqrt", "mul", "add", "sub",
    "div", "bmm", "mm", "t", "narrow", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "type_as",
    "view_as", "reshape_as", "cumsum", "norm", "neg", "max", "min", "amax", "amin", "gather", "index_select",
})
# torch functions that do not return one tensor on their arguments' device
_NOT_A_TENSOR = frozenset({"split", "chunk", "unbind", "sort", "topk", "max", "min", "meshgrid", "broadcast_tensors",
                           "numel", "is_tensor", "is_floating_point", "tensor_split", "unique", "where", "nonzero"})
_OPERATORS = {
    "Add": "add", "Subtract": "sub", "Multiply": "mul", "Divide": "div", "FloorDivide": "div", "Modulo": "mod",
    "Power": "pow", "MatrixMultiply": "matmul", "BitAnd": "and", "BitOr": "or", "BitXor": "xor",
}
_AUG_OPERATORS = ("AddAssign", "SubtractAssign", "MultiplyAssign", "DivideAssign")
_COMPARISONS = ("LessThan", "GreaterThan", "Equal", "NotEqual", "LessThanEqual", "GreaterThanEqual")
# a forward argument that is a tensor for certain: one of its tensor methods or attributes is used
_TENSOR_USES = frozenset({"size", "shape", "dim", "view", "reshape", "transpose", "permute", "device", "unsqueeze",
                          "contiguous", "new_zeros", "new_ones", "new_empty", "new_full", "masked_fill", "matmul",
                          "flatten", "squeeze", "softmax", "ndim", "dtype", "type_as", "float", "expand", "repeat"})
# arguments named like lengths may be CPU tensors by design (pack_padded_sequence wants them there)
_LENGTH_NAME = re.compile(r"len|size|count|num|cpu", re.IGNORECASE)
_MENTIONS_DEVICE = re.compile(rb"\bdevice\b|\.to\s*\(")


class _Trigger:
    """The byte pre-filter: a class statement and ``Module`` (the rule reports inside nn.Module subclasses only),
    a ``forward`` method (what it follows starts there) and a call of a CPU-default factory (``zeros(``,
    ``arange (``)."""

    _CLASS = re.compile(rb"(?m)^[ \t]*class[ \t]")
    _FORWARD = re.compile(rb"def[\s\\]+forward\b")
    _FACTORY = re.compile(rb"\b(?:" + b"|".join(sorted(f.encode() for f in devices.CPU_DEFAULT_FACTORIES)) + rb")\s*\(")

    def search(self, data: bytes) -> object:
        return b"Module" in data and self._FORWARD.search(data) and self._CLASS.search(data) \
            and self._FACTORY.search(data)


@dataclass(frozen=True)
class DeviceMismatchEvidence(Evidence):
    """Where the CPU tensor comes from (``factory``: made in the method; ``attribute``: a plain attribute set
    in ``__init__``), the factory (``zeros``, ``arange``, ...) and how it meets the module's tensor (``add``,
    ``compare``, ``cat``, ``masked_fill``, ``matmul``, ``iadd``, ...)."""

    kind: str
    factory: str
    op: str


@dataclass(frozen=True)
class _Val:
    kind: str
    origin: cst.CSTNode | None = None  # a CPU value: its factory call, or the attribute's assignment
    factory: str = ""
    attribute: str | None = None


_VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
_PARAM, _LAST = -1, 1 << 30  # where a method's arguments are bound; a node outside its own walk
_NUMBER = _Val(_NUM)
_DEVICE = _Val(_DEV)
_UNKNOWN = _Val("")


@dataclass
class _Class:
    node: cst.ClassDef
    methods: dict[str, cst.FunctionDef]
    device_attrs: set[str] = field(default_factory=set)  # parameters, buffers: on the module's device
    layers: set[str] = field(default_factory=set)  # submodules with parameters whose output is one tensor there
    consumers: set[str] = field(default_factory=set)  # submodules with parameters (a CPU input fails)
    plain: dict[str, _Val] = field(default_factory=dict)  # tensor attributes model.to() leaves on the CPU


@dataclass
class _Combination:
    cpu: _Val
    other: cst.BaseExpression  # what the CPU tensor meets (a tensor, or the layer it is passed to)
    op: str
    at: cst.CSTNode
    env: _Env
    name: str | None  # an argument of the method on the module's device, for the fix


class ModuleDeviceMismatch(Rule):
    code = "DEV009"
    name = "module-device-mismatch"
    summary = ("In an nn.Module, a tensor made without device= (or a plain tensor attribute) combined with the "
               "module's inputs or parameters: fails once the model is on a GPU.")
    fix_availability = FixAvailability.SOMETIMES
    evidence_type = DeviceMismatchEvidence
    triggers = _Trigger()

    doc_what = '''
Finds, in a class that subclasses `torch.nn.Module` (`nn.Module`, `from torch.nn import Module`, or a class of
the same file that does), a CPU tensor combined with a tensor on the module's device:

- in `forward`, or a method `forward` calls as `self.method(...)`, a tensor made by a torch factory without
  `device=` (`torch.zeros`, `ones`, `empty`, `full`, `rand`, `randn`, `randint`, `randperm`, `arange`,
  `linspace`, `logspace`, `eye`, `tensor([...])`; `Variable(t)` is `t`), also through `torch.tril(...)`, `.float()`,
  `.unsqueeze()`, a slice, arithmetic with numbers or a local name;
- a plain tensor attribute set once in `__init__` (`self.mask = torch.tril(torch.ones(n, n))`, not
  `register_buffer` or `nn.Parameter`), used in `forward`;

when it meets, by arithmetic (`+ - * / // % ** @ & | ^`), a comparison, `+=`, `torch.cat`/`stack`/`where`/
`matmul`/..., or `masked_fill`, a tensor the module certainly holds on its device: an argument of the method
that is used as a tensor (`x.size(0)`, `x.view(...)`, a `Tensor` annotation, passed to a layer), a parameter or
buffer of the module, the output of a submodule with parameters (`nn.Linear`, `nn.Conv2d`, `nn.Embedding`,
`nn.LayerNorm`, ...), or a value computed from those.

Not reported: a factory with `device=` (any value), `*_like(x)`, `x.new_zeros(...)`, anything that went
through `.to(...)`, `.cuda()` or `.type_as(...)`; a factory on the path a device check takes without CUDA (the
`else` of `if torch.cuda.is_available():` whose body moves the same tensor with `.cuda()`: the CPU half of a
device choice; not the `else` of `if torch.cuda.is_available() and flag:`, which also runs with CUDA);
registered buffers and parameters; a 0-dim tensor
(`torch.tensor(2.0)`, `torch.zeros(())`: torch takes a 0-dim CPU tensor as a scalar with a GPU tensor); a CPU
tensor used as an index (`x[torch.arange(n)]`: torch moves CPU index tensors to the indexed tensor's device)
or for its shape; an attribute assigned anywhere else than its one `__init__` statement, or in a class that
overrides `_apply`, `to`, `cuda`, `cpu`, `half`, `float` or `double` (the override may move it); a method
argument named like a length or count (`lengths`, `seq_len`: often a CPU tensor by design), nor an argument
compared as it is (`torch.arange(t)[None, :] < n_wins[:, None]`: counts are often CPU tensors by design, as
`pack_padded_sequence` wants them); files that set a
default device (`torch.set_default_device`, `torch.set_default_tensor_type`, `with torch.device(...)`); and
modules of a program that never mentions an accelerator or a device (no `cuda`, `gpu`, `mps`, `xpu`,
`accelerator`, `device` or `.to(`): that program keeps the module on the CPU. The program is the file alone
when it is a script (it runs code at its top level: an `if __name__ == "__main__":` block, a loop, a call as a
statement: its own run is the one that uses its modules), else the file and the Python files of its directory
(a library module's users). Nor test modules (`test_*.py`, `*_test.py`, `conftest.py`, a module right in a
`tests` or `test` folder): the modules a test builds run where that test puts them, mostly on the CPU, and a
test that moves one to a GPU shows the error on the machines its suite runs on.
'''
    doc_why = '''
Factories put their tensor on the default device, the CPU, unless `device=` says otherwise, and
`model.to("cuda")` moves only parameters, buffers and submodules: a tensor stored as a plain attribute stays
where it was made. On the CPU both mixes run; once the model and its inputs are on a GPU the first operation
that mixes the two devices raises
`RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!`
(the text in torch 2.13's libtorch; matmul-like operations say `Expected all tensors to be on the same device,
but got mat2 is on cpu, different from other tensors on cuda:0 ...`). Without a GPU the same mix with the
`meta` device shows it on torch 2.13.0+cpu: `torch.ones(2, device="meta") + torch.ones(2)` raises
`RuntimeError: Tensor on device cpu is not on the expected device meta!` (`devlint verify` runs that where
there is no GPU).

Two mixes are not errors, and are not reported: a 0-dim CPU tensor is taken as a scalar
(`torch.ones(2, device="meta") + torch.tensor(2.0)` runs; a 0-dim meta tensor with a CPU one raises), and
CPU index tensors are moved to the indexed tensor's device (`x[torch.arange(2)]`, `x[mask]`).
'''
    doc_use_instead = '''
Create the tensor on the device of the tensor it meets: `device=x.device` (the fix adds it when that tensor is
an argument of the method, so it is certainly bound where the factory is). For a constant tensor set in
`__init__`, register it as a buffer, `self.register_buffer("mask", ..., persistent=False)`: `model.to()` moves
buffers (the fix writes it, unsafe).
'''
    doc_fix_safety = '''
`device=x.device` is safe: `device=` changes only where the tensor is made, not its dtype or values (`dtype`
and the other arguments are kept; a factory with `generator=` gets no fix, since a CPU generator cannot make
a GPU tensor). On the CPU `x.device` is the CPU and the program does exactly what it did; on a GPU it runs
where it raised (`torch.randn`/`rand` then draw from the GPU's generator, another random stream than the
CPU's).

`self.register_buffer("mask", ..., persistent=False)` is unsafe. With `persistent=False` the buffer is not
part of `state_dict()`: checkpoints saved before the fix still load with `strict=True` and new ones have the
same keys, so `state_dict` is unchanged. But the attribute is now a buffer: `model.to()`, `.cuda()` move it
(the point), `model.half()` / `model.to(torch.float16)` also cast it when it is floating point, it appears in
`named_buffers()`, and `DistributedDataParallel` broadcasts it from rank 0. The fix is offered only for a
`self.name = value` statement after `super().__init__()` (register_buffer needs the module initialised) whose
name the class body does not define otherwise.
'''
    doc_known_problems = '''
Only what is certain is reported, so much is left out: a tensor from a helper function, a container, a config
or a module that is not a known parameter layer (an `nn.LSTM`'s output tuple, a custom block) is of unknown
device; a local name holds what the last assignment to it before the read, in the text, gave it (the first
iteration of a loop; of an `if`/`else`, the branch written last: a mix on that path is still a bug); a
factory in a nested function, a lambda or a comprehension is not read; methods are followed one call deep
from `forward` (`self.helper(x)`), positional arguments only; `torch.Tensor.index_select`/`gather` with a CPU
index (which raise) are not reported, to keep indexing quiet; the module's parameters reach `forward` only as
`self.weight` or through a known layer, and an `nn.Parameter` made in `forward` itself
(`self.bias = nn.Parameter(torch.randn(...))`, on the CPU, after `model.to()`) is taken to be a parameter on
the module's device (a miss on the real-code benchmark). A forward argument is taken to be on the module's
device (the usual contract); an argument that is a CPU tensor by design under another name than a length or
count would be a false report.

On real code (2026-11-23) the rule is quiet, as it is meant to be. The real-code benchmark's tune half (26
sources) gives no finding. Its holdout half, looked at untouched, gave 4: 1 bug (a model `train.py` moves to
the GPU indexes its GPU embedding with `torch.tensor(range(n))`) and 3 false reports, all in lesson scripts that
train on the CPU at their top level and never mention a device, beside files of the same folder that do. The
rule was narrowed after that look (a script is its own program), so the holdout is no longer untouched for it:
it now gives the 1 bug. On the PyPI corpus (accelerate, d2l, deepxde, diffusers, kornia, lightning, monai,
peft, pyro, ignite, timm, torchaudio, torchmetrics, torchvision, transformers, ultralytics) it gave 2 findings,
both in torchmetrics' NISQA, where a count argument (`n_wins`, made with `torch.tensor` on the CPU for
`pack_padded_sequence`) is compared with an `arange`: not bugs; an argument compared as it is no longer counts
as a tensor on the module's device, and the corpus gives none. On the 170 notebooks of the notebook benchmark
it gives none. What it leaves out, to stay precise: everything above, and so most of the bugs of this kind in
real code, where the CPU tensor or its partner comes from a helper, a container or an unknown module.
'''
    doc_options = '''
None of its own: `select`, `ignore`, `per-file-ignores` and `# noqa: DEV009` apply as for every rule.
'''
    doc_references = '''
- [torch.nn.Module.register_buffer](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer)
  ("persistent (bool) - whether the buffer is part of this module's state_dict")
- [torch.nn.Module.to](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.to)
- [Tensor creation ops](https://pytorch.org/docs/stable/torch.html#creation-ops) (`device`: "Default: if None,
  uses the current device for the default tensor type")
- [CUDA semantics](https://pytorch.org/docs/stable/notes/cuda.html) ("cross-GPU operations are not allowed by
  default")
'''
    doc_notebooks = '''
Notebooks (`.ipynb`) are one module in cell order, so a class defined in one cell is read as in a file; the
finding names its cell (`nb.ipynb:cell 3:9:16`). Whether the program mentions a device is decided on the
notebook's code and the Python files beside it. `--fix` rewrites only the changed cells' sources.
'''

    VALID = (
        Valid("import torch\nimport torch.nn as nn\n\nclass Head(nn.Module):\n    def __init__(self, n):\n"
              "        super().__init__()\n        self.proj = nn.Linear(n, n)\n"
              "        self.register_buffer('mask', torch.tril(torch.ones(n, n)))\n\n    def forward(self, x):\n"
              "        h = self.proj(x)\n        T = x.size(1)\n"
              "        h0 = torch.zeros(x.size(0), T, device=x.device)\n"
              "        return (h + h0).masked_fill(self.mask[:T, :T] == 0, 0.0)\n\ndevice = 'cuda'\n"),
        Valid("import torch\nfrom torch import nn\n\nclass Scale(nn.Module):\n    def forward(self, x):\n"
              "        eps = torch.tensor(1e-6)\n        pos = torch.arange(x.size(1))\n"
              "        return x[:, pos] / (x.norm() + eps) + x.new_zeros(x.shape)\n\nmodel = Scale().to('cuda')\n"),
        Valid("import torch\nfrom torch.nn import Module\n\nclass Noise(Module):\n    def forward(self, x):\n"
              "        z = torch.randn(x.size(0), 8).to(x.device)\n        w = torch.ones_like(x)\n"
              "        return x * w + z\n\nmodel = Noise().cuda()\n"),
        Valid("import torch\nimport torch.nn as nn\n\nclass Tiny(nn.Module):\n    def forward(self, x):\n"
              "        return x + torch.zeros(x.size(0), 2)\n"),  # a program that never mentions a device
        Valid("import torch\nimport torch.nn as nn\n\nclass PE(nn.Module):\n    def __init__(self):\n"
              "        super().__init__()\n        self.pe = torch.zeros(1, 64, 8)\n\n    def _apply(self, fn):\n"
              "        self.pe = fn(self.pe)\n        return super()._apply(fn)\n\n    def forward(self, x):\n"
              "        return x + self.pe[:, :x.size(1)]\n\nmodel = PE().to('cuda')\n"),
    )
    INVALID = (
        Invalid(
            "import torch\nimport torch.nn as nn\n\n\nclass Encoder(nn.Module):\n    def __init__(self, n, h):\n"
            "        super().__init__()\n        self.h = h\n        self.cell = nn.GRUCell(n, h)\n\n"
            "    def forward(self, x):\n        h = torch.zeros(x.size(0), self.h)\n"
            "        for t in range(x.size(1)):\n"
            "            h = h + self.cell(x[:, t], h)\n        return h + x[:, -1, :self.h]\n\n\n"
            "model = Encoder(8, 4).to(\"cuda\")\n",
            fixed="import torch\nimport torch.nn as nn\n\n\nclass Encoder(nn.Module):\n    def __init__(self, n, h):\n"
                  "        super().__init__()\n        self.h = h\n        self.cell = nn.GRUCell(n, h)\n\n"
                  "    def forward(self, x):\n        h = torch.zeros(x.size(0), self.h, device=x.device)\n"
                  "        for t in range(x.size(1)):\n"
                  "            h = h + self.cell(x[:, t], h)\n        return h + x[:, -1, :self.h]\n\n\n"
                  "model = Encoder(8, 4).to(\"cuda\")\n",
        ),
        Invalid(
            "import torch\nimport torch.nn as nn\n\n\nclass CausalAttention(nn.Module):\n"
            "    def __init__(self, dim, block_size):\n        super().__init__()\n"
            "        self.qkv = nn.Linear(dim, 3 * dim)\n"
            "        self.mask = torch.tril(torch.ones(block_size, block_size))\n\n"
            "    def forward(self, x):\n        T = x.size(1)\n        q, k, v = self.qkv(x).chunk(3, dim=-1)\n"
            "        att = q @ k.transpose(-2, -1)\n"
            "        att = att.masked_fill(self.mask[:T, :T] == 0, float(\"-inf\"))\n"
            "        return att.softmax(dim=-1) @ v\n\n\ndevice = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n",
            fixed="import torch\nimport torch.nn as nn\n\n\nclass CausalAttention(nn.Module):\n"
                  "    def __init__(self, dim, block_size):\n        super().__init__()\n"
                  "        self.qkv = nn.Linear(dim, 3 * dim)\n"
                  "        self.register_buffer(\"mask\", torch.tril(torch.ones(block_size, block_size)), "
                  "persistent=False)\n\n"
                  "    def forward(self, x):\n        T = x.size(1)\n        q, k, v = self.qkv(x).chunk(3, dim=-1)\n"
                  "        att = q @ k.transpose(-2, -1)\n"
                  "        att = att.masked_fill(self.mask[:T, :T] == 0, float(\"-inf\"))\n"
                  "        return att.softmax(dim=-1) @ v\n\n\n"
                  "device = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n",
            doc=True,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass VAE(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.enc = nn.Linear(784, 40)\n\n    def forward(self, x):\n"
            "        mu, logvar = self.enc(x).chunk(2, dim=1)\n        z = self.sample(mu, logvar)\n"
            "        return z\n\n"
            "    def sample(self, mu, logvar):\n        eps = torch.randn(mu.size(0), 20)\n"
            "        return mu + eps * torch.exp(0.5 * logvar)\n\nvae = VAE().cuda()\n",
            fixed="import torch\nfrom torch import nn\n\nclass VAE(nn.Module):\n    def __init__(self):\n"
                  "        super().__init__()\n        self.enc = nn.Linear(784, 40)\n\n    def forward(self, x):\n"
                  "        mu, logvar = self.enc(x).chunk(2, dim=1)\n        z = self.sample(mu, logvar)\n"
                  "        return z\n\n"
                  "    def sample(self, mu, logvar):\n        eps = torch.randn(mu.size(0), 20, device=mu.device)\n"
                  "        return mu + eps * torch.exp(0.5 * logvar)\n\nvae = VAE().cuda()\n",
        ),
        Invalid(
            "import torch\nimport torch.nn as nn\n\nclass Tokens(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.cls = nn.Parameter(torch.zeros(1, 1, 8))\n\n"
            "    def forward(self, x):\n        pos = torch.arange(x.size(1) + 1).float()\n"
            "        tokens = torch.cat([self.cls.expand(x.size(0), -1, -1), x], dim=1)\n"
            "        return tokens + pos[None, :, None]\n\nmodel = Tokens().to(device)\n",
            fixed="import torch\nimport torch.nn as nn\n\nclass Tokens(nn.Module):\n    def __init__(self):\n"
                  "        super().__init__()\n        self.cls = nn.Parameter(torch.zeros(1, 1, 8))\n\n"
                  "    def forward(self, x):\n        pos = torch.arange(x.size(1) + 1, device=x.device).float()\n"
                  "        tokens = torch.cat([self.cls.expand(x.size(0), -1, -1), x], dim=1)\n"
                  "        return tokens + pos[None, :, None]\n\nmodel = Tokens().to(device)\n",
        ),
    )

    def screen(self, index: AstIndex) -> bool:
        """A method of a class that makes a tensor with a CPU-default factory of torch, without ``device=`` or
        ``**`` (the rule follows factories in methods only: ``forward``, what it calls, ``__init__``), not a
        0-dim ``torch.tensor(number)``."""
        if not index.imports_torch or not index.class_names or (index.path is not None and test_module(index.path)):
            return False

        def factory(call: ast.Call) -> bool:
            name = _screen_factory(call)
            return name is not None and any(q == "torch." + name for q in index.qualnames(call.func))

        return any(_screen_class(cls, factory) for cls in _screen_module_classes(index))

    def check(self, ctx: Context) -> Iterable[Finding]:
        if not ctx.imports_torch or test_module(ctx.path) or _sets_default_device(ctx):
            return
        classes = _module_classes(ctx)
        if not classes or not _mentions_device(ctx):
            return
        seen: set[int] = set()
        for info in classes:
            for combo in _combinations(ctx, info):
                origin = combo.cpu.origin
                if origin is None or id(origin) in seen or _on_cpu_path(ctx, origin):
                    continue
                seen.add(id(origin))
                yield self._finding(ctx, info, combo)

    def _finding(self, ctx: Context, info: _Class, combo: _Combination) -> Finding:
        cpu = combo.cpu
        assert cpu.origin is not None
        other = _short(ctx.code(combo.other)) or "a tensor of the module"
        line = node_start(ctx, combo.at).row
        where = f"{info.node.name.value}.{combo.env.func.name.value}"
        if cpu.attribute is not None:
            assert isinstance(cpu.origin, cst.Assign)
            target = cpu.origin.targets[0].target
            message = (f"`self.{cpu.attribute}` is a plain tensor attribute: model.to() does not move it, and {where} "
                       f"combines it with `{other}` (line {line}), which fails once the model is on a GPU "
                       "(\"Expected all tensors to be on the same device\"); register it with "
                       f"`self.register_buffer(\"{cpu.attribute}\", ..., persistent=False)`")
            fix = _buffer_fix(ctx, info, cpu.origin, cpu.attribute)
            evidence = DeviceMismatchEvidence("attribute", cpu.factory, combo.op)
            return self.finding(ctx, target, message, fix, evidence)
        assert isinstance(cpu.origin, cst.Call)
        shown = _short(ctx.code(cpu.origin)) or f"torch.{cpu.factory}(...)"
        name = combo.name or (combo.other.value if isinstance(combo.other, cst.Name) else None)
        advice = f"device={name}.device" if name is not None else "device= the device of the tensor it meets"
        message = (f"`{shown}` is made on the CPU (no device=) and {where} combines it with `{other}` (line {line}): "
                   "this fails once the module runs on a GPU (\"Expected all tensors to be on the same device\"); "
                   f"create it with {advice}")
        fix = _device_fix(ctx, cpu.origin, combo)
        return self.finding(ctx, cpu.origin, message, fix, DeviceMismatchEvidence("factory", cpu.factory, combo.op))


def _on_cpu_path(ctx: Context, node: cst.CSTNode) -> bool:
    """Is ``node`` on the path a device check takes without CUDA, the ``else`` of ``if torch.cuda.is_available():``
    (or the body of ``if not torch.cuda.is_available():``)? There the code makes its tensors for the CPU on
    purpose, the CPU half of a device choice whose other half moves them (RetinaNet's focal loss)."""
    check = guards(ctx)
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.FunctionDef):
            return False
        if isinstance(ancestor, cst.If) and child is not ancestor.test:
            # the body when the test being true means no CUDA, the else when its being false does
            read = check.polarity if child is ancestor.body else check.falsity
            if read(ancestor.test) is Polarity.UNAVAILABLE:
                return True
        child = ancestor
    return False


def _short(code: str) -> str | None:
    return code if len(code) <= 60 and "\n" not in code else None


# --- the module classes and what __init__ puts on them ------------------------------------------------------------
def _module_classes(ctx: Context) -> list[_Class]:
    classes = ctx.nodes(cst.ClassDef)
    found: set[int] = set()  # the module classes (two classes of the file may share a name)
    names: set[str] = set()
    changed = True
    while changed:
        changed = False
        for node in classes:
            if id(node) in found:
                continue
            for base in node.bases:
                if base.keyword is not None:
                    continue
                qualname = ctx.qualname(base.value)
                local = isinstance(base.value, cst.Name) and qualname is None and base.value.value in names
                if qualname in _MODULE_BASES or local:
                    found.add(id(node))
                    names.add(node.name.value)
                    changed = True
                    break
    modules = [node for node in classes if id(node) in found]
    all_methods = [{s.name.value: s for s in node.body.body if isinstance(s, cst.FunctionDef)} for node in modules]
    # a name registered as a buffer or parameter by any class of the file (a base class may register it)
    registered = set().union(*(_attribute_sites(methods)[1] for methods in all_methods))
    return [_read_class(ctx, node, methods, registered) for node, methods in zip(modules, all_methods, strict=True)
            if not methods.keys() & devices.MODULE_MOVE_OVERRIDES]


def _self_attr(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value
    return None


@dataclass
class _Walk:
    """A function's own nodes in source order (pre-order), and each node's span in that order: (its index,
    the last index under it)."""

    func: cst.FunctionDef
    nodes: list[cst.CSTNode]
    span: dict[int, tuple[int, int]]


_WALKS: dict[int, _Walk] = {}


def _walk(func: cst.FunctionDef) -> _Walk:
    """The nodes of a function's body, not those of nested functions, lambdas, classes or comprehensions."""
    cached = _WALKS.get(id(func))
    if cached is not None and cached.func is func:
        return cached
    nested = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp)
    nodes: list[cst.CSTNode] = []
    span: dict[int, tuple[int, int]] = {}
    stack: list[tuple[cst.CSTNode, bool]] = [(func.body, False)]
    while stack:
        node, done = stack.pop()
        if done:
            span[id(node)] = (span[id(node)][0], len(nodes) - 1)
            continue
        span[id(node)] = (len(nodes), len(nodes))
        nodes.append(node)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(children(node)) if not isinstance(child, nested))
    if len(_WALKS) > 256:
        _WALKS.clear()
    walk = _walk_cache = _Walk(func, nodes, span)
    _WALKS[id(func)] = _walk_cache
    return walk


def _own_nodes(func: cst.FunctionDef) -> list[cst.CSTNode]:
    return _walk(func).nodes


_REGISTERING = frozenset({"register_buffer", "register_parameter", "register_module", "add_module", "__setattr__"})


def _attribute_sites(methods: dict[str, cst.FunctionDef]) -> tuple[dict[str, list[tuple[str, cst.CSTNode]]], set[str]]:
    """Each ``self.<attr>`` the methods assign (with the method and the statement), and the names they register
    (``register_buffer("mask", ...)``, ``setattr(self, "w", ...)``)."""
    assigned: dict[str, list[tuple[str, cst.CSTNode]]] = {}
    registered: set[str] = set()
    for name, method in methods.items():
        for sub in _own_nodes(method):
            targets: list[cst.BaseExpression] = []
            if isinstance(sub, cst.Assign):
                targets = [t.target for t in sub.targets]
            elif isinstance(sub, (cst.AugAssign, cst.AnnAssign)):
                targets = [sub.target]
            elif isinstance(sub, cst.Call) and _registers(sub):
                key = next((a.value for a in sub.args if isinstance(a.value, cst.SimpleString)), None)
                if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str):
                    registered.add(key.evaluated_value)
            for target in targets:
                for attr in _targets(target):
                    assigned.setdefault(attr, []).append((name, sub))
    return assigned, registered


def _registers(call: cst.Call) -> bool:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value in _REGISTERING
    return isinstance(func, cst.Name) and func.value == "setattr"


def _read_class(ctx: Context, node: cst.ClassDef, methods: dict[str, cst.FunctionDef], registered: set[str]) -> _Class:
    info = _Class(node, methods)
    assigned, _ = _attribute_sites(methods)
    info.device_attrs |= registered
    init = methods.get("__init__")
    init_env = _Env(ctx, info, init) if init is not None else None
    for attr, sites in assigned.items():
        if attr in registered:
            continue
        values = [s.value for _, s in sites if isinstance(s, cst.Assign)]
        if any(_is_parameter(ctx, v) for v in values):
            info.device_attrs.add(attr)
        elif values and all(_is_layer(ctx, v, devices.PARAMETER_MODULES) for v in values):
            info.consumers.add(attr)
            if all(_is_layer(ctx, v, devices.PARAMETER_LAYERS) for v in values):
                info.layers.add(attr)
        elif init_env is not None and len(sites) == 1 and sites[0][0] == "__init__":
            plain = _plain_tensor(init_env, sites[0][1], attr)
            if plain is not None:
                info.plain[attr] = plain
    return info


def _plain_tensor(init_env: _Env, assign: cst.CSTNode, attr: str) -> _Val | None:
    """``self.<attr> = <a CPU tensor>``: the attribute's value, with the assignment as its origin."""
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 \
            or _self_attr(assign.targets[0].target) != attr:
        return None
    val = init_env.kind(assign.value)
    return _Val(_CPU, assign, val.factory, attr) if val.kind == _CPU else None


def _targets(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from _targets(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from _targets(target.value)
    else:
        attr = _self_attr(target)
        if attr is not None:
            yield attr


def _is_parameter(ctx: Context, value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Call) and (ctx.qualname(value.func) or "").rsplit(".", 1)[-1] == "Parameter"


def _is_layer(ctx: Context, value: cst.BaseExpression, names: frozenset[str]) -> bool:
    if not isinstance(value, cst.Call):
        return False
    qualname = ctx.qualname(value.func) or ""
    return qualname.startswith("torch.nn.") and qualname.rsplit(".", 1)[-1] in names


# --- what a value is, in one method ------------------------------------------------------------------------------
class _Env:
    """What a local name of a method holds where it is read: the value of the last assignment to it that comes
    before the read in the text (the first iteration of a loop, or the branch written last), a CPU tensor (with
    its factory), a tensor on the module's device, a number, or unknown."""

    def __init__(self, ctx: Context, info: _Class, func: cst.FunctionDef,
                 args: dict[str, _Val] | None = None) -> None:
        self.ctx = ctx
        self.info = info
        self.func = func
        self._memo: dict[tuple[int, int], _Val] = {}
        self._unpacked: set[int] = set()  # values unpacked into names: the pieces of a tensor (x.chunk(3))
        self._used: set[str] | None = None
        params = [p for p in func.params.params if p.name.value != "self"]
        self.inputs = args if args is not None else {p.name.value: _DEVICE for p in params if self._tensor_input(p)}
        bound: dict[str, list[tuple[int, cst.BaseExpression | None]]] = {}
        signature = func.params
        for p in [*signature.params, *signature.kwonly_params, *signature.posonly_params, signature.star_arg,
                  signature.star_kwarg]:
            if isinstance(p, cst.Param):
                bound.setdefault(p.name.value, []).append((_PARAM, None))
        for sub in _own_nodes(func):
            for name, at, value in self._bindings(sub):
                bound.setdefault(name, []).append((at, value))
        for sites in bound.values():
            sites.sort(key=lambda site: site[0])
        self.bound = bound

    def _bindings(self, sub: cst.CSTNode) -> Iterator[tuple[str, int, cst.BaseExpression | None]]:
        """The names a statement or expression binds, where the binding takes effect, and the value (None: of
        unknown kind)."""
        if isinstance(sub, cst.Assign):
            at = self._end(sub)
            for target in sub.targets:
                for name, value in self._assigned(target.target, sub.value):
                    yield name, at, value
        elif isinstance(sub, (cst.AnnAssign, cst.AugAssign)):
            annotated = sub.value if isinstance(sub, cst.AnnAssign) else None
            for name in _names(sub.target):
                yield name, self._end(sub), annotated
        elif isinstance(sub, (cst.For, cst.WithItem, cst.NamedExpr, cst.ExceptHandler, cst.Import,
                              cst.ImportFrom, cst.Global, cst.Nonlocal, cst.MatchAs, cst.MatchStar)):
            at = self._start(sub)
            for name in _bound_by(sub):
                yield name, at, None

    def _assigned(self, target: cst.BaseExpression, value: cst.BaseExpression) \
            -> Iterator[tuple[str, cst.BaseExpression | None]]:
        pairs = _pairs(target, value)
        if pairs is not None:  # a, b = x, y
            yield from pairs
            return
        plain = isinstance(target, cst.Name)
        pieces = _pieces_of(value) if isinstance(target, (cst.Tuple, cst.List)) else None
        if pieces is not None:
            self._unpacked.add(id(value))
        for name in _names(target):
            yield name, value if plain or pieces is not None else None

    def _start(self, node: cst.CSTNode) -> int:
        """Where ``node`` starts in the method's source order."""
        return _walk(self.func).span.get(id(node), (_LAST, _LAST))[0]

    def _end(self, node: cst.CSTNode) -> int:
        """Where ``node`` ends: a binding by an assignment takes effect after everything under it is evaluated."""
        return _walk(self.func).span.get(id(node), (_LAST, _LAST))[1]

    def _tensor_input(self, param: cst.Param) -> bool:
        name = param.name.value
        if _LENGTH_NAME.search(name):
            return False
        if param.default is not None and not (isinstance(param.default, cst.Name) and param.default.value == "None"):
            return False
        annotation = param.annotation
        if annotation is not None:
            text = self.ctx.code(annotation.annotation)
            return "Tensor" in text and "Optional" not in text and "None" not in text and "[" not in text
        if param.default is not None:
            return False
        return name in self._tensor_uses()

    def _tensor_uses(self) -> set[str]:
        """The names the method uses as tensors: ``x.size(0)``, ``x[:, None].float()``, ``self.linear(x)``."""
        if self._used is None:
            self._used = set()
            for sub in _own_nodes(self.func):
                if isinstance(sub, cst.Attribute) and sub.attr.value in _TENSOR_USES:
                    inner = sub.value
                    while isinstance(inner, cst.Subscript):  # x[:, None].float()
                        inner = inner.value
                    if isinstance(inner, cst.Name):
                        self._used.add(inner.value)
                elif isinstance(sub, cst.Call) and _self_attr(sub.func) in self.info.layers and sub.args \
                        and isinstance(sub.args[0].value, cst.Name):
                    self._used.add(sub.args[0].value.value)
        return self._used

    def name_at(self, name: str, at: int) -> _Val:
        sites = [s for s in self.bound.get(name, []) if s[0] < at]
        if not sites:
            return _UNKNOWN
        where, value = sites[-1]
        if value is None:
            return self.inputs.get(name, _UNKNOWN) if where == _PARAM else _UNKNOWN
        if id(value) in self._unpacked:
            whole = _pieces_of(value)
            return _DEVICE if whole is not None and self.kind(whole, where).kind == _DEV else _UNKNOWN
        return self.kind(value, where)

    def kind(self, expr: cst.BaseExpression, at: int | None = None) -> _Val:
        """What ``expr`` holds when it is evaluated at ``at`` (its own position when None)."""
        if at is None:
            at = self._start(expr)
        key = (id(expr), at)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = _Val("")  # a cycle is unknown
        value = self._kind(expr, at)
        self._memo[key] = value
        return value

    def _kind(self, expr: cst.BaseExpression, at: int) -> _Val:
        if isinstance(expr, (cst.Integer, cst.Float)):
            return _NUMBER
        if isinstance(expr, cst.UnaryOperation):
            return self.kind(expr.expression, at)
        if isinstance(expr, cst.Name):
            return self.name_at(expr.value, at)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr, at)
        if isinstance(expr, cst.Subscript):
            inner = self.kind(expr.value, at)
            if inner.kind == _DEV:
                return _DEVICE
            return inner if inner.kind == _CPU and all(_keeps_dims(el) for el in expr.slice) else _UNKNOWN
        if isinstance(expr, cst.BinaryOperation) and type(expr.operator).__name__ in _OPERATORS:
            return _combine(self.kind(expr.left, at), self.kind(expr.right, at))
        if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1 \
                and type(expr.comparisons[0].operator).__name__ in _COMPARISONS:
            return _combine(self.kind(expr.left, at), self.kind(expr.comparisons[0].comparator, at))
        if isinstance(expr, cst.Call):
            return self._call(expr, at)
        return _UNKNOWN

    def _attribute(self, expr: cst.Attribute, at: int) -> _Val:
        attr = _self_attr(expr)
        if attr is not None:
            if attr in self.info.plain:
                return self.info.plain[attr]
            return _DEVICE if attr in self.info.device_attrs else _UNKNOWN
        inner = self.kind(expr.value, at)
        return inner if expr.attr.value in ("T", "mT", "data") and inner.kind in (_CPU, _DEV) else _UNKNOWN

    def _call(self, call: cst.Call, at: int) -> _Val:
        qualname = self.ctx.qualname(call.func) or ""
        if qualname.startswith("torch.") and qualname.count(".") == 1:
            return self._torch_call(call, qualname[6:], at)
        if qualname in _VARIABLE and call.args and call.args[0].keyword is None:
            return self.kind(call.args[0].value, at)  # Variable(t) is t (torch >= 0.4)
        if qualname.startswith("torch.nn.functional.") and call.args:
            first = self.kind(call.args[0].value, at)
            return _DEVICE if first.kind == _DEV else _UNKNOWN
        func = call.func
        if not isinstance(func, cst.Attribute):
            return _UNKNOWN
        if _self_attr(func) in self.info.layers:
            return _DEVICE
        method = func.attr.value
        receiver = self.kind(func.value, at)
        if receiver.kind == _CPU and method in _CPU_KEEPING_METHODS \
                and (method == "expand_as" or all(self.kind(a.value, at).kind != _DEV for a in call.args)):
            return receiver
        if receiver.kind == _DEV and method in _DEVICE_KEEPING_METHODS:
            return _DEVICE
        return _UNKNOWN

    def _torch_call(self, call: cst.Call, fname: str, at: int) -> _Val:
        """``torch.<fname>(...)``: a factory's CPU tensor, a CPU tensor kept (``torch.tril(mask)``), or a
        tensor on the module's device computed from one."""
        if fname in devices.CPU_DEFAULT_FACTORIES:
            return _factory(call, fname)
        if any(a.star for a in call.args):
            return _UNKNOWN
        kinds = [self.kind(v, at) for v in _tensor_args(call)]
        if fname in _CPU_KEEPING_FUNCS and kinds and kinds[0].kind == _CPU \
                and all(k.kind in (_CPU, _NUM) for k in kinds):
            return kinds[0]
        if fname not in _NOT_A_TENSOR and any(k.kind == _DEV for k in kinds) \
                and not any(k.kind == _CPU for k in kinds) and not fname.startswith(("is_", "get_")):
            return _DEVICE
        return _UNKNOWN


def _pairs(target: cst.BaseExpression, value: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]] | None:
    """``[("a", x), ("b", y)]`` for ``a, b = x, y``; None for any other assignment."""
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(value, (cst.Tuple, cst.List)) \
            or len(target.elements) != len(value.elements):
        return None
    out = []
    for t, v in zip(target.elements, value.elements, strict=True):
        if not isinstance(t.value, cst.Name) or isinstance(t, cst.StarredElement) \
                or isinstance(v, cst.StarredElement):
            return None
        out.append((t.value.value, v.value))
    return out


def _pieces_of(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """The tensor ``x`` whose pieces ``x.chunk(3, dim=-1)`` / ``x.split(n)`` / ``x.unbind(0)`` are unpacked."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value in ("chunk", "split", "unbind", "tensor_split"):
        return value.func.value
    return None


def _combine(left: _Val, right: _Val) -> _Val:
    """The result of an operation on two values, where it runs: on the module's device when one operand is there
    and the other is not a CPU tensor (whatever it is, the result is on that device, or the operation raises);
    a CPU tensor when one operand is one and the other not on the module's device (a number, a CPU tensor, or
    something unknown: a GPU tensor would make the operation raise there already)."""
    kinds = {left.kind, right.kind}
    if kinds == {_CPU} and left.origin is right.origin:
        return left
    if _CPU in kinds and _DEV not in kinds:
        return left if left.kind == _CPU else right
    if _DEV in kinds and _CPU not in kinds:
        return _DEVICE
    if kinds == {_NUM}:
        return _NUMBER
    return _UNKNOWN


def _keeps_dims(element: cst.SubscriptElement) -> bool:
    """A slice or ``None`` (``pe[:, :n]``, ``m[None]``): indexing that keeps every dimension."""
    index = element.slice
    if isinstance(index, cst.Slice):
        return True
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Name) and index.value.value == "None"


def _tensor_args(call: cst.Call) -> list[cst.BaseExpression]:
    """The positional arguments of a call, the elements of a list or tuple literal among them spread
    (``torch.cat([a, b])``)."""
    out: list[cst.BaseExpression] = []
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value in ("input", "other", "tensors", "mask", "condition"):
                out.append(arg.value)
            continue
        if isinstance(arg.value, (cst.List, cst.Tuple)):
            out.extend(el.value for el in arg.value.elements)
        else:
            out.append(arg.value)
    return out


def _factory(call: cst.Call, fname: str) -> _Val:
    """A factory call's CPU tensor; unknown when it has ``device=`` or ``**kwargs`` (which may hold one),
    ``out=``, or may make a 0-dim tensor (a scalar torch takes with a GPU tensor)."""
    if any(a.star == "**" or (a.keyword is not None and a.keyword.value in (devices.DEVICE_KEYWORD, "out"))
           for a in call.args):
        return _UNKNOWN
    positional = [a.value for a in call.args if a.keyword is None]
    if fname == "tensor":
        data = positional[0] if positional else None
        if not isinstance(data, (cst.List, cst.Tuple, cst.ListComp)) or \
                (isinstance(data, (cst.List, cst.Tuple)) and not data.elements):
            return _UNKNOWN  # torch.tensor(2.0), torch.tensor(value): may be 0-dim
    elif fname in _SIZED:
        if not _sized(call, fname, positional):
            return _UNKNOWN
    elif fname == "from_numpy" or not positional:
        return _UNKNOWN
    return _Val(_CPU, call, fname)


_SIZED = frozenset({"zeros", "ones", "empty", "rand", "randn", "full", "randint"})


_Node = TypeVar("_Node")


def _shape_head(fname: str, positional: Sequence[_Node], sizes: Sequence[_Node]) -> _Node | None:
    """The first argument that gives the size of ``torch.<fname>(...)`` (``full``: its first positional one;
    ``randint``: ``size=`` or its last positional one), None when there is none."""
    if fname == "full":
        shape = positional[:1] or sizes
    elif fname == "randint":
        shape = sizes or positional[-1:]
    else:
        shape = positional or sizes
    return shape[0] if shape else None


def _sized(call: cst.Call, fname: str, positional: list[cst.BaseExpression]) -> bool:
    """Is the size of ``torch.zeros(...)`` and the like certainly not ``()`` (a 0-dim tensor)?"""
    sizes = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "size"]
    first = _shape_head(fname, positional, sizes)
    if first is None:
        return False
    if isinstance(first, (cst.Tuple, cst.List)):
        return bool(first.elements)
    return fname != "randint"  # randint's size is a tuple; torch.randint(n, (...)) is read above


def _names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from _names(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from _names(target.value)


def _imported(node: cst.Import | cst.ImportFrom) -> Iterator[str]:
    if isinstance(node.names, cst.ImportStar):
        return
    for alias in node.names:
        bound = alias.asname.name if alias.asname is not None else alias.name
        if isinstance(bound, cst.Name):
            yield bound.value
        else:
            yield (dotted_name(bound) or "").split(".")[0]


def _bound_by(node: cst.CSTNode) -> Iterator[str]:
    if isinstance(node, cst.For):
        yield from _names(node.target)
    elif isinstance(node, cst.WithItem) and node.asname is not None:
        yield from _names(node.asname.name)
    elif isinstance(node, cst.NamedExpr):
        yield from _names(node.target)
    elif isinstance(node, cst.ExceptHandler) and node.name is not None:
        yield from _names(node.name.name)
    elif isinstance(node, (cst.Import, cst.ImportFrom)):
        yield from _imported(node)
    elif isinstance(node, (cst.Global, cst.Nonlocal)):
        for item in node.names:
            yield item.name.value
    elif isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
        yield node.name.value


# --- where a CPU tensor meets one on the module's device -------------------------------------------------------
def _combinations(ctx: Context, info: _Class) -> Iterator[_Combination]:
    forward = info.methods.get("forward")
    if forward is None:
        return
    env = _Env(ctx, info, forward)
    yield from _mixes(ctx, env)
    for name, args in _helper_calls(env).items():
        helper = info.methods.get(name)
        if helper is not None and helper is not forward and name != "__init__":
            yield from _mixes(ctx, _Env(ctx, info, helper, args))


def _helper_calls(env: _Env) -> dict[str, dict[str, _Val]]:
    """The methods ``forward`` calls as ``self.m(...)``, with what each positional argument certainly holds
    when every call agrees (only tensors on the module's device are kept)."""
    seen: dict[str, list[list[_Val]]] = {}
    for sub in _own_nodes(env.func):
        if isinstance(sub, cst.Call):
            name = _self_attr(sub.func)
            if name is not None and name in env.info.methods:
                if any(a.keyword is not None or a.star for a in sub.args):
                    seen.setdefault(name, []).append([])
                    continue
                seen.setdefault(name, []).append([env.kind(a.value) for a in sub.args])
    out: dict[str, dict[str, _Val]] = {}
    for name, calls in seen.items():
        params = [p for p in env.info.methods[name].params.params if p.name.value != "self"]
        args: dict[str, _Val] = {}
        for i, param in enumerate(params):
            if all(len(c) > i and c[i].kind == _DEV for c in calls) and not _LENGTH_NAME.search(param.name.value):
                args[param.name.value] = _DEVICE
        out[name] = args
    return out


def _mixes(ctx: Context, env: _Env) -> Iterator[_Combination]:
    for sub in _own_nodes(env.func):
        if isinstance(sub, cst.Call) and _self_attr(sub.func) in env.info.consumers \
                and not any(a.star for a in sub.args):
            kinds = [(env.kind(o), o) for o in _tensor_args(sub)]
            arg = next((o for k, o in kinds if k.kind == _DEV), None)
            for k, _ in kinds:
                if k.kind == _CPU:
                    yield _Combination(k, sub.func, "layer", sub, env, _fix_name(env, arg))
        for operands, op in _operand_groups(ctx, sub):
            kinds = [(env.kind(o), o) for o in operands]
            if op == "compare":  # lengths compared with an arange may be CPU tensors by design
                kinds = [(k, o) for k, o in kinds if not _argument_itself(env, o)]
            dev = next((o for k, o in kinds if k.kind == _DEV), None)
            if dev is not None:
                for k, _ in kinds:
                    if k.kind == _CPU:
                        yield _Combination(k, dev, op, sub, env, _fix_name(env, dev))


def _operand_groups(ctx: Context, sub: cst.CSTNode) -> Iterator[tuple[list[cst.BaseExpression], str]]:
    """The tensors a node combines (the two sides of ``a + b``, ``a < b``, ``a += b``, the tensors of
    ``torch.cat([...])``, ``a.masked_fill(mask, v)``), and the operation's name."""
    if isinstance(sub, cst.BinaryOperation) and type(sub.operator).__name__ in _OPERATORS:
        yield [sub.left, sub.right], _OPERATORS[type(sub.operator).__name__]
    elif isinstance(sub, cst.Comparison):
        left = sub.left
        for target in sub.comparisons:
            if type(target.operator).__name__ in _COMPARISONS:
                yield [left, target.comparator], "compare"
            left = target.comparator
    elif isinstance(sub, cst.AugAssign) and type(sub.operator).__name__ in _AUG_OPERATORS:
        yield [sub.target, sub.value], "iadd"
    elif isinstance(sub, cst.Call) and not any(a.star for a in sub.args):
        qualname = ctx.qualname(sub.func) or ""
        if qualname.startswith("torch.") and qualname.count(".") == 1 and qualname[6:] in devices.COMBINING_FUNCS:
            yield _tensor_args(sub), _op_name(qualname[6:])
        elif isinstance(sub.func, cst.Attribute) and not qualname \
                and sub.func.attr.value in devices.COMBINING_METHODS:
            operands = [sub.func.value, *(a.value for a in sub.args if a.keyword is None)]
            if sub.func.attr.value.startswith("masked_fill"):
                operands = operands[:2]
            yield operands, _op_name(sub.func.attr.value)


def _argument_itself(env: _Env, expr: cst.BaseExpression) -> bool:
    """``n_wins[:, None]``, ``lengths``: an argument of the method, maybe indexed, never rebound in it."""
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return False
    sites = env.bound.get(expr.value, [])
    return bool(sites) and all(where == _PARAM for where, _ in sites)


def _fix_name(env: _Env, expr: cst.BaseExpression | None) -> str | None:
    """An argument of the method on the module's device that is never rebound in it (certainly bound, to the
    same tensor, wherever the method makes its factory's tensor): ``expr`` when it is one, else the first."""
    names = [expr.value] if isinstance(expr, cst.Name) else []
    names += [p.name.value for p in env.func.params.params]
    for name in names:
        sites = env.bound.get(name, [])
        if name in env.inputs and len(sites) == 1 and sites[0] == (_PARAM, None):
            return name
    return None


def _op_name(name: str) -> str:
    name = name.rstrip("_")
    if name in ("concat", "concatenate", "stack", "hstack", "vstack", "dstack"):
        return "cat"
    if name in ("eq", "ne", "lt", "le", "gt", "ge"):
        return "compare"
    return {"subtract": "sub", "multiply": "mul", "divide": "div", "mm": "matmul", "bmm": "matmul"}.get(name, name)


# --- whether the program may put the module on a device ---------------------------------------------------------
def _screen_module_classes(index: AstIndex) -> list[ast.ClassDef]:
    """:func:`_module_classes` over CPython's ``ast``: the classes with a base that is ``torch.nn.Module`` (by
    its import) or a module class of the file (by name)."""
    found: set[int] = set()
    names: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls in index.classes:
            if id(cls) not in found and any(
                    (isinstance(base, ast.Name) and base.id in names) or index.qualnames(base) & _MODULE_BASES
                    for base in cls.bases):
                found.add(id(cls))
                names.add(cls.name)
                changed = True
    return [cls for cls in index.classes if id(cls) in found]


def _screen_class(cls: ast.ClassDef, factory: Callable[[ast.Call], bool]) -> bool:
    """May the class hold a finding? It defines ``forward``, and a factory call of ``factory`` is in
    ``forward`` or a method ``forward`` calls as ``self.m(...)``, or in ``__init__`` where it may reach a
    plain attribute (``self.x = <it>``, also through local names)."""
    methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    forward = methods.get("forward")
    if forward is None:
        return False
    called = {n.func.attr for n in _method_calls(forward) if isinstance(n.func, ast.Attribute)
              and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"}
    for name in {"forward"} | (called & methods.keys()) - {"__init__"}:
        if any(factory(n) for n in _method_calls(methods[name])) and _screen_mixes(methods[name], factory):
            return True
    init = methods.get("__init__")
    return init is not None and any(factory(n) for n in _method_calls(init)) and _screen_init(init, factory)


def _screen_mixes(method: ast.FunctionDef | ast.AsyncFunctionDef, factory: Callable[[ast.Call], bool]) -> bool:
    """Does a factory's CPU tensor reach an operand of something that combines tensors (what ``_mixes`` looks
    at): ``a + b``, ``a < b``, ``a += b`` with something other than a number, ``torch.cat([...])`` and the other
    combining functions and methods, or an argument of ``self.layer(...)``? A value reaches an operand the way
    ``_Env.kind`` carries a CPU tensor: through local names, subscripts, arithmetic and comparisons, the methods
    and functions that keep it on the CPU (``.float()``, ``torch.tril``), ``Variable(t)``, ``.T`` / ``.data``."""
    nodes = walk_with_parents(method)
    sources = {id(n) for n, _ in nodes if isinstance(n, ast.Call) and factory(n)}
    assigns = [n for n, _ in nodes if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None]
    tainted: set[str] = set()
    while True:
        hot = set(sources)
        for node, _ in reversed(nodes):  # each node before its parent
            if _screen_hot(node, hot, tainted):
                hot.add(id(node))
        new = {n.id for a in assigns if _assigns_hot(a.value, hot) for t in _assign_targets(a) for n in walk(t)
               if isinstance(n, ast.Name)} - tainted
        if not new:
            break
        tainted |= new
    return any(_screen_mix(node, hot) for node, _ in nodes)


def _assign_targets(assign: ast.Assign | ast.AnnAssign | ast.AugAssign) -> list[ast.expr]:
    return assign.targets if isinstance(assign, ast.Assign) else [assign.target]


def _assigns_hot(value: ast.expr | None, hot: set[int]) -> bool:
    """Does an assignment of ``value`` bind a name to a CPU tensor (``a, b = x, y``: either)?"""
    if id(value) in hot:
        return True
    return isinstance(value, (ast.Tuple, ast.List)) and any(id(e) in hot for e in value.elts)


def _screen_hot(node: ast.AST, hot: set[int], tainted: set[str]) -> bool:
    """May ``node`` hold a CPU tensor of a factory, its children's answers known (see :func:`_screen_mixes`)?"""
    if isinstance(node, ast.Name):
        return node.id in tainted
    if isinstance(node, ast.Subscript):
        return id(node.value) in hot
    if isinstance(node, ast.BinOp):
        return id(node.left) in hot or id(node.right) in hot
    if isinstance(node, ast.Compare):
        return id(node.left) in hot or any(id(c) in hot for c in node.comparators)
    if isinstance(node, ast.UnaryOp):
        return id(node.operand) in hot
    if isinstance(node, ast.Attribute):
        return node.attr in ("T", "mT", "data") and id(node.value) in hot
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _CPU_KEEPING_METHODS and id(func.value) in hot:
            return True
        last = (dotted(func) or "").rsplit(".", 1)[-1]
        return (last in _CPU_KEEPING_FUNCS or last == "Variable") and any(id(a) in hot for a in _screen_args(node))
    return False


def _screen_args(call: ast.Call) -> list[ast.AST]:
    """:func:`_tensor_args` over CPython's ``ast``, and every keyword's value (an over-approximation)."""
    out: list[ast.AST] = []
    for arg in call.args:
        out.append(arg)
        if isinstance(arg, (ast.List, ast.Tuple)):
            out.extend(arg.elts)
    out.extend(k.value for k in call.keywords)
    return out


def _screen_mix(node: ast.AST, hot: set[int]) -> bool:
    """Does ``node`` combine a ``hot`` operand with another tensor (see :func:`_screen_mixes`)?"""
    if isinstance(node, (ast.BinOp, ast.Compare, ast.AugAssign)):
        if isinstance(node, ast.BinOp):
            operands = [node.left, node.right]
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        else:
            operands = [node.target, node.value]
        heated = [o for o in operands if id(o) in hot]
        return len(heated) > 1 or (len(heated) == 1 and any(not _number(o) for o in operands if id(o) not in hot))
    if isinstance(node, ast.Call):
        func = node.func
        args = _screen_args(node)
        name = dotted(func) or ""
        if name.startswith("self.") or name.rsplit(".", 1)[-1] in devices.COMBINING_FUNCS:
            return any(id(a) in hot for a in args)
        if isinstance(func, ast.Attribute) and func.attr in devices.COMBINING_METHODS:
            return any(id(a) in hot for a in (func.value, *args))
    return False


def _number(node: ast.AST) -> bool:
    while isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex, bool))


def _method_calls(method: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Call]:
    """Every call in a method: its body, its decorators and its parameters' defaults (walked here: the
    index's walk of the whole file is left to the rules that need it)."""
    for stmt in method.body:
        yield from (n for n in walk(stmt) if isinstance(n, ast.Call))
    args = method.args
    for part in (*method.decorator_list, *args.defaults, *args.kw_defaults):
        if part is not None:
            yield from (n for n in walk(part) if isinstance(n, ast.Call))


def _screen_init(init: ast.FunctionDef | ast.AsyncFunctionDef, factory: Callable[[ast.Call], bool]) -> bool:
    """Does a factory call reach ``self.x = ...`` in ``__init__``, directly or through local names?"""
    assigns = [n for n in walk(init) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))]

    def feeds(value: ast.AST | None, names: set[str]) -> bool:
        return value is not None and any((isinstance(n, ast.Call) and factory(n))
                                         or (isinstance(n, ast.Name) and n.id in names)
                                         for n in _outside_wrappers(value))

    tainted: set[str] = set()
    changed = True
    while changed:  # local names that may hold a factory's tensor
        changed = False
        for a in assigns:
            names = {n.id for t in _assign_targets(a) for n in walk(t) if isinstance(n, ast.Name)} - tainted
            if names and feeds(a.value, tainted):
                tainted |= names
                changed = True
    return any(feeds(a.value, tainted) for a in assigns for t in _assign_targets(a)
               if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self")


def _outside_wrappers(value: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``value``, not entering ``nn.Parameter(...)`` / ``nn.Buffer(...)``: what they wrap is a
    parameter or a buffer, which ``model.to()`` moves."""
    stack = [value]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.Call) and (dotted(node.func) or "").rsplit(".", 1)[-1] in ("Parameter", "Buffer"):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _screen_factory(call: ast.Call) -> str | None:
    """The factory's name when ``call`` may make a CPU tensor of one or more dimensions: :func:`_factory` over
    CPython's ``ast`` (no ``device=``, ``out=`` or ``**``; ``tensor`` of a non-empty list literal; a size that
    is certainly not ``()``; not ``from_numpy``)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name not in devices.CPU_DEFAULT_FACTORIES:
        return None
    if any(k.arg is None or k.arg in (devices.DEVICE_KEYWORD, "out") for k in call.keywords):
        return None
    positional = call.args
    if name == "tensor":
        data = positional[0] if positional else None
        if not isinstance(data, (ast.List, ast.Tuple, ast.ListComp)) or \
                (isinstance(data, (ast.List, ast.Tuple)) and not data.elts):
            return None
    elif name in _SIZED:
        return name if _screen_sized(call, name) else None
    elif name == "from_numpy" or not positional:
        return None
    return name


def _screen_sized(call: ast.Call, name: str) -> bool:
    """:func:`_sized` over CPython's ``ast``."""
    first = _shape_head(name, call.args, [k.value for k in call.keywords if k.arg == "size"])
    if first is None:
        return False
    if isinstance(first, (ast.Tuple, ast.List)):
        return bool(first.elts)
    return name != "randint"


def _sets_default_device(ctx: Context) -> bool:
    for call in ctx.nodes(cst.Call):
        qualname = ctx.qualname(call.func)
        if qualname in devices.DEFAULT_DEVICE_SETTERS:
            return True
    return any(ctx.qualname(item.item.func) == devices.DEVICE_CONSTRUCTOR
               for item in ctx.nodes(cst.WithItem) if isinstance(item.item, cst.Call))


def _mentions_device(ctx: Context) -> bool:
    """Does the program mention an accelerator or a device? A program that never does keeps its modules on the
    CPU. The program is the file itself when it is a script (it runs code at its top level: its own run is the
    one that uses its modules), else the file and the Python files beside it (a module's users)."""
    if _mentions((ctx.text or ctx.module.code).encode("utf-8", "replace")):
        return True
    if ctx.project is None or is_script(ctx.module):
        return False
    return any(_mentions(data) for data in ctx.project.siblings(ctx.path))


def _mentions(text: bytes) -> bool:
    return bool(devices.ACCELERATOR_MENTION.search(text) or _MENTIONS_DEVICE.search(text))


# --- fixes ---------------------------------------------------------------------------------------------------------
def _device_fix(ctx: Context, call: cst.Call, combo: _Combination) -> Fix | None:
    """``, device=x.device`` after the factory's last argument, where ``x`` (the tensor it meets) is an argument
    of the method that makes the factory's tensor."""
    name = combo.name
    if name is None or not call.args or ctx.enclosing_function(call) is not combo.env.func:
        return None
    if any(a.keyword is not None and a.keyword.value == "generator" for a in call.args):
        return None
    edit = insert_after(ctx, call.args[-1].value, f", {devices.DEVICE_KEYWORD}={name}.device")
    return Fix((edit,), Applicability.SAFE, f"Create it with device={name}.device")


def _buffer_fix(ctx: Context, info: _Class, assign: cst.Assign, attr: str) -> Fix | None:
    """``self.register_buffer("mask", value, persistent=False)`` for ``self.mask = value`` in ``__init__``,
    after ``super().__init__()``, when the class body binds no other ``mask``."""
    init = info.methods.get("__init__")
    if init is None or not isinstance(init.body, cst.IndentedBlock):
        return None
    line = ctx.parent(assign)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or ctx.parent(line) is not init.body:
        return None
    body = list(init.body.body)
    at = body.index(line)
    if not any(_calls_super_init(ctx, stmt) for stmt in body[:at]):
        return None
    for stmt in info.node.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == attr:
            return None
        if isinstance(stmt, cst.SimpleStatementLine) and attr in ctx.code(stmt).split("=")[0]:
            return None
    quote = preferred_quote(ctx)
    text = f"self.register_buffer({quote}{attr}{quote}, {ctx.code(assign.value)}, persistent=False)"
    edit = Edit(node_start(ctx, assign), node_end(ctx, assign), text, old=ctx.code(assign))
    return Fix((edit,), Applicability.UNSAFE, f"Register self.{attr} as a non-persistent buffer")


def _calls_super_init(ctx: Context, stmt: cst.CSTNode) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    code = ctx.code(stmt)
    return "__init__(" in code and ("super(" in code or "Module.__init__" in code)
