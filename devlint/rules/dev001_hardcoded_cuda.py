"""DEV001: a CUDA device chosen with no fallback."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Iterable


from devlint.analysis import device_uses, guards, parameter_used_as_device, string_value
from devlint.bindings import device_name_at
from devlint.context import Context
from devlint.devicestr import InvalidDeviceString, parse_device
from devlint.lazy import LazyModule
from devlint.rules.base import Applicability, Finding, Fix, Probe, Rule, replace_token
from devlint.rules.fixes import fallback_expr, needs_parens, paren_call_insert, preferred_quote, quote_at
from devlint.screen import AstIndex, dotted

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

_ERROR = '"Torch not compiled with CUDA enabled"'
_EXPECT = r"Torch not compiled with CUDA enabled|Cannot access accelerator device when none is available|No CUDA GPUs are available|Found no NVIDIA driver|CUDA driver|no kernel image|invalid device ordinal"
_CUDA_KWARGS = frozenset({"device", "non_blocking", "memory_format"})


def _is_cuda_device(value: str) -> bool:
    """A valid CUDA device string ("cuda", "cuda:1"); an invalid one is DEV003's business."""
    if not value.startswith("cuda"):
        return False
    try:
        return parse_device(value).type == "cuda"
    except InvalidDeviceString:
        return False


