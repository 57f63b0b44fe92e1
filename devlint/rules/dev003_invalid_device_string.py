"""DEV003: a device string that torch.device rejects."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from devlint import devices
from devlint.analysis import DeviceUse, DeviceUses, command_line_options, device_uses
from devlint.context import Context, dotted_name, string_value
from devlint.devices import UseKind
from devlint.diagnostics import Applicability, Evidence, Finding, Fix, FixAvailability
from devlint.lazy import LazyModule
from devlint.rules.base import Invalid, Rule, Valid, replace_token
from devlint.screen import AstIndex
from devlint.templates import Hole, template

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

_MULTI = re.compile(r"^(\w+):\s*(\d+(?:\s*,\s*\d+)+)\s*$")


@dataclass(frozen=True)
class DeviceStringEvidence(Evidence):
    """The rejected string and the fix's spelling of it (None: no fix)."""

    value: str
    fixed: str | None


def _short(error: str) -> str:
    if error.startswith("Expected one of"):
        return ("Expected one of cpu, cuda, ..., privateuseone device type at start of device string: "
                + error.rsplit(": ", 1)[1])
    return error


def _invalid(content: bytes) -> bool:
    """Does torch.device reject a literal with this content (no escapes)?"""
    return not devices.is_valid(content.decode("utf-8", "replace"))


def _caught_types(handler: cst.ExceptHandler) -> list[cst.BaseExpression | None]:
    """What ``handler`` catches: its type, or each element of its tuple (a starred one as it stands); None
    for a bare ``except:``."""
    if not isinstance(handler.type, cst.Tuple):
        return [handler.type]
    types: list[cst.BaseExpression | None] = []
    for t in handler.type.elements:
        if isinstance(t, cst.Element):
            types.append(t.value)
        elif isinstance(t, cst.StarredElement):
            types.append(t)
    return types


def _built_device(ctx: Context, node: cst.CSTNode) -> str | None:
    """How ``node`` builds an invalid device string, or None: ``f"cuda:{ids}"`` where ``ids`` is bound to a
    list or tuple, ``f"cuda:{','.join(...)}"``, ``"cuda:" + ",".join(...)``."""
    if isinstance(node, cst.FormattedString):
        parts = list(node.parts)
        if len(parts) != 2 or not isinstance(parts[0], cst.FormattedStringText) \
                or not isinstance(parts[1], cst.FormattedStringExpression):
            return None
        head, expr = parts[0].value, parts[1].expression
    elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        head_value = string_value(node.left)
        if head_value is None:
            return None
        head, expr = head_value, node.right
    else:
        return None
    kind = head[:-1] if head.endswith(":") else None
    if kind not in devices.DEVICE_TYPES:
        return None
    if _joins_with_commas(expr):
        return f'"{head}" + ",".join(...)'
    if isinstance(expr, cst.Name) and _bound_to_sequence(ctx, expr.value):
        return f'"{head}{{{expr.value}}}" with a list'
    return _from_command_line(ctx, head, expr) if isinstance(node, cst.FormattedString) else None


_ID_LIST = re.compile(r"\d+(?:,\d+)+")  # "0,1,2,3"; not "0, 1 or 2" (alternatives)


def _from_command_line(ctx: Context, head: str, expr: cst.BaseExpression) -> str | None:
    """``f"cuda:{args.device}"`` (or a name only ever bound to ``args.device``) where the option's default
    makes an invalid string (``--device`` defaulting to ``"cuda:0"`` gives ``"cuda:cuda:0"``), or where the
    option's own help offers several ids (``"0 or 0,1,2,3 or cpu"``), which make one string torch rejects."""
    attr = _option_attribute(ctx, expr)
    option = command_line_options(ctx).get(attr) if attr is not None else None
    if option is None or dotted_name(option.keywords.get("type")) == "int":
        return None  # an int option is one id
    default = option.text("default")
    shown = f"{{args.{option.dest}}}"
    if default is not None and not devices.is_valid(head + default):
        return f'"{head}{shown}" with the default "{default}" (which gives "{head}{default}")'
    offered = _ID_LIST.search(option.text("help") or "")
    if offered:
        return f'"{head}{shown}" with several ids (its help offers "{offered.group(0)}")'
    return None


