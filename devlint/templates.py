"""The literal parts and run-time holes of a string built in code: an f-string, ``"...".format(...)``,
``"..." % (...)`` or a chain of ``+`` (DEV003 checks the device such a string makes; DEV005 compares the file
names a save and a load build)."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING

from devlint.context import string_value
from devlint.lazy import LazyModule

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")  # a run answered from the cache never imports LibCST


@dataclass(frozen=True)
class Hole:
    """A part of a built string that is only known at run time (``expr``: the value formatted there, when
    it is formatted as it is; None when a conversion or an index makes it unknown)."""

    expr: cst.BaseExpression | None


_PRINTF = re.compile(r"%(?:\((\w+)\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])")


def template(node: cst.CSTNode) -> list[str | Hole] | None:
    """The literal parts and placeholders of a string built by an f-string, ``"...".format(...)``,
    ``"..." % (...)`` or a chain of ``+`` (None: not one of these, or a template Python would reject)."""
    if isinstance(node, cst.FormattedString):
        return _fstring_template(node)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format":
        text = string_value(node.func.value)
        if text is None or any(a.star for a in node.args):
            return None
        return _format_template(text, [a.value for a in node.args if a.keyword is None],
                                {a.keyword.value: a.value for a in node.args if a.keyword is not None})
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
        text = string_value(node.left)
        return _printf_template(text, node.right) if text is not None else None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        operands: list[cst.BaseExpression] = []
        expr: cst.BaseExpression = node
        while isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add) and not expr.lpar:
            operands.append(expr.right)
            expr = expr.left
        operands.append(expr)
        parts: list[str | Hole] = []
        for operand in reversed(operands):
            value = string_value(operand)
            parts.append(value if value is not None else Hole(operand))
        return parts
    return None


def _fstring_template(node: cst.FormattedString) -> list[str | Hole] | None:
    if "b" in node.prefix.lower() or "r" in node.prefix.lower():
        return None
    out: list[str | Hole] = []
    for part in node.parts:
        if isinstance(part, cst.FormattedStringText):
            if "\\" in part.value:
                return None
            out.append(part.value.replace("{{", "{").replace("}}", "}"))
        elif isinstance(part, cst.FormattedStringExpression):
            plain = part.format_spec is None and part.conversion in (None, "s", "r")
            out.append(Hole(part.expression if plain else None))
        else:
            return None
    return out


def _format_template(text: str, args: list[cst.BaseExpression],
                     keywords: dict[str, cst.BaseExpression]) -> list[str | Hole] | None:
    out: list[str | Hole] = []
    auto = 0
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        return None
    for literal, field, spec, conversion in fields:
        out.append(literal)
        if field is None:
            continue
        value: cst.BaseExpression | None = None
        if field == "":
            value = args[auto] if auto < len(args) else None
            auto += 1
        elif field.isdigit():
            value = args[int(field)] if int(field) < len(args) else None
        elif field.isidentifier():
            value = keywords.get(field)
        plain = not spec and conversion in (None, "s", "r")
        out.append(Hole(value if plain else None))
    return out


def _printf_template(text: str, right: cst.BaseExpression) -> list[str | Hole] | None:
    values = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
    if any(isinstance(v, cst.StarredElement) for v in values):
        return None
    out: list[str | Hole] = []
    pos = 0
    slot = 0
    for match in _PRINTF.finditer(text):
        if "%" in text[pos:match.start()]:
            return None  # a % that is no conversion: Python raises, not torch
        out.append(text[pos:match.start()])
        pos = match.end()
        if match.group(4) == "%":
            out.append("%")
            continue
        value = None
        if match.group(1) is None and match.group(2) != "*" and match.group(3) != "*" \
                and isinstance(right, cst.Tuple) and slot < len(values):
            value = values[slot] if match.group(4) in "sr" and not match.group(2) else None
        slot += 1
        out.append(Hole(value))
    if "%" in text[pos:]:
        return None
    out.append(text[pos:])
    return out
