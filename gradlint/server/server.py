"""The gradlint language server (pygls), read top-down as a list of LSP features.

Each handler is small and delegates to plain functions (engine, linting, convert) that
know nothing of LSP. The server process never imports torch: linting is libcst only,
and gradcheck runs in worker processes started with the user's interpreter.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from .. import __version__
from ..engine import trust_store
from ..engine.suppressions import add_noqa
from ..engine.trust_store import TrustedFolders
from ..findings import Applicability, Fix
from . import config_command, convert, notebooks, trust, workspace_diagnostics
from .documents import UTF8, UTF16, UTF32, Document, DocumentStore, column_from_units, units
from .lifecycle import Lifecycle, LifecycleProtocol
from .linting import Debouncer, Linter, LintSnapshot, ProjectConfigs
from .baselined import Baselines
from .settings import Settings, parse_settings

log = logging.getLogger("gradlint.server")

FIX_ALL_KIND = "source.fixAll.gradlint"
_NOQA_CODE = re.compile(r"GL\d{3}")


class GradlintProtocol(LifecycleProtocol):
    """pygls' protocol with four changes: UTF-8 positions are preferred whenever the
    client offers them; documents are kept by gradlint's own store (which splits lines the
    way LSP does, at \\n, \\r\\n and \\r only); `$/cancelRequest` also stops a
    running gradcheck command (pygls alone would only answer "cancelled"); and the server
    ends cleanly however it is stopped (see lifecycle.py)."""

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        general = params.capabilities.general
        if general is not None and general.position_encodings and \
                types.PositionEncodingKind.Utf8 in general.position_encodings:
            general.position_encodings = [types.PositionEncodingKind.Utf8] + [
                e for e in general.position_encodings if e != types.PositionEncodingKind.Utf8]
        return (yield from super().lsp_initialize(params))

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        document = params.text_document
        self._server.documents.open(document.uri, document.text, document.version,
                                    document.language_id)
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        server: GradlintServer = self._server  # type: ignore[assignment]
        document = server.documents.get(params.text_document.uri)
        if document is not None:
            for change in params.content_changes:
                if isinstance(change, types.TextDocumentContentChangePartial):
                    rng = change.range
                    document.apply_change(change.text, (rng.start.line, rng.start.character),
                                          (rng.end.line, rng.end.character), server.encoding)
                else:
                    document.apply_change(change.text, None, None, server.encoding)
            document.version = params.text_document.version
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    def _handle_cancel_notification(self, msg_id):
        super()._handle_cancel_notification(msg_id)
        runs = getattr(self._server, "runs", None)
        if runs is not None:
            runs.cancel_request(msg_id)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        self._server.documents.close(params.text_document.uri)
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


class GradlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("gradlint", __version__, protocol_cls=GradlintProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=notebooks.SYNC_OPTIONS)
        self.documents = DocumentStore()
        self.settings = Settings()  # from initializationOptions (and global configuration)
        self.folder_settings: dict[str, Settings] = {}  # workspace folder uri -> settings
        self.trusted = False  # see trust.py: only the client's boolean `true` grants it
        self.client_decides_trust = False  # the client has workspace trust of its own (VS Code)
        self.trusted_folders = TrustedFolders(trust_store.default_location(os.environ, Path.home()))
        self._trust_in_settings_logged = False
        self.pull_mode = False  # the client pulls diagnostics (textDocument/diagnostic)
        self.encoding = UTF16
        self.linter = Linter()
        self.configs = ProjectConfigs(self._config_problem)
        self.baselines = Baselines()
        self.debouncer = Debouncer()
        self.snapshots: dict[str, LintSnapshot] = {}
        self._lint_tasks: set[asyncio.Task] = set()
        self.runs = None  # the gradcheck feature (gradlint.server.gradcheck), attached below
        self.notebooks: notebooks.Notebooks | None = None  # notebookDocument/* (attached below)
        self.workspace_diagnostics: Any = None  # workspace/diagnostic (attached below)
        self._configured: asyncio.Event | None = None  # set once client settings are known
        self.lifecycle = Lifecycle(self)

    # -- helpers used by the features ------------------------------------------------
    def capability(self, *path: str) -> Any:
        value: Any = self.client_capabilities
        for name in path:
            value = getattr(value, name, None) if value is not None else None
        return value

    def folder_of(self, uri: str) -> tuple[str | None, Path]:
        """The workspace folder holding ``uri`` (the longest match) and its path."""
        best: str | None = None
        folders = list(self.workspace.folders.values()) if self._has_workspace() else []
        for folder in folders:
            prefix = folder.uri.rstrip("/") + "/"
            if uri.startswith(prefix) and (best is None or len(folder.uri) > len(best)):
                best = folder.uri
        if best is None and self._has_workspace() and self.workspace.root_uri:
            root = self.workspace.root_uri
            if uri.startswith(root.rstrip("/") + "/"):
                best = root
        if best is not None:
            return best, Path(to_fs_path(best) or ".")
        path = self.path_of(uri)
        return None, (path.parent if path is not None else Path.cwd())

    def _has_workspace(self) -> bool:
        try:
            _ = self.workspace  # raises until `initialize`
        except RuntimeError:
            return False
        return True

    @staticmethod
    def path_of(uri: str) -> Path | None:
        if not uri.startswith("file:"):
            return None
        path = to_fs_path(uri)
        return Path(path) if path else None

    def run_refused(self, uri: str) -> str | None:
        """Why code from the document at ``uri`` may not run (trust), or None."""
        if self.client_decides_trust:
            return None if self.trusted else trust.UNTRUSTED
        _, root = self.folder_of(uri)
        if self.trusted_folders.trusting(root) is not None:
            return None
        return trust.refusal(str(root.resolve()), self.trusted_folders.problem)

    def settings_for(self, uri: str) -> Settings:
        folder, _ = self.folder_of(uri)
        return self.folder_settings.get(folder or "", self.settings)

    def _config_problem(self, message: str) -> None:
        log.error("configuration: %s", message)
        self.window_show_message(types.ShowMessageParams(types.MessageType.Error,
                                                         f"gradlint: {message}"))

    # -- linting -----------------------------------------------------------------------
    def schedule(self, uri: str, immediate: bool = False) -> None:
        if self.pull_mode:
            return  # the client asks when it wants diagnostics
        delay = 0.0 if immediate else self.settings_for(uri).debounce_ms / 1000.0
        self.debouncer.schedule(uri, delay, lambda: self._start_lint(uri))

    def _start_lint(self, uri: str) -> None:
        task = asyncio.ensure_future(self.lint_and_publish(uri))
        self._lint_tasks.add(task)
        task.add_done_callback(self._lint_tasks.discard)

    async def configured(self) -> None:
        """Wait (briefly) until the client's settings have been fetched after `initialized`."""
        if self._configured is None:
            self._configured = asyncio.Event()
        try:
            await asyncio.wait_for(self._configured.wait(), timeout=5)
        except asyncio.TimeoutError:
            self._configured.set()  # a client that never answers must not block linting

    def mark_configured(self) -> None:
        if self._configured is None:
            self._configured = asyncio.Event()
        self._configured.set()

    async def lint_document(self, document: Document, push: bool = False) -> LintSnapshot | None:
        """``push``: for publishing; a newer version's lint supersedes it (None), and a big
        file publishes its first findings early."""
        if self.notebooks is not None and self.notebooks.is_cell(document.uri):
            cell = await self.notebooks.lint_cell(document)  # the notebook is one module
            if cell is not None:
                return cell
        await self.configured()
        previous = self.snapshots.get(document.uri)
        if previous is not None and previous.version == document.version and \
                document.version is not None:
            return previous
        settings = self.settings_for(document.uri)
        if not settings.enable:
            return LintSnapshot(document.uri, document.version, ())
        _, root = self.folder_of(document.uri)
        path = self.path_of(document.uri)
        options = self.configs.options(path, root, settings)
        if path is not None and options.select and root and self._excluded(path, root):
            return LintSnapshot(document.uri, document.version, ())
        version, text = document.version, document.text
        try:
            findings = await self.linter.lint(
                text, str(path or document.uri), options, supersede=document.uri if push else None,
                on_partial=(lambda early: self._publish_early(document.uri, version, early)) if push else None)
        except Exception:  # a bug in gradlint must not take the editor down
            log.exception("linting %s failed", document.uri)
            findings = []
        if findings is None:
            return None  # superseded by a newer version's lint
        findings = self.baselines.apply(findings, text, path, self.configs.config_for(path, root),
                                        options.select, settings.baselined_findings)
        snapshot = LintSnapshot(document.uri, version, tuple(findings))
        current = self.documents.get(document.uri)
        if current is not None and current.version == version:
            self.snapshots[document.uri] = snapshot
        return snapshot

    def _excluded(self, path: Path, root: Path) -> bool:
        return self.configs.config_for(path, root).is_excluded(path)

    async def lint_and_publish(self, uri: str) -> None:
        document = self.documents.get(uri)
        if document is None:
            return
        snapshot = await self.lint_document(document, push=True)
        current = self.documents.get(uri)
        if snapshot is None or current is None or current.version != snapshot.version:
            return  # outdated: a newer version is on its way
        self.publish(current, snapshot)

    def _publish_early(self, uri: str, version: int | None, findings: list) -> None:
        """The first findings of a big file still being linted (only until its first full
        lint: later, early results would hide diagnostics the editor already shows)."""
        current = self.documents.get(uri)
        if findings and uri not in self.snapshots and current is not None and current.version == version:
            self.publish(current, LintSnapshot(uri, version, tuple(findings)))

    def publish(self, document: Document, snapshot: LintSnapshot) -> None:
        diagnostics = self.diagnostics_of(document, snapshot)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=document.uri, diagnostics=diagnostics, version=document.version))

    def diagnostics_of(self, document: Document, snapshot: LintSnapshot) -> list[types.Diagnostic]:
        docs_url = self.settings_for(document.uri).docs_url
        result = [convert.diagnostic(document, f, self.encoding, docs_url) for f in snapshot.findings]
        if self.runs is not None:
            result.extend(self.runs.diagnostics(document))
        return result

    def relint_all(self) -> None:
        self.snapshots.clear()
        if self.notebooks is not None:
            self.notebooks.relint_all()
        if self.workspace_diagnostics is not None:
            self.workspace_diagnostics.invalidate()
        for document in self.documents:
            if self.notebooks is None or not self.notebooks.is_cell(document.uri):
                self.schedule(document.uri, immediate=True)
        if self.pull_mode and self.capability("workspace", "diagnostics", "refresh_support"):
            self.workspace_diagnostic_refresh(None)

    async def refresh_configuration(self) -> None:
        """Ask the client for the `gradlint` section of each workspace folder."""
        if not self.capability("workspace", "configuration"):
            return
        folders = list(self.workspace.folders.values())
        items = [types.ConfigurationItem(section="gradlint")]
        items += [types.ConfigurationItem(scope_uri=f.uri, section="gradlint") for f in folders]
        try:
            answers = await self.workspace_configuration_async(types.ConfigurationParams(items=items))
        except Exception:
            log.exception("workspace/configuration failed")
            return
        if answers:
            self.settings = self._parsed(answers[0], self.settings)
            self.folder_settings = {
                folder.uri: self._parsed(answer, self.settings)
                for folder, answer in zip(folders, answers[1:])}

    def _parsed(self, raw: Any, base: Settings) -> Settings:
        raw = _plain(raw)
        if not self._trust_in_settings_logged and isinstance(raw, dict) and trust.KEY in raw:
            self._trust_in_settings_logged = True  # once: clients send it with every answer
            trust.ignored_in_settings(raw, "workspace/configuration")
        settings, problems = parse_settings(raw, base)
        for problem in problems:
            log.warning("settings: %s", problem)
        return settings


