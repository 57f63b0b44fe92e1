"""Run devlint over files: read, lint or fix, write atomically, collect results. Knows no rule by name."""

from __future__ import annotations

import dataclasses
import difflib
import gc
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from devlint import interrupt, notebook, screen
from devlint.addnoqa import add_noqa
from devlint.cache import Cache, digest
from devlint.config import Config, expand_codes
from devlint.context import DEFAULT_SETTINGS, Settings
from devlint.diagnostics import IO_ERROR, NOTEBOOK_ERROR, SYNTAX_ERROR, Finding
from devlint.discovery import is_excluded, iter_files, per_file_ignored
from devlint.engine import LintResult, fix_text, lint_text, syntax_finding
from devlint.noqa import is_suppressed, noqa_lines
from devlint.progress import Progress
from devlint.project import Project
from devlint.rules import all_rules, select_rules
from devlint.rules.base import Rule
from devlint.source import LIBCST_MAX_BYTES, Source, SourceError, decode, read_bytes, split_lines, write_fixed


@dataclass
class Options:
    select: set[str]
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    prefilter: bool = True
    cache_dir: str | None = None  # None: no cache
    jobs: int = 1
    settings: Settings = DEFAULT_SETTINGS  # what the rules are told (device-fallback, ...)
    force_exclude: bool = False  # the exclusions apply to the paths named too
    add_noqa: bool = False  # write a noqa comment on each finding's line instead of reporting it
    shard: tuple[int, int] | None = None  # (K, N): lint only the K-th of N shards of the files
    progress: bool | None = False  # files done on standard error (None: only when a person is watching)

    @property
    def rewrites(self) -> bool:
        """Does the run change (or show changes to) files, so that no cached result will do?"""
        return self.fix or self.diff or self.add_noqa


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)  # what remains (after fixes, if any)
    fixed: list[Finding] = field(default_factory=list)
    diff: str = ""
    crashes: list[str] = field(default_factory=list)
    cacheable: bool = False  # a complete lint result of decoded content
    cache_key: str | None = None  # the results-cache key of the bytes linted
    deps: dict[str, str] = field(default_factory=dict)  # other files the result depends on -> their digest
    noqa_added: int = 0  # --add-noqa: the lines given a noqa comment
    stdin: bytes | None = None  # linted from standard input: these are its bytes, and nothing is written
    output: bytes | None = None  # from standard input with --fix / --add-noqa: the bytes to print


@dataclass
class RunResult:
    files: list[FileResult] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.files for f in r.findings]

    @property
    def fixed(self) -> list[Finding]:
        return [f for r in self.files for f in r.fixed]

    @property
    def crashes(self) -> list[str]:
        return [c for r in self.files for c in r.crashes]


def _io_finding(path: str, message: str) -> Finding:
    return IO_ERROR.at(path, message)


def rules_for(path: str, config: Config, options: Options) -> list[Rule]:
    codes = options.select - expand_codes(per_file_ignored(path, config), f"per-file-ignores for {path}")
    return select_rules(codes)


def _cache_settings(rules: list[Rule], options: Options, path: str) -> str:
    """What a file's result rests on besides its bytes: the rules, the settings, and where the file is (the
    same bytes in a `gpu/` folder, beside a conftest.py that de-collects them, or under another import path
    are another result)."""
    return ",".join(sorted(r.code for r in rules)) + f";prefilter={options.prefilter};" + options.settings.key() \
        + ";" + os.path.abspath(path)


def _cache_key(data: bytes, rules: list[Rule], options: Options, path: str) -> str:
    """The results-cache key of a file's bytes linted with these rules and settings at ``path``."""
    return Cache.key(data, _cache_settings(rules, options, path))


