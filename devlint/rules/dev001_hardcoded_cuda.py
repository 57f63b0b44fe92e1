"""DEV001: a CUDA device chosen with no fallback."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from devlint import devices
from devlint.analysis import (
    chooses_device_with_fallback,
    command_line_option,
    device_uses,
    is_cuda_call,
    parameter_used_as_device,
    parameterless_module,
    pytest_module,
)
from devlint.bindings import device_name_at
from devlint.context import Context, decorator_target, dotted_name, string_value, walk
from devlint.devices import UseKind
from devlint.diagnostics import Applicability, Edit, Evidence, Finding, Fix, FixAvailability
from devlint.guards import Guards, Polarity, guards, own_imports
from devlint.lazy import LazyModule
from devlint.project import callee, field_relies_on_default, relies_on_default, top_level_imports
from devlint.rules.base import Invalid, Rule, Valid, replace_token
from devlint.rules.fixes import fallback_expr, needs_parens, paren_call_insert, preferred_quote, quote_at
from devlint.screen import AstIndex, dotted

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

_ERROR = '"Torch not compiled with CUDA enabled"'


@dataclass(frozen=True)
class CudaEvidence(Evidence):
    """A hard-coded device string (``device``), or a ``.cuda(...)`` call (``cuda_call``) with its literal
    device index when it has one (``cuda_index``; None: none, or an expression the probe does not run).
    Facts only: a probe never runs the flagged code's own expressions."""

    device: str | None = None
    cuda_call: bool = False
    cuda_index: int | None = None


class _CudaTrigger:
    """``["']cuda|cuda(?:\\s*[()\\\\#]|\\.\\w*Tensor)`` as a search from the literal ``cuda``, the quote before
    it checked by hand: an alternation that starts with a character class is scanned at every byte (six times
    slower on large trees)."""

    _cuda = re.compile(devices.CUDA_METHOD.encode() + rb"(?:\s*[()\\#]|\.\w*Tensor)?")

    def search(self, data: bytes) -> bool:
        for match in self._cuda.finditer(data):
            start = match.start()
            if match.end() - start > len(devices.CUDA_METHOD) or (start and data[start - 1] in b"\"'"):
                return True
        return False