server = GradlintServer()
notebooks.attach(server)
workspace_diagnostics.attach(server)
config_command.attach(server)


# -- lifecycle -----------------------------------------------------------------------------
@server.feature(types.INITIALIZE)
def initialize(ls: GradlintServer, params: types.InitializeParams) -> None:
    _attach_client_logging(ls)  # (LSP allows window/logMessage before the initialize reply)
    options = _plain(params.initialization_options)
    if not isinstance(options, dict):
        if options is not None:
            log.warning("initializationOptions: expected an object, got %s", type(options).__name__)
        options = {}
    ls.settings, problems = parse_settings(options.get("settings", options))
    for problem in problems:
        log.warning("initializationOptions: %s", problem)
    ls.trusted = trust.from_initialization(options)
    ls.client_decides_trust = trust.client_decides(options)
    ls.pull_mode = ls.capability("text_document", "diagnostic") is not None
    encoding = ls.workspace.position_encoding or UTF16
    ls.encoding = {types.PositionEncodingKind.Utf8: UTF8, types.PositionEncodingKind.Utf32: UTF32}.get(
        encoding, UTF8 if encoding == "utf-8" else UTF32 if encoding == "utf-32" else UTF16)
    log.info("gradlint %s: %s positions, %s diagnostics, workspace %s", __version__, ls.encoding,
             "pull" if ls.pull_mode else "push",
             ("trusted" if ls.trusted else "not trusted") if ls.client_decides_trust
             else f"trusted by `gradlint trust` ({ls.trusted_folders.path})")


