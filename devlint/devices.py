"""The device model: everything devlint knows about PyTorch devices, as data and small functions.

- the device-string grammar of ``torch.device`` (c10/core/Device.cpp), checked without torch: ``parse_device``
  accepts exactly the strings torch 2.13 accepts and, for a rejected one, gives torch's own error text (a
  property test keeps it honest against the installed torch);
- the device positions: where in a call, an assignment, a config dict or a signature a value is used as a
  device (:func:`call_position`, :func:`is_device_name`, :data:`ARGPARSE_METHOD`);
- the guard forms: availability checks, GPU-only markers, early exits and the exceptions a guard catches;
- the calls that initialise CUDA, and the environment variables read at that point;
- the tensor factories and module constructors that create values on a device.

The byte triggers, the ``ast`` pre-filter (screen.py) and every rule read this module; none of them decides
on its own what a device position is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from devlint.diagnostics import StrEnum

# torch.device's accepted device types, in the order torch lists them in its error message.
DEVICE_TYPES = (
    "cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
    "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone",
)
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class DeviceString:
    type: str
    index: int | None


class InvalidDeviceString(ValueError):
    """The string is rejected by ``torch.device``; ``str(exc)`` is torch's own message."""


def _is_alpha(ch: str) -> bool:
    return ("a" <= ch <= "z") or ("A" <= ch <= "Z")


def _step(state: str, ch: str, name: list[str], index: list[str]) -> str:
    """One character of torch's device-string state machine (``start`` -> ``index_start`` ->
    ``index_rest``, or ``error``): the next state; the character is appended to ``name`` or ``index``."""
    if state == "start":
        if ch == ":":
            return "index_start"
        if _is_alpha(ch) or ch == "_":
            name.append(ch)
            return state
        return "error"
    if state == "index_start":
        if ch.isascii() and ch.isdigit():
            index.append(ch)
            return "index_rest"
        return "error"
    # "index_rest": one more digit, after a first digit that is not 0
    if index[0] == "0" or not (ch.isascii() and ch.isdigit()):
        return "error"
    index.append(ch)
    return state


def _scan(text: str) -> tuple[str, str, str]:
    """Run the state machine over ``text`` up to its first error: (device type, index digits, final state)."""
    name: list[str] = []
    index: list[str] = []
    state = "start"
    for ch in text:
        state = _step(state, ch, name, index)
        if state == "error":
            break
    return "".join(name), "".join(index), state


def parse_device(text: str) -> DeviceString:
    """Parse like ``torch.device(text)``; raise :class:`InvalidDeviceString` with torch's message."""
    if not text:
        raise InvalidDeviceString("Device string must not be empty")
    device_type, index, state = _scan(text)
    if not device_type or state == "error" or (state == "index_start" and not index):
        raise InvalidDeviceString(f"Invalid device string: '{text}'")
    idx: int | None = None
    if index:
        value = int(index)
        if value > _INT32_MAX:
            raise InvalidDeviceString(
                f"Could not parse device index '{index}' in device string '{text}'"
            )
        idx = value
    if device_type not in DEVICE_TYPES:
        raise InvalidDeviceString(
            f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device string: {device_type}"
        )
    return DeviceString(device_type, idx)


def is_valid(text: str) -> bool:
    try:
        parse_device(text)
    except InvalidDeviceString:
        return False
    return True


def _typed_candidate(dev: str, rest: str) -> tuple[str, bool] | None:
    """The correction (and whether it is safe) of a lower-cased string that starts with device type ``dev``
    and goes on with ``rest``; None when ``rest`` is no index spelling this knows."""
    if rest.isdigit():  # "cuda0" -> "cuda:0", "cuda01" -> "cuda:1"
        return f"{dev}:{int(rest)}", True
    if rest.startswith(":+") and rest[2:].isdigit():  # "cuda:+1"
        return f"{dev}:{int(rest[2:])}", True
    if rest.startswith(":") and rest[1:].isdigit():  # "cuda:01"
        return f"{dev}:{int(rest[1:])}", True
    if rest == ":":  # "cuda:"
        return dev, True
    if rest.startswith(":-") and rest[2:].isdigit():  # "cuda:-1": the current device
        return dev, False
    return None


def suggest(text: str) -> tuple[str | None, bool]:
    """A corrected device string for ``text`` and whether the correction is safe (intent unambiguous).

    Returns ``(None, False)`` when there is no sound correction (e.g. ``"cuda:1,2"``).
    """
    stripped = "".join(text.split())  # "cuda: 0", "cuda:0 " -> "cuda:0"
    candidates: list[tuple[str, bool]] = [(stripped, True)]
    lowered = stripped.lower()
    candidates.append((lowered, True))  # "CUDA" -> "cuda"
    for dev in sorted(DEVICE_TYPES, key=len, reverse=True):
        if lowered.startswith(dev):
            typed = _typed_candidate(dev, lowered[len(dev):])
            if typed is not None:
                candidates.append(typed)
            break
    if lowered in ("gpu", "nvidia") or (lowered.startswith("gpu:") and lowered[4:].isdigit()):
        candidates.append(("cuda" + lowered[3:], False))
    for candidate, safe in candidates:
        if candidate != text and is_valid(candidate):
            return candidate, safe
    return None, False


def is_cpu_device(value: str) -> bool:
    """Does this string put a tensor on the CPU ("cpu", "cpu:0")?"""
    return value.split(":")[0] == "cpu"


def is_cuda_device(value: str) -> bool:
    """A valid CUDA device string ("cuda", "cuda:1"); an invalid one is DEV003's business."""
    if not value.startswith("cuda"):
        return False
    try:
        return parse_device(value).type == "cuda"
    except InvalidDeviceString:
        return False