def applicable(data: bytes, rules: list[Rule], project: Project | None = None, path: str | None = None) -> list[Rule]:
    """The pre-filter: the rules that may report on a file with these bytes. First each rule's byte
    trigger, then, for the rules left, its screen over CPython's ``ast`` (devlint/screen.py)."""
    rules = [r for r in rules if r.triggers is None or r.triggers.search(data)]
    if rules and len(data) <= LIBCST_MAX_BYTES:  # (over the limit the ast costs GBs: report it as not checked)
        tree = screen.parse(data)
        if tree is not None:  # else LibCST decides (and reports the syntax error)
            project = project if project is not None else _PROJECT
            if project is not None and path is not None:
                project.note_tree(path, data, tree)
            index = screen.AstIndex.build(tree, project, path)
            rules = [r for r in rules if r.screen(index)]
    return rules


_PROJECT: Project | None = None  # the run's files, for the analyses that look across them (project.py)


# Syntax trees are millions of small objects that live for a whole file's analysis: with CPython's default
# thresholds the cyclic collector walks them again and again (a quarter of a cold run on a large tree).
_GC_THRESHOLDS = (100_000, 50, 100)


def _init_worker(files: list[str]) -> None:
    global _PROJECT
    _PROJECT = Project(files)
    if files:
        gc.set_threshold(*_GC_THRESHOLDS)


def process_file(path: str, config: Config, options: Options, stdin: bytes | None = None) -> FileResult:
    """Lint (or fix) one file (``stdin``: these bytes, read from standard input, under that name)."""
    if _PROJECT is not None:
        _PROJECT.consulted = set()
    result = _process(path, config, options, stdin)
    if _PROJECT is not None:
        _PROJECT.release_evicted()
        here = os.path.abspath(path)
        for dep in sorted(_PROJECT.consulted - {here}):
            data = _PROJECT.read(dep)
            result.deps[dep] = digest(data) if data is not None else ""
    return result


def _process(path: str, config: Config, options: Options, stdin: bytes | None = None) -> FileResult:
    result = FileResult(path, stdin=stdin)
    rules = rules_for(path, config, options)
    try:
        data = read_bytes(path) if stdin is None else stdin
        if options.cache_dir is not None and not options.rewrites:
            result.cache_key = _cache_key(data, rules, options, path)  # of the bytes linted here
        if notebook.is_notebook(path):
            _notebook(result, data, rules, options)
            return result
        source = decode(data)
    except SourceError as exc:
        result.findings.append(_io_finding(path, str(exc)))
        return result
    if options.prefilter:
        rules = applicable(data, rules, path=path)
        if not rules:
            result.cacheable = True
            return result
    if len(data) > LIBCST_MAX_BYTES and rules:
        result.findings.append(_too_large(path, data, rules))
    elif options.fix or options.diff:
        _fix(result, data, source, rules, options)
    else:
        outcome = lint_text(source.text, path, rules, project=_PROJECT, settings=options.settings)
        result.findings = outcome.findings
        result.crashes = outcome.crashes
        result.cacheable = not result.crashes
        if options.add_noqa:
            _add_noqa(result, data, source)
    return result


def _write(result: FileResult, old: bytes, new: bytes) -> None:
    """Write the file's new bytes (from standard input: keep them to print), or raise :class:`SourceError`."""
    if result.stdin is not None:
        result.output = new
    else:
        write_fixed(result.path, old, new)


def _noqa_findings(findings: list[Finding]) -> list[Finding]:
    """The findings a noqa comment is written for: the rules' (not E902, E999, internal errors)."""
    return [f for f in findings if f.code in all_rules()]


def _add_noqa(result: FileResult, data: bytes, source: Source) -> None:
    """--add-noqa on a module: the findings it could place a comment for are gone from the result."""
    text, added = add_noqa(source.text, _noqa_findings(result.findings))
    if not added:
        return
    try:
        _write(result, data, source.encode(text))
    except SourceError as exc:
        result.findings.append(_io_finding(result.path, str(exc)))
        return
    result.noqa_added = added
    result.findings = [f for f in result.findings if f.code not in all_rules()
                       or not is_suppressed(noqa_lines(text), f.code, (f.start.row, f.end.row))]


