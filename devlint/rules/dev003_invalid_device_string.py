"""DEV003: a device string that torch.device rejects."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable


from devlint.analysis import DeviceUse, DeviceUses, device_uses, string_value
from devlint.context import Context, dotted_name
from devlint.devicestr import DEVICE_TYPES, InvalidDeviceString, parse_device, suggest
from devlint.lazy import LazyModule
from devlint.rules.base import Applicability, Finding, Fix, Probe, Rule, replace_token
from devlint.screen import AstIndex

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

_TORCHY = re.compile(r"\s*(" + "|".join(sorted(DEVICE_TYPES, key=len, reverse=True)) + ")", re.IGNORECASE)
# Device types that out-of-tree backends register through PrivateUse1 (torch_npu, torch_mlu, torch_musa,
# torch-neuronx, torch_gcu, ...): torch.device accepts them once the backend is imported.
OUT_OF_TREE = frozenset({"npu", "mlu", "musa", "neuron", "tpu", "gcu", "sdaa", "dipu", "xla", "iluvatar"})
# Frameworks with device names of their own, in files that may also import torch.
OTHER_FRAMEWORKS = frozenset({"tensorflow", "keras", "jax", "flax", "openvino", "onnxruntime", "paddle", "mxnet",
                              "tensorrt", "mindspore", "oneflow", "cupy", "tvm", "coremltools"})
_CATCHES = frozenset({"Exception", "BaseException", "RuntimeError"})


def _caught(ctx: Context, node: cst.CSTNode) -> bool:
    """Is ``node`` in the body of a ``try`` whose handler catches torch's RuntimeError?"""
    child = node
    for anc in ctx.ancestors(node):
        if isinstance(anc, cst.Try) and child is anc.body:
            for handler in anc.handlers:
                types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
                for t in types:
                    expr = t.value if isinstance(t, cst.Element) else t
                    if expr is None or (dotted_name(expr) or "").split(".")[-1] in _CATCHES:
                        return True
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        child = anc
    return False


_MULTI = re.compile(r"^(\w+):\s*(\d+(?:\s*,\s*\d+)+)\s*$")


def _short(error: str) -> str:
    if error.startswith("Expected one of"):
        return "Expected one of cpu, cuda, ..., privateuseone device type at start of device string: " + error.rsplit(": ", 1)[1]
    return error


def _parse_error(value: str) -> str | None:
    """torch.device's error for ``value``, or None when it accepts it."""
    try:
        parse_device(value)
    except InvalidDeviceString as exc:
        return str(exc)
    return None


def _rejection(value: str) -> str | None:
    """The error DEV003 reports for ``value``: torch's, unless torch accepts it or it names a device of an
    out-of-tree backend (which torch.device accepts once that backend is imported)."""
    error = _parse_error(value)
    if error is not None and re.fullmatch(r"[a-z_]+(:(0|[1-9][0-9]*))?", value) and value.split(":")[0] in OUT_OF_TREE:
        return None
    return error


def _invalid(content: bytes) -> bool:
    """Does torch.device reject a literal with this content (no escapes)?"""
    return _parse_error(content.decode("utf-8", "replace")) is not None


class _Trigger:
    """DEV003's byte pre-filter. A file passes when it has

    - a string literal right in a syntactic device position (``device(``, ``device=``, ``.to(``,
      ``map_location=``, a ``"device":`` key) that is not a plain valid device string ending the
      expression, or a quoted alternative after ``if``/``else``/``or``/``and`` on such a line;
    - a ``device`` name imported (an alias of torch.device: any string passed to it counts);
    - an invalid string that starts like a device type, right after ``=``, ``:``, ``else``, ``or`` or
      ``and`` (an assignment, a default, a dict value: the positions where only such strings count).

    Separate regexes with literal prefixes: one alternation is ten times slower on large trees.
    """

    _positions = (
        re.compile(rb"device(?:\s*\(|\s*=(?!=)|[\"']\s*:)"),
        re.compile(rb"\.[\s\\]*to\s*\("),
        re.compile(rb"map_location\s*=(?!=)"),
    )
    _literal = re.compile(rb"[\s\\]*\(?[\s\\]*(?:type\s*=\s*)?[rRuU]?([\"'])")
    # the literal's content, then what follows it: on the same line, or first on the next non-blank line
    _content = {q: re.compile(rb"([^" + q + rb"\\\n]*)" + q + rb"[ \t]*(?:#[^\n]*)?(\r?\n\s*)?(\w+|\S?)")
                for q in (b'"', b"'")}
    _ends = frozenset({b"", b",", b")", b"]", b"}", b";"})
    _goes_on = frozenset({b"if", b"else", b"or", b"and"})
    _branch = re.compile(rb"\b(?:if|else|or|and)[\s\\(]*[rRuU]?[\"']")
    _import = re.compile(rb"import[^\n]*\bdevice\b")
    _device_like = re.compile(
        rb"([\"'])(\s*(?i:" + "|".join(sorted(DEVICE_TYPES, key=len, reverse=True)).encode() + rb")[^\"'\n]{0,40})\1"
    )
    _loose_before = re.compile(rb"(?:(?<![=!<>])=|:|\belse|\bor|\band)[\s\\]*\(?[\s\\]*[rRuU]?$")

    def search(self, data: bytes) -> bool:
        if self._import.search(data):
            return True
        for pattern in self._positions:
            for match in pattern.finditer(data):
                if self._position_may_fire(data, match.end()):
                    return True
        for match in self._device_like.finditer(data):
            content = match.group(2)
            if (b"\\" in content or _invalid(content)) and self._loose_before.search(
                    data, max(0, match.start() - 40), match.start()):
                return True
        return False

    def _position_may_fire(self, data: bytes, end: int) -> bool:
        literal = self._literal.match(data, end)
        if literal is None:  # not a literal first: look for a quoted alternative on the line
            eol = data.find(b"\n", end)
            return bool(self._branch.search(data, end, eol if eol >= 0 else len(data)))
        content = self._content[literal.group(1)].match(data, literal.end())
        if content is None:
            return True  # an escape or a line break in the literal: let the parser decide
        follow = content.group(3)
        if content.group(2):  # the line ends after the literal: only a continuation keeps it going
            goes_on = follow in self._goes_on or follow[:1] in (b'"', b"'")
        else:
            goes_on = follow not in self._ends
        return goes_on or _invalid(content.group(1))


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

