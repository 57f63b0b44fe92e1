"""DEV006: a CUDA-only torch call (torch.cuda.synchronize(), get_device_name(), Event(), ...) reachable on a
machine without CUDA, in code that is otherwise meant to run there."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from devlint import devices
from devlint.analysis import (
    AVAILABILITY_QUERIES,
    OTHER_DEVICES,
    CommandLineOption,
    asks_availability,
    chooses_device_with_fallback,
    command_line_options,
    device_uses,
    is_script,
)
from devlint.context import Context, dotted_name, string_value, walk
from devlint.diagnostics import Applicability, Edit, Evidence, Finding, Fix, FixAvailability, Position
from devlint.guards import Polarity, ends_by_raising, guards, instance_method
from devlint.lazy import LazyModule
from devlint.project import call_sites, callee, caller_words
from devlint.rules.base import Invalid, Rule, Valid, node_end, node_start
from devlint.rules.fixes import torch_name
from devlint.screen import AstIndex, Scope, dotted
from devlint.screen import walk as ast_walk
from devlint.source import split_lines

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")


@dataclass(frozen=True)
class CudaCallEvidence(Evidence):
    """The CUDA-only call, by its canonical qualified name (``torch.cuda.synchronize``)."""

    call: str


class _AllOf:
    """A byte trigger that needs each of its patterns: the namespace (``cuda`` / ``accelerator``: in the
    attribute chain or the import) and a called name."""

    def __init__(self, *patterns: re.Pattern[bytes]) -> None:
        self.patterns = patterns

    def search(self, data: bytes) -> object:
        return all(p.search(data) for p in self.patterns) or None


def _names(part: int) -> bytes:
    """Part ``part`` of every CUDA-only call's qualified name (1: the namespace, -1: the called name)."""
    every = [*devices.CUDA_ONLY_API, *devices.CUDA_ONLY_CONTEXTS]
    names: list[bytes] = sorted({q.split(".")[part].encode() for q in every}, key=len, reverse=True)
    return b"|".join(names)


