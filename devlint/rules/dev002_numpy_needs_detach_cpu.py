"""DEV002: .numpy() on a tensor that may require grad or live off the CPU."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable


from devlint.context import Context
from devlint.lazy import LazyModule
from devlint.provenance import provenance
from devlint.rules.base import Applicability, Finding, Fix, Probe, Rule, insert_after
from devlint.screen import AstIndex

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

_GRAD_ERROR = "\"Can't call numpy() on Tensor that requires grad\""
_GPU_ERROR = '"can\'t convert cuda:0 device type tensor to numpy"'


class NumpyNeedsDetachCpu(Rule):
    code = "DEV002"
    name = "numpy-needs-detach-cpu"
    summary = ".numpy() on a tensor that may require grad or live on a GPU, without .detach()/.cpu()."
    fix_availability = "always"
    triggers = re.compile(rb"\.[\s\\]*numpy\b")  # an attribute .numpy (whitespace and line joins allowed)
    doc = '''
## What it catches
`.numpy()` on a torch tensor that, by the evidence in the code, may require grad or live off the CPU:
created with `requires_grad=True` or as an `nn.Parameter`; the output of a module or model call (or
arithmetic on such values) outside `torch.no_grad()` / `torch.inference_mode()`; created with a
`device=` that is not literally the CPU; moved with `.cuda()` or `.to(device)`; and values derived from
those (indexing, arithmetic, tensor methods).

Not reported: values already passed through `.detach()` and `.cpu()` (in either order),
`.numpy(force=True)`, plain CPU tensors (`torch.tensor([1, 2]).numpy()`), objects that are not torch
tensors (TensorFlow's `.numpy()`, NumPy arrays) and receivers of unknown type, such as function
parameters with no evidence: precision beats recall here.

## Why it is a bug
NumPy arrays share memory with CPU tensors and know nothing of autograd, so torch refuses:
`RuntimeError: Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.`
for a tensor in the autograd graph, and
`TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.`
for a tensor on a GPU. Code that "works" on a CPU laptop in `no_grad` breaks on the GPU server, and the
other way round.

## Example
```python
import torch

model = torch.nn.Linear(4, 2).to(device)
preds = model(x).numpy()
```

## Fix
Insert exactly what is missing before `.numpy()`:
```python
preds = model(x).detach().cpu().numpy()
```
The autofix inserts `.detach()`, `.cpu()` or both.

## Fix safety
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

    def screen(self, index: AstIndex) -> bool:
        return index.imports_torch and index.numpy_with_evidence()

    def check(self, ctx: Context) -> Iterable[Finding]:
        if not ctx.imports_torch:
            return
        for call, val in provenance(ctx).numpy_receivers.items():
            if not (val.grad or val.gpu):
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
                               evidence={"grad": bool(val.grad), "gpu": bool(val.gpu), "insert": insert})

    EVIDENCE = (
        {"grad": True, "gpu": False, "insert": ".detach()"},
        {"grad": False, "gpu": True, "insert": ".cpu()"},
        {"grad": True, "gpu": True, "insert": ".detach().cpu()"},
    )

    @classmethod
    def probe(cls, evidence: dict) -> Probe:
        make = f"t = torch.ones(2, requires_grad={bool(evidence['grad'])})"
        move = "\nt = t.to(ACCEL) if ACCEL else t" if evidence["gpu"] else ""
        insert = evidence["insert"]
        what = " and ".join(w for w, on in (("requires grad", evidence["grad"]), ("lives on a GPU", evidence["gpu"])) if on)
        return Probe(
            f"{make}{move}\nt.numpy()",
            f"{make}{move}\nt{insert}.numpy()",
            r"Can't call numpy\(\) on Tensor that requires grad|can't convert \w+(:\d+)? device type tensor to numpy",
            needs=None if evidence["grad"] else "accelerator",
            note=f"a tensor that {what}",
        )
