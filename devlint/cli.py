"""Command line: ``devlint [PATH...]`` (lint), ``devlint rule CODE``, ``devlint rules``."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from typing import NoReturn

import click

from devlint import __version__, baseline, report
from devlint.config import Config, ConfigError, check_device_fallback, expand_codes, resolve
from devlint.context import DEVICE_FALLBACKS, Settings
from devlint.diagnostics import IO_ERROR, Finding
from devlint.engine import wanted
from devlint.interrupt import Terminated
from devlint.rules import all_rules
from devlint.runner import Options, RunResult, run, run_stdin


class _DefaultGroup(click.Group):
    """``devlint src/`` runs ``devlint check src/``: a first argument that is no subcommand is a path."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
            ctx.meta[_IMPLICIT] = True
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> object:
        """Ctrl-C exits 130 and SIGTERM 143 (128 + the signal), as shells report them; the run's worker
        processes are gone by then (devlint/interrupt.py)."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("devlint: interrupted", err=True)
            sys.exit(130)
        except Terminated as exc:
            click.echo("devlint: terminated", err=True)
            sys.exit(128 + exc.signum)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, "[OPTIONS] [PATH]... | COMMAND [ARGS]...")

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The help lists the lint options (those of ``devlint check``, which ``devlint [OPTIONS]`` runs)
        before the group's own options and the subcommands."""
        command = self.commands["check"]
        with click.Context(command, info_name="check", parent=ctx) as sub:
            records = [r for p in command.get_params(sub)
                       if isinstance(p, click.Option) and (r := p.get_help_record(sub)) is not None]
        with formatter.section("Lint options (devlint [OPTIONS] [PATH]..., the same as devlint check)"):
            formatter.write_dl(records)
        super().format_options(ctx, formatter)


_IMPLICIT = "devlint.implicit-check"  # ctx.meta: `devlint ARGS` was read as `devlint check ARGS`


def _no_such_command(ctx: click.Context, paths: tuple[str, ...]) -> None:
    """``devlint chekc src``: a first argument that is neither a command nor an existing path is a usage
    error (exit 2), not a missing file to report. (``devlint check nosuch.py`` reports E902, as ruff does.)"""
    if not ctx.meta.get(_IMPLICIT) or not paths or paths[0] == "-" or os.path.lexists(paths[0]):
        return
    import difflib

    message = f"No such file or command: {paths[0]!r}."
    group = ctx.parent.command if ctx.parent is not None else None
    commands = list(group.commands) if isinstance(group, click.Group) else []
    close = difflib.get_close_matches(paths[0], commands)
    if close:
        message += f" Did you mean {close[0]!r}?"
    raise click.UsageError(message, ctx.parent)


@click.group(cls=_DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="devlint", message="%(prog)s %(version)s")
def main() -> None:
    """devlint: find and fix PyTorch device bugs.

    \b
    devlint [OPTIONS] [PATH]...   lint (the same as `devlint check`)
    devlint rule DEV001           print a rule's reference page
    devlint rules                 list the rules
    devlint verify [PATH]...      prove findings by running them (needs torch)
    devlint server                the language server for editors (LSP on stdio; needs devlint[lsp])
    """


_DEVICE_FALLBACK_HELP = ("What fixes write to choose a device: cuda-cpu, cuda-mps-cpu or accelerator "
                         "(torch.accelerator, torch >= 2.6). Default: [tool.devlint] device-fallback, else "
                         "cuda-cpu (the mps chain in a file that mentions mps).")


def _split(values: tuple[str, ...]) -> list[str]:
    return [part for value in values for part in value.split(",") if part.strip()]


def _lint_progress(output_format: str) -> bool | None:
    """Progress for a lint: on a terminal (None: progress.wanted decides) for the formats people read, never
    in machine output."""
    return None if output_format in ("concise", "text", "full") else False


def _shard(value: str | None) -> tuple[int, int] | None:
    """``K/N`` (1 <= K <= N) -> (K, N); a usage error otherwise."""
    if value is None:
        return None
    k, sep, n = value.partition("/")
    if sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n):
        return int(k), int(n)
    raise click.BadParameter(f"{value!r} is not K/N with 1 <= K <= N (e.g. 2/4)", param_hint="'--shard'")


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (with --fix/--diff) or show unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing.")
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (comma-separated).")
@click.option("--extend-select", multiple=True, help="Codes or prefixes to enable on top of the selection.")
@click.option("--ignore", multiple=True, help="Codes or prefixes to disable.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--statistics", is_flag=True, help="Print the count of findings per rule.")
@click.option("--output-format", type=click.Choice(report.FORMATS), default=None, envvar="DEVLINT_OUTPUT_FORMAT",
              help="concise (path:line:col: CODE message; `text` is its old name), full (also the source with the "
                   "span underlined and the fix as a diff), json, sarif, github. Default: $DEVLINT_OUTPUT_FORMAT, "
                   "[tool.devlint] output-format, else concise.")