class HardcodedCuda(Rule):
    code = "DEV001"
    name = "hard-coded-cuda"
    summary = "A CUDA device is chosen with no torch.cuda.is_available() fallback."
    fix_availability = FixAvailability.SOMETIMES
    evidence_type = CudaEvidence
    # a literal starting "cuda", or a .cuda() call (also `.cuda ()`, `(x.cuda)()`, a comment or line join
    # before the parenthesis)
    # (and a legacy type: cuda.FloatTensor, also in "torch.cuda.FloatTensor")
    triggers = _CudaTrigger()

    doc_what = '''
Finds a CUDA device chosen unconditionally: a `"cuda"` / `"cuda:N"` string used as a device (assigned to a
variable that is used as a device, passed as `device=`, to `.to(...)` or to `torch.device(...)`, an
`argparse` `--device` default (also a `@click.option("--device", default="cuda")`, unless the command reads
its parameter only where CUDA is certain, `device if torch.cuda.is_available() else "cpu"`; unless the option
is only compared (not an equality with `"cuda"` that picks the CUDA path on the default, nnU-Net's `elif
args.device == "cuda": device = torch.device("cuda")`; `self.device`, or `model.device` of a name unpacked from
a call's result, is no read of it; nor is an argument for a parameter of the same default that its function of
the project never uses as a device, LLaVA's `load_pretrained_model(..., device=args.device)`), spliced into
`f"cuda:{...}"` or read under a CUDA check, `torch.device(args.device if torch.cuda.is_available() else
"cpu")`, or assigned to a name the next statement replaces without CUDA, `device = args.device` / `if not
torch.cuda.is_available(): device = "cpu"`, or read after an earlier statement replaced it so, `if
args.device == "cuda" and not torch.cuda.is_available(): args.device = "cpu"`, also an `elif` of a chain that
tries mps first, or replaced by a function of the project that falls back, `args.device =
check_device(args.device)`), a `"device"` config entry, a `device=` parameter default that the
function uses as a device or passes on and some call relies on (not a call Python cannot bind, one passing a
keyword the function does not take or missing an argument: it raises TypeError first): `device="cuda"` or
`device=torch.device("cuda")`, not one used so only where a condition rules the default out (LLaVA's `if
device != "cuda": kwargs["device_map"] = {"": device}`, the `else` of `if device == "cuda":`), nor one
only stored in a `self.device` that nothing reads: the class's own
`self.device` (not one that follows the method's own `self.device = ...`), or `x.device` of an object elsewhere
in the file, but not of a tensor, a name whose `.shape`, `.dtype`, `.view(...)` the same function reads, nor of
a part of what an attribute holds, `self.model.positional_embedding.device`), and `.cuda()` calls.

Also: the legacy CUDA tensor types (`torch.cuda.FloatTensor(...)`, `Tensor = torch.cuda.FloatTensor`,
`torch.set_default_tensor_type("torch.cuda.FloatTensor")`), and a `"cuda"` passed to a function or method of
the project whose parameter it becomes a device in (`model.sample(8, "cuda")`).

Not reported: device-agnostic code — a conditional expression that tests availability
(`"cuda" if torch.cuda.is_available() else "cpu"`, the cuda/mps/cpu chain), code inside
`if torch.cuda.is_available():`, `if x.is_cuda:`, `if x.device.type == "cuda":`, `if isinstance(x.data,
torch.cuda.FloatTensor):` (a tensor of a CUDA type lives on a GPU; also after `assert isinstance(x,
torch.cuda.LongTensor)`), the methods of a class that the project names only under such a check (captum's
`DataParallelMeta`, the metaclass of a test class defined under `if torch.cuda.is_available():`; a class other
files name is not judged so), a helper
defined in a function that never calls nor names it (DeepSDF's
`empirical_stat`: it runs nowhere) or a private function of a module's top level that nothing in the project
names (`_encode`; a public one may be called by name, by a runner or another project, and a private one of a
package's `__init__.py` is an attribute of the package, `torch.cuda._compile_kernel`), code after a statement
that always leaves its block (`return`, `raise`, `continue`, `break`, `sys.exit()`, `pytest.skip()`, a test's
`self.skipTest(...)`), which never runs,
`if args.cuda:` where `args.cuda = not args.no_cuda and torch.cuda.is_available()` (a flag that turns the GPU
off, `--no-cuda`, is a setting: `if not args.no_cuda:` alone guards nothing), the `else` of `if args.cpu:` (and the
body of `if not args.cpu:`) where the file declares `--cpu` with `action="store_true", default=True`, which no
command line turns off (RetinaFace's convert_to_onnx.py; also through a parameter every call passes it to),
`if use_gpu:` where a script (or a module no other file imports) binds `use_gpu` only to `False` at its top
(LPIPS's `use_gpu = False  # Whether to use GPU`: the branch never runs as shipped; `USE_CUDA = True` guards
nothing; so is the `"cuda"` of `"cuda" if use_cuda else "cpu"` with such a `use_cuda`), a loop or comprehension
over
`range(torch.cuda.device_count())` or a DataParallel's `self.device_ids` (also zipped or sliced: DataParallel
sets it to `[]` without CUDA) (no iteration without a GPU) (also a device variable
read only there or compared, directly or through names built from it: `DEVICE = "cuda"`, `CUDA_DEVICE =
f"{DEVICE}:{DEVICE_ID}"`, `device = torch.device("cuda:0")` (building a device needs no CUDA: gsplat's tests)
used only under such a check, past a fallback of its own (Stable-Baselines3's `get_device("auto")`: `device =
th.device(device)`, then `if device.type == "cuda" and not th.cuda.is_available(): return th.device("cpu")`),
or in tests skipped without CUDA, or handed only to functions of the project that
never use that parameter as a device (also `--device` with default `"cuda"` read only as
`device = torch.device(args.device)` of such a variable: YOLOS's `get_val_json(..., device, ...)` whose
`samples.to(device)` is commented out; a device variable that nothing reads yet is still reported: it is the
hard-coded device the next line written will use); a module-level one only when no other file of the
project mentions its name, which may import and read it, or in a module pytest collects, `test_*.py`, which no
module imports), in the `else` of
`if not torch.cuda.is_available():`, or after an early exit when CUDA is unavailable (`sys.exit`, `raise`,
`parser.error`, `assert torch.cuda.is_available()`), also when that exit is in a function called first
(`init_env(args)` that exits without a GPU; followed up to four calls deep, dinov2's `setup(args)` ->
`default_setup(args)` -> `distributed.enable()`; also an exit that a parameter's default switches on, Megatron's
`initialize_megatron(args, allow_no_cuda=False)` asserting CUDA under `if not allow_no_cuda:`, where the call does
not pass that parameter; or in the `__init__` of a class of the project built first, apex's
`FusedAdam(params)`, which raises "requires cuda extensions" unless its CUDA extension imports), guards held
in a variable (`use_gpu = torch.cuda.is_available()`; a count whose other
arm is `0`, `num_devices = torch.cuda.device_count() if torch.cuda.is_available() else 0`, then `assert
num_devices > 0`; also a flag imported from a module of the project that assigns it once so, torchtune's
`_SUPPORTS_FLEX_ATTENTION`)
or returned by a function of the project (`if not enough_gpus(2): sys.exit()` where every `return` of
`enough_gpus` needs an accelerator: `return torch.accelerator.is_available() and count >= n`), a flag set to
`True` only under such a guard (`cuda_flag = False`, then `cuda_flag = True` inside `if
torch.cuda.is_available():`), a flag whose `if` somewhere in the file starts a CUDA-only flow (`if distributed:
dist.init_process_group("nccl")`: a later `if distributed:` is that flow; also one set to `True` in a block
that then starts such a flow, `distributed = True` / `init_dist(args.launcher, **cfg.dist_params)`; and a flag
whose `if not` starts one, fairscale's `if not args.cpu: torch.cuda.set_device(rank)`: a later `if not args.cpu:`
is that flow too),
an opt-in flag that is off by default (`--cuda` with `action="store_true"`; a flag is named for the GPU by its
own name, `args.use_gpu`, not by what holds it: `accelerator.sync_gradients` is no check, nor is `if accelerator:`
of an `Accelerator()` object), a function every call of which
in the linted tree is guarded (also where a function of the module is handed by name to a runner that calls
it there and then, `parallel.run(fn, ...)`, `mp.spawn(fn, ...)`, a benchmark runner, `timeit.timeit(fn, ...)` or
fvcore's `benchmark(fn, "NAME", kwargs_list)`, after `assert torch.cuda.is_available()`, or to a
function of the project that checks for CUDA before it runs it, gsplat's `cli(main, args)`;
not when another file of the project imports it), code in a `try` whose handler catches the error
(`RuntimeError`, `AssertionError`, `AttributeError`, `Exception`, a bare `except`) and recovers: goes on
without the result (`pass`, a `return`) or falls back (`model = model.float()`, a CPU retry); not a handler
that only logs or prints the error, skips to the next iteration (`except: continue` around a validation
batch's `.to("cuda")`: without CUDA every batch is skipped) or raises again (also after work of its own: `if
opt.debug: pdb.post_mortem()` then `raise`), nor a
`try: runner.train()` / `except Exception: logging.error(traceback.format_exc())` around the call of the
function holding the line; the methods of a class every construction of which in the project is guarded
(a trainer built only after the GPU is set up, also through a package's `from .trainers import *`; not a
class the project subclasses or hands around as a value, `build(RunConfig)`, nor its static and class
methods), the element of a comprehension whose `if` implies CUDA (`[torch.cuda.get_device_name(d.index) for d in
devices if d.type == "cuda"]`), code in functions marked as GPU-only (a decorator or name
that mentions CUDA/GPU), strings in prints, comparisons (`torch.device("cuda") in devices`, `x.device ==
torch.device("cuda")`) and docs, a `device="cuda"` parameter default that every call in the linted tree
overrides or makes only where CUDA is certain (calls through `from module import *` count; so does, for the
`__init__` of a class the project never builds by name, nnU-Net's trainers, a call of a class looked up at run
time that names every parameter without a default, three or more, and the device: `trainer_class(plans=plans,
..., device=device)`; and, for a method whose callers reach its object through an attribute and never name its
class where they call it, the calls by its name on such an attribute in the files that mention its class, those
whose attribute the caller's class builds from another class left out: ReCamMaster's prompters,
`self.prompter = SDPrompter()` then `self.prompter.encode_prompt(prompt, device=self.device)`; where no file
names the class, built from a config, such calls anywhere in the linted tree: Stable Diffusion's
`self.cond_stage_model.get_unconditional_conditioning(batch_size, device=self.device)`; a call under
`if torch.cuda.is_available():` may leave the default) or that the function only compares or hands to a
torch query or reads only where CUDA is certain (past a first statement `import triton`), the default of a
function also bound to another name (`renderer = render_rays`: it is called
through that name, where its calls cannot all be found; also a class's `__init__` default when the class is,
`runner_cls = TrainRunner if args.train else InferenceRunner`, `model_cls = {"nerf": NeRFModel, ...}[name]`), a
dataclass or attrs field's default (`device:
torch.device = attr.ib(default=torch.device("cuda"))`) that every construction of its class passes,
`device=` keywords of other libraries (DALI's `device="gpu"`), and `.cuda()` of a module that holds nothing to
move — torch's losses, parameter-free activations, dropout and pooling (`nn.CrossEntropyLoss().cuda()`,
`criterion = nn.MSELoss()` then `criterion.cuda()`, `nn.CrossEntropyLoss(reduction=self.reduction).cuda()`; a
weighted loss only with constant positional arguments and `weight` / `pos_weight`: not
`nn.CrossEntropyLoss(weight=w)`, whose weight is a buffer, nor `nn.PReLU()`; timm's `SoftTargetCrossEntropy()`,
`LabelSmoothingCrossEntropy(...)`, `JsdCrossEntropy(...)`, not its `BinaryCrossEntropy`), and the project's
module classes
with no parameters, buffers or submodules other than such torch modules (`self.criterion =
nn.MSELoss(reduction="mean")`; also a weighted loss of an `__init__` parameter that the construction leaves
`None`: `CrossEntropyLoss2d(ignore_index=255).cuda()` where `__init__(self, weight=None, ...)` keeps
`nn.NLLLoss(weight, ...)`, not `CrossEntropyLoss2d(weight=w)`; also through a name every binding of which
is one, and through a factory of the project whose every `return` is one, CvT's `criterion =
build_criterion(config)` then `criterion.cuda()`; not a class that keeps a module it is given, TSM's
`self.net = net` called as `self.net(x)`; an exception a method raises, `raise
NotImplementedError(...)`, is none, while a lookup that is called may build one,
`models_mae.__dict__[name](...)`; not one whose `__init__` calls a function of the project, which may build
and return a model, MiDaS's `model, _ = load_model(kind)`): on torch 2.13.0+cpu their `.cuda()` returns
without touching CUDA; and `self.cuda(...)` in a class that defines its own `cuda` method (a helper that moves
items with `.to(device)`).
Files that never import torch, nor a library built on torch whose models and tensors are torch's
(transformers, diffusers, peft, sentence-transformers, timm, torchvision, torchaudio, lpips, kornia,
open_clip, Lightning, accelerate: `AutoModel.from_pretrained(...).half().cuda()` in a demo that imports only
transformers, `lpips.LPIPS(net="alex").cuda()`), nor, in a project run, a module of the project that imports torch
(a script of the package, `from mobile_sam import sam_model_registry` where the name comes from a file that
imports torch; not a module of plain data, `from segment.labels import CLASS_NAMES`), are not checked. A
`from utils import *` of a module of the project brings that module's own imports with it (`import torch`, `from
torch import nn`), unless it sets `__all__`: the file then uses torch as if it imported it.

What is a guard: only a condition whose truth implies an accelerator is available or in use guards its
body; `if t.device != torch.device("cuda"):` runs its body when *not* on CUDA, and a constant
(`USE_CUDA = True`) or a `--cuda` flag that defaults to on is a setting, not a check: code under them is
reported, unless an early exit pairs the flag with availability (`if args.cuda and not
torch.cuda.is_available(): raise ...`: past it, the flag set means CUDA is there). Such an exit guards the
flag's branches only: a run without the flag goes on past it, so unconditional CUDA work after it is reported.
A flag that is a parameter (`def fit_one_epoch(model, batches, cuda):` ... `if cuda:`), or an attribute of
one (`self.gpu_mode = args.gpu_mode`), is read through what every call in the project passes: a setting
that is on in every call (`Cuda = True` in train.py, a `--gpu_mode` option defaulting to True) is no
check; one call passing `torch.cuda.is_available()`, a flag that is off, or calls that cannot all be found
keep it a guard. A class's dictionary of settings copied onto the object (`_defaults = {"cuda": True}` and
`self.__dict__.update(self._defaults)`) is read the same way: `if self.cuda:` is no check when `cuda` is on
there and no construction of the class passes `cuda=`.
An early exit guards what follows only when its condition is true whenever CUDA is unavailable (`if not
torch.cuda.is_available():`, `if not torch.cuda.is_available() or not flash:`).

CUDA-only by design (not reported): a flow that starts a NCCL process group (`init_process_group("nccl")`,
`backend="nccl"`, `backend=args.dist_backend` where `--dist-backend` defaults to `"nccl"`,
`backend=args.distributed_backend` where no file of the project defines `--distributed-backend`: it comes from
SwissArmyTransformer's or Megatron-LM's parser, default `"nccl"`; a function that sets one up is such a start for
its callers, also past an early `if torch.distributed.is_initialized(): return` in a NCCL project, and one each of
whose `return`s follows such a start in its own block and that raises at its end (jukebox's
`setup_dist_from_mpi`: a retry loop `try: init_process_group(...); ...; torch.cuda.set_device(rank); return ...`,
then `raise RuntimeError("Failed to initialize NCCL")`; not one that returns a CPU device once its attempts
fail), or returns such a function's result (`return _setup_dist_from_mpi(...)`); OpenMMLab's
`init_dist`, mmcv's or mmengine's, which sets the launched rank's GPU), builds a launcher
told to use the GPU (`L.Fabric(accelerator="cuda")`, a Lightning `Trainer(accelerator="gpu")`: without CUDA
it raises at construction; the methods of a `LightningLite` subclass every construction of which says
`accelerator="gpu"`, `Lite(accelerator="gpu", strategy=DDPStrategy(...)).run(args)`), switches a diffusers
pipeline or model to xformers attention (`pipe.enable_xformers_memory_efficient_attention()`, or the setter it
calls told `True`, `set_use_memory_efficient_attention_xformers(True)`: diffusers raises there without CUDA),
calls apex's `amp.initialize(...)` in a statement of its own (it raises for any parameter not on CUDA: apex's
`check_params_fp32`; the whole function, or the whole script when its top level calls it, before the call as
after it; not a call under `if args.fp16:`, which leaves the function a path without it) or
picks its GPU from a launcher (`torch.cuda.set_device(local_rank)`; not a GPU picked by
number, `set_device(0)`, or by a fixed device, `set_device("cuda:0")` or a name every assignment of which is
one, `device = torch.device("cuda:0")` then `set_device(device)`: that is itself the crash in code with a
fallback), or, in a project whose process group
is NCCL, calls what needs a running group (`torch.distributed.get_rank()`, `get_world_size()`, `barrier()`, a
`DistributedSampler(dataset)` not told its `num_replicas` and `rank`, a `DistributedDataParallel(...)`: without
a group torch raises "Default process group has not been initialized"; vicreg's `main` after an
`init_distributed_mode` that returns early when not launched) — everything after it in that
function, the functions defined there after it (and the methods of a class defined there: a test's own
autograd Function) and those only called from there; a module in a folder of the project named for the GPU
(BitNet's `gpu/` beside its CPU inference, WeNet's `runtime/gpu/` beside `runtime/cpu/`) or for TensorRT, whose
engines run on an NVIDIA GPU only (CosyVoice's `runtime/triton_trtllm/`, `convert_tensorrt/`; folders above the
linted root do not count); a class or function that declares itself GPU-only by name (`CUDAAccelerator`,
`train_gpu`; a class's methods too; not one the file names in a string outside any guard, `"target":
"main.CUDACallback"`: it is built by name on every path) or decorator (a test
under `@pytest.mark.skipif(not torch.cuda.is_available() or capability < 8, ...)` runs only when the whole
condition is false, so with CUDA; so does `skipif(torch.cuda.device_count() < 2, ...)`, two GPUs or more; not
`skipif(not torch.cuda.is_available() and ...)`, nor `skipif(torch.cuda.device_count() > 1, ...)`, which runs with
none; also a marker that asks
for GPUs by count, Lightning's `@RunIf(min_cuda_gpus=1)`, and a case `pytest.param(torch.device("cuda"),
marks=RunIf(min_cuda_gpus=1))` of a parametrized test; a Ray actor or task declared `@ray.remote(num_gpus=1)`,
which Ray runs only on a node with a GPU, its `__init__` included; a `skipIf` on a flag the module's top sets by
whether a CUDA-only module imports, `try: from apex.contrib.index_mul_2d import index_mul_2d` / `except
ImportError: HAS_INDEX_MUL_2D = False`, or `disabled = True` in the handler, or `SKIP_TEST = None` before the
`try` and `except ImportError as e: SKIP_TEST = e`, apex's tests: an exception is true), a `TestCase`'s `setUp` and
`tearDown` when every test of its class is skipped without CUDA, the methods of a test class whose `setUp` (its own
or a base class's of the project, `from .test_fsdp import DistributedTest`) skips without CUDA before it can
return (`if not torch.cuda.is_available(): raise unittest.SkipTest(...)`, `self.skipTest(...)`: fairscale's
`DistributedTest` and its subclasses), the tests of a generic class of torch's device-type framework instantiated for
CUDA alone (`instantiate_device_type_tests(TestFusedNorm, globals(), only_for="cuda")`: without CUDA it makes no class
of it, checked on torch 2.13.0+cpu), a test module (`test_*.py`) that a `conftest.py` of its folder or one above
de-collects where CUDA is missing (`collect_ignore_glob` set at its top under `if not
torch.cuda.is_available():`, or to what a helper named for CUDA returns: gsplat's `collect_ignore_glob =
cuda_collect_ignore_glob(...)`), a test that requests a pytest fixture of its file that skips without CUDA (`def
mods(): require_cuda()`, and the helpers only such
tests call), a fixture that only tests marked GPU-only request (in its file, or its class for a class's
fixture; not `autouse`), or a class whose
`__init__` sets the GPU up on every path (`torch.cuda.set_device(local_rank)`, a NCCL group; also through a
method it calls first, `self.setup_dist_env()`, or the `__init__` a subclass inherits), and the methods other
than `__init__` of a class whose `__init__` calls, in a statement of its own body, an API that raises without
CUDA (YOLOX's `DataPrefetcher`: `self.stream = torch.cuda.Stream()`; no instance exists without CUDA, and DEV006
reports that call where the file has a CPU path); a module that
raises at import without CUDA (an `assert torch.cuda.is_available()` or an exit without CUDA at its top level:
its functions and methods too, wherever they are defined; not a check in its `__main__` block); what
follows an import of a CUDA-only library, or of a module of the project that needs CUDA at import (as below),
in the same block (the `elif engine: import tensorrt as trt` branch of a multi-backend loader, also as `try:
import tensorrt as trt` / `except ImportError: check_requirements(...); import tensorrt as trt`, ultralytics'
AutoBackend: the body and every handler import it or raise; also a branch
that compares a runtime with TensorRT's name, `elif mode == TENSORRT:` or `if runtime == "trt":`: an engine
runs only on an NVIDIA GPU), and what
follows an `if` / `elif` / `else` every arm of which imports one (a NeRF script's `if opt.tcnn: from
nerf.network_tcnn import NeRFNetwork` / `else: from nerf.network import NeRFNetwork`, each built on the
project's kernels), or otherwise guards what follows or leaves (AnimateDiff's `init_dist`: `set_device(local_rank)`
for the "pytorch" and "slurm" launchers, `raise` for any other; not when one arm goes on without a GPU); a
module that imports a CUDA-only
library (TensorRT, PyCUDA, CuPy, flash-attn, mamba-ssm, causal-conv1d, diso, tiny-cuda-nn's tinycudann, which
raises at import without CUDA, Gaussian splatting's diff-gaussian-rasterization and simple-knn, CUDA extensions with
no CPU implementation; also, for the importing module itself
only, a GPU kernel language or GPU-only engine: Triton, TileLang, CUTLASS's CuTe DSL, Transformer Engine, vLLM,
not the modules of the project that import it for one layer; a module that defines `@triton.jit` kernels at its
top needs Triton even when it imports it under `if _TRITON_AVAILABLE:`; a module that loads a native library
at its top, `lib = ctypes.CDLL("kernels/libbitnet.so")`, and hands it a raw CUDA stream, `stream.cuda_stream`,
launches CUDA kernels; loading a library alone says nothing) or one of the project's own
CUDA kernels (an extension its `setup.py` builds with `CUDAExtension`, also through a name the class is
assigned to, `extension = CUDAExtension` then `extension("_ext", sources)`, `cpp_extension.load` of `.cu`
sources, or the old `torch.utils.ffi.create_extension("_ext.name", ..., with_cuda=...)`), or a module of
the project that builds CUDA kernels at its top level when imported (`fused = load("fused", sources=[...,
"kernel.cu"])`: without the CUDA toolkit the import raises), directly or through modules of the project
that import it at their top level, unconditionally (a package's `__init__.py` too, which importing
`models.registry` runs first, and `models/__init__.py` for a package's `from .models.registry import
create_model`: the one in the folder above the module's file, not another package's of the same name; up to
eight imports away, relative imports too:
`from .op.deform_attn import deform_attn`, `from ..functions import MSDeformAttnFunction`; also in a `try`
whose handlers re-raise, or whose handler imports another CUDA-only module: `try: import _raymarching` /
`except ImportError: from .backend import _backend` that builds it; not when the handler falls back to
code that runs without CUDA); what follows a build of CUDA sources (`torch.utils.cpp_extension.load(...)`
given `.cu` sources, or `load_inline(..., cuda_sources=...)`: apex's syncbn tests, `import syncbn` in one arm and
the build in the other), and a call of a function of the project that builds CUDA kernels when called
(`torch.utils.cpp_extension.load(...)` of `.cu` sources in a statement of its body, itself or through a function
it defines: GPT-NeoX's `fused_kernels.load()`; without the CUDA toolkit the build raises); a function that calls
such kernels on every path through a getter of the
project that imports only CUDA-only modules when first called (torch-ngp's lazy
`get_backend().near_far_from_aabb(...)`: the autograd Function around a kernel; not a call on one branch
only); a method of a custom autograd Function that launches a kernel of a compiled extension bound at the
module's top (`ext_module = ext_loader.load_ext("_ext", [...])`, `_backend = cpp_extension.load(...)`,
`import pointnet2_cuda`): the op's device is its kernel's, and the CUDA buffers it allocates for the kernel
(`torch.cuda.IntTensor(B, n)`, mmcv's point-cloud ops) say the kernel is a CUDA kernel (an autograd Function in
plain torch, with no extension, is reported as any code is); an `except` handler for CUDA running out of memory,
and the body of `if mode == "cpu":` where `mode` is a parameter defaulting to another value that only such
guarded calls pass as `"cpu"` (YOLOX's `get_assignments(..., mode="gpu")`, called with `"cpu"` in its
out-of-memory fallback);
and, in a project whose process group is NCCL, the distributed helpers (those that return unless
`torch.distributed` is initialised, and functions that run a collective such as `broadcast`) and the branch a
flag named for distributed training takes (`if distributed:` of mmdet's `train_detector(..., distributed)`,
`if args.distributed:`, KAIR's `if opt["dist"]:`: true only once that group runs). A project that
never starts the group itself (no file names `init_process_group`: a launcher library such as Lightning,
accelerate or dora starts it, with NCCL on GPUs) counts as NCCL; one that starts it with another backend
(`"gloo"`) does not, and its helpers are reported.
'''
    doc_why = '''
The code runs only where CUDA is present. On a laptop, a Mac (`mps`) or a CPU-only CI runner it crashes
at the first CUDA tensor with `AssertionError: Torch not compiled with CUDA enabled` (a CPU build of
torch) or `RuntimeError: Found no NVIDIA driver on your system` (a CUDA build without a GPU).
'''
    doc_use_instead = '''
Choose the device once, with a fallback, and move everything with `.to(device)`. The autofix does
this: a device string becomes `"cuda" if torch.cuda.is_available() else "cpu"` (with an `"mps"` branch
when the file already uses mps; `device-fallback` under Options chooses another form); `.cuda()` becomes
`.to(device)` when a device variable is certainly bound there, else `.to("cuda" if
torch.cuda.is_available() else "cpu")`; `device="cuda"` becomes `device=device` likewise.
'''
    doc_fix_safety = '''
Unsafe: on a machine without CUDA the fixed code runs on the CPU (or mps) instead of stopping, which is
the point, but it is a change of behaviour. What the fix writes is checked to run where it lands:
- It names torch only as the file binds it at that place (`torch`, or the alias from `import torch as
  T`). When the file imports only a part of torch at its top (`import torch.nn as nn`), the fix adds
  `import torch` (torch is loaded anyway). When torch is imported only under `if TYPE_CHECKING:` or only
  inside another function, or a parameter or local named `torch` shadows it, there is no fix.
- It reuses a device variable (`device`, `DEVICE`, `dev`, ..., `self.device`) only when every binding of
  it in its scope is a device (a device string, `torch.device(...)`, `x.device`, a conditional of those, a
  function of this file that only returns devices, a `device=None` parameter resolved with `if device is
  None: device = ...`, a required parameter the function uses as a device) and one of them runs before
  the fix on every path. A loop variable, a non-device default, a binding in one branch or only later, a
  global shadowed by a local, or a `self.device` never set are not reused: the inline expression is
  written instead.
- Inside an f-string it uses the quote the f-string does not (Python 3.10 and 3.11 cannot nest the same
  quote); with both taken there is no fix. A conditional expression is parenthesised where it would
  otherwise bind differently (`args.device or "cuda"`). Only the `cuda` name and the device argument are
  rewritten, so comments inside the parentheses stay.
- What it writes is a device string in every `device-fallback` mode (never a `torch.device`, never
  `None`), so it is valid wherever the literal was: in a device argument (`.to(...)`, `device=`,
  `torch.device(...)`) and where the program reads it as a string (an argparse default, a parameter's
  default compared with `"cpu"`, a config dictionary). In `accelerator` mode it is
  `torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"`: on torch
  2.13's CPU build `current_accelerator()` returns `None` (so `.type` is read only after
  `is_available()`; `torch.device(None)` raises `TypeError`), and `.type` is `"cuda"`, `"mps"` or `"xpu"`
  where there is one. `torch.accelerator` exists from torch 2.6 on: on an older torch that mode's fix raises
  `AttributeError`; use `cuda-cpu` or `cuda-mps-cpu` there.
'''
    doc_known_problems = '''
A project that is GPU-only by its README alone cannot be seen as such: turn the rule off for it with one
line in `pyproject.toml`, `[tool.devlint]` then `ignore = ["DEV001"]` (or `per-file-ignores` for its CUDA
folders, `# noqa: DEV001` for a line). Guards are followed across the linted tree's functions and modules,
not into code loaded by path at run time (a config file read with `runpy`), nor through values passed in
dictionaries (`cuda = kwargs.get("cuda")` with a default of `True` elsewhere). A CUDA-only dependency reached
only through a module imported at run time (`importlib.import_module(name)`, a package's `__getattr__`, TRELLIS's
models) or imported inside a function under a condition (Hunyuan3D-2's rasterizer in an `__init__`) does not make
its callers CUDA-only: their hard-coded devices are reported. `.cuda()` on an object of a non-torch library that
takes the same arguments is reported.
'''
    doc_options = '''
`device-fallback` (`[tool.devlint]` in `pyproject.toml`, or `--device-fallback` on the command line, which
wins) chooses what the fix writes for a hard-coded `"cuda"` / `"cuda:N"` / `.cuda()` when no device variable
can be reused. For `"cuda:1"`:

- `cuda-cpu`: `"cuda:1" if torch.cuda.is_available() else "cpu"`;
- `cuda-mps-cpu`: `"cuda:1" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available()
  else "cpu"`;
- `accelerator`: `f"{torch.accelerator.current_accelerator().type}:1" if torch.accelerator.is_available()
  else "cpu"` (for `"cuda"`: `torch.accelerator.current_accelerator().type if ...`).

Unset, it is `cuda-cpu`, or `cuda-mps-cpu` in a file that already mentions mps (an `"mps"` string or
`torch.backends.mps`). Any other value is an error (exit 2). A device variable written in the
`accelerator` form counts as a device when a later fix looks for one to reuse, and in that mode the
messages suggest that form too. `select`, `ignore`, `per-file-ignores` and `# noqa: DEV001` apply as for
every rule.
'''
    doc_references = '''
- [torch.accelerator](https://pytorch.org/docs/stable/accelerator.html)
- [torch.cuda.is_available](https://pytorch.org/docs/stable/generated/torch.cuda.is_available.html)
- [Device-agnostic code (CUDA semantics)](https://pytorch.org/docs/stable/notes/cuda.html#device-agnostic-code)
- [torch.Tensor.to](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html)
'''
    doc_notebooks = '''
Notebooks (`.ipynb`) are linted like scripts: the code cells, in order, are one module, so a device chosen
with a fallback in one cell covers the cells after it, and a guard cell guards what follows. Colab's
`"accelerator": "GPU"` metadata does not make a notebook CUDA-only: it still crashes on a laptop or a CPU
runtime. IPython magics and shell lines (`!nvidia-smi`, `%matplotlib inline`) are masked; `--fix` rewrites
only the changed cells' sources, and an inserted `import torch` goes to the first cell that imports torch.
'''

    VALID = (
        Valid('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
              'x = torch.zeros(1, device=device)\n'),
        Valid('import torch\nif torch.cuda.is_available():\n    model = torch.nn.Linear(2, 2).cuda()\n'),
        Valid('import sys\nimport torch\nif not torch.cuda.is_available():\n    sys.exit("needs a GPU")\n'
              'x = torch.zeros(1).cuda()\n'),
        Valid('import torch\nuse_gpu = torch.cuda.is_available()\n'
              'x = torch.zeros(1, device="cuda" if use_gpu else "cpu")\n'),
        Valid('import torch\nok = torch.device("cuda") in [torch.device("cpu")]\nprint("cuda")\n'),
        Valid('import torch\ndef get_dtype(device="cuda"):\n    return torch.get_autocast_dtype(device)\n'),
        Valid('device = "cuda"\nmodel = model.cuda()\n'),  # no torch import: not torch code
        Valid('import torch\nimport nvidia.dali.fn as fn\nimages = fn.decoders.image(jpegs, device="cuda")\n'),
    )
    INVALID = (
        Invalid(
            'import torch\n\ndevice = "cuda"\nmodel = torch.nn.Linear(4, 2).cuda()\n'
            'x = torch.zeros(8, 4, device="cuda")\n',
            fixed='import torch\n\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
                  'model = torch.nn.Linear(4, 2).to(device)\nx = torch.zeros(8, 4, device=device)\n',
            doc=True,
        ),
        Invalid('import torch as T\nx = T.ones(2).to("cuda:0")\n',
                fixed='import torch as T\nx = T.ones(2).to("cuda:0" if T.cuda.is_available() else "cpu")\n'),
        Invalid('import torch.nn as nn\nmodel = nn.Linear(2, 2).cuda()\n',
                fixed='import torch\nimport torch.nn as nn\n'
                      'model = nn.Linear(2, 2).to("cuda" if torch.cuda.is_available() else "cpu")\n'),
        Invalid('import torch\nfrom torch import device as Device\nd = Device("cuda")\n',
                fixed='import torch\nfrom torch import device as Device\n'
                      'd = Device("cuda" if torch.cuda.is_available() else "cpu")\n'),
        Invalid('import torch\ndef f(m, torch_=None):\n    for device in ["cpu", "cuda"]:\n        pass\n'
                '    return m.cuda()\n',
                fixed='import torch\ndef f(m, torch_=None):\n    for device in ["cpu", "cuda"]:\n        pass\n'
                      '    return m.to("cuda" if torch.cuda.is_available() else "cpu")\n'),
        Invalid("import torch\nx = torch.ones(1)\nprint(f\"{x.cuda()}\")\n",
                fixed="import torch\nx = torch.ones(1)\n"
                      "print(f\"{x.to('cuda' if torch.cuda.is_available() else 'cpu')}\")\n"),
        Invalid('from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n'
                'def f(m):\n    return m.cuda()\n'),
        Invalid('import argparse\nimport torch\np = argparse.ArgumentParser()\n'
                'p.add_argument("--device", default="cuda")\n',
                fixed='import argparse\nimport torch\np = argparse.ArgumentParser()\n'
                      'p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")\n'),
    )

    def screen(self, index: AstIndex) -> bool:
        if not self._screen_cuda(index):
            return False
        return devices.uses_torch(index.imported_modules) or (
            index.project is not None and index.path is not None
            and index.project.imports_torch_code(top_level_imports(index.tree), index.path))

    @staticmethod
    def _screen_cuda(index: AstIndex) -> bool:
        """Does the file name a CUDA device, call ``.cuda()`` and the like, or name a legacy CUDA type?"""
        if any(devices.is_cuda_device(value) for value, _ in index.device_strings()):
            return True
        for call in index.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and devices.is_cuda_method_call(
                    func.attr, index.imported(dotted(func) or ""), [k.arg for k in call.keywords]):
                return True
            # a "cuda" argument of any call (a project function may use it as a device), a legacy CUDA type
            values = [*call.args, *(k.value for k in call.keywords)]
            if any(isinstance(v, ast.Constant) and isinstance(v.value, str) and devices.is_cuda_device(v.value)
                   for v in values):
                return True
        # a legacy CUDA type: torch.cuda.FloatTensor, or a name imported as one
        return any(devices.is_legacy_cuda_tensor(q) for node in index.legacy_types for q in index.qualnames(node)) \
            or any(devices.is_legacy_cuda_tensor(q) for names in index.aliases.values() for q in names)

    def check(self, ctx: Context) -> Iterable[Finding]:
        if not devices.uses_torch(ctx.imported_modules) and not (
                ctx.project is not None and ctx.project.imports_torch_code(own_imports(ctx), ctx.path)):
            return  # (a script of the project's own torch code, `from mobile_sam import ...`, uses torch)
        yield from self._device_strings(ctx)
        yield from self._cuda_calls(ctx)
        yield from self._legacy_types(ctx)
        yield from self._device_arguments(ctx)

    def _legacy_types(self, ctx: Context) -> Iterable[Finding]:
        """``torch.cuda.FloatTensor(...)``, ``Tensor = torch.cuda.FloatTensor``,
        ``torch.set_default_tensor_type("torch.cuda.FloatTensor")``: CUDA tensors by their legacy types."""
        guard = guards(ctx)
        for node in ctx.nodes(cst.Attribute):
            if not devices.is_legacy_cuda_tensor(ctx.qualname(node)) or guard.is_guarded(node):
                continue
            parent = ctx.parent(node)
            used = (isinstance(parent, cst.Call) and parent.func is node) or (
                isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node) or (
                isinstance(parent, cst.Arg) and self._sets_default_type(ctx, parent))
            if used:
                yield self._legacy_finding(ctx, node, ctx.code(node))
        for literal in ctx.nodes(cst.SimpleString):
            value = string_value(literal)
            arg = ctx.parent(literal)
            if value is not None and devices.is_legacy_cuda_tensor(value) and isinstance(arg, cst.Arg) \
                    and self._sets_default_type(ctx, arg) and not guard.is_guarded(literal):
                yield self._legacy_finding(ctx, literal, value)

    @staticmethod
    def _sets_default_type(ctx: Context, arg: cst.Arg) -> bool:
        call = ctx.parent(arg)
        return isinstance(call, cst.Call) and ctx.qualname(call.func) == devices.DEFAULT_TENSOR_TYPE_SETTER

    def _legacy_finding(self, ctx: Context, node: cst.CSTNode, name: str) -> Finding:
        return self.finding(
            ctx, node,
            f"{name} makes CUDA tensors and crashes without a GPU ({_ERROR}); create the tensor with torch.tensor"
            f"/torch.zeros and .to(device), with a device chosen by {_availability(ctx)}",
            evidence=CudaEvidence(device="cuda"),
        )

    def _device_arguments(self, ctx: Context) -> Iterable[Finding]:
        """A ``"cuda"`` literal passed to a function or method of the project whose parameter is used as a
        device (``model.sample(8, "cuda")``)."""
        guard = guards(ctx)
        uses = device_uses(ctx)
        for node in ctx.nodes(cst.SimpleString):
            value = string_value(node)
            arg = ctx.parent(node)
            if value is None or not devices.is_cuda_device(value) or not isinstance(arg, cst.Arg) \
                    or uses.is_device_arg(arg) or arg.star:
                continue
            call = ctx.parent(arg)
            if not isinstance(call, cst.Call) or guard.is_guarded(node):
                continue
            param = _parameter_for(ctx, call, arg)
            if param is None or not device_uses(param[0]).used_as_device(param[1].name.value, param[1]):
                continue  # the parameter is not put in a device position by its function
            yield self.finding(
                ctx, node,
                f'Hard-coded device "{value}" crashes without a GPU ({_ERROR}); '
                f"fall back with {_fallback_hint(ctx, value)}",
                self._fix_string(ctx, node, value, UseKind.KEYWORD),
                evidence=CudaEvidence(device=value),
            )

    def _device_strings(self, ctx: Context) -> Iterable[Finding]:
        uses = device_uses(ctx)
        guard = guards(ctx)
        for node in ctx.nodes(cst.SimpleString):
            value = string_value(node)
            if value is None or not devices.is_cuda_device(value):
                continue
            use = uses.use_of(node)
            if use is None or guard.is_guarded(node):
                continue
            param = ctx.parent(use.expr) if use.kind is UseKind.DEFAULT else _default_of(ctx, use.expr)
            if isinstance(param, cst.Param) and not (parameter_used_as_device(ctx, param)
                                                      and relies_on_default(ctx, param)
                                                      and not _param_read_only_where_guarded(ctx, param)):
                continue  # def f(device="cuda"): that never puts a tensor there, or whose every call passes one
            field = _field_default(ctx, use.expr)
            if field is not None and not field_relies_on_default(ctx, *field):
                continue  # device: torch.device = attr.ib(default=torch.device("cuda")), passed by every caller
            option_param = _click_parameter(ctx, use.expr) if use.kind is UseKind.ARGPARSE else None
            if option_param is not None and (not parameter_used_as_device(ctx, option_param)
                                             or _param_read_only_where_guarded(ctx, option_param)):
                continue  # @click.option("--device", default="cuda") read by the command only where CUDA is certain
            if use.kind is UseKind.ARGPARSE and _option_only_inspected(ctx, ctx.parent(use.expr)):
                continue  # --device cuda:0 only compared with "cpu" and spliced into f"cuda:{...}"
            if use.kind is UseKind.ASSIGN and _read_only_where_guarded(ctx, use.expr):
                continue  # DEVICE = "cuda" read only under `if torch.cuda.is_available():`
            if use.kind is UseKind.TORCH_DEVICE and _built_device_read_only_where_guarded(ctx, use.expr):
                continue  # device = torch.device("cuda:0") (building it needs no CUDA) read only there
            yield self.finding(
                ctx, node,
                f'Hard-coded device "{value}" crashes without a GPU ({_ERROR}); '
                f"fall back with {_fallback_hint(ctx, value)}",
                self._fix_string(ctx, node, value, use.kind),
                evidence=CudaEvidence(device=value),
            )

    def _cuda_calls(self, ctx: Context) -> Iterable[Finding]:
        guard = guards(ctx)
        for call in ctx.nodes(cst.Call):
            func = call.func
            if not isinstance(func, cst.Attribute) or not is_cuda_call(ctx, call):
                continue
            if guard.is_guarded(call) or parameterless_module(ctx, func.value):
                continue
            yield self.finding(
                ctx, call,
                f".cuda() crashes without a GPU ({_ERROR}); use .to(device) with a device chosen by "
                f"{_availability(ctx)}",
                self._fix_cuda_call(ctx, call),
                evidence=CudaEvidence(cuda_call=True, cuda_index=_literal_index(call)),
            )

    def _fix_string(self, ctx: Context, node: cst.SimpleString, value: str, kind: UseKind) -> Fix | None:
        if kind in (UseKind.KEYWORD, UseKind.TO) and value in ("cuda", "cuda:0"):
            var = device_name_at(ctx, node)
            if var is not None:
                return Fix((replace_token(ctx, node, var),), Applicability.UNSAFE, f"Use `{var}`")
        if node.prefix:
            return None
        found = fallback_expr(ctx, node, value, quote_at(ctx, node, node.quote[0]))
        if found is None:
            return None
        expr, extra = found
        if needs_parens(ctx, node):
            expr = f"({expr})"
        return Fix((*extra, replace_token(ctx, node, expr)), Applicability.UNSAFE, "Fall back to the CPU")

    def _fix_cuda_call(self, ctx: Context, call: cst.Call) -> Fix | None:
        """``.cuda()`` -> ``.to(device)``, touching only the name ``cuda`` and the device argument (a
        comment inside the parentheses stays where it is)."""
        func = call.func
        assert isinstance(func, cst.Attribute)
        index = _cuda_index(call)
        if index is False:
            return None  # a device variable, memory_format=, *args: not rewritten
        quote = quote_at(ctx, call, preferred_quote(ctx))
        if index is None:
            target = device_name_at(ctx, call)
            extra: list[Edit] = []
            if target is None:
                found = fallback_expr(ctx, call, "cuda", quote)
                if found is None:
                    return None
                target, extra = found
            device_edit = paren_call_insert(ctx, call, target + (", " if call.args else ""))
            if device_edit is None:
                return None
        else:
            found = fallback_expr(ctx, call, f"cuda:{index.value}", quote)
            if found is None:
                return None
            target, extra = found
            device_edit = replace_token(ctx, index, target)
        return Fix((*extra, replace_token(ctx, func.attr, "to"), device_edit), Applicability.UNSAFE, "Use .to(device)")


