"""The linted tree as a whole: what one file's analysis may ask about the others.

A rule that meets a call asks what the callee does (does it exit without CUDA? initialise NCCL? return a GPU
tensor?), and a function asks who calls it (are all its callers guarded?). The answers come from the other
files of the run, read and parsed on demand (only when a finding hangs on them), with LibCST and the same
analyses the rules use, so a fact means the same across files as within one. Every file consulted is
recorded (``consulted``) so that the results cache can tell when a finding depends on another file.

Bounded: contexts, files' bytes (by their total size) and the call sites found by name are kept in small
LRUs, so that a worker's memory does not grow with the tree; a function name is searched in the tree's bytes
before any file is parsed, and the searches that may fan out (callers of callers) have a depth limit.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar

from devlint import devices
from devlint.context import Context, decorator_target, dotted_name
from devlint.lazy import LazyModule
from devlint.source import LIBCST_MAX_BYTES

if TYPE_CHECKING:
    import ast

    import libcst as cst
else:
    cst = LazyModule("libcst", globals(), "cst")

T = TypeVar("T")

Definition = tuple[Context, "cst.FunctionDef | cst.ClassDef"]


class Project:
    """The files of one run (absolute paths), parsed on demand."""

    MAX_CONTEXTS = 48
    MAX_CONTEXT_BYTES = 1 * 1024 * 1024  # the text of the parsed files kept
    MAX_CALLER_FILES = 40  # a name called from more files than this: its callers are not all looked at
    MAX_BYTES = 16 * 1024 * 1024  # files' bytes kept (the rest is read again: from the OS's cache)
    MAX_CALLER_NAMES = 64  # lists of the files that call a name, kept
    SCAN_NAMES = 12  # names whose callers are searched file by file; past them, an index of every call
    # (transformers: a scan of every file costs about 80 ms a name, the index 0.8 s once)

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = sorted({os.path.abspath(p) for p in paths})
        self._path_set = set(self.paths)
        self._modules: dict[str, list[str]] | None = None
        self._contexts: OrderedDict[str, Context | None] = OrderedDict()
        self._bytes: OrderedDict[str, bytes | None] = OrderedDict()
        self._bytes_held = 0
        self._matches: dict[bytes, str] = {}  # pattern -> the first file that matches it ("" for none)
        self._callers: OrderedDict[str, list[str] | None] = OrderedDict()
        self.consulted: set[str] = set()
        self._evidence: dict[str, dict[str, bool]] = {}
        self._exports: dict[str, dict[str, tuple[int, str, str]]] = {}
        self._stars: dict[str, list[str]] = {}  # path -> the project's modules it star-imports at its top
        self._cuda_extensions: frozenset[str] | None = None
        self._adopted: Context | None = None  # the file being linted (never evicted)
        self._top: dict[str, frozenset[str]] = {}  # path -> the modules its top level imports (small: kept)
        self._evicted: list[Context] = []  # dropped from the cache while a file was linted
        self._names_asked = 0
        self._called: dict[bytes, tuple[str, ...]] | None = None  # name -> the files that call it (_call_index)
        self._reachable: dict[str, frozenset[str] | None] = {}  # path -> names its calls may resolve to elsewhere
        self._answers: dict[tuple[str, ...], tuple[object, frozenset[str]]] = {}  # remember(): answer, its files
        self._values: dict[str, frozenset[str] | None] = {}  # path -> names it uses as values (used_as_value)
        self._uncalled: dict[str, frozenset[str] | None] = {}  # path -> names it uses but to call (only_called)
        self._builds_cuda: dict[str, bool] = {}  # path -> does it build CUDA kernels at import
        self._star_exports: dict[str, dict[str, str]] = {}  # path -> what `from it import *` binds by its imports
        self._targets: dict[tuple[str, str], tuple[str, str | None]] = {}  # (import, importer) -> (module, file)
        self._module_cuda_only: dict[tuple[str, str | None], bool] = {}  # _cuda_only_module
        self._noted: dict[str, int] = {}  # path -> hash of the bytes the pre-filter parsed (note_tree)
        self._root: str | None = None  # the folder holding every file ("" for a run of one file)
        self._skipping_conftests: dict[str, bool] = {}  # conftest.py -> does it de-collect tests without CUDA

    @property
    def root(self) -> str | None:
        """The folder that holds every file of the run (None for a single file: no project to speak of)."""
        if self._root is None:
            self._root = os.path.commonpath(self.paths) if len(self.paths) > 1 else ""
        return self._root or None

    def collection_skipped_without_cuda(self, path: str) -> bool:
        """Is the test module ``path`` in a folder whose ``conftest.py`` (its own or one above, within the run)
        tells pytest not to collect its tests where CUDA is missing: ``collect_ignore_glob`` (or
        ``collect_ignore``) set at its top level under ``if not torch.cuda.is_available():``, or to what a helper
        named for CUDA returns (gsplat's ``collect_ignore_glob = cuda_collect_ignore_glob(...)``)? Cached per
        conftest; those read are consulted."""
        root = self.root
        folder = os.path.dirname(os.path.abspath(path))
        while root is not None and (folder == root or folder.startswith(root + os.sep)):
            conftest = os.path.join(folder, "conftest.py")
            if conftest in self._path_set:
                self.consulted.add(conftest)
                held = self._skipping_conftests.get(conftest)
                if held is None:
                    held = self._skipping_conftests[conftest] = _ignores_without_cuda(_ast_of(self.read(conftest)))
                if held:
                    return True
            if folder == root:
                break
            folder = os.path.dirname(folder)
        return False

    # --- files ----------------------------------------------------------------------------------
    def siblings(self, path: str) -> Iterator[bytes]:
        """The bytes of the project's other regular files in ``path``'s directory, one at a time, each recorded
        as consulted when it is read (a caller that stops early depends on no more than it read)."""
        here = os.path.abspath(path)
        for other in self.paths:
            if other != here and os.path.dirname(other) == os.path.dirname(here) and os.path.isfile(other):
                self.consulted.add(other)
                yield self.read(other) or b""

    def read(self, path: str) -> bytes | None:
        """A file's bytes; None for what cannot be read or is no regular file (a FIFO would block)."""
        if path in self._bytes:
            self._bytes.move_to_end(path)
            return self._bytes[path]
        data: bytes | None
        try:
            with open(path, "rb", opener=_regular_file) as fh:
                data = fh.read()
        except OSError:
            data = None
        self._bytes[path] = data
        self._bytes_held += len(data or b"")
        while self._bytes_held > self.MAX_BYTES and len(self._bytes) > 1:
            _, old = self._bytes.popitem(last=False)
            self._bytes_held -= len(old or b"")
        return data

    def context(self, path: str) -> Context | None:
        """The LibCST context of a file of the run (None when it cannot be read or parsed)."""
        path = os.path.abspath(path)
        if self._adopted is not None and os.path.abspath(self._adopted.path) == path:
            return self._adopted  # the file being linted: its nodes are the ones its rules hold
        if path in self._contexts:
            self._contexts.move_to_end(path)
            self.consulted.add(path)
            return self._contexts[path]
        ctx = self._parse(path)
        self._contexts[path] = ctx
        self._trim_contexts()
        self.consulted.add(path)
        return ctx

    def _trim_contexts(self) -> None:
        """Keep at most MAX_CONTEXTS parsed files, and no more than MAX_CONTEXT_BYTES of their text (a syntax
        tree takes about a hundred times its file's size): the least recently used go first."""
        held = sum(len(c.text or "") for c in self._contexts.values() if c is not None)
        while len(self._contexts) > 1 and (len(self._contexts) > self.MAX_CONTEXTS or held > self.MAX_CONTEXT_BYTES):
            _, old = self._contexts.popitem(last=False)
            held -= len(old.text or "") if old is not None else 0
            if old is not None and old is not self._adopted:
                self._evicted.append(old)  # released once the file being linted is done (it may still use it)

    def adopt(self, ctx: Context) -> None:
        """The file being linted: its context is the one its rules use."""
        path = os.path.abspath(ctx.path)
        previous = self._adopted
        if previous is not None and previous is not ctx \
                and self._contexts.get(os.path.abspath(previous.path)) is not previous:
            self._evicted.append(previous)  # evicted while it was linted
        self._adopted = ctx
        self._contexts[path] = ctx
        self._contexts.move_to_end(path)
        ctx.project = self
        self._bind_star_imports(ctx)
        self._trim_contexts()

    def _bind_star_imports(self, ctx: Context) -> None:
        """Bind in ``ctx`` the imports that a ``from utils import *`` of a module of the project brings (``import
        torch`` at utils' top level: the tutorial's ``eval.py`` then calls ``torch.load`` with no import of its
        own). Only a module without ``__all__`` (which would choose what ``*`` exports), only its public import
        bindings, and never over a name the file binds itself."""
        for module in ctx.star_imports:
            for bound, target in self.star_exports(module, ctx.path).items():
                if bound not in ctx.aliases and bound not in ctx.relative_imports:
                    ctx.aliases[bound] = target
                    ctx.imported_modules.add(target)

    def star_exports(self, module: str, importer: str) -> dict[str, str]:
        """What ``from <module> import *`` in ``importer`` binds by the module's own imports, when the module is
        one of the project's (:func:`_star_exported_imports`); nothing otherwise. Cached per file."""
        path = self._import_file(module, os.path.abspath(importer))
        if path is None:
            return {}
        self.consulted.add(path)  # (the importer's findings rest on it: a change there is one here)
        held = self._star_exports.get(path)
        if held is None:
            held = self._star_exports[path] = _star_exported_imports(self.read(path) or b"")
        return held

    def release_evicted(self) -> None:
        """Release the contexts dropped from the cache while the last file was linted (their analyses hold
        them: see :meth:`Context.release`), unless the cache holds them again."""
        if not self._evicted:
            return
        held = {id(c) for c in self._contexts.values()}
        for ctx in self._evicted:
            if id(ctx) not in held:
                ctx.release()
        self._evicted.clear()

    def _parse(self, path: str) -> Context | None:
        from devlint.source import SourceError, decode

        data = self.read(path)
        if data is None or len(data) > LIBCST_MAX_BYTES:
            return None
        try:
            text = decode(data).text
            module = cst.parse_module(text)
        except (SourceError, Exception):  # noqa: BLE001 - an unparsable file answers nothing
            return None
        ctx = Context(module, path, text)
        ctx.project = self
        return ctx

    # --- modules -------------------------------------------------------------------------------------
    def _module_index(self) -> dict[str, list[str]]:
        """Every dotted name a file could be imported as (each suffix of its path)."""
        if self._modules is None:
            index: dict[str, list[str]] = {}
            for path in self.paths:
                parts = path[:-3].split(os.sep) if path.endswith(".py") else []
                if not parts:
                    continue
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                for k in range(1, min(len(parts), 6) + 1):
                    index.setdefault(".".join(parts[-k:]), []).append(path)
            self._modules = index
        return self._modules

    def has_file(self, path: str) -> bool:
        return os.path.abspath(path) in self._path_set

    def has_module(self, module: str) -> bool:
        """Is ``module`` (a dotted name) one of the run's files?"""
        return module in self._module_index()

    def module_file(self, module: str, near: str) -> str | None:
        """The file of ``module`` among the run's files (the nearest to ``near`` when several match)."""
        found = self._module_index().get(module)
        if not found:
            return None
        near = os.path.abspath(near)
        top = module.partition(".")[0]
        if top in sys.stdlib_module_names:
            # `import math` is the standard library's, not a project's mmdit/math.py: only a file beside a
            # script (its folder is first on sys.path) shadows it, and never a module built into Python
            found = [p for p in found if os.path.dirname(p) == os.path.dirname(near)
                     and top not in sys.builtin_module_names]
            if not found:
                return None
        if len(found) == 1:
            return found[0]
        return max(found, key=lambda p: len(os.path.commonpath([os.path.abspath(p), near])))

    def resolve_relative_name(self, path: str, spec: tuple[int, str, str]) -> tuple[str, str] | None:
        """(file, symbol) of a name bound by ``from <level dots><module> import <name>`` in ``path``."""
        found = self._relative_file(path, *spec)
        return self.follow_export(*found) if found is not None else None

    def follow_export(self, path: str, symbol: str, depth: int = 3) -> tuple[str, str]:
        """Where ``symbol`` of ``path`` is defined when ``path`` only re-exports it (``from .loss import
        CrossEntropyLoss`` in a package's ``__init__.py``): followed through up to ``depth`` files."""
        head, _, rest = symbol.partition(".")
        spec = self._exported(path).get(head) if head else None
        if spec is None and head and depth > 0:
            # `from .cls_trainer import *` in a package's __init__.py: the module of the star that defines it
            for module in self._stars.get(path, ()):
                file = self._import_file(module, path)
                if file is not None and (_defines(self.read(file) or b"", head) or head in self._exported(file)):
                    return self.follow_export(file, symbol, depth - 1)
        if spec is None or depth == 0:
            return path, symbol
        level, module, name = spec
        if level:
            found = self._relative_file(path, level, module, name)
        else:
            file = self.module_file(module, path)
            found = (file, name) if file is not None else None
        if found is None:
            return path, symbol
        target, inner = found
        return self.follow_export(target, ".".join(p for p in (inner, rest) if p), depth - 1)

    def _exported(self, path: str) -> dict[str, tuple[int, str, str]]:
        """The names ``path`` binds with ``from ... import`` at its top level: (level, module, name)."""
        if path not in self._exports:
            self._scan_top(path)
        return self._exports[path]

    def note_tree(self, path: str, data: bytes, tree: ast.Module) -> None:
        """The pre-filter parsed this file of the run (``data``, its bytes on disk): keep its top-level imports,
        so that the walks of the files importing it do not parse it again."""
        here = os.path.abspath(path)
        if here in self._path_set and self.read(here) == data:
            self._noted[here] = hash(data)
            if here not in self._top:
                self._scan_top(here, tree)

    def own_top_imports(self, ctx: Context) -> frozenset[str] | None:
        """:meth:`_top_imports` of the file being linted when its text is the bytes the pre-filter parsed
        (:meth:`note_tree`: no parse again); None otherwise (standard input, a notebook, a later pass of
        ``--fix``, a file outside the run)."""
        here = os.path.abspath(ctx.path)
        noted = self._noted.get(here)
        text = ctx.text if ctx.text is not None else ctx.module.code
        if noted is None or noted != hash(text.encode("utf-8", "surrogateescape")):
            return None
        return self._top_imports(here)

    def _scan_top(self, path: str, tree: ast.Module | None = None) -> None:
        """One parse of ``path``'s top level for both :meth:`_exported` and :meth:`_top_imports` (a file the
        import walk reaches is often one a name is followed through)."""
        import ast

        if tree is None:
            data = self.read(path)
            tree = _ast_of(data) if data is not None and b"import" in data else None
        names: dict[str, tuple[int, str, str]] = {}
        stars: list[str] = []
        for node in tree.body if isinstance(tree, ast.Module) else []:
            if isinstance(node, ast.ImportFrom) and (node.level or self.has_module(node.module or "")):
                for alias in node.names:
                    if alias.name != "*":
                        names[alias.asname or alias.name] = (node.level, node.module or "", alias.name)
                    else:
                        stars.append("." * node.level + (node.module or ""))
        self._exports[path] = names
        self._stars[path] = stars
        self._top[path] = top_level_imports(tree) if isinstance(tree, ast.Module) else frozenset()

    def _relative_file(self, path: str, level: int, module: str, name: str) -> tuple[str, str] | None:
        base = os.path.dirname(os.path.abspath(path))
        for _ in range(level - 1):
            base = os.path.dirname(base)
        target = os.path.join(base, *module.split(".")) if module else base
        for candidate, symbol in ((os.path.join(target, name + ".py"), ""),
                                  (os.path.join(target, name, "__init__.py"), ""),
                                  (target + ".py", name), (os.path.join(target, "__init__.py"), name)):
            if candidate in self._path_set:
                return candidate, symbol
        return None

    def resolve(self, ctx: Context, dotted: str) -> tuple[str, str] | None:
        """(file, symbol in it) that a dotted name used in ``ctx`` refers to, when it is the project's:
        ``init_env`` (imported), ``env.init_env``, ``helper`` (defined in the file itself)."""
        root, _, rest = dotted.partition(".")
        if root in ctx.relative_imports:
            level, module, name = ctx.relative_imports[root]
            found = self._relative_file(ctx.path, level, module, name)
            if found is None:
                return None
            path, symbol = found
            return self.follow_export(path, ".".join(p for p in (symbol, rest) if p))
        target = ctx.aliases.get(root)
        if target is None:
            return os.path.abspath(ctx.path), dotted
        full = f"{target}.{rest}" if rest else target
        parts = full.split(".")
        for i in range(len(parts) - 1, 0, -1):
            file = self.module_file(".".join(parts[:i]), ctx.path)
            if file is not None:
                return self.follow_export(file, ".".join(parts[i:]))
        return None

    def definition(self, path: str, symbol: str) -> Definition | None:
        """The function or class ``symbol`` (``f``, ``Class.method``) defined at the top of ``path``."""
        ctx = self.context(path)
        if ctx is None or not symbol:
            return None
        return find_definition(ctx, symbol)

    # --- answers about other files, kept for the run ----------------------------------------------------
    def recall(self, key: tuple[str, ...]) -> tuple[bool, object]:
        """(True, the answer) when :meth:`remember` holds one for ``key``, its files recorded as consulted
        again (the asking file's result rests on them too); else (False, None)."""
        held = self._answers.get(key)
        if held is None:
            return False, None
        self.consulted.update(held[1])
        return True, held[0]

    def remember(self, key: tuple[str, ...], compute: Callable[[], T], path: str) -> T:
        """``compute()``, an answer about ``path`` (a file whose syntax tree the bounded cache may drop) that
        holds for the whole run: kept with ``path`` and every file consulted while computing it, so that a
        later file asking the same (:meth:`recall`) neither parses them again nor loses them as dependencies."""
        outer = self.consulted
        self.consulted = set()
        try:
            value = compute()
        finally:
            deps = self.consulted | {path}
            self.consulted = outer | deps
        self._answers[key] = (value, frozenset(deps))
        return value

    # --- the pre-filter's view of another file ----------------------------------------------------------
    def function_evidence(self, path: str, symbol: str) -> bool:
        """Does function ``symbol`` of ``path`` hold grad/device evidence, or call the project (the ``ast``
        screen's question, so that a ``.numpy()`` on what it returns keeps its caller's file for the full
        analysis)? Each file is screened once; its answers are kept, not its tree."""
        self.consulted.add(path)  # the asking file's result depends on this one (the results cache's deps)
        if path not in self._evidence:
            self._evidence[path] = {}  # recursion: nothing known while computing
            from devlint import screen

            data = self.read(path)
            tree = _ast_of(data)
            if tree is not None:
                index = screen.AstIndex.build(tree, self, path)
                found = {name: index.scope_evidence(scope) or index.calls_project(scope)
                         for name, scope in index.function_scopes.items()}
                found.update((name, True) for name in index.module_class_names)  # Net(): maybe a module class
                found.update((name, True) for name in index.pipeline_class_names)  # a pipeline: no module
                self._evidence[path] = found
        # unknown (not a function of the file, or being computed): it may
        return self._evidence[path].get(symbol, path not in self._evidence or not self._evidence[path])

    # --- project-wide facts ------------------------------------------------------------------------
    @property
    def nccl(self) -> bool:
        """Does the project run a NCCL process group (its distributed code is CUDA-only by design)? Also when
        no file of it names ``init_process_group``: a launcher library (Lightning, accelerate, dora) starts the
        group, with NCCL on GPUs (on the real-code benchmark, 13 labelled helpers of such projects, no bug)."""
        return self.any_file(devices.NCCL_TEXT) or not self.any_file(devices.PROCESS_GROUP_TEXT) \
            or self.launcher_backend  # (consulted)

    @property
    def launcher_backend(self) -> bool:
        """Does the project start its process group with the backend of a launcher library's option
        (``backend=args.distributed_backend`` where no file of it defines ``--distributed-backend``: SAT's and
        Megatron-LM's parsers do, defaulting to "nccl")?"""
        return self.any_file(devices.LAUNCHER_BACKEND_READ) and not self.any_file(devices.LAUNCHER_BACKEND_OPTION)

    def any_file(self, pattern: re.Pattern[bytes]) -> bool:
        """Does some file of the project match ``pattern``? Cached per pattern; the files read are recorded as
        consulted (a file whose result rests on the answer depends on them)."""
        held = self._matches.get(pattern.pattern)
        if held is None:
            held = self._matches[pattern.pattern] = next(
                (p for p in self.paths if pattern.search(self.read(p) or b"")), "")
        self.consulted.update(self.paths[:self.paths.index(held) + 1] if held else self.paths)
        return bool(held)

    @property
    def cuda_extensions(self) -> frozenset[str]:
        """The modules the project builds from CUDA sources (``CUDAExtension("name", ...)`` in a setup.py,
        ``torch.utils.cpp_extension.load(name=..., sources=[... ".cu"])``): code that imports one is
        CUDA-only by design."""
        if self._cuda_extensions is None:
            marker = re.compile(rb"CUDAExtension|cuda_sources|with_cuda|\.cu[\"']")
            names: set[str] = set()
            for path in self.paths:
                data = self.read(path) or b""
                if marker.search(data):
                    names.update(_extension_names(data))
            self._cuda_extensions = frozenset(names)
        return self._cuda_extensions

    def imports_cuda_only(self, modules: Iterable[str], near: str) -> bool:
        """Does one of ``modules`` (imported by the file ``near``) name a CUDA extension of the project or a
        CUDA-only library (devices.cuda_only_library: TensorRT, PyCUDA, ...), or a module of the project that
        imports one at its top?"""
        seen: set[str] = set()
        frontier = [(module, near) for module in modules]
        for _hop in range(_IMPORT_HOPS):  # the file's imports, then what the project's modules among them import
            following: list[tuple[str, str]] = []
            for marked, importer in frontier:
                if marked.startswith("|"):  # one of these is imported: CUDA-only when each is, or what it imports
                    if all(self._cuda_only_alternative(alt, importer) for alt in marked[1:].split("|")):
                        return True
                    continue
                module, path = self._import_target(marked, importer)
                if not module:
                    continue
                if self._cuda_only_module(module, importer, path):
                    return True
                if path is not None and path not in seen:
                    seen.add(path)
                    self.consulted.add(path)  # its top imports decide: the asking file depends on it
                    following.extend((m, path) for m in self._top_imports(path))
                    # importing models.registry runs models/__init__.py first (and what it imports): in the
                    # same hop (the loop reaches what is appended to the list it walks)
                    frontier.extend((p, importer) for p in self._parent_packages(module, importer, path))
            frontier = following
        return any(self._cuda_only_module(module, importer) for module, importer in frontier
                   if not module.startswith(("?", "|")))

    def imported_files(self, module: str, importer: str, hops: int | None = None) -> Iterator[str]:
        """The files of the project that ``import module`` in the file ``importer`` runs, nearest first: the
        packages it runs first (``speech/__init__.py`` for ``speech.ops.mask``), the module's own file, then
        their unconditional top-level imports (absolute or relative, and the packages those run first), then
        theirs, down to ``hops`` imports deep (8); each once, ``importer`` never."""
        seen = {os.path.abspath(importer)}
        frontier = [(module, os.path.abspath(importer))]
        for _hop in range(_IMPORT_HOPS if hops is None else hops):
            following: list[tuple[str, str]] = []
            for marked, by in frontier:
                if marked.startswith("|"):
                    continue  # one module or another: neither certainly runs
                name, found = self._import_target(marked, by)
                if not name or found is None:
                    continue
                for target in [*(self._import_file(p, by) for p in self._parent_packages(name, by, found)), found]:
                    if target is not None and target not in seen:
                        seen.add(target)
                        self.consulted.add(target)
                        following.extend((m, target) for m in self._top_imports(target))
                        yield target
            frontier = following

    def _cuda_only_alternative(self, alternative: str, importer: str) -> bool:
        """Is one alternative of a ``try`` / ``except ImportError`` import CUDA-only: the module itself, or a
        file of the project that imports a CUDA-only one at its top (one hop: pytorch-pwc's ``from .correlation
        import correlation``, else ``import correlation``, whose file imports CuPy)? ``a&?a.b``: the module of
        ``from a import b`` and, when it is a module of the project, ``a.b``."""
        for piece in alternative.split("&"):
            module, path = self._import_target(piece, importer)
            if not module:
                continue
            if self._cuda_only_module(module, importer, path):
                return True
            if path is not None:
                self.consulted.add(path)
                if any(self._cuda_only_module(m, path) for m in self._top_imports(path)
                       if not m.startswith(("?", "|"))):
                    return True
        return False

    def _parent_packages(self, module: str, importer: str, path: str) -> list[str]:
        """The packages of the project that importing ``module`` (its file ``path``) imports first: ``models`` for
        ``models.registry`` (``.models`` for ``.models.registry``), when models/__init__.py is a file of the run
        (not the importer's own package, already running)."""
        dots = module[:len(module) - len(module.lstrip("."))]
        parts = module[len(dots):].split(".")
        own = os.path.dirname(os.path.abspath(importer))
        # the packages are the folders above the module's own file (a models/__init__.py elsewhere in the run is
        # another package: Wonder3D's NeuS/models has none, its instant-nsr-pl/models one imports tinycudann)
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.basename(path) == "__init__.py":
            folder = os.path.dirname(folder)
        above: dict[int, str] = {}
        for k in range(len(parts) - 1, 0, -1):
            above[k] = os.path.join(folder, "__init__.py")
            folder = os.path.dirname(folder)
        found = []
        for k in range(1, len(parts)):
            package = dots + ".".join(parts[:k])  # relative too: MambaVision's `from .models.registry import ...`
            init = self._import_file(package, importer)
            if init is not None and init != path and init == above[k] \
                    and os.path.commonpath([own, os.path.dirname(init)]) != os.path.dirname(init):
                found.append(package)
        return found

    def _cuda_only_module(self, module: str, importer: str, path: str | None = "") -> bool:
        """Is the imported ``module`` (its file ``path``, looked up when not given) CUDA-only by itself: a
        CUDA-only library, a module that builds CUDA kernels at import, a compiled CUDA extension of the
        project?"""
        if path == "":
            path = self._import_file(module, importer)
        key = (module, path)
        held = self._module_cuda_only.get(key)
        if held is None:
            held = self._module_cuda_only[key] = self._cuda_only_uncached(module, path)
        return held

    def _cuda_only_uncached(self, module: str, path: str | None) -> bool:
        if module.startswith("."):  # a relative import: its file, or a compiled extension beside it
            module = module.lstrip(".")
        elif devices.cuda_only_library(module):
            return True
        if path is not None and self._builds_cuda_at_import(path):
            return True  # stylegan2's op/fused_act.py: `fused = load("fused", sources=[... ".cu"])`
        # a compiled extension has no .py of the project (basicsr's deform_conv.py loads deform_conv; an
        # ffi extension "_ext.dcn_v2" is imported as `from ._ext import dcn_v2`)
        extensions = self.cuda_extensions
        last = module.rsplit(".", 1)[-1]
        return path is None and (module in extensions or last in extensions
                                 or any(e.startswith(last + ".") for e in extensions))

    def _import_target(self, module: str, importer: str) -> tuple[str, str | None]:
        """(module, its file) for the walk; ``?a.b`` (a name ``from a import b`` imports) only when it is a
        module of the project, else ("", None): nothing to follow. Kept for the run (every file's walk asks
        again about the modules it shares with the others)."""
        key = (module, importer)
        held = self._targets.get(key)
        if held is None:
            if not module.startswith("?"):
                held = module, self._import_file(module, importer)
            else:
                path = self._import_file(module[1:], importer)
                held = (module[1:], path) if path is not None else ("", None)
            self._targets[key] = held
        return held

    def imports_torch_code(self, modules: Iterable[str], near: str) -> bool:
        """Does one of ``modules`` (``top_level_imports`` of the file ``near``) name a module of the project whose
        file imports torch, directly or where a package re-exports the name (``from mobile_sam import
        sam_model_registry``, defined in mobile_sam/build_sam.py)? A script built on the project's own torch
        code uses torch without importing it."""
        for marked in modules:
            if marked.startswith("|"):
                continue
            files: list[str | None]
            if marked.startswith("?"):
                package, _, name = marked[1:].rpartition(".")
                path = self._import_file(package, near) if package else None
                files = [path, self.follow_export(path, name)[0]] if path is not None else []
            else:
                files = [self._import_file(marked, near)]
            for path in files:
                if path is not None and path != os.path.abspath(near):
                    self.consulted.add(path)
                    if _TORCH_IMPORT.search(self.read(path) or b""):
                        return True
        return False

    def import_file(self, module: str, importer: str) -> str | None:
        """The file of a module that ``importer`` imports (``a.b``, or relative as written: ``..a``), None when
        it is not one of the run's files."""
        return self._import_file(module, importer)

    def _import_file(self, module: str, importer: str) -> str | None:
        """The file of an imported module: absolute (``models.op.fused_act``) or relative to the importer
        (``.op.deform_attn``, leading dots as written), None when it is not one of the run's files."""
        if not module.startswith("."):
            return self.module_file(module, importer)
        rest = module.lstrip(".")
        base = os.path.dirname(os.path.abspath(importer))
        for _ in range(len(module) - len(rest) - 1):
            base = os.path.dirname(base)
        target = os.path.join(base, *rest.split(".")) if rest else base
        return next((c for c in (target + ".py", os.path.join(target, "__init__.py")) if c in self._path_set), None)

    def _builds_cuda_at_import(self, path: str) -> bool:
        """Does the module build CUDA kernels when it is imported: a statement at its top level that calls
        ``torch.utils.cpp_extension.load(...)`` / ``load_inline(...)`` with CUDA sources? Without the CUDA toolkit
        that raises (``OSError: CUDA_HOME environment variable is not set`` on torch 2.13.0+cpu), so the module
        and what imports it run only where CUDA is. Cached per file."""
        if path not in self._builds_cuda:
            data = self.read(path) or b""
            self._builds_cuda[path] = bool(_CUDA_SOURCE.search(data)) and _top_level_cuda_build(data)
        return self._builds_cuda[path]

    def _top_imports(self, path: str) -> frozenset[str]:
        """The modules ``path`` imports at its top level (parsed once per run: every file importing it asks);
        relative ones as written (``.op.deform_attn``; ``from . import x`` as ``.x``)."""
        if path not in self._top:
            self._scan_top(path)
        return self._top[path]

    def calls_named(self, name: str, also: tuple[str, ...] = (), home: str | None = None,
                    resolving: bool = True) -> list[tuple[Context, cst.Call]] | None:
        """Every call of something named ``name`` (``name(...)``, ``x.name(...)``) in the run's files (with
        ``also``: only in the files that mention one of those too (a method's class, a function's module or
        its package) and in ``home``, its own file), or None when too many files call it to look at them all.
        ``resolving``: only the calls that may resolve to a definition (in another file than ``home``, those
        whose root the file imports, or ``self``: :meth:`_may_call_elsewhere`)."""
        files = self._caller_files(name, also, home)
        if files is None:
            return None
        # the parsed files are held by the bounded context cache only (a list of calls would keep them all)
        found: list[tuple[Context, cst.Call]] = []
        for path in files:
            if resolving and path != home and not self._may_call_elsewhere(path, name):
                self.consulted.add(path)  # (as if parsed: the answer rests on what it holds)
                continue  # none of its calls of the name can resolve to another file: not worth a LibCST parse
            ctx = self.context(path)
            if ctx is None:
                continue
            for call in ctx.nodes(cst.Call):
                func = call.func
                called = func.value if isinstance(func, cst.Name) else (
                    func.attr.value if isinstance(func, cst.Attribute) else None)
                if called == name:
                    found.append((ctx, call))
        return found

    def calls_with_keywords(self, keywords: frozenset[str]) -> list[tuple[Context, cst.Call]] | None:
        """Every call that passes all of ``keywords`` by keyword, in the run's files whose bytes hold each as
        ``name=``; None when too many files hold them to look at them all."""
        words = [re.compile(rb"\b" + re.escape(k.encode()) + rb"\s*=(?!=)") for k in sorted(keywords)]
        rare = max(keywords, key=len).encode()
        files = [p for p in self.paths if rare in (data := self.read(p) or b"") and all(w.search(data) for w in words)]
        self.consulted.update(self.paths)
        if len(files) > self.MAX_CALLER_FILES:
            return None
        found: list[tuple[Context, cst.Call]] = []
        for path in files:
            ctx = self.context(path)
            if ctx is None:
                continue
            for call in ctx.nodes(cst.Call):
                if keywords <= {a.keyword.value for a in call.args if a.keyword is not None}:
                    found.append((ctx, call))
        return found

    def _caller_files(self, name: str, also: tuple[str, ...], home: str | None) -> list[str] | None:
        """:meth:`_files_calling`, kept for the last MAX_CALLER_NAMES names asked."""
        key = f"{name}/{also}/{home}"
        if key in self._callers:
            self._callers.move_to_end(key)
        else:
            self._callers[key] = self._files_calling(name, also, home)
            if len(self._callers) > self.MAX_CALLER_NAMES:
                self._callers.popitem(last=False)
        return self._callers[key]

    def _files_calling(self, name: str, also: tuple[str, ...], home: str | None) -> list[str] | None:
        """The files :meth:`calls_named` looks in (None: more than MAX_CALLER_FILES)."""
        word = name.encode()
        others = [a.encode() for a in also]
        self._names_asked += 1
        if self._names_asked > self.SCAN_NAMES and name.isascii():  # many names: one pass, then lookups
            files = [p for p in self._call_index().get(word, ())
                     if not others or p == home or any(o in (self.read(p) or b"") for o in others)]
            return None if len(files) > self.MAX_CALLER_FILES else files
        pattern = re.compile(rb"\b" + re.escape(word) + rb"\s*\(")
        files = []
        for p in self.paths:
            data = self.read(p) or b""
            # bytes.find first (memmem): a regex over every file for every name costs seconds
            if word in data and (not others or any(o in data for o in others) or p == home) \
                    and pattern.search(data):
                files.append(p)
        return None if len(files) > self.MAX_CALLER_FILES else files

    def _may_call_elsewhere(self, path: str, name: str) -> bool:
        """May a call of ``name`` in ``path`` resolve (:func:`callee`) to a definition in another file? Only a
        call whose dotted root is imported in the file (``name(...)`` imported, ``mod.name(...)``,
        ``Class.name(...)``) or is ``self`` / ``cls`` (a method inherited from a base) can: :meth:`resolve`
        reads any other root as the file's own. Over CPython's ``ast`` (cached per file: the names only); a
        file it cannot parse may."""
        if path not in self._reachable:
            self._reachable[path] = _calls_resolving_elsewhere(self.read(path))
        names = self._reachable[path]
        return names is None or name in names

    def called_elsewhere_with(self, name: str, also: tuple[str, ...], home: str, *patterns: re.Pattern[bytes]) -> bool:
        """Does a file other than ``home`` that may call ``name`` (as :meth:`calls_named` finds them) match
        every one of ``patterns``? A byte search (no parse); False when too many files call the name for
        :meth:`calls_named` to look at them. The files read are consulted."""
        for path in self._caller_files(name, also, home) or ():
            if path != home:
                self.consulted.add(path)
                data = self.read(path) or b""
                if all(p.search(data) for p in patterns):
                    return True
        return False

    def mentioned_elsewhere(self, name: str, home: str) -> bool:
        """Does a file of the run other than ``home`` mention ``name`` as a word (it may import and read a
        module-level variable of ``home``)? A byte search; every file read is consulted."""
        return self._elsewhere(re.compile(rb"\b" + re.escape(name.encode()) + rb"\b"), home)

    def imported_elsewhere(self, stem: str, home: str) -> bool:
        """Does a file of the run other than ``home`` import a module named ``stem`` (``import stem``, ``from
        pkg.stem import x``, ``from . import stem``, ``import_module("...stem")``)? A byte search; every file read
        is consulted."""
        word = re.escape(stem.encode())
        return self._elsewhere(re.compile(rb"(?:^|\n)[ \t]*(?:from[ \t]+[\w.]*\b" + word
                                          + rb"\b|(?:from[ \t]+[\w.]+[ \t]+)?import[ \t]+[^\n]*\b" + word
                                          + rb"\b)|import_module\([^)]*\b" + word + rb"\b"), home)

    def _elsewhere(self, pattern: re.Pattern[bytes], home: str) -> bool:
        """Does a file of the run other than ``home`` match ``pattern``? Every file read is consulted."""
        here = os.path.abspath(home)
        for path in self.paths:
            if path == here:
                continue
            self.consulted.add(path)
            if pattern.search(self.read(path) or b""):
                return True
        return False

    def used_as_value(self, name: str, home: str) -> bool:
        """Is the function ``name`` of ``home`` bound to another name somewhere it may be bound (``renderer =
        render_rays``): in ``home`` or in a file that imports the name or star-imports a module? Its calls then go
        through that name (:func:`_names_used_as_values`). Read over CPython's ``ast``; the files read are
        consulted."""
        return self._named_where_imported(name, home, self._values, _names_used_as_values)

    def only_called(self, name: str, home: str, through_methods: bool = False) -> bool:
        """Is ``name`` (a class of ``home``) only ever called, in ``home`` and in every file that imports it or
        star-imports a module: not a base class, an argument (``setup_run_config(config, RunConfig)``), a value
        bound or returned (a registry)? Type annotations and ``isinstance`` tests do not count. Then its
        constructions are the calls devlint sees. ``through_methods``: a method called through the class
        (``Llama.build(...)``, a classmethod factory) counts as a call too (for a class that builds itself only
        by its name, never through ``cls(...)``). Read over CPython's ``ast``; the files read are consulted."""
        keys = (name,) if through_methods else (name, name + ".")
        return not self._named_where_imported(name, home, self._uncalled, _names_used_uncalled, keys)

    def _named_where_imported(self, name: str, home: str, held: dict[str, frozenset[str] | None],
                              reader: Callable[[bytes], frozenset[str] | None],
                              keys: tuple[str, ...] | None = None) -> bool:
        """Is ``name`` (or one of ``keys``, the spellings ``reader`` gives it) among the names ``reader`` finds
        (kept per file in ``held``) in ``home`` or in a file that imports the name or star-imports a module? A
        file CPython cannot parse may: yes."""
        word = name.encode()
        imports = re.compile(rb"\bimport\b[^\n]*(?:\b" + re.escape(word) + rb"\b|\*)")
        for path in self.paths:
            data = self.read(path) or b""
            if word not in data or (path != home and not imports.search(data)):
                continue
            self.consulted.add(path)
            if path not in held:
                held[path] = reader(data)
            names = held[path]
            if names is None or any(key in names for key in keys or (name,)):
                return True
        return False

    def _call_index(self) -> dict[bytes, tuple[str, ...]]:
        """Every name called in the run's files (``name(`` / ``x.name (``, as :meth:`_files_calling`'s pattern
        finds it) -> the files that call it, in the run's order (built once, when many names are asked:
        reading every file once instead of once per name)."""
        if self._called is None:
            index: dict[bytes, list[str]] = {}
            for p in self.paths:
                for called in set(_CALLED.findall(self.read(p) or b"")):
                    index.setdefault(called, []).append(p)
            # tuples of strings: the garbage collector stops tracking them (lists it would walk at every pass)
            self._called = {name: tuple(files) for name, files in index.items()}
        return self._called


# a called name: what `\bNAME\s*\(` finds (an identifier not preceded by a word character, then a parenthesis)
_CALLED = re.compile(rb"\b([A-Za-z_]\w*)\s*\(")


def top_level_imports(tree: ast.Module) -> frozenset[str]:
    """The modules a module imports unconditionally at its top (``import a.b``; ``from a import b``: ``a`` and
    ``?a.b``; relative ones as written, ``.op.deform_attn``, ``from . import x`` as ``.x``), also in a ``try``
    whose handlers raise, and the alternatives of a ``try`` that imports one module or another
    (``|_raymarching|.backend``): what :meth:`Project.imports_cuda_only` walks. The one reading of imports
    for the file being linted (guards.py) and for the files the walk reaches."""
    import ast

    found: set[str] = set()
    for node in _required_statements(tree.body):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.update(_imported_modules(node))
    found.update(_alternatives(tree.body))
    return frozenset(m for m in found if m.strip(".?|"))


def _required_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements a module runs unconditionally at its top: its top level, and the body of a ``try`` every
    handler of which raises (``try: import pointnet2._ext as _ext`` / ``except ImportError: raise
    ImportError("build the extension")``: the import is required all the same)."""
    import ast

    found: list[ast.stmt] = []
    for stmt in body:
        found.append(stmt)
        if isinstance(stmt, ast.Try) and stmt.handlers and all(_raises(h) for h in stmt.handlers):
            found.extend(stmt.body)
    return found


def _alternatives(body: list[ast.stmt]) -> list[str]:
    """``try: import _raymarching as _backend`` / ``except ImportError: from .backend import _backend``: the
    module needs one of them, written ``|_raymarching|.backend`` (project.imports_cuda_only: CUDA-only when
    every one is). A handler that raises adds nothing; one that imports nothing makes the import optional."""
    import ast

    def modules(stmts: list[ast.stmt]) -> list[str]:
        found: list[str] = []
        for stmt in stmts:
            if isinstance(stmt, ast.Import):
                found.extend(alias.name for alias in stmt.names)
            elif isinstance(stmt, ast.ImportFrom):  # `from a import b`: a, and a.b where that is a module
                found.append("&".join(_imported_modules(stmt)[:2]))
        return found

    groups = []
    for stmt in body:
        if not isinstance(stmt, ast.Try) or not stmt.handlers or all(_raises(h) for h in stmt.handlers):
            continue  # (a try whose handlers all raise: its imports are required one by one)
        first, others = modules(stmt.body), [modules(h.body) for h in stmt.handlers if not _raises(h)]
        if first and all(others):
            groups.append("|" + "|".join([*first[:1], *(o[0] for o in others)]))
    return groups


def _raises(handler: ast.ExceptHandler) -> bool:
    """Does the handler raise (anywhere in its body, not in a function it defines)?"""
    import ast

    stack: list[ast.AST] = list(handler.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Raise):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _imported_modules(node: ast.ImportFrom) -> list[str]:
    """The modules a ``from`` import names: ``a.b``; relative ones as written, ``.op.deform_attn``, and for
    ``from . import x`` (modules of the package, maybe) ``.x``; each imported name as a possible submodule,
    marked ``?`` (``from pointnet2 import pointnet2_utils``: ``?pointnet2.pointnet2_utils``, followed only when
    it is a file of the project, never taken for a compiled extension)."""
    dots = "." * node.level
    names = [alias.name for alias in node.names if alias.name != "*"]
    if node.module:
        return [dots + node.module, *("?" + dots + node.module + "." + name for name in names)]
    return [dots + name for name in names] if node.level else []


_COLLECT_IGNORE = frozenset({"collect_ignore", "collect_ignore_glob"})


def _ignores_without_cuda(tree: ast.Module | None) -> bool:
    """Does a conftest's top level set pytest's ``collect_ignore(_glob)`` where CUDA is missing: under ``if not
    torch.cuda.is_available():``, or to the result of a helper named for CUDA or the GPU?"""
    import ast

    from devlint import devices, screen

    def sets(stmt: ast.stmt) -> ast.expr | None:
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Name) and t.id in _COLLECT_IGNORE for t in targets):
                return stmt.value
        return None

    for stmt in tree.body if tree is not None else []:
        value = sets(stmt)
        if isinstance(value, ast.Call) and devices.is_guard_text((screen.dotted(value.func) or "").rsplit(".", 1)[-1]):
            return True  # collect_ignore_glob = cuda_collect_ignore_glob(...)
        if isinstance(stmt, ast.If) and isinstance(stmt.test, ast.UnaryOp) and isinstance(stmt.test.op, ast.Not) \
                and isinstance(stmt.test.operand, ast.Call) \
                and (screen.dotted(stmt.test.operand.func) or "").endswith("cuda.is_available") \
                and any(sets(s) is not None for s in stmt.body):
            return True  # if not torch.cuda.is_available(): collect_ignore_glob = ["test_*.py"]
    return False


def _ast_of(data: bytes | None) -> ast.Module | None:
    """CPython's ``ast`` of a file of the run; None when it cannot be read or parsed, or is over
    LIBCST_MAX_BYTES (LibCST does not parse it either, and its ``ast`` costs GBs)."""
    from devlint import screen

    return screen.parse(data) if data is not None and len(data) <= LIBCST_MAX_BYTES else None


def _bound_in_file(ctx: Context, name: str) -> bool:
    """Outside a project: does the file bind ``name`` to another name (:func:`_names_used_as_values`, read once
    per module; a file CPython cannot parse: maybe)?"""
    held = ctx.shared("project.values", _file_values)
    return held is None or name in held


def _file_values(ctx: Context) -> frozenset[str] | None:
    return _names_used_as_values(ctx.module.code.encode("utf-8", "surrogateescape"))


def _names_used_as_values(data: bytes) -> frozenset[str] | None:
    """The names (``f``, and ``g`` of ``mod.g``) a file binds to another name: the value of an assignment, or an
    element of a tuple, list or dict that is one (also picked from it: ``{"nerf": NeRFModel, ...}[name]``), or an
    arm of a conditional (``renderer = render_rays``, ``STEPS = {"eval": evaluate}``, ``runner_cls = TrainRunner
    if train else InferenceRunner``).
    A function handed to a call (``fire.Fire(main)``, ``mp.spawn(worker, ...)``) is not counted: what calls it
    passes its own arguments, and the defaults it leaves are relied on. None when CPython cannot parse it."""
    import ast

    from devlint import screen

    tree = _ast_of(data)
    if tree is None:
        return None
    found: set[str] = set()
    for node in screen.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            found.update(_bound_names(node.value))
    return frozenset(found)


def _bound_names(bound: ast.expr) -> Iterator[str]:
    """The names an assigned value binds (see :func:`_names_used_as_values`)."""
    import ast

    stack: list[ast.expr | None] = [bound]
    while stack:
        value = stack.pop()
        if isinstance(value, ast.Name):
            yield value.id
        elif isinstance(value, ast.Attribute):
            yield value.attr
        elif isinstance(value, (ast.Tuple, ast.List)):
            stack.extend(value.elts)
        elif isinstance(value, ast.Dict):
            stack.extend(value.values)
        elif isinstance(value, ast.IfExp):  # runner_cls = TrainRunner if args.train else InferenceRunner
            stack.extend((value.body, value.orelse))
        elif isinstance(value, ast.Subscript):  # model_cls = {"nerf": NeRFModel, ...}[name]: one of them
            stack.append(value.value)


def _calls_resolving_elsewhere(data: bytes | None) -> frozenset[str] | None:
    """The names called in the file through an imported root or ``self`` / ``cls`` (``f(...)`` with ``f``
    imported, ``mod.f(...)``, ``self.f(...)``); None when CPython cannot parse it (LibCST may). Every import of
    the file counts, at any depth (an over-approximation of the aliases LibCST's scopes give)."""
    import ast

    from devlint import screen

    if data is None:
        return frozenset()
    tree = _ast_of(data)
    if tree is None:
        return None
    imported = {"self", "cls"}
    roots: list[tuple[str, str]] = []
    for node in screen.walk(tree):
        if isinstance(node, ast.Call):
            dotted = screen.dotted(node.func)
            if dotted is not None:
                roots.append((dotted.partition(".")[0], dotted.rpartition(".")[2]))
        elif isinstance(node, ast.Import):
            imported.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.update(a.asname or a.name for a in node.names)
    if "*" in imported:
        return None  # `from module import *`: any bare name may be the project's
    return frozenset(name for root, name in roots if root in imported)


def _names_used_uncalled(data: bytes) -> frozenset[str] | None:
    """The names (``C``, and ``C`` of ``mod.C``) a file uses other than by calling them, annotating with them
    or testing ``isinstance`` against them: a base class, an argument, a value bound, returned or stored; a
    name a method is called through (``C.build(...)``, ``mod.f(...)``) as ``"C."``. None when CPython cannot
    parse it."""
    import ast

    from devlint import screen

    tree = _ast_of(data)
    if tree is None:
        return None
    quiet: set[int] = set()
    receivers: set[int] = set()
    for node in screen.walk(tree):
        if isinstance(node, ast.Call):
            quiet.add(id(node.func))  # its own node only: `mod` of `mod.C(...)` is still a use
            if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                receivers.add(id(node.func.value))  # `C` of `C.build(...)`: kept apart, as "C."
        quiet.update(id(n) for part in _quiet_parts(node) for n in ast.walk(part))
    found: set[str] = set()
    for node in screen.walk(tree):
        if id(node) in quiet:
            continue
        if isinstance(node, ast.Name):
            found.add(node.id + "." if id(node) in receivers else node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
    return frozenset(found)


def _quiet_parts(node: ast.AST) -> list[ast.AST]:
    """The parts of ``node`` that name a class without handing it around: ``isinstance``'s classes,
    annotations."""
    import ast

    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
            return [node.args[1]]
        return []
    if isinstance(node, (ast.arg, ast.AnnAssign)):
        return [node.annotation] if node.annotation is not None else []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
        return [node.returns]
    return []


def _defines(data: bytes, name: str) -> bool:
    """Does a module's text define ``name`` at its top level (``class name``, ``def name``, ``name = ...``)?"""
    word = re.escape(name.encode())
    return re.search(rb"^(?:(?:async\s+)?def|class)\s+" + word + rb"\b|^" + word + rb"\s*[:=]", data, re.M) is not None


def _regular_file(path: str, flags: int) -> int:
    """``open``'s opener: without blocking on a FIFO, and only a regular file (else OSError)."""
    fd = os.open(path, flags | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise IsADirectoryError(f"not a regular file: {path}")
    os.set_blocking(fd, True)
    return fd


# bytes that a CUDA source list or a CUDA inline build shows (the cheap test before the parse)
_TORCH_IMPORT = re.compile(rb"(?m)^[ \t]*(?:import[ \t]+torch\b|from[ \t]+torch\b)")
_CUDA_SOURCE = re.compile(rb"\.cu[\"']|cuda_sources")
# How many imports away a CUDA-only module makes the importing file CUDA-only (every hop a top-level,
# unconditional import: importing the file raises without CUDA at any depth; the bound keeps the walk short)
_IMPORT_HOPS = 8


def _top_level_cuda_build(data: bytes) -> bool:
    """Does a top-level statement call ``load(...)`` / ``load_inline(...)`` with ``.cu`` sources or
    ``cuda_sources=``?"""
    import ast

    from devlint import screen

    tree = _ast_of(data)
    for stmt in tree.body if tree is not None else []:
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Expr)):
            continue
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Call) or (screen.dotted(node.func) or "").rsplit(".", 1)[-1] not in (
                    "load", "load_inline"):
                continue
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            sources = [keywords.get("sources"), *node.args[1:2]]
            if "cuda_sources" in keywords or any(
                    isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.endswith(".cu")
                    for src in sources if src is not None for c in ast.walk(src)):
                return True
    return False


def _star_exported_imports(data: bytes) -> dict[str, str]:
    """The names a module's top-level imports bind, as ``from module import *`` exports them (public names, and
    none when the module sets ``__all__``): ``import torch`` -> torch, ``import torch.nn as nn`` -> torch.nn,
    ``from torch import optim`` -> torch.optim. Absolute imports only (a relative one is the project's)."""
    import ast

    from devlint import screen

    tree = _ast_of(data) if b"import" in data else None
    found: dict[str, str] = {}
    for node in tree.body if isinstance(tree, ast.Module) else []:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {}
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update(screen.import_bindings(node))
    return {bound: target for bound, target in found.items() if not bound.startswith("_")}


def _extension_names(data: bytes) -> set[str]:
    """The names of CUDA extensions a file builds (``CUDAExtension("name", [...])``, also through a name the
    class is assigned to, ``extension = CUDAExtension`` then ``extension("name", ...)``, the old
    ``torch.utils.ffi.create_extension("_ext.name", ..., with_cuda=with_cuda)``,
    ``cpp_extension.load(name="name", sources=[..."k.cu"])``, ``load_inline(name=..., cuda_sources=...)``)."""
    import ast

    from devlint import screen

    tree = _ast_of(data)
    nodes = list(ast.walk(tree)) if tree is not None else []
    # the class chosen through a name: `extension = CppExtension` ... `extension = CUDAExtension` (with CUDA)
    makers = {"CUDAExtension"} | {t.id for node in nodes if isinstance(node, ast.Assign)
                                  and (screen.dotted(node.value) or "").rsplit(".", 1)[-1] == "CUDAExtension"
                                  for t in node.targets if isinstance(t, ast.Name)}
    names: set[str] = set()
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        func = screen.dotted(node.func) or ""
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        name = keywords.get("name") or (node.args[0] if node.args else None)
        with_cuda = keywords.get("with_cuda")  # torch.utils.ffi.create_extension(name, ..., with_cuda=...)
        cuda = func.rsplit(".", 1)[-1] in makers or "cuda_sources" in keywords or (
            func.rsplit(".", 1)[-1] == "create_extension" and with_cuda is not None
            and not (isinstance(with_cuda, ast.Constant) and with_cuda.value is False)) or any(
            isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.endswith(".cu")
            for c in ast.walk(keywords.get("sources", ast.Constant(None))))
        if cuda and isinstance(name, ast.Constant) and isinstance(name.value, str):
            names.add(name.value)
    return names


def find_definition(ctx: Context, symbol: str) -> Definition | None:
    """The function or class ``symbol`` (``f``, ``Class.method``) at the top of ``ctx``'s module."""
    body: list[cst.CSTNode] = list(ctx.module.body)
    found: cst.FunctionDef | cst.ClassDef | None = None
    for part in symbol.split("."):
        found = next((s for s in body if isinstance(s, (cst.FunctionDef, cst.ClassDef)) and s.name.value == part), None)
        if found is None:
            return None
        inner = found.body
        body = list(inner.body) if isinstance(inner, cst.IndentedBlock) else []
    return (ctx, found) if found is not None else None


def callee(ctx: Context, call: cst.Call, only: Callable[[str, str], bool] | None = None) -> Definition | None:
    """The function (or class) of this project that ``call`` calls, if it can be told: a function of the
    file or imported from the project, ``self.method(...)`` in a class of the file. ``only``: a cheap test
    of (file, symbol) that another file must pass before it is parsed."""
    func = call.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
        cls = next((a for a in ctx.ancestors(call) if isinstance(a, cst.ClassDef)), None)
        if cls is None:
            return None
        if cls not in ctx.module.body:
            return None
        return find_definition(ctx, f"{cls.name.value}.{func.attr.value}") \
            or inherited_method(ctx, cls, func.attr.value, only)
    dotted = dotted_name(func)
    if dotted is None:
        return None
    project = ctx.project
    if project is None:
        return find_definition(ctx, dotted) if dotted.partition(".")[0] not in ctx.aliases else None
    found = project.resolve(ctx, dotted)
    if found is None:
        return None
    path, symbol = found
    if path == os.path.abspath(ctx.path):
        return find_definition(ctx, symbol)
    if only is not None and not only(path, symbol):
        return None
    return project.definition(path, symbol)


def inherited_method(ctx: Context, cls: cst.ClassDef, method: str,
                     only: Callable[[str, str], bool] | None = None) -> Definition | None:
    """``method`` of a direct base class of ``cls`` (``self.to_var(x)`` defined by a mixin), the base being
    a class of the file or of the project (the screen looks as far: direct bases only)."""
    for base in cls.bases:
        dotted = dotted_name(base.value)
        definition = resolve_definition(ctx, dotted, method, only) if dotted is not None else None
        if definition is not None and isinstance(definition[1], cst.FunctionDef):
            return definition
    return None


def resolve_definition(ctx: Context, dotted: str, member: str = "",
                       only: Callable[[str, str], bool] | None = None) -> Definition | None:
    """The definition ``dotted`` names in ``ctx`` (a class or function of the file, or one the file imports from
    the project), or its ``member`` (``Base.method``); ``only``: a cheap test of (file, symbol) that another
    file must pass before it is parsed."""
    project = ctx.project
    found = project.resolve(ctx, dotted) if project is not None else (os.path.abspath(ctx.path), dotted)
    if found is None or not found[1]:
        return None
    path, symbol = found[0], f"{found[1]}.{member}" if member else found[1]
    if path == os.path.abspath(ctx.path):
        return find_definition(ctx, symbol)
    if project is None or (only is not None and not only(path, symbol)):
        return None
    return project.definition(path, symbol)


def call_sites(ctx: Context, func: cst.FunctionDef | cst.ClassDef) -> list[tuple[Context, cst.Call]] | None:
    """The calls of ``func`` (a class: its constructions) that can be told apart: by its name in its file
    (``f(...)``, ``self.f(...)`` for a method), and in the project's files that import it (a method: that
    mention its class). None when there are too many candidates to look at."""
    target: cst.FunctionDef | cst.ClassDef = func
    owner = ctx.parent(ctx.parent(func)) if isinstance(func, cst.FunctionDef) else None
    cls = owner if isinstance(owner, cst.ClassDef) else None
    if isinstance(func, cst.FunctionDef) and func.name.value == "__init__" and cls is not None:
        target, cls = cls, None  # called as its class: Runner(...)
    name = target.name.value
    project = ctx.project
    home = os.path.abspath(ctx.path)
    also = caller_words(home, cls.name.value if cls is not None else None)
    own = [(ctx, c) for c in ctx.nodes(cst.Call) if (dotted_name(c.func) or "").split(".")[-1] == name]
    candidates = own if project is None else project.calls_named(name, also, home)
    if candidates is None:
        return None
    if project is not None and not project.has_file(home):
        candidates = [*candidates, *own]  # a file outside the project's modules (a notebook): its own calls
    sites = []
    for site_ctx, call in candidates:
        found = callee(site_ctx, call)
        if (found is not None and found[1] is target) or (
                found is None and cls is None and isinstance(call.func, cst.Name) and ctx.parent(target) is ctx.module
                and _star_imported(site_ctx, name, home)):
            sites.append((site_ctx, call))
    return sites


def caller_words(home: str, cls: str | None) -> tuple[str, ...]:
    """The words a file calling a function of ``home`` (a method of class ``cls``) elsewhere mentions: the
    method's class, or the function's module (imported by its name) or its package (which re-exports it)."""
    package = os.path.basename(os.path.dirname(home))
    module = os.path.splitext(os.path.basename(home))[0]
    return (cls,) if cls is not None else (package,) if module == "__init__" else (module, package)


def _star_imported(ctx: Context, name: str, home: str) -> bool:
    """Does ``name(...)`` in ``ctx`` call the function of ``home`` through ``from <home's module> import *``
    (the file neither defines nor imports the name otherwise)?"""
    project = ctx.project
    if project is None or name in ctx.aliases or name in ctx.relative_imports or find_definition(ctx, name):
        return False
    for stmt in ctx.module.body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if not isinstance(small, cst.ImportFrom) or not isinstance(small.names, cst.ImportStar):
                continue
            module = dotted_name(small.module) or ""  # (`from . import *`: no module)
            level = len(small.relative)
            if level:
                found = project._relative_file(ctx.path, level, module, "")
                path = found[0] if found is not None else None
            else:
                path = project.module_file(module, ctx.path)
            if path is not None and os.path.abspath(path) == home:
                return True
    return False


def relies_on_default(ctx: Context, param: cst.Param) -> bool:
    """Does some call of the parameter's function leave the parameter to its default, where CUDA is not certain
    (a call under an availability check may rely on a "cuda" default)? A function nobody in
    the project calls is relied on when it is public API (its users get the default) or a command (click,
    typer, fire); a private one nobody calls relies on nothing."""
    func = ctx.parent(ctx.parent(param))
    if not isinstance(func, cst.FunctionDef):
        return True
    if any((dotted_name(decorator_target(d)) or "").split(".")[-1] in ("command", "main", "group")
           for d in func.decorators):
        return True  # a CLI command: its defaults are what users get
    index, is_method = parameter_position(ctx, func, param)
    sites = call_sites(ctx, func)
    if sites is None:
        return False  # too many candidate calls to tell: precision first
    owner = ctx.parent(ctx.parent(func))
    called = owner.name.value if func.name.value == "__init__" and isinstance(owner, cst.ClassDef) \
        else func.name.value  # a class's __init__ runs where the class is called
    if (ctx.project is not None and ctx.project.used_as_value(called, os.path.abspath(ctx.path))) or (
            ctx.project is None and _bound_in_file(ctx, called)):
        return False  # handed around (`renderer = render_rays`, `bench_fn = TrainBenchmarkRunner`): its calls
        # are not all to be found by name
    if not sites:
        if _constructed_by_lookup(ctx, func, param):
            return False  # nnU-Net's trainers: `trainer_class = find_class(name)` then `trainer_class(plans=...,
            # ..., device=device)`, the call passing every parameter of their __init__ by keyword
        if is_method and func.name.value != "__init__" and _attribute_calls_pass(ctx, func, param.name.value, index):
            return False
        return _public(ctx, func)  # no call in the project: the users of a public API get the default
    from devlint.guards import guards

    for site_ctx, call in sites:
        bound = is_method and (isinstance(call.func, cst.Attribute) or func.name.value == "__init__")
        if leaves_default(call, param.name.value, index, bound) and binds(func, call, bound) \
                and not guards(site_ctx).is_guarded(call, depth=0):
            return True  # (a call under `if torch.cuda.is_available():` may rely on a "cuda" default)
    return False


def binds(func: cst.FunctionDef, call: cst.Call, bound: bool) -> bool:
    """May ``call`` bind to ``func``'s parameters (``bound``: a method called on an object, or a class whose
    ``__init__`` it is)? Not when it passes a keyword ``func`` has no parameter for, more positional arguments
    than it takes, or nothing for a parameter without a default (and no ``*args`` / ``**kwargs`` on either side
    could make up for it): Python raises TypeError before the body runs (GPEN's misc/predict.py builds
    ``FaceEnhancement(size=...)``, which takes no ``size``), so the call relies on no default."""
    if any(a.star for a in call.args):
        return True
    params = func.params
    positional = [*params.posonly_params, *params.params][1 if bound else 0:]
    names = {p.name.value for p in [*params.params, *params.kwonly_params]}
    keywords = [a.keyword.value for a in call.args if a.keyword is not None]
    given = len(call.args) - len(keywords)
    if params.star_kwarg is None and any(k not in names for k in keywords):
        return False
    if not isinstance(params.star_arg, cst.Param) and given > len(positional):
        return False
    filled = {p.name.value for p in positional[:given]} | set(keywords)
    return all(p.default is not None or p.name.value in filled for p in [*positional, *params.kwonly_params])


def _attribute_calls_pass(ctx: Context, func: cst.FunctionDef, name: str, index: int | None) -> bool:
    """Is a method whose calls :func:`call_sites` cannot tell apart (its callers reach the object through an
    attribute, ``self.prompter.encode_prompt(...)``) called by its name on an object other than ``self`` in the
    files that mention its class (where its objects are made: ``self.prompter = SDPrompter()``), each such call
    passing the parameter ``name``? ReCamMaster's prompters: ``encode_prompt(self, prompt, ..., device="cuda")``,
    every pipeline that builds one passing ``device=self.device``. A call there on an object of another class
    only adds a call to check, never takes one away."""
    owner = ctx.parent(ctx.parent(func))
    if not isinstance(owner, cst.ClassDef):
        return False
    method, home = func.name.value, os.path.abspath(ctx.path)
    project = ctx.project
    candidates = project.calls_named(method, (owner.name.value,), home, resolving=False) if project is not None else [
        (ctx, c) for c in ctx.nodes(cst.Call)]
    if candidates is None:
        return False  # too many files call the name: precision first (the default is taken as relied on)
    def on_objects(found: list[tuple[Context, cst.Call]]) -> list[cst.Call]:
        return [call for site_ctx, call in found
                if isinstance(call.func, cst.Attribute) and call.func.attr.value == method
                and not (isinstance(call.func.value, cst.Name) and call.func.value.value in ("self", "cls"))
                and callee(site_ctx, call) is None and _may_be(owner.name.value, _built_as(site_ctx, call.func.value))]

    calls = on_objects(candidates)
    if not calls and project is not None:
        # built where no file names the class (from a config: ``instantiate_from_config``): every call of the
        # name on an object anywhere in the project (stablediffusion's ``ClassEmbedder.get_unconditional_conditioning
        # (bs, device="cuda")``, called once, as ``self.cond_stage_model.get_unconditional_conditioning(batch_size,
        # device=self.device)``)
        anywhere = project.calls_named(method, (), home, resolving=False)
        calls = on_objects(anywhere) if anywhere is not None else []
    return bool(calls) and not any(leaves_default(call, name, index, True) for call in calls)


def _may_be(cls: str, built: frozenset[str] | None) -> bool:
    """May an object built from the classes ``built`` (None: not known) be of class ``cls``?"""
    return built is None or cls in built


def _built_as(ctx: Context, receiver: cst.BaseExpression) -> frozenset[str] | None:
    """The classes (last names) ``self.x`` is built from in the class around it (``self.prompter =
    SDPrompter()``, or annotated: ``self.dit: HunyuanVideoDiT = None``), or None where that is not known
    (another receiver; no such assignment; one assigns something else: ``model_manager.fetch_model(...)``)."""
    if not (isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name)
            and receiver.value.value == "self"):
        return None
    cls = next((a for a in ctx.ancestors(receiver) if isinstance(a, cst.ClassDef)), None)
    if cls is None:
        return None
    attr = receiver.attr.value

    def is_attr(target: cst.BaseExpression) -> bool:
        return isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
            and target.value.value == "self" and target.attr.value == attr

    built: set[str] = set()
    unknown = False
    for annotated in ctx.nodes(cst.AnnAssign):
        if is_attr(annotated.target) and any(a is cls for a in ctx.ancestors(annotated)):
            built.add((dotted_name(annotated.annotation.annotation) or "").split(".")[-1])
    for node in ctx.nodes(cst.Assign):
        if not any(is_attr(t.target) for t in node.targets) or not any(a is cls for a in ctx.ancestors(node)):
            continue
        made = (dotted_name(node.value.func) or "").split(".")[-1] if isinstance(node.value, cst.Call) else ""
        if made[:1].isupper():
            built.add(made)
        else:
            unknown = True  # (not a class built there: a factory's or a loader's value)
    return frozenset(built) if built and not unknown else None


