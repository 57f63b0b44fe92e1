"""`devlint server`: the language server, driven in a subprocess by a small LSP client speaking JSON-RPC over
its stdin/stdout (Content-Length framing), as an editor does."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

pytestmark = pytest.mark.xdist_group("server")

TIMEOUT = 20  # seconds for any one reply (a lint takes milliseconds; this only bounds a hang)

CUDA = "import torch\n\nx = torch.zeros(3).cuda()\n"
CUDA_MESSAGE = ('.cuda() crashes without a GPU ("Torch not compiled with CUDA enabled"); use .to(device) with a '
                "device chosen by torch.cuda.is_available()")
FIXED = 'import torch\n\nx = torch.zeros(3).to("cuda" if torch.cuda.is_available() else "cpu")\n'
BOTH = 'import torch\n\nd = torch.device("CUDA")\nx = torch.zeros(3).cuda()\n'  # DEV003 (safe fix), DEV001 (unsafe)

# imported instead of torch when something imports torch: it leaves a marker file
FAKE_TORCH = "import os\nopen(os.environ['DEVLINT_TEST_TORCH_MARKER'], 'w').close()\n"


def _pos(line: int, character: int) -> dict[str, int]:
    return {"line": line, "character": character}


def _range(line: int, start: int, end_line: int, end: int) -> dict[str, Any]:
    return {"start": _pos(line, start), "end": _pos(end_line, end)}


class Client:
    """A minimal LSP client: requests wait for their response, notifications are queued by method."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "devlint", "server"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.pending: list[dict[str, Any]] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            headers = {}
            while True:
                line = stdout.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                key, _, value = line.decode("ascii").partition(":")
                headers[key.strip().lower()] = value.strip()
            body = stdout.read(int(headers["content-length"]))
            self.messages.put(json.loads(body))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.send({"method": method, "params": params})

    def _next(self) -> dict[str, Any]:
        try:
            message = self.messages.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"no message from the server within {TIMEOUT} s") from None
        if message is None:
            assert self.proc.stderr is not None
            raise AssertionError(f"the server closed its output: {self.proc.stderr.read().decode()[-3000:]}")
        return message

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            message = self._next()
            if message.get("id") == self.next_id and "method" not in message:
                assert "error" not in message, message
                return message["result"]
            if "id" in message and "method" in message:  # a request from the server: answer it
                self.send({"id": message["id"], "result": None})
            else:
                self.pending.append(message)

    def wait(self, method: str, uri: str | None = None) -> dict[str, Any]:
        """The next notification ``method`` (for ``uri``), in order."""
        while True:
            for i, message in enumerate(self.pending):
                if message.get("method") == method and (uri is None or message["params"].get("uri") == uri):
                    return self.pending.pop(i)["params"]
            message = self._next()
            if "id" in message and "method" in message:
                self.send({"id": message["id"], "result": None})
            else:
                self.pending.append(message)

    def diagnostics_of(self, uri: str, version: int) -> dict[str, Any]:
        """The diagnostics published for ``uri`` at ``version`` (a lint of an earlier version, published late
        by a re-lint of everything open, is skipped)."""
        while True:
            published = self.wait("textDocument/publishDiagnostics", uri)
            if published.get("version") == version:
                return published

    def initialize(self, root: Path, encodings: list[str] | None = None) -> dict[str, Any]:
        result = self.request("initialize", {
            "processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {
                "general": {"positionEncodings": encodings or ["utf-16"]},
                "textDocument": {"synchronization": {"didSave": True},
                                 "publishDiagnostics": {"versionSupport": True},
                                 "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                                     "quickfix", "source", "source.fixAll"]}}}},
                "notebookDocument": {"synchronization": {}},
            }})
        self.notify("initialized", {})
        return result

    def open(self, path: Path, text: str | None = None, version: int = 1) -> dict[str, Any]:
        text = path.read_text() if text is None else text
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": "python", "version": version, "text": text}})
        return self.wait("textDocument/publishDiagnostics", path.as_uri())

    def change(self, path: Path, text: str, version: int) -> dict[str, Any]:
        self.notify("textDocument/didChange", {"textDocument": {"uri": path.as_uri(), "version": version},
                                               "contentChanges": [{"text": text}]})
        return self.wait("textDocument/publishDiagnostics", path.as_uri())

    def actions(self, path: Path, line: int, only: list[str] | None = None) -> list[dict[str, Any]]:
        context: dict[str, Any] = {"diagnostics": []}
        if only is not None:
            context["only"] = only
        return self.request("textDocument/codeAction", {
            "textDocument": {"uri": path.as_uri()}, "range": _range(line, 0, line, 0), "context": context})

    def stop(self) -> int:
        assert self.request("shutdown") is None
        self.notify("exit")
        try:
            return self.proc.wait(timeout=TIMEOUT)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def _env(tmp: Path) -> dict[str, str]:
    fake = tmp / "fake-site"
    (fake / "torch").mkdir(parents=True, exist_ok=True)
    (fake / "torch" / "__init__.py").write_text(FAKE_TORCH)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COV_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(fake), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["DEVLINT_TEST_TORCH_MARKER"] = str(tmp / "torch-imported")
    return env


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    ignoring = root / "ignoring"
    ignoring.mkdir()
    (ignoring / "pyproject.toml").write_text(
        '[tool.devlint]\nignore = ["DEV001"]\n\n[tool.devlint.per-file-ignores]\n"legacy/*" = ["DEV003"]\n')
    broken = root / "broken"
    broken.mkdir()
    (broken / "pyproject.toml").write_text('[tool.devlint]\nselect = ["NOPE"]\n')
    return root