def _fallback_hint(ctx: Context, value: str) -> str:
    """The device choice a message suggests: the form ``device-fallback = "accelerator"`` writes where it is
    set, else the CUDA one."""
    if ctx.settings.device_fallback == "accelerator":
        return 'torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"'
    return f'"{value}" if torch.cuda.is_available() else "cpu"'


def _availability(ctx: Context) -> str:
    accelerator = ctx.settings.device_fallback == "accelerator"
    return "torch.accelerator.is_available()" if accelerator else "torch.cuda.is_available()"


def _cuda_index(call: cst.Call) -> cst.Integer | Literal[False] | None:
    """The literal device index of ``.cuda(N)`` / ``.cuda(device=N)``, None for none, False when the call
    has arguments the fix does not rewrite."""
    index: cst.Integer | None = None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "non_blocking":
            continue
        if (arg.keyword is None or arg.keyword.value == "device") and isinstance(arg.value, cst.Integer) \
                and index is None and arg.star == "":
            index = arg.value
        else:
            return False
    return index


def _literal_index(call: cst.Call) -> int | None:
    """The device index of ``.cuda(N)`` as an int (None: no literal index)."""
    index = _cuda_index(call)
    return int(index.value, 0) if isinstance(index, cst.Integer) else None  # a Python literal: 1, 0x1, 1_0