def _constructed_by_lookup(ctx: Context, func: cst.FunctionDef, param: cst.Param) -> bool:
    """Is ``func`` the ``__init__`` of a class the project builds from a class it looks up at run time (a
    variable called, not a name of the project): a call whose keywords name every parameter without a default
    (at least three) and ``param``, each call of that shape passing ``param``?"""
    project = ctx.project
    if project is None or func.name.value != "__init__" or param.default is None:
        return False
    params = [*func.params.posonly_params, *func.params.params, *func.params.kwonly_params]
    required = frozenset(p.name.value for p in params[1:] if p.default is None)
    if len(required) < 3:
        return False
    keywords = required | {param.name.value}

    def answer() -> bool:
        calls = project.calls_with_keywords(keywords)
        return bool(calls) and all(isinstance(call.func, cst.Name) and callee(site_ctx, call) is None
                                   for site_ctx, call in calls or ())

    key = ("constructed_by_lookup", *sorted(keywords))
    known, held = project.recall(key)
    return bool(held) if known else project.remember(key, answer, os.path.abspath(ctx.path))


def parameter_position(ctx: Context, func: cst.FunctionDef, param: cst.Param) -> tuple[int | None, bool]:
    """The parameter's positional index (None: keyword-only) and whether ``func`` is a method whose first
    parameter a call on an object binds."""
    params = func.params
    index = next((i for i, p in enumerate([*params.posonly_params, *params.params]) if p is param), None)
    is_method = isinstance(ctx.parent(ctx.parent(func)), cst.ClassDef) and not any(
        (dotted_name(d.decorator) or "") == "staticmethod" for d in func.decorators)
    return index, is_method


