"""DEV004: CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER set after CUDA was initialised."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from devlint import devices
from devlint.context import Context, own_method, string_value
from devlint.diagnostics import Applicability, Edit, Evidence, Finding, Fix, FixAvailability, Position
from devlint.guards import imported_modules
from devlint.lazy import LazyModule
from devlint.project import call_sites, callee
from devlint.rules.base import Invalid, Rule, Valid, node_end, node_start
from devlint.source import split_lines

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")


def _is_cuda_literal(value: cst.BaseExpression) -> bool:
    text = string_value(value)
    return text is not None and devices.is_cuda_device(text)


@dataclass(frozen=True)
class CudaEnvEvidence(Evidence):
    """The variable set, its literal value (None: not a literal), and the call that initialised CUDA."""

    var: str
    value: str | None
    init: str | None  # its qualified name (torch.cuda.device_count), None for a CUDA tensor or .cuda()


class CudaEnvAfterInit(Rule):
    code = "DEV004"
    name = "cuda-env-after-init"
    summary = "CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER set after CUDA was initialised: it has no effect."
    fix_availability = FixAvailability.SOMETIMES
    evidence_type = CudaEnvEvidence
    triggers = re.compile(b"|".join(v.encode() for v in sorted(devices.CUDA_ENV_VARS)))

    doc_what = '''
Finds writes of `CUDA_VISIBLE_DEVICES` or `CUDA_DEVICE_ORDER` — `os.environ[...] = ...`, `os.environ.update(...)`,
`os.environ.setdefault(...)`, `os.putenv(...)` — that come after a call that initialises CUDA before it runs:
earlier in the same flow (the module's top level, or the same function body; not in another arm of the same `if` /
`elif` / `else`, `if zh: torch.cuda.set_device(rank)` / `elif en: os.environ["CUDA_VISIBLE_DEVICES"] = str(rank)`,
which never both run, nor in a block that returns or raises before the write, `if "," not in gpus: return
torch.cuda.device_count()` then the write for `--gpus 0,3`), at the module's top level for a write in a function
(functions run after it), in `__init__` for a write in another method of the class, or in a caller of the function,
in the linted tree, before the call or in its arguments (`select_device("0" if torch.cuda.is_available() else
"cpu")`), also at the top of the caller's module or in its class's `__init__`; and the same for a caller of a caller
(`Runner(...)` whose `__init__` calls the function), at most 8 of each.

A function of the linted tree that certainly initialises CUDA counts as the CUDA call itself: `setup()` whose
body calls `torch.cuda.device_count()` on no branch and after no `return` (directly, or through at most two
more such functions, across the project's modules), called before the write on every path to it: earlier in
the same flow (`setup(); configure_env()`, `self.prepare(); self.select()`), at the module's top level
(`N_GPUS = gpu_count()`), or in `__init__` for a write in another method; and the same at the top level of a
module of the project the file imports by absolute name at its top, before the write (WeNet's `from
wenet.utils.common import TORCH_NPU_AVAILABLE`, whose module runs `TORCH_NPU_AVAILABLE = is_torch_npu_available()`),
or at the top level of a module of the project that such a module imports at its top, in turn (WeNet's export
scripts import `wenet.utils.init_model`, whose imports reach common.py; at most 8 imports deep). A call in a
branch, a loop's body, a handler or a nested function may not run, and is not
counted; except in the handler of a `try` that only imports an optional package (`try: import torch_npu` /
`except ImportError:`), which runs wherever the package is missing, as on a CUDA machine. The initialising
calls are
`torch.cuda.device_count()`, `torch.cuda.is_available()`, `torch.cuda.init()`, `torch.cuda.set_device()`
and other `torch.cuda` queries, `.cuda()`, or creating a CUDA tensor.

Not reported: writes before `import torch`, writes after `import torch` with no CUDA call before them,
reads (`os.environ.get(...)`), `env=` dictionaries for subprocesses, which configure a new process, and
`if cpu: os.environ["CUDA_VISIBLE_DEVICES"] = "-1"` (a value that hides every GPU; also `if cpu or mps:`, as
in yolov5's `select_device`) when the function then decides on the same flag itself (`cuda = not cpu and
torch.cuda.is_available()`): the CPU (or MPS) is chosen anyway.
'''
    doc_why = '''
The CUDA runtime reads `CUDA_VISIBLE_DEVICES` and `CUDA_DEVICE_ORDER` once, when CUDA is initialised in
the process. After that, changing `os.environ` does nothing: the process keeps seeing every GPU, in the
old order. Nothing fails — the job silently runs on the wrong GPUs, or on all of them.

`torch.cuda.is_available()`, `torch.cuda.init()` and any CUDA tensor initialise CUDA.
`torch.cuda.device_count()` does too where torch cannot ask NVML (and in older torch); recent torch
answers it from NVML and re-reads the variable until CUDA really starts, so `devlint verify` may report
such a finding as "not reproduced" on your machine. Setting the variable first is right either way.
'''
    doc_use_instead = '''
Set it first, before `import torch` (or in the shell: `CUDA_VISIBLE_DEVICES=1,2 python train.py`). The
autofix moves a module-level write with a literal value above `import torch`; elsewhere there is no
automatic fix.
'''
    doc_fix_safety = '''
Unsafe: moving the write makes it take effect, so the process sees other GPUs than before (which is what
the code asked for, but not what it did). Only a module-level statement of its own with literal values
is moved, together with the `import os` it needs when `os` is not imported above `import torch`; the
moved line keeps its comments and line ending.
'''
    doc_known_problems = '''
The order is followed within one flow (the module's top level, or one function body) and two levels of
callers: a helper that starts CUDA only on some branch, or a third-level caller that started CUDA, is not
seen. A write in a module imported after CUDA started elsewhere is not seen either.
'''
    doc_options = '''
None of its own: `select`, `ignore`, `per-file-ignores` and `# noqa: DEV004` apply as for every rule.
'''
    doc_references = '''
- [CUDA environment variables](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables)
- [torch.cuda.device_count](https://pytorch.org/docs/stable/generated/torch.cuda.device_count.html)
'''
    doc_notebooks = '''
Notebooks (`.ipynb`) are one module in cell order, as the kernel runs them: a write in a cell after the one
that initialised CUDA is reported, and the message names the cell (`in cell 2, line 3`). The kernel keeps
CUDA initialised between cells: set the variable in the first cell, before `import torch`, and restart the
kernel after changing it; the fix moves the write into the cell that imports torch.
'''

    VALID = (
        Valid('import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\nimport torch\nprint(torch.cuda.device_count())\n'),
        Valid('import os\nimport torch\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\nx = torch.zeros(1)\n'),
        Valid('import os\nimport subprocess\nimport torch\nn = torch.cuda.device_count()\n'
              'subprocess.run(["python", "t.py"], env=dict(os.environ, CUDA_VISIBLE_DEVICES="0"))\n'),
        Valid('import os\nimport torch\nn = torch.cuda.device_count()\nv = os.environ.get("CUDA_VISIBLE_DEVICES")\n'),
        Valid('import os\nimport torch\n\ndef setup(verbose):\n    if verbose:\n'
              '        print(torch.cuda.device_count())\n\n'
              'def configure_env():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n\n'
              'def main():\n    configure_env()\n    setup(True)\n    setup(False)\n    configure_env()\n'),
    )
    INVALID = (
        Invalid(
            'import os\nimport torch\n\nprint(torch.cuda.device_count())\n'
            'os.environ["CUDA_VISIBLE_DEVICES"] = "1,2"  # GPUs 1 and 2 only\n',
            fixed='import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "1,2"  # GPUs 1 and 2 only\n'
                  'import torch\n\nprint(torch.cuda.device_count())\n',
            doc=True,
        ),
        Invalid('import torch\nimport os as osm\nx = torch.zeros(1).cuda()\n'
                'osm.environ.update({"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})\n',
                fixed='import os as osm\nosm.environ.update({"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})\nimport torch\n'
                      'import os as osm\nx = torch.zeros(1).cuda()\n'),
        Invalid('import os\nimport torch\ndef main():\n    if torch.cuda.is_available():\n        pass\n'
                '    os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'),
        Invalid('import os\nimport torch\n\ndef setup():\n    return torch.cuda.device_count()\n\n'
                'def configure_env():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n\n'
                'def main():\n    setup()\n    configure_env()\n'),
    )

    def check(self, ctx: Context) -> Iterable[Finding]:
        # flow (function, or None for the module) -> its first call that initialises CUDA, in source order
        first_init = _first_inits(ctx)
        for node, var in self._writes(ctx):
            if _cpu_request(ctx, node, var):
                continue
            init_ctx, init = ctx, self._init_before(ctx, node, first_init) if first_init else None
            via: _Via | None = None
            if init is None:
                found = _summarised_init(ctx, node) or _caller_init(ctx, node) or _imported_init(ctx, node)
                if found is None:
                    continue
                init_ctx, init, via = found
            name = init_ctx.qualname(init.func) or init_ctx.code(init.func)
            message = (
                f"{var} is set after CUDA was initialised ({name.split('.')[-1]}() on "
                f"{_where(ctx, init_ctx, init, via)}), so it has no effect; set it before `import torch` (or in "
                f"the shell)"
            )
            yield self.finding(ctx, node, message, self._fix(ctx, node), evidence=CudaEnvEvidence(
                var=var, value=self._literal_value(node, var), init=init_ctx.qualname(init.func)))

    @staticmethod
    def _init_before(ctx: Context, node: cst.CSTNode,
                     first_init: dict[cst.CSTNode | None, cst.Call]) -> cst.Call | None:
        """The call that initialised CUDA before ``node`` runs: earlier in the same flow; at the module's top
        level, for a write in a function (functions run after the module's top level, unless called there
        before it); in ``__init__``, for a write in another method of the class (``__init__`` runs first)."""
        func = ctx.enclosing_function(node)
        if func in first_init:
            for init in _flow_inits(ctx).get(func, ()):
                if ctx.order[init] >= ctx.order[node]:
                    break
                if not _exclusive(ctx, init, node) and not _leaves_before(ctx, init, node):
                    return init  # (not `if zh: set_device(rank)` / `elif en: os.environ[...] = ...`)
        if func is None:
            return None
        owner = ctx.parent(ctx.parent(func))
        if isinstance(owner, cst.ClassDef) and func.name.value != "__init__":
            for other, call in first_init.items():
                if isinstance(other, cst.FunctionDef) and other.name.value == "__init__" \
                        and ctx.parent(ctx.parent(other)) is owner:
                    return call
        module_init = first_init.get(None)
        if module_init is None or _top_statement(ctx, module_init) is None:
            return None
        outer = next((a for a in reversed(list(ctx.ancestors(func))) if isinstance(a, cst.FunctionDef)), func)
        before = ctx.order[_top_statement(ctx, module_init)]  # type: ignore[index]
        called_earlier = any(
            isinstance(c.func, cst.Name) and c.func.value == outer.name.value and ctx.order[c] < before
            and ctx.enclosing_function(c) is None for c in ctx.nodes(cst.Call))
        return None if called_earlier else module_init

    @staticmethod
    def _literal_value(node: cst.Assign | cst.Call, var: str) -> str | None:
        if isinstance(node, cst.Assign):
            return string_value(node.value)
        for i, arg in enumerate(node.args):
            if arg.keyword is not None and arg.keyword.value == var:
                return string_value(arg.value)
            if isinstance(arg.value, cst.Dict):
                for el in arg.value.elements:
                    if isinstance(el, cst.DictElement) and string_value(el.key) == var:
                        return string_value(el.value)
            if i == 1 and arg.keyword is None:
                return string_value(arg.value)
        return None

    @staticmethod
    def _initialises_cuda(ctx: Context, call: cst.Call) -> bool:
        qn = ctx.qualname(call.func)
        if qn in devices.CUDA_INIT_CALLS:
            return True
        func = call.func
        if isinstance(func, cst.Attribute) and qn is None:
            if func.attr.value == devices.CUDA_METHOD:
                return True
            if func.attr.value == devices.MOVE_METHOD and call.args and _is_cuda_literal(call.args[0].value):
                return True
        return any(
            a.keyword is not None and a.keyword.value == devices.DEVICE_KEYWORD and _is_cuda_literal(a.value)
            for a in call.args
        ) and (qn or "").startswith("torch.")

    @staticmethod
    def _writes(ctx: Context) -> Iterable[tuple[cst.Assign | cst.Call, str]]:
        """Each write of a CUDA variable: ``os.environ[VAR] = ...``, then ``os.environ.update(...)``,
        ``os.environ.setdefault(...)``, ``os.putenv(...)``; with the variable."""
        yield from _subscript_writes(ctx)
        yield from _call_writes(ctx)

    @staticmethod
    def _fix(ctx: Context, node: cst.Assign | cst.Call) -> Fix | None:
        """Move a module-level write with a literal value above the first top-level torch import."""
        stmt = ctx.parent(node)
        if isinstance(node, cst.Call):
            stmt = ctx.parent(stmt) if isinstance(stmt, cst.Expr) else None
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 or stmt not in ctx.module.body:
            return None
        if not _literal_write(node):
            return None
        body = list(ctx.module.body)
        torch_import = next((s for s in body if isinstance(s, cst.SimpleStatementLine) and any(
            isinstance(i, (cst.Import, cst.ImportFrom)) and CudaEnvAfterInit._imports(ctx, i, "torch") for i in s.body
        )), None)
        if torch_import is None or body.index(torch_import) > body.index(stmt):
            return None
        prelude = _import_prelude(ctx, node, body[: body.index(torch_import)])
        if prelude is None:
            return None
        nl = ctx.module.default_newline
        first, last = node_start(ctx, stmt).row, node_end(ctx, stmt).row
        lines = split_lines(ctx.text if ctx.text is not None else ctx.module.code)
        original = "".join(lines[first - 1: last])
        moved = original if original.endswith(("\n", "\r")) else original + nl
        at = node_start(ctx, torch_import).row
        return Fix(
            (
                Edit(Position(at, 1), Position(at, 1), prelude + moved, old=""),
                Edit(Position(first, 1), Position(last + 1, 1), "", old=original),
            ),
            Applicability.UNSAFE,
            "Move it above `import torch`",
        )

    @staticmethod
    def _imports(ctx: Context, imp: cst.Import | cst.ImportFrom, module: str) -> bool:
        if isinstance(imp, cst.Import):
            return any(ctx.code(a.name).split(".")[0] == module for a in imp.names)
        return imp.module is not None and not imp.relative and ctx.code(imp.module).split(".")[0] == module

    @staticmethod
    def _binds(ctx: Context, imp: cst.Import | cst.ImportFrom, name: str) -> bool:
        if isinstance(imp.names, cst.ImportStar):
            return False
        for alias in imp.names:
            if alias.asname and isinstance(alias.asname.name, cst.Name):
                bound = alias.asname.name.value
            else:
                bound = ctx.code(alias.name).split(".")[0]
            if bound == name:
                return True
        return False


def _caller_init(ctx: Context, node: cst.CSTNode) -> tuple[Context, cst.Call, _Via] | None:
    """A call of the function holding ``node`` (in the linted tree) made after its caller initialised CUDA:
    earlier in the caller's flow, or in the call's own arguments (``select_device("0" if
    torch.cuda.is_available() else "cpu")``), in a function of the linted tree that the caller called first
    (``setup(); configure_env()``), at the top of the caller's module (for a caller that is a function) or in
    its class's ``__init__`` (for a caller that is a method). Callers, then a few callers of those."""
    func = ctx.enclosing_function(node)
    if func is None:
        return None
    sites = call_sites(ctx, func) or []
    for site_ctx, call in sites:
        found = _site_init(site_ctx, call)
        if found is not None:
            return found
    # a caller of a caller (EvalerWrapper(...) whose __init__ calls the function): a few of them
    for site_ctx, call in sites[:_SECOND_LEVEL_SITES]:
        caller = site_ctx.enclosing_function(call)
        if caller is None:
            continue
        for outer_ctx, outer in (call_sites(site_ctx, caller) or [])[:_SECOND_LEVEL_SITES]:
            found = _site_init(outer_ctx, outer)
            if found is not None:
                init_ctx, init, via = found
                return init_ctx, init, _Via(via.site_ctx, via.site, via.runs_ctx, via.runs, site_ctx, call)
    return None