def _too_large(path: str, data: bytes, rules: list[Rule]) -> Finding:
    codes = ", ".join(r.code for r in rules)
    return _io_finding(path, f"file too large to parse with LibCST ({len(data) / 1e6:.1f} MB; the limit is "
                             f"{LIBCST_MAX_BYTES // (1024 * 1024)} MiB): {codes} not checked")


def _fix(result: FileResult, data: bytes, source: Source, rules: list[Rule], options: Options) -> None:
    """Fix ``source`` (decoded from ``data``, the file's bytes) into ``result``: with --diff show the fixes as
    a diff, else write them to the file; a fix that cannot be written leaves every finding standing."""
    path = result.path
    outcome = fix_text(source.text, path, rules, options.unsafe_fixes, project=_PROJECT, settings=options.settings)
    result.findings = outcome.remaining.findings
    result.crashes = outcome.remaining.crashes
    result.fixed = outcome.fixed
    if outcome.text == source.text:
        return
    if options.diff:
        result.diff = "".join(difflib.unified_diff(
            split_lines(source.text), split_lines(outcome.text),
            fromfile=path, tofile=path,
        ))
        return
    new = source.encode(outcome.text)
    if new == data:
        return
    try:
        _write(result, data, new)
    except SourceError as exc:  # not written: nothing was fixed, every finding stands
        result.fixed = []
        result.findings = [*lint_text(source.text, path, rules, project=_PROJECT, settings=options.settings).findings,
                           _io_finding(path, str(exc))]


# --- notebooks -----------------------------------------------------------------------------------------
def _notebook(result: FileResult, data: bytes, rules: list[Rule], options: Options) -> None:
    """Lint (or fix) the notebook in ``data``: its code cells as one module (devlint/notebook.py); findings
    carry their cell and rows in it."""
    path = result.path
    try:
        nb = notebook.parse(data)
    except notebook.NotebookError as exc:
        result.findings.append(NOTEBOOK_ERROR.at(path, str(exc), exc.row, exc.column))
        return
    module, excluded, broken = _cells_module(nb, path)
    code = module.text.encode("utf-8", "surrogatepass")
    if options.prefilter:
        rules = applicable(code, rules, path=path)
    result.findings = list(broken)
    if not rules:
        result.cacheable = True
        return
    if len(code) > LIBCST_MAX_BYTES:
        result.findings.append(_too_large(path, code, rules))
        return
    module, lint = settle(path, nb, module, excluded, result.findings, rules, options.settings)
    if options.fix or options.diff:
        _fix_notebook(result, data, nb, module, rules, options)
        return
    result.findings += notebook.in_cells(module, module.text, lint.findings)
    result.crashes = lint.crashes
    result.cacheable = not result.crashes
    if options.add_noqa:
        _add_noqa_notebook(result, data, nb)


def _add_noqa_notebook(result: FileResult, data: bytes, nb: notebook.Notebook) -> None:
    """--add-noqa in a notebook: each comment goes into the cell of its finding (rows are in the cell)."""
    cells = {c.number: c.text for c in nb.cells}
    by_cell: dict[int, list[Finding]] = {}
    for f in _noqa_findings(result.findings):
        if f.cell is not None and f.cell in cells:
            by_cell.setdefault(f.cell, []).append(f)
    sources: dict[int, str] = {}
    added = 0
    for number, found in by_cell.items():
        text, n = add_noqa(cells[number], found)
        if n:
            sources[number], added = text, added + n
    if not sources:
        return
    error = _write_notebook(result, data, nb, sources)
    if error is not None:
        result.findings.append(_io_finding(result.path, error))
        return
    result.noqa_added = added
    noqa = {n: noqa_lines(text) for n, text in sources.items()}
    result.findings = [f for f in result.findings if f.code not in all_rules() or f.cell not in noqa
                       or not is_suppressed(noqa[f.cell], f.code, (f.start.row, f.end.row))]