@server.feature(types.INITIALIZED)
async def initialized(ls: GradlintServer, params: types.InitializedParams) -> None:
    await ls.refresh_configuration()
    ls.mark_configured()
    if ls.capability("workspace", "did_change_watched_files", "dynamic_registration"):
        watchers = [types.FileSystemWatcher(glob_pattern=pattern)
                    for pattern in ("**/pyproject.toml", "**/conftest.py", "**/*.py", "**/*.pyi",
                                    "**/*.json")]  # (baseline files: any name `baseline` may give)
        try:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[
                types.Registration(id="gradlint-watch-config",
                                   method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                   register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                       watchers=watchers))]))
        except Exception:
            log.exception("could not register file watchers")
    ls.relint_all()


@server.feature(types.SHUTDOWN)
async def shutdown(ls: GradlintServer, params: Any) -> None:
    ls.debouncer.cancel_all()
    if ls.workspace_diagnostics is not None:
        ls.workspace_diagnostics.close()
    if ls.runs is not None:
        await ls.runs.close()
    ls.linter.shutdown()


# -- document sync: diagnostics are pushed, debounced per document ------------------------
@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: GradlintServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, immediate=True)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: GradlintServer, params: types.DidChangeTextDocumentParams) -> None:
    if ls.runs is not None:
        ls.runs.document_changed(params.text_document.uri)
    ls.schedule(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: GradlintServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if uri.endswith(("/pyproject.toml", "/conftest.py")):
        ls.configs.invalidate()
        ls.relint_all()
        return
    ls.schedule(uri, immediate=True)
    if ls.workspace_diagnostics is not None:
        ls.workspace_diagnostics.wake()  # the file on disk changed
    if ls.runs is not None:
        ls.runs.document_saved(uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: GradlintServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.debouncer.cancel(uri)
    ls.snapshots.pop(uri, None)
    if ls.runs is not None:
        ls.runs.document_closed(uri)
    if not ls.pull_mode:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    if ls.workspace_diagnostics is not None:
        ls.workspace_diagnostics.document_closed(uri)  # back to the file on disk


# -- pull diagnostics (when the client supports them) ---------------------------------------
@server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC,
                types.DiagnosticOptions(identifier="gradlint", inter_file_dependencies=False,
                                        workspace_diagnostics=False))
async def pull_diagnostics(ls: GradlintServer, params: types.DocumentDiagnosticParams):
    document = ls.documents.get(params.text_document.uri)
    if document is None or (ls.notebooks is not None and ls.notebooks.is_cell(document.uri)):
        # (notebook cells: always published, see gradlint.server.notebooks)
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    snapshot = await ls.lint_document(document)
    runs = ls.runs.generation(document.uri) if ls.runs is not None else 0
    result_id = f"{document.version}:{snapshot.serial}:{runs}"
    if params.previous_result_id == result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    return types.RelatedFullDocumentDiagnosticReport(
        items=ls.diagnostics_of(document, snapshot), result_id=result_id)


# -- code actions: quick fixes, suppressions, fix-all ---------------------------------------
@server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix,
                                                           FIX_ALL_KIND,
                                                           notebooks.NOTEBOOK_FIX_ALL_KIND],
                                        resolve_provider=False))