def passed_values(ctx: Context, param: cst.Param) -> list[tuple[Context, cst.BaseExpression]] | None:
    """What every call of the parameter's function in the project passes for it (the argument, or the
    parameter's default where a call leaves it), each with the calling file; None when that cannot be told:
    nobody in the project calls the function (its users may pass anything), too many candidate calls, a call
    with ``*args`` / ``**kwargs``, a function handed around by name, a ``*args`` / ``**kwargs`` parameter."""
    func = ctx.parent(ctx.parent(param))
    if not isinstance(func, cst.FunctionDef) or param in (func.params.star_arg, func.params.star_kwarg):
        return None
    index, is_method = parameter_position(ctx, func, param)
    sites = call_sites(ctx, func)
    if not sites or (ctx.project is not None
                     and ctx.project.used_as_value(func.name.value, os.path.abspath(ctx.path))):
        return None
    name = param.name.value
    found: list[tuple[Context, cst.BaseExpression]] = []
    for site_ctx, call in sites:
        if any(a.star for a in call.args):
            return None
        bound = is_method and (isinstance(call.func, cst.Attribute) or func.name.value == "__init__")
        value = argument_for(call, name, index, bound)
        if value is None:
            if param.default is None:
                return None
            found.append((ctx, param.default))
        else:
            found.append((site_ctx, value))
    return found


