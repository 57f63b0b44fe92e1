"""DEV007: a tensor that is provably float64 placed on Apple's MPS device, which has no float64."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from devlint import devices
from devlint.bindings import bindings
from devlint.context import Context, string_value
from devlint.diagnostics import Applicability, Edit, Evidence, Finding, Fix, FixAvailability
from devlint.lazy import LazyModule
from devlint.rules.base import Invalid, Rule, Valid, insert_after, replace_token
from devlint.rules.fixes import torch_name
from devlint.screen import AstIndex, walk

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

_SHOWN = 60  # a call longer than this is not quoted in the message
# a condition that tells devices apart: the code under it runs on one device only (not provably mps)
_DEVICE_TEST = re.compile(r"mps|cuda|cpu|gpu|accelerat|device|darwin|platform|\.type\b", re.IGNORECASE)
_CYCLE = ""  # what a name's own binding (x = x.unsqueeze(0)) says of it while it is being judged
_NONE: frozenset[str] = frozenset()


_FLOAT64_NAMES = frozenset({"float64", "double", "set_default_dtype", "DoubleTensor", "float_"})


@dataclass(frozen=True)
class Float64Evidence(Evidence):
    """How the float64 tensor reaches the mps device: ``factory`` (``torch.zeros(..., dtype=torch.float64,
    device="mps")``), ``to_dtype`` (``x.to("mps", torch.float64)``), ``move`` (``x.double().to("mps")``),
    ``numpy`` (``torch.from_numpy(a).to("mps")`` of a float64 array), ``numpy_tensor`` (``torch.tensor(a,
    device="mps")``), ``cast`` (``x.double()`` of a tensor on mps), ``default_dtype`` (a factory on mps after
    ``torch.set_default_dtype(torch.float64)``)."""

    kind: str


class Float64OnMps(Rule):
    code = "DEV007"
    name = "float64-on-mps"
    summary = ("A provably float64 tensor placed on the mps device (dtype=torch.float64, .double(), a float64 "
               "NumPy array): MPS has no float64 and raises TypeError.")
    fix_availability = FixAvailability.SOMETIMES
    evidence_type = Float64Evidence
    triggers = devices.MPS_TRIGGER

    doc_what = '''
Finds a tensor whose dtype is provably float64 created on, moved to or cast on Apple's `mps` device:

- a torch factory with `dtype=torch.float64` (or `torch.double`) and an mps `device=`:
  `torch.zeros(n, dtype=torch.float64, device="mps")`;
- a move that asks for float64: `x.to("mps", torch.float64)`, `x.to(device=mps, dtype=torch.double)`;
- a move of a float64 tensor: `x.double().to("mps")`, `torch.from_numpy(a).to(device)` or
  `torch.tensor(a, device=device)` where `a` is a float64 NumPy array (`np.zeros(...)`, `np.ones`,
  `np.random.rand/randn/uniform/normal`, `np.linspace`, `np.loadtxt`, `np.array([0.5, 1.0])` of float literals,
  `dtype=np.float64` / `"float64"` / `float`, `.astype(np.float64)`, and arithmetic of such an array with
  numbers), or a name every assignment of which is one of those; a `.float()` after the move
  (`torch.from_numpy(a).to(device).float()`) comes too late: the move raises first;
- a cast on mps: `x.double()` / `x.to(torch.float64)` of a tensor made on mps;
- after a module-level `torch.set_default_dtype(torch.float64)` (the file's only call of it), a float factory
  on mps with no `dtype=` (`torch.zeros(3, device="mps")`, `torch.tensor([0.5], device="mps")`) or the move of
  one (`torch.randn(3).to("mps")`).

The device is mps when it is the literal `"mps"` / `"mps:0"`, `torch.device("mps")`, or a variable every
assignment of which (in the scope the use reads) is a device choice among mps, cpu and cuda that includes mps:
`"mps" if torch.backends.mps.is_available() else "cpu"`, and also the cuda → mps → cpu chain
(`"cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"`, or the same
as an `if`/`elif` ladder): Apple's Macs have no CUDA, so on a Mac the chain picks mps and the code raises there.

Not reported: float32 / float16 / bfloat16; a dtype that is not provable (a parameter, `args.dtype`,
`dtype = torch.float32 if device.type == "mps" else torch.float64`, a name bound to float64 on one path and
something else on another); a device that is cuda, cpu, a parameter, `args.device`, `self.device` or any
variable with an assignment that is not such a choice; `.float()` before the move
(`torch.from_numpy(a).float().to(device)`); a move with a `dtype=` that is not float64
(`x.to(device, dtype=torch.float32)`); and, where the device is a variable, code under an `if` (or a
conditional expression) that tests the device or the platform (`if device.type != "mps": x = x.double()`,
`if sys.platform != "darwin":`).
'''
    doc_why = '''
MPS has no 64-bit floating point type, and PyTorch refuses to allocate a float64 tensor on the mps device: the
factory, the `.to()` or the cast raises `TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS
framework doesn't support float64. Please use float32 instead.` (the text is `MPS_ERROR_DOUBLE_NOT_SUPPORTED` of
PyTorch's `aten/src/ATen/mps/EmptyTensor.cpp`, raised by `empty_mps`; torch 2.13's own test lists quote it in
`torch/testing/_internal/common_methods_invocations.py`; the installed CPU build has no MPS backend to raise it).
The trap is NumPy: its arrays are float64 by default, `torch.from_numpy` and `torch.tensor` keep the dtype, and
the script that runs on CUDA (which has float64) fails on a Mac as soon as the data reaches the GPU.
'''
    doc_use_instead = '''
Use float32 on mps. The fix writes `torch.float32` for `torch.float64` / `torch.double`, `.float()` for
`.double()`, `.float()` before the move of a float64 tensor (`torch.from_numpy(a).float().to(device)`), or
`dtype=torch.float32` in a factory that takes its dtype from NumPy data or from the default dtype.
'''
    doc_fix_safety = '''
Unsafe: precision changes. float32 has a 24-bit mantissa (about 7 decimal digits) where float64 has 53; code
that needs float64 (accumulating sums, solving ill-conditioned systems, comparing against float64 references,
a `float64` tolerance in a test) computes other numbers after the fix, and on a CUDA or CPU machine (where the
float64 ran) it changes results that were right. `--fix` alone does not apply it (`--unsafe-fixes` does). The
fix is offered only where the float64 is spelled at the flagged call (a `torch.float64` / `torch.double`
argument, a `.double()` in the chain) or where inserting `.float()` / `dtype=torch.float32` there suffices; a
dtype held in a variable, or a call with `**kwargs`, is reported without a fix. It names `torch` only where
the name certainly refers to the torch module. Comments and formatting are kept.
'''
    doc_known_problems = '''
Precision beats recall, so a good share of the real cases is left out:

- a tensor reached through a parameter, a container, a data loader, a dataset's `__getitem__` or a library
  call is of unknown dtype (`torch.tensor(df.values)`, `batch["x"].to(device)`), and so is a NumPy array from
  `pd.read_csv(...).values`, `np.load` or arithmetic with another array of unknown dtype;
- a device in `args.device`, `self.device`, a parameter or a config is not followed, nor is
  `torch.set_default_device("mps")` or `with torch.device("mps"):` (factories without `device=` then land on
  mps); a name that some function declares `global` or `nonlocal` is not followed at all;
- `torch.set_default_dtype(torch.float64)` counts only as a module-level statement, the file's only call of it,
  and before the module-level code it affects (functions are taken to run after it);
- a tensor accumulated on mps and cast later (`running_corrects += torch.sum(preds == labels);
  running_corrects.double()`, the transfer-learning tutorial's accuracy, which fails on mps) is not followed:
  `+=` makes the name unknown;
- a name is judged by all its assignments in its scope, whatever their order: `a = np.zeros(3)` then
  `a = a.astype(np.float32)` is not float64 anywhere (no finding even where it is);
- where the device is a variable, any enclosing `if` that tests a device, `cuda`, `cpu` or the platform turns
  the finding off, even when the branch is the mps one.

Measured on 2026-11-23, the rule reports nothing on the real-code benchmark (52 sources, both halves), on the
PyPI corpus of `bench/corpus.toml` (16 packages) and on the 170 notebooks of `bench/notebooks.py`: the code there
that mentions mps and float64 converts to float32 first or tests the device (diffusers' schedulers, PyTorch-Ignite's
metrics). The MPS float64 bugs seen in public issue trackers reach the device through a parameter or a model's
output (`logits.to(torch.float64)`, `torch.from_numpy(points).to(device).float()` in a helper), which this rule
cannot prove and leaves out.
'''
    doc_options = '''
None of its own: `select`, `ignore`, `per-file-ignores` and `# noqa: DEV007` apply as for every rule.
'''
    doc_references = '''
- [MPS backend](https://pytorch.org/docs/stable/notes/mps.html)
- [torch.set_default_dtype](https://pytorch.org/docs/stable/generated/torch.set_default_dtype.html)
- [torch.from_numpy](https://pytorch.org/docs/stable/generated/torch.from_numpy.html) ("The returned tensor and
  ndarray share the same memory"; the dtype is the array's)
- [numpy.zeros](https://numpy.org/doc/stable/reference/generated/numpy.zeros.html) ("dtype: ... Default is
  numpy.float64")
'''
    doc_notebooks = '''
Notebooks (`.ipynb`) are one module in cell order: a device chosen in one cell, an array made in another and the
move in a third are followed as in a script, and a module-level `torch.set_default_dtype(torch.float64)` in an
early cell counts for the cells after it. The finding names its cell (`nb.ipynb:cell 4:2:1`); `--fix
--unsafe-fixes` rewrites only the changed cells' sources.
'''

    VALID = (
        Valid('import torch\nx = torch.zeros(3, dtype=torch.float32, device="mps")\n'),
        Valid('import torch\ndtype = torch.float32\ntorch.set_default_dtype(dtype)\n'
              'x = torch.zeros(3, device="mps")\n'),
        Valid('import torch\nx = torch.zeros(3, dtype=torch.float64, device="cuda")\n'),
        Valid('import torch\nimport numpy as np\ndevice = "mps" if torch.backends.mps.is_available() else "cpu"\n'
              'a = np.random.rand(8, 3)\nx = torch.from_numpy(a).float().to(device)\n'),
        Valid('import torch\ndevice = torch.device("mps" if torch.backends.mps.is_available() else "cpu")\n'
              'dtype = torch.float32 if device.type == "mps" else torch.float64\n'
              'x = torch.ones(4, dtype=dtype, device=device)\n'),
        Valid('import torch\ndef load(x, device):\n    return x.double().to(device)\n'),
        Valid('import torch\ndevice = "mps" if torch.backends.mps.is_available() else "cpu"\n'
              'x = torch.randn(3)\nif device != "mps":\n    x = x.double().to(device)\n'),
        Valid('import torch\nx = torch.ones(2).double().to("mps", dtype=torch.float32)\n'),
        Valid('import torch\nimport numpy as np\na = np.zeros(3)\na = a.astype(np.float32)\n'
              'x = torch.tensor(a, device="mps")\n'),
    )
    INVALID = (
        Invalid(
            'import torch\nimport numpy as np\n\ndevice = "mps" if torch.backends.mps.is_available() else "cpu"\n'
            'features = np.random.rand(128, 16)\nx = torch.from_numpy(features).to(device)\n',
            fixed='import torch\nimport numpy as np\n\ndevice = "mps" if torch.backends.mps.is_available() else "cpu"\n'
                  'features = np.random.rand(128, 16)\nx = torch.from_numpy(features).float().to(device)\n',
            doc=True,
        ),
        Invalid('import torch\nx = torch.zeros(3, dtype=torch.float64, device="mps")\n',
                fixed='import torch\nx = torch.zeros(3, dtype=torch.float32, device="mps")\n'),
        Invalid('import torch\nw = torch.randn(4, 4)\nw = w.double().to(torch.device("mps"))  # keep precision\n',
                fixed='import torch\nw = torch.randn(4, 4)\nw = w.float().to(torch.device("mps"))  # keep precision\n'),
        Invalid('import torch\nmps = torch.device("mps")\ny = torch.ones(2).to(mps, dtype=torch.double)\n',
                fixed='import torch\nmps = torch.device("mps")\ny = torch.ones(2).to(mps, dtype=torch.float32)\n'),
        Invalid('import torch\nimport numpy as np\nlabels = np.array([0.0, 1.0, 1.0])\n'
                't = torch.tensor(labels, device="mps:0")\n',
                fixed='import torch\nimport numpy as np\nlabels = np.array([0.0, 1.0, 1.0])\n'
                      't = torch.tensor(labels, device="mps:0", dtype=torch.float32)\n'),
        Invalid('import torch\nimport numpy as np\nx = torch.from_numpy(np.zeros(3)).to("mps").float()\n',
                fixed='import torch\nimport numpy as np\n'
                      'x = torch.from_numpy(np.zeros(3)).float().to("mps").float()\n'),
        Invalid('import torch\nx = torch.randn(8, device="mps")\ny = x.double()\n',
                fixed='import torch\nx = torch.randn(8, device="mps")\ny = x.float()\n'),
        Invalid('import torch\ntorch.set_default_dtype(torch.float64)\nx = torch.zeros(3, device="mps")\n',
                fixed='import torch\ntorch.set_default_dtype(torch.float64)\n'
                      'x = torch.zeros(3, device="mps", dtype=torch.float32)\n'),
        Invalid('import torch\nif torch.cuda.is_available():\n    device = "cuda"\n'
                'elif torch.backends.mps.is_available():\n    device = "mps"\nelse:\n    device = "cpu"\n'
                'def init(n):\n    dtype = torch.float64\n    return torch.eye(n, dtype=dtype, device=device)\n'),
    )

    def screen(self, index: AstIndex) -> bool:
        """The file imports torch, has an mps device string where :meth:`_Judge._device_types` can read it as a
        device (every finding's device comes from one: see :func:`_screen_device_position`) and a source of
        float64: a name of the dtype (``float64``, ``double``, ``.double()``, ``set_default_dtype``) or NumPy
        (whose float arrays are float64)."""
        if not index.imports_torch:
            return False
        float64 = any(m == "numpy" or m.startswith("numpy.") for m in index.imported_modules)
        strings: list[ast.Constant] = []  # the mps strings (rare: their positions are read only when found)
        for node in walk(index.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value.startswith(devices.MPS_DEVICE) and devices.is_mps_device(node.value):
                    strings.append(node)
            elif not float64 and isinstance(node, (ast.Attribute, ast.Name)):
                float64 = (node.attr if isinstance(node, ast.Attribute) else node.id) in _FLOAT64_NAMES
        if not strings or not float64:
            return False
        parents: dict[int, ast.AST] = {id(child): parent for parent in walk(index.tree)
                                       if isinstance(parent, _PARENTS) for child in ast.iter_child_nodes(parent)}
        return any(_screen_device_position(node, parents) for node in strings)

    def check(self, ctx: Context) -> Iterable[Finding]:
        if not ctx.imports_torch:
            return
        judge = _Judge(ctx)
        found: dict[cst.Call, tuple[str, str, Fix | None]] = {}
        for call in ctx.nodes(cst.Call):
            result = judge.site(call)
            if result is not None:
                found[call] = result
        for call, (kind, message, fix) in found.items():
            # one finding per chain: the innermost call that raises (an enclosing call never runs)
            if any(other is not call and any(a is call for a in ctx.ancestors(other)) for other in found):
                continue
            yield self.finding(ctx, call, message, fix, Float64Evidence(kind))


# The nodes whose children a string's device position depends on (:func:`_screen_device_position`)
_PARENTS = (ast.IfExp, ast.Call, ast.keyword, ast.Assign, ast.AnnAssign)


def _screen_device_position(node: ast.expr, parents: dict[int, ast.AST]) -> bool:
    """May :meth:`_Judge._device_types` read this string as a device? It reads a string only as a value of
    ``device=``, an argument of ``.to(...)`` or the value of an assignment (a name it follows), through the arms
    of a conditional expression and ``torch.device(...)``'s first argument. A string anywhere else (compared,
    in a tuple, a dict key, another call's argument, returned) is not a device a finding can come from.
    ``parents`` holds the parent of each child of the nodes in ``_PARENTS``."""
    child: ast.AST = node
    parent = parents.get(id(child))
    while (isinstance(parent, ast.IfExp) and child is not parent.test) or (
            isinstance(parent, ast.Call) and parent.args and parent.args[0] is child
            and (parent.func.attr if isinstance(parent.func, ast.Attribute)
                 else getattr(parent.func, "id", None)) == "device"):
        child, parent = parent, parents.get(id(parent))
    if isinstance(parent, (ast.Assign, ast.AnnAssign)):
        return parent.value is child
    if isinstance(parent, ast.keyword):
        return parent.arg == devices.DEVICE_KEYWORD
    return isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) \
        and parent.func.attr == devices.MOVE_METHOD and child in parent.args


class _Judge:
    """What is provable about dtypes and the mps device in one file."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.table = bindings(ctx)
        # names some function declares global or nonlocal: rebound where this cannot see (``global device``)
        self.declared = set().union(*(scope.declared for scope in self.table.scopes.values()))
        self.default_f64 = self._default_float64()  # (reads self.declared)

    # --- sites ------------------------------------------------------------------------------------------
    def site(self, call: cst.Call) -> tuple[str, str, Fix | None] | None:
        """(evidence kind, message, fix) when ``call`` puts a float64 tensor on mps."""
        if _has_star(call):
            return None
        qn = self.ctx.qualname(call.func)
        if qn is not None and qn.startswith("torch."):
            return self._factory(call, qn[len("torch."):])
        if qn is None and isinstance(call.func, cst.Attribute):
            method = call.func.attr.value
            if method == devices.MOVE_METHOD:
                return self._move(call, call.func.value)
            if method == devices.FLOAT64_METHOD and not call.args:
                return self._cast(call, call.func.value, None)
        return None

    def _factory(self, call: cst.Call, name: str) -> tuple[str, str, Fix | None] | None:
        if name not in devices.FACTORIES or name in ("Tensor", "FloatTensor", "LongTensor", "from_numpy"):
            return None
        device = _keyword(call, devices.DEVICE_KEYWORD)
        if device is None or not self._mps(device, call):
            return None
        dtype = _keyword(call, devices.DTYPE_KEYWORD)
        shown = self._shown(call)
        if dtype is not None:
            if not self._f64_dtype(dtype):
                return None
            return "factory", (f"{shown} creates a float64 tensor on the mps device, which has no float64 "
                               f"({_ERROR}); use torch.float32"), self._dtype_fix(dtype)
        data = call.args[0].value if call.args and call.args[0].keyword is None else None
        if name in ("tensor", "as_tensor") and data is not None and self._np_f64(data):
            return "numpy_tensor", (f"{shown} makes a tensor of a float64 NumPy array on the mps device, which has "
                                    f"no float64 ({_ERROR}); pass dtype=torch.float32"), self._add_dtype_fix(call)
        if self._default_float(call, name):
            return "default_dtype", (f"{shown} creates a tensor of the default dtype, float64 after "
                                     f"torch.set_default_dtype(torch.float64), on the mps device ({_ERROR}); pass "
                                     "dtype=torch.float32"), self._add_dtype_fix(call)
        return None

    def _move(self, call: cst.Call, receiver: cst.BaseExpression) -> tuple[str, str, Fix | None] | None:
        device, dtype = self._move_args(call)
        if device is None:
            return self._cast(call, receiver, dtype) if dtype is not None else None
        if not self._mps(device, call):
            return None
        shown = self._shown(call)
        if dtype is not None:
            if not self._f64_dtype(dtype):
                return None
            return "to_dtype", (f"{shown} asks for float64 on the mps device, which has no float64 ({_ERROR}); use "
                                "torch.float32"), self._dtype_fix(dtype)
        if self._on_mps(receiver, _NONE):
            return None  # it raised where it was made
        why = self._f64_tensor(receiver, _NONE)
        if not why:
            return None
        kind = "numpy" if why.startswith("NumPy") else "default_dtype" if why.startswith("default") else "move"
        return kind, (f"{shown} moves a float64 tensor ({why}) to the mps device, which has no float64 "
                      f"({_ERROR}); convert it with .float() first"), self._receiver_fix(receiver)

    def _move_args(self, call: cst.Call) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None]:
        """(device, dtype) of ``x.to(...)``: ``.to(device)``, ``.to(dtype)``, ``.to(device, dtype)``, keywords."""
        positional = [a.value for a in call.args if a.keyword is None]
        dtype = _keyword(call, devices.DTYPE_KEYWORD)
        device = _keyword(call, devices.DEVICE_KEYWORD)
        if positional and self._dtype_like(positional[0]):
            return device, dtype or positional[0]
        if positional:
            device = device or positional[0]
            if len(positional) > 1:
                dtype = dtype or positional[1]
        return device, dtype

    def _cast(self, call: cst.Call, receiver: cst.BaseExpression, dtype: cst.BaseExpression | None,
              ) -> tuple[str, str, Fix | None] | None:
        """``x.double()`` / ``x.to(torch.float64)`` of a tensor made on mps."""
        if dtype is not None and not self._f64_dtype(dtype):
            return None
        if not self._on_mps(receiver, _NONE) or self._f64_tensor(receiver, _NONE):
            return None
        assert isinstance(call.func, cst.Attribute)
        fix = self._dtype_fix(dtype) if dtype is not None else self._fix(
            [replace_token(self.ctx, call.func.attr, devices.FLOAT32_METHOD)])
        return "cast", (f"{self._shown(call)} converts a tensor on the mps device to float64, which MPS does not have "
                        f"({_ERROR}); use .float() / torch.float32"), fix

    # --- devices ----------------------------------------------------------------------------------------
    def _mps(self, expr: cst.BaseExpression, site: cst.CSTNode) -> bool:
        types = self._device_types(expr, _NONE)
        if not types or devices.MPS_DEVICE not in types or not types <= devices.MPS_CHOICE_TYPES:
            return False
        return self._literal_device(expr) or not self._under_device_test(site)

    def _literal_device(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            return True
        return (isinstance(expr, cst.Call) and self.ctx.qualname(expr.func) == devices.DEVICE_CONSTRUCTOR
                and bool(expr.args) and isinstance(expr.args[0].value, (cst.SimpleString, cst.ConcatenatedString)))

    def _device_types(self, expr: cst.BaseExpression, seen: frozenset[str]) -> frozenset[str] | None:
        """The device types ``expr`` may hold (None: not known)."""
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            return _string_device_type(expr)
        if isinstance(expr, cst.IfExp):
            body, orelse = self._device_types(expr.body, seen), self._device_types(expr.orelse, seen)
            return body | orelse if body is not None and orelse is not None else None
        if isinstance(expr, cst.Call) and self.ctx.qualname(expr.func) == devices.DEVICE_CONSTRUCTOR:
            if not expr.args or expr.args[0].keyword is not None:
                return None
            return self._device_types(expr.args[0].value, seen)
        if not isinstance(expr, cst.Name):
            return None
        values = self._values(expr, seen)
        if values is None:
            return None
        found = [self._device_types(value, seen | {expr.value}) for value in values]
        return None if any(t is None for t in found) else frozenset().union(*(t for t in found if t is not None))

    def _under_device_test(self, site: cst.CSTNode) -> bool:
        """Is ``site`` in a branch of an ``if`` or a conditional expression that tests the device?"""
        child: cst.CSTNode = site
        for anc in self.ctx.ancestors(site):
            if isinstance(anc, (cst.If, cst.IfExp, cst.While)) and anc.test is not child \
                    and _DEVICE_TEST.search(self.ctx.code(anc.test)):
                return True
            child = anc
        return False

    # --- names ------------------------------------------------------------------------------------------
    def _values(self, name: cst.Name, seen: frozenset[str]) -> list[cst.BaseExpression] | None:
        """Every value the name is assigned in the scope a use at ``name`` reads; None when one is not a plain
        ``name = value`` (a parameter, a loop, ``+=``, a tuple) or the name is being judged already (a
        cycle gives an empty list: it adds nothing)."""
        if name.value in seen:
            return []
        if name.value in self.declared:
            return None
        scope = self.table.resolve(name, name.value)
        if scope is None:
            return None
        found = scope.bindings.get(name.value, [])
        if not found or any(b.value is None or not isinstance(b.node, (cst.Assign, cst.AnnAssign)) for b in found):
            return None
        return [b.value for b in found if b.value is not None]

    def _name_reason(self, name: cst.Name, seen: frozenset[str],
                     judge: Callable[[cst.BaseExpression, frozenset[str]], str | None]) -> str | None:
        """What ``judge`` says of every value of ``name``: the first reason, "" when all its values are the name
        itself again, None when one is not proven."""
        values = self._values(name, seen)
        if values is None or (not values and name.value not in seen):
            return None
        reasons = [judge(v, seen | {name.value}) for v in values]
        if any(r is None for r in reasons):
            return None
        return next((r for r in reasons if r), _CYCLE)

    # --- dtypes -----------------------------------------------------------------------------------------
    def _dtype_like(self, expr: cst.BaseExpression) -> bool:
        qn = self.ctx.qualname(expr) or ""
        if not isinstance(expr, cst.Call) and qn.startswith("torch.") and qn.count(".") == 1:
            return qn.split(".")[1][:1].islower()
        return isinstance(expr, cst.Name) and self._f64_dtype(expr)

    def _f64_dtype(self, expr: cst.BaseExpression, seen: frozenset[str] = _NONE) -> bool:
        if isinstance(expr, cst.Attribute):
            return self.ctx.qualname(expr) in devices.FLOAT64_DTYPES
        if isinstance(expr, cst.IfExp):
            return self._f64_dtype(expr.body, seen) and self._f64_dtype(expr.orelse, seen)
        if isinstance(expr, cst.Name):
            if self.ctx.qualname(expr) in devices.FLOAT64_DTYPES:
                return True  # from torch import float64
            return bool(self._name_reason(expr, seen, lambda v, s: "float64" if self._f64_dtype(v, s) else None))
        return False

    def _f64_tensor(self, expr: cst.BaseExpression, seen: frozenset[str]) -> str | None:
        """Why ``expr`` is a float64 tensor (a reason for the message), None when that is not proven; the empty
        string for a name's own binding seen again (``x = x.unsqueeze(0)``)."""
        if isinstance(expr, cst.Name):
            return self._name_reason(expr, seen, self._f64_tensor)
        if isinstance(expr, cst.Subscript):
            return self._f64_tensor(expr.value, seen)
        if isinstance(expr, cst.UnaryOperation):
            return self._f64_tensor(expr.expression, seen)
        if isinstance(expr, cst.BinaryOperation):  # a float64 tensor and a Python number: float64
            left, right = self._operand(expr.left, seen, self._f64_tensor), self._operand(expr.right, seen,
                                                                                            self._f64_tensor)
            return None if left is None or right is None else left or right or None
        if not isinstance(expr, cst.Call) or _has_star(expr):
            return None
        qn = self.ctx.qualname(expr.func)
        if qn is not None:
            return self._f64_made(expr, qn)
        if not isinstance(expr.func, cst.Attribute):
            return None
        return self._f64_method(expr, expr.func.attr.value, expr.func.value, seen)

    def _f64_method(self, call: cst.Call, method: str, receiver: cst.BaseExpression,
                    seen: frozenset[str]) -> str | None:
        if method == devices.FLOAT64_METHOD and not call.args:
            return self._short(call) or ".double()"
        if method == devices.MOVE_METHOD:
            device, dtype = self._move_args(call)
            if dtype is not None:
                return "torch.float64" if self._f64_dtype(dtype) else None
            if device is None or self._device_types(device, _NONE) is None:
                return None  # .to(other_tensor) takes the other tensor's dtype
            return self._f64_tensor(receiver, seen)
        if method in devices.DTYPE_KEEPING_METHODS or method == devices.CPU_METHOD:
            return self._f64_tensor(receiver, seen)
        return None

    def _f64_made(self, call: cst.Call, qn: str) -> str | None:
        """A torch call that makes a float64 tensor."""
        if qn in devices.FLOAT64_TENSOR_TYPES:
            return qn
        if not qn.startswith("torch."):
            return None
        name = qn[len("torch."):]
        dtype = _keyword(call, devices.DTYPE_KEYWORD)
        if dtype is not None:
            return "dtype=torch.float64" if name in devices.FACTORIES and self._f64_dtype(dtype) else None
        data = call.args[0].value if call.args and call.args[0].keyword is None else None
        if name in devices.FROM_DATA_FACTORIES and data is not None:
            why = self._np_f64(data)
            if why:
                return f"NumPy float64: {why}"
        if self._default_float(call, name):
            return "default dtype float64"
        return None

    def _np_f64(self, expr: cst.BaseExpression, seen: frozenset[str] = _NONE) -> str | None:
        """Why ``expr`` is a float64 NumPy array, or None."""
        if isinstance(expr, cst.Name):
            return self._name_reason(expr, seen, self._np_f64)
        if isinstance(expr, cst.BinaryOperation):
            left, right = self._operand(expr.left, seen, self._np_f64), self._operand(expr.right, seen, self._np_f64)
            return None if left is None or right is None else left or right or None
        if isinstance(expr, cst.Subscript) or (isinstance(expr, cst.Attribute) and expr.attr.value == "T"):
            return self._np_f64(expr.value, seen)
        if isinstance(expr, cst.UnaryOperation):
            return self._np_f64(expr.expression, seen)
        if not isinstance(expr, cst.Call) or _has_star(expr):
            return None
        qn = self.ctx.qualname(expr.func)
        if qn is not None:
            return self._np_made(expr, qn, seen)
        if not isinstance(expr.func, cst.Attribute):
            return None
        method = expr.func.attr.value
        if method == devices.NUMPY_CAST_METHOD and len(expr.args) == 1 and expr.args[0].keyword is None:
            return self._short(expr) or ".astype(float64)" if self._np_f64_dtype(expr.args[0].value) else None
        if method in devices.NUMPY_DTYPE_KEEPING_METHODS:
            return self._np_f64(expr.func.value, seen)
        return None

    def _np_made(self, call: cst.Call, qn: str, seen: frozenset[str]) -> str | None:
        """A NumPy function that makes a float64 array."""
        if qn not in devices.NUMPY_DTYPE_FUNCS | devices.NUMPY_FLOAT_UFUNCS:
            return None
        shown = self._short(call) or qn
        dtype = _keyword(call, devices.DTYPE_KEYWORD)
        if dtype is not None:
            return shown if self._np_f64_dtype(dtype) else None
        if qn in devices.NUMPY_FLOAT64_FUNCS:
            return shown
        if qn in devices.NUMPY_FLOAT_UFUNCS and len(call.args) == 1:
            return self._np_f64(call.args[0].value, seen)  # "" when the argument is the name being judged
        if qn in devices.NUMPY_ARRAY_FUNCS and call.args and _float_literal(call.args[0].value):
            return shown
        return None

    def _operand(self, expr: cst.BaseExpression, seen: frozenset[str],
                 judge: Callable[[cst.BaseExpression, frozenset[str]], str | None]) -> str | None:
        """An operand of arithmetic on a float64 array or tensor: its reason, "" for a number, None otherwise."""
        if _number_literal(expr) or self.ctx.qualname(expr) in devices.NUMPY_FLOAT_CONSTANTS:
            return _CYCLE
        return judge(expr, seen)

    def _np_f64_dtype(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            return string_value(expr) in devices.NUMPY_FLOAT64_STRINGS
        if isinstance(expr, cst.Name) and expr.value == "float":
            return self.table.resolve(expr, "float") is None  # the builtin
        return self.ctx.qualname(expr) in devices.NUMPY_FLOAT64_DTYPES

    def _on_mps(self, expr: cst.BaseExpression, seen: frozenset[str]) -> bool:
        """Is ``expr`` a tensor made on (or moved to) the mps device?"""
        if isinstance(expr, cst.Name):
            return bool(self._name_reason(expr, seen, lambda v, s: "mps" if self._on_mps(v, s) else None))
        if isinstance(expr, cst.Subscript):
            return self._on_mps(expr.value, seen)
        if not isinstance(expr, cst.Call) or _has_star(expr):
            return False
        qn = self.ctx.qualname(expr.func)
        if qn is not None:
            device = _keyword(expr, devices.DEVICE_KEYWORD)
            return (qn.startswith("torch.") and qn[len("torch."):] in devices.FACTORIES and device is not None
                    and self._mps(device, expr))
        if not isinstance(expr.func, cst.Attribute):
            return False
        method = expr.func.attr.value
        if method == devices.MOVE_METHOD:
            device, _ = self._move_args(expr)
            return self._mps(device, expr) if device is not None else self._on_mps(expr.func.value, seen)
        if method in devices.DTYPE_KEEPING_METHODS or method in ("float", "half", "bfloat16"):
            return self._on_mps(expr.func.value, seen)
        return False

    # --- the default dtype ------------------------------------------------------------------------------
    def _default_float64(self) -> cst.CSTNode | None:
        """The module-level ``torch.set_default_dtype(torch.float64)`` statement, when it is the file's only
        call of ``set_default_dtype``."""
        calls = [c for c in self.ctx.nodes(cst.Call) if self.ctx.qualname(c.func) == devices.DEFAULT_DTYPE_SETTER]
        if len(calls) != 1 or len(calls[0].args) != 1 or not self._f64_dtype(calls[0].args[0].value):
            return None
        stmt = self.ctx.parent(self.ctx.parent(calls[0]))  # Call -> Expr -> SimpleStatementLine
        if not isinstance(stmt, cst.SimpleStatementLine) or self.ctx.parent(stmt) is not self.ctx.module:
            return None
        return stmt

    def _default_float(self, call: cst.Call, name: str) -> bool:
        """Does ``torch.<name>(...)`` (no dtype=) make a tensor of the default float dtype, and is that float64
        where it runs?"""
        if self.default_f64 is None or _keyword(call, devices.DTYPE_KEYWORD) is not None:
            return False
        if name in devices.INFERRING_FACTORIES:
            data = [a.value for a in call.args if a.keyword is None]
            if not data or not any(_float_literal(d) for d in data):
                return False
        elif name not in devices.DEFAULT_FLOAT_FACTORIES:
            return False
        if self.ctx.enclosing_function(call) is not None:
            return True
        body: list[cst.CSTNode] = list(self.ctx.module.body)
        top = next((a for a in [call, *self.ctx.ancestors(call)] if self.ctx.parent(a) is self.ctx.module), None)
        return top is not None and top in body and body.index(top) > body.index(self.default_f64)

    # --- fixes and messages -----------------------------------------------------------------------------
    @staticmethod
    def _fix(edits: list[Edit]) -> Fix:
        return Fix(tuple(edits), Applicability.UNSAFE, "Use float32 (MPS has no float64)")

    def _dtype_fix(self, dtype: cst.BaseExpression) -> Fix | None:
        """``torch.float64`` / ``torch.double`` written at the site becomes ``torch.float32``."""
        if not isinstance(dtype, cst.Attribute) or self.ctx.qualname(dtype) not in devices.FLOAT64_DTYPES:
            return None
        found = torch_name(self.ctx, dtype)
        if found is None:
            return None
        return self._fix([*found[1], replace_token(self.ctx, dtype, f"{found[0]}.float32")])

    def _add_dtype_fix(self, call: cst.Call) -> Fix | None:
        """``dtype=torch.float32`` after the call's last argument."""
        found = torch_name(self.ctx, call)
        if found is None or not call.args:
            return None
        return self._fix([*found[1], insert_after(self.ctx, call.args[-1].value, f", dtype={found[0]}.float32")])

    def _receiver_fix(self, receiver: cst.BaseExpression) -> Fix | None:
        """``.double()`` of the receiver becomes ``.float()``; otherwise ``.float()`` after the receiver."""
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) \
                and receiver.func.attr.value == devices.FLOAT64_METHOD and not receiver.args:
            return self._fix([replace_token(self.ctx, receiver.func.attr, devices.FLOAT32_METHOD)])
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) \
                and receiver.func.attr.value == devices.MOVE_METHOD:
            return None  # x.to(torch.float64).to(mps): the dtype is spelled inside; left to the author
        return self._fix([insert_after(self.ctx, receiver, f".{devices.FLOAT32_METHOD}()")])

    def _short(self, node: cst.CSTNode) -> str | None:
        code = self.ctx.code(node)
        return f"`{code}`" if len(code) <= _SHOWN and "\n" not in code else None

    def _shown(self, call: cst.Call) -> str:
        short = self._short(call)
        if short is not None:
            return short
        func = self.ctx.code(call.func)
        return f"`{func}(...)`" if len(func) <= _SHOWN and "\n" not in func else "this call"


_ERROR = "TypeError: Cannot convert a MPS Tensor to float64 dtype"


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _has_star(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


def _float_literal(expr: cst.BaseExpression) -> bool:
    """A float literal, or a (nested) list or tuple of number literals with at least one float in it."""
    if isinstance(expr, cst.Float):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _float_literal(expr.expression)
    if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements:
        values = [el.value for el in expr.elements]
        return all(_number_literal(v) for v in values) and any(_float_literal(v) for v in values)
    return False


def _number_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _number_literal(expr.expression)
    if isinstance(expr, (cst.List, cst.Tuple)):
        return bool(expr.elements) and all(_number_literal(el.value) for el in expr.elements)
    return False


def _string_device_type(expr: cst.SimpleString | cst.ConcatenatedString) -> frozenset[str] | None:
    value = string_value(expr)
    if value is None:
        return None
    try:
        return frozenset({devices.parse_device(value).type})
    except devices.InvalidDeviceString:
        return None