# Device types that out-of-tree backends register through PrivateUse1 (torch_npu, torch_mlu, torch_musa,
# torch-neuronx, torch_gcu, ...): torch.device accepts them once the backend is imported.
OUT_OF_TREE = frozenset({"npu", "mlu", "musa", "neuron", "tpu", "gcu", "sdaa", "dipu", "xla", "iluvatar"})

# A string that starts like a torch device type, in any case ("CUDA:0", " gpu" does not).
STARTS_LIKE_DEVICE = re.compile(r"\s*(" + "|".join(sorted(DEVICE_TYPES, key=len, reverse=True)) + ")", re.IGNORECASE)


def rejection(value: str) -> str | None:
    """torch.device's error for ``value``, unless torch accepts it or it names a device of an out-of-tree
    backend (which torch.device accepts once that backend is imported)."""
    try:
        parse_device(value)
    except InvalidDeviceString as exc:
        if re.fullmatch(r"[a-z_]+(:(0|[1-9][0-9]*))?", value) and value.split(":")[0] in OUT_OF_TREE:
            return None
        return str(exc)
    return None


# --- device positions ---------------------------------------------------------------------------------
class UseKind(StrEnum):
    """How a value is used as a device."""

    TORCH_DEVICE = "torch.device"  # torch.device(value) / torch.device(type=value)
    TO = "to"  # x.to(value) / x.to(device=value)
    KEYWORD = "keyword"  # f(device=value), torch.load(map_location=value)
    ASSIGN = "assign"  # device = value (a variable used as a device, or named like one)
    DICT = "dict"  # {"device": value}
    DEFAULT = "default"  # def f(device=value)
    ARGPARSE = "argparse"  # parser.add_argument("--device", default=value)

    @property
    def loose(self) -> bool:
        """Does the value only *may* reach a device API (through a variable, a config, a default)?"""
        return self in (UseKind.ASSIGN, UseKind.DICT, UseKind.DEFAULT, UseKind.ARGPARSE)


DEVICE_CONSTRUCTOR = "torch.device"
DEVICE_CONSTRUCTOR_KEYWORD = "type"
MOVE_METHOD = "to"
DEVICE_KEYWORD = "device"
MAP_LOCATION_KEYWORD = "map_location"
MAP_LOCATION_FUNCS = frozenset({"torch.load"})
ARGPARSE_METHOD = "add_argument"
ARGPARSE_KEYWORD = "default"
# Packages whose device= keyword means a torch device; any other imported callee's device= is its own.
TORCH_ECOSYSTEM = frozenset({
    "torch", "torchvision", "torchaudio", "torchtext", "transformers", "sentence_transformers",
    "diffusers", "timm", "accelerate", "peft", "torchmetrics", "lightning", "pytorch_lightning",
})
# Frameworks with device names of their own ("CPU" is OpenVINO's device, "/GPU:0" TensorFlow's).
OTHER_FRAMEWORKS = frozenset({"tensorflow", "keras", "jax", "flax", "openvino", "onnxruntime", "paddle", "mxnet",
                              "tensorrt", "mindspore", "oneflow", "cupy", "tvm", "coremltools"})
_DEVICE_NAME = re.compile(r"^(device|dev|torch_device|default_device)$", re.IGNORECASE)
# Names a fix may use for "the device this program runs on" (not cpu_device, cuda_device, ...).
CANONICAL_DEVICE_VARS = ("device", "DEVICE", "dev", "torch_device", "default_device", "DEFAULT_DEVICE")


def is_device_name(name: str) -> bool:
    """Is a variable, attribute or config key of this name a device (``device``, ``args.dev``)?"""
    return bool(_DEVICE_NAME.match(name.split(".")[-1]))


def call_position(qualname: str | None, method: str | None, index: int | None, keyword: str | None) -> UseKind | None:
    """Is an argument of a call in a device position, and which?

    ``qualname``: the callee's imported qualified name (``torch.zeros``), or None for a method call or a
    function of the file; ``method``: the called attribute's name (``to`` in ``x.to(...)``) when
    ``qualname`` is None; ``index``: the position of a positional argument (None for a keyword or a
    starred argument); ``keyword``: the argument's keyword.
    """
    if qualname == DEVICE_CONSTRUCTOR:
        return UseKind.TORCH_DEVICE if index == 0 or keyword == DEVICE_CONSTRUCTOR_KEYWORD else None
    if qualname is None and method == MOVE_METHOD:
        return UseKind.TO if index == 0 or keyword == DEVICE_KEYWORD else None
    if keyword == MAP_LOCATION_KEYWORD and qualname in MAP_LOCATION_FUNCS:
        return UseKind.KEYWORD
    if keyword == DEVICE_KEYWORD and (qualname is None or qualname.split(".")[0] in TORCH_ECOSYSTEM):
        return UseKind.KEYWORD  # a torch API, or a method or function of this file that may forward to one
    return None


CLICK_OPTION = "click.option"


def is_argparse_device(method: str, option_strings: list[str | None]) -> bool:
    """``parser.add_argument("--device", default=...)`` (or ``@click.option("--device", default=...)``, its
    method ``option``): is this a command-line option for a device?"""
    return method in (ARGPARSE_METHOD, "option") and any("device" in (o or "") for o in option_strings)


def position_triggers() -> tuple[re.Pattern[bytes], ...]:
    """Byte patterns for the syntactic device positions, ending where the value starts: ``device(``
    (torch.device and its aliases), ``device=``, a ``"device":`` key, ``.to(``, ``map_location=``."""
    constructor = DEVICE_CONSTRUCTOR.rsplit(".", 1)[1].encode()
    keyword = DEVICE_KEYWORD.encode()
    # one regex per literal prefix: an alternation of whole patterns is ten times slower on large trees
    named = (
        (re.compile(constructor + rb"(?:\s*\(|\s*=(?!=)|[\"']\s*:)"),) if constructor == keyword else
        (re.compile(constructor + rb"\s*\("), re.compile(keyword + rb"(?:\s*=(?!=)|[\"']\s*:)"))
    )
    return (
        *named,
        re.compile(rb"\.[\s\\]*" + MOVE_METHOD.encode() + rb"\s*\("),
        re.compile(MAP_LOCATION_KEYWORD.encode() + rb"\s*=(?!=)"),
    )