_FIELD_MAKERS = frozenset({"attr.ib", "attr.attrib", "attr.field", "attrs.field", "dataclasses.field", "field",
                           "attrib"})
_FIELD_MAKER_NAMES = frozenset(maker.rsplit(".", 1)[-1] for maker in _FIELD_MAKERS)  # ib, attrib, field
_FIELD_CLASSES = frozenset({"dataclass", "s", "attrs", "define", "frozen", "mutable"})


def _field_default(ctx: Context, expr: cst.BaseExpression) -> tuple[cst.ClassDef, str, int | None] | None:
    """The class, field name and positional index of the dataclass / attrs field whose default ``expr`` is
    (``device: torch.device = attr.ib(default=torch.device("cuda"))``, ``device: str = "cuda"`` in a
    ``@dataclass``), if it is one."""
    node: cst.CSTNode = expr
    parent = ctx.parent(node)
    if isinstance(parent, cst.Arg) and parent.keyword is None:  # the string of torch.device("cuda")
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and ctx.qualname(call.func) == UseKind.TORCH_DEVICE.value:
            node, parent = call, ctx.parent(call)
    if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "default":
        maker = ctx.parent(parent)
        if not isinstance(maker, cst.Call) or (ctx.qualname(maker.func) or dotted_name(maker.func) or "") \
                not in _FIELD_MAKERS:
            return None
        node, parent = maker, ctx.parent(maker)
    if not isinstance(parent, (cst.AnnAssign, cst.Assign)) or parent.value is not node:
        return None
    line = ctx.parent(parent)
    cls = ctx.parent(ctx.parent(line)) if line is not None else None
    if not isinstance(cls, cst.ClassDef) or not any(
            (dotted_name(decorator_target(d)) or "").split(".")[-1] in _FIELD_CLASSES for d in cls.decorators):
        return None
    names = [name for s in cls.body.body if isinstance(s, cst.SimpleStatementLine)
             for name in [_field_name(s)] if name is not None]
    target = _field_name(line) if isinstance(line, cst.SimpleStatementLine) else None
    if target is None:
        return None
    return cls, target, names.index(target) if target in names else None


