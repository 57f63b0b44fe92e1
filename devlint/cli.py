"""Command line: ``devlint [PATH...]`` (lint), ``devlint rule CODE``, ``devlint rules``."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click

from devlint import __version__, report
from devlint.config import Config, ConfigError, check_device_fallback, expand_codes, resolve
from devlint.context import DEVICE_FALLBACKS, Settings
from devlint.diagnostics import Finding
from devlint.rules import all_rules
from devlint.runner import Options, RunResult, run


class _DefaultGroup(click.Group):
    """``devlint src/`` runs ``devlint check src/``: a first argument that is no subcommand is a path."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
        return super().parse_args(ctx, args)


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
@click.option("--output-format", type=click.Choice(report.FORMATS), default="text", show_default=True)
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--config", "config_file", type=click.Path(), help="Use this pyproject.toml / TOML file.")
@click.option("--jobs", "-j", type=click.IntRange(1), default=None, help="Worker processes (default: the core count).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the results cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False),
              help="Where the cache lives (default: .devlint_cache beside the config).")
@click.option("--no-prefilter", is_flag=True,
              help="Parse every file, also those with none of the rules' trigger tokens.")
@click.option("--device-fallback", metavar="|".join(DEVICE_FALLBACKS), help=_DEVICE_FALLBACK_HELP)
def check(paths: tuple[str, ...], fix: bool, unsafe_fixes: bool, diff: bool, select: tuple[str, ...],
          extend_select: tuple[str, ...], ignore: tuple[str, ...], exit_zero: bool, statistics: bool,
          output_format: str, quiet: bool, config_file: str | None, jobs: int | None, no_cache: bool,
          cache_dir: str | None, no_prefilter: bool, device_fallback: str | None) -> None:
    """Lint PATHS (default: the current directory)."""
    config, codes = _check_config(config_file, paths, select, extend_select, ignore)
    settings = _settings(config, device_fallback)
    try:
        options = Options(select=codes, fix=fix, unsafe_fixes=unsafe_fixes, diff=diff, prefilter=not no_prefilter,
                          cache_dir=_cache_dir(config, no_cache, cache_dir), jobs=jobs or os.cpu_count() or 1,
                          settings=settings)
        result = run(list(paths), config, options)
    except Exception as exc:  # noqa: BLE001 - an internal error: say so, exit 2
        click.echo(f"devlint: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(2)

    for crash in result.crashes:
        click.echo(f"devlint: error: {crash}", err=True)
    if diff:
        _exit_diff(result, quiet, exit_zero)

    findings = sorted(result.findings, key=lambda f: f.sort_key)
    if statistics:
        click.echo(report.statistics(findings, unsafe_fixes), nl=False)
    else:
        click.echo(report.render(output_format, findings), nl=False)
        if output_format == "text" and not quiet:
            click.echo(_summary(findings, result.fixed, fix, unsafe_fixes), nl=False)
    if result.crashes:
        sys.exit(2)
    sys.exit(1 if findings and not exit_zero else 0)


def _check_config(config_file: str | None, paths: tuple[str, ...], select: tuple[str, ...],
                  extend_select: tuple[str, ...], ignore: tuple[str, ...]) -> tuple[Config, set[str]]:
    """The configuration and the enabled codes of ``devlint check``; a usage error exits 2."""
    try:
        config = resolve(config_file, list(paths))
        codes = _resolve_codes(config, select, extend_select, ignore)
        if "-" in paths:
            raise ConfigError("reading from standard input is not supported; name a file")
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


def _summary(findings: list[Finding], fixed: list[Finding], fix: bool, unsafe: bool) -> str:
    lines = []
    n, m = len(findings), len(fixed)
    if n == 0 and m == 0:
        return "All checks passed!\n"
    if fix and m:
        lines.append(f"Found {_errors(n + m)} ({m} fixed, {n} remaining).")
    elif n:
        lines.append(f"Found {_errors(n)}.")
    safe = sum(1 for f in findings if f.fix is not None and f.fix.applicability.value == "safe")
    hidden = sum(1 for f in findings if f.fix is not None and f.fix.applicability.value == "unsafe")
    if unsafe:
        safe, hidden = safe + hidden, 0
    if safe:
        option = "`--fix --unsafe-fixes`" if unsafe else "`--fix`"
        lines.append(f"[*] {safe} fixable with the {option} option" + (
            f" ({hidden} hidden fixes can be enabled with the `--unsafe-fixes` option)." if hidden else "."))
    elif hidden:
        lines.append(f"No fixes available ({hidden} hidden fixes can be enabled with the `--unsafe-fixes` option).")
    return "".join(line + "\n" for line in lines)


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
