"""The fixer's choice of non-overlapping fixes: the binary search over chosen spans decides exactly as a
scan of every chosen span would (the scan was quadratic in the number of fixes)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from devlint.engine import _overlaps, _overlaps_taken

span = st.tuples(st.integers(0, 30), st.integers(0, 6)).map(lambda t: (t[0], t[0] + t[1]))


@settings(max_examples=400, deadline=None)
@given(st.lists(span, max_size=25))
def test_binary_search_agrees_with_a_scan(spans: list[tuple[int, int]]) -> None:
    taken: list[tuple[int, int]] = []
    for s in spans:
        scanned = any(_overlaps(s, t) for t in taken)
        assert _overlaps_taken(s, sorted(taken)) == scanned, (s, taken)
        if not scanned:
            taken.append(s)
