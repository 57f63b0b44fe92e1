"""Which code runs only where CUDA (or another accelerator) is available: the guards.

A condition has a *polarity*: ``AVAILABLE`` when its being true implies an accelerator is available or in use
(``torch.cuda.is_available()``, ``x.is_cuda``, ``device.type == "cuda"``, a flag computed from those, an opt-in
``--cuda`` flag that is off by default), ``UNAVAILABLE`` when its being true implies there is none
(``not torch.cuda.is_available()``, ``device == "cpu"``), ``NONE`` when it says nothing (``USE_CUDA = True``
is a constant, not a check; an expression that merely contains ``"cuda"`` is not a test). Only the branch a
condition's polarity vouches for is guarded: the body of an ``AVAILABLE`` test, the ``else`` of an
``UNAVAILABLE`` one, the code after ``if <UNAVAILABLE>: exit`` or ``assert <AVAILABLE>``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from enum import Enum
from typing import TYPE_CHECKING

from devlint import devices
from devlint.analysis import CommandLineOption, command_line_option, command_line_options, is_script, pytest_module
from devlint.bindings import bindings
from devlint.context import Context, decorator_target, dotted_name, own_method, string_value, walk
from devlint.lazy import LazyModule
from devlint.project import (
    argument_for,
    call_sites,
    callee,
    inherited_method,
    leaves_default,
    parameter_position,
    passed_values,
    relies_on_default,
    resolve_definition,
    top_level_imports,
)

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")


class Polarity(Enum):
    AVAILABLE = 1
    UNAVAILABLE = -1
    NONE = 0  # says nothing about devices: a constant, a flag that is on by default
    UNKNOWN = 2  # cannot tell (an unknown function or variable)

    def flip(self) -> Polarity:
        return {Polarity.AVAILABLE: Polarity.UNAVAILABLE, Polarity.UNAVAILABLE: Polarity.AVAILABLE}.get(
            self, self)


_PREDICATE = re.compile(r"(^|_)(is|has|use|check|can|avail|available|enabled|supported|require|requires|need|on)"
                        r"(_|$)|available|enabled|supported", re.IGNORECASE)
# a TensorRT runtime's name ("tensorrt", "trt", a constant TENSORRT or DEPTH_TRT): an NVIDIA GPU only
_TENSORRT = re.compile(r"^(?:\w+_)?(?:tensorrt|trt)$", re.IGNORECASE)
_CUDA_TEXT = re.compile(r"cuda|gpu|nvidia", re.IGNORECASE)
_OTHER_DEVICE = re.compile(r"(cpu|mps|meta|xpu|xla|tpu|npu)\b", re.IGNORECASE)
# How many calls deep a function's summary ("returns only with CUDA") follows the project's functions: dinov2's
# `setup_and_build_model(args)` -> `setup(args)` -> `default_setup(args)` -> `distributed.enable()`, which starts
# NCCL, is four.
SUMMARY_DEPTH = 4
_SKIPS = {"skipif": Polarity.UNAVAILABLE, "skipIf": Polarity.UNAVAILABLE, "skip_if": Polarity.UNAVAILABLE,
          "skipUnless": Polarity.AVAILABLE, "skip_unless": Polarity.AVAILABLE}


def _both(a: Polarity, b: Polarity, conj: bool) -> Polarity:
    """``a and b`` (conj) / ``a or b``: what the whole being true implies."""
    if conj:
        if Polarity.AVAILABLE in (a, b):
            return Polarity.AVAILABLE
        if Polarity.UNAVAILABLE in (a, b):
            return Polarity.UNAVAILABLE
    return a if a is b else Polarity.UNKNOWN


class _Known(Exception):
    """Not an error: an answer already known, carried out of callee()'s search (Guards._cuda_only_call)."""

    def __init__(self, value: object) -> None:
        super().__init__()
        self.value = value


