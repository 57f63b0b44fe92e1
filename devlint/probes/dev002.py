"""DEV002's probe: ``.numpy()`` on a tensor that requires grad and/or lives on the target's GPU."""

from __future__ import annotations

from devlint.probes import Needs, Probe
from devlint.rules.dev002_numpy_needs_detach_cpu import NumpyEvidence

EVIDENCE = (
    NumpyEvidence(grad=True, gpu=False, insert=".detach()"),
    NumpyEvidence(grad=False, gpu=True, insert=".cpu()"),
    NumpyEvidence(grad=True, gpu=True, insert=".detach().cpu()"),
)


# what the fix may insert before .numpy(): the probe writes one of these, never the finding's own text
INSERTS = frozenset({".detach()", ".cpu()", ".detach().cpu()"})


def probe(evidence: NumpyEvidence) -> Probe | None:
    if evidence.insert not in INSERTS:
        return None
    make = f"t = torch.ones(2, requires_grad={bool(evidence.grad)})"
    move = "\nt = t.to(ACCEL) if ACCEL else t" if evidence.gpu else ""
    what = " and ".join(w for w, on in (("requires grad", evidence.grad), ("lives on a GPU", evidence.gpu)) if on)
    return Probe(
        f"{make}{move}\nt.numpy()",
        f"{make}{move}\nt{evidence.insert}.numpy()",
        r"Can't call numpy\(\) on Tensor that requires grad|can't convert \w+(:\d+)? device type tensor to numpy",
        needs=None if evidence.grad else Needs.ACCELERATOR,
        note=f"a tensor that {what}",
    )
