""""Run gradcheck" in the editor: code lenses, code actions, commands, progress, results.

Runs execute in worker processes (gradlint.runner) started with the user's interpreter;
this module never imports torch. User code runs only when the user asks (a lens, an
action, a command, or the opt-in runOnSave), and never in an untrusted workspace.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ..analysis.source import SourceDecodeError
from ..engine.files import read_bytes, resolves_inside
from ..runner import WorkerClient, WorkerStartError, make_result
from ..runner.cache import ResultCache
from ..runner.plans import RunPlan, plan
from ..runner.prove import Proof, Prover
from ..runner.result import RunResult
from ..runner.targets import Target, find_targets
from ..runner.report import headline, mark, render_markdown, seconds, worker_advice
from . import convert
from .documents import Document, units
from .payloads import plain

if TYPE_CHECKING:
    from .language_server import GradlintServer

log = logging.getLogger("gradlint.server")

RUN_COMMAND = "gradlint.runGradcheck"
RUN_FILE_COMMAND = "gradlint.runGradcheckFile"
LAST_REPORT = "gradlint/lastReport"
RESULTS_CACHE = Path(".gradlint_cache", "runs")  # in the workspace folder, shared with `gradlint run`


class RunRefused(JsonRpcException):
    CODE = -32803  # RequestFailed
    MESSAGE = "gradcheck run refused"


@dataclass(frozen=True)
class Outcome:
    proof: Proof
    uri: str
    version: int | None

    @property
    def plan(self) -> RunPlan:
        return self.proof.plan

    @property
    def result(self) -> RunResult:
        return self.proof.result

    @property
    def lens_title(self) -> str:
        took = seconds(self.result)
        if self.result.passed:
            label = _checks_label(self.plan.target, self.result)
            cached = " (cached)" if self.proof.cached else ""
            return f"✓ {label} {took:.1f} s{cached}" if took is not None else f"✓ {label}{cached}"
        return f"{mark(self.result)} {_short(headline(self.result))}"

    def report(self, relative) -> str:
        return render_markdown(self.result, self.plan.display, relative, self.proof.inputs_source)


def _checks_label(target: Target, result: RunResult | None = None) -> str:
    """What a lens runs (or ran and passed): gradcheck, and opcheck for a custom op."""
    if target.kind != "custom_op":
        return "gradcheck"
    if result is None:
        return "gradcheck + opcheck"
    passed = {check.get("name") for check in result.checks if check.get("status") == "pass"}
    return " + ".join(name for name in ("gradcheck", "opcheck") if name in passed) or "gradcheck"


def _key(document: Document, target: Target) -> tuple:
    return (document.uri, target.key, hash(document.text))


def _short(text: str, limit: int = 90) -> str:
    text = text.split(" (worst")[0]
    return text if len(text) <= limit else text[: limit - 1] + "…"


class GradcheckRuns:
    def __init__(self, ls: "GradlintServer"):
        self.ls = ls
        self._client: WorkerClient | None = None
        self._client_key: tuple | None = None
        self._client_lock = asyncio.Lock()
        self.outcomes: dict[tuple, Outcome] = {}  # (uri, target, source) -> last outcome
        self.shown: dict[str, list[Outcome]] = {}  # uri -> outcomes shown as diagnostics
        self.last: Outcome | None = None
        self._by_plan: dict[str, Outcome] = {}
        self._generations: dict[str, int] = {}  # uri -> changes to its run diagnostics
        self._requests: dict[Any, asyncio.Task] = {}  # request id -> the task serving it
        self._tokens = itertools.count(1)
        self.running: dict[str, asyncio.Task] = {}

    # -- what can run ----------------------------------------------------------------
    async def targets(self, document: Document) -> list[Target]:
        text = document.text
        return await self.ls.linter.call(find_targets, text, self.ls.linter.cache)

    def _plan(self, document: Document, target: Target, root: Path) -> RunPlan:
        settings = self.ls.settings_for(document.uri)
        path = self.ls.path_of(document.uri)
        assert path is not None
        limits = {"memory_bytes": int(settings.run_memory_limit_mb) * 2 ** 20}
        name = target.qualname if target.kind not in ("call_site", "custom_op") else target.name
        return plan(target, path, document.text, root, cache=self.ls.linter.cache, limits=limits,
                    options=dict(settings.run_options) or None, display=name)

    async def code_lenses(self, document: Document) -> list[types.CodeLens]:
        if not self.ls.settings_for(document.uri).code_lens or self._outside(document.uri):
            return []
        lenses = []
        for target in await self.targets(document):
            if not target.importable or target.skip:
                continue
            outcome = self.outcomes.get(_key(document, target))
            title = outcome.lens_title if outcome is not None else f"▶ {_checks_label(target)}"
            position = types.Position(target.line - 1, units(document.line(target.line - 1)[: target.column],
                                                             self.ls.encoding))
            lenses.append(types.CodeLens(
                range=types.Range(position, position),
                command=types.Command(title=title, command=RUN_COMMAND,
                                      arguments=[{"uri": document.uri,
                                                  "position": {"line": position.line,
                                                               "character": position.character}}])))
        return lenses

    async def code_actions(self, document: Document, rng: types.Range) -> list[types.CodeAction]:
        if self._outside(document.uri):
            return []
        target = await self._target_at(document, rng.start.line)
        if target is None:
            return []
        name = target.name if target.kind == "custom_op" else target.qualname or target.name
        return [types.CodeAction(
            title=f"Run gradcheck on `{name}`", kind=types.CodeActionKind.Empty,
            command=types.Command(title=f"Run gradcheck on `{name}`", command=RUN_COMMAND,
                                  arguments=[{"uri": document.uri,
                                              "position": {"line": rng.start.line,
                                                           "character": rng.start.character}}]))]

    async def _target_at(self, document: Document, line: int) -> Target | None:
        number = line + 1
        targets = [t for t in await self.targets(document) if t.importable and not t.skip]
        calls = [t for t in targets if t.kind == "call_site" and t.line <= number <= t.end_line]
        if calls:
            return calls[0]
        enclosing = [t for t in targets if t.kind != "call_site" and t.line - 1 <= number <= t.end_line]
        return min(enclosing, key=lambda t: t.end_line - t.line) if enclosing else None

    # -- running ---------------------------------------------------------------------
    async def serve(self, request_id: Any, work):
        """Run ``work`` for a request, so that `$/cancelRequest` for it can stop it (pygls
        cancels only its own bookkeeping for commands, not the coroutine doing the work)."""
        task = asyncio.current_task()
        if request_id is not None and task is not None:
            self._requests[request_id] = task
        try:
            return await work
        finally:
            self._requests.pop(request_id, None)

    def cancel_request(self, request_id: Any) -> None:
        task = self._requests.pop(request_id, None)
        if task is not None:
            log.info("request %s cancelled by the client", request_id)
            task.cancel()

    async def run_at(self, uri: str, line: int) -> dict:
        document = self.ls.documents.get(uri)
        if document is None:
            raise RunRefused(message=f"{uri} is not open")
        self._require_trust(uri)
        self._require_inside(uri)
        target = await self._target_at(document, line)
        if target is None:
            raise RunRefused(message="no autograd Function, custom op or gradcheck call here")
        [outcome] = await self._run(document, [target])
        return outcome.proof.to_json()

    async def run_file(self, uri: str) -> list[dict]:
        document = self.ls.documents.get(uri)
        if document is None:
            raise RunRefused(message=f"{uri} is not open")
        self._require_trust(uri)
        self._require_inside(uri)
        targets = [t for t in await self.targets(document) if t.importable and not t.skip]
        return [outcome.proof.to_json() for outcome in await self._run(document, targets)]

    def _require_trust(self, uri: str) -> None:
        refused = self.ls.run_refused(uri)
        if refused is not None:
            self.ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning,
                                                                f"gradlint: {refused}"))
            raise RunRefused(message=refused)

    def _outside(self, uri: str) -> str | None:
        """Why the file at ``uri`` may not run, or None. Runs stay inside the workspace
        folders (trust is granted to them), symlinks followed: a file opened from elsewhere,
        or a link out of the workspace, is not run from the editor."""
        path = self.ls.path_of(uri)
        if path is None:
            return "only files on disk can be run"
        folders = [folder for folder in map(self.ls.path_of, self._folder_uris()) if folder is not None]
        if any(resolves_inside(path, folder) for folder in folders):
            return None
        try:
            real = path.resolve()
        except (OSError, RuntimeError):
            real = path
        via = f" (a link to {real})" if real != path else ""
        return (f"{path.name} is outside the workspace folders{via}: gradlint runs code only from a "
                f"trusted workspace folder (to run it anyway, name it: `gradlint run {path}`)")

    def _folder_uris(self) -> list[str]:
        try:
            workspace = self.ls.workspace
        except RuntimeError:  # not initialized
            return []
        uris = [folder.uri for folder in workspace.folders.values()]
        return uris + ([workspace.root_uri] if workspace.root_uri else [])

    def _require_inside(self, uri: str) -> None:
        reason = self._outside(uri)
        if reason is not None:
            self.ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"gradlint: {reason}"))
            raise RunRefused(message=reason)

    async def _worker(self, document: Document, root: Path) -> WorkerClient:
        settings = self.ls.settings_for(document.uri)
        python = settings.interpreter or sys.executable
        key = (python, str(root))
        async with self._client_lock:
            if self._client is not None and self._client_key != key:
                await self._client.close()
                self._client = None
            if self._client is None:
                self._client = WorkerClient(python, str(root), max_parallel=2)
                self._client_key = key
            return self._client

    async def _run(self, document: Document, targets: list[Target]) -> list[Outcome]:
        """Run targets of one document, with one prover: Functions first, so that a
        gradcheck call a Function's run already ran is not run again."""
        _, root = self.ls.folder_of(document.uri)
        path = self.ls.path_of(document.uri)
        if path is None:
            raise RunRefused(message="only files on disk can be run")
        try:
            saved = read_bytes(path).decode("utf-8", "replace")
        except (OSError, SourceDecodeError):
            saved = None
        if saved is not None and saved != document.text:
            self.ls.window_show_message(types.ShowMessageParams(
                types.MessageType.Info, "gradlint: the check runs the saved file; save to check your edits"))
        # plans are made from the editor's text: only a saved one may use cached results
        cache = ResultCache(root / RESULTS_CACHE if saved == document.text else None)
        provers: dict[str, Prover] = {}  # by environment (the worker's interpreter and torch)
        outcomes: dict[int, Outcome] = {}
        functions = [i for i, target in enumerate(targets) if target.kind != "call_site"]
        calls = [i for i, target in enumerate(targets) if target.kind == "call_site"]
        for group in (functions, calls):
            done = await asyncio.gather(*(self._run_one(document, targets[i], root, cache, provers) for i in group))
            outcomes.update(zip(group, done))
        return [outcomes[i] for i in range(len(targets))]

    async def _run_one(self, document: Document, target: Target, root: Path, cache: ResultCache,
                       provers: dict[str, Prover]) -> Outcome:
        run_plan = await self.ls.linter.call(self._plan, document, target, root)
        settings = self.ls.settings_for(document.uri)
        token = await self._begin_progress(f"gradcheck {run_plan.display}")
        client = await self._worker(document, root)

        async def prove() -> Proof:
            prover = await self._prover(client, cache, provers)  # starts the worker: cancellable too
            return await prover.prove(run_plan, lambda request: client.run(
                request, timeout=settings.run_timeout,
                on_progress=lambda message, pct: self._report_progress(token, message, pct)))

        task = asyncio.ensure_future(prove())
        self.running[run_plan.key] = task
        user_cancel = asyncio.Event()
        if token is not None:
            cancel = self.ls.work_done_progress.tokens.get(token)
            if cancel is not None:
                def cancelled(_future, task=task, name=run_plan.display):
                    log.info("gradcheck %s cancelled by the client", name)
                    user_cancel.set()
                    task.cancel()
                cancel.add_done_callback(cancelled)
        try:
            proof = await task
        except asyncio.CancelledError:
            if not user_cancel.is_set():  # the request itself was cancelled, or shutdown
                task.cancel()
                self._end_progress(token, "cancelled")
                raise
            proof = Proof(run_plan, make_result(run_plan.request, "cancelled", "■ gradcheck cancelled",
                                                message="cancelled from the editor; the run's process was killed"),
                          run_plan.inputs_source)
        finally:
            self.running.pop(run_plan.key, None)
        if proof.result.verdict == "worker_unavailable":
            python = settings.interpreter or sys.executable
            advice = worker_advice(proof.result.summary, python,
                                   "set the `interpreter` setting (VS Code: `gradlint.interpreter`)")
            message = "\n".join(filter(None, [*advice, proof.result.message]))
            proof = replace(proof, result=replace(proof.result, message=message))
        outcome = Outcome(proof, document.uri, document.version)
        self._by_plan[run_plan.key] = outcome
        self._end_progress(token, headline(proof.result))
        if not proof.result.cancelled:
            self.outcomes[_key(document, target)] = outcome
        self.last = outcome
        self._show(document, outcome)
        return outcome

    @staticmethod
    async def _prover(client: WorkerClient, cache: ResultCache, provers: dict[str, Prover]) -> Prover:
        """The prover for the worker's environment; one without a cache when the worker
        cannot start (its runs then say why)."""
        try:
            info = await client.start()
        except WorkerStartError:
            return Prover()
        environment = f"{info.executable}:{info.torch}"
        return provers.setdefault(environment, Prover(cache, environment))

    # -- progress ----------------------------------------------------------------------
    async def _begin_progress(self, title: str) -> str | None:
        if not self.ls.capability("window", "work_done_progress"):
            return None
        token = f"gradlint-run-{next(self._tokens)}"
        try:
            await self.ls.work_done_progress.create_async(token)
        except Exception:
            log.exception("window/workDoneProgress/create failed")
            return None
        self.ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=title, cancellable=True, message="starting", percentage=0))
        return token

    def _report_progress(self, token: str | None, message: str, percentage: int | None) -> None:
        if token is not None:
            self.ls.work_done_progress.report(token, types.WorkDoneProgressReport(
                message=message, percentage=percentage, cancellable=True))

    def _end_progress(self, token: str | None, message: str) -> None:
        if token is not None:
            self.ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
            self.ls.work_done_progress.tokens.pop(token, None)

    # -- results in the editor -----------------------------------------------------------
    def generation(self, uri: str) -> int:
        """Changes whenever the run diagnostics of ``uri`` change (for pull result ids)."""
        return self._generations.get(uri, 0)

    def _show(self, document: Document, outcome: Outcome) -> None:
        shown = [o for o in self.shown.get(document.uri, []) if o.plan.key != outcome.plan.key]
        shown.append(outcome)
        self.shown[document.uri] = shown
        self._generations[document.uri] = self.generation(document.uri) + 1
        if not self.ls.pull_mode:
            snapshot = self.ls.snapshots.get(document.uri)
            if snapshot is not None and snapshot.version == document.version:
                self.ls.publish(document, snapshot)
            else:
                self.ls.schedule(document.uri, immediate=True)
        elif self.ls.capability("workspace", "diagnostics", "refresh_support"):
            self.ls.workspace_diagnostic_refresh(None)
        if self.ls.capability("workspace", "code_lens", "refresh_support"):
            self.ls.workspace_code_lens_refresh(None)

    def diagnostics(self, document: Document) -> list[types.Diagnostic]:
        diagnostics = []
        path = self.ls.path_of(document.uri)
        for outcome in self.shown.get(document.uri, []):
            result = outcome.result
            if not (result.failed or result.warned or result.undecided):
                continue
            line = outcome.plan.target.line
            location = result.location or {}
            if path is not None and location.get("file") and Path(location["file"]) == path \
                    and isinstance(location.get("line"), int):
                line = location["line"]
            text = document.line(line - 1)
            start = len(text) - len(text.lstrip())
            rng = convert.lsp_range(document, line, start, line, len(text), self.ls.encoding)
            message = headline(result)
            if result.message and result.status != "no_inputs":
                message += f"\n{result.message}"
            diagnostics.append(types.Diagnostic(
                range=rng, message=f"gradcheck {outcome.plan.display}: {message}",
                severity=types.DiagnosticSeverity.Error if result.failed else types.DiagnosticSeverity.Warning,
                code="gradcheck", source=convert.SOURCE, data={"run": outcome.plan.key}))
        return diagnostics

    def hover(self, document: Document, line: int) -> types.Hover | None:
        for diagnostic in self.diagnostics(document):
            if diagnostic.range.start.line == line:
                outcome = self._by_plan.get(diagnostic.data["run"])
                if outcome is not None:
                    return types.Hover(types.MarkupContent(types.MarkupKind.Markdown,
                                                           outcome.report(self._relative)))
        return None

    def last_report(self, uri: str | None) -> dict | None:
        outcome = self.last
        if uri:
            candidates = self.shown.get(uri) or [o for o in self.outcomes.values() if o.uri == uri]
            if candidates:
                outcome = candidates[-1]
        if outcome is None:
            return None
        return {"title": f"gradcheck {outcome.plan.display}", "markdown": outcome.report(self._relative)}

    def _relative(self, path: str) -> str:
        try:
            _, root = self.ls.folder_of(Path(path).as_uri())
            return Path(path).resolve().relative_to(root.resolve()).as_posix()
        except (ValueError, OSError):
            return path

    # -- document lifecycle ----------------------------------------------------------------
    def document_changed(self, uri: str) -> None:
        if self.shown.pop(uri, None):  # their lines no longer match
            self._generations[uri] = self.generation(uri) + 1

    def document_closed(self, uri: str) -> None:
        self.shown.pop(uri, None)

    def document_saved(self, uri: str) -> None:
        document = self.ls.documents.get(uri)
        if document is None or not self.ls.settings_for(uri).run_on_save or self.ls.run_refused(uri) \
                or self._outside(uri):
            return
        task = asyncio.ensure_future(self.run_file(uri))
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    def trust_changed(self) -> None:
        if self.ls.capability("workspace", "code_lens", "refresh_support"):
            self.ls.workspace_code_lens_refresh(None)

    async def close(self, grace: float = 3.0) -> None:
        for task in list(self.running.values()):
            task.cancel()
        if self._client is not None:
            client, self._client = self._client, None
            await client.close(grace)