def reaches_torch(qualname: str | None, method: str | None) -> bool:
    """Does a device argument of this call certainly end up in torch (not a function of the file that may
    do anything with it)?"""
    if qualname is None:
        return method == MOVE_METHOD
    return qualname.split(".")[0] in TORCH_ECOSYSTEM


# --- guards ---------------------------------------------------------------------------------------------
# Calls that answer "is there an accelerator?" (any of them in a condition makes it a guard).
AVAILABILITY_CALLS = frozenset({
    "torch.cuda.is_available", "torch.cuda.device_count", "torch.cuda.is_initialized",
    "torch.backends.mps.is_available", "torch.backends.mps.is_built", "torch.backends.cudnn.is_available",
    "torch.accelerator.is_available", "torch.accelerator.device_count", "torch.xpu.is_available",
    "torch.mps.device_count",
})
# Objects named for the accelerator that are no flag: `accelerator = Accelerator()`, then `if accelerator:` or
# `if accelerator.sync_gradients:` says nothing about CUDA
ACCELERATOR_OBJECTS = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
# Words that make a name, call, string or function a device test or a GPU-only marker.
GUARD_WORDS = re.compile(r"cuda|gpu|accelerat", re.IGNORECASE)
# A condition string naming a device in use: device.type == "cpu", backend in ("mps", ...)
DEVICE_TEST_STRING = re.compile(r"(mps|cpu|xpu)\b", re.IGNORECASE)
# Calls that end the program or the test: `if not torch.cuda.is_available(): sys.exit(...)`
EXIT_CALLS = frozenset({"sys.exit", "exit", "quit", "os._exit", "pytest.skip", "pytest.exit", "unittest.SkipTest"})
# Exceptions a `try:` around device code may catch to fall back (torch raises these without CUDA)
GUARD_EXCEPTIONS = frozenset({"Exception", "BaseException", "RuntimeError", "AssertionError", "AttributeError"})
# torch.device's own rejection of a device string (DEV003: a `try` catching it tests a string on purpose)
DEVICE_STRING_EXCEPTIONS = frozenset({"Exception", "BaseException", "RuntimeError"})


# CUDA-only by design: a flow that starts a NCCL process group or picks its GPU from a launcher.
PROCESS_GROUP_INIT = "torch.distributed.init_process_group"
NCCL = "nccl"
# a process group's backend read from a command-line option that no file of the project defines comes from a
# launcher library's parser: SwissArmyTransformer's (CogView3's and CogVideo's sat/) and Megatron-LM's
# ``--distributed-backend`` default to "nccl"
LAUNCHER_BACKEND = "distributed_backend"
LAUNCHER_BACKEND_READ = re.compile(rb"\.distributed_backend\b")
LAUNCHER_BACKEND_OPTION = re.compile(rb"""["']--distributed[-_]backend["']""")
# The byte signals of a file that names a NCCL backend, and of one that starts a process group itself (a project
# that never does leaves it to a launcher library, which uses NCCL on GPUs)
NCCL_TEXT = re.compile(rb"""["']nccl["']""", re.IGNORECASE)
PROCESS_GROUP_TEXT = re.compile(rb"init_process_group")
# (and OpenMMLab's launcher set-up, mmcv's and mmengine's init_dist: it calls torch.cuda.set_device for the
# launched rank whatever the backend)
CUDA_ONLY_CALLS = frozenset({"torch.cuda.set_device", "mmcv.runner.init_dist", "mmcv.runner.dist_utils.init_dist",
                             "mmengine.dist.init_dist", "mmengine.dist.utils.init_dist"})
