"""DEV004's probe: set the variable after CUDA started and compare the CUDA driver's device count with
that of a process that set it first."""

from __future__ import annotations

from devlint.probes import Needs, Probe
from devlint.rules.dev004_cuda_env_after_init import CudaEnvEvidence

_PROBE_INITS = {
    "torch.cuda.device_count": "torch.cuda.device_count()", "torch.cuda.is_available": "torch.cuda.is_available()",
    "torch.cuda.init": "torch.cuda.init()", "torch.cuda.set_device": "torch.cuda.set_device(0)",
    "torch.cuda.current_device": "torch.cuda.current_device()", "torch.cuda.synchronize": "torch.cuda.synchronize()",
}


def _probe_init(qualname: str | None) -> str:
    """A runnable stand-in for the call that initialised CUDA in the flagged code."""
    return _PROBE_INITS.get(qualname or "", "torch.zeros(1, device='cuda')")


def _judge(result: dict[str, int]) -> tuple[str, str]:
    initial, late, fresh = result["initial"], result["late"], result["fresh"]
    if fresh == initial:
        return "inconclusive", f"the setting does not change what this machine sees ({initial} GPUs either way)"
    if late == initial:
        return "confirmed", (f"the CUDA driver's device count stayed {late} after the late setting; "
                             f"a process that set it first sees {fresh}")
    return "not reproduced", f"the late setting took effect ({initial} -> {late})"


EVIDENCE = tuple(
    CudaEnvEvidence(var="CUDA_VISIBLE_DEVICES", value="", init=init)
    for init in ("torch.cuda.device_count", "torch.cuda.is_available", None)
)


def probe(evidence: CudaEnvEvidence) -> Probe:
    var, value = evidence.var, evidence.value
    init = _probe_init(evidence.init)
    if value is None or var != "CUDA_VISIBLE_DEVICES":
        value = ""  # hide every GPU: the one setting whose effect any CUDA machine can show
    # the CUDA driver's own count, not torch.cuda.device_count() (which may ask NVML and re-read the env)
    count = "import torch; print(torch._C._cuda_getDeviceCount())"
    fresh = (
        "import os, subprocess, sys\n"
        "def _count(**env):\n"
        f"    out = subprocess.run([sys.executable, '-c', {count!r}], capture_output=True, text=True,"
        " env={**os.environ, **env})\n"
        "    return int(out.stdout.split()[-1])\n"
        "_n0 = _count()\n"
        f"_n_fresh = _count(**{{{var!r}: {value!r}}})\n"
    )
    before = (
        f"{fresh}{init}\n"
        f"os.environ[{var!r}] = {value!r}\n"
        "RESULT = {'initial': _n0, 'late': torch._C._cuda_getDeviceCount(), 'fresh': _n_fresh}"
    )
    # the fix: the same program with the setting made before `import torch`
    fixed_program = (f"import os\nos.environ[{var!r}] = {value!r}\nimport torch\ntry:\n    {init}\n"
                     f"except Exception:\n    pass  # e.g. no GPU left visible\n{count.split('; ', 1)[1]}")
    after = (
        f"{fresh}_out = subprocess.run([sys.executable, '-c', {fixed_program!r}], capture_output=True, text=True)\n"
        "RESULT = int(_out.stdout.split()[-1])\n"
        "assert RESULT == _n_fresh, (RESULT, _n_fresh)"
    )
    return Probe(before, after, r"$^", needs=Needs.CUDA, isolated=True, judge=_judge,
                 note=f"{var}={value!r} set after {init}")

