"""DEV001's probe: a tensor created on the hard-coded device, or a module moved with ``.cuda()``.

Built from the finding's facts: the device string (checked against torch's device grammar and written as a
literal) or the ``.cuda()`` call's literal device index (an int); never the flagged call's own arguments.
"""

from __future__ import annotations

from devlint import devices
from devlint.probes import Probe
from devlint.rules.dev001_hardcoded_cuda import CudaEvidence

EXPECT = (r"Torch not compiled with CUDA enabled|Cannot access accelerator device when none is available|"
          r"No CUDA GPUs are available|Found no NVIDIA driver|CUDA driver|no kernel image|invalid device ordinal")


def _fallback(device: str) -> str:
    return f"{device!r} if torch.cuda.is_available() else 'cpu'"


EVIDENCE = (CudaEvidence(device="cuda"), CudaEvidence(device="cuda:0"), CudaEvidence(cuda_call=True))


def probe(evidence: CudaEvidence) -> Probe | None:
    if evidence.device is not None:
        device = evidence.device
        if not isinstance(device, str) or not devices.is_valid(device):
            return None  # not a device string torch accepts: nothing to create a tensor on
        return Probe(f"torch.zeros(1, device={device!r})", f"torch.zeros(1, device={_fallback(device)})", EXPECT,
                     note="a tensor created on the hard-coded device")
    if not evidence.cuda_call:
        return None
    index = evidence.cuda_index
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        index = None
    moved = f"torch.nn.Linear(2, 2).cuda({'' if index is None else index})"
    fixed = f"torch.nn.Linear(2, 2).to({_fallback('cuda' if index is None else f'cuda:{index}')})"
    return Probe(moved, fixed, EXPECT, note="a module moved with .cuda()")