@pytest.fixture(scope="module")
def client(workspace: Path):
    c = Client(workspace, _env(workspace))
    try:
        c.initialize(workspace)
        yield c
    finally:
        c.kill()


def test_fake_torch_leaves_its_marker(tmp_path):
    """The check below can fail: with this environment, importing torch leaves the marker."""
    env = _env(tmp_path)
    subprocess.run([sys.executable, "-c", "import torch"], env=env, check=True, cwd=tmp_path)
    assert (tmp_path / "torch-imported").exists()


def test_initialize_advertises_the_features(tmp_path):
    c = Client(tmp_path, _env(tmp_path))
    try:
        result = c.initialize(tmp_path, encodings=["utf-8", "utf-16"])
        caps = result["capabilities"]
        assert result["serverInfo"]["name"] == "devlint"
        assert caps["positionEncoding"] == "utf-8"
        assert caps["textDocumentSync"]["openClose"] is True
        assert caps["textDocumentSync"]["change"] == 2  # incremental
        assert caps["textDocumentSync"]["save"] == {"includeText": False}
        assert caps["codeActionProvider"]["codeActionKinds"] == ["quickfix", "source.fixAll.devlint"]
        assert caps["notebookDocumentSync"]["notebookSelector"] == [
            {"notebook": "*", "cells": [{"language": "python"}]}]
        path = tmp_path / "train.py"
        path.write_text('import torch\n\nx = "\U0001f600"; y = torch.zeros(3).cuda()\n')
        # columns in UTF-8 bytes, as negotiated: the emoji counts 4
        assert [(d["code"], d["range"]) for d in c.open(path)["diagnostics"]] == [("DEV001", _range(2, 16, 2, 37))]
        assert [a["kind"] for a in c.actions(path, 2, only=["quickfix", "source"])] == [
            "quickfix", "quickfix", "source.fixAll.devlint"]  # the fix, noqa; fix all (fix_text ran)
        assert c.stop() == 0
    finally:
        c.kill()
    assert not (tmp_path / "torch-imported").exists(), "the server imported torch"


def test_diagnostics_on_open_change_and_save(client, workspace):
    path = workspace / "train.py"
    path.write_text(CUDA)
    published = client.open(path)
    assert published["version"] == 1
    (diag,) = published["diagnostics"]
    href = diag.pop("codeDescription")["href"]
    assert href.startswith(("https://", "file:///")) and href.endswith("/rules/DEV001.md"), href
    assert diag == {"range": _range(2, 4, 2, 25), "message": CUDA_MESSAGE, "severity": 2, "code": "DEV001",
                    "source": "devlint"}

    assert client.change(path, FIXED, 2) == {"uri": path.as_uri(), "version": 2, "diagnostics": []}

    client.notify("textDocument/didChange", {"textDocument": {"uri": path.as_uri(), "version": 3}, "contentChanges": [
        {"range": _range(2, 19, 2, 70), "text": "cuda()"}]})  # an incremental change back to the bug
    assert [d["range"] for d in client.wait("textDocument/publishDiagnostics", path.as_uri())["diagnostics"]] == [
        _range(2, 4, 2, 25)]

    client.notify("textDocument/didSave", {"textDocument": {"uri": path.as_uri()}})
    saved = client.wait("textDocument/publishDiagnostics", path.as_uri())
    assert saved["version"] == 3 and [d["code"] for d in saved["diagnostics"]] == ["DEV001"]

    client.notify("textDocument/didClose", {"textDocument": {"uri": path.as_uri()}})
    assert client.wait("textDocument/publishDiagnostics", path.as_uri())["diagnostics"] == []


