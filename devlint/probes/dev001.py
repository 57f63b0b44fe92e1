"""DEV001's probe: a tensor created on the hard-coded device, or a module moved with ``.cuda()``."""

from __future__ import annotations

from devlint.probes import Probe
from devlint.rules.dev001_hardcoded_cuda import CudaEvidence

EXPECT = (r"Torch not compiled with CUDA enabled|Cannot access accelerator device when none is available|"
          r"No CUDA GPUs are available|Found no NVIDIA driver|CUDA driver|no kernel image|invalid device ordinal")
_FALLBACK = '"cuda" if torch.cuda.is_available() else "cpu"'

EVIDENCE = (CudaEvidence(device="cuda"), CudaEvidence(device="cuda:0"), CudaEvidence(cuda_args=""))


def probe(evidence: CudaEvidence) -> Probe:
    if evidence.device is not None:
        device = evidence.device
        fixed = _FALLBACK.replace('"cuda"', repr(device), 1) if device != "cuda" else _FALLBACK
        return Probe(f"torch.zeros(1, device={device!r})", f"torch.zeros(1, device={fixed})", EXPECT,
                     note="a tensor created on the hard-coded device")
    args = evidence.cuda_args or ""
    index = args.strip().rstrip(",")
    target = _FALLBACK if not index.isdigit() else _FALLBACK.replace('"cuda"', repr(f"cuda:{index}"), 1)
    return Probe(f"torch.nn.Linear(2, 2).cuda({args})", f"torch.nn.Linear(2, 2).to({target})", EXPECT,
                 note="a module moved with .cuda()")