# how many calls of the function, and of each of its callers, are looked at for a caller of a caller
_SECOND_LEVEL_SITES = 8


def _site_init(site_ctx: Context, call: cst.Call) -> tuple[Context, cst.Call, _Via] | None:
    """CUDA initialised before ``call`` runs, in its caller's flow, its module or its class."""
    flow = site_ctx.enclosing_function(call)
    for other in site_ctx.nodes(cst.Call):
        if other is call or site_ctx.order[other] > site_ctx.order[call] + _span(site_ctx, call):
            continue
        inside = any(a is call for a in site_ctx.ancestors(other))
        if (inside or site_ctx.enclosing_function(other) is flow) \
                and CudaEnvAfterInit._initialises_cuda(site_ctx, other) and not _in_guard_of(site_ctx, other, call):
            return site_ctx, other, _Via(site_ctx, call)
    first_init = _first_inits(site_ctx)
    direct = CudaEnvAfterInit._init_before(site_ctx, call, first_init) if first_init else None
    if direct is not None:
        return site_ctx, direct, _Via(site_ctx, call)
    found = _summarised_init(site_ctx, call)
    if found is not None:
        init_ctx, init, via = found
        return init_ctx, init, _Via(site_ctx, call, via.runs_ctx, via.runs)
    return None