# Calls that raise unless a process group was initialised (checked on torch 2.13.0+cpu: "ValueError: Default process
# group has not been initialized, please make sure to call init_process_group."; a DistributedSampler told its
# num_replicas and rank asks none): in a NCCL project, what follows one runs in a NCCL flow (vicreg's main:
# `sampler = DistributedSampler(dataset)` after an init_distributed_mode that returns early when not launched).
GROUP_REQUIRING_CALLS = frozenset({
    "torch.distributed.get_rank", "torch.distributed.get_world_size", "torch.distributed.barrier",
    "torch.utils.data.distributed.DistributedSampler", "torch.utils.data.DistributedSampler",
    # (DistributedDataParallel asks the default group at construction: the same ValueError)
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"})
# apex's mixed precision: amp.initialize raises for a parameter not on CUDA (apex/amp/_initialize.py,
# check_params_fp32: "you need to provide a model with parameters located on a CUDA device")
APEX_AMP_INITIALIZE = "apex.amp.initialize"
# diffusers' switch to xformers attention (a pipeline's or a model's): it raises without CUDA (ValueError
# "torch.cuda.is_available() should be True but is False. xformers' memory efficient attention is only available
# for GPU", diffusers 0.42.1 models/attention_processor.py and models/attention.py; ModuleNotFoundError without
# xformers), so what follows an unconditional call runs only with CUDA
XFORMERS_ENABLERS = frozenset({"enable_xformers_memory_efficient_attention"})
# ... and the setter it calls, when told True (`set_use_memory_efficient_attention_xformers(True)`; False turns
# xformers off and raises nothing)
XFORMERS_SETTER = "set_use_memory_efficient_attention_xformers"
# Libraries that need an NVIDIA GPU: a module importing one is CUDA-only by design.
# Libraries built on torch whose models and tensors are torch's: a file that imports one and no torch still
# moves torch modules (``AutoModel.from_pretrained(...).half().cuda()``, ``lpips.LPIPS(net='alex').cuda()``).
TORCH_MODEL_LIBRARIES = frozenset({"transformers", "diffusers", "peft", "sentence_transformers", "timm", "torchvision",
                                   "torchaudio", "lpips", "kornia", "open_clip", "pytorch_lightning", "lightning",
                                   "accelerate"})


# Attributes and methods of a tensor that a module, a config or a device holder has not: a name read so is a
# tensor (``out.shape``, ``x.view(...)``), and its ``.device`` is the tensor's.
TENSOR_ONLY_ATTRIBUTES = frozenset({
    "shape", "dtype", "ndim", "size", "dim", "numel", "view", "reshape", "transpose", "permute", "unsqueeze",
    "squeeze", "contiguous", "flatten", "expand", "repeat", "new_zeros", "new_ones", "new_empty", "new_full",
    "masked_fill", "matmul", "type_as", "softmax",
})
# Ray's decorator of actors and tasks: with num_gpus above zero Ray schedules them on a node with a GPU only (and
# sets CUDA_VISIBLE_DEVICES for them); on a machine without one they wait, unscheduled, and never run.
RAY_REMOTE = "ray.remote"
# Keywords of a test marker that asks for CUDA GPUs: Lightning's RunIf(min_cuda_gpus=1) (min_gpus before
# Lightning 1.8), which skips the test unless torch.cuda.device_count() reaches the number.
GPU_COUNT_KEYWORDS = frozenset({"min_cuda_gpus", "min_gpus"})


def uses_torch(modules: Iterable[str]) -> bool:
    """Do these imported modules include torch or a library whose models are torch modules?"""
    return any(m == "torch" or m.startswith("torch.") or m.split(".")[0] in TORCH_MODEL_LIBRARIES for m in modules)


# (mamba_ssm and causal_conv1d build their kernels with nvcc at install and import them at their top: no
# CPU build exists; nor for diso, whose iso-surface extractors DiffMC / DiffDMC are CUDA kernels only. Not
# nvdiffrast: it imports without a GPU and compiles its plugin at the first context, so a module may import it
# for one branch, stable-dreamfusion's DMTet, and run its others on the CPU)
# tiny-cuda-nn's torch bindings raise at import without CUDA (bindings/torch/tinycudann/modules.py: `if not
# torch.cuda.is_available(): raise EnvironmentError("Unknown compute capability. ...")` at its top). The Gaussian
# splatting kernels of graphdeco-inria (diff-gaussian-rasterization, simple-knn: the git submodules of 3D Gaussian
# Splatting and its many forks) are CUDAExtensions built from .cu sources only, with no CPU implementation.
CUDA_ONLY_LIBRARIES = frozenset({"tensorrt", "pycuda", "cupy", "numba.cuda", "cuda", "flash_attn", "mamba_ssm",
                                 "causal_conv1d", "selective_scan_cuda", "diso", "tinycudann",
                                 "diff_gaussian_rasterization", "simple_knn", "torch2trt"})
# GPU kernel languages and GPU-only engines: a module that imports Triton, TileLang or CUTLASS's CuTe DSL at its
# top writes kernels that launch on a GPU only, and NVIDIA's Transformer Engine and vLLM's engine run on one. Only
# the importing module itself is CUDA-only: a module of the project that imports it for one layer (efficientvit's
# TritonRMSNorm2d beside its other models) is not.
GPU_KERNEL_LIBRARIES = frozenset({"triton", "tilelang", "cutlass", "transformer_engine", "vllm"})

# ctypes' loaders of a native library: a module that loads one at its top and hands it a raw CUDA stream
# (``stream.cuda_stream``) launches CUDA kernels (BitNet's gpu/ benchmark and model: libbitnet.so)
NATIVE_LIBRARY_LOADERS = frozenset({"ctypes.CDLL", "ctypes.cdll.LoadLibrary", "ctypes.PyDLL"})


def cuda_only_library(module: str) -> bool:
    """Is ``module`` (an imported module's dotted name) a library that needs an NVIDIA GPU (TensorRT, CuPy,
    ``numba.cuda``, ...; ``cuda`` only as itself: ``cuda.bindings`` and the like are not all CUDA-only)?"""
    return module in CUDA_ONLY_LIBRARIES or module.split(".")[0] in CUDA_ONLY_LIBRARIES - {"cuda"}


def gpu_kernel_library(module: str) -> bool:
    """Is ``module`` a GPU kernel language or GPU-only engine (:data:`GPU_KERNEL_LIBRARIES`)?"""
    return module.split(".")[0] in GPU_KERNEL_LIBRARIES

# What an out-of-memory fallback does or says (an except handler that ran because CUDA ran out of memory).
OOM_HINTS = ("out of memory", "oom", "empty_cache", "OutOfMemoryError")
# In a NCCL project, "is torch.distributed running?" is a CUDA check (all_gather, reduce_dict helpers).
DISTRIBUTED_PREDICATES = frozenset({"is_initialized", "is_dist_avail_and_initialized", "is_distributed",
                                    "is_dist_initialized", "is_dist_available_and_initialized"})
WORLD_SIZE_CALLS = frozenset({"get_world_size"})
# Collectives: with a NCCL process group they take CUDA tensors only (a function calling one is CUDA-only).
DISTRIBUTED_COLLECTIVES = frozenset({
    "torch.distributed.broadcast", "torch.distributed.all_reduce", "torch.distributed.all_gather",
    "torch.distributed.reduce", "torch.distributed.gather", "torch.distributed.scatter",
    "torch.distributed.all_to_all", "torch.distributed.reduce_scatter", "torch.distributed.all_gather_into_tensor",
    "torch.distributed.reduce_scatter_tensor",
    # the object collectives pickle into tensors on the group's device: CUDA ones for a NCCL group
    "torch.distributed.broadcast_object_list", "torch.distributed.all_gather_object",
    "torch.distributed.gather_object", "torch.distributed.scatter_object_list",
})


def is_guard_text(text: str) -> bool:
    """Does a name, a callee or a condition string look at accelerator availability or the device in use?"""
    return bool(GUARD_WORDS.search(text))


# --- CUDA initialisation ----------------------------------------------------------------------------------
# Calls that initialise CUDA in the process (CUDA_VISIBLE_DEVICES is read at that point).
CUDA_INIT_CALLS = frozenset({
    "torch.cuda.device_count", "torch.cuda.is_available", "torch.cuda.init", "torch.cuda.set_device",
    "torch.cuda.current_device", "torch.cuda.get_device_name", "torch.cuda.get_device_properties",
    "torch.cuda.get_device_capability", "torch.cuda.mem_get_info", "torch.cuda.synchronize",
    "torch.cuda.empty_cache", "torch.cuda.memory_allocated", "torch.cuda.max_memory_allocated",
    "torch.cuda.memory_reserved", "torch.cuda.current_stream", "torch.cuda.Stream", "torch.cuda.Event",
    "torch.cuda.device", "torch.cuda.FloatTensor", "torch.cuda.LongTensor",
})
# torch.cuda.FloatTensor(...) and friends: legacy constructors that make CUDA tensors
LEGACY_CUDA_TENSORS = frozenset({
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor", "ShortTensor",
    "IntTensor", "LongTensor", "BoolTensor",
})
DEFAULT_TENSOR_TYPE_SETTER = "torch.set_default_tensor_type"


def is_legacy_cuda_tensor(qualname: str | None) -> bool:
    """``torch.cuda.FloatTensor`` and the other legacy CUDA tensor types."""
    if qualname is None or not qualname.startswith("torch.cuda."):
        return False
    return qualname[len("torch.cuda."):] in LEGACY_CUDA_TENSORS


CUDA_ENV_VARS = frozenset({"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"})
ENV_WRITE_CALLS = frozenset({"os.environ.update", "os.environ.setdefault", "os.putenv"})
CUDA_METHOD = "cuda"  # Tensor.cuda / Module.cuda
CPU_METHOD = "cpu"  # Tensor.cpu / Module.cpu
DEVICE_ATTRIBUTE = "device"  # tensor.device, model.device (HF), accelerator.device: a torch.device
# torch >= 2.6: the torch.device of the accelerator torch was built for (index None), or None without one
# (torch 2.13 CPU build: None); its ``.type`` ("cuda", "mps", "xpu") is a device string
CURRENT_ACCELERATOR = "torch.accelerator.current_accelerator"
CUDA_METHOD_KEYWORDS = frozenset({"device", "non_blocking", "memory_format"})  # what torch's .cuda() takes


def is_cuda_method_call(method: str | None, callee_imported: bool, keywords: list[str | None]) -> bool:
    """Is ``x.cuda(...)`` torch's ``Tensor.cuda`` / ``Module.cuda``: a method (``torch.cuda`` is a module,
    not a call of one) taking only what torch's takes?"""
    return method == CUDA_METHOD and not callee_imported and all(
        k is None or k in CUDA_METHOD_KEYWORDS for k in keywords
    )

# --- values made on a device --------------------------------------------------------------------------------
# torch.<factory>(..., device=, requires_grad=)
FACTORIES = frozenset({
    "tensor", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
    "logspace", "eye", "as_tensor", "from_numpy", "normal", "zeros_like", "ones_like", "empty_like",
    "full_like", "rand_like", "randn_like", "randint_like", "Tensor", "FloatTensor", "LongTensor",
})
# dtypes whose tensors cannot require grad (a cast to one of them cuts the autograd graph)
INTEGER_DTYPES = frozenset({"uint8", "int8", "int16", "int32", "int64", "short", "int", "long", "bool",
                            "uint16", "uint32", "uint64"})
NO_GRAD_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                              "torch.autograd.grad_mode.no_grad", "torch.enable_grad"})
# Calls that build a torch module: torchvision.models.*, timm.create_model, <Model>.from_pretrained
MODULE_ROOTS = ("torchvision.models", "timm.create_model")
MODULE_FACTORIES_SUFFIX = (".from_pretrained",)
PRETRAINED_PACKAGES = ("transformers", "diffusers", "timm", "torchvision")
# Packages whose calls may build a module or a tensor with grad/device evidence
EVIDENCE_ROOTS = ("torch", "torchvision", "timm", "transformers", "diffusers")