class UnguardedCudaCall(Rule):
    code = "DEV006"
    name = "unguarded-cuda-call"
    summary = "A CUDA-only call (torch.cuda.synchronize(), get_device_name(), Event(), ...) runs without a GPU check."
    fix_availability = FixAvailability.SOMETIMES
    evidence_type = CudaCallEvidence
    triggers = _AllOf(re.compile(_names(1)), re.compile(rb"\b(?:" + _names(-1) + rb")\b"))

    doc_what = '''
Finds calls that need a GPU, reachable without one, in code that is meant to run without one. The calls,
with what each raises on torch 2.13.0+cpu (every one of them was run on that build):
- `AssertionError: Torch not compiled with CUDA enabled`: `torch.cuda.synchronize()`, `get_device_name()`,
  `get_device_properties()`, `get_device_capability()`, `current_device()`, `mem_get_info()`,
  `current_stream()`, `default_stream()`, `get_rng_state()`, `initial_seed()`, `ipc_collect()`,
  `set_per_process_memory_fraction()`, `init()`, `cudart()`, `current_blas_handle()`,
  `can_device_access_peer()`, `get_sync_debug_mode()`, `set_sync_debug_mode()`;
- `AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'`: `torch.cuda.set_device(0)`;
- `AttributeError: module 'torch._C' has no attribute '_cuda_resetPeakMemoryStats'`:
  `torch.cuda.reset_peak_memory_stats()`, `reset_max_memory_allocated()`, `reset_max_memory_cached()`;
- `AttributeError: module 'torch._C' has no attribute '_cuda_resetAccumulatedMemoryStats'`:
  `torch.cuda.reset_accumulated_memory_stats()`;
- `AttributeError: module 'torch._C' has no attribute '_cuda_memorySnapshot'`: `torch.cuda.memory_snapshot()`;
- `KeyError: 'allocated_bytes.all.current'`: `torch.cuda.memory_summary()`;
- `RuntimeError: Tried to instantiate dummy base class Event`: `torch.cuda.Event(enable_timing=True)` (and
  `... class CUDAGraph` for `torch.cuda.CUDAGraph()`);
- `RuntimeError: torch.cuda.Stream requires CUDA support`: `torch.cuda.Stream()`;
- `RuntimeError: NVTX functions not installed. Are you sure you have a CUDA build?`:
  `torch.cuda.nvtx.range_push()`, `range_pop()`, `mark()`, `with torch.cuda.nvtx.range(...):`;
- `RuntimeError: PyTorch was compiled without CUDA support`: `with torch.cuda.device(0):`;
- `RuntimeError: Cannot access accelerator device when none is available.`: the device-generic
  `torch.accelerator.synchronize()`, `current_device_index()` (`current_device_idx()`), `set_device_index()`
  (`set_device_idx()`), `current_stream()`, `empty_cache()`, `memory_allocated()`, `max_memory_allocated()`,
  `memory_reserved()`, `max_memory_reserved()`, `memory_stats()`, `reset_peak_memory_stats()`,
  `reset_accumulated_memory_stats()`, `get_memory_info()`, `get_device_capability()`, and
  `with torch.accelerator.device_index(0):`.

On a CUDA build of torch with no GPU visible (the default Linux wheel on a laptop or CI runner; seen with
torch 2.11.0+cu130 on an H100 machine with `CUDA_VISIBLE_DEVICES=""`, 2026-11-26) the errors differ:
`synchronize()`, `get_device_name(0)`, `set_device(0)`, `with torch.cuda.device(0):` and
`torch.accelerator.synchronize()` raise `RuntimeError: No CUDA GPUs are available`,
`reset_peak_memory_stats()` raises `RuntimeError: invalid argument to reset_peak_memory_stats`,
`current_device()` and `mem_get_info()` raise `RuntimeError: No CUDA GPUs are available`,
`torch.cuda.Stream()` raises `AcceleratorError: CUDA error: no CUDA-capable device is detected`, and
`torch.cuda.Event(enable_timing=True)` is built without error: the event is created on its first
`record()`, which raises `RuntimeError: No CUDA GPUs are available` (`bash bench/device_check.sh facts`).
So on that build `devlint verify` does not reproduce an `Event` that is built and never recorded.

Imports are resolved: `import torch as T; T.cuda.synchronize()`, `from torch.cuda import synchronize`,
`torch.cuda.memory.mem_get_info()`.

Not reported, because they run without CUDA (checked on the same build): `torch.cuda.is_available()`,
`device_count()`, `is_initialized()`, `empty_cache()`, `memory_allocated()`, `max_memory_allocated()`,
`memory_reserved()`, `max_memory_reserved()`, `memory_stats()` (0 / empty), `manual_seed()`,
`manual_seed_all()`, `seed()`, `seed_all()`, `get_rng_state_all()` (nothing to do), `get_arch_list()`,
`is_bf16_supported()`, `torch.cuda.amp.GradScaler()`, `torch.amp.GradScaler("cuda")` and
`torch.cuda.amp.autocast()` (they warn and disable themselves), `torch.backends.cudnn.*` and
`torch.backends.cuda.matmul.*` settings, `torch.accelerator.is_available()`, `device_count()` and
`current_accelerator()` (None); `torch.cuda.device(...)` built but not entered, `set_device(-1)` and
`with torch.cuda.device(-1):` (no device: nothing happens), also through an index the function set to a
negative number on its path without CUDA before the call (SimCLR's `else: args.gpu_index = -1`, then
`with torch.cuda.device(args.gpu_index):`).

Not reported where the call only runs with a GPU (the guards DEV001 reads): inside
`if torch.cuda.is_available():`, `if x.is_cuda:`, `if device.type == "cuda":`, `if device != "cpu":`, a
conditional expression or `and` on such a test, the `else` of `if not torch.cuda.is_available():`, after an
early exit (`if not torch.cuda.is_available(): sys.exit(...)`, `raise`, `assert torch.cuda.is_available()`),
in a `try` whose handler catches the error and recovers (as DEV001 reads it: `pass`, a `return`, a fallback;
not a handler that only logs, prints, skips or raises again, also after work of its own), in a function or class
named for the GPU (`cuda_timer`, `CudaGenerator`; not one the file names in a string outside any guard: the
latent-diffusion template's `"target": "main.CUDACallback"` builds it on the CPU path too) or whose every call is
guarded, in a GPU-only test (`@pytest.mark.skipif(not
torch.cuda.is_available(), ...)`), after a NCCL process group starts or a launched rank's GPU is set
(`torch.cuda.set_device(local_rank)`; not `set_device(0)`: the calls after a GPU picked by number are
reported with it). Nor where the error is handled: in the body of a `try` whose handler catches every error
(bare `except:`, `Exception`, `BaseException`) and does not raise again, whatever it does then (`except:
print("Could not pick default device.")`: the program goes on), or in a function of the module's top level
whose every call in the project is so caught; a handler for one class does not count (torch's CPU build raises
AssertionError, a CUDA build on a machine without a GPU RuntimeError). And, beyond those guards, where the
code is GPU-only by design:
- `torch.cuda.set_device(...)` and `torch.cuda.current_device()` in a file that uses `torch.distributed`:
  they pick or name the GPU of a launched rank;
- the methods of a class that refuses to work without a GPU (one of its methods raises or exits when
  none is available, as a quantizer's `validate_environment` does);
- the body of an `if` whose condition calls a helper of the file that asks for an accelerator
  (`if self._accelerator_serves():` where the helper calls `torch.accelerator.current_accelerator()`).

Where it reports: only in files that have a fallback somewhere, a path they take without CUDA — the file asks
whether there is a GPU (`torch.cuda.is_available()`, `torch.accelerator.is_available()`, a `device_count()`
compared with zero or tested as a truth value; not a question only printed or logged, `print("CUDA available:",
torch.cuda.is_available())`), compares a device with `"cpu"` or `"mps"`, chooses `"cpu"` / `"mps"` (a branch of a
conditional expression, a device variable, a `device="cpu"` parameter default, a `--device` option's default, a
`"device"` config entry, a flag set for the CPU, `cpu = True`), or has a GPU option that can be turned off
(`--cpu`, `--no-cuda`, a `--cuda` switch: `action="store_true"` / `"store_false"`, a `True`, `False` or `None`
default, so `--cuda False` is one of its values; not an option that keeps one part on the CPU,
`--model-ema-force-cpu`, `--cpu-offload`, Wan's `--t5_cpu`; nor a count, `--n_cpu`), or a device option
(`--device`, whatever its default: `--device cpu` is one of its values), or, in a project run, takes a value from
a function of another file of the project that chooses a device with a fallback (nanochat's `device_type =
autodetect_device_type()`: the function asks for an accelerator, names `"cpu"` or `"mps"` and returns a value).
In a project run, a file with no fallback of its own is reported where a script of the project that has one calls
the function holding the call, with no check at the call:
the `engine.py` whose `train_one_epoch` synchronises, run by `main.py --device cpu` (DeiT, ConvNeXt, MAE,
torchvision's references); for a method, also where such a script builds its class, with no check there
(`gui = NeRFGUI(opt, trainer)` under `if opt.gui:`, whose steps time themselves with CUDA events; the class
only ever called, not subclassed or handed around). Only a script's fallback counts (a file that runs code
at its top level, as `if __name__ == "__main__":` does): a library module's fallback is about its own work,
not the paths its callers take. A GPU count used as a number
(`nprocs = n * torch.cuda.device_count()`, `torch.cuda.device_count() > 1` for `DataParallel`) is no
fallback, nor a CPU copy of a model beside the GPU one (timm's `ModelEma(model, device="cpu" if force_cpu
else "")`, where `""` leaves the copy on the model's device, as `None` does in newer timm). A script with no
fallback anywhere, that puts everything on CUDA with `.cuda()` / `"cuda"`, is GPU-only as written: DEV001 reports its
hard-coded devices, and once they fall back to the CPU this rule reports the CUDA-only calls that still
stand in the way. An option that picks how many GPUs (`--multigpus`, `--multi_gpu`: FUNIT's
`train.py`, which moves its trainer with `.cuda()` either way) is no way to run without one.
'''
    doc_why = '''
Device-agnostic code picks the CPU when there is no GPU, then crashes at the first CUDA-only call: a
`torch.cuda.synchronize()` in a timing loop, a `print(torch.cuda.get_device_name(0))` in the banner,
`torch.cuda.Event(enable_timing=True)` in a benchmark, `torch.cuda.reset_peak_memory_stats()` in a logging
step. On a CPU build of torch these raise the errors listed above; on a CUDA build without a GPU (a
CI runner with the default wheel, `CUDA_VISIBLE_DEVICES=""`) they raise `RuntimeError: Found no NVIDIA
driver on your system` or `No CUDA GPUs are available`. The fallback the code was written with never runs
to the end.
'''
    doc_use_instead = '''
Call it only where a GPU is there. The autofix wraps a call that stands alone on its line
(`torch.cuda.synchronize()`, `torch.cuda.reset_peak_memory_stats()`), or a `print(...)` / logging call of
what it returns, in `if torch.cuda.is_available():` (`if torch.accelerator.is_available():` for the
`torch.accelerator` API). For events and streams, create them under the same check and time CPU runs
with `time.perf_counter()`.
'''
    doc_fix_safety = '''
Unsafe: without a GPU the wrapped statement no longer runs (no synchronisation, no GPU name printed),
which is the point, but it changes what the program does. The fix is offered only for an expression
statement alone on its line whose value nobody uses: the call itself, or a `print` / `logger.info`-style
call of what it returns; an assignment (`name = torch.cuda.get_device_name(0)`), a call inside a larger
expression, a statement over several lines, a statement after `;` or on the line of its `if` / `with`, and
`with torch.cuda.device(...)` are reported without a fix. The statement keeps its indentation and its
comments (the comments above it stay above the `if`, a comment at its end stays on its line); the new `if`
indents one level with the file's own indentation. It names torch only as the file binds it there
(`torch`, `T` for `import torch as T`); a file that imports only a part of torch (`from torch.cuda import
synchronize`) gets `import torch`; where torch cannot be named (imported only under `if TYPE_CHECKING:`,
shadowed by a local) there is no fix.
'''
    doc_known_problems = '''
A file that never asks for a device and never names the CPU is taken as GPU-only, also when it is a helper
module of a device-agnostic project (`utils.py` with `def sync(): torch.cuda.synchronize()`), unless a script
with a fallback calls the function directly: called through another helper (two hops), through a variable,
or only from library modules, it is not reported.
A `try` around the call counts as a guard when its handler catches `RuntimeError`, `AssertionError`,
`AttributeError`, `Exception` or a tuple and recovers, though `except RuntimeError:` does not catch the
`AssertionError` of a CPU build. A helper that asks for an accelerator counts as a guard whichever way it
answers (`def no_gpu(): return not torch.cuda.is_available()`). Calls through a variable
(`sync = torch.cuda.synchronize; sync()`) and `torch.mps` / `torch.xpu` calls (a CUDA check guards none of
them) are not followed. A project that is GPU-only by its README alone: `ignore = ["DEV006"]` in
`[tool.devlint]`, or `# noqa: DEV006` for a line.
'''
    doc_options = '''
`device-fallback` (see DEV001) does not change this rule's fix, also not in `accelerator` mode: a
`torch.cuda.*` call needs CUDA itself, and `torch.accelerator.is_available()` is true on a Mac (mps) or an
Intel GPU (xpu), where `torch.cuda.synchronize()` still raises (torch for macOS is not compiled with CUDA:
the error of the CPU build above). So a `torch.cuda` call is wrapped in `if torch.cuda.is_available():` in
every mode, and a `torch.accelerator` call in `if torch.accelerator.is_available():`. `select`, `ignore`,
`per-file-ignores` and `# noqa: DEV006` apply as for every rule.
'''
    doc_references = '''
- [torch.cuda](https://pytorch.org/docs/stable/cuda.html)
- [torch.accelerator](https://pytorch.org/docs/stable/accelerator.html)
- [Device-agnostic code (CUDA semantics)](https://pytorch.org/docs/stable/notes/cuda.html#device-agnostic-code)
- [torch.cuda.Event](https://pytorch.org/docs/stable/generated/torch.cuda.Event.html)
'''
    doc_notebooks = '''
Notebooks (`.ipynb`) are linted as one module in cell order: a device chosen with a fallback in an early
cell makes the notebook device-agnostic, and a `print(torch.cuda.get_device_name(0))` in a later cell is
reported; an `if not torch.cuda.is_available(): raise ...` cell guards the cells after it. Colab's
`"accelerator": "GPU"` metadata is no guard. The fix wraps the statement inside its own cell (only that
cell's source is rewritten).
'''

    VALID = (
        Valid('import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n'
              '    print(torch.cuda.get_device_name(0))\n'),
        Valid('import sys\nimport torch\nif not torch.cuda.is_available():\n    sys.exit("needs a GPU")\n'
              'start = torch.cuda.Event(enable_timing=True)\n'),
        Valid('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\ntorch.cuda.empty_cache()\n'
              'print(torch.cuda.memory_allocated(), torch.cuda.device_count())\ntorch.cuda.manual_seed_all(0)\n'),
        Valid('import time\nimport torch\ndef timed(fn, x):\n    if x.is_cuda:\n        torch.cuda.synchronize()\n'
              '    return time.perf_counter()\n'),
        Valid('import torch\nmodel = torch.nn.Linear(2, 2).cuda()\ntorch.cuda.synchronize()\n'),  # GPU-only: DEV001's
        Valid('import os\nimport torch\nimport torch.distributed as dist\nuse_gpu = torch.cuda.is_available()\n'
              'dist.init_process_group("gloo")\ntorch.cuda.set_device(int(os.environ["LOCAL_RANK"]))\n'),
        Valid('import torch\nuse_cuda = torch.cuda.is_available()\n'
              'start = torch.cuda.Event(enable_timing=True) if use_cuda else None\n'),
        Valid('import torch\nn = torch.cuda.device_count()\n'  # a number of GPUs: no fallback
              'model = torch.nn.DataParallel(torch.nn.Linear(2, 2), device_ids=list(range(n)))\n'
              'torch.cuda.synchronize()\n'),
    )
    INVALID = (
        Invalid(
            'import time\n\nimport torch\n\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
            'model = torch.nn.Linear(512, 512).to(device)\nx = torch.randn(64, 512, device=device)\n\n'
            't0 = time.perf_counter()\ny = model(x)\ntorch.cuda.synchronize()  # wait for the kernels\n'
            'print(f"forward: {time.perf_counter() - t0:.4f} s")\n',
            fixed='import time\n\nimport torch\n\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
                  'model = torch.nn.Linear(512, 512).to(device)\nx = torch.randn(64, 512, device=device)\n\n'
                  't0 = time.perf_counter()\ny = model(x)\nif torch.cuda.is_available():\n'
                  '    torch.cuda.synchronize()  # wait for the kernels\n'
                  'print(f"forward: {time.perf_counter() - t0:.4f} s")\n',
            doc=True,
        ),
        Invalid('import torch as T\nfrom torch.cuda import get_device_name\n'
                'device = "cuda" if T.cuda.is_available() else "cpu"\nprint("GPU:", get_device_name(0))\n',
                fixed='import torch as T\nfrom torch.cuda import get_device_name\n'
                      'device = "cuda" if T.cuda.is_available() else "cpu"\nif T.cuda.is_available():\n'
                      '    print("GPU:", get_device_name(0))\n'),
        Invalid('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
                'start = torch.cuda.Event(enable_timing=True)\n'),
        Invalid('import torch\ndef run(model, x, device="cpu"):\n    out = model(x.to(device))\n'
                '    torch.accelerator.synchronize()\n    return out\n',
                fixed='import torch\ndef run(model, x, device="cpu"):\n    out = model(x.to(device))\n'
                      '    if torch.accelerator.is_available():\n        torch.accelerator.synchronize()\n'
                      '    return out\n'),
        Invalid('from torch.cuda import is_available, synchronize\n'
                'device = "cuda" if is_available() else "cpu"\nsynchronize()\n',
                fixed='import torch\nfrom torch.cuda import is_available, synchronize\n'
                      'device = "cuda" if is_available() else "cpu"\nif torch.cuda.is_available():\n'
                      '    synchronize()\n'),
        Invalid('import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument("--cuda", '
                'action="store_true")\nargs = p.parse_args()\nwith torch.cuda.device(0):\n    pass\n'),
        Invalid('import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument("--device", '
                'default="cuda")\nargs = p.parse_args()\nx = torch.ones(2, device=torch.device(args.device))\n'
                'torch.cuda.synchronize()\n',
                fixed='import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument("--device", '
                      'default="cuda")\nargs = p.parse_args()\nx = torch.ones(2, device=torch.device(args.device))\n'
                      'if torch.cuda.is_available():\n    torch.cuda.synchronize()\n'),
    )

    def screen(self, index: AstIndex) -> bool:
        if not index.imports_torch:
            return False
        calls = [call for call in index.calls if any(devices.cuda_only_call(q) is not None
                                                     for q in index.qualnames(call.func))]
        if not calls:
            return False
        guarded = index.availability_guarded()  # guards.py reports none of these
        open_calls = [call for call in calls if id(call) not in guarded]
        return bool(open_calls) and (_screen_agnostic(index) or _screen_device_from_fallback(index)
                                     or _screen_called_with_fallback(index, open_calls))

    def check(self, ctx: Context) -> Iterable[Finding]:
        if not ctx.imports_torch:
            return
        guard = guards(ctx)
        agnostic: bool | None = None
        for call in ctx.nodes(cst.Call):
            name = devices.cuda_only_call(ctx.qualname(call.func))
            if name is None or _harmless(ctx, call, name) or guard.is_guarded(call) or _by_design(ctx, call, name) \
                    or _caught(ctx, call):
                continue
            if agnostic is None:
                agnostic = device_agnostic(ctx)
            if not agnostic and (ctx.project is None or not _called_with_fallback(ctx, call)):
                continue
            yield self._finding(ctx, call, name)

    def _finding(self, ctx: Context, call: cst.Call, name: str) -> Finding:
        written = ctx.code(call.func)
        check = devices.availability_check(name)
        gpu = "an accelerator" if name.startswith("torch.accelerator.") else "a GPU"
        if name in devices.CUDA_ONLY_CONTEXTS:
            what, how = f"`with {written}(...)`", f"enter it only under `if {check}():`"
            error = devices.CUDA_ONLY_CONTEXTS[name]
        else:
            what, how = f"{written}()", f"call it only under `if {check}():`"
            error = devices.CUDA_ONLY_API[name]
        if name in _MAKERS:
            how = f"create it only under `if {check}():`" + (
                " and time the CPU with time.perf_counter()" if name == "torch.cuda.Event" else "")
        return self.finding(ctx, call, f"{what} crashes without {gpu} ({error}); {how}", _fix(ctx, call, name),
                            evidence=CudaCallEvidence(call=name))