@dataclass(frozen=True)
class _Via:
    """How an initialisation reaches a write: the call of the write's function (``site``) that runs after
    it, and the call of a function of the linted tree (``runs``) that ran first and initialised CUDA."""

    site_ctx: Context
    site: cst.Call | None
    runs_ctx: Context | None = None
    runs: cst.Call | None = None
    through_ctx: Context | None = None  # the call of the write's function, when ``site`` calls its caller
    through: cst.Call | None = None


def _where(ctx: Context, init_ctx: Context, init: cst.Call, via: _Via | None) -> str:
    """Where CUDA started, seen from the write in ``ctx``: the line, the function that ran first, the call
    of the write's function (or of its caller) that ran after it."""
    where = f"{_file_of(init_ctx, ctx)}line {node_start(init_ctx, init).row}"
    if via is not None and via.runs is not None and via.runs_ctx is not None:
        runs = f"{_file_of(via.runs_ctx, ctx)}line {node_start(via.runs_ctx, via.runs).row}"
        where += f", reached from {via.runs_ctx.code(via.runs.func)}() called on {runs}"
    if via is not None and via.site is not None:
        where += f", before {_file_of(via.site_ctx, ctx)}line {node_start(via.site_ctx, via.site).row} calls "
        if via.through is not None and via.through_ctx is not None:
            through = node_start(via.through_ctx, via.through).row
            where += f"{_file_of(via.through_ctx, ctx)}line {through}, which calls "
        where += "this"
    return where