# --- loading checkpoints ------------------------------------------------------------------------------------
# Loaders that put each saved tensor back on the device it was saved from unless ``map_location`` says
# otherwise (a checkpoint saved on a GPU then fails without CUDA): qualified name -> the index of
# ``map_location`` among the positional arguments (checked on torch 2.13: torch.load(f, map_location=None,
# pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args), torch.jit.load(f,
# map_location=None, _extra_files=None, _restore_shapes=False)). map_location=None is the same as none.
CHECKPOINT_LOADERS = {"torch.load": 1, "torch.serialization.load": 1, "torch.jit.load": 1}
# What makes a loaded value model state (tensors a GPU run leaves on the GPU): it is handed to a
# ``load_state_dict`` (of a module, an optimizer, a scheduler), or used as a module (called, or one of these
# methods of torch.nn.Module that a tensor does not have).
# torch.nn modules that hold no parameter, buffer or submodule when built with constant arguments: their
# .cuda() / .to("cuda") moves nothing and does not touch CUDA (each built and moved on torch 2.13.0+cpu:
# tests/test_torch_facts.py). A tensor argument (``weight=w``, ``pos_weight=p``) is a buffer, and is not constant.
PARAMETERLESS_MODULES = frozenset(f"torch.nn.{name}" for name in (
    # losses (torch.nn.modules.loss)
    "L1Loss", "NLLLoss", "PoissonNLLLoss", "GaussianNLLLoss", "KLDivLoss", "MSELoss", "BCELoss", "BCEWithLogitsLoss",
    "HingeEmbeddingLoss", "MultiLabelMarginLoss", "SmoothL1Loss", "HuberLoss", "SoftMarginLoss", "CrossEntropyLoss",
    "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss", "MarginRankingLoss", "MultiMarginLoss", "TripletMarginLoss",
    "CTCLoss",
    # activations without parameters (not PReLU, not MultiheadAttention)
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Softmax",
    "LogSoftmax", "Softmin", "Softplus", "Softsign", "Tanhshrink", "Hardtanh", "Hardsigmoid", "Hardswish",
    "Hardshrink", "Softshrink", "Threshold", "LogSigmoid", "GLU", "Softmax2d",
    # shape, dropout, pooling
    "Identity", "Flatten", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "CosineSimilarity",
    "PairwiseDistance",
))
# timm's losses that hold no parameter or buffer whatever their arguments (timm/loss/cross_entropy.py and jsd.py:
# numbers, and a LabelSmoothingCrossEntropy or nn.CrossEntropyLoss() child; not BinaryCrossEntropy, which
# registers its weight and pos_weight as buffers): the losses of every training script copied from timm's.
LIBRARY_PARAMETERLESS_MODULES = frozenset({"timm.loss.JsdCrossEntropy", "timm.loss.jsd.JsdCrossEntropy", *(
    f"timm.loss.{path}" for name in ("LabelSmoothingCrossEntropy", "SoftTargetCrossEntropy")
    for path in (name, f"cross_entropy.{name}"))})