async def code_actions(ls: GradlintServer, params: types.CodeActionParams):
    if ls.notebooks is not None and ls.notebooks.is_cell(params.text_document.uri):
        return await ls.notebooks.code_actions(params)
    document = ls.documents.get(params.text_document.uri)
    if document is None:
        return None
    only = params.context.only
    actions: list[types.CodeAction] = []
    if not only or any(k in (types.CodeActionKind.QuickFix, "quickfix") for k in only):
        snapshot = await ls.lint_document(document)
        for diagnostic in params.context.diagnostics:
            if diagnostic.source != convert.SOURCE:
                continue
            actions.extend(_quick_fixes(ls, document, snapshot, diagnostic))
    if not only or any(FIX_ALL_KIND.startswith(k) or k == FIX_ALL_KIND for k in only):
        action = await _fix_all(ls, document)
        if action is not None:
            actions.append(action)
    if not only and ls.runs is not None:
        actions.extend(await ls.runs.code_actions(document, params.range))
    return actions


def _quick_fixes(ls: GradlintServer, document: Document, snapshot: LintSnapshot,
                 diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    code = str(diagnostic.code)
    actions = []
    fix = _fix_of(ls, document, snapshot, diagnostic)
    if fix is not None:
        edits = [convert.text_edit(document, e, ls.encoding) for e in fix.edits]
        actions.append(types.CodeAction(
            title=convert.fix_title(code, fix.title, fix.applicability.value),
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            is_preferred=fix.applicability is Applicability.SAFE,
            edit=convert.document_changes(document, edits)))
    line = diagnostic.range.start.line
    text = document.line(line)
    if not text.rstrip().endswith("\\"):
        new_line = add_noqa(text, code)
        if new_line != text:
            end = types.Position(line, units(text, ls.encoding))
            edit = types.TextEdit(types.Range(types.Position(line, 0), end), new_line)
            actions.append(types.CodeAction(
                title=f"gradlint ({code}): Suppress {code} on this line",
                kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                edit=convert.document_changes(document, [edit])))
    return actions


def _fix_of(ls: GradlintServer, document: Document, snapshot: LintSnapshot,
            diagnostic: types.Diagnostic) -> Fix | None:
    """The fix behind a diagnostic: from its data when the data is for this version of
    the document (no re-lint), else from the current lint, matched by code and range."""
    data = _plain(diagnostic.data) or {}
    if data.get("version") == document.version and document.version is not None:
        fix = data.get("fix")
        if fix is None:
            return None
        return Fix(fix["title"], Applicability(fix["applicability"]),
                   tuple(convert.edits_from_data(data)))
    for finding in snapshot.findings:
        rng = convert.lsp_range(document, finding.range.start.line, finding.range.start.column,
                                finding.range.end.line, finding.range.end.column, ls.encoding)
        if finding.code == str(diagnostic.code) and rng == diagnostic.range:
            return finding.fix
    return None


async def _fix_all(ls: GradlintServer, document: Document) -> types.CodeAction | None:
    snapshot = await ls.lint_document(document)
    if not any(f.fix and f.fix.applicability is Applicability.SAFE for f in snapshot.findings):
        return None
    settings = ls.settings_for(document.uri)
    _, root = ls.folder_of(document.uri)
    path = ls.path_of(document.uri)
    options = ls.configs.options(path, root, settings)
    fixed = await ls.linter.fix_all(document.text, str(path or document.uri), options)
    if fixed == document.text:
        return None
    edits = convert.whole_document_edits(document, fixed, ls.encoding)
    return types.CodeAction(title="gradlint: Fix all auto-fixable problems", kind=FIX_ALL_KIND,
                            edit=convert.document_changes(document, edits))


# -- hover: rule documentation -------------------------------------------------------------
@server.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(ls: GradlintServer, params: types.HoverParams) -> types.Hover | None:
    document = ls.documents.get(params.text_document.uri)
    if document is None:
        return None
    position = params.position
    text = document.line(position.line)
    column = _code_point_column(text, position.character, ls)
    for match in _NOQA_CODE.finditer(_comment_part(text)[1]):
        start = _comment_part(text)[0] + match.start()
        if start <= column <= start + len(match.group()):
            markdown = convert.rule_markdown(match.group())
            if markdown:
                return types.Hover(contents=types.MarkupContent(types.MarkupKind.Markdown, markdown))
    snapshot = await ls.lint_document(document)
    line = position.line + 1
    for finding in snapshot.findings:
        rng = finding.range
        if (rng.start.line, rng.start.column) <= (line, column) <= (rng.end.line, rng.end.column):
            markdown = convert.rule_markdown(finding.code, finding.message)
            if markdown:
                hover_range = convert.lsp_range(document, rng.start.line, rng.start.column,
                                                rng.end.line, rng.end.column, ls.encoding)
                return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, markdown), hover_range)
    if ls.runs is not None:
        return ls.runs.hover(document, position.line)
    return None