def _option_attribute(ctx: Context, expr: cst.BaseExpression) -> str | None:
    """The attribute name of ``args.<name>``, or of the one value every assignment of a name takes."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        return expr.attr.value
    if not isinstance(expr, cst.Name):
        return None
    values = {ctx.code(a.value) for a in ctx.nodes(cst.Assign) for t in a.targets
              if isinstance(t.target, cst.Name) and t.target.value == expr.value}
    if len(values) != 1:
        return None
    value = next(iter(values))
    parts = value.split(".")
    return parts[1] if len(parts) == 2 and all(p.isidentifier() for p in parts) else None


def _joins_with_commas(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "join" \
        and (string_value(expr.func.value) or "").strip() == ","


def _bound_to_sequence(ctx: Context, name: str) -> bool:
    """Is every assignment of ``name`` in the file a list or tuple literal?"""
    values = [a.value for a in ctx.nodes(cst.Assign) for t in a.targets
              if isinstance(t.target, cst.Name) and t.target.value == name]
    if not values or not all(isinstance(v, (cst.List, cst.Tuple)) for v in values):
        return False
    # bound no other way: a parameter, a loop or comprehension variable, an unpacking, ``+=``, ``as``
    if any(p.name.value == name for p in ctx.nodes(cst.Param)):
        return False
    others = [*(f.target for f in ctx.nodes(cst.For)), *(c.target for c in ctx.nodes(cst.CompFor)),
              *(a.target for a in ctx.nodes(cst.AugAssign)), *(a.target for a in ctx.nodes(cst.AnnAssign)),
              *(n.name for n in ctx.nodes(cst.AsName)), *(n.target for n in ctx.nodes(cst.NamedExpr)),
              *(t.target for a in ctx.nodes(cst.Assign) for t in a.targets if not isinstance(t.target, cst.Name))]
    return not any(name in _names(t) for t in others)


def _names(target: cst.CSTNode) -> set[str]:
    """The plain names a binding target binds (``a``, ``(a, *b)``)."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for e in target.elements for n in _names(e.value)}
    if isinstance(target, cst.StarredElement):
        return _names(target.value)
    return set()


_HEAD = re.compile(r"([A-Za-z_]+):")


def _template_flaw(ctx: Context, parts: list[str | Hole]) -> tuple[str, str] | None:
    """Why the string these parts build is invalid whatever the placeholders hold, and a string they
    may build (for the probe), or None. It must start with ``<device type>:`` in its literal head, so the
    rest is the index, which torch reads as decimal digits only: a literal character that is no digit
    (``"cuda: {}"``, ``"cuda:{},{}"``) or a value that is certainly several ids (a list, a tuple, an
    option that takes several values) makes every string invalid."""
    head = parts[0] if parts else None
    if not isinstance(head, str):
        return None
    match = _HEAD.match(head)
    if match is None or match.group(1) not in devices.DEVICE_TYPES:
        return None
    kind = match.group(1)
    rest: list[str | Hole] = [head[match.end():], *parts[1:]]
    flaw = None
    for part in rest:
        if isinstance(part, str):
            bad = next((ch for ch in part if not (ch.isascii() and ch.isdigit())), None)
            if bad is not None:
                shown = "a space" if bad == " " else f'"{bad}"'
                flaw = f'always has {shown} after "{kind}:"'
                break
        elif part.expr is not None and _several_ids(ctx, part.expr):
            flaw = f"formats a list or tuple ({ctx.code(part.expr)}) after \"{kind}:\""
            break
    if flaw is None:
        return None
    example = "".join(p if isinstance(p, str) else "[0, 1]" if p.expr is not None and _several_ids(ctx, p.expr)
                      else "0" for p in parts)
    return flaw, example if not devices.is_valid(example) else "cuda:1,2"


