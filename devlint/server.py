"""``devlint server``: a Language Server (LSP over stdio, built on pygls) for editors.

- **Diagnostics** on open, change and save of a Python file, and of a notebook through LSP 3.17's notebook
  document sync (its code cells linted as one module, as ``devlint x.ipynb`` does; each cell gets its own).
- **Code actions** per finding: its fix (a quickfix; an unsafe fix says so), and "Disable CODE for this line"
  (a ``# noqa: CODE`` comment where ``devlint --add-noqa`` writes it, merged into one already there);
  ``source.fixAll.devlint`` applies every safe fix to the document.
- **Configuration**: the ``[tool.devlint]`` of the pyproject.toml nearest to each document (as
  ``devlint PATH`` finds it): ``select``, ``extend-select``, ``ignore``, ``per-file-ignores``. Read again on
  each lint, so an edited configuration applies at the next change.

Linting runs in this process with the engine (no results cache, no process pool), one lint at a time in a
thread beside the event loop, after edits pause (``DEBOUNCE_S``); torch is never imported. pygls is an optional
dependency (``pip install "devlint[lsp]"``): only this module imports it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TypeVar

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from devlint import __version__, notebook, report
from devlint.addnoqa import add_noqa
from devlint.config import Config, ConfigError, expand_codes, resolve
from devlint.context import DEFAULT_SETTINGS, Settings
from devlint.diagnostics import Applicability, Edit, Finding, Fix, Position
from devlint.engine import fix_text, lint_text, syntax_finding
from devlint.project import Project
from devlint.rules import all_rules
from devlint.rules.base import Rule
from devlint.runner import Options, applicable, rules_for, settle
from devlint.source import LIBCST_MAX_BYTES, split_lines

SOURCE = "devlint"
FIX_ALL = "source.fixAll.devlint"
PYTHON_SUFFIXES = (".py", ".pyi")
T = TypeVar("T")


@cache
def rule_url(code: str) -> str | None:
    """The page of a rule: the URL the JSON and SARIF outputs carry (the repository's ``rules/CODE.md``), else
    that page in the source tree devlint runs from (a file URI); None for the E-codes and when neither is known
    (an installed wheel without ``[project.urls]``: ``devlint rule CODE`` prints the page)."""
    if code not in all_rules():
        return None
    url = report.rule_url(code)
    if url is not None:
        return url
    page = Path(__file__).resolve().parent.parent / "rules" / f"{code}.md"
    return page.as_uri() if page.is_file() else None


# --- configuration -------------------------------------------------------------------------------------
@dataclass
class Configured:
    config: Config
    codes: set[str]
    error: str | None = None  # a configuration that could not be read (then the defaults apply)

    @property
    def settings(self) -> Settings:
        """What the rules are told (``device-fallback``), as ``devlint check`` tells them."""
        return Settings(device_fallback=self.config.device_fallback)


def configured_for(path: str) -> Configured:
    """The enabled codes for ``path`` from the nearest ``[tool.devlint]`` (the defaults when it is invalid)."""
    try:
        config = resolve(None, [path])
        codes = expand_codes(config.select, "select") if config.select is not None else set(all_rules())
        codes -= expand_codes(config.ignore, "ignore")
        codes |= expand_codes(config.extend_select, "extend-select")
        return Configured(config, codes)
    except ConfigError as exc:
        return Configured(Config(root=Path(os.path.dirname(path) or ".").resolve()), set(all_rules()), str(exc))


def _rules(path: str, configured: Configured) -> list[Rule]:
    """The rules enabled for ``path`` (per-file-ignores applied)."""
    return rules_for(path, configured.config, Options(select=configured.codes))


# --- linting a document --------------------------------------------------------------------------------
@dataclass
class Linted:
    """A Python document's findings, on the text they were computed for."""

    text: str
    path: str
    findings: list[Finding]
    rules: list[Rule]
    settings: Settings = DEFAULT_SETTINGS


def lint_python(text: str, path: str, configured: Configured) -> Linted:
    rules = _rules(path, configured)
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > LIBCST_MAX_BYTES:
        return Linted(text, path, [], [])
    project = Project([path])
    rules = applicable(data, rules, project, path)
    findings = lint_text(text, path, rules, project=project, settings=configured.settings).findings if rules else []
    return Linted(text, path, findings, rules, configured.settings)


@dataclass
class LintedNotebook:
    """A notebook's findings: ``broken`` (the cells that do not parse), ``raw`` (on the module's rows) and
    ``placed`` (the same in their cells, rows in the cell)."""

    module: notebook.Module
    path: str
    broken: list[Finding]
    raw: list[Finding]
    placed: list[Finding]
    rules: list[Rule]
    settings: Settings = DEFAULT_SETTINGS


def lint_notebook(nb: notebook.Notebook, path: str, configured: Configured) -> LintedNotebook:
    """The notebook's code cells as one module (cells that do not parse left out and reported), linted."""
    module, errors = notebook.parsed(nb)
    broken = [dataclasses.replace(syntax_finding(path, error), cell=number) for number, error in errors.items()]
    excluded = dict.fromkeys(errors, "does not parse")
    rules = _rules(path, configured)
    code = module.text.encode("utf-8", "surrogatepass")
    rules = applicable(code, rules, None, path) if len(code) <= LIBCST_MAX_BYTES else []
    raw: list[Finding] = []
    if rules:  # a cell CPython reads but LibCST does not: left out too, as the command line does
        module, lint = settle(path, nb, module, excluded, broken, rules, configured.settings)
        raw = lint.findings
    return LintedNotebook(module, path, broken, raw, notebook.in_cells(module, module.text, raw), rules,
                          configured.settings)


# --- positions -----------------------------------------------------------------------------------------
def _units(text: str, encoding: str) -> int:
    if encoding == lsp.PositionEncodingKind.Utf32:
        return len(text)
    if encoding == lsp.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def to_lsp(lines: list[str], pos: Position, encoding: str) -> lsp.Position:
    """A devlint position (1-based row, 1-based column in characters) as an LSP position."""
    if pos.row > len(lines):
        return lsp.Position(line=len(lines), character=0)
    row = max(pos.row, 1)
    line = lines[row - 1].rstrip("\r\n")
    return lsp.Position(line=row - 1, character=_units(line[: max(pos.column, 1) - 1], encoding))


def row_of(lines: list[str], pos: lsp.Position) -> int:
    """The 1-based row of an LSP position."""
    return min(pos.line, len(lines)) + 1


def _range(lines: list[str], start: Position, end: Position, encoding: str) -> lsp.Range:
    return lsp.Range(start=to_lsp(lines, start, encoding), end=to_lsp(lines, end, encoding))


def _end_of(lines: list[str], encoding: str) -> lsp.Position:
    if not lines or lines[-1].endswith(("\n", "\r")):
        return lsp.Position(line=len(lines), character=0)
    return lsp.Position(line=len(lines) - 1, character=_units(lines[-1], encoding))


def diagnostic(finding: Finding, lines: list[str], encoding: str) -> lsp.Diagnostic:
    url = rule_url(finding.code)
    rule = finding.code in all_rules()
    return lsp.Diagnostic(
        range=_range(lines, finding.start, finding.end, encoding),
        message=finding.message,
        severity=lsp.DiagnosticSeverity.Warning if rule else lsp.DiagnosticSeverity.Error,
        code=finding.code,
        code_description=lsp.CodeDescription(href=url) if url else None,
        source=SOURCE,
    )


# --- code actions --------------------------------------------------------------------------------------
def fix_title(finding: Finding, fix: Fix) -> str:
    what = fix.message or f"Fix {finding.code}"
    unsafe = " (unsafe fix: may change behaviour)" if fix.applicability is Applicability.UNSAFE else ""
    return f"devlint ({finding.code}): {what}{unsafe}"


def noqa_edit(text: str, finding: Finding) -> tuple[int, int, int, str] | None:
    """The edit that puts ``finding``'s code in a ``# noqa`` comment as ``devlint --add-noqa`` writes it: (row,
    start and end column (0-based) in that line, replacement); None when the line already suppresses it or no
    comment can go on its lines."""
    new, changed = add_noqa(text, [finding])
    if not changed:
        return None
    for row, (old_line, new_line) in enumerate(zip(split_lines(text), split_lines(new), strict=False), 1):
        if old_line != new_line:
            old_body, new_body = old_line.rstrip("\r\n"), new_line.rstrip("\r\n")
            start = 0
            while start < min(len(old_body), len(new_body)) and old_body[start] == new_body[start]:
                start += 1
            while start > 0 and old_body[start - 1].isalnum():  # replace whole codes, not their tails
                start -= 1
            return row, start, len(old_body), new_body[start:]
    return None


# --- the server ----------------------------------------------------------------------------------------
DEBOUNCE_S = 0.15  # while typing: lint when the edits pause this long, not at every keystroke

Cells = tuple[notebook.Notebook, dict[int, str]]  # a notebook as devlint reads one, and each cell's document
Docs = dict[str, tuple[list[str], int | None]]  # uri -> (its lines, its version), for the edits of an action


class DevlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "devlint", __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            notebook_document_sync=lsp.NotebookDocumentSyncOptions(
                notebook_selector=[lsp.NotebookDocumentFilterWithCells(
                    notebook="*", cells=[lsp.NotebookCellLanguage(language="python")])],
                save=True,
            ),
        )
        self.reported: set[str] = set()  # configuration errors already shown
        # Lints run one at a time off the event loop (a large file takes seconds; the loop keeps reading the
        # client's edits meanwhile, and the engine's deep-stack retry sets process-wide limits).
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="devlint-lint")
        self.open_documents: set[str] = set()
        self.linted: dict[str, Linted] = {}  # the last lint of each open Python document

    async def in_worker(self, func: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.worker, func)

    @property
    def encoding(self) -> str:
        return str(self.workspace.position_encoding or lsp.PositionEncodingKind.Utf16)

    def configured(self, path: str) -> Configured:
        configured = configured_for(path)
        if configured.error is not None and configured.error not in self.reported:
            self.reported.add(configured.error)
            self.window_show_message(lsp.ShowMessageParams(
                type=lsp.MessageType.Error, message=f"devlint: {configured.error} (using the defaults)"))
        return configured

    def document_path(self, uri: str) -> str:
        """The file a document is (for configuration and per-file-ignores); an unsaved one is placed in the
        workspace's root."""
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if path:
            return path
        root = self.workspace.root_path or os.getcwd()
        return os.path.join(root, "untitled.py")

    # --- Python files
    def is_python(self, uri: str) -> bool:
        if self.workspace.get_notebook_document(cell_uri=uri) is not None:
            return False
        doc = self.workspace.get_text_document(uri)
        return doc.language_id == "python" or self.document_path(uri).endswith(PYTHON_SUFFIXES)

    async def lint_document(self, uri: str, fresh: bool = False) -> Linted | None:
        """The lint of the document as it is now (the last one, unless ``fresh``, when its text is the same);
        None when the document changed or closed meanwhile (a newer lint follows)."""
        text = self.workspace.get_text_document(uri).source
        cached = self.linted.get(uri)
        if cached is not None and cached.text == text and not fresh:
            return cached
        path = self.document_path(uri)
        configured = self.configured(path)
        linted = await self.in_worker(lambda: lint_python(text, path, configured))
        if uri not in self.open_documents or self.workspace.get_text_document(uri).source != text:
            return None
        self.linted[uri] = linted
        return linted

    async def publish(self, uri: str, delay: float = 0.0, fresh: bool = False) -> None:
        if not self.is_python(uri):
            return
        if delay:
            version = self.workspace.get_text_document(uri).version
            await asyncio.sleep(delay)
            if self.workspace.get_text_document(uri).version != version:
                return  # edited again: that edit's lint publishes
        linted = await self.lint_document(uri, fresh)
        if linted is None:
            return
        lines = split_lines(linted.text)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, version=self.workspace.get_text_document(uri).version,
            diagnostics=[diagnostic(f, lines, self.encoding) for f in linted.findings]))

    async def saved(self, uri: str) -> None:
        if os.path.basename(self.document_path(uri)) != "pyproject.toml":
            await self.publish(uri, fresh=True)
            return
        documents, notebooks = list(self.open_documents), list(self.workspace.notebook_documents)
        for other in documents:  # the configuration changed: lint what is open again
            await self.publish(other, fresh=True)
        for nb_uri in notebooks:
            await self.publish_notebook(nb_uri)

    def opened(self, uri: str) -> None:
        self.open_documents.add(uri)

    def closed(self, uri: str) -> None:
        self.open_documents.discard(uri)
        self.linted.pop(uri, None)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    async def code_actions(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        if self.workspace.get_notebook_document(cell_uri=uri) is not None:
            return await self.notebook_actions(params)
        if not self.is_python(uri):
            return []
        linted = await self.lint_document(uri)
        if linted is None:
            return []
        lines = split_lines(linted.text)
        docs: Docs = {uri: (lines, self.workspace.get_text_document(uri).version)}
        actions: list[lsp.CodeAction] = []
        if _wants(params, lsp.CodeActionKind.QuickFix):
            first, last = row_of(lines, params.range.start), row_of(lines, params.range.end)
            for finding in linted.findings:
                if finding.start.row <= last and first <= finding.end.row:
                    edits = [(uri, e) for e in finding.fix.edits] if finding.fix is not None else []
                    actions += self.finding_actions(finding, docs, edits, linted.text, uri)
        if _wants(params, FIX_ALL):
            fixed = linted.text
            if linted.rules and any(f.fix is not None for f in linted.findings):
                fixed = await self.in_worker(lambda: fix_text(linted.text, linted.path, linted.rules, unsafe=False,
                                                              project=Project([linted.path]),
                                                              settings=linted.settings).text)
            actions.append(self.fix_all({uri: (linted.text, fixed)}, docs))
        return actions

    def finding_actions(self, finding: Finding, docs: Docs, edits: list[tuple[str, Edit]], text: str,
                        uri: str) -> list[lsp.CodeAction]:
        """The quickfix (``edits``: the fix's edits, each with the document it lands in) and the noqa action of
        ``finding`` in document ``uri`` (``text``)."""
        actions = []
        diag = diagnostic(finding, docs[uri][0], self.encoding)
        if finding.fix is not None and edits:
            actions.append(lsp.CodeAction(
                title=fix_title(finding, finding.fix), kind=lsp.CodeActionKind.QuickFix, diagnostics=[diag],
                is_preferred=finding.fix.applicability is Applicability.SAFE,
                edit=self.workspace_edit({
                    doc: [lsp.TextEdit(range=_range(docs[doc][0], e.start, e.end, self.encoding),
                                       new_text=e.content) for d, e in edits if d == doc]
                    for doc in dict.fromkeys(d for d, _ in edits)
                }, docs)))
        noqa = noqa_edit(text, finding) if finding.code in all_rules() else None
        if noqa is not None:
            row, first, last, new = noqa
            where = _range(docs[uri][0], Position(row, first + 1), Position(row, last + 1), self.encoding)
            actions.append(lsp.CodeAction(
                title=f"devlint ({finding.code}): Disable {finding.code} for this line",
                kind=lsp.CodeActionKind.QuickFix, diagnostics=[diag],
                edit=self.workspace_edit({uri: [lsp.TextEdit(range=where, new_text=new)]}, docs)))
        return actions

    def workspace_edit(self, changes: dict[str, list[lsp.TextEdit]], docs: Docs) -> lsp.WorkspaceEdit:
        return lsp.WorkspaceEdit(document_changes=[
            lsp.TextDocumentEdit(
                text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=docs[uri][1]),
                edits=list(edits))
            for uri, edits in changes.items() if edits
        ])

    def fix_all(self, texts: dict[str, tuple[str, str]], docs: Docs) -> lsp.CodeAction:
        """``source.fixAll.devlint``: each document (uri -> (text, fixed text)) replaced whole where the safe
        fixes changed it."""
        changes: dict[str, list[lsp.TextEdit]] = {}
        for uri, (old, new) in texts.items():
            if new != old:
                changes[uri] = [lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0),
                                                             end=_end_of(split_lines(old), self.encoding)),
                                             new_text=new)]
        return lsp.CodeAction(title="devlint: Fix all auto-fixable problems", kind=FIX_ALL,
                              edit=self.workspace_edit(changes, docs))

    # --- notebooks
    def notebook_cells(self, nb_uri: str) -> Cells | None:
        """The notebook as devlint reads one (every cell numbered from 1), and each cell's document."""
        doc = self.workspace.get_notebook_document(notebook_uri=nb_uri)
        if doc is None:
            return None
        cells: list[notebook.Cell] = []
        uris: dict[int, str] = {}
        for number, cell in enumerate(doc.cells, 1):
            text_doc = self.workspace.get_text_document(cell.document)
            code = cell.kind == lsp.NotebookCellKind.Code and text_doc.language_id in (None, "python")
            cells.append(notebook.Cell(number, "code" if code else "markdown", text_doc.source))
            uris[number] = cell.document
        return notebook.Notebook(text="", bom=False, cells=cells, ascii=False), uris

    async def lint_cells(self, nb_uri: str) -> tuple[Cells, LintedNotebook] | None:
        """The lint of the notebook as it is now; None when it changed or closed meanwhile."""
        cells = self.notebook_cells(nb_uri)
        if cells is None:
            return None
        nb, uris = cells
        path = self.document_path(nb_uri)
        if not notebook.is_notebook(path):
            path = os.path.splitext(path)[0] + notebook.SUFFIX
        configured = self.configured(path)
        result = await self.in_worker(lambda: lint_notebook(nb, path, configured))
        now = self.notebook_cells(nb_uri)
        if now is None or now[1] != uris or [c.text for c in now[0].cells] != [c.text for c in nb.cells]:
            return None
        return cells, result

    async def publish_notebook(self, nb_uri: str, delay: float = 0.0) -> None:
        if delay:
            doc = self.workspace.get_notebook_document(notebook_uri=nb_uri)
            version = doc.version if doc is not None else None
            await asyncio.sleep(delay)
            doc = self.workspace.get_notebook_document(notebook_uri=nb_uri)
            if doc is None or doc.version != version:
                return
        linted = await self.lint_cells(nb_uri)
        if linted is None:
            return
        (nb, uris), result = linted
        texts = {c.number: c.text for c in nb.cells}
        per_cell: dict[int, list[lsp.Diagnostic]] = {c.number: [] for c in nb.cells if c.kind == "code"}
        first = min(per_cell, default=None)
        for finding in result.broken + result.placed:
            number = finding.cell if finding.cell in per_cell else first
            if number is not None:
                per_cell[number].append(diagnostic(finding, split_lines(texts[number]), self.encoding))
        for number, diagnostics in per_cell.items():
            version = self.workspace.get_text_document(uris[number]).version
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
                uri=uris[number], version=version, diagnostics=diagnostics))

    async def notebook_changed(self, params: lsp.DidChangeNotebookDocumentParams) -> None:
        structure = params.change.cells.structure if params.change.cells else None
        for closed in (structure.did_close or []) if structure else []:
            self.closed(closed.uri)
        await self.publish_notebook(params.notebook_document.uri, DEBOUNCE_S)

    async def notebook_actions(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        nb_doc = self.workspace.get_notebook_document(cell_uri=uri)
        linted = await self.lint_cells(nb_doc.uri) if nb_doc is not None else None
        if linted is None:
            return []
        (nb, uris), result = linted
        number = next((n for n, u in uris.items() if u == uri), None)
        docs: Docs = {uris[c.number]: (split_lines(c.text), self.workspace.get_text_document(uris[c.number]).version)
                      for c in nb.cells}
        actions: list[lsp.CodeAction] = []
        if _wants(params, lsp.CodeActionKind.QuickFix) and number is not None:
            lines = docs[uri][0]
            first, last = row_of(lines, params.range.start), row_of(lines, params.range.end)
            rows = notebook.row_map(result.module, result.module.text)
            for raw, placed in zip(result.raw, result.placed, strict=True):
                if placed.cell == number and placed.start.row <= last and first <= placed.end.row:
                    edits = _cell_edits(rows, raw.fix, uris)
                    actions += self.finding_actions(placed, docs, edits, nb.cells[number - 1].text, uri)
        if _wants(params, FIX_ALL) and result.rules:
            fixed = await self.in_worker(
                lambda: fix_text(result.module.text, result.path, result.rules, unsafe=False,
                                 settings=result.settings).text)
            sources = notebook.split(result.module, fixed) or {}
            texts = {uris[c.number]: (c.text, sources.get(c.number, c.text)) for c in nb.cells if c.kind == "code"}
            actions.append(self.fix_all(texts, docs))
        return actions


def _cell_edits(rows: list[tuple[int, int]], fix: Fix | None, uris: dict[int, str]) -> list[tuple[str, Edit]]:
    """A fix's edits on the module's rows as (cell document, edit in the cell's rows); empty when an edit
    does not land in one cell (on a separator, past the end)."""
    if fix is None:
        return []
    out = []
    for edit in fix.edits:
        if not (1 <= edit.start.row <= len(rows) and 1 <= edit.end.row <= len(rows)):
            return []
        (cell, row), (end_cell, end_row) = rows[edit.start.row - 1], rows[edit.end.row - 1]
        if cell != end_cell or cell not in uris:
            return []
        out.append((uris[cell], dataclasses.replace(edit, start=Position(row, edit.start.column),
                                                    end=Position(end_row, edit.end.column))))
    return out


def _wants(params: lsp.CodeActionParams, kind: str) -> bool:
    """Does the request ask for actions of ``kind`` (no ``only``: every kind but the source ones)?"""
    only = params.context.only
    if not only:
        return not kind.startswith("source")
    return any(kind == k or kind.startswith(f"{k}.") for k in only)


# --- wiring ---------------------------------------------------------------------------------------------
def create() -> DevlintServer:
    server = DevlintServer()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: DevlintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.opened(params.text_document.uri)
        await ls.publish(params.text_document.uri, fresh=True)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: DevlintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        await ls.publish(params.text_document.uri, DEBOUNCE_S)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE, lsp.SaveOptions(include_text=False))
    async def did_save(ls: DevlintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        await ls.saved(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DevlintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.closed(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False))
    async def code_action(ls: DevlintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        return await ls.code_actions(params)

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: DevlintServer, params: None) -> None:
        ls.worker.shutdown(wait=False, cancel_futures=True)

    _notebook_features(server)
    return server


def _notebook_features(server: DevlintServer) -> None:
    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
    async def notebook_open(ls: DevlintServer, params: lsp.DidOpenNotebookDocumentParams) -> None:
        await ls.publish_notebook(params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
    async def notebook_change(ls: DevlintServer, params: lsp.DidChangeNotebookDocumentParams) -> None:
        await ls.notebook_changed(params)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_SAVE)
    async def notebook_save(ls: DevlintServer, params: lsp.DidSaveNotebookDocumentParams) -> None:
        await ls.publish_notebook(params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: DevlintServer, params: lsp.DidCloseNotebookDocumentParams) -> None:
        for cell in params.cell_text_documents:
            ls.closed(cell.uri)


def serve() -> None:
    """Speak LSP on stdin/stdout until the client says exit."""
    create().start_io()