class Guards:
    """Answers "is this node only reached when an accelerator was checked for?"."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._block_guard: dict[cst.CSTNode, int | None] = {}
        self._block_exit: dict[int, int | None] = {}
        self._apex_amp: dict[int, bool] = {}
        self._flags = _Flags(ctx)
        self._assigned: dict[str, list[cst.BaseExpression]] = {}
        for assign in ctx.nodes(cst.Assign):
            for target in assign.targets:
                name = dotted_name(target.target)
                if name:
                    self._assigned.setdefault(name, []).append(assign.value)
        for ann in ctx.nodes(cst.AnnAssign):
            name = dotted_name(ann.target)
            if name and ann.value is not None:
                self._assigned.setdefault(name, []).append(ann.value)
        self._name_polarity: dict[str, Polarity] = {}
        self._requires: dict[tuple[int, int], bool] = {}
        self._unless: dict[tuple[int, int], frozenset[str] | None] = {}
        self._entered: dict[tuple[int, int], bool] = {}
        self._named_guarded: dict[int, bool] = {}
        self._chosen: dict[int, bool] = {}
        self._always: dict[tuple[int, int], bool] = {}  # (id of an expression, depth) -> _always_on
        self._indices: dict[int, dict[int, int]] = {}
        self._checked: frozenset[str] | None = None
        self._stops_at_import: bool | None = None
        self._cuda_instantiated: set[str] | None = None  # test classes instantiated for CUDA alone
        self._kernels: dict[int, bool] = {}  # id of a function -> whether it runs the project's CUDA kernels
        self._handles: frozenset[str] | None = None  # the module's names for compiled extensions
        self._identifiers: frozenset[str] | None = None  # the module's strings that are identifiers
        self._dead: dict[int, bool] = {}  # id of a function -> whether nothing can call it
        self._cuda_objects: dict[int, bool] = {}  # id of an __init__ -> whether it calls a CUDA-only API
        self._cuda_only_tests: dict[int, bool] = {}  # id of a class -> whether its every test needs CUDA
        self._skipping: dict[int, bool] = {}  # id of a class -> whether its setUp skips without CUDA
        self._off_flags: dict[str, bool] = {}  # a script's name -> whether it is bound only to False at its top
        self._unimported: bool | None = None  # whether no other file can import this one (_imported_nowhere)
        self._cuda_only_flags: frozenset[str] | None = None
        self._cpu_flags: frozenset[str] | None = None
        self._string_nodes: list[tuple[str, cst.SimpleString]] | None = None
        self._in_config: dict[int, bool] = {}
        # a function of the project (by id, with the node) -> what its return implies
        self._returns: dict[int, tuple[cst.FunctionDef, Polarity]] = {}
        # a test module marked GPU-only, or a module that imports a CUDA-only library (TensorRT, PyCUDA, CuPy)
        # or the project's own CUDA kernels
        self.module_guarded = any(
            dotted_name(t.target) == "pytestmark" and self._marks_cuda_only(a.value)
            for a in ctx.nodes(cst.Assign) for t in a.targets
        ) or self._requires_cuda_module() or self._in_gpu_folder() or self._collected_only_with_cuda()

    def _collected_only_with_cuda(self) -> bool:
        """Is the module a test module that a ``conftest.py`` above it de-collects where CUDA is missing
        (:meth:`Project.collection_skipped_without_cuda`)?"""
        project = self.ctx.project
        return project is not None and pytest_module(self.ctx.path) \
            and project.collection_skipped_without_cuda(self.ctx.path)

    def _in_gpu_folder(self) -> bool:
        """Is the module in a folder of the project named for the GPU (BitNet's ``gpu/`` beside its CPU
        inference, WeNet's ``runtime/gpu/cuda_decoders/`` beside ``runtime/cpu``, apex's
        ``contrib/examples/gpu_direct_storage/``) or for TensorRT (CosyVoice's ``runtime/triton_trtllm/``)? The
        project declares that code GPU-only by its folder's name, as a class or function does by its own
        (``CUDAAccelerator``, ``train_gpu``). Folders above the linted project's root do not count."""
        root = self.ctx.project.root if self.ctx.project is not None else None
        if root is None:
            return False
        try:
            folder = os.path.relpath(os.path.dirname(os.path.abspath(self.ctx.path)), root)
        except ValueError:  # another drive (Windows): not under the root
            return False
        return folder != "." and not folder.startswith("..") and any(
            _GPU_FOLDER.search(part) for part in folder.split(os.sep))

    def _requires_cuda_module(self) -> bool:
        """Does the module import, at its top and unconditionally (not in an ``if`` or a ``try`` that falls
        back: an optional import is no requirement; but a module that defines ``@triton.jit`` kernels at its top
        needs Triton, however it imports it), a CUDA-only library, a CUDA extension the project builds
        (CUDAExtension in its setup.py), or a module of the project that does so?"""
        ctx = self.ctx
        required = own_imports(ctx)
        if any(devices.cuda_only_library(m) or devices.gpu_kernel_library(m) for m in required):
            return True
        if any(isinstance(stmt, cst.FunctionDef) and any(
                devices.gpu_kernel_library(ctx.qualname(decorator_target(d)) or "-") for d in stmt.decorators)
               for stmt in ctx.module.body):
            return True  # `@triton.jit` kernels at the top: the module needs Triton at import, however imported
        if _launches_native_cuda_kernels(ctx):
            return True
        return ctx.project is not None and ctx.project.imports_cuda_only(required, ctx.path)

    # --- polarity ------------------------------------------------------------------------------
    def falsity(self, expr: cst.BaseExpression) -> Polarity:
        """What ``expr`` being false implies: the code after ``if not torch.cuda.is_available() or not flash:
        return`` runs only with CUDA, though the condition's truth says nothing definite."""
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self.polarity(expr.expression)
        if isinstance(expr, cst.BooleanOperation):
            # `a or b` false: both are (a conjunction); `a and b` false: one is (a disjunction)
            return _both(self.falsity(expr.left), self.falsity(expr.right), isinstance(expr.operator, cst.Or))
        counted = self._count_falsity(expr) if isinstance(expr, cst.Comparison) else None
        return counted if counted is not None else self.polarity(expr).flip()

    def _implies_unavailable(self, test: cst.BaseExpression) -> bool:
        """Is the code that runs when ``test`` is false (an ``else``, what follows ``if test: exit``) the
        accelerator path: ``test`` true means none (``not torch.cuda.is_available()``, also
        ``args.cuda and not torch.cuda.is_available()``: the flag then goes with availability), or ``test``
        false means one (``not torch.cuda.is_available() or not flash``)?"""
        return self.polarity(test) is Polarity.UNAVAILABLE or self.falsity(test) is Polarity.AVAILABLE

    def polarity(self, expr: cst.BaseExpression) -> Polarity:
        """What ``expr`` being true implies about accelerator availability."""
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self.falsity(expr.expression)
        if isinstance(expr, cst.BooleanOperation):
            conj = isinstance(expr.operator, cst.And)
            return _both(self.polarity(expr.left), self.polarity(expr.right), conj)
        if isinstance(expr, cst.Call):
            return self._call_polarity(expr)
        if isinstance(expr, cst.Comparison):
            return self._comparison_polarity(expr)
        if _constant(expr) or (isinstance(expr, cst.Name) and expr.value == "None"):
            return Polarity.NONE
        if isinstance(expr, (cst.Name, cst.Attribute)):
            return self._flag_polarity(expr)
        if isinstance(expr, cst.Subscript):  # cfg["cuda"], flags["use_gpu"]: a flag of unknown origin
            key = string_value(expr.slice[0].slice.value) if isinstance(expr.slice[0].slice, cst.Index) else None
            if key is not None and _distributed_flag("opt." + key) and self._nccl():
                return Polarity.AVAILABLE  # KAIR's `if opt["dist"]:` in a NCCL project
            return Polarity.AVAILABLE if key is not None and devices.is_guard_text(key) else Polarity.UNKNOWN
        if isinstance(expr, cst.IfExp):
            return self._if_exp_polarity(expr)
        return Polarity.UNKNOWN

    def _if_exp_polarity(self, expr: cst.IfExp) -> Polarity:
        """A value chosen by an availability call, one arm a falsy constant: ``torch.cuda.device_count() if
        torch.cuda.is_available() else 0`` is true only where CUDA is (fairscale's ``num_devices``, then ``assert
        num_devices > 0``), ``0 if not torch.cuda.is_available() else n`` too. Not ``"cuda" if ... else "cpu"``
        (both arms are true), nor a test of a setting (``True if opt.test_mode == "GPU" else False`` with
        ``--test_mode`` defaulting to ``"GPU"``: a setting on by default, no check)."""
        test = expr.test
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test = test.expression
        if not isinstance(test, cst.Call):
            return Polarity.UNKNOWN
        decided = (Polarity.AVAILABLE, Polarity.UNAVAILABLE)
        if _falsy_constant(expr.orelse):
            found = self.polarity(expr.test)
        elif _falsy_constant(expr.body):
            found = self.falsity(expr.test)
        else:
            return Polarity.UNKNOWN
        return found if found in decided else Polarity.UNKNOWN

    def mode_polarity(self, expr: cst.BaseExpression) -> Polarity:
        """:meth:`polarity` for telling which branch runs on which device: a flag named for the GPU that is a
        setting, not a check (``Cuda = True``, ``--gpu_mode`` on by default) still says which branch moved its
        values to the GPU (``if self.gpu_mode: x = x.cuda()`` ... ``else:`` the CPU branch)."""
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self.mode_falsity(expr.expression)
        found = self.polarity(expr)
        return Polarity.AVAILABLE if found is Polarity.NONE and gpu_flag(expr) else found

    def mode_falsity(self, expr: cst.BaseExpression) -> Polarity:
        """:meth:`falsity`, read as :meth:`mode_polarity` reads a condition."""
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self.mode_polarity(expr.expression)
        found = self.falsity(expr)
        return Polarity.UNAVAILABLE if found is Polarity.NONE and gpu_flag(expr) else found

    def is_test(self, expr: cst.BaseExpression) -> bool:
        """Does this condition look at accelerator availability or the device in use (either way)?"""
        return self.polarity(expr) in (Polarity.AVAILABLE, Polarity.UNAVAILABLE)

    def _call_polarity(self, call: cst.Call) -> Polarity:
        ctx = self.ctx
        qn = ctx.qualname(call.func)
        if qn in devices.AVAILABILITY_CALLS:
            return Polarity.AVAILABLE
        if qn is not None and qn.startswith("torch.cuda."):
            return Polarity.AVAILABLE  # a condition that queries CUDA needs it (it raises without)
        func = call.func
        name = (qn or dotted_name(func) or "").split(".")[-1]
        if name == "isinstance" and len(call.args) == 2 and self._cuda_tensor_types(call.args[1].value):
            return Polarity.AVAILABLE  # isinstance(out.data, torch.cuda.FloatTensor): a CUDA tensor is there
        if name in devices.DISTRIBUTED_PREDICATES or (qn == "torch.distributed.is_available"):
            return Polarity.AVAILABLE if self._nccl() else Polarity.UNKNOWN
        if isinstance(func, cst.Attribute) and func.attr.value in ("startswith", "endswith") and call.args:
            text = string_value(call.args[0].value)
            if text is not None:
                return self._string_polarity(text, equal=True)
        moves = (devices.CUDA_METHOD, devices.MOVE_METHOD)
        if isinstance(func, cst.Attribute) and qn is None and func.attr.value in moves:
            return Polarity.NONE  # x.cuda() / x.to(...) in a condition moves a tensor: no check
        if devices.is_guard_text(name) and _PREDICATE.search(name):
            return Polarity.AVAILABLE  # is_gpu_available(), has_cuda(), check_gpu(), use_cuda()
        return self._returned_polarity(call)

    def _cuda_tensor_types(self, types: cst.BaseExpression) -> bool:
        """Is ``types`` torch's legacy CUDA tensor type (``torch.cuda.FloatTensor``), or a tuple of them only? A
        tensor is an instance of one only when it lives on a GPU (3D-ResNets' ``downsample_basic_block``)."""
        if isinstance(types, cst.Tuple):
            return bool(types.elements) and all(self._cuda_tensor_types(e.value) for e in types.elements)
        qn = self.ctx.qualname(types) or ""
        return qn.startswith("torch.cuda.") and qn.endswith("Tensor")

    def _returned_polarity(self, call: cst.Call) -> Polarity:
        """A function of the project whose every ``return`` value implies an accelerator (``return
        torch.accelerator.is_available() and torch.accelerator.device_count() >= n``): its call does too. A
        function of another file is read only when its name says it is about the device (``enough_gpus``):
        parsing the file of every call in every condition costs more than it finds."""
        found = callee(self.ctx, call, only=lambda _path, symbol: devices.is_guard_text(symbol.rsplit(".", 1)[-1]))
        if found is None or not isinstance(found[1], cst.FunctionDef):
            return Polarity.UNKNOWN
        other_ctx, func = found[0], found[1]
        key = id(func)
        held = self._returns.get(key)
        if held is not None and held[0] is func:
            return held[1]
        self._returns[key] = (func, Polarity.UNKNOWN)  # recursion: unknown while computing
        other = self if other_ctx is self.ctx else guards(other_ctx)
        values = [r.value for r in other_ctx.nodes(cst.Return) if other_ctx.enclosing_function(r) is func]
        available = bool(values) and all(v is not None and other.polarity(v) is Polarity.AVAILABLE for v in values)
        known = Polarity.AVAILABLE if available else Polarity.UNKNOWN
        self._returns[key] = (func, known)  # (the node is kept: its id is not reused while it is cached)
        return known

    @staticmethod
    def _string_polarity(text: str, equal: bool) -> Polarity:
        if _TENSORRT.match(text.strip()):
            # runtime == "tensorrt": a TensorRT engine runs only on an NVIDIA GPU (not equal: anything else)
            return Polarity.AVAILABLE if equal else Polarity.NONE
        if _CUDA_TEXT.search(text):
            return Polarity.AVAILABLE if equal else Polarity.UNAVAILABLE
        if _OTHER_DEVICE.match(text.strip()):
            return Polarity.UNAVAILABLE if equal else Polarity.AVAILABLE
        return Polarity.NONE

    def _nccl(self) -> bool:
        """Does the project (a file linted alone: the file) run a NCCL process group, or leave starting it to a
        launcher library (:attr:`Project.nccl`)?"""
        if self.ctx.project is not None:
            return self.ctx.project.nccl
        data = self.ctx.text.encode("utf-8", "surrogateescape") if self.ctx.text is not None else None
        return data is not None and (devices.NCCL_TEXT.search(data) is not None
                                     or devices.PROCESS_GROUP_TEXT.search(data) is None)

    def _world_size_polarity(self, left: cst.BaseExpression, op: cst.BaseCompOp,
                             right: cst.BaseExpression) -> Polarity | None:
        """``get_world_size() > 1`` / ``world_size == 1`` in a NCCL project: distributed (CUDA) or not."""
        size, number = (left, _number(right)) if _number(right) is not None else (right, _number(left))
        name = (dotted_name(size.func) if isinstance(size, cst.Call) else dotted_name(size)) or ""
        if number is None or not (name.split(".")[-1] in devices.WORLD_SIZE_CALLS or name.endswith("world_size")):
            return None
        if not self._nccl():
            return Polarity.UNKNOWN
        single = (isinstance(op, cst.Equal) and number == 1) or (isinstance(op, cst.LessThan) and number <= 2) \
            or (isinstance(op, cst.LessThanEqual) and number <= 1)
        return Polarity.UNAVAILABLE if single else Polarity.AVAILABLE

    def _comparison_polarity(self, comp: cst.Comparison) -> Polarity:
        result = Polarity.NONE
        left = comp.left
        for target in comp.comparisons:
            part = self._pair_polarity(left, target.operator, target.comparator)
            result = _both(result, part, conj=True) if result is not Polarity.NONE else part
            left = target.comparator
        return result

    def _pair_polarity(self, left: cst.BaseExpression, op: cst.BaseCompOp, right: cst.BaseExpression) -> Polarity:
        equal = isinstance(op, (cst.Equal, cst.In, cst.Is))
        unequal = isinstance(op, (cst.NotEqual, cst.NotIn, cst.IsNot))
        world = self._world_size_polarity(left, op, right)
        if world is not None:
            return world
        if equal or unequal:
            literal = self._literal_polarity(left, right, equal)
            if literal is not None:
                return literal
        left_pol, right_pol = self.polarity(left), self.polarity(right)
        decided = (Polarity.AVAILABLE, Polarity.UNAVAILABLE)
        if left_pol not in decided and right_pol not in decided:
            return self._more_gpus(left, op, right)
        known = left_pol if left_pol in decided else right_pol
        number = _number(right if left_pol in decided else left)
        constant = right if left_pol in decided else left
        if isinstance(constant, cst.Name) and constant.value in ("True", "False", "None"):
            truthy = constant.value == "True"
            if constant.value == "None":  # gpu is not None: a GPU was given
                return known if unequal else known.flip()
            return known if (equal and truthy) or (unequal and not truthy) else known.flip()
        if number is not None:
            return self._count_polarity(known, op, number)
        return known

    def _literal_polarity(self, left: cst.BaseExpression, right: cst.BaseExpression, equal: bool) -> Polarity | None:
        """A comparison with a device string (``device.type == "cuda"``, ``provider in ("CUDA...",)``) or a
        ``torch.device("cuda")``."""
        for mine in (left, right):
            texts = _strings(mine)
            if texts:
                found = {self._string_polarity(t, equal=equal) for t in texts} - {Polarity.NONE}
                if len(found) == 1:
                    return found.pop()
            name = dotted_name(mine) if isinstance(mine, (cst.Name, cst.Attribute)) else None
            if name is not None and _TENSORRT.match(name.rsplit(".", 1)[-1]) and name.rsplit(".", 1)[-1].isupper():
                return self._string_polarity("tensorrt", equal=equal)  # mode == TENSORRT, a runtime's constant
            value = self._device_constant(mine)
            if value is None and isinstance(mine, cst.Name):
                # a constant of the file: `_CPU_DEVICE = torch.device("cpu")` (every assignment the same device)
                values = {self._device_constant(v) for v in self._assigned.get(mine.value, [])}
                value = values.pop() if len(values) == 1 else None
            if value is not None:
                return self._string_polarity(value, equal=equal)
        return None

    def _picked_by_number(self, call: cst.Call) -> bool:
        """``torch.cuda.set_device(0)``: a GPU picked by number, not a launched rank's (``set_device(local_rank)``);
        also by a fixed device, ``set_device("cuda:0")`` or a name every assignment of which is one (pifuhd's
        ``device = torch.device('cuda:0')`` then ``torch.cuda.set_device(device)``)."""
        if not call.args:
            return False
        arg = call.args[0].value
        if isinstance(arg, cst.Name) and arg.value in self._assigned:
            # (a device, not a number: BitNet's `local_rank = 0` stands in for a launcher's rank)
            return all(not isinstance(v, cst.Integer) and self._fixed_device(v) for v in self._assigned[arg.value])
        return self._fixed_device(arg)

    def _fixed_device(self, expr: cst.BaseExpression) -> bool:
        """``0``, ``"cuda:0"``, ``torch.device("cuda:0")``, ``torch.device("cuda", 0)``."""
        if isinstance(expr, cst.Integer) or string_value(expr) is not None:
            return True
        return isinstance(expr, cst.Call) and self.ctx.qualname(expr.func) == devices.DEVICE_CONSTRUCTOR \
            and bool(expr.args) and all(isinstance(a.value, cst.Integer) or string_value(a.value) is not None
                                        for a in expr.args)

    def _device_constant(self, expr: cst.BaseExpression) -> str | None:
        """The device a ``torch.device("cpu")`` names."""
        if isinstance(expr, cst.Call) and self.ctx.qualname(expr.func) == devices.DEVICE_CONSTRUCTOR and expr.args:
            return string_value(expr.args[0].value)
        return None

    @staticmethod
    def _more_gpus(left: cst.BaseExpression, op: cst.BaseCompOp, right: cst.BaseExpression) -> Polarity:
        """``num_gpus > 1`` on a GPU-count setting (on by default, so not a check by itself): asking for more
        GPUs than one is an opt-in to CUDA."""
        name, number = dotted_name(left), _number(right)
        if name is None or number is None or not devices.is_guard_text(name):
            return Polarity.UNKNOWN
        if (isinstance(op, cst.GreaterThan) and number >= 1) or (isinstance(op, cst.GreaterThanEqual) and number >= 2):
            return Polarity.AVAILABLE
        return Polarity.UNKNOWN

    @staticmethod
    def _count_polarity(known: Polarity, op: cst.BaseCompOp, number: float) -> Polarity:
        """``device_count() > 1``, ``args.gpu >= 0``, ``n_gpu == 0``, ``gpu_id == -1``; ``device_count() < 2``
        true says nothing (none, or one)."""
        none = (isinstance(op, cst.Equal) and number <= 0) or (isinstance(op, cst.LessThan) and number <= 1) \
            or (isinstance(op, cst.LessThanEqual) and number <= 0)
        if isinstance(op, (cst.LessThan, cst.LessThanEqual)) and not none:
            return Polarity.UNKNOWN
        return known.flip() if none else known

    def _count_falsity(self, comp: cst.Comparison) -> Polarity | None:
        """What a count's comparison being false implies where that is not the opposite of its truth:
        ``device_count() < 2`` false means two or more (``skipif(torch.cuda.device_count() < 2, ...)`` runs
        with CUDA), ``device_count() > 1`` false means one or none (nothing definite). None: no such count."""
        if len(comp.comparisons) != 1:
            return None
        op, right = comp.comparisons[0].operator, comp.comparisons[0].comparator
        number = _number(right)
        if number is None or self._world_size_polarity(comp.left, op, right) is not None:
            return None
        known = self.polarity(comp.left)
        if known not in (Polarity.AVAILABLE, Polarity.UNAVAILABLE):
            return None
        if (isinstance(op, cst.LessThan) and number > 1) or (isinstance(op, cst.LessThanEqual) and number > 0):
            return known
        if (isinstance(op, cst.GreaterThan) and number >= 1) or (isinstance(op, cst.GreaterThanEqual) and number >= 2):
            return Polarity.UNKNOWN
        return None

    def _flag_polarity(self, expr: cst.Name | cst.Attribute) -> Polarity:
        name = dotted_name(expr)
        if isinstance(expr, cst.Attribute) and expr.attr.value == "is_cuda":
            return Polarity.AVAILABLE
        if name is None:
            return Polarity.UNKNOWN
        if _NEGATED_GPU_FLAG.match(name.rsplit(".", 1)[-1]):
            return Polarity.NONE  # --no-cuda: a setting that turns the GPU off, no check (its being false, the
            # default, says nothing either: `not args.no_cuda and torch.cuda.is_available()` is the check)
        if name in self._name_polarity:
            return self._name_polarity[name]
        self._name_polarity[name] = Polarity.UNKNOWN  # while computing (a flag built from itself)
        result = self._imported_polarity(name) if name not in self._assigned else Polarity.UNKNOWN
        if result is Polarity.UNKNOWN:
            result = self._assigned_polarity(name)
        self._name_polarity[name] = result
        return result

    def _assigned_polarity(self, name: str) -> Polarity:
        imported = self._import_flag(name)
        if imported is not None:
            return Polarity.AVAILABLE if imported else Polarity.UNAVAILABLE
        values = self._assigned.get(name, [])
        computed = [self.polarity(v) for v in values]
        for found in computed:
            if found in (Polarity.AVAILABLE, Polarity.UNAVAILABLE):
                return found  # use_gpu = torch.cuda.is_available() (and so on)
        flow = self._flow_flag_polarity(name)
        if flow is not None:
            return flow
        named = devices.is_guard_text(name.rsplit(".", 1)[-1])  # `args.cuda`, not `accelerator.sync_gradients`
        truthy = [v for v in values if _on_by_default(v) is True]
        if truthy and named and all(_on_by_default(v) is not None for v in values) \
                and all(self.is_guarded(v, depth=0) for v in truthy):
            return Polarity.AVAILABLE  # cuda_flag = False; if torch.cuda.is_available(): cuda_flag = True
        if values and all(found is Polarity.NONE for found in computed):
            return Polarity.NONE  # USE_CUDA = True, args.num_gpus = gpus (on by default): not a check
        if not named or (values and all(isinstance(v, cst.Call)
                                        and self.ctx.qualname(v.func) in devices.ACCELERATOR_OBJECTS for v in values)):
            return Polarity.UNKNOWN  # accelerator = Accelerator(): an object, `if accelerator:` no check
        if self._flags.default(name) is True and name not in self._checked_flags():
            return Polarity.NONE  # --cuda defaulting to True (or --gpus to 1), never checked: not a guard
        if not values and (self._passed_polarity(name) is Polarity.NONE or self._dict_default_on(name)):
            return Polarity.NONE  # fit(..., cuda) where every caller passes Cuda = True: a setting
        return Polarity.AVAILABLE  # an opt-in flag, or a flag of unknown origin named for the GPU

    def _flow_flag_polarity(self, name: str) -> Polarity | None:
        """A flag read off the CUDA-only flows of the file: AVAILABLE for one whose ``if`` starts such a flow
        (``if distributed: init_process_group("nccl")``, later ``if distributed:``; mmdet's ``train_detector(...,
        distributed=...)`` in a NCCL project, set after init_dist), UNAVAILABLE for one whose ``if not`` does
        (``if not args.cpu: torch.cuda.set_device(rank)``, later ``if not args.cpu:``); None for any other."""
        if name in self._flags_of_cuda_only_flows() or (_distributed_flag(name) and self._nccl()):
            return Polarity.AVAILABLE
        if name in self._flags_of_cpu_paths():
            return Polarity.UNAVAILABLE
        return None

    def _import_flag(self, name: str) -> bool | None:
        """A flag the module's top level sets by whether a CUDA-only module imports: ``try: from
        apex.contrib.index_mul_2d import index_mul_2d`` / ``except ImportError: HAS_INDEX_MUL_2D = False`` /
        ``else: HAS_INDEX_MUL_2D = True`` (or ``disabled = True`` in the handler; or apex's ``SKIP_TEST = None``
        before the ``try`` and ``except ImportError as e: SKIP_TEST = e``, an exception being true): the value it
        holds when the import succeeded (True for ``HAS_...``, False for ``disabled``), None for any other name. The
        code a ``skipIf`` on it lets run has the CUDA extension, as a module that imports it at its top does."""
        before: bool | None = None
        for stmt in self.ctx.module.body:
            if not isinstance(stmt, cst.Try) or not any(
                    h.type is None or (dotted_name(h.type) or "").split(".")[-1] in _IMPORT_ERRORS
                    for h in stmt.handlers):
                if isinstance(stmt, cst.SimpleStatementLine):
                    before = _constant_assigned(name, stmt.body, falsy=True) if _assigns_name(name, stmt.body) \
                        else before
                continue
            found = _constant_assigned(name, [*_smalls(stmt.body), *(_smalls(stmt.orelse.body) if stmt.orelse else [])])
            if found is None and not _assigns_name(name, [*_smalls(stmt.body)]):
                found = before  # SKIP_TEST = None before the try, left so when the import succeeds
            failed = {v for h in stmt.handlers
                      for v in [_constant_assigned(name, _smalls(h.body), caught=_caught_name(h))] if v is not None}
            if found is None or failed != {not found}:
                continue
            modules = [m for small in _smalls(stmt.body) if isinstance(small, (cst.Import, cst.ImportFrom))
                       for m in imported_modules(small)]
            project = self.ctx.project
            if modules and (project.imports_cuda_only(modules, self.ctx.path) if project is not None
                            else any(devices.cuda_only_library(m) for m in modules)):
                return found
        return None

    def _imported_polarity(self, name: str) -> Polarity:
        """A flag imported from a module of the project that assigns it once at its top from an availability
        check (``from utils._import_guard import _SUPPORTS_FLEX_ATTENTION``, assigned there
        ``torch.cuda.is_available() and torch.cuda.get_device_capability() >= (7, 5)``): what that value implies.
        The other file is parsed only when its bytes assign the name next to a mention of CUDA or an accelerator;
        UNKNOWN otherwise."""
        ctx, project = self.ctx, self.ctx.project
        if project is None or "." in name or (name not in ctx.aliases and name not in ctx.relative_imports):
            return Polarity.UNKNOWN
        found = project.resolve(ctx, name)
        if found is None or found[0] == os.path.abspath(ctx.path) or "." in found[1] or not found[1]:
            return Polarity.UNKNOWN
        path, symbol = found
        assigned = re.compile(rb"(?m)^" + re.escape(symbol.encode()) + rb"[ \t]*(?::[^=\n]*)?=(?!=)[^\n]*\n?[^\n]*"
                              rb"(?:cuda|accelerator)")
        other = project.context(path) if assigned.search(project.read(path) or b"") else None
        if other is None:
            return Polarity.UNKNOWN
        values = [small.value for stmt in other.module.body if isinstance(stmt, cst.SimpleStatementLine)
                  for small in stmt.body if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None
                  and [dotted_name(t.target) for t in (small.targets if isinstance(small, cst.Assign) else [small])]
                  == [symbol]]
        if len(values) != 1:
            return Polarity.UNKNOWN
        found_polarity = guards(other).polarity(values[0])
        return found_polarity if found_polarity in (Polarity.AVAILABLE, Polarity.UNAVAILABLE) else Polarity.UNKNOWN

    def _passed_polarity(self, name: str) -> Polarity:
        """A flag that is a parameter of this file's functions (``cuda``), or an attribute of one
        (``args.gpu_mode``), read through what every call in the project passes for it: NONE when each of
        them is a setting (``Cuda = True``, a ``--gpu_mode`` option defaulting to True that nothing checks);
        else UNKNOWN (some call passes a check, or the calls cannot all be found)."""
        root, _, attr = name.partition(".")
        params = [p for p in self.ctx.nodes(cst.Param) if p.name.value == root]
        if not params or "." in attr:
            return Polarity.UNKNOWN
        for param in params:
            values = passed_values(self.ctx, param)
            if values is None:
                return Polarity.UNKNOWN
            for site_ctx, value in values:
                other = self if site_ctx is self.ctx else guards(site_ctx)
                if attr:  # args.gpu_mode, args passed as the caller's args: the caller's args.gpu_mode
                    base = dotted_name(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
                    if base is None:
                        return Polarity.UNKNOWN
                    value = cst.parse_expression(f"{base}.{attr}")
                if other.polarity(value) is not Polarity.NONE or not other._setting_on(value):
                    return Polarity.UNKNOWN
        return Polarity.NONE

    def _dict_default_on(self, name: str) -> bool:
        """``self.cuda`` set from a class's dictionary of defaults (``_defaults = {"cuda": True, ...}`` and
        ``self.__dict__.update(self._defaults)`` in a method), on there, and no construction of the class in
        the project passing ``cuda=`` (nor ``**kwargs``): a setting, on (the detection-repo template)."""
        attr = name[len("self."):] if name.startswith("self.") else ""
        if not attr or "." in attr:
            return False
        found = False  # (the name is read file-wide: every class that sets it so must leave it on)
        for cls in self.ctx.nodes(cst.ClassDef):
            for table in _default_tables(cls):
                entry = next((e for e in table.elements if isinstance(e, cst.DictElement)
                              and string_value(e.key) == attr), None)
                if entry is None:
                    continue
                sites = call_sites(self.ctx, cls) if _on_by_default(entry.value) is True else None
                if sites is None or any(a.star or (a.keyword is not None and a.keyword.value == attr)
                                        for _, call in sites for a in call.args):
                    return False
                found = True
        return found

    def _setting_on(self, value: cst.BaseExpression) -> bool:
        """Is ``value`` a setting that is on: ``True`` / a count of 1 or more, a name every assignment of which
        is one (``Cuda = True``), a command-line flag on by default (``args.gpu_mode``)? (Off, ``None`` /
        ``False``, the flagged code never runs: no finding either way.)"""
        if not isinstance(value, (cst.Name, cst.Attribute)) or dotted_name(value) in ("True", "False", "None"):
            return _on_by_default(value) is True
        name = dotted_name(value) or ""
        assigned = self._assigned.get(name, [])
        if assigned:
            return all(_on_by_default(v) is True for v in assigned)
        return self._flags.default(name) is True

    def _flags_of_cuda_only_flows(self) -> frozenset[str]:
        """The flags whose ``if flag:`` somewhere in the file starts a CUDA-only flow (a NCCL process group,
        ``set_device(local_rank)``, an assert of availability): set, the flag means that flow."""
        if self._cuda_only_flags is None:
            self._cuda_only_flags = frozenset()  # while computing
            found: set[str] = set()
            negated: set[str] = set()
            for stmt in self.ctx.nodes(cst.If):
                test, names = stmt.test, found
                if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                    test, names = test.expression, negated  # `if not args.cpu: torch.cuda.set_device(rank)`
                name = dotted_name(test) if isinstance(test, (cst.Name, cst.Attribute)) else None
                if name and isinstance(stmt.body, cst.IndentedBlock) \
                        and any(self._guards_what_follows(s, depth=0) for s in stmt.body.body):
                    names.add(name)
            found.update(self._flags_set_with_cuda_only_flows())
            self._cuda_only_flags = frozenset(found)
            self._cpu_flags = frozenset(negated - found)
        return self._cuda_only_flags

    def _flags_of_cpu_paths(self) -> frozenset[str]:
        """The flags whose ``if not flag:`` somewhere in the file starts a CUDA-only flow (fairscale's OSS
        benchmark: ``if not args.cpu: torch.cuda.set_device(rank)`` in a spawned rank): unset, the flag means that
        flow, so ``if not args.cpu:`` elsewhere runs in it (set, the run is the CPU one)."""
        self._flags_of_cuda_only_flows()
        return self._cpu_flags or frozenset()

    def _flags_set_with_cuda_only_flows(self) -> set[str]:
        """The flags set to ``True`` in a block that then starts a CUDA-only flow (``distributed = True`` /
        ``init_dist(args.launcher, **cfg.dist_params)``, ``args.distributed = True`` /
        ``torch.cuda.set_device(args.gpu)``): set, the flag means that flow."""
        found: set[str] = set()
        for block in self.ctx.nodes(cst.IndentedBlock):
            flags: list[str] = []
            for stmt in block.body:
                if flags and self._guards_what_follows(stmt, depth=0):
                    found.update(flags)
                    break
                small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
                if isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) and small.value.value == "True":
                    flags.extend(n for t in small.targets if (n := dotted_name(t.target)) is not None)
        return found

    def _checked_flags(self) -> frozenset[str]:
        """The flags an exit pairs with availability: ``if args.cuda and not torch.cuda.is_available(): raise``
        (past it, the flag set means CUDA is there: the flag guards its branches, whatever its default)."""
        if self._checked is None:
            self._checked = frozenset()  # while computing (polarity() below may ask for a flag)
            found: set[str] = set()
            for stmt in self.ctx.nodes(cst.If):
                test = stmt.test
                if stmt.orelse is None and isinstance(test, cst.BooleanOperation) \
                        and isinstance(test.operator, cst.And) and self._is_exit(stmt):
                    for flag, other in ((test.left, test.right), (test.right, test.left)):
                        name = dotted_name(flag) if isinstance(flag, (cst.Name, cst.Attribute)) else None
                        if name and self.polarity(other) is Polarity.UNAVAILABLE:
                            found.add(name)
            self._checked = frozenset(found)
        return self._checked

    # --- guarded code --------------------------------------------------------------------------
    def _marks_cuda_only(self, expr: cst.BaseExpression) -> bool:
        """``pytest.mark.skipif(not torch.cuda.is_available(), ...)``, ``@unittest.skipUnless(...)``,
        ``@requires_cuda``, ``@pytest.mark.gpu``, ``@RunIf(min_cuda_gpus=1)``, ``@ray.remote(num_gpus=1)``: a
        decorator or mark that runs the code only with CUDA."""
        target = expr.func if isinstance(expr, cst.Call) else expr
        name = (dotted_name(target) or "").split(".")[-1]
        if isinstance(expr, cst.Call) and name in _SKIPS and expr.args:
            # the code runs when a skipif's condition is false (`not cuda_ok or capability < 8`: then CUDA is
            # there), when a skipUnless's is true
            condition = expr.args[0].value
            runs = self.falsity(condition) if _SKIPS[name] is Polarity.UNAVAILABLE else self.polarity(condition)
            return runs is Polarity.AVAILABLE
        if isinstance(expr, cst.Call) and any(
                a.keyword is not None and a.keyword.value in devices.GPU_COUNT_KEYWORDS
                and isinstance(a.value, cst.Integer) and _positive_number(a.value) for a in expr.args):
            return True  # Lightning's RunIf(min_cuda_gpus=1) (a project's own _RunIf(**kwargs) passes it on)
        if isinstance(expr, cst.Call) and self.ctx.qualname(expr.func) == devices.RAY_REMOTE and any(
                a.keyword is not None and a.keyword.value == "num_gpus" and _positive_number(a.value)
                for a in expr.args):
            return True  # @ray.remote(num_gpus=1): Ray places the actor or task on a GPU only
        if isinstance(expr, (cst.List, cst.Tuple)):
            return any(self._marks_cuda_only(el.value) for el in expr.elements)
        return devices.is_guard_text(name)

    def _out_of_memory_fallback(self, handler: cst.ExceptHandler) -> bool:
        """``except RuntimeError:`` (or ``torch.cuda.OutOfMemoryError``) that handles CUDA running out of
        memory (it empties CUDA's cache, or says so): it runs only where CUDA ran."""
        kind = dotted_name(handler.type) if handler.type is not None else None
        if kind is not None and kind.split(".")[-1] == "OutOfMemoryError":
            return True
        if kind is None or kind.split(".")[-1] not in ("RuntimeError", "Exception"):
            return False
        text = self.ctx.code(handler.body)
        return any(hint in text or hint in text.lower() for hint in devices.OOM_HINTS)

    def _cuda_only_definition(self, node: cst.FunctionDef | cst.ClassDef) -> bool:
        """A function or class that declares itself GPU-only: by its name (``train_gpu``, ``CUDAAccelerator``)
        or a decorator; a class whose ``__init__`` sets the GPU up on every path; or, in a NCCL project, a
        function that runs a collective (NCCL takes CUDA tensors)."""
        if devices.is_guard_text(node.name.value) and not self._named_in_config(node):
            return True
        if any(self._marks_cuda_only(d.decorator) for d in node.decorators):
            return True
        if isinstance(node, cst.ClassDef) and self._instantiated_for_cuda_only(node):
            return True
        if isinstance(node, cst.ClassDef):
            # a class whose __init__ sets the GPU up on every path (set_device, a NCCL group, an assert; also
            # through a method it calls, `self.setup_dist_env()`, or the __init__ it inherits from a base class
            # of the project): every instance lives in a CUDA-only flow
            key = (id(node), -1)
            if key not in self._requires:
                self._requires[key] = False  # recursion: assume not while computing
                self._requires[key] = self._init_requires_cuda(node) or self._built_on_gpu(node)
            return self._requires[key]
        return (self._runs_collective(node) and self._nccl()) or self._runs_cuda_kernels(node) \
            or self._requests_cuda_fixture(node) or self._fixture_of_cuda_only_tests(node)

    def _instantiated_for_cuda_only(self, cls: cst.ClassDef) -> bool:
        """Is ``cls`` a generic device test of torch's framework instantiated for CUDA alone
        (``instantiate_device_type_tests(TestFusedLayerNorm, globals(), only_for="cuda")``)? Without CUDA the
        framework makes no class of it, and removes the generic one (checked on torch 2.13.0+cpu)."""
        if self._cuda_instantiated is None:
            self._cuda_instantiated = set()
            for call in self.ctx.nodes(cst.Call):
                if (dotted_name(call.func) or "").split(".")[-1] != "instantiate_device_type_tests" or not call.args \
                        or not isinstance(call.args[0].value, cst.Name):
                    continue
                only = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "only_for"),
                            None)
                values = [e.value for e in only.elements] if isinstance(only, (cst.Tuple, cst.List)) else [only]
                if only is not None and values and all(v is not None and string_value(v) == "cuda" for v in values):
                    self._cuda_instantiated.add(call.args[0].value.value)
        return cls.name.value in self._cuda_instantiated

    def _fixture_of_cuda_only_tests(self, func: cst.FunctionDef) -> bool:
        """Is ``func`` a pytest fixture (not ``autouse``) that only tests marked GPU-only request, in its file or
        class (``@gpu_test(gpu_count=1) def test_run(self, cfg)``)? pytest runs a fixture for the tests that
        request it: skipped tests run none. Not when a test without such a mark, or another fixture, requests
        it."""
        if not self._is_fixture(func) or any(
                isinstance(d.decorator, cst.Call) and any(a.keyword is not None and a.keyword.value == "autouse"
                                                          for a in d.decorator.args) for d in func.decorators):
            return False
        block = self.ctx.parent(func)
        # a fixture of the module serves every test of the file, those of its classes too; one of a class, the
        # class's tests
        candidates = self.ctx.nodes(cst.FunctionDef) if block is self.ctx.module else getattr(block, "body", ())
        siblings = [s for s in candidates if isinstance(s, cst.FunctionDef) and s is not func]
        name = func.name.value
        requesters = [s for s in siblings if name in _requested(s)]
        return bool(requesters) and all(
            s.name.value.startswith("test") and any(self._marks_cuda_only(d.decorator) for d in s.decorators)
            for s in requesters)

    def _requests_cuda_fixture(self, func: cst.FunctionDef) -> bool:
        """Does the test ``func`` request a pytest fixture of its file that returns only with CUDA (``def
        mods(): require_cuda(); import kernels``, where ``require_cuda`` calls ``pytest.skip`` without it)?
        pytest skips the test before its body runs."""
        requested = _requested(func)
        if not requested or not func.name.value.startswith("test"):
            return False
        return any(isinstance(stmt, cst.FunctionDef) and stmt.name.value in requested and stmt is not func
                   and self._is_fixture(stmt) and self.requires_cuda(stmt, depth=1) for stmt in self.ctx.module.body)

    def _is_fixture(self, func: cst.FunctionDef) -> bool:
        """Is ``func`` decorated ``@pytest.fixture`` (with or without arguments)?"""
        return any(self.ctx.qualname(decorator_target(d)) == "pytest.fixture" for d in func.decorators)

    def _named_in_config(self, node: cst.FunctionDef | cst.ClassDef) -> bool:
        """Does the file name the definition in a string outside any guard (the latent-diffusion template's
        default callbacks: ``"cuda_callback": {"target": "main.CUDACallback"}``, built by name on the CPU path
        too)? Its name then says nothing of where it runs."""
        key = id(node)
        if key not in self._in_config:
            self._in_config[key] = False  # recursion (a string inside the definition itself): assume not
            name = node.name.value
            self._in_config[key] = any(text.endswith("." + name) for text, string in self._dotted_strings()
                                       if not self.is_guarded(string, depth=0))
        return self._in_config[key]

    def _dotted_strings(self) -> list[tuple[str, cst.SimpleString]]:
        """The file's strings that read as a dotted path (``"main.CUDACallback"``), with their nodes."""
        if self._string_nodes is None:
            self._string_nodes = [(text, s) for s in self.ctx.nodes(cst.SimpleString)
                                  if (text := string_value(s)) is not None and "." in text and " " not in text]
        return self._string_nodes

    def _runs_cuda_kernels(self, func: cst.FunctionDef) -> bool:
        """Does ``func`` call the project's CUDA kernels on every path: a statement of its body calls a getter
        of the project that imports only CUDA-only modules when called (torch-ngp's lazy
        ``get_backend().near_far_from_aabb(...)``, whose ``get_backend`` imports ``_raymarching`` or builds
        ``.backend`` from ``.cu`` sources)? The autograd Function around a kernel is CUDA-only by design."""
        if not isinstance(func.body, cst.IndentedBlock):
            return False
        held = self._kernels.get(id(func))
        if held is None:  # kept: every guard question about a line of the function asks it again
            held = self._kernels[id(func)] = (self.ctx.project is not None and any(
                isinstance(node, cst.Call) and not node.args and self._cuda_kernel_getter(node)
                for stmt in func.body.body if isinstance(stmt, cst.SimpleStatementLine) for node in walk(stmt)
            )) or self._launches_extension_kernel(func)
        return held

    def _launches_extension_kernel(self, func: cst.FunctionDef) -> bool:
        """Is ``func`` a method of a custom autograd Function that launches a kernel of a compiled extension
        (``ext_module.three_nn_forward(...)``, where ``ext_module = ext_loader.load_ext("_ext", [...])`` or
        ``torch.utils.cpp_extension.load(...)`` at the module's top, or ``import pointnet2_cuda``)? Such an op's
        device is the kernel's: the CUDA buffers it allocates for the kernel (``torch.cuda.IntTensor(B, n)``)
        say that the kernel is a CUDA kernel, and the op runs only with CUDA, as a Triton kernel does. An
        autograd Function in plain torch (no extension) is not one."""
        owner = self.ctx.parent(self.ctx.parent(func))
        if not isinstance(owner, cst.ClassDef) or not any(
                (self.ctx.qualname(b.value) or "") in _AUTOGRAD_FUNCTIONS for b in owner.bases):
            return False
        handles = self._extension_handles()
        return any(isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                   and isinstance(node.func.value, cst.Name) and node.func.value.value in handles
                   for node in walk(func.body))

    def _extension_handles(self) -> frozenset[str]:
        """The names the module's top level binds to a compiled extension: a loader's result
        (``ext_module = ext_loader.load_ext("_ext", [...])``, ``cpp_extension.load(...)``, ``load_inline``) or an
        imported module named for one (``import pointnet2_cuda as pointnet2``, ``from . import _ext``)."""
        if self._handles is None:
            names: set[str] = set()
            for stmt in self.ctx.module.body:
                for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                    if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and (
                            (dotted_name(small.value.func) or "").rsplit(".", 1)[-1] == "load_ext"
                            or self.ctx.qualname(small.value.func) in _EXTENSION_LOADERS):
                        names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
                    elif isinstance(small, (cst.Import, cst.ImportFrom)) \
                            and not isinstance(small.names, cst.ImportStar):
                        for alias in small.names:
                            module = dotted_name(alias.name) or ""
                            bound = alias.asname.name if alias.asname is not None else alias.name
                            if isinstance(bound, cst.Name) and _EXTENSION_MODULE.search(module) \
                                    and not module.startswith("torch"):
                                names.add(bound.value)
            self._handles = frozenset(names)
        return self._handles

    def _cuda_kernel_getter(self, call: cst.Call) -> bool:
        found = callee(self.ctx, call)
        if found is None or not isinstance(found[1], cst.FunctionDef):
            return False
        other, getter = found
        modules = [module for node in walk(getter) if isinstance(node, (cst.Import, cst.ImportFrom))
                   for module in imported_modules(node)]
        project = other.project
        return bool(modules) and project is not None and all(
            project.imports_cuda_only([module], other.path) for module in modules)

    def _built_on_gpu(self, cls: cst.ClassDef) -> bool:
        """Is every construction of the class in the project a launcher told to use the GPU (a LightningLite
        subclass built as ``Lite(accelerator="gpu", strategy=DDPStrategy(...)).run(args)``)? Its methods run
        there."""
        sites = self.constructions(cls)
        return bool(sites) and all(gpu_accelerator(call) for _, call in sites or [])

    def constructions(self, cls: cst.ClassDef) -> list[tuple[Context, cst.Call]] | None:
        """The constructions of a top-level class in the project, when they are all there is to see: the class
        only ever called (not subclassed in the project, nor handed around as a value: a registry, a factory
        argument builds it where devlint cannot see); None otherwise."""
        project = self.ctx.project
        if self.ctx.parent(cls) is not self.ctx.module or project is None or not project.only_called(
                cls.name.value, os.path.abspath(self.ctx.path), through_methods=not _builds_itself(cls)):
            return None
        return call_sites(self.ctx, cls)

    def _init_requires_cuda(self, cls: cst.ClassDef) -> bool:
        init = own_method(cls, "__init__")
        if init is not None:
            return self.requires_cuda(init, depth=1)
        inherited = inherited_method(self.ctx, cls, "__init__")
        return inherited is not None and isinstance(inherited[1], cst.FunctionDef) \
            and guards(inherited[0]).requires_cuda(inherited[1], depth=1)

    def _builds_cuda_only_object(self, init: cst.FunctionDef) -> bool:
        """Does a statement of ``__init__``'s own body (not under an ``if``, a ``try`` or a loop) call an API that
        raises without CUDA, ``self.stream = torch.cuda.Stream()`` (YOLOX's ``DataPrefetcher``; checked on torch
        2.13.0+cpu, rules/DEV006.md)? No instance exists without CUDA, so its methods run only with it. A context
        manager built and not entered (``torch.cuda.device(0)``) raises nothing."""
        held = self._cuda_objects.get(id(init))
        if held is None:  # kept: every guard question about a line of the class's methods asks it again
            held = self._cuda_objects[id(init)] = self._calls_cuda_only_api(init)
        return held

    def _calls_cuda_only_api(self, init: cst.FunctionDef) -> bool:
        body = init.body.body if isinstance(init.body, cst.IndentedBlock) else []
        for stmt in body:
            if _returns(stmt):
                return False  # `if local_rank is None: return` first: an instance without the call
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for node in walk(stmt):
                if isinstance(node, (cst.Lambda, cst.IfExp, cst.BooleanOperation)):
                    break  # a call that may not run
                if isinstance(node, cst.Call):
                    name = devices.cuda_only_call(self.ctx.qualname(node.func))
                    if name is not None and name not in devices.CUDA_ONLY_CONTEXTS:
                        return True
        return False

    def _runs_collective(self, func: cst.FunctionDef) -> bool:
        return func in self.ctx.shared("guards.collective_functions", _collective_functions)

    def _is_exit(self, stmt: cst.If, terminating: bool = False) -> bool:
        return self._ends_in_exit(stmt.body, terminating)

    def _ends_in_exit(self, suite: cst.BaseSuite, terminating: bool = False) -> bool:
        """Does the block end by leaving (``raise``, ``sys.exit()``, ``parser.error()``; unless ``terminating``,
        also ``return`` / ``continue`` / ``break``)?"""
        body = suite.body if isinstance(suite, cst.IndentedBlock) else [suite]
        return bool(body) and self._leaves(body[-1], terminating, error_calls=True)

    def _leaves(self, stmt: cst.CSTNode, terminating: bool, error_calls: bool) -> bool:
        """Does the simple statement line ``stmt`` leave: ``raise``, an exit (``sys.exit()``, ``pytest.skip()``, a
        test's ``self.skipTest(...)``, which raises unittest.SkipTest), with ``error_calls`` also ``parser.error(...)``
        (any ``*.error`` call); unless ``terminating``, ``return`` / ``continue`` / ``break`` too?"""
        small = stmt.body if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else []
        for s in small:
            if isinstance(s, cst.Raise) or (not terminating and isinstance(s, (cst.Return, cst.Continue, cst.Break))):
                return True
            if isinstance(s, cst.Expr) and isinstance(s.value, cst.Call):
                name = self.ctx.qualname(s.value.func) or dotted_name(s.value.func) or ""
                if name in devices.EXIT_CALLS or name == "self.skipTest" \
                        or (error_calls and name.split(".")[-1] == "error"):
                    return True
        return False

    def _first_guard_index(self, block: cst.CSTNode, body: Sequence[cst.BaseStatement]) -> int | None:
        if block not in self._block_guard:
            self._block_guard[block] = next(
                (i for i, stmt in enumerate(body) if self._guards_what_follows(stmt)), None)
        return self._block_guard[block]

    def _guards_what_follows(self, stmt: cst.BaseStatement, terminating: bool = False,
                             depth: int = SUMMARY_DEPTH) -> bool:
        """``if not torch.cuda.is_available(): sys.exit(...)``, ``assert torch.cuda.is_available()``, a NCCL
        process group or ``torch.cuda.set_device(local_rank)`` (CUDA-only by design), or a call of a function
        that only returns when CUDA is available. ``terminating``: only what ends the program counts (for a
        function's summary: its ``return`` lets its caller go on)."""
        if isinstance(stmt, cst.If) and stmt.orelse is None:
            # what follows runs when the test is false: that must mean an accelerator (``if not cuda_ok:``,
            # ``if not cuda_ok or not flash:``), not merely allow one (``if args.cuda and not cuda_ok:``
            # lets a run without --cuda and without CUDA go on)
            return self.falsity(stmt.test) is Polarity.AVAILABLE and self._is_exit(stmt, terminating)
        if isinstance(stmt, cst.If):
            return self._every_arm_guards(stmt, terminating, depth)
        if isinstance(stmt, cst.Try) and stmt.orelse is None and stmt.handlers:
            # `try: import tensorrt as trt` / `except ImportError: check_requirements(...); import tensorrt as trt`
            # (ultralytics' AutoBackend): the body and each handler guard what follows, or the handler raises
            return self._arm_guards(stmt.body, terminating, depth) and all(
                self._arm_guards(h.body, terminating, depth) for h in stmt.handlers)
        if isinstance(stmt, cst.SimpleStatementLine):
            if any(isinstance(s, cst.Assert) and self.polarity(s.test) is Polarity.AVAILABLE for s in stmt.body):
                return True
            if self._imports_cuda_only(stmt):
                return True  # `elif engine: import tensorrt as trt`: the rest of the branch needs an NVIDIA GPU
            return any(self._cuda_only_call(call, depth) for call in _statement_calls(stmt))
        return False

    def _imports_cuda_only(self, stmt: cst.SimpleStatementLine) -> bool:
        """Does the statement import a CUDA-only library, or a module of the project that needs CUDA at import
        (its own kernels, directly or through its imports: ``from nerf.network import NeRFNetwork`` whose
        renderer builds the ray-marching kernels)?"""
        project = self.ctx.project
        for small in stmt.body:
            if not isinstance(small, (cst.Import, cst.ImportFrom)):
                continue
            for module in imported_modules(small):
                if not module.startswith(".") and (devices.cuda_only_library(module)
                                                   or devices.gpu_kernel_library(module)):
                    return True
                if project is not None and project.imports_cuda_only([module], self.ctx.path):
                    return True
        return False

    def _every_arm_guards(self, stmt: cst.If, terminating: bool, depth: int) -> bool:
        """An ``if`` / ``elif`` / ``else`` each arm of which guards what follows it or leaves: the backbone a NeRF
        script picks, each arm importing what needs CUDA (``from nerf.network_tcnn import NeRFNetwork`` or
        ``from nerf.network import NeRFNetwork``); a launcher's choice, each arm setting the GPU from the
        launcher (``torch.cuda.set_device(local_rank)`` for "pytorch" and "slurm", ``raise`` for any other).
        What follows runs only where CUDA is."""
        arm: cst.If | cst.Else | None = stmt
        while isinstance(arm, cst.If):
            if not self._arm_guards(arm.body, terminating, depth):
                return False
            arm = arm.orelse
        return arm is not None and self._arm_guards(arm.body, terminating, depth)

    def _arm_guards(self, body: cst.BaseSuite, terminating: bool, depth: int) -> bool:
        """Does every path through the arm pass a statement that guards what follows (before any ``return``), or
        leave?"""
        statements = body.body if isinstance(body, cst.IndentedBlock) else []
        for s in statements:
            if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Return) \
                    and isinstance(s.body[0].value, cst.Call) and self._cuda_only_call(s.body[0].value, depth):
                return True  # `return _setup_dist(...)` of a function that returns only with CUDA
            if _returns(s):
                return False
            if isinstance(s, (cst.SimpleStatementLine, cst.If)) and self._guards_what_follows(s, terminating, depth):
                return True
        return self._ends_in_exit(body, terminating=True)

    def _cuda_only_call(self, call: cst.Call, depth: int = SUMMARY_DEPTH) -> bool:
        """A call after which only CUDA code runs: ``init_process_group("nccl")``, ``torch.cuda.set_device``,
        a launcher told to use the GPU (``L.Fabric(accelerator="cuda")``: it raises at construction where
        CUDA is missing), diffusers' ``enable_xformers_memory_efficient_attention()`` (it raises without CUDA),
        or a call of a function of the project that requires CUDA."""
        qn = self.ctx.qualname(call.func) or ""
        if qn in devices.CUDA_ONLY_CALLS:
            return not self._picked_by_number(call)
        if qn == devices.PROCESS_GROUP_INIT or qn.endswith(".init_process_group") \
                or dotted_name(call.func) == "init_process_group":
            return self._nccl_group(call)
        if gpu_accelerator(call):
            return True
        if qn in _CUDA_BUILDERS and _builds_from_cuda_sources(call):
            return True  # syncbn = load(name="syncbn", sources=[..., "welford.cu"]): raises without the CUDA toolkit
        if qn in devices.GROUP_REQUIRING_CALLS and not _given_replicas(call):
            return self._nccl()  # dist.get_rank(), DistributedSampler(ds): a process group runs, a NCCL one
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in devices.XFORMERS_ENABLERS:
            return True  # pipe.enable_xformers_memory_efficient_attention(): raises without CUDA
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == devices.XFORMERS_SETTER and call.args \
                and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "True":
            return True  # pipe.set_use_memory_efficient_attention_xformers(True): the same switch
        return depth > 0 and self._callee_requires_cuda(call, depth)

    def _callee_requires_cuda(self, call: cst.Call, depth: int) -> bool:
        """Is ``call`` a call of a function of the project that requires CUDA (:meth:`requires_cuda`)?"""
        project = self.ctx.project
        asked: list[tuple[str, ...]] = []

        def only(path: str, symbol: str) -> bool:
            """A function of another file: its answer is kept for the run (``Project.remember``), so that
            the file is parsed once, not once per file that calls it."""
            key = ("requires_cuda", path, symbol, str(depth - 1))
            known, value = project.recall(key) if project is not None else (False, None)
            if known:
                raise _Known(value)
            asked.append(key)
            return True

        try:
            found = callee(self.ctx, call, only)
        except _Known as known:
            return _returns_with_cuda(call, known.value)
        if found is None:
            return False
        other_ctx, func = found

        def answer() -> tuple[tuple[str, int | None, bool | int], ...] | None:
            # a class: its construction runs its __init__ (apex's FusedAdam raises "requires cuda extensions"
            # unless its CUDA extension amp_C imports), whose first parameter is the object, never passed
            init = own_method(func, "__init__") if isinstance(func, cst.ClassDef) else None
            target = init if init is not None else func
            if not isinstance(target, cst.FunctionDef):
                return None
            unless = guards(other_ctx).requires_cuda_unless(target, depth - 1)
            if unless is None:
                return None
            places = _parameter_places(other_ctx, target, unless)
            return places if init is None else tuple((name, index, _CONSTRUCTED) for name, index, _ in places)

        if project is None or not asked or other_ctx is self.ctx:
            places = answer()
        else:
            places = project.remember(asked[-1], answer, asked[-1][1])
        return _returns_with_cuda(call, places)

    def requires_cuda(self, func: cst.FunctionDef, depth: int = SUMMARY_DEPTH) -> bool:
        """Does ``func`` return only when CUDA is available (it exits or raises otherwise), or set up a
        CUDA-only flow (NCCL, set_device) for its caller, whatever it is passed?"""
        return self.requires_cuda_unless(func, depth) == frozenset()

    def requires_cuda_unless(self, func: cst.FunctionDef, depth: int = SUMMARY_DEPTH) -> frozenset[str] | None:
        """:meth:`requires_cuda`, also through a check its parameters' defaults switch on: Megatron's
        ``initialize_megatron(neox_args, allow_no_cuda=False)`` asserts CUDA under ``if not allow_no_cuda:``,
        so a call that does not pass ``allow_no_cuda`` returns only with CUDA. The parameters relied on at
        their defaults (an empty set: none), or None when it may return without CUDA."""
        key = (id(func), depth)
        if key not in self._unless:
            self._unless[key] = None  # recursion: assume not while computing
            body = func.body.body if isinstance(func.body, cst.IndentedBlock) else []
            found: frozenset[str] | None = None
            for stmt in body:
                # first: reading `not allow_no_cuda` as a flag would ask this very summary at the call sites
                switched = self._default_switch(func, stmt)
                if switched is not None and isinstance(stmt, cst.If):
                    if self._arm_guards(stmt.body, True, depth):
                        found = switched
                        break
                elif self._guards_what_follows(stmt, terminating=True, depth=depth):
                    found = frozenset()
                    break
                if _returns(stmt) and not (isinstance(stmt, cst.If) and stmt.orelse is None
                                           and self.polarity(stmt.test) is Polarity.AVAILABLE):
                    break  # `else: args.distributed = False; return` before set_device: a path without CUDA
                    # (not `if dist.is_initialized(): return` in a NCCL project: that path has CUDA)
            if found is None and (self._returns_only_after_cuda_setup(func, body, depth)
                                  or self._builds_cuda_kernels(func)):
                found = frozenset()
            self._unless[key] = found
        return self._unless[key]

    def _builds_cuda_kernels(self, func: cst.FunctionDef) -> bool:
        """Does ``func`` build the project's CUDA kernels when called: a statement of its body calls
        ``torch.utils.cpp_extension.load(...)`` / ``load_inline(...)``, itself or through a function defined in
        it (GPT-NeoX's ``fused_kernels.load()`` and its ``_cpp_extention_load_helper``), and the function names
        ``.cu`` sources? Without the CUDA toolkit the build raises (``OSError: CUDA_HOME environment variable is
        not set``, torch 2.13.0+cpu), so what follows a call of it runs only where CUDA is."""
        if not isinstance(func.body, cst.IndentedBlock) or not _names_cuda_source(func.body):
            return False
        nested = {s.name.value: s for s in func.body.body if isinstance(s, cst.FunctionDef)}

        def builds(call: cst.Call) -> bool:
            name = self.ctx.qualname(call.func) or dotted_name(call.func) or ""
            return name in _CUDA_BUILDERS or (name.rsplit(".", 1)[-1] in ("load", "load_inline")
                                              and "cpp_extension" in name)

        for stmt in func.body.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for call in _statement_calls(stmt):
                inner = nested.get(dotted_name(call.func) or "")
                if builds(call) or (inner is not None and any(
                        isinstance(n, cst.Call) and builds(n) for n in walk(inner.body))):
                    return True
        return False

    def _returns_only_after_cuda_setup(self, func: cst.FunctionDef, body: Sequence[cst.BaseStatement],
                                       depth: int) -> bool:
        """Does each ``return`` of ``func`` follow, in its own block, a statement that sets up a CUDA-only flow,
        with no way to fall off its end (its last statement raises)? Jukebox's retry loop: ``for attempt in
        range(n): try: init_process_group(backend=backend); ...; torch.cuda.set_device(rank); return ...``, then
        ``raise RuntimeError("Failed to initialize NCCL")``."""
        if not body or not _ends_by_raise(func.body):
            return False
        ctx = self.ctx
        returns = [r for r in ctx.nodes(cst.Return) if ctx.enclosing_function(r) is func]
        if not returns or any(ctx.enclosing_function(y) is func for y in ctx.nodes(cst.Yield)):
            return False
        for ret in returns:
            line = ctx.parent(ret)
            block = ctx.parent(line)
            if not isinstance(block, cst.IndentedBlock) or not isinstance(line, cst.SimpleStatementLine):
                return False
            before = block.body[:next(i for i, s in enumerate(block.body) if s is line)]
            if not any(isinstance(s, cst.SimpleStatementLine)
                       and self._guards_what_follows(s, terminating=True, depth=depth) for s in before):
                return False
        return True

    @staticmethod
    def _default_switch(func: cst.FunctionDef, stmt: cst.BaseStatement) -> frozenset[str] | None:
        """``if not allow_no_cuda:`` (no ``else``) whose test is true at its parameter's default (``False``,
        ``None``; ``if strict:`` with ``strict=True``): the parameter, else None."""
        if not isinstance(stmt, cst.If) or stmt.orelse is not None:
            return None
        test, negated = stmt.test, False
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, negated = test.expression, True
        if not isinstance(test, cst.Name):
            return None
        param = next((p for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)
                      if p.name.value == test.value), None)
        if param is None or not isinstance(param.default, cst.Name) \
                or param.default.value not in ("True", "False", "None"):
            return None
        return frozenset({test.value}) if (param.default.value == "True") != negated else None

    def is_guarded(self, node: cst.CSTNode, depth: int = 2) -> bool:
        """Does ``node`` run only where CUDA is certain? A ``try`` counts when a handler that catches device
        errors recovers (:func:`_recovers`): one that only logs, prints or skips catches the failure, it takes
        no path around it."""
        if self.module_guarded:
            return True
        child = node
        for anc in self.ctx.ancestors(node):
            if self._guards_child(anc, child):
                return True
            if isinstance(anc, cst.FunctionDef):
                if (self._import_needs_cuda() and self._top_definition(anc)) or self._never_runs(anc):
                    return True  # a function of a module that raises at import without CUDA (never callable then),
                    # or a helper nothing calls or names (its body runs nowhere)
                owner = self.ctx.parent(self.ctx.parent(anc))
                if isinstance(owner, cst.ClassDef) and self._method_guarded(anc, owner, depth):
                    return True
                if depth > 0 and self._entered_guarded(anc, depth):
                    return True
                if not isinstance(owner, cst.FunctionDef) and not (
                        isinstance(owner, cst.ClassDef) and self.ctx.enclosing_function(owner) is not None):
                    return False
                # a function defined in a function exists only where its `def` ran: after a NCCL group or
                # an exit without CUDA in the outer function, it is guarded as its `def` is; so does a method of a
                # class defined in a function (a test's own autograd Function)
            child = anc
        return False

    def _method_guarded(self, method: cst.FunctionDef, owner: cst.ClassDef, depth: int) -> bool:
        """Does the class make its method run only where CUDA is certain: a GPU-only class
        (:meth:`_in_cuda_only_class`), one built only where CUDA is certain (an instance method: its instances live
        there), one the project names only there (captum's metaclass)?"""
        return self._in_cuda_only_class(method, owner) or (
            depth > 0 and instance_method(method) and self._constructed_guarded(owner, depth)) \
            or self._named_only_where_guarded(owner)

    def _named_only_where_guarded(self, cls: cst.ClassDef) -> bool:
        """Is the top-level class ``cls`` named only where CUDA is certain: no other file of the project mentions
        it, and each mention in its own (a call, a base, ``metaclass=``) is guarded? captum's
        ``DataParallelMeta``, the metaclass of a test class defined only under ``if torch.cuda.is_available() and
        torch.cuda.device_count() != 0:``: its methods run only where that class is defined. (Mentions in other
        files are not followed: there the guards devlint reads lost labelled bugs, YOLOv7's losses built by a
        training script.)"""
        key = id(cls)
        held = self._named_guarded.get(key)
        if held is None:
            self._named_guarded[key] = False  # while computing (a mention inside the class itself)
            name = cls.name.value
            project = self.ctx.project
            mentions = [n for n in self.ctx.nodes(cst.Name) if n.value == name and _reference(self.ctx, n)
                        and not any(a is cls for a in self.ctx.ancestors(n))]  # (not `super(Meta, cls)` in it)
            held = self.ctx.parent(cls) is self.ctx.module and bool(mentions) \
                and all(self.is_guarded(n, depth=0) for n in mentions) and not (
                    project is not None and project.mentioned_elsewhere(name, os.path.abspath(self.ctx.path)))
            self._named_guarded[key] = held
        return held

    def _in_cuda_only_class(self, method: cst.FunctionDef, owner: cst.ClassDef) -> bool:
        """Is ``method`` a method of a GPU-only class (CUDAAccelerator, one whose ``__init__`` sets the GPU: not
        that ``__init__`` itself), or any method, ``__init__`` included, of a class marked GPU-only
        (``@ray.remote(num_gpus=1)``, a test class skipped without CUDA)?"""
        if any(self._marks_cuda_only(d.decorator) for d in owner.decorators):
            return True
        if method.name.value in _FIXTURE_METHODS and self._tests_cuda_only(owner):
            return True
        if method.name.value not in ("setUp", "setUpClass", "__init__") and self._skips_without_cuda(owner):
            return True  # a method of a test class whose setUp skips every test without CUDA
        if method.name.value == "__init__":
            return False  # (its own CUDA-only call is where a run without CUDA stops: DEV006 reports it)
        if self._cuda_only_definition(owner):
            return True
        init = own_method(owner, "__init__")
        return init is not None and self._builds_cuda_only_object(init)

    def _tests_cuda_only(self, cls: cst.ClassDef) -> bool:
        """Is every test of the class marked to run only with CUDA (``@unittest.skipIf(disabled, "amp_C is
        unavailable")`` on each)? unittest runs setUp / tearDown around each test only: then none runs without
        CUDA. Kept per class: each line of its setUp asks."""
        held = self._cuda_only_tests.get(id(cls))
        if held is None:
            tests = [m for m in cls.body.body if isinstance(m, cst.FunctionDef) and m.name.value.startswith("test")]
            held = self._cuda_only_tests[id(cls)] = bool(tests) and all(
                any(self._marks_cuda_only(d.decorator) for d in m.decorators) for m in tests)
        return held

    def _skips_without_cuda(self, cls: cst.ClassDef, depth: int = 3) -> bool:
        """Does the class's ``setUp`` (its own, else that of a base class of the file, ``depth`` classes up) skip
        every test without CUDA before it can return: ``if not torch.cuda.is_available(): raise
        unittest.SkipTest(...)`` (fairscale's ``DistributedTest``), ``self.skipTest(...)``, ``pytest.skip(...)``?
        unittest runs it before each test, so the class's tests and the helpers they call run only with CUDA."""
        key = id(cls)
        held = self._skipping.get(key)
        if held is None:
            self._skipping[key] = False  # recursion through a cycle of bases: no
            setup = own_method(cls, "setUp")
            if setup is not None:
                held = False
                body = setup.body.body if isinstance(setup.body, cst.IndentedBlock) else []
                for stmt in body:
                    if _returns(stmt):
                        break
                    if self._guards_what_follows(stmt, terminating=True, depth=0):
                        held = True
                        break
            else:
                held = depth > 0 and any(guards(other)._skips_without_cuda(base, depth - 1)
                                         for other, base in self._base_classes(cls))
            self._skipping[key] = held
        return held

    def _base_classes(self, cls: cst.ClassDef) -> list[tuple[Context, cst.ClassDef]]:
        """The base classes of ``cls`` that are the project's: of its file (by name), or imported from another
        of its modules (fairscale's ``from .test_fsdp import DistributedTest``)."""
        names = {n for b in cls.bases if (n := dotted_name(b.value)) is not None}
        found = [(self.ctx, c) for c in self.ctx.nodes(cst.ClassDef) if c.name.value in names and c is not cls]
        for name in names - {c.name.value for _, c in found}:
            definition = resolve_definition(self.ctx, name)
            if definition is not None and isinstance(definition[1], cst.ClassDef) and definition[1] is not cls:
                found.append((definition[0], definition[1]))
        return found

    def _nccl_group(self, call: cst.Call) -> bool:
        """Does ``init_process_group(...)`` start a NCCL group?"""
        backend = call.args[0].value if call.args and call.args[0].keyword is None else next(
            (a.value for a in call.args if a.keyword is not None and a.keyword.value == "backend"), None)
        return backend is not None and (self._backend_text(backend) or "").lower() == devices.NCCL

    def _backend_text(self, backend: cst.BaseExpression) -> str | None:
        """The process group's backend as written (``"nccl"``), or the default of the command-line option it
        reads (``backend=args.dist_backend`` with ``--dist-backend`` defaulting to ``"nccl"``: what a run that
        does not ask for another one uses)."""
        text = string_value(backend)
        if text is not None or not isinstance(backend, cst.Attribute) or not isinstance(backend.value, cst.Name):
            return text
        option = self.ctx.shared("guards.options", command_line_options).get(backend.attr.value)
        if option is None and backend.attr.value == devices.LAUNCHER_BACKEND and self.ctx.project is not None \
                and self.ctx.project.launcher_backend:
            return devices.NCCL  # an option no file of the project defines: the launcher library's parser's
        default = option.keywords.get("default") if option is not None else None
        return string_value(default) if default is not None else None

    def _import_needs_cuda(self) -> bool:
        """Does the module stop at import without CUDA: a statement of its top level exits or raises when there
        is none (``if not torch.cuda.is_available(): sys.exit(...)``) or asserts that there is one
        (``assert torch.cuda.is_available(), "You need an Nvidia GPU"``)? Not a CUDA-only flow started there
        (set_device, NCCL): that is no stop. Computed once."""
        if self._stops_at_import is None:
            self._stops_at_import = any(
                (isinstance(stmt, cst.If) or (isinstance(stmt, cst.SimpleStatementLine) and any(
                    isinstance(s, cst.Assert) for s in stmt.body)))
                and self._guards_what_follows(stmt, terminating=True, depth=0) for stmt in self.ctx.module.body)
        return self._stops_at_import

    def _top_definition(self, func: cst.FunctionDef) -> bool:
        """Is ``func`` a function of the module's top level or a method of one of its top-level classes?"""
        parent = self.ctx.parent(func)
        if parent is self.ctx.module:
            return True
        owner = self.ctx.parent(parent) if isinstance(parent, cst.IndentedBlock) else None
        return isinstance(owner, cst.ClassDef) and self.ctx.parent(owner) is self.ctx.module

    def _entered_guarded(self, func: cst.FunctionDef, depth: int) -> bool:
        """Is every call of ``func`` in the project guarded (``main()`` called after set_device and a NCCL
        process group, a helper called only under ``if torch.cuda.is_available():``)? A function nobody in
        the project calls (an entry point, a public API) is not."""
        key = (id(func), depth)  # the answer depends on how deep it may look: one entry per depth
        if key in self._entered:
            return self._entered[key]
        self._entered[key] = False  # recursion: assume not while computing
        sites = call_sites(self.ctx, func)
        checking: set[int] = set()  # the calls handing it to a function of the project that checks CUDA first

        def checks_first(call: cst.Call) -> bool:
            if depth > 0 and self._callee_requires_cuda(call, depth):
                checking.add(id(call))  # gsplat's cli(main, args): `assert torch.cuda.is_available()`, then main
                return True
            return False

        handed = _handed_to_runner(self.ctx, func, checks_first)
        if sites is None or handed is None:
            sites, handed = [], []
        entries = [*((site_ctx, call) for site_ctx, call in sites), *((self.ctx, call) for call in handed)]
        result = bool(entries) and all(id(call) in checking or guards(site_ctx).is_guarded(call, depth - 1)
                                       for site_ctx, call in entries)
        self._entered[key] = result
        return result

    def _constructed_guarded(self, cls: cst.ClassDef, depth: int) -> bool:
        """Is every construction of ``cls`` in the project guarded (a trainer built only after set_device and a
        NCCL group; :meth:`constructions`)? A class nobody in the project builds is not."""
        key = (id(cls), depth)
        if key in self._entered:
            return self._entered[key]
        self._entered[key] = False  # recursion: assume not while computing
        sites = self.constructions(cls)
        result = bool(sites) and all(guards(site_ctx).is_guarded(call, depth - 1)
                                     for site_ctx, call in sites or [])
        self._entered[key] = result
        return result

    def _guards_child(self, anc: cst.CSTNode, child: cst.CSTNode) -> bool:
        """Does ``anc`` guard its part ``child``?"""
        branch = self._branch_guards(anc, child)
        if branch is not None:
            return branch
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            return self._cuda_only_definition(anc)
        if isinstance(anc, cst.Try) and child is anc.body:
            return any(_catches_device_errors(h) and _recovers(h) for h in anc.handlers)
        if isinstance(anc, cst.ExceptHandler) and child is anc.body:
            return self._out_of_memory_fallback(anc)
        if isinstance(anc, (cst.IndentedBlock, cst.Module)):
            return self._after_guard(anc, child) or self._initializes_apex_amp(anc) or self._after_exit(anc, child)
        return isinstance(anc, cst.Call) and self._marked_case(anc, child)

    def _branch_guards(self, anc: cst.CSTNode, child: cst.CSTNode) -> bool | None:
        """Does the condition of ``anc`` (an ``if``, ``while``, conditional expression, ``and`` / ``or``, or
        comprehension) guard its part ``child``? None when ``anc`` is none of those."""
        if isinstance(anc, (cst.If, cst.While)) and child is not anc.test:
            if child is anc.body:
                return self.polarity(anc.test) is Polarity.AVAILABLE or self._off_flag(anc.test) \
                    or self._never_true(anc.test) or self._chosen_only_where_guarded(anc.test)
            # the else of `if not cuda_ok:`, of `if args.cpu:` where --cpu is always on
            return self._implies_unavailable(anc.test) or (isinstance(anc, cst.If) and self._always_on(anc.test))
        if isinstance(anc, cst.IfExp) and child is not anc.test and (
                (self._never_true(anc.test) or self._off_flag(anc.test)) if child is anc.body
                else self._always_on(anc.test)):
            return True  # "cpu" if args.cpu else "cuda" where --cpu is always on; "cuda" if use_cuda else "cpu"
            # where the script binds use_cuda only to False
        if isinstance(anc, cst.IfExp) and child is not anc.test:
            found = self.polarity(anc.test) if child is anc.body else (
                Polarity.AVAILABLE if self._implies_unavailable(anc.test) else self.falsity(anc.test))
            other = anc.orelse if child is anc.body else anc.body
            # "cuda" if <a condition devlint cannot read> else "cpu": a choice with a fallback
            return found is Polarity.AVAILABLE or (found is Polarity.UNKNOWN and _other_device(other))
        if isinstance(anc, cst.BooleanOperation) and child is anc.right:
            if isinstance(anc.operator, cst.And):
                return self.polarity(anc.left) is Polarity.AVAILABLE
            return self._implies_unavailable(anc.left)  # `a or b`: b runs when a is false
        if isinstance(anc, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)) and child is not anc.for_in:
            return self._comprehension_guards(anc.for_in)  # [name(d) for d in ds if d.type == "cuda"]
        if isinstance(anc, cst.For) and child is anc.body:
            return self._empty_without_cuda(anc.iter)  # for i in range(torch.cuda.device_count()):
        return None

    def _chosen_only_where_guarded(self, test: cst.BaseExpression) -> bool:
        """``if mode == "cpu":`` where ``mode`` is a parameter of the function around it whose default is another
        value, and every call of the function in the project that may pass that value is guarded (YOLOX's
        ``get_assignments(..., mode="gpu")``, called with ``"cpu"`` only in the handler of its CUDA out-of-memory
        fallback, where CUDA is there): the branch runs only there. A function nobody in the project calls (a
        public API) is not."""
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                and isinstance(test.comparisons[0].operator, cst.Equal)):
            return False
        held = self._chosen.get(id(test))
        if held is None:  # (asked again for every line under the `if`: once per test)
            held = self._chosen[id(test)] = self._chosen_uncached(test)
        return held

    def _chosen_uncached(self, test: cst.Comparison) -> bool:
        left, right = test.left, test.comparisons[0].comparator
        name, value = (left, string_value(right)) if isinstance(left, cst.Name) else (right, string_value(left))
        func = self.ctx.enclosing_function(test)
        if not isinstance(name, cst.Name) or value is None or func is None:
            return False
        param = next((p for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)
                      if p.name.value == name.value), None)
        scope = bindings(self.ctx).scopes.get(func)
        if param is None or param.default is None or string_value(param.default) in (None, value) or scope is None \
                or any(b.node is not param for b in scope.bindings.get(name.value, [])):
            return False  # (no string default, the same value as default, or rebound in the function)
        sites = call_sites(self.ctx, func)
        if not sites:
            return False
        index, is_method = parameter_position(self.ctx, func, param)
        entered = False  # (a branch no call enters is left to the callers outside the project: not judged)
        for site_ctx, call in sites:
            if any(a.star for a in call.args):
                return False
            bound = is_method and isinstance(call.func, cst.Attribute)
            passed = argument_for(call, name.value, index, bound)
            if passed is None or string_value(passed) not in (None, value):
                continue  # leaves the default or passes another value: the branch does not run for this call
            if not guards(site_ctx).is_guarded(call, depth=0):
                return False
            entered = True
        return entered

    def _never_true(self, test: cst.BaseExpression) -> bool:
        """``not args.cpu`` where ``args.cpu`` is always on (:meth:`_always_on`)."""
        return isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) \
            and self._always_on(test.expression)

    def _always_on(self, expr: cst.BaseExpression, depth: int = 1) -> bool:
        """Is ``expr`` true on every run as shipped: ``args.cpu`` of an option the file declares
        ``action="store_true", default=True`` (argparse has no way to turn it off: RetinaFace's
        convert_to_onnx.py, AdaBins' ``--distributed``) and never assigns, or a parameter of the enclosing
        function that it never rebinds and for which every call in the project passes such a value
        (``load_model(net, path, args.cpu)``)?"""
        key = (id(expr), depth)  # kept: every line of the branch asks about the same test
        held = self._always.get(key)
        if held is None:
            held = self._always[key] = self._always_on_uncached(expr, depth)
        return held

    def _always_on_uncached(self, expr: cst.BaseExpression, depth: int) -> bool:
        ctx = self.ctx
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            option = ctx.shared("guards.options", command_line_options).get(expr.attr.value)
            return option is not None and _stuck_on(option) and not any(
                isinstance(t.target, cst.Attribute) and t.target.attr.value == option.dest
                for t in ctx.nodes(cst.AssignTarget))
        func = ctx.enclosing_function(expr)
        if not isinstance(expr, cst.Name) or depth <= 0 or func is None:
            return False
        param = next((p for p in (*func.params.params, *func.params.kwonly_params) if p.name.value == expr.value), None)
        if param is None or any(isinstance(ctx.parent(n), cst.AssignTarget) and n.value == expr.value
                                for n in walk(func.body) if isinstance(n, cst.Name)):
            return False
        values = passed_values(ctx, param)
        return bool(values) and all(guards(site)._always_on(value, depth - 1) for site, value in values or [])

    def _off_flag(self, test: cst.BaseExpression) -> bool:
        """Is ``test`` a name that a script binds only to ``False``, at its top level (LPIPS's ``use_gpu = False  #
        Whether to use GPU`` then ``if(use_gpu): loss_fn.cuda()``)? The branch never runs as shipped: the user
        turns it on where there is a GPU. Not in a module others may import (they could set the flag), and not a
        name bound any other way (a parameter, a loop, an import, a ``global`` in a function)."""
        if not isinstance(test, cst.Name):
            return False
        name = test.value
        held = self._off_flags.get(name)
        if held is None and not self._imported_nowhere():
            held = self._off_flags[name] = False
        if held is None:
            values = []
            for node in self.ctx.nodes(cst.Name):
                if node.value != name or node is test:
                    continue
                parent = self.ctx.parent(node)
                if isinstance(parent, cst.AssignTarget):
                    assign = self.ctx.parent(parent)
                    values.append(isinstance(assign, cst.Assign) and self.ctx.parent(self.ctx.parent(assign))
                                  is self.ctx.module and isinstance(assign.value, cst.Name)
                                  and assign.value.value == "False")
                elif isinstance(parent, (cst.Param, cst.ImportAlias, cst.AsName, cst.Global, cst.NameItem,
                                         cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)):
                    values.append(False)
            held = self._off_flags[name] = bool(values) and all(values)
        return held

    def _never_runs(self, func: cst.FunctionDef) -> bool:
        """Is ``func`` a helper that nothing can call: a function defined in a function whose name that function
        never reads (DeepSDF's ``empirical_stat``, its one use commented out)? Not a decorated function (a
        decorator may register it); of a module's top level, only a private one (``_encode``) that nothing in the
        project names: runners call public functions by name, even of a script no file imports and that never
        names them (``fire.Fire()``, ``nose.runmodule()``, ``torch.hub``'s ``hubconf.py``)."""
        held = self._dead.get(id(func))
        if held is None:  # kept: every guard question about a line of the function asks it again
            held = self._dead[id(func)] = not func.decorators and self._unnamed(func)
        return held

    def _unnamed(self, func: cst.FunctionDef) -> bool:
        parent = self.ctx.parent(func)
        owner = self.ctx.parent(parent) if isinstance(parent, cst.IndentedBlock) else None
        name = func.name.value
        if parent is self.ctx.module and _private(name) and os.path.basename(self.ctx.path) != "__init__.py":
            # a private function of a module's top level (lufficc's SSD `_encode`): runners call public names, and
            # nothing in the file or the project names this one (not of a package's __init__.py: its private
            # names are the package's attributes, torch.cuda._compile_kernel, which tests outside the tree call)
            project = self.ctx.project
            return not any(isinstance(n, cst.Name) and n.value == name and n is not func.name
                           for n in self.ctx.nodes(cst.Name)) and name not in self._strings_named() \
                and not (project is not None and project.mentioned_elsewhere(name, os.path.abspath(self.ctx.path)))
        if not isinstance(owner, cst.FunctionDef):
            return False
        return not any(isinstance(n, cst.Name) and n.value == name and n is not func.name for n in walk(owner)) \
            and name not in self._strings_named()

    def _strings_named(self) -> frozenset[str]:
        """The module's strings that are identifiers (``getattr(module, "fliplr")``, ``"fliplr"`` in ``__all__``):
        a function named in one may be called through it."""
        if self._identifiers is None:
            self._identifiers = frozenset(text for s in self.ctx.nodes(cst.SimpleString)
                                          if (text := string_value(s)) is not None and text.isidentifier())
        return self._identifiers

    def _imported_nowhere(self) -> bool:
        """Can nothing import the file: no other file of the project imports a module of its name (linted alone:
        it is a script)? Computed once per module."""
        if self._unimported is None:
            project = self.ctx.project
            stem = os.path.splitext(os.path.basename(self.ctx.path))[0]
            if project is None:
                self._unimported = is_script(self.ctx.module)
            else:
                self._unimported = stem != "__init__" and not project.imported_elsewhere(stem, self.ctx.path)
        return self._unimported

    def _comprehension_guards(self, clause: cst.CompFor | None) -> bool:
        """Does a comprehension's ``if`` clause (of any of its ``for`` clauses) imply an accelerator? Its element is
        built only for the items that pass (``[torch.cuda.get_device_name(d.index) for d in devices if d.type ==
        "cuda"]``)."""
        while clause is not None:
            if any(self.polarity(cond.test) is Polarity.AVAILABLE for cond in clause.ifs) \
                    or self._empty_without_cuda(clause.iter):
                return True
            clause = clause.inner_for_in
        return False

    def _empty_without_cuda(self, iterable: cst.BaseExpression) -> bool:
        """Is ``iterable`` empty without a GPU: ``range(n)`` whose ``n`` is nonzero only with CUDA
        (``range(torch.cuda.device_count())``), a DataParallel's ``self.device_ids`` (or a slice of it), or a
        ``zip`` / ``enumerate`` of one? A loop or comprehension over it runs its body only where CUDA is."""
        if isinstance(iterable, cst.Subscript):
            return self._empty_without_cuda(iterable.value)
        if self._data_parallel_devices(iterable):
            return True
        if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name)
                and self.ctx.qualname(iterable.func) is None and iterable.args
                and not any(a.star or a.keyword is not None for a in iterable.args)):
            return False
        name, args = iterable.func.value, [a.value for a in iterable.args]
        if name == "zip":  # as short as its shortest argument
            return any(self._empty_without_cuda(a) for a in args)
        if name in ("enumerate", "list", "tuple", "sorted", "reversed"):
            return self._empty_without_cuda(args[0])
        return name == "range" and len(args) == 1 and self.polarity(args[0]) is Polarity.AVAILABLE

    def _data_parallel_devices(self, expr: cst.BaseExpression) -> bool:
        """``self.device_ids`` in a subclass of ``nn.DataParallel``: DataParallel sets it to ``[]`` where there is no
        CUDA, whatever it was given (checked on torch 2.13.0+cpu: ``DataParallel(m, device_ids=[0, 1]).device_ids
        == []``)."""
        if not (isinstance(expr, cst.Attribute) and expr.attr.value == "device_ids" and isinstance(expr.value, cst.Name)
                and expr.value.value == "self"):
            return False
        cls = next((a for a in self.ctx.ancestors(expr) if isinstance(a, cst.ClassDef)), None)
        return cls is not None and any((self.ctx.qualname(b.value) or dotted_name(b.value) or "").split(".")[-1]
                                       == "DataParallel" for b in cls.bases)

    def _marked_case(self, call: cst.Call, child: cst.CSTNode) -> bool:
        """Is ``child`` a value of ``pytest.param(torch.device("cuda"), marks=RunIf(min_cuda_gpus=1))``, a test
        case run only with CUDA?"""
        return isinstance(child, cst.Arg) and child.keyword is None \
            and self.ctx.qualname(call.func) == "pytest.param" \
            and any(a.keyword is not None and a.keyword.value == "marks" and self._marks_cuda_only(a.value)
                    for a in call.args)

    def _after_guard(self, block: cst.IndentedBlock | cst.Module, child: cst.CSTNode) -> bool:
        """Is ``child`` a statement of ``block`` after one that guards what follows it?"""
        index = self._statement_index(block).get(id(child))
        if index is None:
            return False
        first = self._first_guard_index(block, block.body)
        return first is not None and index > first

    def _after_exit(self, block: cst.IndentedBlock | cst.Module, child: cst.CSTNode) -> bool:
        """Is ``child`` a statement of ``block`` after one that always leaves it (``return``, ``raise``,
        ``continue``, ``break``, ``sys.exit()``, ``pytest.skip()``, a test's ``self.skipTest(...)``)? It never
        runs (pytorch3d's glTF test: ``self.skipTest("Data not available")`` before the rest of its body)."""
        index = self._statement_index(block).get(id(child))
        key = id(block)
        if key not in self._block_exit:
            self._block_exit[key] = next((i for i, stmt in enumerate(block.body)
                                          if self._leaves(stmt, terminating=False, error_calls=False)), None)
        first = self._block_exit[key]
        return index is not None and first is not None and index > first

    def _initializes_apex_amp(self, block: cst.IndentedBlock | cst.Module) -> bool:
        """Is ``block`` a function's body or a module's top level that calls apex's ``amp.initialize(...)`` in a
        statement of its own? amp.initialize raises for any parameter not on CUDA ("you need to provide a model
        with parameters located on a CUDA device before passing it no matter what optimization level you chose":
        apex's ``check_params_fp32``), so the whole block, before the call as after it, is CUDA-only by design."""
        key = id(block)
        held = self._apex_amp.get(key)
        if held is None:
            held = self._apex_amp[key] = (isinstance(block, cst.Module) or isinstance(
                self.ctx.parent(block), cst.FunctionDef)) and any(
                self.ctx.qualname(call.func) == devices.APEX_AMP_INITIALIZE for stmt in block.body
                if isinstance(stmt, cst.SimpleStatementLine) for call in _statement_calls(stmt))
        return held

    def _statement_index(self, block: cst.IndentedBlock | cst.Module) -> dict[int, int]:
        """Each statement of ``block`` by identity -> its index (a dict per block: a scan per ask was
        quadratic in a long function)."""
        key = id(block)
        found = self._indices.get(key)
        if found is None:
            found = self._indices[key] = {id(stmt): i for i, stmt in enumerate(block.body)}
        return found


