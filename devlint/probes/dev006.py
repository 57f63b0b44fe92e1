"""DEV006's probe: the CUDA-only call itself (torch's own error without a GPU), and the same call under the
availability check the fix writes."""

from __future__ import annotations

import re

from devlint import devices
from devlint.probes import Probe
from devlint.rules.dev006_unguarded_cuda_call import CudaCallEvidence

# Arguments a call needs to run at all (the others run with none).
_ARGS = {
    "torch.cuda.set_device": "0", "torch.cuda.set_per_process_memory_fraction": "0.5",
    "torch.cuda.can_device_access_peer": "0, 1", "torch.cuda.set_sync_debug_mode": "0",
    "torch.cuda.nvtx.range_push": "'probe'", "torch.cuda.nvtx.mark": "'probe'",
    "torch.cuda.nvtx.range": "'probe'", "torch.cuda.get_device_name": "0", "torch.cuda.get_device_properties": "0",
    "torch.cuda.Event": "enable_timing=True",
    "torch.accelerator.set_device_index": "0", "torch.accelerator.set_device_idx": "0",
    "torch.cuda.device": "0", "torch.accelerator.device_index": "0",
}
# torch's errors without a GPU: a CPU build's (devices.py) and a CUDA build's with no GPU visible
_ERRORS = sorted({*devices.CUDA_ONLY_API.values(), *devices.CUDA_ONLY_CONTEXTS.values()})
_NO_GPU = ["No CUDA GPUs are available", "Found no NVIDIA driver", "CUDA driver", "invalid device ordinal",
           "no CUDA-capable device", "invalid argument to reset_peak_memory_stats"]
EXPECT = "|".join([re.escape(e) for e in _ERRORS] + _NO_GPU)

EVIDENCE = tuple(CudaCallEvidence(call) for call in (
    "torch.cuda.synchronize", "torch.cuda.get_device_name", "torch.cuda.set_device", "torch.cuda.Event",
    "torch.cuda.reset_peak_memory_stats", "torch.accelerator.synchronize", "torch.cuda.device"))


def probe(evidence: CudaCallEvidence) -> Probe | None:
    name = evidence.call
    if name not in devices.CUDA_ONLY_API and name not in devices.CUDA_ONLY_CONTEXTS:
        return None  # only the CUDA-only APIs devlint knows are called, with the arguments above
    call = f"{name}({_ARGS.get(name, '')})"
    statement = f"with {call}:\n    pass" if name in devices.CUDA_ONLY_CONTEXTS else call
    check = devices.availability_check(name)
    guarded = f"if {check}():\n" + "".join(f"    {line}\n" for line in statement.splitlines())
    return Probe(statement, guarded.rstrip("\n"), EXPECT, note=f"{name}() without a GPU check")