def field_relies_on_default(ctx: Context, cls: cst.ClassDef, name: str, index: int | None) -> bool:
    """Does some construction of ``cls`` (a dataclass or attrs class) leave its field ``name`` (at positional
    ``index`` of the generated ``__init__``) to its default? A public class nobody in the project constructs
    is relied on (its users get the default); with too many candidate calls to tell, it is not."""
    sites = call_sites(ctx, cls)
    if sites is None:
        return False
    if not sites:
        return not cls.name.value.startswith("_") and ctx.parent(cls) is ctx.module
    return any(leaves_default(call, name, index, False) for _, call in sites)


def _public(ctx: Context, func: cst.FunctionDef) -> bool:
    """Is ``func`` part of its module's public API: not ``_private``, at the top or in a public class?"""
    name = func.name.value
    if name.startswith("_") and name != "__init__":
        return False
    if ctx.parent(func) is ctx.module:
        return True
    parent = ctx.parent(ctx.parent(func))
    return isinstance(parent, cst.ClassDef) and not parent.name.value.startswith("_") \
        and ctx.parent(parent) is ctx.module


def leaves_default(call: cst.Call, name: str, index: int | None, bound: bool) -> bool:
    """Does ``call`` pass nothing for the parameter ``name`` (at positional ``index``; ``bound``: a method
    called on an object, whose first parameter is the object)?"""
    if any(a.star for a in call.args):
        return False  # *args / **kwargs: may pass it
    if bound and index == 0:
        return False  # the object itself
    return argument_for(call, name, index, bound) is None


def argument_for(call: cst.Call, name: str, index: int | None, bound: bool) -> cst.BaseExpression | None:
    """What ``call`` passes for the parameter ``name`` (at positional ``index``; ``bound``: its first
    parameter is the object the method is called on, no argument), by keyword or by position; None when it
    passes nothing there (``*args`` / ``**kwargs`` are the caller's to check)."""
    keyword = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
    if keyword is not None:
        return keyword
    positional = [a.value for a in call.args if a.keyword is None]
    at = None if index is None else index - (1 if bound else 0)
    return positional[at] if at is not None and 0 <= at < len(positional) else None