@click.option("--color", type=click.Choice(report.COLOR_CHOICES), default="auto", show_default=True,
              help="Colour the findings: auto (on a terminal, unless NO_COLOR is set; FORCE_COLOR forces it), "
                   "always, never.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--config", "config_file", type=click.Path(), help="Use this pyproject.toml / TOML file.")
@click.option("--jobs", "-j", type=click.IntRange(1), default=None, help="Worker processes (default: the core count).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the results cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False),
              help="Where the cache lives (default: .devlint_cache beside the config).")
@click.option("--no-prefilter", is_flag=True,
              help="Parse every file, also those with none of the rules' trigger tokens.")
@click.option("--device-fallback", metavar="|".join(DEVICE_FALLBACKS), help=_DEVICE_FALLBACK_HELP)
@click.option("--stdin-filename", metavar="PATH",
              help="Lint standard input (PATH `-`, or no PATH) as this file: its config, per-file-ignores and "
                   "(with --force-exclude) excludes apply. With --fix the fixed code goes to stdout, the report "
                   "to stderr.")
@click.option("--force-exclude/--no-force-exclude", default=False,
              help="Apply exclude, extend-exclude and .gitignore to the paths named too (as pre-commit names "
                   "every file).")
@click.option("--add-noqa", is_flag=True, help="Write a `# noqa: CODE` comment on the line of each finding.")
@click.option("--shard", metavar="K/N", callback=lambda _c, _p, v: _shard(v),
              help="Lint only the K-th of N shards of the files (a stable split by path, for a CI matrix); "
                   "analyses across files still see every file.")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied (with --fix) or available, per file.")
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False),
              help="Report only findings not recorded in this baseline file (default: [tool.devlint] baseline).")
@click.option("--update-baseline", is_flag=True,
              help="Write today's findings to the baseline file (--baseline or the config's), exit 0.")
