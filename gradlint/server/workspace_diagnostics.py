"""Diagnostics for the whole workspace, not only open files.

Pull clients ask with `workspace/diagnostic` (VS Code does as soon as the server offers it);
push clients get them published when the `diagnosticMode` setting is "workspace". The
setting's default, "auto", answers pull clients and leaves push clients with open files
only; "openFilesOnly" turns workspace diagnostics off for both.

Cheap on a large repository:
- the walk honours `exclude` and skips VCS, virtualenv and build directories, as the CLI;
- a file whose size and modification time did not change is not read again;
- a file that cannot hold a finding (no `torch` in it, or no text an enabled rule looks
  for, and CPython compiles it) is read but never parsed: the engine's text pre-checks;
- results carry result ids: what the client already has is answered "unchanged", and when
  nothing changed the request is held open until something does (a save, a watched file,
  a setting), instead of being answered again and again (VS Code asks every 2 s).

Files open in the editor are reported from the editor's text, with their version.
Notebooks are not included (their diagnostics belong to cells, which exist only open).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from lsprotocol import types
from pygls.uris import from_fs_path

from ..analysis.source import SourceDecodeError
from ..engine.config import ConfigError, ConfigResolver
from ..engine.files import discover, file_error, read_text
from ..engine.linter import LintCache, LintOptions, lint_source
from ..findings import Finding
from . import convert
from .documents import Document
from .linting import LintSnapshot

if TYPE_CHECKING:  # pragma: no cover
    from .language_server import GradlintServer

log = logging.getLogger("gradlint.server")

LONG_POLL_SECONDS = 60.0  # an unchanged workspace is answered at the latest after this
CHUNK = 32  # files linted per turn on the lint thread (editor lints run in between)
_IDS = itertools.count(1)


@dataclass
class FileState:
    stamp: tuple[int, int]  # (mtime_ns, size) when linted
    options: str  # LintOptions.key() used
    findings: tuple[Finding, ...]
    result_id: str


@dataclass
class ScanStats:
    files: int = 0
    linted: int = 0  # read and linted (new or changed on disk)
    parsed: int = 0  # of those, parsed (the others had nothing to find)
    seconds: float = 0.0


class WorkspaceDiagnostics:
    def __init__(self, ls: "GradlintServer"):
        self.ls = ls
        self.states: dict[str, FileState] = {}  # uri -> what was last computed from disk
        self.cache = LintCache(max_bytes=32 * 2 ** 20)  # separate from the editor's cache
        self.generation = 0
        self.closing = False
        self.published: set[str] = set()  # push mode: uris published for closed files
        self.last_stats = ScanStats()
        self._event: asyncio.Event | None = None
        self._publishing: asyncio.Task | None = None
        self._answered = False  # a first workspace/diagnostic is answered at once

    # -- what changes the answer -----------------------------------------------------------
    @property
    def _changed(self) -> asyncio.Event:
        if self._event is None:
            self._event = asyncio.Event()
        return self._event

    def wake(self) -> None:
        self._changed.set()
        if self.push_enabled():
            self.schedule_publish()

    def invalidate(self) -> None:
        """Settings or configuration changed: every file is linted again."""
        self.generation += 1
        self.states.clear()
        self.wake()

    def close(self) -> None:
        self.closing = True
        self._changed.set()

    def files_changed(self, changes: Iterable[types.FileEvent]) -> None:
        if any(change.uri.endswith((".py", ".pyi")) for change in changes):
            self.wake()

    def document_closed(self, uri: str) -> None:
        self.states.pop(uri, None)
        if self.push_enabled():
            self.schedule_publish()

    # -- settings --------------------------------------------------------------------------
    def _mode(self) -> str:
        return getattr(self.ls.settings, "diagnostic_mode", "auto")

    def pull_enabled(self) -> bool:
        return self._mode() != "openFilesOnly"

    def push_enabled(self) -> bool:
        return not self.ls.pull_mode and self._mode() == "workspace"

    # -- scanning --------------------------------------------------------------------------
    def _roots(self) -> list[Path]:
        roots: list[Path] = []
        try:
            folders = list(self.ls.workspace.folders.values())
            root_uri = self.ls.workspace.root_uri
        except RuntimeError:
            return roots
        for folder in folders:
            path = self.ls.path_of(folder.uri)
            if path is not None:
                roots.append(path)
        if not roots and root_uri:
            path = self.ls.path_of(root_uri)
            if path is not None:
                roots.append(path)
        return [root for root in roots if root.is_dir()]

    def _walk(self) -> list[tuple[str, Path, LintOptions]]:
        """(uri, path, options) of every Python file in the workspace (lint thread)."""
        found: dict[str, tuple[str, Path, LintOptions]] = {}
        for root in self._roots():
            settings = self.ls.settings_for(root.as_uri())
            if not settings.enable:
                continue
            try:
                paths = list(discover([root], ConfigResolver(root)))
            except (ConfigError, OSError) as error:
                log.warning("workspace diagnostics: %s", error)
                continue
            for path in paths:
                uri = from_fs_path(str(path)) or path.as_uri()
                if uri not in found:
                    found[uri] = (uri, path, self.ls.configs.options(path, root, settings))
        return list(found.values())

    def _lint_files(self, files: list[tuple[str, Path, LintOptions]], stats: ScanStats
                    ) -> list[tuple[str, FileState]]:
        """Lint the files whose stamp or options changed (lint thread)."""
        results = []
        for uri, path, options in files:
            try:
                info = os.stat(path)
            except OSError:
                continue
            stamp = (info.st_mtime_ns, info.st_size)
            key = options.key()
            previous = self.states.get(uri)
            if previous is not None and previous.stamp == stamp and previous.options == key:
                continue
            stats.linted += 1
            before = self.cache.blocks.hits + self.cache.blocks.misses
            try:
                text = read_text(path)
                findings = tuple(lint_source(text, str(path), options, self.cache).findings)
                findings = tuple(self._baselined(findings, text, path))
            except SourceDecodeError as error:
                findings = (file_error(str(path), error.message, error.line, error.column),)
            except OSError:
                continue
            except Exception:  # a bug in gradlint: log it, go on with the other files
                log.exception("workspace diagnostics: linting %s failed", path)
                findings = ()
            if self.cache.blocks.hits + self.cache.blocks.misses != before:
                stats.parsed += 1
            result_id = previous.result_id if previous is not None and previous.findings == findings \
                else f"w{self.generation}.{next(_IDS)}"
            results.append((uri, FileState(stamp, key, findings, result_id)))
        return results

    def _baselined(self, findings: tuple[Finding, ...], text: str, path: Path) -> list[Finding]:
        """The findings shown for a closed file, held against its project's baseline."""
        uri = from_fs_path(str(path)) or path.as_uri()
        _, root = self.ls.folder_of(uri)
        settings = self.ls.settings_for(uri)
        options = self.ls.configs.options(path, root, settings)
        return self.ls.baselines.apply(findings, text, path, self.ls.configs.config_for(path, root),
                                       options.select, settings.baselined_findings)

    async def scan(self) -> dict[str, FileState]:
        """Bring ``states`` up to date with the disk; returns the current states."""
        for _ in range(5):
            generation = self.generation
            states = await self._scan_once()
            if generation == self.generation:
                break  # (settings changed during the scan: scan again with the new ones)
        return states

    async def _scan_once(self) -> dict[str, FileState]:
        started = time.perf_counter()
        stats = ScanStats()
        generation = self.generation
        files = await self.ls.linter.call(self._walk)
        stats.files = len(files)
        for start in range(0, len(files), CHUNK):
            chunk = files[start:start + CHUNK]
            for uri, state in await self.ls.linter.call(self._lint_files, chunk, stats):
                if generation == self.generation:
                    self.states[uri] = state
        present = {uri for uri, _, _ in files}
        for uri in list(self.states):
            if uri not in present:
                del self.states[uri]
        stats.seconds = time.perf_counter() - started
        if stats.linted:
            log.info("workspace diagnostics: %d files, %d linted, %d parsed, %.2f s",
                     stats.files, stats.linted, stats.parsed, stats.seconds)
        self.last_stats = stats
        return dict(self.states)

    # -- workspace/diagnostic --------------------------------------------------------------
    def _open_documents(self) -> dict[str, Document]:
        notebooks = self.ls.notebooks
        return {d.uri: d for d in self.ls.documents
                if d.uri.startswith("file:") and (notebooks is None or not notebooks.is_cell(d.uri))}

    async def _report(self, previous: dict[str, str]) -> tuple[list, bool]:
        """The items, and whether any is new to the client."""
        items: list = []
        changed = False
        open_documents = self._open_documents()
        states = await self.scan() if self.pull_enabled() else {}
        for uri, state in states.items():
            if uri in open_documents or (not state.findings and uri not in previous):
                continue  # (a clean file the client knows nothing of: nothing to say)
            if previous.get(uri) == state.result_id:
                items.append(types.WorkspaceUnchangedDocumentDiagnosticReport(
                    uri=uri, result_id=state.result_id, version=None))
                continue
            changed = True
            document = Document(uri, "", None)
            items.append(types.WorkspaceFullDocumentDiagnosticReport(
                uri=uri, version=None, result_id=state.result_id,
                items=self._diagnostics(document, state.findings, uri)))
        for uri, document in open_documents.items():
            if not self.pull_enabled():
                break
            snapshot: LintSnapshot = await self.ls.lint_document(document)
            result_id = f"open:{document.version}:{snapshot.serial}"
            if previous.get(uri) == result_id:
                items.append(types.WorkspaceUnchangedDocumentDiagnosticReport(
                    uri=uri, result_id=result_id, version=document.version))
                continue
            changed = True
            items.append(types.WorkspaceFullDocumentDiagnosticReport(
                uri=uri, version=document.version, result_id=result_id,
                items=self.ls.diagnostics_of(document, snapshot)))
        reported = {item.uri for item in items}
        for uri in previous:  # deleted, excluded or turned off: clear what the client shows
            if uri not in reported and uri.startswith("file:"):
                changed = True
                items.append(types.WorkspaceFullDocumentDiagnosticReport(
                    uri=uri, version=None, result_id=f"gone{next(_IDS)}", items=[]))
        return items, changed

    def _diagnostics(self, document: Document, findings: tuple[Finding, ...], uri: str):
        # diagnostics of a closed file: positions need its text (for the client's encoding)
        if findings:
            path = self.ls.path_of(uri)
            try:
                document = Document(uri, read_text(path), None) if path else document
            except (OSError, SourceDecodeError):
                pass
        docs_url = self.ls.settings_for(uri).docs_url
        return [convert.diagnostic(document, f, self.ls.encoding, docs_url) for f in findings]

    async def workspace_diagnostic(self, params: types.WorkspaceDiagnosticParams
                                   ) -> types.WorkspaceDiagnosticReport:
        await self.ls.configured()
        previous = {item.uri: item.value for item in params.previous_result_ids}
        deadline = asyncio.get_running_loop().time() + LONG_POLL_SECONDS
        first, self._answered = not self._answered, True
        while True:
            self._changed.clear()
            items, changed = await self._report(previous)
            remaining = deadline - asyncio.get_running_loop().time()
            if changed or first or self.closing or remaining <= 0:
                return types.WorkspaceDiagnosticReport(items=items)
            try:  # nothing new: hold the request until something changes
                await asyncio.wait_for(self._changed.wait(), timeout=remaining)
            except asyncio.TimeoutError:
                pass

    # -- push clients ----------------------------------------------------------------------
    def schedule_publish(self) -> None:
        if self._publishing is not None and not self._publishing.done():
            return
        self._publishing = asyncio.ensure_future(self.publish())

    async def publish(self) -> None:
        """Publish the diagnostics of every closed file (push clients, "workspace" mode)."""
        await self.ls.configured()
        if not self.push_enabled():
            return
        states = await self.scan()
        open_documents = self._open_documents()
        for uri, state in states.items():
            if uri in open_documents:
                continue
            if not state.findings and uri not in self.published:
                continue
            diagnostics = self._diagnostics(Document(uri, "", None), state.findings, uri)
            self.ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))
            if state.findings:
                self.published.add(uri)
            else:
                self.published.discard(uri)
        for uri in list(self.published):
            if uri not in states and uri not in open_documents:
                self.ls.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
                self.published.discard(uri)


def attach(ls: "GradlintServer") -> WorkspaceDiagnostics:
    """Register `workspace/diagnostic` on ``ls`` (which then advertises workspaceDiagnostics)."""
    feature = WorkspaceDiagnostics(ls)
    ls.workspace_diagnostics = feature

    @ls.feature(types.WORKSPACE_DIAGNOSTIC)
    async def workspace_diagnostic(params: types.WorkspaceDiagnosticParams):
        return await feature.workspace_diagnostic(params)

    return feature