def _field_name(line: cst.SimpleStatementLine) -> str | None:
    """The field a class-body line declares (``x: int = ...``, ``x = attr.ib(...)``), if it does."""
    stmt = line.body[0] if line.body else None
    if isinstance(stmt, cst.AnnAssign) and isinstance(stmt.target, cst.Name):
        return stmt.target.value
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name) \
            and isinstance(stmt.value, cst.Call) and (dotted_name(stmt.value.func) or "").split(".")[-1] \
            in _FIELD_MAKER_NAMES:
        return stmt.targets[0].target.value
    return None


def _default_of(ctx: Context, string: cst.BaseExpression) -> cst.Param | None:
    """The parameter whose default is ``torch.device(<string>)``, if any."""
    arg = ctx.parent(string)
    call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    if not isinstance(call, cst.Call) or ctx.qualname(call.func) != UseKind.TORCH_DEVICE.value:
        return None
    param = ctx.parent(call)
    return param if isinstance(param, cst.Param) and param.default is call else None


def _option_only_inspected(ctx: Context, arg: cst.CSTNode | None) -> bool:
    """Is the argparse option declared by the call around ``arg`` read in this file only to be compared or
    spliced into an f-string (directly, or through a name only used so), or where CUDA was checked
    (``torch.device(args.device if torch.cuda.is_available() else "cpu")``, after an exit without CUDA), never
    used as a whole device on a path without CUDA?"""
    call = ctx.parent(arg) if arg is not None else None
    option = command_line_option(call) if isinstance(call, cst.Call) else None
    if option is None:
        return False
    # args.device: not torch.device, nor an object's own attribute (self.device)
    reads = [a for a in ctx.nodes(cst.Attribute) if a.attr.value == option.dest and isinstance(a.value, cst.Name)
             and a.value.value not in ("self", "cls") and ctx.qualname(a) is None
             and not _bound_to_other_object(ctx, a.value)]
    guard = guards(ctx)

    def harmless(read: cst.Attribute) -> bool:
        if _past_cuda_fallback(ctx, read) or _replaced_without_cuda(ctx, read) or _replaced_before(ctx, read):
            return True
        if _handed_to_chooser(ctx, read) or _handed_to_inert_parameter(ctx, read, option.text("default")):
            return True  # args.device = check_device(args.device): the helper falls back without CUDA
        parent = ctx.parent(read)
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)) and _selects_cuda(ctx, parent):
            return False  # `elif args.device == "cuda":` takes the CUDA path on the default (a guard it makes itself)
        return _inspected(ctx, read, depth=1) or guard.is_guarded(read) or _built_into_unused_device(ctx, read)

    return bool(reads) and all(harmless(read) for read in reads)