def test_quick_edits_are_linted_once_they_pause(client, workspace):
    path = workspace / "typing.py"
    assert client.open(path, FIXED)["diagnostics"] == []
    for version, text in enumerate([CUDA[:-2], CUDA[:-1], CUDA], start=2):  # typing "()" then a newline
        client.notify("textDocument/didChange", {"textDocument": {"uri": path.as_uri(), "version": version},
                                                 "contentChanges": [{"text": text}]})
    published = client.wait("textDocument/publishDiagnostics", path.as_uri())  # the first one after the edits
    assert published["version"] == 4
    assert [d["range"] for d in published["diagnostics"]] == [_range(2, 4, 2, 25)]


def test_columns_are_utf16_code_units(client, workspace):
    path = workspace / "emoji.py"
    published = client.open(path, 'import torch\n\nx = "\U0001f600"; y = torch.zeros(3).cuda()\n')
    (diag,) = published["diagnostics"]
    # devlint's columns count characters (3:14 to 3:35 here); in UTF-16 code units the emoji counts 2
    assert diag["range"] == _range(2, 14, 2, 35)


def test_code_actions_fix_and_noqa(client, workspace):
    path = workspace / "both.py"
    assert [d["code"] for d in client.open(path, BOTH)["diagnostics"]] == ["DEV003", "DEV001"]
    uri = path.as_uri()

    actions = client.actions(path, 2)
    fix, noqa = actions
    assert fix["title"] == 'devlint (DEV003): Use "cuda"'
    assert fix["kind"] == "quickfix" and fix["isPreferred"] is True
    assert fix["diagnostics"][0]["code"] == "DEV003"
    assert fix["edit"] == {"documentChanges": [{"textDocument": {"uri": uri, "version": 1},
                                                "edits": [{"range": _range(2, 17, 2, 23), "newText": '"cuda"'}]}]}
    assert noqa["title"] == "devlint (DEV003): Disable DEV003 for this line"
    assert noqa["edit"]["documentChanges"][0]["edits"] == [
        {"range": _range(2, 24, 2, 24), "newText": "  # noqa: DEV003"}]

    unsafe, _ = client.actions(path, 3)
    assert unsafe["title"] == "devlint (DEV001): Use .to(device) (unsafe fix: may change behaviour)"
    assert unsafe["isPreferred"] is False
    assert unsafe["edit"]["documentChanges"][0]["edits"] == [
        {"range": _range(3, 19, 3, 23), "newText": "to"},
        {"range": _range(3, 24, 3, 24), "newText": '"cuda" if torch.cuda.is_available() else "cpu"'}]

    assert client.actions(path, 0) == []  # nothing on line 1
    assert client.actions(path, 2, only=["source.fixAll"]) == client.actions(path, 2, only=[
        "source.fixAll.devlint"])

    (fix_all,) = client.actions(path, 0, only=["source.fixAll"])
    assert fix_all["kind"] == "source.fixAll.devlint"
    # the safe fix only (DEV003); DEV001's fix is unsafe
    assert fix_all["edit"]["documentChanges"][0]["edits"] == [
        {"range": _range(0, 0, 4, 0), "newText": BOTH.replace('"CUDA"', '"cuda"')}]