def attach(ls: "GradlintServer") -> None:
    """Register the gradcheck features on the server."""
    runs = GradcheckRuns(ls)
    ls.runs = runs

    @ls.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    async def code_lens(ls, params: types.CodeLensParams):
        document = ls.documents.get(params.text_document.uri)
        return [] if document is None else await runs.code_lenses(document)

    @ls.command(RUN_COMMAND)
    async def run_gradcheck(ls, *args):
        uri, line = _uri_and_line(args)
        return await runs.serve(ls.protocol.msg_id, runs.run_at(uri, line))

    @ls.command(RUN_FILE_COMMAND)
    async def run_gradcheck_file(ls, *args):
        uri, _ = _uri_and_line(args, need_position=False)
        return await runs.serve(ls.protocol.msg_id, runs.run_file(uri))

    @ls.feature(LAST_REPORT)
    def last_report(ls, params):
        raw = plain(params) or {}
        return runs.last_report(raw.get("uri") if isinstance(raw, dict) else None)


def _uri_and_line(args: tuple, need_position: bool = True) -> tuple[str, int]:
    """Arguments as `{uri, position}` or `uri, position` (both shapes are accepted)."""
    values = [plain(a) for a in args]
    if len(values) == 1 and isinstance(values[0], list):
        values = values[0]
    uri, position = None, None
    if values and isinstance(values[0], dict):
        uri = values[0].get("uri")
        position = values[0].get("position")
    elif values:
        uri = values[0]
        position = values[1] if len(values) > 1 else None
    if not isinstance(uri, str):
        raise RunRefused(message="expected arguments {uri, position}")
    line = 0
    if isinstance(position, dict):
        line = int(position.get("line", 0))
    elif need_position:
        raise RunRefused(message="expected a position {line, character}")
    return uri, line