def _cells_module(nb: notebook.Notebook, path: str) -> tuple[notebook.Module, dict[int, str], list[Finding]]:
    """The module of the code cells without those that do not parse, which are each reported (E999)."""
    module, errors = notebook.parsed(nb)
    broken = [dataclasses.replace(syntax_finding(path, error), cell=number) for number, error in errors.items()]
    return module, dict.fromkeys(errors, "does not parse"), broken


def settle(path: str, nb: notebook.Notebook, module: notebook.Module, excluded: dict[int, str],
            broken: list[Finding], rules: list[Rule], settings: Settings) -> tuple[notebook.Module, LintResult]:
    """Lint the module; where LibCST cannot parse it though each cell passed CPython's parser, leave out the
    cell it names (reported in ``broken``) and lint again."""
    for _ in range(len(module.cells) + 1):
        lint = lint_text(module.text, path, rules, project=_PROJECT, settings=settings)
        errors = [f for f in lint.findings if f.code == SYNTAX_ERROR.code]
        if not errors:
            break
        (placed,) = notebook.in_cells(module, module.text, errors[:1])
        if placed.cell is None or placed.cell in excluded:
            break
        excluded[placed.cell] = "does not parse"
        broken.append(placed)
        module = notebook.build(nb, excluded)
    return module, lint


def _fix_notebook(result: FileResult, data: bytes, nb: notebook.Notebook, module: notebook.Module,
                  rules: list[Rule], options: Options) -> None:
    """Fix the module of the code cells, then rewrite only the changed cells' sources in the file (with
    --diff: show a diff per cell)."""
    path = result.path
    outcome = fix_text(module.text, path, rules, options.unsafe_fixes, project=_PROJECT, settings=options.settings)
    result.crashes = outcome.remaining.crashes
    sources = _changed(nb, module, outcome.text)
    if sources is None:
        lint = lint_text(module.text, path, rules, project=_PROJECT, settings=options.settings)
        result.findings += [*notebook.in_cells(module, module.text, lint.findings),
                            _io_finding(path, "cannot fix: a fix would cross a cell or an IPython line")]
        return
    found = notebook.in_cells(module, outcome.text, outcome.remaining.findings)
    result.fixed = notebook.in_cells(module, module.text, outcome.fixed)
    if options.diff:
        cells = {c.number: c for c in nb.cells}
        result.diff = "".join(notebook.cell_diff(path, cells[n].text, new, n) for n, new in sources.items())
    elif sources:
        error = _write_notebook(result, data, nb, sources)
        if error is not None:  # not written: nothing was fixed, every finding stands
            lint = lint_text(module.text, path, rules, project=_PROJECT, settings=options.settings)
            result.fixed = []
            found = [*notebook.in_cells(module, module.text, lint.findings), _io_finding(path, error)]
    result.findings += found


def _changed(nb: notebook.Notebook, module: notebook.Module, text: str) -> dict[int, str] | None:
    """The code cells a fixed module changed (number -> new code), None when it cannot be split back."""
    if text == module.text:
        return {}
    codes = notebook.split(module, text)
    if codes is None:
        return None
    cells = {c.number: c for c in nb.cells}
    return {n: code for n, code in codes.items() if code != cells[n].text}


def _write_notebook(result: FileResult, data: bytes, nb: notebook.Notebook, sources: dict[int, str]) -> str | None:
    """Write the notebook with the new sources; the error message when it was not written."""
    new = nb.encode(sources)
    try:
        written = {c.number: c.text for c in notebook.parse(new).cells}
    except notebook.NotebookError as exc:
        return f"cannot fix: the fixed notebook would not read back ({exc}); nothing written"
    if any(written.get(n) != code for n, code in sources.items()) or len(written) != len(nb.cells):
        return "cannot fix: the fixed notebook would not read back as fixed; nothing written"
    try:
        _write(result, data, new)
    except SourceError as exc:
        return str(exc)
    return None