def _file_of(ctx: Context, home: Context) -> str:
    return "" if ctx is home else f"{os.path.basename(ctx.path)} "


def _first_inits(ctx: Context) -> dict[cst.CSTNode | None, cst.Call]:
    """The first call that initialises CUDA in each flow (function, or None for the module) of ``ctx``."""
    return ctx.shared("dev004.first_inits", lambda c: {flow: calls[0] for flow, calls in _flow_inits(c).items()})


def _flow_inits(ctx: Context) -> dict[cst.CSTNode | None, list[cst.Call]]:
    """Every call that initialises CUDA in each flow of ``ctx``, in source order."""
    def build(c: Context) -> dict[cst.CSTNode | None, list[cst.Call]]:
        inits: dict[cst.CSTNode | None, list[cst.Call]] = {}
        if c.imports_torch:
            for call in c.nodes(cst.Call):
                if CudaEnvAfterInit._initialises_cuda(c, call):
                    inits.setdefault(c.enclosing_function(call), []).append(call)
        return inits
    return ctx.shared("dev004.flow_inits", build)


def _exclusive(ctx: Context, first: cst.CSTNode, later: cst.CSTNode) -> bool:
    """Are ``first`` and ``later`` in different arms of one ``if`` / ``elif`` / ``else`` chain (a run that
    takes one arm never takes the other)?"""
    path = {id(a): child for a, child in _with_children(ctx, first)}
    for anc, child in _with_children(ctx, later):
        if id(anc) in path:
            other = path[id(anc)]
            return isinstance(anc, cst.If) and child is not other and anc.test is not child and anc.test is not other
    return False


