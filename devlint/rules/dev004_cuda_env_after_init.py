"""DEV004: CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER set after CUDA was initialised."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from devlint import devices
from devlint.context import Context, string_value
from devlint.diagnostics import Applicability, Edit, Evidence, Finding, Fix, FixAvailability, Position
from devlint.lazy import LazyModule
from devlint.project import call_sites
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
Finds writes of `CUDA_VISIBLE_DEVICES` or `CUDA_DEVICE_ORDER` — `os.environ[...] = ...`,
`os.environ.update(...)`, `os.environ.setdefault(...)`, `os.putenv(...)` — that come after a call that
initialises CUDA before it runs: earlier in the same flow (the module's top level, or the same function
body), at the module's top level for a write in a function (functions run after it), in `__init__` for a
write in another method of the class, or in a caller of the function, in the linted tree, before the call or
in its arguments (`select_device("0" if torch.cuda.is_available() else "cpu")`; one level of callers). The
initialising calls are
`torch.cuda.device_count()`, `torch.cuda.is_available()`, `torch.cuda.init()`, `torch.cuda.set_device()`
and other `torch.cuda` queries, `.cuda()`, or creating a CUDA tensor.

Not reported: writes before `import torch`, writes after `import torch` with no CUDA call before them,
reads (`os.environ.get(...)`), and `env=` dictionaries for subprocesses, which configure a new process.
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
The order is followed within one flow (the module's top level, or one function body): a CUDA call in a
helper function that runs before the write is not seen. A write in a module imported after CUDA started
elsewhere is not seen either.
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
    )
    INVALID = (
        Invalid(
            'import os\nimport torch\n\nprint(torch.cuda.device_count())\n'
            'os.environ["CUDA_VISIBLE_DEVICES"] = "1,2"  # too late: still sees every GPU\n',
            fixed='import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "1,2"  # too late: still sees every GPU\n'
                  'import torch\n\nprint(torch.cuda.device_count())\n',
            doc=True,
        ),
        Invalid('import torch\nimport os as osm\nx = torch.zeros(1).cuda()\n'
                'osm.environ.update({"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})\n',
                fixed='import os as osm\nosm.environ.update({"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})\nimport torch\n'
                      'import os as osm\nx = torch.zeros(1).cuda()\n'),
        Invalid('import os\nimport torch\ndef main():\n    if torch.cuda.is_available():\n        pass\n'
                '    os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'),
    )

    def check(self, ctx: Context) -> Iterable[Finding]:
        first_init: dict[cst.CSTNode | None, cst.Call] = {}  # flow (function, or None for the module) -> call
        if ctx.imports_torch:
            for call in ctx.nodes(cst.Call):  # in source order
                if self._initialises_cuda(ctx, call):
                    first_init.setdefault(ctx.enclosing_function(call), call)
        for node, var in self._writes(ctx):
            init_ctx, init = ctx, self._init_before(ctx, node, first_init) if first_init else None
            if init is None:
                found = _caller_init(ctx, node)
                if found is None:
                    continue
                init_ctx, init = found
            name = init_ctx.qualname(init.func) or init_ctx.code(init.func)
            where = f"line {node_start(init_ctx, init).row}"
            if init_ctx is not ctx:
                where = f"{os.path.basename(init_ctx.path)} line {node_start(init_ctx, init).row}, before it calls this"
            message = (
                f"{var} is set after CUDA was initialised ({name.split('.')[-1]}() on {where}), so it has no "
                f"effect; set it before `import torch` (or in the shell)"
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
        init = first_init.get(func)
        if init is not None and ctx.order[init] < ctx.order[node]:
            return init
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


def _caller_init(ctx: Context, node: cst.CSTNode) -> tuple[Context, cst.Call] | None:
    """A call of the function holding ``node`` (in the linted tree) made after its caller initialised CUDA:
    earlier in the caller's flow, or in the call's own arguments (``select_device("0" if
    torch.cuda.is_available() else "cpu")``). One level of callers."""
    func = ctx.enclosing_function(node)
    if func is None:
        return None
    for site_ctx, call in call_sites(ctx, func) or []:
        flow = site_ctx.enclosing_function(call)
        for other in site_ctx.nodes(cst.Call):
            if other is call or site_ctx.order[other] > site_ctx.order[call] + _span(site_ctx, call):
                continue
            inside = any(a is call for a in site_ctx.ancestors(other))
            if (inside or site_ctx.enclosing_function(other) is flow) \
                    and CudaEnvAfterInit._initialises_cuda(site_ctx, other) and not _in_guard_of(site_ctx, other, call):
                return site_ctx, other
    return None


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
    ``if __name__ == "__main__":`` or another condition)."""
    child = node
    for anc in ctx.ancestors(node):
        if isinstance(anc, cst.Module):
            return child
        if isinstance(anc, (cst.If, cst.For, cst.While, cst.Try, cst.With, cst.FunctionDef, cst.ClassDef)):
            return None
        child = anc
    return None