def _work_chunk(chunk: list[str], config: Config, options: Options) -> list[FileResult]:
    return [process_file(path, config, options) for path in chunk]


def _init_pool_worker(files: list[str]) -> None:
    interrupt.init_worker()
    _init_worker(files)


def in_shard(path: str, shard: tuple[int, int], root: Path) -> bool:
    """Is ``path`` in shard K of N? A stable split: the CRC-32 of its POSIX path relative to ``root`` (the same
    on every machine and run), modulo N."""
    try:
        rel = Path(os.path.abspath(path)).relative_to(root).as_posix()
    except ValueError:
        rel = Path(os.path.abspath(path)).as_posix()
    k, n = shard
    return zlib.crc32(rel.encode("utf-8", "surrogateescape")) % n == k - 1


def run(paths: list[str], config: Config, options: Options) -> RunResult:
    unreadable: list[tuple[str, str]] = []  # directories that could not be listed: E902 each
    files = list(iter_files(paths, config, options.force_exclude, unreadable))
    project = [f for f in files if not notebook.is_notebook(f)]  # a notebook is no module another file imports
    if options.shard is not None:  # the project stays whole: analyses across files see every file
        files = [f for f in files if in_shard(f, options.shard, config.root)]
        unreadable = [(p, why) for p, why in unreadable if in_shard(p, options.shard, config.root)]
    cache = None
    if options.cache_dir is not None and not options.rewrites:
        cache = Cache(options.cache_dir)
    results: list[FileResult | None] = [None] * len(files)
    if cache is not None:
        results = _cached(files, config, options, cache)
    todo = [i for i, r in enumerate(results) if r is None]
    done = _process_all([files[i] for i in todo], config, options, project)
    for i, r in zip(todo, done, strict=True):
        results[i] = r
    if cache is not None:
        for r in done:
            if r.cacheable and r.cache_key is not None:
                cache.put(r.cache_key, r.findings, r.deps)
        cache.save()
    results += [FileResult(path, [_io_finding(path, why)]) for path, why in unreadable]
    return RunResult(files=[r for r in results if r is not None])


def run_stdin(data: bytes, filename: str, config: Config, options: Options) -> RunResult:
    """Lint (or fix) ``data``, read from standard input, as the file ``filename``: the rules, per-file-ignores
    and (with ``force_exclude``) exclusions of that path apply; nothing is written (the fixed bytes are the
    result's ``output``). A name ending in .ipynb means notebook JSON."""
    if options.force_exclude and is_excluded(filename, config):
        return RunResult()
    thresholds = gc.get_threshold()
    _init_worker([])  # no other file: the input is not the file on disk of that name
    try:
        return RunResult(files=[process_file(filename, config, options, stdin=data)])
    finally:
        _init_worker([])
        gc.set_threshold(*thresholds)


def _cached(files: list[str], config: Config, options: Options, cache: Cache) -> list[FileResult | None]:
    """The results the cache holds (None for the files still to lint), or an unreadable file's error.

    The main process answers cache hits: a file whose size and mtime match its trusted stat record is not
    read at all (:meth:`Cache.file_digest`); the workers read the other files again (from the OS's cache)
    and key their results by the bytes they linted, so an edit in between cannot file a stale entry."""
    results: list[FileResult | None] = []
    for path in files:
        try:
            content = cache.file_digest(path, read_bytes)
        except SourceError as exc:
            results.append(FileResult(path, [_io_finding(path, str(exc))]))
            continue
        cached = cache.get(Cache.key_of(content, _cache_settings(rules_for(path, config, options), options, path)),
                           path)
        results.append(None if cached is None else FileResult(path, cached))
    return results


