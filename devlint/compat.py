"""Does a module parse on every Python devlint supports (3.10 and newer)?

The fixer checks its output with this, not only with LibCST's parser (which accepts every grammar up to
3.13) nor only with the running interpreter's: a fix that writes ``f"{x.to("cuda")}"`` parses on 3.12+
and is a SyntaxError on 3.10 and 3.11.

Two checks:

- ``ast.parse(..., feature_version=(3, 10))``: the running interpreter's parser, refusing the newer
  statements it knows about (``except*``, ``type X = ...``, generic ``def f[T]()``, ...);
- f-strings, as the tokenizer before 3.12 (PEP 701) saw them: a replacement field may not contain the
  f-string's own quote, a backslash, or a ``#``.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from devlint.lazy import LazyModule

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

OLDEST = (3, 10)


def syntax_error(text: str, module: cst.Module | None = None) -> str | None:
    """Why ``text`` would not parse on Python 3.10, or None when it would. ``module``: its LibCST tree,
    when the caller has one (else it is parsed here; text LibCST cannot parse is an error)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text, feature_version=OLDEST)
    except SyntaxError as exc:
        return f"{exc.msg} (line {exc.lineno})"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if not any(isinstance(node, ast.JoinedStr) for node in ast.walk(tree)):
        return None  # no f-string: nothing more to check (LibCST's walk below costs far more)
    if module is None:
        try:
            module = cst.parse_module(text)
        except Exception as exc:  # noqa: BLE001 - any parser failure is a reason
            return f"{type(exc).__name__}: {exc}"
    return _fstring_error(module)


def _fstring_error(module: cst.Module) -> str | None:
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FormattedString):
            error = _check_parts(module, node.parts, node.end)
            if error is not None:
                return error
            continue  # nested f-strings are inside the fields just checked
        stack.extend(node.children)
    return None


def _check_parts(module: cst.Module, parts: Sequence[cst.BaseFormattedStringContent], quote: str) -> str | None:
    for part in parts:
        if not isinstance(part, cst.FormattedStringExpression):
            continue
        code = module.code_for_node(part.expression)
        for bad, what in ((quote, f"the f-string's own quote {quote}"), ("\\", "a backslash"), ("#", "'#'")):
            if bad in code:
                return f"f-string replacement field {code!r} contains {what} (a SyntaxError before Python 3.12)"
        if part.format_spec:
            error = _check_parts(module, part.format_spec, quote)
            if error is not None:
                return error
    return None