@click.pass_context
def check(ctx: click.Context, paths: tuple[str, ...], fix: bool, unsafe_fixes: bool, diff: bool,
          select: tuple[str, ...], extend_select: tuple[str, ...], ignore: tuple[str, ...], exit_zero: bool,
          statistics: bool, output_format: str | None, color: str, quiet: bool, config_file: str | None,
          jobs: int | None, no_cache: bool, cache_dir: str | None, no_prefilter: bool, device_fallback: str | None,
          stdin_filename: str | None, force_exclude: bool, add_noqa: bool, shard: tuple[int, int] | None,
          show_fixes: bool, baseline_file: str | None, update_baseline: bool) -> None:
    """Lint PATHS (default: the current directory; `-`: standard input)."""
    _no_such_command(ctx, paths)
    if add_noqa and (fix or diff or update_baseline):
        raise click.UsageError("--add-noqa cannot be combined with --fix, --diff or --update-baseline")
    stdin = _stdin_name(paths, stdin_filename)
    config, codes = _check_config(config_file, paths if stdin is None else (stdin,), select, extend_select, ignore)
    settings = _settings(config, device_fallback)
    baseline_path, recorded = _baseline(config, baseline_file, update_baseline)
    data = sys.stdin.buffer.read() if stdin is not None else b""
    try:
        options = Options(select=codes, fix=fix, unsafe_fixes=unsafe_fixes, diff=diff, prefilter=not no_prefilter,
                          cache_dir=_cache_dir(config, no_cache, cache_dir), jobs=jobs or os.cpu_count() or 1,
                          settings=settings, force_exclude=force_exclude, add_noqa=add_noqa, shard=shard,
                          progress=_lint_progress(output_format or config.output_format or report.DEFAULT_FORMAT))
        result = run(list(paths), config, options) if stdin is None else run_stdin(data, stdin, config, options)
    except Exception as exc:  # noqa: BLE001 - an internal error: say so, exit 2
        click.echo(f"devlint: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(2)

    # from standard input with --fix/--add-noqa: stdout is the code (what an editor reads back), the report stderr
    to_err = stdin is not None and (fix or add_noqa) and not diff
    if to_err:
        output = next((r.output for r in result.files if r.output is not None), data)
        sys.stdout.flush()
        sys.stdout.buffer.write(output)
        sys.stdout.buffer.flush()
    for crash in result.crashes:
        click.echo(f"devlint: error: {crash}", err=True)
    if options.add_noqa:
        _exit_add_noqa(result)
    if diff:
        _exit_diff(result, quiet, exit_zero)

    _report(result, config, (baseline_path, recorded), update_baseline, statistics, output_format, show_fixes,
            quiet, exit_zero, to_err)


def _report(result: RunResult, config: Config, base: tuple[str | None, Counter[baseline.Key]], update_baseline: bool,
            statistics: bool, output_format: str | None, show_fixes: bool, quiet: bool, exit_zero: bool,
            to_err: bool) -> NoReturn:
    """Print the findings the baseline (if any) leaves, or write the baseline; then exit."""
    ctx = click.get_current_context()
    fix, unsafe_fixes = ctx.params["fix"], ctx.params["unsafe_fixes"]
    baseline_path, recorded = base
    findings = sorted(result.findings, key=lambda f: f.sort_key)
    fmt = report.text_format(output_format or config.output_format or report.DEFAULT_FORMAT)
    style = report.Style(report.use_color(ctx.params["color"], report.stdout_is_terminal() and not to_err))
    outcome = None
    if baseline_path is not None:
        texts = {r.path: r.output if r.output is not None else r.stdin for r in result.files if r.stdin is not None}
        outcome = baseline.apply(findings, [r.path for r in result.files], recorded, config.root, texts)
        if update_baseline:
            _exit_update_baseline(baseline_path, outcome)
        findings = outcome.findings
    if statistics and fmt == "json":
        click.echo(_statistics_json(findings, unsafe_fixes), err=to_err)
    elif statistics:
        click.echo(report.statistics(findings, unsafe_fixes), nl=False, err=to_err)
        if fmt in ("text", "full") and not quiet:
            click.echo(_summary(findings, result.fixed, fix, unsafe_fixes, style), nl=False, err=to_err,
                       color=style.enabled)
    else:
        click.echo(report.render(fmt, findings, style, unsafe_fixes), nl=False, err=to_err,
                   color=style.enabled)
        if show_fixes and fmt in ("text", "full"):
            click.echo(_show_fixes(result.fixed if fix else _fixable(findings, unsafe_fixes), fix, unsafe_fixes),
                       nl=False, err=to_err)
        if fmt in ("text", "full") and not quiet:
            click.echo(_summary(findings, result.fixed, fix, unsafe_fixes, style), nl=False, err=to_err,
                       color=style.enabled)
    if outcome is not None and outcome.stale and not quiet:
        click.echo(f"{outcome.stale} baseline entr{'ies' if outcome.stale != 1 else 'y'} no longer found: "
                   "run --update-baseline", err=to_err or fmt not in ("text", "full"))
    if result.crashes:
        sys.exit(2)
    sys.exit(1 if findings and not exit_zero else 0)


def _stdin_name(paths: tuple[str, ...], stdin_filename: str | None) -> str | None:
    """The name standard input is linted as (None: lint the paths). ``-`` mixed with paths is a usage error."""
    if "-" in paths and len(paths) > 1:
        raise click.UsageError("`-` (standard input) cannot be mixed with other paths")
    if paths == ("-",) or (not paths and stdin_filename is not None):
        return stdin_filename or "-"
    return None


def _baseline(config: Config, option: str | None, update: bool) -> tuple[str | None, Counter[baseline.Key]]:
    """The baseline file (--baseline, else the config's ``baseline``) and what it records; exit 2 on a bad
    file, or on --update-baseline without a file to write."""
    path = option or (str(config.root / config.baseline) if config.baseline else None)
    if path is None:
        if update:
            raise click.UsageError("--update-baseline needs --baseline FILE (or baseline = \"FILE\" in "
                                   "[tool.devlint])")
        return None, Counter()
    if update and not os.path.exists(path):
        return path, Counter()
    try:
        return path, baseline.load(path)
    except ConfigError as exc:
        click.echo(f"devlint: error: {exc}", err=True)
        sys.exit(2)


def _exit_update_baseline(path: str, outcome: baseline.Outcome) -> NoReturn:
    try:
        baseline.write(path, outcome.entries)
    except ConfigError as exc:
        click.echo(f"devlint: error: {exc}", err=True)
        sys.exit(2)
    n = sum(outcome.entries.values())
    click.echo(f"Wrote {n} finding{'s' if n != 1 else ''} to the baseline {path}.", err=True)
    sys.exit(0)


def _exit_add_noqa(result: RunResult) -> NoReturn:
    """``--add-noqa``: say how many comments were written (nothing when none), exit 0 as ruff does; a file
    that could not be read or written is still reported (exit 1)."""
    added = sum(r.noqa_added for r in result.files)
    if added:
        click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
    errors = sorted((f for f in result.findings if f.code == IO_ERROR.code), key=lambda f: f.sort_key)
    click.echo(report.text(errors), nl=False, err=True)
    sys.exit(2 if result.crashes else (1 if errors else 0))


def _statistics_json(findings: list[Finding], unsafe: bool) -> str:
    """``--statistics --output-format json``: ruff's fields (code, name, count, fixable, fixable_count)."""
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in _fixable(findings, unsafe))
    names = {f.code: f.name for f in findings}
    return json.dumps([{"code": code, "name": names[code], "count": n, "fixable": fixable[code] > 0,
                        "fixable_count": fixable[code]}
                       for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))], indent=2)