_MAKERS = frozenset({"torch.cuda.Event", "torch.cuda.Stream", "torch.cuda.CUDAGraph"})
# Calls that take a device first, and what means "no device" to them (nothing happens).
_DEVICE_SETTERS = frozenset({"torch.cuda.set_device", "torch.cuda.device", "torch.accelerator.device_index"})


def _harmless(ctx: Context, call: cst.Call, name: str) -> bool:
    """A call that does not raise without CUDA after all: a context manager that no ``with`` enters,
    ``set_device(-1)`` / ``device(-1)`` (no device: nothing happens); or not for want of CUDA:
    ``set_device(None)`` raises ValueError on every machine."""
    if name in devices.CUDA_ONLY_CONTEXTS:
        item = ctx.parent(call)
        if not (isinstance(item, cst.WithItem) and item.item is call):
            return True
    if name in _DEVICE_SETTERS and call.args:
        value = call.args[0].value
        return _negative(value) or (isinstance(value, cst.Name) and value.value == "None") \
            or _negative_without_cuda(ctx, call, value)
    return False


def _negative(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus)


def _negative_without_cuda(ctx: Context, call: cst.Call, value: cst.BaseExpression) -> bool:
    """Is the index a name the function set to a negative number on its path without CUDA, in an ``if``
    before the call (SimCLR's ``if not args.disable_cuda and torch.cuda.is_available(): ...`` / ``else:
    args.gpu_index = -1``, then ``with torch.cuda.device(args.gpu_index):``)? There the call does nothing."""
    name = dotted_name(value)
    func = ctx.enclosing_function(call)
    if name is None or func is None or not isinstance(func.body, cst.IndentedBlock):
        return False
    guard = guards(ctx)
    line = ctx.range(call).start.line
    for stmt in func.body.body:
        if not isinstance(stmt, cst.If) or ctx.range(stmt).end.line >= line:
            continue
        polarity = guard.polarity(stmt.test)
        if polarity is Polarity.UNAVAILABLE:
            arm: cst.BaseSuite | None = stmt.body
        elif polarity is Polarity.AVAILABLE and isinstance(stmt.orelse, cst.Else):
            arm = stmt.orelse.body
        else:
            continue
        if arm is not None and any(
                isinstance(small, cst.Assign) and _negative(small.value)
                and any(dotted_name(t.target) == name for t in small.targets)
                for line_ in (arm.body if isinstance(arm, cst.IndentedBlock) else ())
                if isinstance(line_, cst.SimpleStatementLine) for small in line_.body):
            return True
    return False


