"""DEV003's probe: ``torch.device()`` on the rejected string, and on the fix's spelling of it."""

from __future__ import annotations

from devlint.probes import Probe
from devlint.rules.dev003_invalid_device_string import DeviceStringEvidence

EVIDENCE = (
    DeviceStringEvidence("cuda:1,2", None), DeviceStringEvidence("gpu", "cuda"), DeviceStringEvidence("CUDA", "cuda"),
    DeviceStringEvidence("cuda0", "cuda:0"), DeviceStringEvidence("cuda: 0", "cuda:0"),
    DeviceStringEvidence("cuda:-1", "cuda"),
)


def probe(evidence: DeviceStringEvidence) -> Probe:
    fixed = evidence.fixed
    return Probe(
        f"torch.device({evidence.value!r})",
        f"torch.device({fixed!r})" if fixed is not None else None,
        r"Invalid device string|Expected one of|Could not parse device index|Device string must not be empty",
        note="torch.device() on the string",
    )