def _code_point_column(text: str, character: int, ls: GradlintServer) -> int:
    return column_from_units(text, character, ls.encoding)


def _comment_part(line: str) -> tuple[int, str]:
    from ..analysis.source import scan

    comment = scan(line + "\n").comments.get(1)
    if comment is None:
        return 0, ""
    return line.rindex(comment), comment


# -- configuration ----------------------------------------------------------------------------
@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: GradlintServer,
                                   params: types.DidChangeConfigurationParams) -> None:
    raw = _plain(params.settings)
    if isinstance(raw, dict) and raw:
        ls.settings, problems = parse_settings(raw, ls.settings)
        for problem in problems:
            log.warning("settings: %s", problem)
        trust.ignored_in_settings(raw, "workspace/didChangeConfiguration")
    await ls.refresh_configuration()
    ls.relint_all()


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: GradlintServer, params: types.DidChangeWatchedFilesParams) -> None:
    if any(change.uri.endswith(("pyproject.toml", "conftest.py")) for change in params.changes) or \
            ls.baselines.changed(ls.path_of(change.uri) for change in params.changes):
        ls.configs.invalidate()
        ls.baselines.invalidate()
        ls.relint_all()
    elif ls.workspace_diagnostics is not None:
        ls.workspace_diagnostics.files_changed(params.changes)