## Fix safety
The spelling fixes (`"CUDA"` → `"cuda"`, `"cuda: 0"` → `"cuda:0"`, `"cuda0"` → `"cuda:0"`) are safe
where the string certainly reaches torch: `torch.device(...)`, `.to(...)`, the `device=` of a torch API,
or a variable passed to one of those. Elsewhere (a string in a file without torch, a config entry, a
`device=` of an unknown callee) the finding has no fix, because another library may spell its devices
that way (OpenVINO's `"CPU"`, TensorFlow's `"/GPU:0"`). Where the code catches torch's `RuntimeError`
around the call (`try: torch.device(s) except RuntimeError:`), the string may be invalid on purpose: no
fix, and no finding for `torch.device(...)` itself. In files that also import TensorFlow, JAX, OpenVINO,
ONNX Runtime and the like, a string that only may reach a device position is reported only when it is
shown to reach torch. `"gpu"` → `"cuda"` and `"cuda:-1"` → `"cuda"` guess the intent: unsafe.
'''

    def screen(self, index: AstIndex) -> bool:
        for value, kind in index.device_strings():
            if _rejection(value) is None:
                continue
            if _TORCHY.match(value) or (kind == "strict" and index.imports_torch):
                return True
        return False

    def check(self, ctx: Context) -> Iterable[Finding]:
        uses = device_uses(ctx)
        torch_file = ctx.imports_torch
        # a file that also drives another framework ("CPU" is OpenVINO's device, "/GPU:0" TensorFlow's): a
        # string that only may reach a device position counts when it is shown to reach torch
        other = any(m.split(".")[0] in OTHER_FRAMEWORKS for m in ctx.imported_modules)
        for node in ctx.nodes(cst.SimpleString):
            value = string_value(node)
            error = _rejection(value) if value is not None else None
            if error is None:
                continue
            use = uses.use_of(node)
            if use is None:
                continue
            reaches = torch_file and self._reaches_torch(ctx, uses, use)
            loose = not torch_file or use.kind in ("assign", "dict", "default", "argparse") or (
                use.kind == "keyword" and ctx.qualname(self._callee(ctx, use.expr)) is None
            )
            if loose and (not _TORCHY.match(value) or (other and not reaches)):
                continue
            caught = _caught(ctx, node)
            if caught and use.kind == "torch.device":
                continue  # try: torch.device(s) except RuntimeError: -- a validity test, on purpose
            # a fix only where the string certainly reaches torch, and nothing relies on torch rejecting it
            yield self._report(ctx, node, value, error, fixable=reaches and not caught)

    @staticmethod
    def _reaches_torch(ctx: Context, uses: DeviceUses, use: DeviceUse) -> bool:
        """Does the string certainly end up in a torch device API (so that torch's spelling is right)?"""
        if use.kind in ("torch.device", "to"):
            return True
        if use.kind == "keyword":
            arg = ctx.parent(use.expr)
            return isinstance(arg, cst.Arg) and uses.reaches_torch(arg)
        if use.kind == "assign" and use.target is not None:
            return uses.reaches_torch_as(use.target, use.expr)
        return False

    @staticmethod
    def _callee(ctx: Context, expr: cst.CSTNode) -> cst.BaseExpression | None:
        arg = ctx.parent(expr)
        call = ctx.parent(arg) if arg is not None else None
        return call.func if isinstance(call, cst.Call) else None

    def _report(self, ctx: Context, node: cst.SimpleString, value: str, error: str, fixable: bool) -> Finding:
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
        if suggestion is not None and fixable:
            quote = node.quote
            fix = Fix(
                (replace_token(ctx, node, f"{node.prefix}{quote}{suggestion}{quote}"),),
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