def _space_fix(ctx: Context, node: cst.CSTNode, parts: list[str | Hole]) -> tuple[Fix | None, str | None]:
    """Remove the spaces right after ``"<type>:"`` in the template's literal head (``'cuda: {}'`` ->
    ``'cuda:{}'``), when nothing else in the template is wrong; and the probe's example of the fixed string."""
    head = parts[0]
    if not isinstance(head, str):
        return None, None
    stripped = re.sub(r"^([A-Za-z_]+:)\s+", r"\1", head)
    fixed_parts = [stripped, *parts[1:]]
    if _template_flaw(ctx, fixed_parts) is not None:
        return None, None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        literal: cst.CSTNode = node.func.value
    elif isinstance(node, cst.BinaryOperation):
        literal = node.left
        while isinstance(literal, cst.BinaryOperation):
            literal = literal.left
    else:
        literal = node
    if not isinstance(literal, (cst.SimpleString, cst.FormattedString)) or getattr(literal, "lpar", None):
        return None, None
    code = ctx.code(literal)
    match = re.match(r"""([A-Za-z]*(?:'{3}|"{3}|'|")[A-Za-z_]+:)[ \t]+""", code)
    if match is None:
        return None, None
    example = "".join(p if isinstance(p, str) else "0" for p in fixed_parts)
    fix = Fix((replace_token(ctx, literal, match.group(1) + code[match.end():]),), Applicability.SAFE,
              "Remove the space after the colon")
    return fix, example if devices.is_valid(example) else None


