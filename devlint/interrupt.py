"""Stopping a run: Ctrl-C (SIGINT) and SIGTERM end the run promptly and take its worker processes with them.

- The main process turns SIGTERM into :class:`Terminated` while a pool runs (SIGINT is Python's
  ``KeyboardInterrupt``); either one terminates every worker (SIGTERM, then SIGKILL after a grace period)
  before it propagates, so no worker goes on linting or writing files; the command line exits 130 / 143.
- Workers ignore SIGINT (Ctrl-C on a terminal signals the whole process group: the main process decides),
  die on SIGTERM, and on Linux are sent SIGTERM by the kernel when the main process dies, even by SIGKILL.
- A file write (``source.write_fixed``) holds SIGINT and SIGTERM back until it is done: the temporary file
  is renamed or removed before the signal acts (SIGKILL cannot be held: then a ``.devlint-*.tmp`` may stay).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (imported by the pools that need it: a run answered from the cache starts no pool)
    from concurrent.futures import ProcessPoolExecutor

_HELD = (signal.SIGINT, signal.SIGTERM)
GRACE = 1.0  # seconds a worker has to exit after SIGTERM before it is killed


class Terminated(BaseException):
    """SIGTERM (or SIGHUP) arrived while a pool ran; its workers are gone."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def terminating() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise :class:`Terminated` in the main thread (elsewhere: no change)."""
    if not _in_main_thread():
        yield
        return
    names = ("SIGTERM", "SIGHUP")
    signums = [getattr(signal, n) for n in names if hasattr(signal, n)]
    old = {s: signal.signal(s, _raise_terminated) for s in signums}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def init_worker() -> None:
    """In a pool worker: ignore SIGINT, die on SIGTERM (the handler the fork copied from the main process
    would raise an exception the pool catches), and die with the main process (Linux)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the main process died before the line above took effect
        os._exit(1)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's workers now (SIGTERM, then SIGKILL for those still alive after :data:`GRACE`),
    and drop the work not started."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(OSError, ValueError):
            process.terminate()
    for process in processes:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            process.join(GRACE)
            if process.is_alive():
                process.kill()
                process.join(GRACE)
    pool.shutdown(wait=False, cancel_futures=True)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while inside (a file write): a signal that arrives meanwhile is raised
    again when the block is done, to the handler it would have met (KeyboardInterrupt, :class:`Terminated`,
    or the default action). In the main thread, where Python runs signal handlers; elsewhere nothing is held."""
    if not _in_main_thread():
        yield
        return
    pending: list[int] = []

    def record(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    old = {s: h for s in _HELD if (h := signal.getsignal(s)) is not None}  # (None: a handler set from C)
    for s in old:
        signal.signal(s, record)
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)
