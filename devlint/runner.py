"""Run devlint over files: read, lint or fix, write atomically, collect results. Knows no rule by name."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from devlint.cache import Cache
from devlint.config import Config, expand_codes
from devlint.discovery import iter_files, per_file_ignored
from devlint.engine import IO_ERROR, fix_text, lint_text
from devlint.rules import select_rules
from devlint.rules.base import Finding, Position
from devlint.source import SourceError, decode, read_bytes, split_lines, write_atomic


@dataclass
class Options:
    select: set[str]
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    prefilter: bool = True
    cache_dir: str | None = None  # None: no cache
    jobs: int = 1


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)  # what remains (after fixes, if any)
    fixed: list[Finding] = field(default_factory=list)
    diff: str = ""
    crashes: list[str] = field(default_factory=list)


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
    pos = Position(1, 1)
    return Finding(IO_ERROR, message, pos, pos, path=path, name="io-error")


def process_file(path: str, explicit: bool, config: Config, options: Options,
                 cache_only: bool = False) -> FileResult | None:
    """Lint (or fix) one file. With ``cache_only``, return None unless the answer is known without parsing."""
    result = FileResult(path)
    codes = options.select - expand_codes(per_file_ignored(path, config), f"per-file-ignores for {path}")
    rules = select_rules(codes)
    try:
        data = read_bytes(path)
    except SourceError as exc:
        result.findings.append(_io_finding(path, str(exc)))
        return result
    cache = None
    if options.cache_dir is not None and not (options.fix or options.diff):
        cache = Cache(options.cache_dir, ",".join(sorted(r.code for r in rules)) + f";prefilter={options.prefilter}")
        cached = cache.get(data, path)  # an entry exists only for content that decoded
        if cached is not None:
            result.findings = cached
            return result
    if cache_only:
        return None
    try:
        source = decode(data)
    except SourceError as exc:
        result.findings.append(_io_finding(path, str(exc)))
        return result
    if options.prefilter:
        # the byte-level pre-filter: parse only for the rules whose trigger tokens occur in the file
        rules = [r for r in rules if r.triggers is None or r.triggers.search(data)]
        if not rules:
            if cache is not None:
                cache.put(data, [])
            return result
    if options.fix or options.diff:
        outcome = fix_text(source.text, path, rules, options.unsafe_fixes)
        result.findings = outcome.remaining.findings
        result.crashes = outcome.remaining.crashes
        result.fixed = outcome.fixed
        if outcome.text != source.text:
            if options.diff:
                result.diff = "".join(difflib.unified_diff(
                    split_lines(source.text), split_lines(outcome.text),
                    fromfile=path, tofile=path,
                ))
            else:
                new = source.encode(outcome.text)
                if new != data:
                    try:
                        write_atomic(path, new)
                    except OSError as exc:
                        result.fixed = []
                        result.findings.append(_io_finding(path, f"cannot write fixes: {exc.strerror or exc}"))
    else:
        outcome_lint = lint_text(source.text, path, rules)
        result.findings = outcome_lint.findings
        result.crashes = outcome_lint.crashes
        if cache is not None and not result.crashes:
            cache.put(data, result.findings)
    return result


def _worker(args: tuple[str, bool, Config, Options]) -> FileResult:
    return process_file(*args)  # type: ignore[return-value]


def run(paths: list[str], config: Config, options: Options) -> RunResult:
    files = list(iter_files(paths, config))
    results: list[FileResult | None] = [None] * len(files)
    if options.cache_dir is not None and not (options.fix or options.diff):
        # cache hits (and unreadable files) are answered here, without starting workers
        results = [process_file(p, e, config, options, cache_only=True) for p, e in files]
    todo = [i for i, r in enumerate(results) if r is None]
    if options.jobs > 1 and len(todo) > 1:
        from concurrent.futures import ProcessPoolExecutor

        jobs = min(options.jobs, len(todo))
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            chunk = max(1, min(64, len(todo) // (jobs * 8)))
            done = pool.map(_worker, [(*files[i], config, options) for i in todo], chunksize=chunk)
            for i, r in zip(todo, done):
                results[i] = r
    else:
        for i in todo:
            results[i] = process_file(*files[i], config, options)
    return RunResult(files=[r for r in results if r is not None])
