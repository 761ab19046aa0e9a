"""The gradlint language server (pygls), read top-down as a list of LSP features.

Each handler is small and delegates to the feature's module (code_actions, hover,
gradcheck, notebooks, workspace_diagnostics, config_command) or to the server object
(language_server.py), which know nothing of each other's handlers. The server process
never imports torch: linting is libcst only, and gradcheck runs in worker processes
started with the user's interpreter.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from lsprotocol import types

from . import config_command, notebooks, trust, workspace_diagnostics
from .client_log import attach_client_logging
from .code_actions import CODE_ACTION_OPTIONS, code_actions
from .hover import hover_at
from .language_server import GradlintServer
from .payloads import plain
from .settings import parse_settings

log = logging.getLogger("gradlint.server")

server = GradlintServer()
notebooks.attach(server)
workspace_diagnostics.attach(server)
config_command.attach(server)


# -- lifecycle -----------------------------------------------------------------------------
@server.feature(types.INITIALIZE)
def initialize(ls: GradlintServer, params: types.InitializeParams) -> None:
    attach_client_logging(ls)  # (LSP allows window/logMessage before the initialize reply)
    ls.initialize_from(params)


@server.feature(types.INITIALIZED)
async def initialized(ls: GradlintServer, params: types.InitializedParams) -> None:
    await ls.refresh_configuration()
    ls.mark_configured()
    await ls.watch_files()
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


# -- code actions: quick fixes, suppressions, fix-all, run gradcheck ------------------------
@server.feature(types.TEXT_DOCUMENT_CODE_ACTION, CODE_ACTION_OPTIONS)
async def code_action(ls: GradlintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    return await code_actions(ls, params)


# -- hover: rule documentation, gradcheck reports ---------------------------------------------
@server.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(ls: GradlintServer, params: types.HoverParams) -> types.Hover | None:
    return await hover_at(ls, params)


# -- configuration ----------------------------------------------------------------------------
@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: GradlintServer,
                                   params: types.DidChangeConfigurationParams) -> None:
    raw = plain(params.settings)
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
    ls.trusted = trust.from_notification(plain(params))
    ls.client_decides_trust = True
    log.info("workspace %s", "trusted" if ls.trusted else "not trusted")
    if ls.runs is not None:
        ls.runs.trust_changed()


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