def _caught(ctx: Context, call: cst.Call) -> bool:
    """Can the call's error not escape: it runs in the body of a ``try`` of its function whose handler catches
    every error and does not raise again (``try: print(torch.cuda.get_device_name(d))`` / ``except:
    print("no GPU")``), or in a function of the module's top level whose every call in the project is so
    caught (Fooocus' ``get_torch_device_name``, called once, in such a ``try``)? The error is handled there: the
    program goes on. Only a bare ``except:``, ``Exception`` or ``BaseException`` catches it on every machine
    without a GPU: torch's CPU build raises AssertionError (or AttributeError), a CUDA build on a machine
    without one RuntimeError. (DEV001 asks more of a handler, a path around the failure: a model the handler
    leaves on the CPU meets inputs moved to the GPU; a CUDA-only query that failed leaves nothing behind.)"""
    if _caught_here(ctx, call):
        return True
    func = ctx.enclosing_function(call)
    if func is None or ctx.parent(func) is not ctx.module:
        return False
    sites = call_sites(ctx, func)
    return bool(sites) and all(_caught_here(site_ctx, site) for site_ctx, site in sites or [])


def _caught_here(ctx: Context, node: cst.CSTNode) -> bool:
    """Is ``node`` in the body of a ``try`` (of its own function) with a handler that catches every error (bare
    ``except:``, ``Exception``, ``BaseException``) and does not end by raising again?"""
    child = node
    for anc in ctx.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(anc, cst.Try) and child is anc.body and any(
                _catches_all(h) and not ends_by_raising(h) for h in anc.handlers):
            return True
        child = anc
    return False