def _strings(expr: cst.BaseExpression) -> list[str]:
    """The string(s) of a literal or of a tuple/list/set of literals."""
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        values = [string_value(el.value) for el in expr.elements]
        return [v for v in values if v is not None] if all(v is not None for v in values) else []
    value = string_value(expr)
    return [value] if value is not None else []


def _other_device(expr: cst.BaseExpression) -> bool:
    """A device that is not CUDA: "cpu", "mps", torch.device("cpu"), or a choice among such."""
    if isinstance(expr, cst.IfExp):
        return _other_device(expr.body) or _other_device(expr.orelse)
    if isinstance(expr, cst.Call) and expr.args:
        return _other_device(expr.args[0].value)
    value = string_value(expr)
    return value is not None and bool(_OTHER_DEVICE.match(value.strip()))


def _statement_calls(stmt: cst.SimpleStatementLine) -> list[cst.Call]:
    """The calls a simple statement makes at its top: ``f(...)``, ``x = f(...)``."""
    calls = []
    for small in stmt.body:
        value = small.value if isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign)) else None
        if isinstance(value, cst.Call):
            calls.append(value)
    return calls


def _catches_device_errors(handler: cst.ExceptHandler) -> bool:
    if handler.type is None or isinstance(handler.type, cst.Tuple):
        return True
    return (dotted_name(handler.type) or "").split(".")[-1] in devices.GUARD_EXCEPTIONS


