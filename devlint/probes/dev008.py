"""DEV008's probe: a tensor's move or cast as a statement leaves the tensor as it was; assigned (the fix), it
takes. The effect is observed, not raised: the probe reports the tensor's device and dtype before and after
the statement, and those of the result the statement threw away."""

from __future__ import annotations

from typing import Any

from devlint import devices
from devlint.probes import Needs, Probe
from devlint.rules.dev008_discarded_tensor_move import DiscardedMoveEvidence

EVIDENCE = (
    DiscardedMoveEvidence("double"),
    DiscardedMoveEvidence("half"),
    DiscardedMoveEvidence("float"),
    DiscardedMoveEvidence("to", dtype=True),
    DiscardedMoveEvidence("to"),
    DiscardedMoveEvidence("cuda"),
    DiscardedMoveEvidence("cpu"),
)

_STATE = "(str(x.device), str(x.dtype))"


def _judge(result: dict[str, Any]) -> tuple[str, str]:
    was, now, copy = (tuple(result[k]) for k in ("was", "now", "copy"))
    if copy == was:
        return "inconclusive", f"the call changes nothing here: the tensor is already on {was[0]} as {was[1]}"
    if now == was:
        return "confirmed", (f"x stayed on {now[0]} as {now[1]} after the statement; the result it discarded was "
                             f"on {copy[0]} as {copy[1]}")
    return "not reproduced", f"the statement changed x in place: {was[0]}/{was[1]} -> {now[0]}/{now[1]}"


def _setup(evidence: DiscardedMoveEvidence) -> tuple[str, str, Needs | None, str]:
    """(the tensor, the call, what the target needs, what the probe shows)."""
    method = evidence.method
    if method == "to" and evidence.dtype:
        return "torch.zeros(2)", "x.to(torch.float64)", None, "x.to(torch.float64) as a statement"
    if method == "to":  # the meta device stands in for a GPU where there is none: the same Tensor.to()
        return "torch.zeros(2)", "x.to(ACCEL or 'meta')", None, "x.to(device) as a statement (meta without a GPU)"
    if method == "cuda":
        return "torch.zeros(2)", "x.cuda()", Needs.CUDA, "x.cuda() as a statement"
    if method in ("cpu", "xpu"):
        needs = Needs.ACCELERATOR if method == "cpu" else Needs.CUDA
        return "torch.zeros(2, device=ACCEL)", f"x.{method}()", needs, f"x.{method}() as a statement"
    start = "torch.float64" if method == "float" else "torch.float32"
    return f"torch.zeros(2, dtype={start})", f"x.{method}()", None, f"x.{method}() as a statement"


def probe(evidence: DiscardedMoveEvidence) -> Probe | None:
    if evidence.method == "xpu" or evidence.method not in devices.TENSOR_COPY_METHODS:
        return None  # an Intel GPU (no target of devlint verify has one), or no tensor method devlint knows
    make, call, needs, note = _setup(evidence)
    before = (
        f"x = {make}\n_was = {_STATE}\n{call}\n_now = {_STATE}\n_copy = {call}\n"
        "RESULT = {'was': _was, 'now': _now, 'copy': (str(_copy.device), str(_copy.dtype))}\n"
        "print('DEV008 probe:', RESULT)"
    )
    after = (
        f"x = {make}\n_was = {_STATE}\nx = {call}\n"
        f"assert {_STATE} != _was, f'the assigned move did not take effect: {{_was}}'"
    )
    return Probe(before, after, r"$^", needs=needs, judge=_judge, note=note)