def _leaves_before(ctx: Context, first: cst.CSTNode, later: cst.CSTNode) -> bool:
    """Does the flow leave after ``first`` without reaching ``later`` (of the same flow): a block holding
    ``first`` but not ``later`` returns or raises at or after ``first``'s statement (``if ",' not in gpus:
    return torch.cuda.device_count()``, then the write for the other case)? Not when ``later`` is in a
    ``finally`` (it runs after a return)."""
    around = {id(a) for a in ctx.ancestors(later)}
    if any(isinstance(a, cst.Finally) for a in ctx.ancestors(later)):
        return False
    for anc, child in _with_children(ctx, first):
        if id(anc) in around:
            return False
        if isinstance(anc, (cst.IndentedBlock, cst.Module)):
            body = list(anc.body)
            at = next((i for i, stmt in enumerate(body) if stmt is child), None)
            if at is not None and any(_leaves(stmt) for stmt in body[at:]):
                return True
        elif isinstance(anc, cst.SimpleStatementSuite):  # `if n: return torch.cuda.device_count()`
            at = next((i for i, small in enumerate(anc.body) if small is child), None)
            if at is not None and any(isinstance(small, (cst.Return, cst.Raise)) for small in anc.body[at:]):
                return True
        elif isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
    return False


def _leaves(stmt: cst.CSTNode) -> bool:
    """A ``return`` or ``raise`` statement (a simple statement line ending in one)."""
    return isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, (cst.Return, cst.Raise)) for s in stmt.body)


