"""DEV002: .numpy() on a tensor that may require grad or live off the CPU."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from devlint.analysis import test_module
from devlint.context import Context
from devlint.diagnostics import Applicability, Evidence, Finding, Fix, FixAvailability
from devlint.lazy import LazyModule
from devlint.provenance import called_only_without_grad, provenance
from devlint.rules.base import Invalid, Rule, Valid, insert_after
from devlint.screen import AstIndex

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

_GRAD_ERROR = "\"Can't call numpy() on Tensor that requires grad\""
_GPU_ERROR = '"can\'t convert cuda:0 device type tensor to numpy"'


@dataclass(frozen=True)
class NumpyEvidence(Evidence):
    """What the tensor may be (``grad``, ``gpu``) and what the fix inserts before ``.numpy()``."""

    grad: bool
    gpu: bool
    insert: str


class NumpyNeedsDetachCpu(Rule):
    code = "DEV002"
    name = "numpy-needs-detach-cpu"
    summary = ".numpy() on a tensor that may require grad or live on a GPU, without .detach()/.cpu()."
    fix_availability = FixAvailability.SOMETIMES
    evidence_type = NumpyEvidence
    triggers = re.compile(rb"\.[\s\\]*numpy\b")  # an attribute .numpy (whitespace and line joins allowed)

    doc_what = '''
Finds `.numpy()` on a torch tensor that, by the evidence in the code, may require grad or live off the
CPU: created with `requires_grad=True` or as an `nn.Parameter`; the output of a module or model call (also
a module's method calling the module itself, `self(image)` or `self.forward(image)`; or arithmetic on such
values) outside `torch.no_grad()` / `torch.inference_mode()`; created with a
`device=` that is not literally the CPU; moved with `.cuda()` or `.to(device)`; and values derived from
those (indexing, arithmetic, tensor methods).

Values are followed across functions and modules of the linted tree: what a function or method returns
(`out = self.predict(x)`, a helper imported from another module of the project, a method inherited from a
direct base class such as a `to_var()` mixin), attributes set in `__init__` and used in another method
(`self.model = Net().cuda()`), a module built in another method (`self.net = Net()` in `fit()`), what a
module's other methods compute from a GPU input (`self.net.energy(z)`), what the file's calls pass to a helper
of the file (`show(model(x))` makes `t.numpy()` in `def show(t)` a finding; unsafe fix, other callers may
pass other objects) and, for a function of a module's top level, what the calls in the project's other files
pass too (an eval script that moves its videos to the device before `calculate_psnr(real, fake)` of a metrics
module; a helper of the file that only reshapes its one argument, `x = x.permute(...)`, returns it on its
device), the tensors of a moved module's
`state_dict()`, and per branch (`out = out.cpu() if use_cuda else out` is on the CPU either way). The
no-accelerator branch of a device check (`else:` of `if device == "cuda":`, the code after
`if x.is_cuda: return ...`, the body of `if self.device == _CPU_DEVICE:` where every assignment of the file binds
`_CPU_DEVICE = torch.device("cpu")`) is the CPU path: no GPU finding there.

Not reported: values already passed through `.detach()` and `.cpu()` (in either order; `.to("cpu")` and
`.to(cpu_device)`, a name or attribute every assignment of the file binds to the CPU, move as `.cpu()` does; so
does one the file never assigns that is named for the CPU, `self._cpu_device` of a base class),
`.numpy(force=True)`, plain CPU tensors (`torch.tensor([1, 2]).numpy()`), a `.numpy()` inside `torch.no_grad()` /
`torch.inference_mode()` on a tensor only suspected of grad (torch 2.13 lets it through there; only a GPU tensor
fails), likewise after a top-level `torch.set_grad_enabled(False)` that turns autograd off for a script's run (its
functions and what follows it; not when the file turns grad on again anywhere: `torch.enable_grad()`,
`set_grad_enabled(True)`), the output of a module class of the project whose `forward` returns only what it made
under `torch.no_grad()` (a frozen wrapper: `with torch.no_grad(): flow = self.raft(a, b)` then `return
flow.view(...)`) or is decorated with `@torch.no_grad()` (a post-processor handed a model's output: nothing it
returns requires grad), one that holds no parameter, buffer or submodule (a wrapper of a custom autograd function:
checked on torch 2.13, its output on a plain input does not require grad), or one whose `__init__` freezes its
parameters (pytorch-fid's InceptionV3: `for param in self.parameters(): param.requires_grad = requires_grad`, the
value `False` or a parameter defaulting to `False` that the construction does not pass); grad can then come from
its inputs only), the outputs of a tokenizer, processor or feature extractor loaded with `from_pretrained` (token
ids and pixel values: it holds no parameters), casts (`.to(img.dtype)`, `.to(torch.float16)`, `.to(dtype)` of a
variable named for a dtype: no move), integer results (`.argmax()`, `torch.argmax(q, dim=1)`, `.to(torch.uint8)`,
the indices of `_, pred = torch.max(out, 1)`; not `.sign()` or `torch.unique`, whose results still require grad on
torch 2.13), the branch of `x.numpy() if not use_cuda else x.cpu().numpy()` taken without CUDA, objects that are
not torch tensors (TensorFlow's `.numpy()`, NumPy arrays) and receivers of unknown type, such as function
parameters with no evidence: precision beats recall here.

Whether a call's output requires grad is not known, so only its device is reported, when what is called is an
object no class call of the code built (`pickle.load(f).to(device)`, `torch.hub.load(...)`: a pickled detector
with frozen weights, a predictor whose forward runs under `torch.no_grad()`), or an object of a project class
that is no module (no base class, or a base named `...Pipeline`: a diffusers `DiffusionPipeline` is no
`nn.Module`, and its pipelines' `__call__` run under `torch.no_grad()`). A suspicion of grad alone is not reported
in a test module (`test_*.py`, `*_test.py`, `conftest.py`, a file right in `tests/`: its suite runs it on every
machine, the CPU included, so a grad crash fails there at once), nor in a function that the linted tree calls
only under `torch.no_grad()` / `torch.inference_mode()` (drqv2's `agent.act(obs)`: every call of that name, on
whatever object, is inside such a block or a function decorated with one), nor in the `validation_step`,
`test_step` or `predict_step` of a LightningModule (its base, or a base of the project's up to three classes up,
is named `...LightningModule`) that the tree does not call outside no_grad: Lightning's Trainer runs its
evaluation loops under `torch.no_grad()` / `torch.inference_mode()` (fastMRI's `UnetModule.test_step`).
'''
    doc_why = '''
NumPy arrays share memory with CPU tensors and know nothing of autograd, so torch refuses:
`RuntimeError: Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.`
for a tensor in the autograd graph, and
`TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.`
for a tensor on a GPU. Code that "works" on a CPU laptop in `no_grad` breaks on the GPU server, and the
other way round.
'''
    doc_use_instead = '''
Detach from the autograd graph and copy to host memory before `.numpy()`. The autofix inserts what the
call needs: `.detach()`, `.cpu()` or both (or use `.numpy(force=True)`).
'''
    doc_fix_safety = '''
Safe: `.detach()` and `.cpu()` return the same values (cut from the autograd graph, copied to host
memory when on a GPU), so code that worked keeps its results and code that raised now runs. The fix is
made to work, not to mirror the evidence: it inserts `.detach()` unless the tensor is proven not to
require grad (made by a torch factory without `requires_grad=True`, detached, computed under
`torch.no_grad()`), and `.cpu()` unless it is proven to live on the CPU (made without a device, or moved
there); an output of a model of unknown origin gets both. It is applied only to a value proven to be a
torch tensor (made by torch, an output of a torch module or a transformers PyTorch model, or moved with
`.to()`/`.cuda()`); TensorFlow, JAX and NumPy values are never touched, and a finding on a receiver that
is not proven a torch tensor comes without a fix.
'''
    doc_known_problems = '''
A tensor passed in as a parameter of a function nothing in the linted tree calls is of unknown provenance and not
reported, nor one that only its caller's inputs put on a GPU; the calls of a method are read in its own file
only, those of a function of a module's top level in the whole project. A library function its own code calls
only under `torch.no_grad()` is not reported for grad, though its users may call it with grad on. A branch on
`x.requires_grad` settles grad for `x` (the branch where it is false needs no `.detach()`), but a `.numpy()`
guarded by a runtime check of `is_cuda` is reported when the evidence says it may need `.cpu()`.
'''
    doc_options = '''
None of its own: `select`, `ignore`, `per-file-ignores` and `# noqa: DEV002` apply as for every rule.
'''
    doc_references = '''
- [torch.Tensor.numpy](https://pytorch.org/docs/stable/generated/torch.Tensor.numpy.html)
- [torch.Tensor.detach](https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html)
- [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
'''
    doc_notebooks = '''
Notebooks (`.ipynb`) are one module in cell order: a model moved to the GPU in one cell and a `.numpy()`
on its output in a later cell is reported at the later cell (`nb.ipynb:cell 7:3:5`). Outputs are never
read; `--fix` rewrites only the changed cells' sources.
'''

    VALID = (
        Valid("import torch\nx = torch.tensor([1, 2])\ny = x.numpy()\n"),
        Valid("import torch\nw = torch.ones(2, requires_grad=True)\ny = w.detach().cpu().numpy()\n"),
        Valid("import torch\nm = torch.nn.Linear(2, 2)\nwith torch.no_grad():\n    y = m(torch.ones(2)).numpy()\n"),
        Valid("import torch\nw = torch.ones(2, requires_grad=True).cuda()\ny = w.numpy(force=True)\n"),
        Valid("import torch\nw = torch.ones(2, requires_grad=True).cuda()\n@torch.no_grad()\ndef show():\n"
              "    print(w.cpu().numpy())\n"),  # under no_grad torch lets a tensor that requires grad through
        Valid("import torch\nimport tensorflow as tf\ny = tf.constant([1.0]).numpy()\n"),
        Valid("import torch\ndef f(t):\n    return t.numpy()\n"),
        Valid("import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
              "x = torch.ones(2).to(device)\nif device == 'cuda':\n    y = x.cpu().numpy()\n"
              "else:\n    y = x.numpy()\n"),
    )
    INVALID = (
        Invalid(
            "import torch\n\nmodel = torch.nn.Linear(4, 2).to(device)\npreds = model(x).numpy()\n",
            fixed="import torch\n\nmodel = torch.nn.Linear(4, 2).to(device)\npreds = model(x).detach().cpu().numpy()\n",
            doc=True,
        ),
        Invalid("import torch\nw = torch.ones(2, requires_grad=True)\ny = w.numpy()\n",
                fixed="import torch\nw = torch.ones(2, requires_grad=True)\ny = w.detach().numpy()\n"),
        Invalid("import torch\nw = torch.ones(2, requires_grad=True)\ny = w.cpu().numpy()\n",  # .cpu() keeps grad
                fixed="import torch\nw = torch.ones(2, requires_grad=True)\ny = w.cpu().detach().numpy()\n"),
        Invalid("import torch\nt = torch.zeros(3).cuda()\ny = t.numpy()\n",
                fixed="import torch\nt = torch.zeros(3).cuda()\ny = t.cpu().numpy()\n"),
        Invalid("import torch as T\np = T.nn.Parameter(T.zeros(2))\ny = (p * 2).numpy()\n",
                fixed="import torch as T\np = T.nn.Parameter(T.zeros(2))\ny = (p * 2).detach().numpy()\n"),
        Invalid("import torch\nclass Utils:\n    def to_var(self, t):\n        return t.to(self.device)\n"
                "class Detector(Utils):\n    def predict(self, x):\n"
                "        with torch.no_grad():\n            return torch.relu(self.to_var(x)).numpy()\n",
                fixed="import torch\nclass Utils:\n    def to_var(self, t):\n        return t.to(self.device)\n"
                      "class Detector(Utils):\n    def predict(self, x):\n"
                      "        with torch.no_grad():\n            return torch.relu(self.to_var(x)).cpu().numpy()\n"),
        Invalid("import torch\ndef show(t):\n    print(t.numpy())\ndef main(x):\n"
                "    show(torch.nn.Linear(2, 2)(x))\n"),
        Invalid("import torch\nclass Runner:\n    def fit(self):\n        self.net = torch.nn.Linear(2, 2)\n"
                "    def predict(self, x):\n        return self.net(x).numpy()\n",
                fixed="import torch\nclass Runner:\n    def fit(self):\n        self.net = torch.nn.Linear(2, 2)\n"
                      "    def predict(self, x):\n        return self.net(x).detach().cpu().numpy()\n"),
        Invalid("import torch\nfrom mypkg import Net\nnet = Net().to('cpu')\ny = net(torch.ones(2)).numpy()\n",
                fixed="import torch\nfrom mypkg import Net\nnet = Net().to('cpu')\n"
                      "y = net(torch.ones(2)).detach().numpy()\n"),
    )

    def screen(self, index: AstIndex) -> bool:
        return index.imports_torch and index.numpy_with_evidence()

    def check(self, ctx: Context) -> Iterable[Finding]:
        if not ctx.imports_torch:
            return
        for call, val in provenance(ctx).numpy_receivers.items():
            if not (val.grad or val.gpu):
                continue
            if not val.gpu and (test_module(ctx.path) or called_only_without_grad(ctx, call)):
                # grad only: a test module's suite runs it on every machine (a grad crash fails there at
                # once, CPU included); a function the tree calls only under torch.no_grad() gets no graph
                continue
            func = call.func
            assert isinstance(func, cst.Attribute)
            problems = []
            if val.grad:
                problems.append(f"may require grad ({val.grad}), which raises {_GRAD_ERROR}")
            if val.gpu:
                problems.append(f"may be on a GPU ({val.gpu}), which raises {_GPU_ERROR}")
            # the fix makes the call work: .detach() unless the tensor is proven grad-free, .cpu() unless it
            # is proven on the CPU; and only on what is proven to be a torch tensor
            insert = ("" if val.nograd else ".detach()") + ("" if val.cpu else ".cpu()")
            message = f".numpy() on a tensor that {' and '.join(problems)}; call {insert} first"
            fix = None
            if val.torch:
                fix = Fix((insert_after(ctx, func.value, insert),), Applicability.SAFE, f"Insert {insert}")
            yield self.finding(ctx, call, message, fix,
                               evidence=NumpyEvidence(grad=bool(val.grad), gpu=bool(val.gpu), insert=insert))
