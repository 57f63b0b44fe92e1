"""Positions of LibCST nodes, as LibCST's ``PositionProvider`` gives them, at a fraction of its cost.

``PositionProvider`` generates the module's code once and, for every token, splits it on newlines to keep a
line and a column, and builds a ``CodeRange`` for every node. Here the same generation counts characters
only (an offset per node start and end, with the same rules for the syntactic positions that
``record_syntactic_position`` hoists), and a node's line and column are computed from its offsets when a
finding asks for them. ``tests/test_positions.py`` holds the two equal on every node of the fixtures and of
generated programs.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from libcst import CSTNode, Module
from libcst._nodes.internal import CodegenState  # what PositionProvider's own state extends (libcst < 2)
from libcst.metadata import CodePosition, CodeRange

_NEWLINE = re.compile(r"\r\n?|\n")


@dataclass
class _OffsetState(CodegenState):
    """A codegen state that keeps, for every node, the offsets (in the generated code) of its start and end."""

    offset: int = 0
    spans: dict[CSTNode, tuple[int, int]] = field(default_factory=dict)
    popped: list[str] = field(default_factory=list)  # the trailing newline taken off the end
    _stack: list[int] = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        tokens = self.indent_tokens
        self.tokens.extend(tokens)
        for token in tokens:
            self.offset += len(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def before_codegen(self, node: CSTNode) -> None:
        self._stack.append(self.offset)

    def after_codegen(self, node: CSTNode) -> None:
        start = self._stack.pop()
        if node not in self.spans:  # a syntactic position recorded during the node's own codegen stays
            self.spans[node] = (start, self.offset)

    def pop_trailing_newline(self) -> None:
        # as CodegenState: the token goes, the offsets already recorded stay (PositionProvider keeps its
        # line and column too)
        if self.tokens:
            self.popped.append(self.tokens.pop())

    @contextmanager
    def record_syntactic_position(self, node: CSTNode, *, start_node: CSTNode | None = None,
                                  end_node: CSTNode | None = None) -> Iterator[None]:
        start = self.offset
        try:
            yield
        finally:
            end = self.offset
            spans = self.spans
            if start_node is not None:
                start = spans[start_node][0]
            if end_node is not None:
                end = spans[end_node][1]
            spans[node] = (start, end)


class Positions:
    """``positions[node]``: the node's ``CodeRange`` as ``PositionProvider`` gives it."""

    def __init__(self, module: Module) -> None:
        state = _OffsetState(default_indent=module.default_indent, default_newline=module.default_newline)
        module._codegen(state)
        self._spans = state.spans
        # lines as PositionProvider counts them: token by token (a "\r" ending one token and a "\n" starting
        # the next are two line breaks there, one in the joined code)
        starts = [0]
        offset = 0
        for token in [*state.tokens, *state.popped]:
            if "\n" in token or "\r" in token:
                for match in _NEWLINE.finditer(token):
                    starts.append(offset + match.end())
            offset += len(token)
        self._starts = starts

    def _position(self, offset: int) -> CodePosition:
        line = bisect.bisect_right(self._starts, offset) - 1
        return CodePosition(line + 1, offset - self._starts[line])

    def __getitem__(self, node: CSTNode) -> CodeRange:
        start, end = self._spans[node]
        return CodeRange(self._position(start), self._position(end))
