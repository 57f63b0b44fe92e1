"""DEV009's probe: a module moved to a device whose forward mixes its input with a CPU tensor (made without
``device=``, or kept as a plain attribute that ``.to()`` does not move) raises torch's own device-mismatch
error; with ``device=x.device`` (or the attribute registered as a non-persistent buffer) it runs, and the
module's ``state_dict`` keys stay what they were.

Where there is no GPU the ``meta`` device stands in for one (``ACCEL or "meta"``): torch's meta kernels check
the devices of an elementwise operation, a comparison, ``torch.cat``, ``torch.where`` and ``masked_fill`` as
the CUDA kernels do, and raise ``Tensor on device cpu is not on the expected device meta!`` (torch 2.13). They
do not check matmul, a layer's parameters or ``+=`` (those run on meta), so those need a GPU to show."""

from __future__ import annotations

from devlint import devices
from devlint.probes import Needs, Probe
from devlint.rules.dev009_module_device_mismatch import DeviceMismatchEvidence

EVIDENCE = (
    DeviceMismatchEvidence("factory", "zeros", "add"),
    DeviceMismatchEvidence("factory", "arange", "compare"),
    DeviceMismatchEvidence("factory", "randn", "cat"),
    DeviceMismatchEvidence("attribute", "ones", "masked_fill"),
    DeviceMismatchEvidence("attribute", "zeros", "add"),
    DeviceMismatchEvidence("factory", "zeros", "matmul"),
    DeviceMismatchEvidence("factory", "zeros", "layer"),
)

# how the forward combines the input x with the CPU tensor c (both 2 x 4, float)
_OPS = {
    "compare": "x < c",
    "cat": "torch.cat([x, c])",
    "masked_fill": "x.masked_fill(c.bool(), 0.0)",
    "where": "torch.where(c.bool(), x, 0.0)",
    "matmul": "x @ c.t()",
    "iadd": "x.__iadd__(c)",
    "layer": "self.lin(c) + x",
}
# what meta's kernels do not check: shown on a GPU only
_ACCELERATOR_ONLY = frozenset({"matmul", "iadd", "layer"})
EXPECT = "|".join((devices.SAME_DEVICE_ERROR, devices.META_DEVICE_ERROR, "to be on the same device"))


def _module(make: str, attribute: str, op: str) -> str:
    expr = _OPS.get(op, "x + c")
    if attribute:
        init, use = f"        {attribute}\n", f"        c = self.c\n        return {expr}\n"
    else:
        init, use = "", f"        c = {make}\n        return {expr}\n"
    return (
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.lin = torch.nn.Linear(4, 4)\n"
        f"{init}"
        "    def forward(self, x):\n"
        f"{use}"
    )


def probe(evidence: DeviceMismatchEvidence) -> Probe:
    if evidence.factory == "arange":
        factory, on_device = "torch.arange(8.0).view(2, 4)", "torch.arange(8.0, device=x.device).view(2, 4)"
    else:
        factory, on_device = "torch.ones(2, 4)", "torch.ones(2, 4, device=x.device)"
    run = ("DEV = ACCEL or 'meta'\nm = M().to(DEV)\nout = m(torch.ones(2, 4, device=DEV))\n")
    if evidence.kind == "attribute":
        before = _module(factory, f"self.c = {factory}", evidence.op) + run
        after = (_module(factory, f"self.register_buffer('c', {factory}, persistent=False)", evidence.op) + run
                 + "assert 'c' not in m.state_dict() and str(out.device).startswith(DEV), m.state_dict().keys()")
        note = "a plain tensor attribute used in forward after model.to(device)"
    else:
        before = _module(factory, "", evidence.op) + run
        after = _module(on_device, "", evidence.op) + run + "assert str(out.device).startswith(DEV)"
        note = f"torch.{evidence.factory}(...) without device= in forward"
    needs = Needs.ACCELERATOR if evidence.op in _ACCELERATOR_ONLY else None
    where = " (the meta device stands in for a GPU where there is none)" if needs is None else ""
    return Probe(before, after, EXPECT, needs=needs, note=f"{note}, combined by {evidence.op}{where}")