def _bound_to_other_object(ctx: Context, name: cst.Name) -> bool:
    """Is ``name`` (the ``model`` of ``model.device``) an object with behaviour: the function around it (or the
    module) calls it or a method of it (``model.generate(...)``, ``model(x)``)? Parsed options have no methods: its
    ``.device`` is no read of the ``--device`` option (LLaVA's ``tokenizer, model, ... = load_pretrained_model(...)``
    then ``image.to(model.device)``)."""
    scope = ctx.enclosing_function(name)
    def on_name(func: cst.BaseExpression) -> bool:
        target = func.value if isinstance(func, cst.Attribute) else func
        return isinstance(target, cst.Name) and target.value == name.value

    return any(on_name(call.func) for call in ctx.nodes(cst.Call) if ctx.enclosing_function(call) is scope)


def _handed_to_inert_parameter(ctx: Context, read: cst.BaseExpression, default: str | None) -> bool:
    """Is ``read`` (``args.device``) an argument of a call of a function of the project whose parameter the function
    never uses as a device with the option's default: LLaVA's ``load_pretrained_model(..., device=args.device)``,
    whose ``device="cuda"`` is used only under ``if device != "cuda":`` (analysis.parameter_used_as_device). The
    parameter must default to the option's own default (or to nothing), which the function rules out the same."""
    param = _inert_parameter(ctx, read)
    return param is not None and (param.default is None
                                  or (default is not None and string_value(param.default) == default))


def _inert_parameter(ctx: Context, expr: cst.BaseExpression) -> cst.Param | None:
    """The parameter that ``expr``, an argument of a call of a function or method of the project, binds, when
    that function never uses it as a device (analysis.parameter_used_as_device); None otherwise."""
    arg = ctx.parent(expr)
    call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    if not isinstance(arg, cst.Arg) or not isinstance(call, cst.Call) or arg.value is not expr:
        return None
    found = _parameter_for(ctx, call, arg)
    return found[1] if found is not None and not parameter_used_as_device(*found) else None


