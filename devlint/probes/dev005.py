"""DEV005's probe: a checkpoint whose tensors were saved on a GPU, loaded without ``map_location``.

On a machine with CUDA the checkpoint is saved from a real CUDA tensor (and loads: no bug there). Elsewhere
the GPU is simulated the way torch itself records it: ``torch.save`` asks ``torch.serialization.location_tag``
for each storage's location, and the probe makes it answer ``"cuda:0"`` during the save, so the file is what
a GPU run writes. For ``torch.jit.load`` the archive of a scripted module is rewritten: the storage
location ``"cpu"`` in its ``data.pkl`` becomes ``"cuda:0"`` (what ``torch.jit.save`` writes for a module on
the GPU). Loading it without ``map_location`` then raises torch's own error; with the fix's
``map_location`` it loads.
"""

from __future__ import annotations

import ast

from devlint import devices
from devlint.probes import Probe
from devlint.rules.dev005_torch_load_map_location import CheckpointEvidence

EXPECT = (r"Attempting to deserialize object on a CUDA device|Could not run 'aten::empty_strided' with arguments "
          r"from the 'CUDA' backend|Torch not compiled with CUDA enabled|No CUDA GPUs are available|"
          r"Found no NVIDIA driver|CUDA driver")

EVIDENCE = (
    CheckpointEvidence("torch.load", '"cpu"'),
    CheckpointEvidence("torch.load", "device"),
    CheckpointEvidence("torch.jit.load", '"cpu"'),
)

# A torch.save checkpoint {"weight": ...} in memory, its storage tagged as on the GPU: _buf
_SAVED = '''\
import io
import torch.serialization as _ser
_buf = io.BytesIO()
if ACCEL == "cuda":
    torch.save({"weight": torch.ones(2, 3, device="cuda")}, _buf)
else:
    _real = _ser.location_tag
    _ser.location_tag = lambda storage: "cuda:0"  # what torch.save records for a tensor on a GPU
    try:
        torch.save({"weight": torch.ones(2, 3)}, _buf)
    finally:
        _ser.location_tag = _real
_buf.seek(0)
'''

# A torch.jit.save archive of a scripted Linear in memory, its storages on the GPU: _buf
_SCRIPTED = '''\
import io
import struct
import zipfile
_module = torch.jit.script(torch.nn.Linear(2, 2))
_raw = io.BytesIO()
if ACCEL == "cuda":
    torch.jit.save(_module.cuda(), _raw)
    _buf = io.BytesIO(_raw.getvalue())
else:
    torch.jit.save(_module, _raw)
    _cpu = b"X" + struct.pack("<I", 3) + b"cpu"  # the pickled location string of each storage
    _gpu = b"X" + struct.pack("<I", 6) + b"cuda:0"
    _buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(_raw.getvalue())) as _zin, zipfile.ZipFile(_buf, "w") as _zout:
        for _name in _zin.namelist():
            _data = _zin.read(_name)
            _zout.writestr(_name, _data.replace(_cpu, _gpu) if _name.endswith("/data.pkl") else _data)
_buf.seek(0)
'''

LOADERS = frozenset({"torch.load", "torch.jit.load"})
_DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


def _location(map_location: str) -> str | None:
    """The fix's map_location as probe code: a device-string literal (checked against torch's device grammar)
    or the program's ``device`` variable (any other name); None for anything else."""
    if map_location[:1] in ("'", '"'):
        try:
            value = ast.literal_eval(map_location)
        except (ValueError, SyntaxError):
            return None
        return repr(value) if isinstance(value, str) and devices.is_valid(value) else None
    return "device" if map_location.isidentifier() else None


def probe(evidence: CheckpointEvidence) -> Probe | None:
    if evidence.loader not in LOADERS:
        return None
    jit = evidence.loader == "torch.jit.load"
    setup = _SCRIPTED if jit else _SAVED
    call = "torch.jit.load(_buf" if jit else "torch.load(_buf"
    after = None
    if evidence.map_location is not None:
        location = _location(evidence.map_location)
        if location is not None:
            after = f"{setup}{_DEVICE if location == 'device' else ''}{call}, map_location={location})\n"
    return Probe(f"{setup}{call})\n", after, EXPECT,
                 note=f"{evidence.loader} of a checkpoint saved on a GPU")