# Of those, the ones whose constructor keeps a tensor argument as a buffer (torch's _WeightedLoss, and
# BCEWithLogitsLoss's pos_weight): a non-constant argument may be one. The others keep none of their arguments
# as a parameter or buffer, whatever the value (``nn.CrossEntropyLoss(reduction=self.reduction)`` and
# ``nn.Dropout(cfg.p)`` hold nothing to move); test_torch_facts checks both lists on the installed torch.
BUFFER_ARGUMENT_MODULES = frozenset(f"torch.nn.{name}" for name in (
    "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss"))
BUFFER_KEYWORDS = frozenset({"weight", "pos_weight"})
STATE_LOADER = "load_state_dict"
# Objects whose state dict holds Python numbers only (a learning-rate scheduler, GradScaler: test_torch_facts)
SCALAR_STATE_HOLDER = re.compile(r"sched|scaler", re.IGNORECASE)
MODULE_ONLY_METHODS = frozenset({"eval", "train", "parameters", "named_parameters", "buffers", "modules",
                                 "named_modules", "children", "forward", "state_dict", "zero_grad"})
SAVE_FUNC = "torch.save"
# A program whose files never mention an accelerator keeps its tensors on the CPU (what it saves, it saves from
# the CPU).
ACCELERATOR_MENTION = re.compile(rb"cuda|gpu|\bmps\b|\bxpu\b|accelerator", re.IGNORECASE)


# --- results a statement throws away ------------------------------------------------------------------------
# Tensor methods that return the moved or converted tensor and leave the receiver as it was (checked on torch
# 2.13: ``x.double()`` / ``x.to("meta")`` as a statement keep ``x``'s dtype and device). nn.Module's
# .to()/.cuda()/.cpu()/.half()/.float()/.double()/.bfloat16() move the module's parameters in place instead.
TENSOR_COPY_METHODS = frozenset({
    MOVE_METHOD, CUDA_METHOD, CPU_METHOD, "xpu", "half", "float", "double", "bfloat16", "long", "int", "short",
    "bool", "byte", "char",
})
# torch functions that return one tensor, whatever they are given (a non-tensor argument raises): their result
# is a tensor even when nothing is known of the arguments (checked on torch 2.13: each returns a torch.Tensor,
# and raises or still returns one for a float first argument; torch.where(c), torch.max(x, dim), torch.sort,
# torch.split, ... return tuples and are not here).
_TENSOR_TORCH = (
    "abs", "exp", "log", "sqrt", "sigmoid", "tanh", "relu", "sin", "cos", "clamp", "round", "floor", "ceil", "sign",
    "neg", "pow", "mul", "add", "sub", "div", "matmul", "mm", "bmm", "einsum", "cat", "stack", "softmax",
    "log_softmax", "flatten", "reshape", "transpose", "permute", "squeeze", "unsqueeze", "cumsum", "sum", "mean",
    "argmax", "argmin", "clone", "maximum", "minimum", "masked_fill", "gather", "index_select", "tril", "triu",
    "flip", "roll", "erf", "logsumexp", "norm", "outer", "nan_to_num",
)
_TENSOR_FUNCTIONAL = (
    "relu", "gelu", "silu", "softmax", "log_softmax", "sigmoid", "tanh", "dropout", "normalize", "pad", "linear",
    "mse_loss", "l1_loss", "cross_entropy", "binary_cross_entropy_with_logits", "cosine_similarity", "one_hot",
    "interpolate",
)
TENSOR_FUNCTIONS = frozenset({f"torch.{f}" for f in _TENSOR_TORCH}
                             | {f"torch.nn.functional.{f}" for f in _TENSOR_FUNCTIONAL})
# torch APIs that build objects, not tensors, from tensors (a traced ScriptModule, a DataLoader, a
# distribution): a name bound from one is no tensor whose move is lost (ScriptModule.cuda() works in place).
OBJECT_APIS = (
    "torch.jit.", "torch.fx.", "torch.export.", "torch.compile", "torch.ao.", "torch.quantization.", "torch.onnx.",
    "torch.hub.", "torch.package.", "torch.utils.", "torch.distributions.", "torch.optim.", "torch.distributed.",
    "torch.nn.utils.",
)


