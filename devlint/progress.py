"""Progress on a terminal: one line on standard error, rewritten in place and erased when done.

Shown only when a person is watching: standard error *and* standard output are terminals (a pipe, a
redirect or a CI log gets nothing), ``TERM`` is not ``dumb``, and ``DEVLINT_PROGRESS`` does not say
otherwise: ``DEVLINT_PROGRESS=1`` forces it (what the tests use), ``DEVLINT_PROGRESS=0`` turns it off.
Machine output (JSON, SARIF, ...) never carries it: callers pass ``enabled=False`` for those formats.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

ENV = "DEVLINT_PROGRESS"
_ERASE = "\r\x1b[K"


def wanted(stream: TextIO | None = None) -> bool:
    """Whether progress should be shown on ``stream`` (default: standard error)."""
    forced = os.environ.get(ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    stream = stream if stream is not None else sys.stderr
    if os.environ.get("TERM") == "dumb":
        return False
    return _isatty(stream) and _isatty(sys.stdout)


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


class Progress:
    """``with Progress("verify cpu", total) as p: p.advance()`` shows ``verify cpu: 3/10`` while it runs.

    Updates are throttled (``interval`` seconds, the last one always shown); nothing is written when
    disabled, so callers need no test of their own."""

    def __init__(self, label: str, total: int, *, enabled: bool | None = None, stream: TextIO | None = None,
                 interval: float = 0.1) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = wanted(self.stream) if enabled is None else enabled
        self.label, self.total, self.done = label, total, 0
        self.interval = interval
        self._shown = 0.0

    def __enter__(self) -> Progress:
        self._show(force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def advance(self, n: int = 1, label: str | None = None) -> None:
        self.done += n
        if label is not None:
            self.label = label
        self._show(force=self.done >= self.total)

    def _show(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._shown < self.interval:
            return
        self._shown = now
        self.stream.write(f"{_ERASE}{self.label}: {self.done}/{self.total}")
        self.stream.flush()

    def close(self) -> None:
        """Erase the line (the report that follows starts on a clean line)."""
        if self.enabled:
            self.stream.write(_ERASE)
            self.stream.flush()
            self.enabled = False