def _fixable(findings: list[Finding], unsafe: bool) -> list[Finding]:
    return [f for f in findings if wanted(f.fix, unsafe)]


def _show_fixes(findings: list[Finding], fixed: bool, unsafe: bool) -> str:
    """``--show-fixes``: the fixes applied (with --fix), or those --fix would apply, counted per file and rule,
    as ruff lists them."""
    if not findings:
        return ""
    n = len(findings)
    option = "`--fix --unsafe-fixes`" if unsafe else "`--fix`"
    head = f"Fixed {_errors(n)}:" if fixed else f"Fixable with {option} ({_errors(n)}):"
    lines = ["", head]
    by_file: dict[str, Counter[tuple[str, str]]] = {}
    for f in findings:
        by_file.setdefault(f.path, Counter())[(f.code, f.name)] += 1
    for path in sorted(by_file):
        lines.append(f"- {path}:")
        for (code, name), count in sorted(by_file[path].items()):
            lines.append(f"    {count} \u00d7 {code} ({name})")
    return "\n".join(lines) + "\n\n"


def _check_config(config_file: str | None, paths: tuple[str, ...], select: tuple[str, ...],
                  extend_select: tuple[str, ...], ignore: tuple[str, ...]) -> tuple[Config, set[str]]:
    """The configuration and the enabled codes of ``devlint check``; a usage error exits 2."""
    try:
        config = resolve(config_file, list(paths))
        codes = _resolve_codes(config, select, extend_select, ignore)
    except ConfigError as exc:
        click.echo(f"devlint: error: {exc}", err=True)
        sys.exit(2)
    return config, codes


def _settings(config: Config, device_fallback: str | None) -> Settings:
    """What the rules are told: the command line's choice over the configuration's; a bad value exits 2."""
    try:
        if device_fallback is not None:
            check_device_fallback(device_fallback, "--device-fallback")
    except ConfigError as exc:
        click.echo(f"devlint: error: {exc}", err=True)
        sys.exit(2)
    return Settings(device_fallback=device_fallback or config.device_fallback)


def _cache_dir(config: Config, no_cache: bool, cache_dir: str | None) -> str | None:
    """The results-cache directory: --cache-dir, $DEVLINT_CACHE_DIR, or .devlint_cache beside the config."""
    if no_cache:
        return None
    return cache_dir or os.environ.get("DEVLINT_CACHE_DIR") or os.path.join(str(config.root), ".devlint_cache")


def _exit_diff(result: RunResult, quiet: bool, exit_zero: bool) -> NoReturn:
    """``--diff``: print the fixes as a unified diff (and, unless quiet, a count on stderr), then exit."""
    click.echo("".join(r.diff for r in result.files), nl=False)
    if not quiet:
        n = len(result.fixed)
        click.echo(f"Would fix {_errors(n)}." if n else "No errors would be fixed.", err=True)
    sys.exit(2 if result.crashes else (1 if result.fixed and not exit_zero else 0))


def _errors(n: int) -> str:
    return f"{n} error{'s' if n != 1 else ''}"


def _summary(findings: list[Finding], fixed: list[Finding], fix: bool, unsafe: bool,
             style: report.Style = report.PLAIN) -> str:
    return report.summary(findings, fixed, fix, unsafe, style)


def _resolve_codes(config: Config, select: tuple[str, ...], extend_select: tuple[str, ...],
                   ignore: tuple[str, ...]) -> set[str]:
    if select:
        codes = expand_codes(_split(select), "--select")
    else:
        codes = expand_codes(config.select, "select") if config.select is not None else set(all_rules())
        codes -= expand_codes(config.ignore, "ignore")
    codes |= expand_codes(config.extend_select, "extend-select")
    codes |= expand_codes(_split(extend_select), "--extend-select")
    return codes - expand_codes(_split(ignore), "--ignore")


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--rules", "rules_mode", is_flag=True,
              help="Run every rule's own evidence probes: a rule x target matrix.")