# --- the worker pool ----------------------------------------------------------------------------------
# Memory is bounded per worker, not per run: a worker's heap grows with what it has parsed (CPython and
# LibCST keep freed arenas; the project's caches fill), so each worker is replaced after RECYCLE_FILES files
# (a fresh pool per batch of files: workers are forked from the main process, cheap once LibCST is imported
# there), and no more workers are started than the memory available holds at WORKER_MB each.
RECYCLE_FILES = 400  # files one worker lints before it is replaced
WORKER_MB = 200  # the peak memory of one worker (measured on transformers: 90-180 MB)


def available_mb() -> float | None:
    """The memory available to new processes (Linux: MemAvailable of /proc/meminfo), None where unknown."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def worker_count(jobs: int, files: int, memory_mb: float | None) -> int:
    """How many workers to start: no more than asked (``jobs``, the core count by default), than files, or
    than the memory available holds (``memory_mb`` // :data:`WORKER_MB`); at least one."""
    count = min(jobs, files)
    if memory_mb is not None:
        count = min(count, int(memory_mb // WORKER_MB))
    return max(1, count)


def _batches(files: list[str], jobs: int) -> list[list[list[int]]]:
    """The indices of ``files`` in batches of at most ``jobs`` * :data:`RECYCLE_FILES` (one pool each), each
    cut into chunks (one task each). Within a batch the largest files go first: a pool's workers finish
    together instead of one of them still linting a run of large files while the others wait."""
    size = max(1, min(16, len(files) // (jobs * 8)))
    step = jobs * RECYCLE_FILES
    batches = []
    for start in range(0, len(files), step):
        order = sorted(range(start, min(start + step, len(files))), key=lambda i: -_size(files[i]))
        batches.append([order[i:i + size] for i in range(0, len(order), size)])
    return batches


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _process_all(files: list[str], config: Config, options: Options, project: list[str]) -> list[FileResult]:
    """:func:`process_file` on each file, in ``options.jobs`` worker processes where that is more than one;
    ``project``: every file of the run (what the analyses may look at across files). Results come back in
    the order of ``files``; each is placed as soon as its worker returns it (nothing waits for the rest)."""
    with Progress(f"devlint: {len(files)} files", len(files), enabled=options.progress) as shown:
        if options.jobs > 1 and len(files) > 1:
            jobs = worker_count(options.jobs, len(files), available_mb())
            if jobs > 1:
                return _in_pools(files, config, options, project, jobs, shown)
        thresholds = gc.get_threshold()
        _init_worker(project)
        try:
            done = []
            for path in files:
                done.append(process_file(path, config, options))
                shown.advance()
            return done
        finally:
            _init_worker([])
            gc.set_threshold(*thresholds)


def _in_pools(files: list[str], config: Config, options: Options, project: list[str],
              jobs: int, shown: Progress | None = None) -> list[FileResult]:
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    import libcst  # noqa: F401 - imported once here, shared by every worker forked (and recycled) after

    results: list[FileResult | None] = [None] * len(files)
    with interrupt.terminating():  # SIGTERM, like Ctrl-C, ends the pool's workers before devlint exits
        for chunks in _batches(files, jobs):
            pool = ProcessPoolExecutor(max_workers=jobs, initializer=_init_pool_worker, initargs=(project,))
            try:  # (not pool.map: on an interrupt it cancels futures the pool then fails to mark broken)
                pending = {}
                for chunk in chunks:
                    pending[pool.submit(_work_chunk, [files[i] for i in chunk], config, options)] = chunk
                while pending:
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        chunk = pending.pop(future)
                        chunk_results = future.result()
                        for i, r in zip(chunk, chunk_results, strict=True):
                            results[i] = r
                        if shown is not None:
                            shown.advance(len(chunk_results))
            except BaseException:
                interrupt.stop_pool(pool)
                raise
            pool.shutdown()
    return [r for r in results if r is not None]