def _with_children(ctx: Context, node: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
    """Each ancestor of ``node`` with its child on the way to ``node``."""
    child = node
    for anc in ctx.ancestors(node):
        yield anc, child
        child = anc


# How deep the functions that run first are followed (setup() -> init_devices() -> torch.cuda.device_count()),
# and how many calls of a file are resolved to the linted tree's functions at most.
_SUMMARY_DEPTH = 2
_RESOLVE_BUDGET = 200


@dataclass
class _Summaries:
    """Per file: the calls of each flow in source order, and what is known of its functions."""

    flows: dict[cst.CSTNode | None, list[cst.Call]]
    entry: dict[tuple[int, int], tuple[Context, cst.Call] | None]
    budget: int = _RESOLVE_BUDGET


def _summaries(ctx: Context) -> _Summaries:
    def build(c: Context) -> _Summaries:
        flows: dict[cst.CSTNode | None, list[cst.Call]] = {}
        for call in c.nodes(cst.Call):
            flows.setdefault(c.enclosing_function(call), []).append(call)
        return _Summaries(flows, {})
    return ctx.shared("dev004.summaries", build)


def _summarised_init(ctx: Context, node: cst.CSTNode) -> tuple[Context, cst.Call, _Via] | None:
    """CUDA initialised before ``node`` by a function of the linted tree that certainly ran first: called
    earlier in ``node``'s flow on every path to it (``setup(); os.environ[...] = ...``), called
    unconditionally at the top of the module before a write in a function runs, or called by ``__init__``
    of the class of a method holding the write. The function initialises CUDA whenever it returns (a CUDA
    call in its body on no branch, after no ``return``), directly or through such a function of its own."""
    flow = ctx.enclosing_function(node)
    for call in _summaries(ctx).flows.get(flow, []):
        if ctx.order[call] >= ctx.order[node]:
            break
        if any(a is call for a in ctx.ancestors(node)) or not _runs_before(ctx, call, node):
            continue
        found = _callee_init(ctx, call, _SUMMARY_DEPTH)
        if found is not None:
            return found[0], found[1], _Via(ctx, None, ctx, call)
    if flow is None:
        return None
    owner = ctx.parent(ctx.parent(flow))
    if isinstance(owner, cst.ClassDef) and flow.name.value != "__init__":
        init = own_method(owner, "__init__")
        if init is not None:
            found = _entry_init(ctx, init, _SUMMARY_DEPTH)
            if found is not None:
                return found[0], found[1], _Via(ctx, None)
    return _module_summarised_init(ctx, flow)


def _module_summarised_init(ctx: Context, flow: cst.FunctionDef) -> tuple[Context, cst.Call, _Via] | None:
    """A call at the top of the module, run at import, of a function that initialises CUDA; functions run
    after the module's top level, unless the one holding the write is called there before it."""
    outer = next((a for a in reversed(list(ctx.ancestors(flow))) if isinstance(a, cst.FunctionDef)), flow)
    for call in _summaries(ctx).flows.get(None, []):
        top = _top_statement(ctx, call)
        if top is None or not _runs_before(ctx, call, top, unconditional=True):
            continue
        if isinstance(call.func, cst.Name) and call.func.value == outer.name.value:
            return None  # the function runs here, before any later initialisation
        found = _callee_init(ctx, call, _SUMMARY_DEPTH)
        if found is not None:
            return found[0], found[1], _Via(ctx, None, ctx, call)
    return None


def _imported_init(ctx: Context, node: cst.CSTNode) -> tuple[Context, cst.Call, _Via | None] | None:
    """CUDA initialised when the file imported a module of the project at its top, before ``node`` (a write in a
    function runs after every import of its module), whose own top level certainly initialises it: WeNet's
    ``from wenet.utils.common import TORCH_NPU_AVAILABLE``, where common.py runs ``TORCH_NPU_AVAILABLE =
    is_torch_npu_available()``, which asks ``torch.cuda.is_available()`` where torch_npu is missing; also a
    module that module imports in turn, at its top (WeNet's export scripts import ``wenet.utils.init_model``,
    whose imports reach common.py). The file's own imports are absolute ones only."""
    project = ctx.project
    if project is None:
        return None
    top = next((a for a in [node, *ctx.ancestors(node)] if ctx.parent(a) is ctx.module), None) \
        if ctx.enclosing_function(node) is None else None  # the module's statement holding a write at its top
    for stmt in ctx.module.body:
        if top is not None and ctx.order[stmt] >= ctx.order[top]:
            break
        for module in _absolute_imports(stmt):
            for reached in project.imported_files(module, ctx.path):
                if b"cuda" not in (project.read(reached) or b""):
                    continue
                other = project.context(reached)
                found = _top_init(other) if other is not None and other is not ctx else None
                if found is not None:
                    return found[0], found[1], None
    return None


def _absolute_imports(stmt: cst.CSTNode) -> list[str]:
    """The modules a top-level statement imports by absolute name (``import a.b``, ``from a.b import c``)."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return []
    return [module for small in stmt.body if isinstance(small, (cst.Import, cst.ImportFrom))
            for module in imported_modules(small) if module and not module.startswith(".")]


def _top_init(ctx: Context) -> tuple[Context, cst.Call] | None:
    """The call of the module's top level that certainly initialises CUDA when the module is imported."""
    for call in _summaries(ctx).flows.get(None, []):
        top = _top_statement(ctx, call)
        if top is None or not _runs_before(ctx, call, top, unconditional=True):
            continue
        if ctx.imports_torch and CudaEnvAfterInit._initialises_cuda(ctx, call):
            return ctx, call
        found = _callee_init(ctx, call, _SUMMARY_DEPTH)
        if found is not None:
            return found
    return None


def _callee_init(ctx: Context, call: cst.Call, depth: int) -> tuple[Context, cst.Call] | None:
    """The CUDA call that certainly runs when the function of the linted tree that ``call`` calls returns."""
    summaries = _summaries(ctx)
    if summaries.budget <= 0 or not isinstance(call.func, (cst.Name, cst.Attribute)):
        return None
    summaries.budget -= 1
    found = callee(ctx, call)
    if found is None:
        return None
    def_ctx, node = found
    func = node if isinstance(node, cst.FunctionDef) else own_method(node, "__init__")  # Runner(...): its __init__
    return _entry_init(def_ctx, func, depth) if func is not None else None


def _entry_init(ctx: Context, func: cst.FunctionDef, depth: int) -> tuple[Context, cst.Call] | None:
    """The first call in ``func``'s body that initialises CUDA whenever ``func`` returns, directly or (down
    to ``depth`` more levels) through a function of the linted tree it calls so; None if there is none."""
    summaries = _summaries(ctx)
    key = (id(func), depth)
    if key in summaries.entry:
        return summaries.entry[key]
    summaries.entry[key] = None  # a recursive call finds nothing
    found: tuple[Context, cst.Call] | None = None
    exits = [n for kind in (cst.Return, cst.Raise) for n in ctx.nodes(kind) if ctx.enclosing_function(n) is func]
    for call in summaries.flows.get(func, []):
        if any(ctx.order[e] < ctx.order[call] and not any(a is e for a in ctx.ancestors(call))
               and not _handler_skips(ctx, e, call) for e in exits):
            break  # after a return or raise: it may not run (``return torch.cuda.device_count()`` runs)
        if not _runs_before(ctx, call, func, unconditional=True):
            continue
        if ctx.imports_torch and CudaEnvAfterInit._initialises_cuda(ctx, call):
            found = (ctx, call)
        elif depth > 0:
            found = _callee_init(ctx, call, depth - 1)
        if found is not None:
            break
    summaries.entry[key] = found
    return found


def _runs_before(ctx: Context, call: cst.Call, node: cst.CSTNode, unconditional: bool = False) -> bool:
    """Does ``call`` run on every path that reaches ``node`` (a later node of the same flow), or, with
    ``unconditional``, whenever ``node`` (the function, or the statement holding it) runs?

    It may sit in the test of an ``if``/``while`` or a conditional expression, the left side of
    ``and``/``or``, what a ``for`` loops over, a ``with``, the body of a ``try``, or the handler of a ``try``
    that only imports an optional package (``try: import torch_npu`` / ``except ImportError:``: where it is
    missing, as on a CUDA machine, the handler runs); not in a branch, a loop's body, another handler, a
    comprehension, a lambda or a nested function."""
    around = {id(a) for a in ctx.ancestors(node)} | {id(node)}
    child: cst.CSTNode = call
    for anc in ctx.ancestors(call):
        if anc is node or (id(anc) in around and not unconditional):
            return True
        kind = type(anc).__name__
        if kind in _CLOSED or (kind in _RUNS_FIRST and getattr(anc, _RUNS_FIRST[kind]) is not child
                               and not _missing_import_handler(anc, child)):
            return False
        child = anc
    return False


def _handler_skips(ctx: Context, exit_node: cst.CSTNode, call: cst.Call) -> bool:
    """Is ``exit_node`` (``return True`` after ``import torch_npu``) in the body of a ``try`` whose
    missing-import handler holds ``call``? Where the handler runs, that return was not reached."""
    child: cst.CSTNode = call
    for anc in ctx.ancestors(call):
        if isinstance(anc, cst.Try) and _missing_import_handler(anc, child):
            return any(a is anc.body for a in ctx.ancestors(exit_node))
        child = anc
    return False


def _missing_import_handler(node: cst.CSTNode, child: cst.CSTNode) -> bool:
    """Is ``child`` the ``except ImportError:`` (``ModuleNotFoundError``) handler of the ``try`` ``node``, whose
    body only imports (``return True`` after the import aside)?"""
    if not isinstance(node, cst.Try) or not isinstance(child, cst.ExceptHandler) \
            or not any(h is child for h in node.handlers):
        return False
    kind = child.type
    if not (isinstance(kind, cst.Name) and kind.value in ("ImportError", "ModuleNotFoundError")):
        return False
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else []
    lines = [stmt for stmt in body if isinstance(stmt, cst.SimpleStatementLine)]
    if len(lines) != len(body) or any(len(line.body) != 1 for line in lines):
        return False  # a compound statement in the try: more than an import (and one statement a line)
    smalls = [line.body[0] for line in lines]
    return any(isinstance(small, (cst.Import, cst.ImportFrom)) for small in smalls) and all(
        isinstance(small, (cst.Import, cst.ImportFrom, cst.Return)) for small in smalls)


# the part of a compound node that runs whenever the node runs (anything else of it may not run)
_RUNS_FIRST = {"If": "test", "While": "test", "IfExp": "test", "BooleanOperation": "left", "For": "iter",
               "Try": "body"}
# nodes whose inside runs at another time, or maybe not at all (LibCST's class names)
_CLOSED = frozenset({"FunctionDef", "ClassDef", "Lambda", "ListComp", "SetComp", "DictComp", "GeneratorExp", "Match",
                     "TryStar"})


# CUDA_VISIBLE_DEVICES values that hide every GPU
_NO_GPU = frozenset({"-1", ""})


def _cpu_request(ctx: Context, node: cst.Assign | cst.Call, var: str) -> bool:
    """``if cpu: os.environ["CUDA_VISIBLE_DEVICES"] = "-1"`` (also ``if cpu or mps:``) where the function then
    picks the device from the same flag itself (``cuda = not cpu and torch.cuda.is_available()``): hiding the
    GPUs too late changes nothing, the CPU is chosen anyway."""
    if var != "CUDA_VISIBLE_DEVICES" or CudaEnvAfterInit._literal_value(node, var) not in _NO_GPU:
        return False
    stmt = ctx.parent(node) if isinstance(node, cst.Assign) else ctx.parent(ctx.parent(node))
    block = ctx.parent(stmt)
    branch = ctx.parent(block)
    if not isinstance(branch, cst.If):
        return False
    flags = _or_flags(branch.test)
    if not flags:
        return False
    func = ctx.enclosing_function(node)
    for name in ctx.nodes(cst.Name):  # a decision on the same flag after the if
        if name.value not in flags or ctx.order[name] <= ctx.order[branch] or ctx.enclosing_function(name) is not func \
                or any(a is branch for a in ctx.ancestors(name)):
            continue
        parent = ctx.parent(name)
        if (isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)) \
                or (isinstance(parent, (cst.If, cst.IfExp)) and parent.test is name):
            return True
    return False