class HardcodedCuda(Rule):
    code = "DEV001"
    name = "hard-coded-cuda"
    summary = "A CUDA device is chosen with no torch.cuda.is_available() fallback."
    fix_availability = "sometimes"
    # a literal starting "cuda", or a .cuda() call (also `.cuda ()`, `(x.cuda)()`, a comment or line join before
    # the parenthesis)
    triggers = re.compile(rb"[\"']cuda|cuda\s*[()\\#]")
    doc = '''
## What it catches
A CUDA device chosen unconditionally: a `"cuda"` / `"cuda:N"` string used as a device (assigned to a
variable that is used as a device, passed as `device=`, to `.to(...)` or to `torch.device(...)`, an
`argparse` `--device` default, a `"device"` config entry, a `device=` parameter default that the
function uses as a device or passes on), and `.cuda()` calls.

Not reported: device-agnostic code — a conditional expression that tests availability
(`"cuda" if torch.cuda.is_available() else "cpu"`, the cuda/mps/cpu chain), code inside
`if torch.cuda.is_available():`, `if x.is_cuda:`, `if x.device.type == "cuda":` or after an early exit
when CUDA is unavailable, guards held in a variable (`use_gpu = torch.cuda.is_available()`), code in
functions marked as GPU-only (a decorator or name that mentions CUDA/GPU), strings in prints, comparisons
and docs, a parameter default the function only compares or hands to a torch query
(`def get_autocast_dtype(device="cuda"): return torch.get_autocast_dtype(device)`), and `device=`
keywords of other libraries (DALI's `device="gpu"`). Files that never import torch are not checked.

## Why it is a bug
The code runs only where CUDA is present. On a laptop, a Mac (`mps`) or a CPU-only CI runner it crashes
at the first CUDA tensor with `AssertionError: Torch not compiled with CUDA enabled` (a CPU build of
torch) or `RuntimeError: Found no NVIDIA driver on your system` (a CUDA build without a GPU).

## Example
```python
import torch

device = "cuda"
model = torch.nn.Linear(4, 2).cuda()
x = torch.zeros(8, 4, device="cuda")
```

## Fix
Choose the device once, with a fallback, and move everything with `.to(device)`:
```python
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(4, 2).to(device)
x = torch.zeros(8, 4, device=device)
```
The autofix does exactly this: a device string becomes `"cuda" if torch.cuda.is_available() else "cpu"`
(with an `"mps"` branch when the file already uses mps); `.cuda()` becomes `.to(device)` when a device
variable is in scope, else `.to("cuda" if torch.cuda.is_available() else "cpu")`; `device="cuda"`
becomes `device=device` when a device variable is in scope. These change where code runs, so they are
unsafe fixes: apply them with `--fix --unsafe-fixes`.

## Fix safety
Unsafe: on a machine without CUDA the fixed code runs on the CPU (or mps) instead of stopping, which is
the point, but it is a change of behaviour. What the fix writes is checked to run where it lands:
- It names torch only as the file binds it at that place (`torch`, or the alias from `import torch as
  T`). When the file imports only a part of torch at its top (`import torch.nn as nn`), the fix adds
  `import torch` (torch is loaded anyway). When torch is imported only under `if TYPE_CHECKING:` or only
  inside another function, or a parameter or local named `torch` shadows it, there is no fix.
- It reuses a device variable (`device`, `DEVICE`, `dev`, ..., `self.device`) only when every binding of
  it in its scope is a device (a device string, `torch.device(...)`, `x.device`, a conditional of those, a
  function of this file that only returns devices, a `device=None` parameter resolved with `if device is
  None: device = ...`, a required parameter the function uses as a device) and one of them runs before
  the fix on every path. A loop variable, a non-device default, a binding in one branch or only later, a
  global shadowed by a local, or a `self.device` never set are not reused: the inline expression is
  written instead.
- Inside an f-string it uses the quote the f-string does not (Python 3.10 and 3.11 cannot nest the same
  quote); with both taken there is no fix. A conditional expression is parenthesised where it would
  otherwise bind differently (`args.device or "cuda"`). Only the `cuda` name and the device argument are
  rewritten, so comments inside the parentheses stay.
'''

    def screen(self, index: AstIndex) -> bool:
        if not index.imports_torch:
            return False
        if any(_is_cuda_device(value) for value, _ in index.device_strings()):
            return True
        for call in index.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr == "cuda" and not index.imported(dotted(func) or "") \
                    and not any(k.arg is not None and k.arg not in _CUDA_KWARGS for k in call.keywords):
                return True
        return False

    def check(self, ctx: Context) -> Iterable[Finding]:
        if not ctx.imports_torch:
            return
        uses = device_uses(ctx)
        guard = guards(ctx)
        for node in ctx.nodes(cst.SimpleString):
            value = string_value(node)
            if value is None or not _is_cuda_device(value):
                continue
            use = uses.use_of(node)
            if use is None or guard.is_guarded(node):
                continue
            if use.kind == "default" and not parameter_used_as_device(ctx, ctx.parent(use.expr)):
                continue  # def f(device="cuda"): ... that never puts a tensor there
            yield self.finding(
                ctx, node,
                f'Hard-coded device "{value}" crashes without a GPU ({_ERROR}); '
                f'fall back with "{value}" if torch.cuda.is_available() else "cpu"',
                self._fix_string(ctx, node, value, use.kind),
                evidence={"device": value},
            )
        for call in ctx.nodes(cst.Call):
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
                continue
            if ctx.qualname(func) is not None or guard.is_guarded(call):
                continue  # torch.cuda is a module, not a .cuda() method call
            if any(a.keyword is not None and a.keyword.value not in _CUDA_KWARGS for a in call.args):
                continue  # not torch's Tensor/Module.cuda(device, non_blocking, memory_format)
            yield self.finding(
                ctx, call,
                f".cuda() crashes without a GPU ({_ERROR}); use .to(device) with a device chosen by "
                f"torch.cuda.is_available()",
                self._fix_cuda_call(ctx, call),
                evidence={"cuda_args": "".join(ctx.code(a) for a in call.args)},
            )

    EVIDENCE = ({"device": "cuda"}, {"device": "cuda:0"}, {"cuda_args": ""})

    @classmethod
    def probe(cls, evidence: dict) -> Probe:
        fallback = '"cuda" if torch.cuda.is_available() else "cpu"'
        if "device" in evidence:
            device = evidence["device"]
            fixed = fallback.replace('"cuda"', repr(device), 1) if device != "cuda" else fallback
            return Probe(f"torch.zeros(1, device={device!r})", f"torch.zeros(1, device={fixed})", _EXPECT,
                         note="a tensor created on the hard-coded device")
        args = evidence["cuda_args"]
        index = args.strip().rstrip(",")
        target = fallback if not index.isdigit() else fallback.replace('"cuda"', repr(f"cuda:{index}"), 1)
        return Probe(f"torch.nn.Linear(2, 2).cuda({args})", f"torch.nn.Linear(2, 2).to({target})", _EXPECT,
                     note="a module moved with .cuda()")

    def _fix_string(self, ctx: Context, node: cst.SimpleString, value: str, kind: str) -> Fix | None:
        if kind in ("keyword", "to") and value in ("cuda", "cuda:0"):
            var = device_name_at(ctx, node)
            if var is not None:
                return Fix((replace_token(ctx, node, var),), Applicability.UNSAFE, f"Use `{var}`")
        if node.prefix:
            return None
        found = fallback_expr(ctx, node, value, quote_at(ctx, node, node.quote[0]))
        if found is None:
            return None
        expr, extra = found
        if needs_parens(ctx, node):
            expr = f"({expr})"
        return Fix((*extra, replace_token(ctx, node, expr)), Applicability.UNSAFE, "Fall back to the CPU")

    def _fix_cuda_call(self, ctx: Context, call: cst.Call) -> Fix | None:
        """``.cuda()`` -> ``.to(device)``, touching only the name ``cuda`` and the device argument (a
        comment inside the parentheses stays where it is)."""
        func = call.func
        assert isinstance(func, cst.Attribute)
        index: cst.Integer | None = None
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "non_blocking":
                continue
            if (arg.keyword is None or arg.keyword.value == "device") and isinstance(arg.value, cst.Integer) \
                    and index is None and arg.star == "":
                index = arg.value
            else:
                return None  # a device variable, memory_format=, *args: not rewritten
        if index is None:
            target = device_name_at(ctx, call)
            extra: list = []
            if target is None:
                found = fallback_expr(ctx, call, "cuda", quote_at(ctx, call, preferred_quote(ctx)))
                if found is None:
                    return None
                target, extra = found
            first = call.args[0] if call.args else None
            insert = paren_call_insert(ctx, call, target + (", " if first is not None else ""))
            if insert is None:
                return None
            device_edit = insert
        else:
            found = fallback_expr(ctx, call, f"cuda:{index.value}", quote_at(ctx, call, preferred_quote(ctx)))
            if found is None:
                return None
            target, extra = found
            device_edit = replace_token(ctx, index, target)
        return Fix((*extra, replace_token(ctx, func.attr, "to"), device_edit), Applicability.UNSAFE, "Use .to(device)")