def _catches_all(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    kinds = [e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
    return any((dotted_name(k) or "").split(".")[-1] in ("Exception", "BaseException") for k in kinds)


# The calls that pick or name the process's GPU: in distributed code, the launched rank's GPU.
_RANK_DEVICE_CALLS = frozenset({"torch.cuda.set_device", "torch.cuda.current_device"})
# Calls that say whether an accelerator is there (a helper calling one is a device test).


def _by_design(ctx: Context, call: cst.Call, name: str) -> bool:
    """GPU-only by design beyond what the guards say: the GPU of a distributed rank, a method of a class that
    is GPU-only (by its name, or one of its methods raises without a GPU), the body of an ``if`` whose
    condition calls a helper of this file that asks for an accelerator."""
    if name in _RANK_DEVICE_CALLS and ctx.shared("dev006_distributed", _distributed):
        return True
    guard = guards(ctx)
    child: cst.CSTNode = call
    for anc in ctx.ancestors(call):
        if isinstance(anc, cst.ClassDef) and (guard.is_guarded(anc.name) or any(
                guard.requires_cuda(f) for f in _methods(anc))):
            return True
        if isinstance(anc, cst.If) and child is anc.body and _helper_test(ctx, anc.test):
            return True
        child = anc
    return False


def _distributed(ctx: Context) -> bool:
    """Does the file use ``torch.distributed`` (imports it, or calls ``torch.distributed.*``)?"""
    return any(m.startswith("torch.distributed") for m in ctx.imported_modules) or any(
        (ctx.qualname(c.func) or "").startswith("torch.distributed.") for c in ctx.nodes(cst.Call))


def _methods(cls: cst.ClassDef) -> list[cst.FunctionDef]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else []
    return [f for f in body if isinstance(f, cst.FunctionDef)]


def _query_helpers(ctx: Context) -> frozenset[str]:
    """The names of the file's functions and methods that ask whether an accelerator is there."""
    found = set()
    for call in ctx.nodes(cst.Call):
        func = ctx.enclosing_function(call) if ctx.qualname(call.func) in AVAILABILITY_QUERIES else None
        if func is not None:
            found.add(func.name.value)
    return frozenset(found)


def _helper_test(ctx: Context, test: cst.BaseExpression) -> bool:
    """Does the condition call a helper of this file that asks for an accelerator
    (``if self._accelerator_serves("2.9"):``)?"""
    helpers = ctx.shared("dev006_query_helpers", _query_helpers)
    if not helpers:
        return False
    return any(isinstance(c, cst.Call) and ctx.qualname(c.func) is None
               and (dotted_name(c.func) or "").split(".")[-1] in helpers for c in walk(test))


def _called_with_fallback(ctx: Context, call: cst.Call) -> bool:
    """In a project run, is the function holding ``call`` (the outermost one: a top-level function or a
    method) called, with no availability check there, from a script of the project (a program: it runs code
    at its top level, ``if __name__ == "__main__":``) that has a fallback (:func:`device_agnostic`)? A
    training step in ``engine.py`` that ``main.py --device cpu`` runs. One hop. A library module's fallback
    says nothing of the paths its callers take, so only a program's counts."""
    func = None
    for anc in ctx.ancestors(call):
        if isinstance(anc, cst.FunctionDef):
            func = anc
    if func is None:
        return False
    sites = call_sites(ctx, func) or []
    owner = ctx.parent(ctx.parent(func))
    if isinstance(owner, cst.ClassDef) and instance_method(func):
        sites += guards(ctx).constructions(owner) or []  # a method runs on the instances the script builds
    return any(site_ctx is not ctx and is_script(site_ctx.module) and device_agnostic(site_ctx)
               and not guards(site_ctx).is_guarded(site)
               for site_ctx, site in sites)


def device_agnostic(ctx: Context) -> bool:
    """Does this file have a fallback somewhere (a path it takes without CUDA)? It asks whether an accelerator
    is there (a GPU count only when compared with zero: a count of GPUs to spread work over is no fallback),
    compares a device with "cpu" / "mps" or chooses one, or has a GPU option that can be turned off. Computed
    once per module (DEV005 asks too)."""
    return ctx.shared("dev006.device_agnostic", _device_agnostic)


def _device_agnostic(ctx: Context) -> bool:
    if any(asks_availability(ctx, c) for c in ctx.nodes(cst.Call)):
        return True
    uses = device_uses(ctx)
    for literal in ctx.nodes(cst.SimpleString):
        value = string_value(literal)
        if value is None or not devices.is_valid(value) or devices.parse_device(value).type not in OTHER_DEVICES:
            continue
        parent = ctx.parent(literal)
        other = (parent.orelse if parent.body is literal else parent.body) if isinstance(parent, cst.IfExp) else None
        if other is not None and (string_value(other) == "" or (isinstance(other, cst.Name) and other.value == "None")):
            continue  # ModelEma(device="cpu" if force_cpu else ""): a copy kept on the CPU, "" or None leaves it be
        if _compared(ctx, literal) or isinstance(parent, cst.IfExp):
            return True  # device == "cpu", "cuda" if ok else "cpu"
        use = uses.use_of(literal)
        if use is not None and use.kind.loose:
            return True
    if any(_chooses_cpu_flag(assign) for assign in ctx.nodes(cst.Assign)):
        return True
    if any(_gpu_opt_in(name, option) for name, option in command_line_options(ctx).items()):
        return True
    return ctx.project is not None and any(_device_from_fallback(ctx, call) for call in ctx.nodes(cst.Call))


def _device_from_fallback(ctx: Context, call: cst.Call) -> bool:
    """Does ``call`` take its value from a function of another file of the project that chooses a device with a
    fallback (nanochat's ``device_type = autodetect_device_type()``: cuda if available, else mps, else cpu)?
    The file then runs on whatever that function chose: the CPU or a Mac without CUDA too."""
    if not isinstance(call.func, cst.Name) or isinstance(ctx.parent(call), cst.Expr):
        return False
    project = ctx.project
    if project is None:
        return False
    found = callee(ctx, call, lambda path, _symbol: _maybe_chooser(project.read(path)))
    if found is None or found[0] is ctx:
        return False
    helper_ctx, func = found
    return isinstance(func, cst.FunctionDef) and chooses_device_with_fallback(helper_ctx, func)


# A flag that says the run is on the CPU (the latent-diffusion template's `cpu = True` where no --gpus was given).
_CPU_FLAGS = frozenset({"cpu", "use_cpu", "cpu_only", "on_cpu"})


def _chooses_cpu_flag(assign: cst.Assign) -> bool:
    """``cpu = True`` (``self.use_cpu = True``): a branch of the file runs on the CPU."""
    return isinstance(assign.value, cst.Name) and assign.value.value == "True" and any(
        (dotted_name(t.target) or "").rsplit(".", 1)[-1] in _CPU_FLAGS for t in assign.targets)


def _screen_agnostic(index: AstIndex) -> bool:
    """:func:`device_agnostic` over CPython's ``ast``, saying "maybe" wherever it could say yes: a call of an
    availability query (however it is used), a string that holds "cpu" or "mps" anywhere (a literal of
    :func:`_device_agnostic`'s is one part of such a string: implicit concatenation joins parts in ``ast``), or
    any ``add_argument`` call (an option that makes the GPU optional)."""
    if any(not index.qualnames(call.func).isdisjoint(AVAILABILITY_QUERIES) or (
            isinstance(call.func, ast.Attribute) and call.func.attr == devices.ARGPARSE_METHOD)
           for call in index.calls):
        return True
    return any((isinstance(node, ast.Constant) and isinstance(node.value, str)
                and any(device in node.value for device in OTHER_DEVICES))
               or (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                   and any((dotted(t) or "").rsplit(".", 1)[-1] in _CPU_FLAGS for t in node.targets))
               for node in ast_walk(index.tree))


def _screen_device_from_fallback(index: AstIndex) -> bool:
    """:func:`_device_from_fallback` over CPython's ``ast`` and bytes, saying "maybe" wherever it could say yes:
    the file calls a name it imports from a module of the project whose file holds what a device chooser
    needs."""
    project, path = index.project, index.path
    if project is None or path is None:
        return False
    called = {call.func.id for call in index.calls if isinstance(call.func, ast.Name)}
    for node in ast_walk(index.tree):
        if not isinstance(node, ast.ImportFrom) or not any((a.asname or a.name) in called for a in node.names):
            continue
        target = project.import_file("." * node.level + (node.module or ""), path)
        if target is not None and _maybe_chooser(project.read(target)):
            return True
    return False


def _maybe_chooser(data: bytes | None) -> bool:
    """Does a file hold what a function choosing a device with a fallback needs (a query and "cpu" / "mps")?"""
    return data is not None and _QUERY_TEXT.search(data) is not None and _OTHER_DEVICE_TEXT.search(data) is not None


_QUERY_TEXT = re.compile(rb"is_available|device_count|current_accelerator")
_OTHER_DEVICE_TEXT = re.compile(rb"cpu|mps")
# What a caller's file holds when :func:`_screen_agnostic` may say yes of it (as bytes).
_MAYBE_FALLBACK = re.compile(rb"cpu|mps|is_available|add_argument|device_count|accelerator")
_MAYBE_SCRIPT = re.compile(rb"__main__|^(?:for|while|with)\b|^[\w.]+\(", re.M)  # what is_script may say yes of


def _screen_called_with_fallback(index: AstIndex, calls: list[ast.Call]) -> bool:
    """:func:`_called_with_fallback` over CPython's ``ast`` and bytes, saying "maybe" wherever it could say
    yes: another file of the project may call the outermost function holding one of ``calls`` and holds a
    word a fallback needs and may be a script."""
    project, path = index.project, index.path
    if project is None or path is None:
        return False
    wanted = {id(call) for call in calls}
    home = os.path.abspath(path)
    for scope in index.scopes:
        if wanted.isdisjoint(id(c) for c in scope.calls):
            continue
        outer: Scope = scope
        at: Scope | None = scope
        while at is not None:  # the outermost function (as the rule's callers are of it)
            if isinstance(at.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                outer = at
            at = index.parent_scope(at)
        node, owner = outer.node, index.parent_scope(outer)
        cls = owner.node.name if owner is not None and isinstance(owner.node, ast.ClassDef) else None
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        name = node.name
        if name == "__init__" and cls is not None:
            name, cls = cls, None  # called as its class
        wanted_names = [(name, cls)] + ([(cls, None)] if cls is not None else [])  # a method: also its class built
        if any(project.called_elsewhere_with(n, caller_words(home, c), home, _MAYBE_FALLBACK, _MAYBE_SCRIPT)
               for n, c in wanted_names):
            return True
    return False


def _compared(ctx: Context, literal: cst.SimpleString) -> bool:
    """``device == "cpu"``, ``device.type in ("cpu", "mps")``."""
    parent = ctx.parent(literal)
    if isinstance(parent, cst.Element):
        parent = ctx.parent(ctx.parent(parent))
    return isinstance(parent, (cst.Comparison, cst.ComparisonTarget))


# Words of an option that puts one part of the program on the CPU, not the program itself.
_PART_OF_PROGRAM = frozenset({"ema", "offload", "data", "dataloader", "loader", "optimizer", "optim", "cache",
                              "swap", "workers", "threads"})


# The words of an option that puts the whole program on the CPU (`--cpu`, `--cpu-only`, `--always-cpu`); another
# word names the part kept there (`--t5_cpu`, `--text_encoder_cpu`) or counts CPUs (`--n_cpu`).
_CPU_SWITCH_WORDS = frozenset({"cpu", "use", "only", "force", "on", "run", "in", "to", "always", "all", "mode",
                               "is", "with"})


def _gpu_opt_in(name: str, option: CommandLineOption) -> bool:
    """A command-line option that makes the GPU optional: ``--cpu`` (not ``--t5_cpu``: one part kept on the CPU;
    not ``--n_cpu``: a count), ``--no-cuda``, a ``--cuda`` / ``--gpu``
    switch (``action="store_true"`` / ``"store_false"``, ``default=True``, ``False`` or ``None``: it can be
    turned off), or a device option
    (``--device``, ``--eval-device``: whatever its default, ``--device cpu`` is one of its values)."""
    words = name.lower().split("_")
    if any(w.startswith("multi") for w in words):
        return False  # --multigpus, --multi_gpu: how many GPUs, not whether (one GPU when off)
    if not _PART_OF_PROGRAM.isdisjoint(words):
        return False  # --model-ema-force-cpu, --cpu-offload: one part kept on the CPU, the program on the GPU
    if ("cpu" in words and _CPU_SWITCH_WORDS.issuperset(words)) or ("no" in words and devices.is_guard_text(name)) \
            or words[-1] == "device":
        return True  # --cpu, --use-cpu, --force-cpu; not --t5_cpu, --vae-in-cpu (one part), --n_cpu (a count)
    if "cpu" in words:
        return False
    if not devices.is_guard_text(name):
        return False
    default = option.keywords.get("default")
    if default is not None:
        return isinstance(default, cst.Name) and default.value in ("False", "None", "True")
    return option.text("action") in ("store_true", "store_false")


# Calls whose statement only reports what it is given (wrapping it skips a message, nothing else).
_LOGGING = frozenset({"print", "info", "debug", "warning", "warn", "log"})


def _fix(ctx: Context, call: cst.Call, name: str) -> Fix | None:
    """Wrap the statement the call stands in (alone on its line: ``torch.cuda.synchronize()``, or a print or a
    log call of what it returns) in ``if torch.cuda.is_available():``."""
    stmt = _statement(ctx, call)
    found = torch_name(ctx, call) if stmt is not None else None
    if stmt is None or found is None:
        return None
    torch, extra = found
    start, end = node_start(ctx, stmt.body[0]), node_end(ctx, stmt.body[0])
    lines = split_lines(ctx.text if ctx.text is not None else ctx.module.code)
    if start.row != end.row or start.row > len(lines):
        return None  # a statement over several lines is not re-indented
    indent = lines[start.row - 1][:start.column - 1]
    if indent.strip():
        return None
    unit = "\t" if "\t" in indent or "\t" in ctx.module.default_indent else ctx.module.default_indent
    check = devices.availability_check(name).replace("torch", torch, 1)
    at = Position(start.row, start.column)
    edit = Edit(at, at, f"if {check}():{ctx.module.default_newline}{indent}{unit}", old="", before=indent)
    return Fix((*extra, edit), Applicability.UNSAFE, f"Run it only under `if {check}():`")


def _statement(ctx: Context, call: cst.Call) -> cst.SimpleStatementLine | None:
    """The line of an expression statement whose value is unused — the call itself, or a print/log call of
    what it returns — alone on its line in a block a line can be added to."""
    expr = next((a for a in ctx.ancestors(call) if isinstance(a, cst.BaseSmallStatement)), None)
    if not isinstance(expr, cst.Expr):
        return None
    value = expr.value
    if value is not call and not (isinstance(value, cst.Call)
                                  and (dotted_name(value.func) or "").split(".")[-1] in _LOGGING):
        return None
    stmt = ctx.parent(expr)
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    return stmt if isinstance(ctx.parent(stmt), (cst.IndentedBlock, cst.Module)) else None