def _or_flags(test: cst.BaseExpression) -> set[str]:
    """The flags of ``if cpu:`` / ``if cpu or mps:`` (yolov5's select_device), else nothing."""
    if isinstance(test, cst.Name):
        return {test.value}
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        left, right = _or_flags(test.left), _or_flags(test.right)
        return left | right if left and right else set()
    return set()


def _span(ctx: Context, call: cst.Call) -> int:
    """How many nodes after ``call`` (in source order) belong to it."""
    last = call
    for node in ctx.nodes(cst.Call):
        if ctx.order[node] > ctx.order[call] and any(a is call for a in ctx.ancestors(node)):
            last = node
    return ctx.order[last] - ctx.order[call]


def _in_guard_of(ctx: Context, init: cst.Call, call: cst.Call) -> bool:
    """Is ``init`` in an ``if`` test, or a branch, that ``call`` is not part of (so it may not have run)?"""
    return any(isinstance(anc, (cst.If, cst.While, cst.Try)) and not any(a is anc for a in ctx.ancestors(call))
               for anc in ctx.ancestors(init))


def _subscript_writes(ctx: Context) -> Iterable[tuple[cst.Assign, str]]:
    """``os.environ[VAR] = ...`` for a CUDA variable."""
    for assign in ctx.nodes(cst.Assign):
        for target in assign.targets:
            sub = target.target
            if isinstance(sub, cst.Subscript) and ctx.qualname(sub.value) == "os.environ" and len(sub.slice) == 1:
                index = sub.slice[0].slice
                key = string_value(index.value) if isinstance(index, cst.Index) else None
                if key in devices.CUDA_ENV_VARS:
                    yield assign, key


