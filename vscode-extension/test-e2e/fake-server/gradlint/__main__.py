"""python -m gradlint lsp  (fake: see __init__.py)."""

import asyncio
import json
import os
import re
import sys
import uuid

from lsprotocol import types
from pygls.lsp.server import LanguageServer

LOG = os.environ.get("GRADLINT_FAKE_LOG")
RUN_SECONDS = float(os.environ.get("GRADLINT_FAKE_RUN_SECONDS", "2"))

server = LanguageServer("gradlint-fake", "0.0.0")
state = {"trusted": False, "report": None, "results": {}}


def record(kind, value):
    if LOG:
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"kind": kind, "value": value}, default=str) + "\n")


def plain(value):
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if hasattr(value, "_asdict"):  # before tuple: pygls gives namedtuples for custom methods' params
        return plain(value._asdict())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "__dict__"):
        return {k: plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    try:
        return plain(server.protocol._converter.unstructure(value))
    except Exception:
        return repr(value)


@server.feature(types.INITIALIZE)
def initialize(ls, params):
    options = plain(params.initialization_options) or {}
    record("initializationOptions", options)
    state["trusted"] = bool(options.get("workspaceTrusted"))


@server.feature(types.INITIALIZED)
async def initialized(ls, params):
    await pull(ls)


async def pull(ls):
    folders = list(ls.workspace.folders.values())
    items = [types.ConfigurationItem(section="gradlint")]
    items += [types.ConfigurationItem(scope_uri=f.uri, section="gradlint") for f in folders]
    answers = await ls.workspace_configuration_async(types.ConfigurationParams(items=items))
    record("configuration", plain(answers))


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls, params):
    record("didChangeConfiguration", plain(params.settings))
    await pull(ls)


@server.feature("gradlint/setWorkspaceTrust")
def set_trust(ls, params):
    value = plain(params)
    record("setWorkspaceTrust", value)
    state["trusted"] = bool(value.get("trusted"))


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls, params):
    publish(ls, params.text_document.uri)


def publish(ls, uri):
    diagnostics = [types.Diagnostic(
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=3)),
        message="fake gradlint server: file opened", severity=types.DiagnosticSeverity.Information,
        source="gradlint", code="GL999")]
    result = state["results"].get(uri)
    if result:
        diagnostics.append(types.Diagnostic(
            range=types.Range(start=types.Position(line=result["line"], character=8),
                              end=types.Position(line=result["line"], character=31)),
            message=result["summary"], severity=types.DiagnosticSeverity.Error, source="gradcheck",
            code="gradcheck"))
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
def code_lens(ls, params):
    doc = ls.workspace.get_text_document(params.text_document.uri)
    lenses = []
    for i, line in enumerate(doc.lines):
        if re.match(r"class \w+\(Function\)", line):
            title = "▶ gradcheck"
            if (doc.uri, i) in state["results"].get("lines", set()):
                title = "✗ Jacobian mismatch: input x, output 0"
            lenses.append(types.CodeLens(
                range=types.Range(start=types.Position(line=i, character=0), end=types.Position(line=i, character=5)),
                command=types.Command(title=title, command="gradlint.runGradcheck",
                                      arguments=[{"uri": doc.uri, "position": {"line": i, "character": 6}}])))
    return lenses


def arguments(args):
    """The command's `arguments` list, however pygls passes it (one list, or unpacked)."""
    args = [plain(a) for a in args]
    if len(args) == 1 and isinstance(args[0], list):
        return args[0]
    return args


@server.command("gradlint.runGradcheck")
async def run_gradcheck(ls, *args):
    args = arguments(args)
    record("runGradcheck", args)
    if not state["trusted"]:
        raise RuntimeError("the workspace is not trusted")
    arg = args[0]
    token = str(uuid.uuid4())
    await ls.work_done_progress.create_async(token)
    ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title="gradcheck ScaleWrong", cancellable=True))
    await asyncio.sleep(RUN_SECONDS)
    ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="✗"))
    line = arg["position"]["line"]
    summary = "✗ Jacobian mismatch: input x, output 0 (worst |Δ| 1.0 at x[0])"
    state["results"][arg["uri"]] = {"line": line, "summary": summary}
    state["results"].setdefault("lines", set()).add((arg["uri"], line))
    state["report"] = {"title": "gradcheck ScaleWrong",
                       "markdown": "# gradcheck ScaleWrong\n\n✗ Jacobian mismatch\n\n| input | output | numerical | analytical |\n|---|---|---|---|\n| x[0] | 0[0] | 3.0 | 2.0 |\n"}
    publish(ls, arg["uri"])
    return {"schema": "gradlint.run-result", "version": 1, "status": "fail", "verdict": "wrong_gradient",
            "summary": summary, "target": {"kind": "function_class", "qualname": "ScaleWrong"}}


@server.command("gradlint.runGradcheckFile")
async def run_file(ls, *args):
    record("runGradcheckFile", arguments(args))
    if not state["trusted"]:
        raise RuntimeError("the workspace is not trusted")
    return [{"status": "pass", "summary": "✓ gradcheck 0.1 s", "target": {"qualname": "ScaleRight"}}]


@server.feature("gradlint/lastReport")
def last_report(ls, params):
    record("lastReport", plain(params))
    return state["report"]


if __name__ == "__main__":
    if sys.argv[1:2] != ["lsp"]:
        sys.exit("usage: python -m gradlint lsp")
    record("argv", sys.argv)
    server.start_io()