def test_noqa_action_merges_and_suppresses(client, workspace):
    path = workspace / "noqa.py"
    text = "import torch\n\nx = torch.zeros(3).cuda()  # noqa: DEV006\n"
    client.open(path, text)
    noqa = next(a for a in client.actions(path, 2) if "Disable" in a["title"])
    assert noqa["edit"]["documentChanges"][0]["edits"] == [
        {"range": _range(2, 35, 2, 41), "newText": "DEV001, DEV006"}]  # as --add-noqa merges: sorted
    merged = "import torch\n\nx = torch.zeros(3).cuda()  # noqa: DEV001, DEV006\n"
    assert client.change(path, merged, 2)["diagnostics"] == []
    assert client.actions(path, 2) == []


def test_noqa_goes_where_a_comment_can_end_the_line(client, workspace):
    path = workspace / "lines.py"
    text = "import torch\n\nx = torch.zeros(3).cuda() + \\\n    1\nm = torch.nn.Linear(\n    2, 2).cuda()\n"
    assert [d["range"] for d in client.open(path, text)["diagnostics"]] == [_range(2, 4, 2, 25), _range(4, 4, 5, 16)]
    # a comment after a backslash continuation is a syntax error: no noqa action there
    assert [a["title"] for a in client.actions(path, 2)] == [
        "devlint (DEV001): Use .to(device) (unsafe fix: may change behaviour)"]
    noqa = client.actions(path, 5)[-1]
    assert noqa["title"] == "devlint (DEV001): Disable DEV001 for this line"
    assert noqa["edit"]["documentChanges"][0]["edits"] == [
        {"range": _range(4, 20, 4, 20), "newText": "  # noqa: DEV001"}]  # the finding's first line


def test_fix_all_without_changes_edits_nothing(client, workspace):
    path = workspace / "clean.py"
    assert client.open(path, FIXED)["diagnostics"] == []
    (fix_all,) = client.actions(path, 0, only=["source"])
    assert fix_all["edit"] == {"documentChanges": []}


def test_workspace_configuration_applies(client, workspace):
    path = workspace / "ignoring" / "pkg" / "train.py"
    path.parent.mkdir(parents=True)
    # [tool.devlint] ignore = ["DEV001"] in ignoring/pyproject.toml: DEV003 is still reported, DEV001 is not
    assert [d["code"] for d in client.open(path, BOTH)["diagnostics"]] == ["DEV003"]
    legacy = workspace / "ignoring" / "legacy" / "old.py"  # per-file-ignores: DEV003 under legacy/
    assert client.open(legacy, BOTH)["diagnostics"] == []
    assert [d["code"] for d in client.open(workspace / "same.py", BOTH)["diagnostics"]] == ["DEV003", "DEV001"]


def test_device_fallback_applies_to_the_fix(client, workspace):
    folder = workspace / "accelerated"
    folder.mkdir()
    (folder / "pyproject.toml").write_text('[tool.devlint]\ndevice-fallback = "accelerator"\n')
    path = folder / "train.py"
    assert [d["code"] for d in client.open(path, CUDA)["diagnostics"]] == ["DEV001"]
    fix, _ = client.actions(path, 2)
    assert fix["edit"]["documentChanges"][0]["edits"] == [
        {"range": _range(2, 19, 2, 23), "newText": "to"},
        {"range": _range(2, 24, 2, 24), "newText": "torch.accelerator.current_accelerator().type if "
                                                   'torch.accelerator.is_available() else "cpu"'}]


def test_a_bad_configuration_is_shown_and_the_defaults_apply(client, workspace):
    published = client.open(workspace / "broken" / "train.py", BOTH)
    assert [d["code"] for d in published["diagnostics"]] == ["DEV003", "DEV001"]
    shown = client.wait("window/showMessage")
    assert shown["type"] == 1
    assert shown["message"] == (f"devlint: {workspace / 'broken' / 'pyproject.toml'}: [tool.devlint] select: unknown rule "
                                "code or prefix 'NOPE' (using the defaults)")


def test_saving_the_configuration_lints_open_files_again(client, workspace):
    folder = workspace / "reconfigured"
    folder.mkdir()
    config = folder / "pyproject.toml"
    config.write_text("[tool.devlint]\n")
    path = folder / "train.py"
    assert [d["code"] for d in client.open(path, BOTH)["diagnostics"]] == ["DEV003", "DEV001"]
    config.write_text('[tool.devlint]\nignore = ["DEV003"]\n')
    client.notify("textDocument/didSave", {"textDocument": {"uri": config.as_uri()}})
    assert [d["code"] for d in client.wait("textDocument/publishDiagnostics", path.as_uri())["diagnostics"]] == [
        "DEV001"]