def ends_by_raising(handler: cst.ExceptHandler) -> bool:
    """Does the handler end by raising (again, or another error)?"""
    return _ends_by_raise(handler.body)


def _ends_by_raise(suite: cst.BaseSuite) -> bool:
    """Is the last statement of ``suite`` a ``raise``?"""
    body = suite.body if isinstance(suite, cst.IndentedBlock) else [suite]
    last = body[-1] if body else None
    return isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and bool(last.body) \
        and isinstance(last.body[-1], cst.Raise)


def _recovers(handler: cst.ExceptHandler) -> bool:
    """Does the handler recover: work of its own (a CPU fallback), a ``pass`` or ``return`` that goes on
    without the result on purpose; not a handler that only logs or prints the error, skips to the next
    iteration (``except: continue``: every batch skipped without CUDA) or raises again?"""
    if ends_by_raising(handler):
        return False  # whatever it did first (a debugger, a checkpoint), the handler ends by raising again
    body = handler.body.body if isinstance(handler.body, cst.IndentedBlock) else [handler.body]
    for stmt in body:
        small = stmt.body if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else None
        if small is None:
            return True  # an if, a loop, a with: work of its own
        for part in small:
            if isinstance(part, (cst.Continue, cst.Break, cst.Raise)):
                continue
            if isinstance(part, cst.Expr) and isinstance(part.value, cst.Call) \
                    and _REPORTS.search(dotted_name(part.value.func) or ""):
                continue
            return True
    return False