def _several_ids(ctx: Context, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` certainly a list or tuple (its str() has brackets, never only digits)?"""
    if isinstance(expr, (cst.List, cst.Tuple)):
        return True
    if isinstance(expr, cst.Name) and _bound_to_sequence(ctx, expr.value):
        return True
    if isinstance(expr, cst.Call) and dotted_name(expr.func) == "str" and len(expr.args) == 1 \
            and not expr.args[0].keyword and not expr.args[0].star:
        return _several_ids(ctx, expr.args[0].value)  # str(ids)
    attr = _option_attribute(ctx, expr) if isinstance(expr, cst.Attribute) else None
    option = command_line_options(ctx).get(attr) if attr is not None else None
    if option is None:
        return False
    nargs = option.keywords.get("nargs")
    action = option.text("action")
    many = (nargs is not None and (string_value(nargs) in ("+", "*")
                                    or (isinstance(nargs, cst.Integer) and nargs.evaluated_value >= 1))) \
        or action in ("append", "extend")
    default = option.keywords.get("default")
    # not passed, the option is its default: None ("cuda:None") or a list is still no index
    return many and (default is None or isinstance(default, (cst.List, cst.Tuple))
                     or (isinstance(default, cst.Name) and default.value == "None"))


def _caught(ctx: Context, node: cst.CSTNode) -> bool:
    """Is ``node`` in the body of a ``try`` whose handler catches torch's RuntimeError?"""
    child = node
    for anc in ctx.ancestors(node):
        if isinstance(anc, cst.Try) and child is anc.body:
            for handler in anc.handlers:
                for expr in _caught_types(handler):
                    if expr is None or (dotted_name(expr) or "").split(".")[-1] in devices.DEVICE_STRING_EXCEPTIONS:
                        return True
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        child = anc
    return False


def _torch_own(ctx: Context, use: DeviceUse) -> bool:
    """Does the string go straight to torch itself: ``torch.device(s)``, ``x.to(s)``, the ``device=`` of a
    function of torch (not of a library built on it, which may read the string first)?"""
    if use.kind in (UseKind.TORCH_DEVICE, UseKind.TO):
        return True
    if use.kind is not UseKind.KEYWORD:
        return False
    func = InvalidDeviceStringRule._callee(ctx, use.expr)
    name = ctx.qualname(func) if func is not None else None
    return name is not None and name.split(".")[0] == "torch"


def _mapped_sentinel(ctx: Context, node: cst.CSTNode, value: str, use: DeviceUse) -> bool:
    """Is the variable the string is assigned to compared with that same string in the same function
    (``args.device = "gpu"`` ... ``"cuda" if args.device == "gpu" else "cpu"``)? The code maps its own
    sentinel to a device before torch sees it."""
    if use.kind is not UseKind.ASSIGN or use.target is None:
        return False
    scope: cst.CSTNode = ctx.enclosing_function(node) or ctx.module
    for comparison in ctx.nodes(cst.Comparison):
        if not any(a is scope for a in ctx.ancestors(comparison)):
            continue
        sides = [comparison.left, *(t.comparator for t in comparison.comparisons)]
        if any(dotted_name(side) == use.target for side in sides) and any(
                string_value(side) == value for side in sides):
            return True
    return False


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

    _positions = devices.position_triggers()
    _literal = re.compile(rb"[\s\\]*\(?[\s\\]*(?:type\s*=\s*)?[rRuUfF]{0,2}([\"'])")
    # the literal's content, then what follows it: on the same line, or first on the next non-blank line
    _content: ClassVar[dict[bytes, re.Pattern[bytes]]] = {
        q: re.compile(rb"([^" + q + rb"\\\n]*)" + q + rb"[ \t]*(?:#[^\n]*)?(\r?\n\s*)?(\w+|\S?)")
        for q in (b'"', b"'")
    }
    _ends = frozenset({b"", b",", b")", b"]", b"}", b";"})
    _goes_on = frozenset({b"if", b"else", b"or", b"and"})
    _branch = re.compile(rb"\b(?:if|else|or|and)[\s\\(]*[rRuU]?[\"']")
    _import = re.compile(rb"import[^\n]*\b" + devices.DEVICE_CONSTRUCTOR.rsplit(".", 1)[1].encode() + rb"\b")
    _device_like = re.compile(
        rb"([\"'])(\s*(?i:" + "|".join(sorted(devices.DEVICE_TYPES, key=len, reverse=True)).encode()
        + rb")[^\"'\n]{0,40})\1"
    )
    _loose_before = re.compile(rb"(?:(?<![=!<>])=|:|\belse|\bor|\band)[\s\\]*\(?[\s\\]*[rRuUfF]{0,2}$")

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
    fix_availability = FixAvailability.SOMETIMES
    evidence_type = DeviceStringEvidence
    # A string literal right in a syntactic device position (torch.device(...), .to(...), device=,
    # map_location=, a "device" key), a `device` name imported (an alias of torch.device), or an invalid
    # string that starts like a device type (what every other position requires).
    triggers = _Trigger()

    doc_what = '''
Finds string literals used as a device (`torch.device(...)`, `.to(...)`, `device=`, a device variable, a
`"device"` config entry, an `argparse` `--device` default) that `torch.device` rejects, also inside a
conditional expression: `"cuda:1,2"`, `"gpu"`, `"CUDA"`, `"cuda0"`, `"cuda: 0"`, `"cuda:-1"`,
`"cuda:01"`, `"cuda:"`, `"cuda:0 "`.

The check is torch's own grammar (c10's device-string parser, as in torch 2.13): a device type, one of
`cpu cuda ipu xpu mkldnn opengl opencl ideep hip ve fpga maia xla lazy vulkan mps meta hpu mtia
privateuseone`, case-sensitive, then optionally `:` and a non-negative decimal index with no sign,
space or leading zero. A property test keeps devlint's copy in agreement with the installed
`torch.device`.

Also device strings built from parts that make them invalid: `f"cuda:{gpu_ids}"` with `gpu_ids` a list or
tuple, `"cuda:" + ",".join(...)` (several ids make one string torch rejects), a misspelt default that
reaches torch (`def run(x, device="gpu"): return x.to(device)`), and `f"cuda:{args.device}"` where the
`argparse` option's default makes an invalid string (`default="cuda:0"` gives `"cuda:cuda:0"`) or its help
offers several ids (`help="0 or 0,1,2,3 or cpu"`); an option with `type=int` is one id.

A string built with `str.format`, `%`, `+` or an f-string that starts with a device type and `:` is
reported when every string it can build is invalid, whatever its placeholders hold: a literal character
after the `:` that is no digit (`'cuda: {}'.format(i)`, `"cuda: " + str(i)`, `"cuda:%d,%d" % (a, b)`,
`"cuda:{},{}".format(a, b)`), or a value formatted there that is certainly a list or tuple (a name only
ever bound to one, an `argparse` option with `nargs`/`action="append"` and no scalar default). It counts
in `torch.device(...)`, `.to(...)`, `device=`, or through a variable handed to one of them in the same
function; `"cuda:{}".format(i)`, `"cuda:%d" % i` and `f"cuda:{i}{j}"` may be valid and are not reported.

`device=` keywords of other libraries are skipped (DALI's `device="gpu"`). A string passed straight to
`torch.device(...)`, `.to(...)` or a torch function's `device=` is checked whatever it says; a string
that reaches a device position through a variable, a `device` parameter default or a `"device"` key, or
goes to an unknown callee, is checked only when it starts like a torch device type, so sentinels such
as `"auto"` pass. An empty string is checked only where it goes straight to torch (`torch.device("")`,
`.to("")`, a torch function's `device=""`): libraries built on torch read it as "not set" (timm's
`ModelEma(model, device="")` leaves the copy where the model is, yolov5's `select_device("")` picks one).
A string assigned to a variable that the same function then compares with that very string
(`args.device = "gpu"` ... `torch.device("cuda" if args.device == "gpu" else "cpu")`) is the program's own
sentinel, mapped before torch sees it. Device types that out-of-tree backends register (`npu`, `mlu`, `musa`, `neuron`,
`tpu`, `gcu`, ...) are accepted: `torch.device` knows them once the backend is imported.
'''
    doc_why = '''
`torch.device` raises at run time, e.g. `RuntimeError: Invalid device string: 'cuda:1,2'` or
`RuntimeError: Expected one of cpu, cuda, ... device type at start of device string: gpu`. A torch device
is one device: `"cuda:1,2"` is not a way to use two GPUs.
'''
    doc_use_instead = '''
Write the device the way torch spells it: `"CUDA"` → `"cuda"`, `"cuda: 0"` → `"cuda:0"`, `"cuda0"` →
`"cuda:0"`, `"cuda:01"` → `"cuda:1"`; `"gpu"` → `"cuda"` and `"cuda:-1"` → `"cuda"` guess the intent.
`"cuda:1,2"` has no automatic fix: to use GPUs 1 and 2, set `CUDA_VISIBLE_DEVICES="1,2"` before importing
torch and use `"cuda"`, or wrap the model in `nn.DataParallel(model, device_ids=[1, 2])`.
'''
    doc_fix_safety = '''
The spelling fixes (`"CUDA"` → `"cuda"`, `"cuda: 0"` → `"cuda:0"`, `"cuda0"` → `"cuda:0"`) are safe
where the string certainly reaches torch: `torch.device(...)`, `.to(...)`, the `device=` of a torch API,
or a variable passed to one of those. Elsewhere (a string in a file without torch, a config entry, a
`device=` of an unknown callee) the finding has no fix, because another library may spell its devices
that way (OpenVINO's `"CPU"`, TensorFlow's `"/GPU:0"`). Where the code catches torch's `RuntimeError`
around the call (`try: torch.device(s) except RuntimeError:`), the string may be invalid on purpose: no
fix, and no finding for `torch.device(...)` itself. In files that also import TensorFlow, JAX, OpenVINO,
ONNX Runtime and the like (also through a wrapper package, `from optimum.intel.openvino import ...`), a string
that only may reach a device position is reported only when it is shown to reach torch. `"gpu"` → `"cuda"` and
`"cuda:-1"` → `"cuda"` guess the intent: unsafe.

A built string whose only flaw is the space after the colon (`'cuda: {}'.format(i)`, `f"cuda: {i}"`,
`"cuda: " + str(i)`) gets the same safe fix in its literal head (`'cuda:{}'.format(i)`) where it certainly
reaches torch; other built strings have no automatic fix.
'''
    doc_known_problems = '''
Other strings built at run time (`"cuda:" + str(i)`, values read from a config file or passed in by a
caller) are not checked, nor a built string whose only flaw needs its values (`"cuda:0{}"` is invalid
for every value too, but is not reported). A device type
registered by an out-of-tree backend that devlint does not know is reported until it is added to its list.
A variable compared with its invalid string anywhere in its function is taken as mapped, even where the
comparison only prints something and the string then reaches torch unchanged (missed); an empty
`device=""` handed to a library that passes it on to torch unread is missed too.
'''
    doc_options = '''
None of its own: `select`, `ignore`, `per-file-ignores` and `# noqa: DEV003` apply as for every rule.
'''
    doc_references = '''
- [torch.device](https://pytorch.org/docs/stable/tensor_attributes.html#torch-device)
- [CUDA_VISIBLE_DEVICES](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables)
- [nn.DataParallel](https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html)
'''
    doc_notebooks = '''
Notebooks (`.ipynb`) are checked like scripts, code cells in order as one module; a cell that does not
parse gets its own E999 and the other cells are still checked.
'''

    VALID = (
        Valid('import torch\nx = torch.zeros(1, device="cuda:0" if torch.cuda.is_available() else "cpu")\n'),
        Valid('import torch\nd = torch.device("mps")\ne = torch.device("npu:0")  # an out-of-tree backend\n'),
        Valid('import argparse\nimport torch\np = argparse.ArgumentParser()\n'
              'p.add_argument("--gpu", type=int, default=0, help="one id, not 0,1")\n'
              'args = p.parse_args()\ndevice = torch.device(f"cuda:{args.gpu}")\n'),
        Valid('import torch\ndef valid(s):\n    try:\n        torch.device(s)\n    except RuntimeError:\n'
              '        return False\n'),
        Valid('import torch\ntry:\n    d = torch.device("CUDA")\nexcept RuntimeError:\n    d = torch.device("cpu")\n'),
        Valid('import torch\nimport openvino as ov\ndevice = "CPU"\n'
              'compiled = ov.Core().compile_model(model, device)\n'),
        Valid('import torch\nimport nvidia.dali.fn as fn\nimages = fn.decoders.image(jpegs, device="gpu")\n'),
        Valid('import torch\nmodel_name = "auto"\ndevice_map = "auto"\n'),
    )
    INVALID = (
        Invalid(
            'import torch\n\ndevice = torch.device("cuda:1,2" if torch.cuda.is_available() else "cpu")\n'
            'x = torch.zeros(3, device="CUDA")\n',
            use_instead='import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "1,2"  # before importing torch\n'
                        'import torch\n\n'
                        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
                        'x = torch.zeros(3, device="cuda")\n',
            fixed='import torch\n\ndevice = torch.device("cuda:1,2" if torch.cuda.is_available() else "cpu")\n'
                  'x = torch.zeros(3, device="cuda")\n',
            doc=True,
        ),
        Invalid('import torch\nx = torch.ones(2).to("cuda: 0")\n',
                fixed='import torch\nx = torch.ones(2).to("cuda:0")\n'),
        Invalid("import torch as T\nd = T.device('cuda0')\n", fixed="import torch as T\nd = T.device('cuda:0')\n"),
        Invalid('import torch\nd = torch.device("gpu")\n', fixed='import torch\nd = torch.device("cuda")\n'),
        Invalid('import torch\ndevice = "CUDA"\nmodel.to(device)\n',
                fixed='import torch\ndevice = "cuda"\nmodel.to(device)\n'),
        Invalid('# no torch import: reported, not fixed\nDEVICE = "CUDA:0"\n'),
        Invalid('import torch\ntry:\n    x = torch.zeros(1, device="CUDA")\nexcept Exception:\n    x = None\n'),
        Invalid('import argparse\nimport torch\np = argparse.ArgumentParser()\n'
                'p.add_argument("--device", default="0", help="cuda device, i.e. 0 or 0,1,2,3 or cpu")\n'
                'args = p.parse_args()\ndevice = torch.device(f"cuda:{args.device}")\n'),
        Invalid('import torch\n\n\ndef place(x, gpu):\n    return x.to("cuda: {}".format(gpu))\n',
                fixed='import torch\n\n\ndef place(x, gpu):\n    return x.to("cuda:{}".format(gpu))\n'),
        Invalid('import torch\n\n\ndef place(x, a, b):\n    return x.to("cuda:%d,%d" % (a, b))\n'),
    )

    def screen(self, index: AstIndex) -> bool:
        for value, kind in index.device_strings():
            if devices.rejection(value) is None:
                continue
            if devices.STARTS_LIKE_DEVICE.match(value) or (kind == "strict" and index.imports_torch):
                return True
            if index.imports_torch and devices.suggest(value)[0] is not None:
                return True  # a misspelt device ("gpu") that may reach torch through a variable or default
        return False

    def check(self, ctx: Context) -> Iterable[Finding]:
        uses = device_uses(ctx)
        torch_file = ctx.imports_torch
        # a file that also drives another framework ("CPU" is OpenVINO's device, "/GPU:0" TensorFlow's): a
        # string that only may reach a device position counts when it is shown to reach torch
        other = any(not devices.OTHER_FRAMEWORKS.isdisjoint(m.split(".")) for m in ctx.imported_modules)  # also
        # through a wrapper package: optimum.intel.openvino, optimum.onnxruntime
        for node in ctx.nodes(cst.SimpleString):
            value = string_value(node)
            error = devices.rejection(value) if value is not None else None
            if value is None or error is None:
                continue
            use = uses.use_of(node)
            if use is None:
                continue
            reaches = torch_file and self._reaches_torch(ctx, uses, use)
            loose = not torch_file or use.kind.loose or (
                use.kind is UseKind.KEYWORD and ctx.qualname(self._callee(ctx, use.expr)) is None
            )
            # a loose string counts when it starts like a torch device, or reaches torch and reads like a
            # misspelt device ("gpu" as a default of a parameter passed to .to())
            spelled = devices.STARTS_LIKE_DEVICE.match(value) or (reaches and devices.suggest(value)[0] is not None)
            if loose and (not spelled or (other and not reaches)):
                continue
            if value == "" and not _torch_own(ctx, use):
                continue  # device="" is "not set" to a library (timm's ModelEma, yolov5's select_device)
            if _mapped_sentinel(ctx, node, value, use):
                continue  # args.device = "gpu" ... torch.device("cuda" if args.device == "gpu" else "cpu")
            caught = _caught(ctx, node)
            if caught and use.kind is UseKind.TORCH_DEVICE:
                continue  # try: torch.device(s) except RuntimeError: -- a validity test, on purpose
            # a fix only where the string certainly reaches torch, and nothing relies on torch rejecting it
            yield self._report(ctx, node, value, error, fixable=reaches and not caught)
        if torch_file:
            yield from self._built_strings(ctx, uses)

    def _built_strings(self, ctx: Context, uses: DeviceUses) -> Iterable[Finding]:
        """Device strings built at run time from parts that make them invalid: ``f"cuda:{gpu_ids}"`` with a
        list, ``"cuda:" + ",".join(...)`` (several ids)."""
        formats = (c for c in ctx.nodes(cst.Call)
                   if isinstance(c.func, cst.Attribute) and c.func.attr.value == "format")
        for node in (*ctx.nodes(cst.FormattedString), *ctx.nodes(cst.BinaryOperation), *formats):
            shape = _built_device(ctx, node) if not isinstance(node, cst.Call) else None
            parts = template(node) if shape is None else None
            flaw = _template_flaw(ctx, parts) if parts is not None else None
            if shape is None and flaw is None:
                continue
            use = uses.use_of(node)
            if use is None or _caught(ctx, node) or (use.kind.loose and not self._reaches_torch(ctx, uses, use)):
                continue
            if flaw is not None:
                reason, example = flaw
                built = " ".join(ctx.code(node).split())
                built = built if len(built) <= 60 else built[:57] + "..."
                if reason.startswith("always has a space"):
                    hint = "remove the space (\"cuda:0\")"
                else:
                    hint = ('pick one index ("cuda:0"), or set CUDA_VISIBLE_DEVICES before importing torch and use '
                            '"cuda", or nn.DataParallel(model, device_ids=...)')
                message = (f'Device string built as {built} {reason}: torch.device raises "Invalid device '
                           f'string" whatever it formats; {hint}')
                fix, fixed = None, None
                if reason.startswith("always has a space") and self._reaches_torch(ctx, uses, use) and parts:
                    fix, fixed = _space_fix(ctx, node, parts)
                yield self.finding(ctx, node, message, fix, evidence=DeviceStringEvidence(value=example, fixed=fixed))
                continue
            assert shape is not None
            if "with the default" in shape:
                message = (f'Device string built as {shape} is invalid: torch.device raises "Invalid device '
                           f'string"; make the default an index ("0"), or use the option as the whole device')
            else:
                message = (f'Device string built as {shape} is not one device: torch.device raises "Invalid '
                           f'device string"; pick one index ("cuda:0"), or set CUDA_VISIBLE_DEVICES before '
                           f'importing torch and use "cuda", or nn.DataParallel(model, device_ids=...)')
            yield self.finding(ctx, node, message, evidence=DeviceStringEvidence(value="cuda:1,2", fixed=None))

    @staticmethod
    def _reaches_torch(ctx: Context, uses: DeviceUses, use: DeviceUse) -> bool:
        """Does the string certainly end up in a torch device API (so that torch's spelling is right)?"""
        if use.kind in (UseKind.TORCH_DEVICE, UseKind.TO):
            return True
        if use.kind is UseKind.KEYWORD:
            arg = ctx.parent(use.expr)
            return isinstance(arg, cst.Arg) and uses.reaches_torch(arg)
        if use.kind is UseKind.ASSIGN and use.target is not None:
            return uses.reaches_torch_as(use.target, use.expr)
        param = ctx.parent(use.expr)
        if use.kind is UseKind.DEFAULT and isinstance(param, cst.Param):
            return uses.reaches_torch_as(param.name.value, param)
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
            return self.finding(ctx, node, message, evidence=DeviceStringEvidence(value=value, fixed=None))
        suggestion, safe = devices.suggest(value)
        fix = None
        if suggestion is not None and fixable:
            quote = node.quote
            fix = Fix(
                (replace_token(ctx, node, f"{node.prefix}{quote}{suggestion}{quote}"),),
                Applicability.SAFE if safe else Applicability.UNSAFE,
                f'Use "{suggestion}"',
            )
        if suggestion is not None:
            hint = f'use "{suggestion}"'
        else:
            hint = 'use a device type such as "cuda", "cuda:0", "mps" or "cpu"'
        message = f'Invalid device string "{value}": torch.device raises "{_short(error)}"; {hint}'
        evidence = DeviceStringEvidence(value=value, fixed=suggestion if fix is not None else None)
        return self.finding(ctx, node, message, fix, evidence=evidence)
