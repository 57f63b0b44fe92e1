"""DEV003: a device string that torch.device rejects."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable


from devlint.analysis import device_uses, string_value
from devlint.context import Context
from devlint.devicestr import DEVICE_TYPES, InvalidDeviceString, parse_device, suggest
from devlint.lazy import LazyModule
from devlint.rules.base import Applicability, Finding, Fix, Probe, Rule, replace
from devlint.screen import AstIndex

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

_TORCHY = re.compile(r"\s*(" + "|".join(sorted(DEVICE_TYPES, key=len, reverse=True)) + ")", re.IGNORECASE)
# Device types that out-of-tree backends register through PrivateUse1 (torch_npu, torch_mlu, torch_musa,
# torch-neuronx, torch_gcu, ...): torch.device accepts them once the backend is imported.
OUT_OF_TREE = frozenset({"npu", "mlu", "musa", "neuron", "tpu", "gcu", "sdaa", "dipu", "xla", "iluvatar"})
_MULTI = re.compile(r"^(\w+):\s*(\d+(?:\s*,\s*\d+)+)\s*$")


def _short(error: str) -> str:
    if error.startswith("Expected one of"):
        return "Expected one of cpu, cuda, ..., privateuseone device type at start of device string: " + error.rsplit(": ", 1)[1]
    return error


class _Trigger:
    """DEV003's pre-filter: a regex for the syntactic positions, then a check of device-like literals."""

    _positions = re.compile(
        rb"(device\s*\(|\.[\s\\]*to\s*\(|device\s*=|map_location\s*=|[\"']device[\"']\s*:)\s*\(?\s*[rRuU]?[\"']"
        rb"|import[^\n]*\bdevice\b"
    )
    _device_like = re.compile(
        rb"([\"'])(\s*(?i:" + "|".join(sorted(DEVICE_TYPES, key=len, reverse=True)).encode() + rb")[^\"'\n]{0,40})\1"
    )

    def search(self, data: bytes) -> bool:
        if self._positions.search(data):
            return True
        for match in self._device_like.finditer(data):
            if b"\\" in match.group(2):
                return True  # an escape: let the parser decide what the string says
            try:
                parse_device(match.group(2).decode("utf-8", "replace"))
            except InvalidDeviceString:
                return True
        return False