# calls that only report a failure: print, logging, warnings, traceback
_REPORTS = re.compile(r"^(print|warn|warnings\.\w+|traceback\.\w+|(logging|logger|log|LOGGER|_logger)\.\w+)$")


def _parameter_places(ctx: Context, func: cst.FunctionDef,
                      names: frozenset[str]) -> tuple[tuple[str, int | None, bool], ...]:
    """Where a call passes each of ``names``: (name, its positional index or None, whether ``func`` is a method:
    project.parameter_position), as :meth:`Guards.requires_cuda_unless`'s answer is kept for other files."""
    params = {p.name.value: p for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)}
    return tuple((name, *parameter_position(ctx, func, params[name])) for name in sorted(names))


def _returns_with_cuda(call: cst.Call, places: object) -> bool:
    """Does the called function return only with CUDA, given what ``call`` passes: it leaves each parameter it
    relies on at its default (``places``: :func:`_parameter_places`, None when it may return without CUDA;
    project.leaves_default: not by keyword, by position, nor maybe through ``*args`` / ``**kwargs``)?"""
    if not isinstance(places, tuple):
        return bool(places)
    return all(leaves_default(call, name, index, is_method == _CONSTRUCTED
                              or (is_method and isinstance(call.func, cst.Attribute)))
               for name, index, is_method in places)