def test_an_unsaved_document_is_linted(client):
    uri = "untitled:Untitled-1"
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": CUDA}})
    published = client.wait("textDocument/publishDiagnostics", uri)
    assert [(d["code"], d["range"]) for d in published["diagnostics"]] == [("DEV001", _range(2, 4, 2, 25))]


def test_notebook_cells(client, workspace):
    nb = (workspace / "demo.ipynb").as_uri()
    cells = [(f"{nb}#cell{i}", kind, text) for i, (kind, text) in enumerate([
        (2, "import torch\n%matplotlib inline\n"), (1, "# Training"), (2, "x = torch.zeros(3).cuda()\n"),
        (2, 'd = torch.device("CUDA")\n')])]
    client.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": nb, "notebookType": "jupyter-notebook", "version": 1,
                             "cells": [{"kind": kind, "document": uri} for uri, kind, _ in cells]},
        "cellTextDocuments": [{"uri": uri, "languageId": "python" if kind == 2 else "markdown", "version": 1,
                               "text": text} for uri, kind, text in cells]})
    first = client.wait("textDocument/publishDiagnostics", cells[0][0])
    assert first["diagnostics"] == []
    third = client.wait("textDocument/publishDiagnostics", cells[2][0])
    (diag,) = third["diagnostics"]
    assert (diag["code"], diag["range"]) == ("DEV001", _range(0, 4, 0, 25))

    fix, noqa = client.request("textDocument/codeAction", {
        "textDocument": {"uri": cells[2][0]}, "range": _range(0, 0, 0, 0), "context": {"diagnostics": []}})
    assert fix["edit"]["documentChanges"] == [{"textDocument": {"uri": cells[2][0], "version": 1}, "edits": [
        {"range": _range(0, 19, 0, 23), "newText": "to"},
        {"range": _range(0, 24, 0, 24), "newText": '"cuda" if torch.cuda.is_available() else "cpu"'}]}]
    assert noqa["edit"]["documentChanges"][0]["edits"] == [{"range": _range(0, 25, 0, 25),
                                                            "newText": "  # noqa: DEV001"}]
    assert [d["code"] for d in client.wait("textDocument/publishDiagnostics", cells[3][0])["diagnostics"]] == [
        "DEV003"]

    # fix all, asked from any cell: the safe fixes of the whole notebook (DEV003's, in the last cell)
    (fix_all,) = client.request("textDocument/codeAction", {
        "textDocument": {"uri": cells[0][0]}, "range": _range(0, 0, 0, 0),
        "context": {"diagnostics": [], "only": ["source.fixAll"]}})
    assert fix_all["edit"]["documentChanges"] == [{"textDocument": {"uri": cells[3][0], "version": 1}, "edits": [
        {"range": _range(0, 0, 1, 0), "newText": 'd = torch.device("cuda")\n'}]}]

    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": nb, "version": 2},
        "change": {"cells": {"textContent": [{"document": {"uri": cells[2][0], "version": 2}, "changes": [
            {"range": _range(0, 19, 0, 25), "text": 'to("cpu")'}]}]}}})
    assert client.diagnostics_of(cells[2][0], 2) == {"uri": cells[2][0], "version": 2, "diagnostics": []}
    assert client.wait("textDocument/publishDiagnostics", cells[0][0])["diagnostics"] == []
    assert [d["code"] for d in client.wait("textDocument/publishDiagnostics", cells[3][0])["diagnostics"]] == [
        "DEV003"]

    client.notify("notebookDocument/didClose", {"notebookDocument": {"uri": nb},
                                                "cellTextDocuments": [{"uri": uri} for uri, _, _ in cells]})
    assert client.wait("textDocument/publishDiagnostics", cells[3][0])["diagnostics"] == []


def test_without_pygls_a_one_line_error(monkeypatch):
    from click.testing import CliRunner

    from devlint.cli import main

    monkeypatch.setitem(sys.modules, "pygls", None)  # as if pygls were not installed
    monkeypatch.delitem(sys.modules, "devlint.server", raising=False)
    result = CliRunner().invoke(main, ["server"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == "devlint: error: devlint server needs pygls: pip install 'devlint[lsp]'\n"