# --- calls that need an accelerator to run (DEV006) ------------------------------------------------------------
# What each raises on torch 2.13.0+cpu (each run on the installed CPU build; a CUDA build on a machine with no GPU
# raises RuntimeError "Found no NVIDIA driver" / "No CUDA GPUs are available" instead). torch.cuda's
# is_available, device_count, empty_cache, memory_allocated, max_memory_allocated, memory_reserved, memory_stats,
# manual_seed(_all), seed(_all), get_arch_list, amp.GradScaler/autocast (they warn) run clean without CUDA.
_NOT_COMPILED = "AssertionError: Torch not compiled with CUDA enabled"
_NO_C = "AttributeError: module 'torch._C' has no attribute "
_NO_ACCELERATOR = "RuntimeError: Cannot access accelerator device when none is available."
CUDA_ONLY_API: dict[str, str] = {
    **{f"torch.cuda.{name}": _NOT_COMPILED for name in (
        "synchronize", "get_device_name", "get_device_properties", "get_device_capability", "current_device",
        "mem_get_info", "current_stream", "default_stream", "ipc_collect", "set_per_process_memory_fraction",
        "get_rng_state", "initial_seed", "init", "cudart", "current_blas_handle", "can_device_access_peer",
        "get_sync_debug_mode", "set_sync_debug_mode")},
    "torch.cuda.set_device": _NO_C + "'_cuda_setDevice'",
    **{f"torch.cuda.{name}": _NO_C + "'_cuda_resetPeakMemoryStats'" for name in (
        "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached")},
    "torch.cuda.reset_accumulated_memory_stats": _NO_C + "'_cuda_resetAccumulatedMemoryStats'",
    "torch.cuda.memory_snapshot": _NO_C + "'_cuda_memorySnapshot'",
    "torch.cuda.memory_summary": "KeyError: 'allocated_bytes.all.current'",
    "torch.cuda.Event": "RuntimeError: Tried to instantiate dummy base class Event",
    "torch.cuda.CUDAGraph": "RuntimeError: Tried to instantiate dummy base class CUDAGraph",
    "torch.cuda.Stream": "RuntimeError: torch.cuda.Stream requires CUDA support",
    **{f"torch.cuda.nvtx.{name}": "RuntimeError: NVTX functions not installed. Are you sure you have a CUDA build?"
       for name in ("range_push", "range_pop", "mark")},
    **{f"torch.accelerator.{name}": _NO_ACCELERATOR for name in (
        "synchronize", "current_device_index", "current_device_idx", "set_device_index", "set_device_idx",
        "current_stream", "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
        "max_memory_reserved", "memory_stats", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
        "get_memory_info", "get_device_capability")},
}
# Context managers that raise when the `with` enters them (constructing one is harmless); an index of -1 (or
# None for device_index) enters nothing.
CUDA_ONLY_CONTEXTS: dict[str, str] = {
    "torch.cuda.device": "RuntimeError: PyTorch was compiled without CUDA support",
    "torch.accelerator.device_index": _NO_ACCELERATOR,
    "torch.cuda.nvtx.range": "RuntimeError: NVTX functions not installed. Are you sure you have a CUDA build?",
}
# torch.cuda.memory.X is torch.cuda.X (the memory functions' own module)
CUDA_API_ALIASES = {"torch.cuda.memory.": "torch.cuda."}


def cuda_only_call(qualname: str | None) -> str | None:
    """The canonical name of a call that raises without an accelerator (``torch.cuda.synchronize``), or None."""
    if qualname is None:
        return None
    for prefix, canonical in CUDA_API_ALIASES.items():
        if qualname.startswith(prefix):
            qualname = canonical + qualname[len(prefix):]
    return qualname if qualname in CUDA_ONLY_API or qualname in CUDA_ONLY_CONTEXTS else None


def availability_check(qualname: str) -> str:
    """The availability call that guards ``qualname``: ``torch.accelerator.is_available`` for the
    device-generic API, ``torch.cuda.is_available`` for the rest."""
    return "torch.accelerator.is_available" if qualname.startswith("torch.accelerator.") else "torch.cuda.is_available"


# --- tensors that must share a device (DEV009) ----------------------------------------------------------------
# Factories that put their tensor on the default device (the CPU) unless ``device=`` says otherwise: FACTORIES
# less the ``*_like`` ones (they take their input's device), ``as_tensor`` (of a tensor it keeps the tensor's
# device), ``normal`` (with tensor arguments it takes theirs) and the legacy type constructors.
CPU_DEFAULT_FACTORIES = frozenset(f for f in FACTORIES if not f.endswith("_like") and f not in (
    "as_tensor", "normal", "Tensor", "FloatTensor", "LongTensor"))
