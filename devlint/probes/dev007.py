"""DEV007's probe: a float64 tensor placed on the mps device raises torch's own TypeError ("Cannot convert a MPS
Tensor to float64 dtype as the MPS framework doesn't support float64"); with the fix's float32 it does not.

Only an MPS device (a Mac with Apple silicon) can raise it. Elsewhere the probe builds the same tensor on the CPU
and reports what it can show there: the dtype the flagged code produces (torch.float64 on every target, which is
the finding's premise), with the verdict ``inconclusive``; the fixed code must run clean everywhere."""

from __future__ import annotations

from typing import Any

from devlint.probes import Probe
from devlint.rules.dev007_float64_on_mps import Float64Evidence

EXPECT = r"Cannot convert a MPS Tensor to float64 dtype|MPS framework doesn't support float64"

EVIDENCE = (
    Float64Evidence("factory"),
    Float64Evidence("to_dtype"),
    Float64Evidence("move"),
    Float64Evidence("numpy"),
    Float64Evidence("numpy_tensor"),
    Float64Evidence("cast"),
    Float64Evidence("default_dtype"),
)

# the mps device where there is one, else the CPU (the float64 tensor is built all the same)
_DEVICE = 'D = ACCEL if ACCEL == "mps" else "cpu"\n'
_NUMPY = "import numpy as np\n"
# (the flagged code, the fixed code) per kind; each leaves the tensor in t
_CODE: dict[str, tuple[str, str]] = {
    "factory": ("t = torch.zeros(2, dtype=torch.float64, device=D)",
                "t = torch.zeros(2, dtype=torch.float32, device=D)"),
    "to_dtype": ("t = torch.ones(2).to(D, torch.float64)", "t = torch.ones(2).to(D, torch.float32)"),
    "move": ("t = torch.ones(2).double().to(D)", "t = torch.ones(2).float().to(D)"),
    "numpy": (_NUMPY + "t = torch.from_numpy(np.random.rand(2)).to(D)",
              _NUMPY + "t = torch.from_numpy(np.random.rand(2)).float().to(D)"),
    "numpy_tensor": (_NUMPY + "t = torch.tensor(np.zeros(2), device=D)",
                     _NUMPY + "t = torch.tensor(np.zeros(2), device=D, dtype=torch.float32)"),
    "cast": ("t = torch.rand(2, device=D).double()", "t = torch.rand(2, device=D).float()"),
    "default_dtype": ("_old = torch.get_default_dtype()\ntorch.set_default_dtype(torch.float64)\n"
                      "try:\n    t = torch.zeros(2, device=D)\nfinally:\n    torch.set_default_dtype(_old)",
                      "_old = torch.get_default_dtype()\ntorch.set_default_dtype(torch.float64)\n"
                      "try:\n    t = torch.zeros(2, device=D, dtype=torch.float32)\nfinally:\n"
                      "    torch.set_default_dtype(_old)"),
}
_RESULT = "RESULT = {'device': str(t.device), 'dtype': str(t.dtype)}\nprint('DEV007 probe:', RESULT)"


def _judge(result: dict[str, Any]) -> tuple[str, str]:
    device, dtype = result["device"], result["dtype"]
    if device.startswith("mps"):
        return "not reproduced", f"a {dtype} tensor was made on {device} without error"
    if dtype == "torch.float64":
        return "inconclusive", (f"the code makes a torch.float64 tensor (built on {device} here); only an MPS device "
                                "raises the TypeError")
    return "not reproduced", f"the code makes a {dtype} tensor, not float64"


def probe(evidence: Float64Evidence) -> Probe | None:
    code = _CODE.get(evidence.kind)
    if code is None:
        return None
    before, after = code
    return Probe(f"{_DEVICE}{before}\n{_RESULT}", f"{_DEVICE}{after}\nassert t.dtype == torch.float32, t.dtype",
                 EXPECT, judge=_judge, note=f"a float64 tensor on mps ({evidence.kind})")