class InvalidDeviceStringRule(Rule):
    code = "DEV003"
    name = "invalid-device-string"
    summary = "A device string that torch.device rejects ('cuda:1,2', 'gpu', 'CUDA', 'cuda0', ...)."
    fix_availability = "sometimes"
    # A string literal right in a syntactic device position (torch.device(...), .to(...), device=,
    # map_location=, a "device" key), a `device` name imported (an alias of torch.device), or an invalid
    # string that starts like a device type (what every other position requires).
    triggers = _Trigger()
    doc = '''
## What it catches
String literals used as a device (`torch.device(...)`, `.to(...)`, `device=`, a device variable, a
`"device"` config entry, an `argparse` `--device` default) that `torch.device` rejects, also inside a
conditional expression: `"cuda:1,2"`, `"gpu"`, `"CUDA"`, `"cuda0"`, `"cuda: 0"`, `"cuda:-1"`,
`"cuda:01"`, `"cuda:"`, `"cuda:0 "`.

The check is torch's own grammar (c10's device-string parser, as in torch 2.13): a device type, one of
`cpu cuda ipu xpu mkldnn opengl opencl ideep hip ve fpga maia xla lazy vulkan mps meta hpu mtia
privateuseone`, case-sensitive, then optionally `:` and a non-negative decimal index with no sign,
space or leading zero. A property test keeps devlint's copy in agreement with the installed
`torch.device`.

`device=` keywords of other libraries are skipped (DALI's `device="gpu"`). A string passed straight to
`torch.device(...)`, `.to(...)` or a torch function's `device=` is checked whatever it says; a string
that reaches a device position through a variable, a `device` parameter default or a `"device"` key, or
goes to an unknown callee, is checked only when it starts like a torch device type, so sentinels such
as `"auto"` pass. Device
types that out-of-tree backends register (`npu`, `mlu`, `musa`, `neuron`, `tpu`, `gcu`, ...) are
accepted: `torch.device` knows them once the backend is imported.

## Why it is a bug
`torch.device` raises at run time, e.g. `RuntimeError: Invalid device string: 'cuda:1,2'` or
`RuntimeError: Expected one of cpu, cuda, ... device type at start of device string: gpu`. A torch device
is one device: `"cuda:1,2"` is not a way to use two GPUs.

## Example
```python
device = torch.device("cuda:1,2" if torch.cuda.is_available() else "cpu")
x = torch.zeros(3, device="CUDA")
```

## Fix
Write the device the way torch spells it: `"CUDA"` → `"cuda"`, `"cuda: 0"` → `"cuda:0"`,
`"cuda0"` → `"cuda:0"`, `"cuda:01"` → `"cuda:1"` (safe fixes: the intent is unambiguous).
`"gpu"` → `"cuda"` and `"cuda:-1"` → `"cuda"` are unsafe fixes. `"cuda:1,2"` has no automatic fix:
to use GPUs 1 and 2, set `CUDA_VISIBLE_DEVICES="1,2"` before importing torch and use `"cuda"`, or wrap
the model in `nn.DataParallel(model, device_ids=[1, 2])`.
'''

    def screen(self, index: AstIndex) -> bool:
        for value, kind in index.device_strings():
            try:
                parse_device(value)
                continue
            except InvalidDeviceString:
                pass
            if re.fullmatch(r"[a-z_]+(:(0|[1-9][0-9]*))?", value) and value.split(":")[0] in OUT_OF_TREE:
                continue
            if _TORCHY.match(value) or (kind == "strict" and index.imports_torch):
                return True
        return False

    def check(self, ctx: Context) -> Iterable[Finding]:
        uses = device_uses(ctx)
        torch_file = ctx.imports_torch
        for node in ctx.nodes(cst.SimpleString):
            value = string_value(node)
            if value is None:
                continue
            try:
                parse_device(value)
                continue
            except InvalidDeviceString as exc:
                error = str(exc)
            if re.fullmatch(r"[a-z_]+(:(0|[1-9][0-9]*))?", value) and value.split(":")[0] in OUT_OF_TREE:
                continue
            use = uses.use_of(node)
            if use is None:
                continue
            loose = not torch_file or use.kind in ("assign", "dict", "default", "argparse") or (
                use.kind == "keyword" and ctx.qualname(self._callee(ctx, use.expr)) is None
            )
            if loose and not _TORCHY.match(value):
                continue
            yield self._report(ctx, node, value, error)

    @staticmethod
    def _callee(ctx: Context, expr: cst.CSTNode) -> cst.BaseExpression | None:
        arg = ctx.parent(expr)
        call = ctx.parent(arg) if arg is not None else None
        return call.func if isinstance(call, cst.Call) else None

    def _report(self, ctx: Context, node: cst.SimpleString, value: str, error: str) -> Finding:
        multi = _MULTI.match(value)
        if multi:
            ids = [i.strip() for i in multi.group(2).split(",")]
            message = (
                f'Invalid device string "{value}": torch.device raises "{error}"; a device is one '
                f'{multi.group(1)} device — to use devices {", ".join(ids)} set CUDA_VISIBLE_DEVICES="{",".join(ids)}" '
                f"before importing torch, or nn.DataParallel(model, device_ids=[{', '.join(ids)}])"
            )
            return self.finding(ctx, node, message, evidence={"value": value, "fixed": None})
        suggestion, safe = suggest(value)
        fix = None
        if suggestion is not None:
            quote = node.quote
            fix = Fix(
                (replace(ctx, node, f"{node.prefix}{quote}{suggestion}{quote}"),),
                Applicability.SAFE if safe else Applicability.UNSAFE,
                f'Use "{suggestion}"',
            )
            hint = f'use "{suggestion}"'
        else:
            hint = 'use a device type such as "cuda", "cuda:0", "mps" or "cpu"'
        message = f'Invalid device string "{value}": torch.device raises "{_short(error)}"; {hint}'
        return self.finding(ctx, node, message, fix, evidence={"value": value, "fixed": suggestion})

    EVIDENCE = (
        {"value": "cuda:1,2", "fixed": None}, {"value": "gpu", "fixed": "cuda"}, {"value": "CUDA", "fixed": "cuda"},
        {"value": "cuda0", "fixed": "cuda:0"}, {"value": "cuda: 0", "fixed": "cuda:0"}, {"value": "cuda:-1", "fixed": "cuda"},
    )

    @classmethod
    def probe(cls, evidence: dict) -> Probe:
        fixed = evidence.get("fixed")
        return Probe(
            f"torch.device({evidence['value']!r})",
            f"torch.device({fixed!r})" if fixed is not None else None,
            r"Invalid device string|Expected one of|Could not parse device index|Device string must not be empty",
            note="torch.device() on the string",
        )
