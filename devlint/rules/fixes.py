"""Helpers for building fixes that rules share.

A fix writes code into someone's file; it must run where it lands. So a fix only names ``torch`` (or the
file's alias for it) where that name certainly refers to the torch module (devlint/bindings.py), only
uses quotes that parse inside the f-string it may land in on Python 3.10, and parenthesises a conditional
expression wherever it would otherwise bind differently. When one of those cannot be had, the helpers
return None and the rule reports without a fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from devlint.bindings import module_importable_at, module_name_at
from devlint.context import Context, dotted_name
from devlint.diagnostics import Edit, Position
from devlint.lazy import LazyModule
from devlint.rules.base import node_end, node_start

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")


def torch_name(ctx: Context, site: cst.CSTNode) -> tuple[str, list[Edit]] | None:
    """The name bound to the torch module at ``site`` (``torch``, ``T``), plus the edit that adds
    ``import torch`` when the module already imports a part of torch at its top level (``import torch.nn
    as nn``, ``from torch import nn``: torch is loaded anyway). None when neither is certain: torch only
    imported under ``if TYPE_CHECKING:`` or inside another function (adding an import would change when
    torch loads), or a parameter or local named ``torch`` shadows the module at ``site``."""
    name = module_name_at(ctx, site, "torch")
    if name is not None:
        return name, []
    if not module_importable_at(ctx, site, "torch"):
        return None
    for stmt in ctx.module.body:
        if isinstance(stmt, cst.SimpleStatementLine) and any(_imports_torch_part(ctx, s) for s in stmt.body):
            line = node_start(ctx, stmt).row
            edit = Edit(Position(line, 1), Position(line, 1), "import torch" + ctx.module.default_newline, old="")
            return "torch", [edit]
    return None


def _imports_torch_part(ctx: Context, small: cst.BaseSmallStatement) -> bool:
    if isinstance(small, cst.ImportFrom):
        return (small.module is not None and not small.relative
                and (dotted_name(small.module) or "").split(".")[0] == "torch")
    if isinstance(small, cst.Import):
        return any((dotted_name(a.name) or "").split(".")[0] == "torch" for a in small.names)
    return False


def uses_mps(ctx: Context) -> bool:
    """Does this file already consider Apple's mps device?"""
    return ctx.shared("fixes.uses_mps", _uses_mps)


def _uses_mps(ctx: Context) -> bool:
    for node in ctx.nodes(cst.SimpleString):
        if node.value.strip("'\"").startswith("mps"):
            return True
    return any((ctx.qualname(a) or "").startswith("torch.backends.mps") for a in ctx.nodes(cst.Attribute))


def fallback_expr(ctx: Context, site: cst.CSTNode, device: str, quote: str | None) -> tuple[str, list[Edit]] | None:
    """The device choice that replaces the CUDA device ``device`` (``cuda``, ``cuda:1``), as the
    ``device-fallback`` setting says (``ctx.settings``):

    - ``cuda-cpu``: ``"cuda" if torch.cuda.is_available() else "cpu"``;
    - ``cuda-mps-cpu``: ``"cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available()
      else "cpu"``;
    - ``accelerator``: ``torch.accelerator.current_accelerator().type if torch.accelerator.is_available()
      else "cpu"`` (torch >= 2.6; ``f"{...type}:1"`` keeps an index);
    - unset: ``cuda-cpu``, or ``cuda-mps-cpu`` where the file already uses mps.

    Every form is a device string (never a ``torch.device``, never None), so it is valid wherever the
    literal it replaces was: in a device argument and where the program reads it as a string. Written in
    the given quote, naming torch as it is bound at ``site``; None when torch cannot be named there or no
    quote parses there."""
    if quote is None:
        return None
    found = torch_name(ctx, site)
    if found is None:
        return None
    torch, edits = found
    q = quote
    mode = ctx.settings.device_fallback or ("cuda-mps-cpu" if uses_mps(ctx) else "cuda-cpu")
    if mode == "accelerator":
        kind = f"{torch}.accelerator.current_accelerator().type"
        _, _, index = device.partition(":")
        return (f"f{q}{{{kind}}}:{index}{q}" if index else kind) + \
            f" if {torch}.accelerator.is_available() else {q}cpu{q}", edits
    expr = f"{q}{device}{q} if {torch}.cuda.is_available() else "
    if mode == "cuda-mps-cpu":
        expr += f"{q}mps{q} if {torch}.backends.mps.is_available() else "
    return expr + f"{q}cpu{q}", edits


def preferred_quote(ctx: Context) -> str:
    """The quote character most string literals in this file use."""
    single = sum(1 for n in ctx.nodes(cst.SimpleString) if n.quote == "'")
    double = sum(1 for n in ctx.nodes(cst.SimpleString) if n.quote == '"')
    return "'" if single > double else '"'


def quote_at(ctx: Context, site: cst.CSTNode, preferred: str) -> str | None:
    """A quote character a new string literal at ``site`` may use: ``preferred``, unless an enclosing
    f-string is delimited by it (before Python 3.12 a replacement field cannot hold its f-string's quote);
    None when every enclosing f-string's quotes together use both."""
    taken = {anc.end[0] for anc in ctx.ancestors(site) if isinstance(anc, cst.FormattedString)}
    for quote in (preferred, "'" if preferred == '"' else '"'):
        if quote not in taken:
            return quote
    return None


def needs_parens(ctx: Context, node: cst.BaseExpression) -> bool:
    """Would a conditional expression written in place of ``node`` bind differently there?"""
    if getattr(node, "lpar", None):
        return False
    parent = ctx.parent(node)
    if isinstance(parent, cst.Arg):
        return parent.value is not node
    if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.Return, cst.DictElement)):
        return getattr(parent, "value", None) is not node
    if isinstance(parent, cst.Param):
        return parent.default is not node
    return not isinstance(parent, (cst.Element, cst.FormattedStringExpression))


def paren_call_insert(ctx: Context, call: cst.Call, content: str) -> Edit | None:
    """An edit that writes ``content`` right after the opening parenthesis of ``call`` (before any
    comment there). None when the space between the callee and ``(`` spans lines."""
    gap = ctx.code(call.whitespace_after_func)
    if "\n" in gap or "\r" in gap:
        return None
    end = node_end(ctx, call.func)
    at = Position(end.row, end.column + len(gap) + 1)
    return Edit(at, at, content, old="", before="(")