# torch's error for an operation that mixes a CUDA tensor with a CPU one (TensorIterator's device check, the
# text in libtorch_cpu of torch 2.13), and the meta kernels' for the same mix with the meta device, which stands
# in for a GPU on a machine without one (checked on torch 2.13.0+cpu: ``torch.ones(2, device="meta") +
# torch.ones(2)`` raises ``RuntimeError: Tensor on device cpu is not on the expected device meta!``).
SAME_DEVICE_ERROR = "Expected all tensors to be on the same device"
META_DEVICE_ERROR = "is not on the expected device"
# torch allows a 0-dim CPU tensor as a scalar operand of a tensor on another device (TensorIterator's CPU
# scalar rule: ``torch.ones(2, device="meta") + torch.tensor(2.0)`` runs on torch 2.13; the reverse, a 0-dim
# meta tensor with a CPU one, raises); and advanced indexing moves CPU index tensors to the indexed tensor's
# device (``x[torch.arange(2)]``, ``x[mask]`` with a CPU long or bool tensor run on meta and on CUDA). Neither
# is a mismatch.
# Calls of torch that combine their tensor arguments (a CPU one with a GPU one raises).
COMBINING_FUNCS = frozenset({
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "add", "sub", "subtract", "mul",
    "multiply", "div", "divide", "matmul", "mm", "bmm", "where", "maximum", "minimum", "eq", "ne", "lt", "le",
    "gt", "ge", "masked_fill",
})
# Tensor methods that combine the receiver with a tensor argument.
COMBINING_METHODS = frozenset({
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "matmul", "mm", "bmm", "masked_fill",
    "masked_fill_", "eq", "ne", "lt", "le", "gt", "ge",
})
# Ways a tensor is put on another tensor's or the module's device (a value that went through one is no mix).
DEVICE_FOLLOWING_METHODS = frozenset({MOVE_METHOD, CUDA_METHOD, "type_as", "type", "xpu", "mps"})
# nn.Module methods whose override can move a plain tensor attribute along with the module.
MODULE_MOVE_OVERRIDES = frozenset({"_apply", MOVE_METHOD, CUDA_METHOD, "cpu", "half", "float", "double"})
# Calls that change where factories put their tensors (a module under one of them, or under ``with
# torch.device(...):``, is not checked).
DEFAULT_DEVICE_SETTERS = frozenset({"torch.set_default_device", DEFAULT_TENSOR_TYPE_SETTER})
# torch.nn layers that hold parameters by default (a CPU tensor passed in fails once they are on a GPU), and
# those among them whose output is one tensor (on their device).
PARAMETER_LAYERS = frozenset({
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "Embedding", "LayerNorm", "GroupNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "PReLU", "GRUCell", "RNNCell",
})
PARAMETER_MODULES = PARAMETER_LAYERS | frozenset({
    "LSTM", "GRU", "RNN", "LSTMCell", "MultiheadAttention", "EmbeddingBag", "TransformerEncoderLayer",
    "TransformerDecoderLayer",
})


# --- float64 on Apple's MPS device (DEV007) ---------------------------------------------------------------------
# Apple's MPS framework has no float64: allocating a float64 tensor on the mps device (a factory, a move, a cast)
# raises, from empty_mps (aten/src/ATen/mps/EmptyTensor.cpp, MPS_ERROR_DOUBLE_NOT_SUPPORTED; torch's own test
# lists quote it, torch/testing/_internal/common_methods_invocations.py):
MPS_DEVICE = "mps"
MPS_FLOAT64_ERROR = ("TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support "
                     "float64. Please use float32 instead.")
MPS_TRIGGER = re.compile(rb"mps")  # every DEV007 finding needs an "mps" string literal
# The device types a variable may hold where it is chosen by availability ("cuda" if ... else "mps" if ... else
# "cpu"): on a Mac, CUDA is never available, so such a variable is mps there.
MPS_CHOICE_TYPES = frozenset({"mps", "cpu", "cuda"})
FLOAT64_DTYPES = frozenset({"torch.float64", "torch.double"})
FLOAT64_TENSOR_TYPES = frozenset({"torch.DoubleTensor"})  # legacy constructor of float64 CPU tensors
FLOAT64_METHOD = "double"  # Tensor.double() / Module.double()
FLOAT32_METHOD = "float"
DTYPE_KEYWORD = "dtype"
DEFAULT_DTYPE_SETTER = "torch.set_default_dtype"
# torch.<factory>(...) with no dtype= gives the default float dtype (float64 after set_default_dtype(float64)) ...
DEFAULT_FLOAT_FACTORIES = frozenset({"zeros", "ones", "empty", "rand", "randn", "linspace", "logspace", "eye"})
# ... and these only when their data / fill value / bounds are Python floats (ints give int64)
INFERRING_FACTORIES = frozenset({"tensor", "as_tensor", "full", "arange"})
# torch factories that take a NumPy array's dtype when no dtype= is given
FROM_DATA_FACTORIES = frozenset({"tensor", "as_tensor", "from_numpy"})
# Tensor methods that keep the dtype (and the device)
DTYPE_KEEPING_METHODS = frozenset({
    "unsqueeze", "squeeze", "view", "reshape", "permute", "transpose", "contiguous", "clone", "detach", "flatten",
    "t", "pin_memory", "requires_grad_", "expand", "repeat",
})
# NumPy: what makes an array float64
NUMPY_FLOAT64_DTYPES = frozenset({"numpy.float64", "numpy.double", "numpy.float_"})
NUMPY_FLOAT64_STRINGS = frozenset({"float64", "f8", "<f8", "double", "float", "d"})
# NumPy functions whose result is float64 when no dtype= is given (np.zeros(3), np.random.rand(2, 2), ...)
NUMPY_FLOAT64_FUNCS = frozenset({
    "numpy.zeros", "numpy.ones", "numpy.empty", "numpy.eye", "numpy.identity", "numpy.linspace", "numpy.logspace",
    "numpy.loadtxt", "numpy.genfromtxt", "numpy.random.rand", "numpy.random.randn", "numpy.random.random",
    "numpy.random.random_sample", "numpy.random.uniform", "numpy.random.normal", "numpy.random.standard_normal",
})
# NumPy functions whose dtype= decides the result's dtype, and those that infer it from a literal
NUMPY_DTYPE_FUNCS = NUMPY_FLOAT64_FUNCS | frozenset({"numpy.array", "numpy.asarray", "numpy.full", "numpy.arange"})
NUMPY_ARRAY_FUNCS = frozenset({"numpy.array", "numpy.asarray"})
NUMPY_DTYPE_KEEPING_METHODS = frozenset({"reshape", "transpose", "copy", "squeeze", "flatten", "ravel"})
# NumPy functions whose result is float64 for a float64 argument, and NumPy's float constants
NUMPY_FLOAT_UFUNCS = frozenset({f"numpy.{name}" for name in (
    "sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "abs", "tanh", "square", "cumsum", "sort")})
NUMPY_FLOAT_CONSTANTS = frozenset({"numpy.pi", "numpy.e"})
NUMPY_CAST_METHOD = "astype"


def is_mps_device(value: str) -> bool:
    """A valid mps device string ("mps", "mps:0")."""
    try:
        return parse_device(value).type == MPS_DEVICE
    except InvalidDeviceString:
        return False
