"""What ``devlint verify`` runs to prove a finding: one module per rule, ``devlint/probes/<code>.py``.

Verification is a concern of its own, apart from detection: a probe module reads the evidence a rule's
finding carries (a frozen dataclass of the rule's module) and rebuilds the bug as a tiny program. Each
module has ``EVIDENCE`` (examples ``devlint verify --rules`` runs on every target) and
``probe(evidence) -> Probe | None``. Probe modules are found by the rule's code (the rule registry stays the
one list of rules).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from devlint.diagnostics import Evidence, Finding, StrEnum


class Needs(StrEnum):
    """What a target must have for a probe to show its bug."""

    ACCELERATOR = "accelerator"  # GPU evidence must be placed on a GPU (cuda or mps)
    CUDA = "cuda"  # only observable with CUDA


Judge = Callable[[Any], tuple[str, str]]


@dataclass(frozen=True)
class Probe:
    """A snippet `devlint verify` runs in a fresh interpreter with ``torch`` imported and ``ACCEL`` set to
    the target's accelerator ("cuda", "mps") or None. It fails by raising; it may set ``RESULT`` (a
    JSON-able value) for :attr:`judge` to read.

    ``expect``: a regex on "ExceptionType: message" that counts as the bug reproduced.
    ``isolated``: the probe must run alone in its process (it initialises CUDA).
    ``judge``: for probes that observe an effect rather than an error: a function of RESULT returning
    (verdict, detail); None to use the default (raised and matched -> confirmed).
    """

    before: str
    after: str | None  # None: the rule has no fix to check
    expect: str
    needs: Needs | None = None
    isolated: bool = False
    judge: Judge | None = None
    note: str = ""  # what part of the finding the probe reproduces


def probe_module(code: str) -> ModuleType | None:
    """The probe module of rule ``code``, or None when the rule has none."""
    try:
        return importlib.import_module(f"{__name__}.{code.lower()}")
    except ModuleNotFoundError:
        return None


def probe_for(finding: Finding) -> Probe | None:
    module = probe_module(finding.code)
    if module is None or finding.evidence is None:
        return None
    probe: Probe | None = module.probe(finding.evidence)
    return probe


def evidence_examples(code: str) -> tuple[Evidence, ...]:
    module = probe_module(code)
    return tuple(module.EVIDENCE) if module is not None else ()