# The "is a method" of a parameter place of a class's __init__ (:meth:`Guards._callee_requires_cuda`): its
# construction binds the object to the first parameter, whether the class is called by name or as an attribute
_CONSTRUCTED = 2


def _reference(ctx: Context, name: cst.Name) -> bool:
    """Is ``name`` a reference to what the name is bound to: not the name a ``class`` or ``def`` defines, an
    attribute (``cog.Predictor``), a keyword argument's keyword or an import's alias?"""
    parent = ctx.parent(name)
    if isinstance(parent, cst.Attribute):
        return parent.value is name
    if isinstance(parent, (cst.ClassDef, cst.FunctionDef)):
        return parent.name is not name
    if isinstance(parent, cst.Arg):
        return parent.keyword is not name
    return not isinstance(parent, (cst.ImportAlias, cst.AsName, cst.Param))


def _returns(stmt: cst.CSTNode) -> bool:
    """Does ``stmt`` hold a ``return`` of its own function (not of a function or lambda nested in it)?"""
    stack: list[cst.CSTNode] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Return):
            return True
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(node.children)
    return False


def _constant(expr: cst.BaseExpression) -> bool:
    return (isinstance(expr, cst.Name) and expr.value in ("True", "False")) or isinstance(expr, (cst.Integer,))