def _built_into_unused_device(ctx: Context, read: cst.BaseExpression) -> bool:
    """Is ``read`` (``args.device``) the argument of a ``torch.device(...)`` assigned to a name that is read only
    where CUDA was checked for, or that is never used as a device (``device = torch.device(args.device)`` handed
    only to a function that ignores it)? Building the device needs no CUDA."""
    arg = ctx.parent(read)
    call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    return isinstance(call, cst.Call) and ctx.qualname(call.func) == "torch.device" \
        and _built_device_read_only_where_guarded(ctx, read)


def _replaced_before(ctx: Context, read: cst.Attribute) -> bool:
    """Is ``read`` (``args.device``) the target of an assignment, or read after an earlier statement of its block
    (or of a block around it, in the same function) that replaces it where CUDA is missing (``if args.device ==
    "cuda" and not torch.cuda.is_available(): args.device = "cpu"``, a few statements before
    ``torch.device(args.device)``; also an ``elif`` of a chain that tries mps first)?"""
    if isinstance(ctx.parent(read), cst.AssignTarget):
        return True  # `args.device = "cpu"`: a write
    written = ctx.code(read)
    check = guards(ctx)
    child: cst.CSTNode = read
    for anc in ctx.ancestors(read):
        if isinstance(anc, (cst.IndentedBlock, cst.Module)):
            body = list(anc.body)
            at = next((i for i, stmt in enumerate(body) if stmt is child), 0)
            for stmt in body[:at]:
                if _reassigned_by_chooser(ctx, stmt, written):
                    return True
                arm: cst.CSTNode | None = stmt
                while isinstance(arm, cst.If):  # `if mps: ... elif not torch.cuda.is_available(): args.device = ...`
                    if _without_cuda(check, arm.test) and _assigns(ctx, arm.body, written):
                        return True
                    arm = arm.orelse
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            return False
        child = anc
    return False


def _handed_to_chooser(ctx: Context, read: cst.Attribute) -> bool:
    """Is ``read`` (``args.device``) the argument of a call whose result replaces it, ``args.device =
    check_device(args.device)``, to a function of the project that chooses a device with a fallback (it asks
    whether CUDA is there, names "cpu" or "mps", and returns)?"""
    arg = ctx.parent(read)
    call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    assign = ctx.parent(call) if isinstance(call, cst.Call) else None
    line = ctx.parent(assign) if isinstance(assign, cst.Assign) else None
    return isinstance(line, cst.SimpleStatementLine) and _reassigned_by_chooser(ctx, line, ctx.code(read))


def _reassigned_by_chooser(ctx: Context, stmt: cst.CSTNode, written: str) -> bool:
    """Is ``stmt`` ``<written> = f(...)`` where ``f``, a function of the project, chooses a device with a
    fallback (diffbir's ``args.device = check_device(args.device)``)?"""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    assign = stmt.body[0]
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.value, cst.Call)
            and ctx.code(assign.targets[0].target) == written):
        return False
    found = callee(ctx, assign.value)
    if found is None:
        return False
    helper_ctx, chooser = found
    return isinstance(chooser, cst.FunctionDef) and chooses_device_with_fallback(helper_ctx, chooser)


def _without_cuda(check: Guards, test: cst.BaseExpression) -> bool:
    """Does ``test`` being true mean CUDA is missing (``not torch.cuda.is_available()``, also as a side of an
    ``and``: ``args.device == "cuda" and not torch.cuda.is_available()``)?"""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _without_cuda(check, test.left) or _without_cuda(check, test.right)
    return check.polarity(test) is Polarity.UNAVAILABLE


def _replaced_without_cuda(ctx: Context, read: cst.Attribute) -> bool:
    """Is ``read`` (``args.device``) assigned to a name that the next statement replaces where CUDA is missing
    (``device = args.device`` / ``if not torch.cuda.is_available(): device = "cpu"``)?"""
    assign = ctx.parent(read)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or assign.value is not read \
            or not isinstance(assign.targets[0].target, cst.Name):
        return False
    line = ctx.parent(assign)
    block = ctx.parent(line)
    if not isinstance(line, cst.SimpleStatementLine) or not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return False
    name = assign.targets[0].target.value
    body = list(block.body)
    at = body.index(line) + 1
    after = body[at] if at < len(body) else None
    if not isinstance(after, cst.If) or guards(ctx).polarity(after.test) is not Polarity.UNAVAILABLE:
        return False
    return _assigns(ctx, after.body, name)


def _assigns(ctx: Context, body: cst.BaseSuite, written: str) -> bool:
    """Does an assignment in ``body`` write ``written`` (``device``, ``args.device``)?"""
    return any(ctx.code(t.target) == written for n in walk(body) if isinstance(n, cst.Assign) for t in n.targets)


def _past_cuda_fallback(ctx: Context, read: cst.Attribute) -> bool:
    """Is ``read`` (``args.device``) in the ``else`` of an ``if`` that falls back when this very value asks for
    CUDA and there is none (``if "cuda" in args.device and not torch.cuda.is_available(): device = "cpu"``)?
    There the value is not CUDA, or CUDA is there."""
    written = ctx.code(read)
    child: cst.CSTNode = read
    for anc in ctx.ancestors(read):
        if isinstance(anc, cst.If) and child is anc.orelse and _falls_back_for(
                ctx, guards(ctx), anc.test, lambda n: isinstance(n, cst.Attribute) and ctx.code(n) == written):
            return True
        child = anc
    return False


def _falls_back_for(ctx: Context, check: Guards, test: cst.BaseExpression,
                    names_value: Callable[[cst.CSTNode], bool]) -> bool:
    """Is ``test`` an ``and`` that holds when a value asks for CUDA and there is none: one side implies CUDA is
    missing, and one side is a comparison that mentions ``"cuda"`` and a node ``names_value`` accepts (``"cuda" in
    args.device``, ``device.type == th.device("cuda").type``)?"""
    if not (isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And)
            and _without_cuda(check, test)):
        return False
    return any(isinstance(side, cst.Comparison) and "cuda" in ctx.code(side) and any(names_value(n) for n in walk(side))
               for side in (test.left, test.right))


def _inspected(ctx: Context, expr: cst.BaseExpression, depth: int) -> bool:
    parent = ctx.parent(expr)
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
        return not _selects_cuda(ctx, parent)
    if isinstance(parent, cst.FormattedStringExpression):
        return True
    if depth and isinstance(parent, cst.Assign) and len(parent.targets) == 1 \
            and isinstance(parent.targets[0].target, cst.Name):
        name = parent.targets[0].target.value
        reads = [n for n in ctx.nodes(cst.Name) if n.value == name and not _is_target(ctx, n)]
        return all(_inspected(ctx, n, depth - 1) for n in reads)
    return False


def _selects_cuda(ctx: Context, node: cst.Comparison | cst.ComparisonTarget) -> bool:
    """Is the comparison an equality with a CUDA device string (``args.device == "cuda"``)? It picks the CUDA
    path exactly when the option keeps its ``"cuda"`` default (nnU-Net's ``elif args.device == 'cuda': device =
    torch.device('cuda')``): a use of the default, not a look at it."""
    comparison = ctx.parent(node) if isinstance(node, cst.ComparisonTarget) else node
    if not isinstance(comparison, cst.Comparison):
        return False
    sides = [comparison.left, *(t.comparator for t in comparison.comparisons)]
    if not (any(isinstance(t.operator, (cst.Equal, cst.Is)) for t in comparison.comparisons) and any(
            (value := string_value(side)) is not None and devices.is_cuda_device(value) for side in sides)):
        return False
    test: cst.CSTNode = comparison
    for anc in ctx.ancestors(comparison):
        if isinstance(anc, (cst.If, cst.IfExp)) and anc.test is test:
            # `if args.device == "cuda" and not torch.cuda.is_available(): args.device = "cpu"`: a fallback
            return not any(isinstance(n, cst.Call) and ctx.qualname(n.func) in devices.AVAILABILITY_CALLS
                           for n in walk(anc.test))
        if not isinstance(anc, (cst.BooleanOperation, cst.UnaryOperation)):
            return True
        test = anc
    return True


def _read_only_where_guarded(ctx: Context, value: cst.BaseExpression, depth: int = 2) -> bool:
    """Is ``value``, assigned to a plain name (``DEVICE = "cuda"``), read only where CUDA was checked for (under
    ``if torch.cuda.is_available():``, after an exit without it) or compared, also through names built from it
    (``CUDA_DEVICE = f"{DEVICE}:{DEVICE_ID}"`` read only there), ``depth`` names deep? A module-level name
    that another file of the project mentions may be read there: not judged so."""
    assign = ctx.parent(value)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 \
            or not isinstance(assign.targets[0].target, cst.Name):
        return False
    name = assign.targets[0].target.value
    scope = ctx.enclosing_function(assign)
    reads = [n for n in ctx.nodes(cst.Name) if n.value == name and not _is_target(ctx, n) and not _binds(ctx, n)
             and (scope is None or any(a is scope for a in ctx.ancestors(n)))]
    if not reads or not all(_flows_where_guarded(ctx, read, depth) for read in reads):
        return False  # (`device = "cuda"` read nowhere yet is the hard-coded device the next line will use)
    return scope is not None or ctx.project is None or pytest_module(ctx.path) \
        or not ctx.project.mentioned_elsewhere(name, ctx.path)


