"""The language server object: gradlint's pygls ``LanguageServer`` and its protocol.

``GradlintServer`` keeps the documents, settings, trust, the linter and the snapshots of
diagnostics, and offers the helpers the features use (folders, paths, settings, linting,
publishing). The features themselves are registered in server.py.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from .. import __version__
from ..engine import trust_store
from ..engine.trust_store import TrustedFolders
from . import convert, notebooks, trust
from .baselined import Baselines
from .documents import UTF8, UTF16, UTF32, Document, DocumentStore
from .lifecycle import Lifecycle, LifecycleProtocol
from .linting import Debouncer, Linter, LintSnapshot, ProjectConfigs
from .payloads import plain
from .settings import Settings, parse_settings

log = logging.getLogger("gradlint.server")


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
        self.lint_tasks: set[asyncio.Task] = set()  # lints in flight (the lifecycle waits for them)
        self.runs = None  # the gradcheck feature (gradlint.server.gradcheck), attached below
        self.notebooks: notebooks.Notebooks | None = None  # notebookDocument/* (attached below)
        self.workspace_diagnostics: Any = None  # workspace/diagnostic (attached below)
        self._configured: asyncio.Event | None = None  # set once client settings are known
        self.lifecycle = Lifecycle(self)

    # -- set-up ----------------------------------------------------------------------
    def initialize_from(self, params: types.InitializeParams) -> None:
        """Settings, trust, diagnostics mode and position encoding from `initialize`."""
        options = plain(params.initialization_options)
        if not isinstance(options, dict):
            if options is not None:
                log.warning("initializationOptions: expected an object, got %s", type(options).__name__)
            options = {}
        self.settings, problems = parse_settings(options.get("settings", options))
        for problem in problems:
            log.warning("initializationOptions: %s", problem)
        self.trusted = trust.from_initialization(options)
        self.client_decides_trust = trust.client_decides(options)
        self.pull_mode = self.capability("text_document", "diagnostic") is not None
        encoding = self.workspace.position_encoding or UTF16
        self.encoding = {types.PositionEncodingKind.Utf8: UTF8, types.PositionEncodingKind.Utf32: UTF32}.get(
            encoding, UTF8 if encoding == "utf-8" else UTF32 if encoding == "utf-32" else UTF16)
        log.info("gradlint %s: %s positions, %s diagnostics, workspace %s", __version__, self.encoding,
                 "pull" if self.pull_mode else "push",
                 ("trusted" if self.trusted else "not trusted") if self.client_decides_trust
                 else f"trusted by `gradlint trust` ({self.trusted_folders.path})")

    async def watch_files(self) -> None:
        """Ask the client to tell us about configuration and Python files changing on disk."""
        if not self.capability("workspace", "did_change_watched_files", "dynamic_registration"):
            return
        watchers = [types.FileSystemWatcher(glob_pattern=pattern)
                    for pattern in ("**/pyproject.toml", "**/conftest.py", "**/*.py", "**/*.pyi",
                                    "**/*.json")]  # (baseline files: any name `baseline` may give)
        try:
            await self.client_register_capability_async(types.RegistrationParams(registrations=[
                types.Registration(id="gradlint-watch-config",
                                   method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                   register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                       watchers=watchers))]))
        except Exception:
            log.exception("could not register file watchers")

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
        self.lint_tasks.add(task)
        task.add_done_callback(self.lint_tasks.discard)

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
        if path is not None and options.select and root and self.excluded(path, root):
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

    def excluded(self, path: Path, root: Path) -> bool:
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
        raw = plain(raw)
        if not self._trust_in_settings_logged and isinstance(raw, dict) and trust.KEY in raw:
            self._trust_in_settings_logged = True  # once: clients send it with every answer
            trust.ignored_in_settings(raw, "workspace/configuration")
        settings, problems = parse_settings(raw, base)
        for problem in problems:
            log.warning("settings: %s", problem)
        return settings