def _on_by_default(default: cst.BaseExpression) -> bool | None:
    """A flag's default: True / a GPU count of 1 or more is on, False / 0 / None off, else unknown."""
    if isinstance(default, cst.Name) and default.value in ("True", "False", "None"):
        return default.value == "True"
    number = _number(default)
    return number >= 1 if number is not None else None


def _number(expr: cst.BaseExpression) -> float | None:
    if isinstance(expr, cst.Integer):
        return float(int(expr.value, 0))
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _number(expr.expression)
        return -inner if inner is not None else None
    return None


# custom autograd Functions, and what binds a compiled extension's module (mmcv's ext_loader.load_ext, torch's
# cpp_extension.load / load_inline) or names one (pointnet2_cuda, _ext, _C)
_AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
_EXTENSION_LOADERS = frozenset({"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"})
_EXTENSION_MODULE = re.compile(r"(?:^|[._])(?:ext|cuda|C)$")


# A flag that turns the GPU off (`--no-cuda`, `disable_cuda`): named for the GPU, but no opt-in to it
_NEGATED_GPU_FLAG = re.compile(r"(?i)^_*(?:no|disable|disabled|without|not|skip)_?(?:cuda|gpus?)$")
_DISTRIBUTED_FLAGS = frozenset({"distributed", "is_distributed", "use_distributed", "ddp", "use_ddp",
                                "multiprocessing_distributed"})