def _built_device_read_only_where_guarded(ctx: Context, string: cst.BaseExpression) -> bool:
    """Is ``string`` the device of a ``torch.device("cuda:0")`` that is the whole value assigned to a name, read
    only where CUDA was checked for (:func:`_read_only_where_guarded`)? Building the device needs no CUDA
    (checked on torch 2.13.0+cpu); using it does."""
    arg = ctx.parent(string)
    call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    return isinstance(call, cst.Call) and isinstance(ctx.parent(call), cst.Assign) \
        and _read_only_where_guarded(ctx, call)


def _click_parameter(ctx: Context, default: cst.BaseExpression) -> cst.Param | None:
    """The parameter of the command a ``@click.option("--device", default=...)`` decorates that receives it
    (named by the option's explicit name, else its longest flag: ``--device`` -> ``device``)."""
    arg = ctx.parent(default)
    call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    decorator = ctx.parent(call) if isinstance(call, cst.Call) else None
    func = ctx.parent(decorator) if isinstance(decorator, cst.Decorator) else None
    if not isinstance(call, cst.Call) or not isinstance(func, cst.FunctionDef) \
            or ctx.qualname(call.func) != devices.CLICK_OPTION:
        return None
    names = [string_value(a.value) or "" for a in call.args if a.keyword is None]
    plain = [n for n in names if n.isidentifier()]
    flags = sorted((n for n in names if n.startswith("-")), key=len, reverse=True)
    name = plain[0] if plain else (flags[0].lstrip("-").replace("-", "_").lower() if flags else "")
    params = [*func.params.posonly_params, *func.params.params, *func.params.kwonly_params]
    return next((p for p in params if p.name.value == name), None)


def _param_read_only_where_guarded(ctx: Context, param: cst.Param) -> bool:
    """Is the parameter read in its function only where CUDA is certain (after its first statement, ``import
    triton``, made the rest of the body GPU-only)?"""
    func = ctx.parent(ctx.parent(param))
    name = param.name.value
    rebound = _rebinding(ctx, func, name)  # reads after it are of the new value
    reads = [n for n in ctx.nodes(cst.Name) if n.value == name and n is not param.name and not _binds(ctx, n)
             and not _is_target(ctx, n) and any(a is func for a in ctx.ancestors(n))
             and (rebound is None or ctx.order[n] <= ctx.order[rebound]
                  or any(a is rebound for a in ctx.ancestors(n)))]
    guard = guards(ctx)
    return bool(reads) and all(guard.is_guarded(n) or _checked_arm(ctx, guard, n) for n in reads)


def _rebinding(ctx: Context, func: cst.CSTNode | None, name: str) -> cst.CSTNode | None:
    """The first statement of ``func``'s body that assigns ``name`` anew, unconditionally (``device =
    torch.device(device if ok else "cpu")``)."""
    body = func.body.body if isinstance(func, cst.FunctionDef) and isinstance(func.body, cst.IndentedBlock) else []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine) and any(
                isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name
                                                      for t in small.targets) for small in stmt.body):
            return stmt
    return None


def _checked_arm(ctx: Context, guard: Guards, read: cst.Name) -> bool:
    """``device if torch.cuda.is_available() else "cpu"``: the read is the arm taken only with CUDA."""
    parent = ctx.parent(read)
    return isinstance(parent, cst.IfExp) and parent.body is read and guard.polarity(parent.test) is Polarity.AVAILABLE


def _binds(ctx: Context, name: cst.Name) -> bool:
    """A parameter's name, an argument's keyword or a name an import binds (``from helpers import device as
    d``: another module's variable): no read of this one."""
    parent = ctx.parent(name)
    return isinstance(parent, (cst.Param, cst.ImportAlias)) or (isinstance(parent, cst.Arg) and parent.keyword is name)


def _flows_where_guarded(ctx: Context, read: cst.BaseExpression, depth: int) -> bool:
    """Does the value read at ``read`` reach a device only where CUDA was checked for: the read is guarded or
    compared, or it flows (through conditional expressions and f-strings) into a name read only so?"""
    if guards(ctx).is_guarded(read) or (isinstance(read, cst.Name) and (
            _after_cuda_fallback(ctx, read) or _rebuilt_as_device(ctx, read) or _type_inspected(ctx, read))):
        return True
    expr: cst.CSTNode = read
    parent = ctx.parent(expr)
    while isinstance(parent, (cst.IfExp, cst.FormattedStringExpression, cst.FormattedString)) \
            and getattr(parent, "test", None) is not expr:
        expr, parent = parent, ctx.parent(parent)
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
        return True
    if isinstance(expr, cst.BaseExpression) and _inert_parameter(ctx, expr) is not None:
        return True  # handed to a function of the project that never uses it as a device (YOLOS's
        # get_val_json(data_loader, base_ds, device, ...), whose `samples.to(device)` is commented out)
    return depth > 0 and isinstance(parent, cst.Assign) and isinstance(expr, cst.BaseExpression) \
        and _read_only_where_guarded(ctx, expr, depth - 1)


def _after_cuda_fallback(ctx: Context, read: cst.Name) -> bool:
    """Is ``read`` (``device``) after a statement of a block around it that falls back when this very name asks for
    CUDA and there is none: ``if device.type == "cuda" and not torch.cuda.is_available():`` whose body returns,
    raises or rebinds the name (Stable-Baselines3's ``get_device``: ``return th.device("cpu")``)? Past it the
    value is not CUDA, or CUDA is there."""
    check = guards(ctx)
    child: cst.CSTNode = read
    for anc in ctx.ancestors(read):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, cst.IndentedBlock):
            for stmt in anc.body:
                if stmt is child:
                    break
                if isinstance(stmt, cst.If) and stmt.orelse is None and _falls_back(ctx, check, stmt, read.value):
                    return True
        child = anc
    return False


def _falls_back(ctx: Context, check: Guards, stmt: cst.If, name: str) -> bool:
    """Does ``stmt`` fall back for the name (:func:`_falls_back_for`), its body ending in a ``return`` or
    ``raise``, or rebinding the name?"""
    if not _falls_back_for(ctx, check, stmt.test, lambda n: isinstance(n, cst.Name) and n.value == name):
        return False
    body = stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else []
    last = body[-1] if body else None
    smalls = last.body if isinstance(last, cst.SimpleStatementLine) else []
    return any(isinstance(small, (cst.Return, cst.Raise)) for small in smalls) or any(
        isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name
                                               for t in small.targets)
        for b in body if isinstance(b, cst.SimpleStatementLine) for small in b.body)


def _rebuilt_as_device(ctx: Context, read: cst.Name) -> bool:
    """``device = torch.device(device)``: the name read to build a device object bound to the same name, whose
    own reads are the name's (building it needs no CUDA)."""
    arg = ctx.parent(read)
    call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    assign = ctx.parent(call) if isinstance(call, cst.Call) else None
    return isinstance(call, cst.Call) and ctx.qualname(call.func) == "torch.device" \
        and isinstance(assign, cst.Assign) and len(assign.targets) == 1 \
        and isinstance(assign.targets[0].target, cst.Name) and assign.targets[0].target.value == read.value


def _type_inspected(ctx: Context, read: cst.Name) -> bool:
    """``device.type == "cuda"``, ``device.index is None``: a look at the device's parts."""
    parent = ctx.parent(read)
    return isinstance(parent, cst.Attribute) and parent.attr.value in ("type", "index") \
        and isinstance(ctx.parent(parent), (cst.Comparison, cst.ComparisonTarget))


def _is_target(ctx: Context, name: cst.Name) -> bool:
    parent = ctx.parent(name)
    return isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Attribute) and parent.value is not name)


def _parameter_for(ctx: Context, call: cst.Call, arg: cst.Arg) -> tuple[Context, cst.Param] | None:
    """The parameter of the project's function or method that ``arg`` of ``call`` binds: resolved like a
    call's callee, or, for ``obj.method(...)``, the one method of that name among the file's classes."""
    found = callee(ctx, call)
    func_ctx: Context = ctx
    func: cst.FunctionDef | None = None
    bound = False
    if found is not None and isinstance(found[1], cst.FunctionDef):
        func_ctx, func = found[0], found[1]
        owner = func_ctx.parent(func_ctx.parent(func))
        bound = isinstance(call.func, cst.Attribute) and isinstance(owner, cst.ClassDef)
    elif isinstance(call.func, cst.Attribute) and ctx.qualname(call.func) is None:
        name = call.func.attr.value
        methods = [f for f in ctx.nodes(cst.FunctionDef)
                   if f.name.value == name and isinstance(ctx.parent(ctx.parent(f)), cst.ClassDef)]
        if len(methods) != 1:
            return None
        func, bound = methods[0], True
    if func is None:
        return None
    params = func.params
    if arg.keyword is not None:
        named = [p for p in (*params.params, *params.kwonly_params) if p.name.value == arg.keyword.value]
        return (func_ctx, named[0]) if named else None
    index = [a for a in call.args if a.keyword is None].index(arg) + (1 if bound else 0)
    positional = [*params.posonly_params, *params.params]
    return (func_ctx, positional[index]) if index < len(positional) else None