@click.option("--run", "script", type=click.Path(dir_okay=False),
              help="Run this script (a copy, in a scratch directory) before and after --fix --unsafe-fixes.")
@click.option("--timeout", default=60, show_default=True, type=click.IntRange(1), help="Seconds per probe or run.")
@click.option("--select", multiple=True, help="Rule codes or prefixes to verify.")
@click.option("--ignore", multiple=True, help="Codes or prefixes to leave out.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--config", "config_file", type=click.Path(), help="Use this pyproject.toml / TOML file.")
@click.option("--device-fallback", metavar="|".join(DEVICE_FALLBACKS), help=_DEVICE_FALLBACK_HELP)
def verify(paths: tuple[str, ...], rules_mode: bool, script: str | None, timeout: int, select: tuple[str, ...],
           ignore: tuple[str, ...], output_format: str, config_file: str | None, device_fallback: str | None) -> None:
    """Confirm findings by running them on the devices present (cpu, cuda, mps, no-gpu).

    \b
    devlint verify [PATH]...       lint, then run each finding's probe, and the fixed probe, per target
    devlint verify --rules         check every rule's claims on this torch and machine
    devlint verify --run train.py  run a script before and after --fix --unsafe-fixes (executes it!)
    """
    from devlint import verify as v

    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:
        click.echo(f"devlint: error: no such file or directory: {missing[0]}", err=True)
        sys.exit(2)
    if not v.torch_available():
        click.echo("devlint: error: devlint verify runs torch: install `devlint[verify]` "
                   "(pip install 'devlint[verify]')", err=True)
        sys.exit(2)
    try:
        config = resolve(config_file, list(paths))
        codes = _resolve_codes(config, select, (), ignore)
        settings = _settings(config, device_fallback)
        targets = v.detect_targets()
    except (ConfigError, v.VerifyError) as exc:
        click.echo(f"devlint: error: {exc}", err=True)
        sys.exit(2)
    from devlint.verify_report import render_matrix, render_runs, render_verified

    progress = None if output_format == "text" else False  # on a terminal, never in machine output
    try:
        if rules_mode:
            matrix = v.rule_matrix(targets, timeout, codes, progress)
            click.echo(render_matrix(matrix, targets, output_format), nl=False)
            sys.exit(0)
        if script is not None:
            if not os.path.isfile(script):
                raise ConfigError(f"--run: no such file: {script}")
            runs = v.verify_script(script, targets, timeout, lambda copy: _fix_file(copy, codes, settings))
            click.echo(render_runs(script, runs, output_format), nl=False)
            sys.exit(0 if all(after.clean for _, after, _ in runs) else 1)
        result = run(list(paths), config, Options(select=codes, settings=settings))
        findings = sorted((f for f in result.findings if f.code in all_rules()), key=lambda f: f.sort_key)
        verified = v.verify_findings(findings, targets, timeout, progress)
    except (ConfigError, v.VerifyError) as exc:
        click.echo(f"devlint: error: {exc}", err=True)
        sys.exit(2)
    click.echo(render_verified(verified, targets, output_format), nl=False)
    sys.exit(1 if verified else 0)


def _fix_file(path: str, codes: set[str], settings: Settings) -> int:
    """Apply safe and unsafe fixes to ``path`` in place; the number of fixes applied."""
    result = run([path], resolve(None, [path]), Options(select=codes, fix=True, unsafe_fixes=True, settings=settings))
    return len(result.fixed)


@main.command("rule")
@click.argument("code")
def rule_cmd(code: str) -> None:
    """Print the reference page of rule CODE."""
    rules = all_rules()
    cls = rules.get(code.upper())
    if cls is None:
        click.echo(f"devlint: error: unknown rule {code!r} (known: {', '.join(rules)})", err=True)
        sys.exit(2)
    click.echo(cls.page(), nl=False)


@main.command("rules")
def rules_cmd() -> None:
    """List the rules: code, name, fix availability, summary."""
    for code, cls in all_rules().items():
        click.echo(f"{code}  {cls.name:<24} fix: {cls.fix_availability.value:<9} {cls.summary}")


@main.command("server")
def server_cmd() -> None:
    """Run the language server (LSP over stdin/stdout) for editors: diagnostics, fixes, noqa, fix all."""
    try:
        from devlint.server import serve
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("pygls", "lsprotocol", "cattrs"):
            raise
        click.echo("devlint: error: devlint server needs pygls: pip install 'devlint[lsp]'", err=True)
        sys.exit(2)
    serve()


if __name__ == "__main__":  # pragma: no cover
    main()