@server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
async def did_change_folders(ls: GradlintServer,
                             params: types.DidChangeWorkspaceFoldersParams) -> None:
    ls.configs.invalidate()
    await ls.refresh_configuration()
    ls.relint_all()


@server.feature("gradlint/setWorkspaceTrust")
def set_workspace_trust(ls: GradlintServer, params: Any) -> None:
    ls.trusted = trust.from_notification(_plain(params))
    ls.client_decides_trust = True
    log.info("workspace %s", "trusted" if ls.trusted else "not trusted")
    if ls.runs is not None:
        ls.runs.trust_changed()


# -- logging to the client (window/logMessage) and stderr, never stdout ----------------------
class _ClientLogHandler(logging.Handler):
    _LEVELS = {logging.ERROR: types.MessageType.Error, logging.WARNING: types.MessageType.Warning,
               logging.INFO: types.MessageType.Info}

    def __init__(self, ls: GradlintServer):
        super().__init__(logging.INFO)
        self.ls = ls

    def emit(self, record: logging.LogRecord) -> None:
        try:
            kind = self._LEVELS.get(record.levelno, types.MessageType.Log)
            self.ls.window_log_message(types.LogMessageParams(kind, self.format(record)))
        except Exception:  # never let logging break the server
            pass


def _attach_client_logging(ls: GradlintServer) -> None:
    logger = logging.getLogger("gradlint")
    if not any(isinstance(h, _ClientLogHandler) for h in logger.handlers):
        logger.addHandler(_ClientLogHandler(ls))


def _plain(value: Any) -> Any:
    """Client payloads as plain dicts/lists (pygls gives objects for untyped params)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "_asdict"):  # pygls gives untyped params as namedtuples: before tuples
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "__dict__"):
        return {k: _plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    try:
        import attrs

        if attrs.has(type(value)):
            return _plain(server.protocol._converter.unstructure(value))
    except Exception:
        pass
    return value


def start(tcp: str | None = None) -> None:
    """Run the server over stdio (or TCP for debugging)."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.WARNING)  # info goes to the client's log only, not twice
    logging.getLogger("gradlint").setLevel(logging.INFO)
    try:
        from .gradcheck import attach

        attach(server)
    except ImportError:  # the gradcheck feature is optional for the static server
        log.debug("gradcheck feature unavailable", exc_info=True)
    if tcp:
        host, _, port = tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.lifecycle.serve_stdio()  # never returns
