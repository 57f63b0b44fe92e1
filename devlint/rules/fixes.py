"""Helpers for building fixes that rules share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from devlint.context import Context
from devlint.lazy import LazyModule
from devlint.rules.base import Edit, Position, node_start

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

def torch_name(ctx: Context) -> tuple[str, list[Edit]]:
    """The name bound to the torch module here (``torch``, ``T``), plus the edit that adds
    ``import torch`` when the file only has ``from torch import ...``."""
    alias = ctx.module_alias("torch")
    if alias is not None:
        return alias, []
    for stmt in ctx.module.body:
        if isinstance(stmt, cst.SimpleStatementLine) and any(
            isinstance(s, cst.ImportFrom) and s.module is not None and ctx.code(s.module).split(".")[0] == "torch"
            for s in stmt.body
        ):
            line = node_start(ctx, stmt).row
            return "torch", [Edit(Position(line, 1), Position(line, 1), "import torch" + ctx.module.default_newline)]
    return "torch", []


def uses_mps(ctx: Context) -> bool:
    """Does this file already consider Apple's mps device?"""
    for node in ctx.nodes(cst.SimpleString):
        if node.value.strip("'\"").startswith("mps"):
            return True
    return any((ctx.qualname(a) or "").startswith("torch.backends.mps") for a in ctx.nodes(cst.Attribute))


def fallback_expr(ctx: Context, device: str, quote: str = '"') -> tuple[str, list[Edit]]:
    """``"cuda" if torch.cuda.is_available() else "cpu"`` (with the mps branch where the file uses mps),
    in the given quote style."""
    torch, edits = torch_name(ctx)
    q = quote
    expr = f"{q}{device}{q} if {torch}.cuda.is_available() else "
    if uses_mps(ctx):
        expr += f"{q}mps{q} if {torch}.backends.mps.is_available() else "
    return expr + f"{q}cpu{q}", edits


def preferred_quote(ctx: Context) -> str:
    """The quote character most string literals in this file use."""
    single = sum(1 for n in ctx.nodes(cst.SimpleString) if n.quote == "'")
    double = sum(1 for n in ctx.nodes(cst.SimpleString) if n.quote == '"')
    return "'" if single > double else '"'