def _distributed_flag(name: str) -> bool:
    """Is ``name`` a flag that says the run is distributed (``args.distributed``, a ``distributed`` parameter,
    ``opt["dist"]`` read as ``opt.dist``)? In a project whose process group is NCCL, the branch it takes runs in
    that group, on CUDA, as ``get_world_size() > 1`` does. A bare ``dist`` is most often ``torch.distributed``
    itself: only an attribute or key of that name counts."""
    last = name.rsplit(".", 1)[-1]
    return last in _DISTRIBUTED_FLAGS or (last == "dist" and "." in name)


def _launches_native_cuda_kernels(ctx: Context) -> bool:
    """Does the module load a native library at its top (``lib = ctypes.CDLL("kernels/libbitnet.so")``) and hand
    it a raw CUDA stream (``ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)``)? Its kernels are CUDA
    kernels and the module a launcher for them: it runs only with CUDA, as a module of ``@triton.jit`` kernels
    does."""
    if not any(a.attr.value == "cuda_stream" for a in ctx.nodes(cst.Attribute)):
        return False
    return any(isinstance(small.value, cst.Call) and ctx.qualname(small.value.func) in devices.NATIVE_LIBRARY_LOADERS
               for stmt in ctx.module.body if isinstance(stmt, cst.SimpleStatementLine)
               for small in stmt.body if isinstance(small, (cst.Assign, cst.AnnAssign, cst.Expr)))


def own_imports(ctx: Context) -> frozenset[str]:
    """The modules the file being linted imports unconditionally at its top (project.top_level_imports, the
    reading the import walk uses for every other file): kept from the pre-filter's parse when the text is the
    same, else read from this text."""
    from devlint import screen

    held = ctx.project.own_top_imports(ctx) if ctx.project is not None else None
    if held is not None:
        return held
    tree = screen.parse(ctx.module.code.encode("utf-8", "surrogateescape"))
    return top_level_imports(tree) if tree is not None else frozenset()


class _Flags:
    """Defaults of command-line flags (argparse ``add_argument``) and of function parameters named for the
    GPU: a flag that is on by default is a setting, not a check."""

    def __init__(self, ctx: Context) -> None:
        self.defaults: dict[str, bool] = {}
        for call in ctx.nodes(cst.Call):
            self._argparse(call)
        self.ctx = ctx
        self.params: dict[str, list[tuple[cst.Param, bool]]] = {}
        for func_node in ctx.nodes(cst.FunctionDef):
            for param in (*func_node.params.params, *func_node.params.kwonly_params):
                on = _on_by_default(param.default) if param.default is not None else None
                if on is not None and devices.is_guard_text(param.name.value):
                    self.params.setdefault(param.name.value, []).append((param, on))
            for decorator in func_node.decorators:
                option = decorator.decorator
                if isinstance(option, cst.Call) and (dotted_name(option.func) or "").split(".")[-1] == "option":
                    self._option(option)  # click.option("--gpus", default=1)

    def _option(self, call: cst.Call) -> None:
        options = [string_value(a.value) for a in call.args if a.keyword is None]
        names = [o for o in options if o and not o.startswith("-")] or [
            (o or "").lstrip("-").replace("-", "_") for o in options if o and o.startswith("--")]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        on = _on_by_default(keywords["default"]) if "default" in keywords else None
        if names and on is not None:
            self.defaults[names[0]] = on
        if names and "is_flag" in keywords and "default" not in keywords:
            self.defaults[names[0]] = False

    def _argparse(self, call: cst.Call) -> None:
        option = command_line_option(call)
        if option is None:
            return
        action = option.text("action")
        default = option.keywords.get("default")
        on = _on_by_default(default) if default is not None else None
        if on is not None:
            self.defaults[option.dest] = on
        elif action == "store_false":
            self.defaults[option.dest] = True
        elif action == "store_true":
            self.defaults[option.dest] = False

    def default(self, name: str) -> bool | None:
        """A flag's default (a command-line flag's; a parameter's when some call relies on it: a
        ``use_gpu=True`` every caller overrides with a checked value is not on by default)."""
        short = name.split(".")[-1]
        if short in self.defaults:
            return self.defaults[short]
        for param, on in self.params.get(short, []):
            if relies_on_default(self.ctx, param):
                self.defaults[short] = on
                return on
        return None


# torch's builders of C++/CUDA extensions (a build from .cu sources needs the CUDA toolkit)
_CUDA_BUILDERS = frozenset({"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"})
# A folder named for the GPU (not "accelerate": a package of that library's name is not one), or for NVIDIA's
# TensorRT, whose engines run on an NVIDIA GPU only (`trtllm/`, `triton_trtllm/`, `convert_tensorrt/`)
_GPU_FOLDER = re.compile(r"cuda|gpu|(?:^|[_\-])(?:trt|tensorrt)", re.IGNORECASE)


def _names_cuda_source(node: cst.CSTNode) -> bool:
    """Does ``node`` hold a string naming a ``.cu`` file (``"welford.cu"``, ``srcpath / "softmax_cuda.cu"``)?"""
    return any(isinstance(n, cst.SimpleString) and (string_value(n) or "").endswith(".cu") for n in walk(node))


def _builds_from_cuda_sources(call: cst.Call) -> bool:
    """A ``cpp_extension.load(...)`` / ``load_inline(...)`` given ``.cu`` sources or ``cuda_sources=``."""
    return any((a.keyword is not None and a.keyword.value == "cuda_sources") or _names_cuda_source(a)
               for a in call.args)


def _given_replicas(call: cst.Call) -> bool:
    """``DistributedSampler(ds, num_replicas=n, rank=r)``: told its place, it asks no process group."""
    return {a.keyword.value for a in call.args if a.keyword is not None} >= {"num_replicas", "rank"} \
        or (len(call.args) >= 3 and all(a.keyword is None for a in call.args[:3]))


def guards(ctx: Context) -> Guards:
    return ctx.shared("guards", Guards)


# a call that runs the function handed to it as its first argument, there and then (ignite's
# `idist.Parallel(...).run(fn, ...)`, `mp.spawn(fn, ...)`, `start_processes(fn, ...)`, `launch(fn, ...)`; a
# benchmark runner, fvcore's `benchmark(fn, "NAME", kwargs_list)` and `timeit.timeit(fn, number=n)`)
_RUNNERS = frozenset({"run", "spawn", "start_processes", "launch", "benchmark", "timeit"})


def _handed_to_runner(ctx: Context, func: cst.FunctionDef,
                      runs: Callable[[cst.Call], bool] | None = None) -> list[cst.Call] | None:
    """The calls of ``func``'s file that run it as a callback (a function of the module handed by name as
    the first argument of ``parallel.run(fn, ...)``, ``mp.spawn(fn, ...)``, or of a call ``runs`` accepts);
    None when the file also uses its name otherwise (stored, handed to something that calls it later) or
    another file of the project imports it (it may be handed to a runner there: too far to look)."""
    if ctx.parent(func) is not ctx.module:
        return []
    name = func.name.value
    found = [call for call in ctx.nodes(cst.Call)
             if call.args and call.args[0].keyword is None and not call.args[0].star
             and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == name
             and ((dotted_name(call.func) or "").split(".")[-1] in _RUNNERS or (runs is not None and runs(call)))]
    if not found:
        return found
    handed = {id(call.args[0].value) for call in found}
    for ref in ctx.nodes(cst.Name):
        parent = ctx.parent(ref)
        if ref.value == name and ref is not func.name and id(ref) not in handed \
                and not (isinstance(parent, cst.Call) and parent.func is ref):
            return None  # also kept or handed elsewhere (a list of callbacks, an event handler): called later
    project = ctx.project
    if project is None:
        return found
    home = os.path.abspath(ctx.path)
    module = re.escape(os.path.splitext(os.path.basename(home))[0].encode())
    word = re.escape(name.encode())
    imported = re.compile(rb"\b" + module + rb"\b[^\n]*\bimport\b[^\n]*\b" + word + rb"\b|\b" + module
                          + rb"\." + word + rb"\b")
    for path in project.paths:
        if path != home and name.encode() in (data := project.read(path) or b"") and imported.search(data):
            return None
    return found


def instance_method(func: cst.FunctionDef) -> bool:
    """A method called on an instance: not a static or class method."""
    return not any(dotted_name(d.decorator) in ("staticmethod", "classmethod") for d in func.decorators)


def _collective_functions(ctx: Context) -> frozenset[cst.FunctionDef]:
    """The functions of the module that run a ``torch.distributed`` collective themselves (one scan)."""
    found: set[cst.FunctionDef] = set()
    for call in ctx.nodes(cst.Call):
        if (ctx.qualname(call.func) or dotted_name(call.func)) in devices.DISTRIBUTED_COLLECTIVES:
            func = ctx.enclosing_function(call)
            if func is not None:
                found.add(func)
    return frozenset(found)


def _positive_number(expr: cst.BaseExpression) -> bool:
    """An integer or float literal above zero (``1``, ``0x10``, ``0.5``)."""
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0) > 0
    return isinstance(expr, cst.Float) and float(expr.value) > 0


def _requested(func: cst.FunctionDef) -> set[str]:
    """The names of ``func``'s parameters: for a test, the pytest fixtures it requests."""
    return {p.name.value for p in (*func.params.params, *func.params.kwonly_params)}


def _builds_itself(cls: cst.ClassDef) -> bool:
    """Does the class build instances of itself other than by its name (``cls(...)`` in a classmethod,
    ``type(self)(...)``, ``self.__class__(...)``)? Such constructions are not found by name."""
    for node in walk(cls):
        if isinstance(node, cst.Call):
            func = node.func
            if (isinstance(func, cst.Name) and func.value == "cls") or dotted_name(func) == "self.__class__" \
                    or (isinstance(func, cst.Call) and isinstance(func.func, cst.Name) and func.func.value == "type"):
                return True
    return False


def _falsy_constant(expr: cst.BaseExpression) -> bool:
    """``0``, ``0.0``, ``None``, ``False`` or an empty string."""
    if isinstance(expr, cst.Integer):
        return expr.evaluated_value == 0
    if isinstance(expr, cst.Float):
        return expr.evaluated_value == 0.0
    if isinstance(expr, cst.Name):
        return expr.value in ("None", "False")
    return isinstance(expr, cst.SimpleString) and string_value(expr) == ""


_FIXTURE_METHODS = frozenset({"setUp", "tearDown", "setup_method", "teardown_method"})
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _smalls(suite: cst.BaseSuite) -> list[cst.BaseSmallStatement]:
    """The simple statements right in a block (``try:`` / ``except:`` bodies; not those of nested blocks)."""
    if isinstance(suite, cst.SimpleStatementSuite):
        return list(suite.body)
    return [small for stmt in suite.body if isinstance(stmt, cst.SimpleStatementLine) for small in stmt.body]


def _constant_assigned(name: str, smalls: Sequence[cst.BaseSmallStatement], falsy: bool = False,
                       caught: str | None = None) -> bool | None:
    """The ``True`` / ``False`` the statements ``smalls`` assign to ``name`` (the last one), else None; with
    ``falsy``, ``None`` counts as False; ``caught``: the name an ``except ... as e:`` binds, an exception (true)."""
    value = None
    for small in smalls:
        if isinstance(small, cst.Assign) and any(dotted_name(t.target) == name for t in small.targets) \
                and isinstance(small.value, cst.Name):
            if small.value.value in ("True", "False"):
                value = small.value.value == "True"
            elif falsy and small.value.value == "None":
                value = False
            elif caught is not None and small.value.value == caught:
                value = True
    return value


def _assigns_name(name: str, smalls: Sequence[cst.BaseSmallStatement]) -> bool:
    return any(isinstance(s, cst.Assign) and any(dotted_name(t.target) == name for t in s.targets) for s in smalls)


def _caught_name(handler: cst.ExceptHandler) -> str | None:
    """The name ``except ImportError as e:`` binds, else None."""
    return handler.name.name.value if handler.name is not None and isinstance(handler.name.name, cst.Name) else None


def imported_modules(stmt: cst.Import | cst.ImportFrom) -> list[str]:
    """The modules an import statement imports, relative ones as written (``from .backend import _backend``:
    ``.backend``), as :meth:`Project.imports_cuda_only` takes them."""
    if isinstance(stmt, cst.Import):
        return [dotted_name(alias.name) or "" for alias in stmt.names]
    dots = "." * len(stmt.relative)
    module = dotted_name(stmt.module) if stmt.module is not None else ""
    return [dots + (module or "")] if dots or module else []


def _private(name: str) -> bool:
    """``_encode``, not ``__init__`` nor ``__getattr__``."""
    return name.startswith("_") and not name.startswith("__")


def _stuck_on(option: CommandLineOption) -> bool:
    """``add_argument("--cpu", action="store_true", default=True)``: the flag is true whatever the command line."""
    default = option.keywords.get("default")
    return option.text("action") == "store_true" and isinstance(default, cst.Name) and default.value == "True"


def gpu_accelerator(call: cst.Call) -> bool:
    """A call told to run on the GPU by a literal ``accelerator="gpu"`` / ``"cuda"`` (Lightning's ``Trainer``,
    ``Fabric``, a ``LightningLite`` subclass): where CUDA is missing it raises at construction."""
    return any(a.keyword is not None and a.keyword.value == "accelerator"
               and (string_value(a.value) or "").lower() in _GPU_ACCELERATORS for a in call.args)


_GPU_ACCELERATORS = frozenset({"gpu", "cuda"})


def gpu_flag(expr: cst.BaseExpression) -> bool:
    """A plain flag named for the GPU (``cuda``, ``self.gpu_mode``, ``args.use_gpu``)."""
    return isinstance(expr, (cst.Name, cst.Attribute)) and devices.is_guard_text(dotted_name(expr) or "")


def _default_tables(cls: cst.ClassDef) -> list[cst.Dict]:
    """The class-level dictionaries a method of ``cls`` copies onto the object (``_defaults = {...}`` and
    ``self.__dict__.update(self._defaults)``)."""
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else []
    tables = {t.target.value: stmt.body[0].value for stmt in body if isinstance(stmt, cst.SimpleStatementLine)
              and isinstance(stmt.body[0], cst.Assign) and isinstance(stmt.body[0].value, cst.Dict)
              for t in stmt.body[0].targets if isinstance(t.target, cst.Name)}
    if not tables:
        return []
    copied = set()
    for node in walk(cls):
        if isinstance(node, cst.Call) and dotted_name(node.func) == "self.__dict__.update" and node.args:
            source = dotted_name(node.args[0].value) or ""
            copied.add(source.rpartition(".")[2])
    return [table for key, table in tables.items() if key in copied]