def _call_writes(ctx: Context) -> Iterable[tuple[cst.Call, str]]:
    """``os.environ.update(...)`` / ``.setdefault(...)`` / ``os.putenv(...)`` of a CUDA variable (the first
    one it names)."""
    for call in ctx.nodes(cst.Call):
        qn = ctx.qualname(call.func)
        if qn not in devices.ENV_WRITE_CALLS:
            continue
        for key in _written_keys(call, qn):
            if key in devices.CUDA_ENV_VARS:
                yield call, key
                break


def _written_keys(call: cst.Call, qn: str) -> list[str]:
    """The variables ``call`` (one of :data:`devices.ENV_WRITE_CALLS`) may write, "" for one not spelled out:
    every keyword and dict key of ``os.environ.update``, the first argument of the others."""
    keys: list[str] = []
    for arg in call.args:
        if arg.keyword is not None:
            keys.append(arg.keyword.value)
        elif isinstance(arg.value, cst.Dict):
            keys.extend(string_value(el.key) or "" for el in arg.value.elements if isinstance(el, cst.DictElement))
        else:
            keys.append(string_value(arg.value) or "")
        if qn != "os.environ.update":
            break  # putenv(key, value) / setdefault(key, value): only the first is a key
    return keys


def _literal_write(node: cst.Assign | cst.Call) -> bool:
    """Is every value the write sets a string literal (a dict of them for ``os.environ.update``)?"""
    values = [node.value] if isinstance(node, cst.Assign) else [a.value for a in node.args]
    for value in values:
        if isinstance(value, cst.Dict):
            if not all(isinstance(e, cst.DictElement) and string_value(e.value) is not None for e in value.elements):
                return False
        elif string_value(value) is None:
            return False
    return True


def _import_prelude(ctx: Context, node: cst.Assign | cst.Call, before_torch: Sequence[cst.BaseStatement]) -> str | None:
    """What a moved write needs above it for the name it starts with (``os``, ``osm``, ``environ``) to be
    bound there: "" when a statement of ``before_torch`` imports it, else an import of it; None when that
    name is not ``os`` or a name from ``os``."""
    root = ctx.code(node).split(".")[0].split("[")[0].strip()
    target = ctx.aliases.get(root, "")
    bound_before = any(
        isinstance(i, (cst.Import, cst.ImportFrom)) and CudaEnvAfterInit._binds(ctx, i, root)
        for s in before_torch if isinstance(s, cst.SimpleStatementLine) for i in s.body
    )
    if bound_before:
        return ""
    nl = ctx.module.default_newline
    if target == "os":
        return f"import os{nl}" if root == "os" else f"import os as {root}{nl}"
    if target.startswith("os."):
        name = target[3:]
        return f"from os import {name}{nl}" if root == name else f"from os import {name} as {root}{nl}"
    return None


def _top_statement(ctx: Context, node: cst.CSTNode) -> cst.CSTNode | None:
    """The module-level statement ``node`` is in, when it runs unconditionally at import (not under
    ``if __name__ == "__main__":`` or another condition; the condition itself runs: semseg's PSA extension,
    ``if torch.cuda.is_available(): gpu = load(...)``)."""
    child = node
    for anc in ctx.ancestors(node):
        if isinstance(anc, cst.Module):
            return child
        if isinstance(anc, (cst.If, cst.While)) and child is anc.test:
            child = anc
            continue
        if isinstance(anc, (cst.If, cst.For, cst.While, cst.Try, cst.With, cst.FunctionDef, cst.ClassDef)):
            return None
        child = anc
    return None
