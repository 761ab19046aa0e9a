"""The editor's runs take the compile and precision checks from the project's
`[tool.gradlint.run]` and from the settings runCompile/runDtype/runPrecisionFactor (which
win), and the report shows them: through the real server and a real worker (aot_eager only)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_helpers import SERVER, make_client, uri_of

OPS = textwrap.dedent("""\
    import torch


    class Sin(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return torch.sin(x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * torch.cos(x)
    """)


async def _run_sin(root: Path, settings: dict) -> tuple[dict, str]:
    """The reply of the ▶ gradcheck command on Sin and the report's Markdown."""
    client: LanguageClient = await ClientServerConfig(server_command=SERVER, client_factory=make_client).start()
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("neovim"), root_uri=uri_of(root),
            initialization_options={"settings": {"debounce": 0, **settings}, "workspaceTrusted": True}))
        uri = uri_of(root / "ops.py")
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=OPS)))
        line = OPS.splitlines().index("class Sin(torch.autograd.Function):")
        reply = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="gradlint.runGradcheck", arguments=[{"uri": uri, "position": {"line": line, "character": 6}}]))
        report = await client.protocol.send_request_async("gradlint/lastReport", {"uri": uri})
        await client.shutdown_session()
        return reply, report.markdown
    finally:
        await client.stop()


def _names(reply: dict) -> list[str]:
    return [check["name"] for check in reply["result"]["checks"]]


async def test_the_projects_run_table_and_the_editors_settings_reach_the_worker(tmp_path):
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "ops.py").write_text(OPS)
    (root / "pyproject.toml").write_text('[tool.gradlint.run]\ncompile = ["aot_eager"]\n')

    # the project asks for the compile checks, the editor adds the precision verdict
    reply, markdown = await _run_sin(root, {"runDtype": "bfloat16", "runPrecisionFactor": 3,
                                            "runOptions": {"draws": 1}})
    assert reply["result"]["status"] == "pass", reply["result"]["summary"]
    assert {"compile (aot_eager)", "compile func.grad (aot_eager)", "precision (bfloat16)"} <= set(_names(reply))
    [precision] = [c for c in reply["result"]["checks"] if c["name"] == "precision (bfloat16)"]
    assert precision["details"]["factor"] == 3.0
    assert "**torch.compile and torch.func (aot_eager): 4 of 4 comparisons ran, " in markdown
    assert "| compile func.grad (aot_eager) | ✓ max \\|Δ\\| " in markdown
    assert "**precision (bfloat16), k = 3: " in markdown

    # the editor's "off" wins over the project's table; the cached result of the other
    # options is not served for it
    reply, markdown = await _run_sin(root, {"runCompile": False, "runOptions": {"draws": 1}})
    assert reply["result"]["status"] == "pass" and not reply["cached"]
    assert not [name for name in _names(reply) if name.startswith(("compile", "func.", "precision"))]
    assert "torch.compile" not in markdown


def test_the_settings_are_checked_as_the_projects_table_is():
    from gradlint.server.settings import parse_settings

    settings, problems = parse_settings({"runCompile": "aot_eager", "runDtype": "bfloat16", "runPrecisionFactor": 2.5,
                                         "runOptions": {"compile": "inductor", "eps": 1e-3}})
    assert problems == []
    assert settings.run_checks == {"compile": ["aot_eager"], "dtype": "bfloat16", "precision_factor": 2.5}
    assert settings.run_options == {"compile": ["inductor"], "eps": 1e-3}
    assert settings.run_timeout is None  # derived from the run's checks (runner/run_options.py)
    # null leaves an option to the project again; "none" and false switch it off
    cleared, _ = parse_settings({"runCompile": None, "runDtype": "none"}, settings)
    assert cleared.run_checks == {"dtype": None, "precision_factor": 2.5}
    bad, problems = parse_settings({"runCompile": "tvm", "runDtype": "int8", "runPrecisionFactor": 0,
                                    "runOptions": {"dtype": "bf16"}})
    assert bad.run_checks == {} and "dtype" not in bad.run_options
    assert sorted(problem.split(":")[0] for problem in problems) == ["runCompile", "runDtype", "runOptions.dtype",
                                                                     "runPrecisionFactor"]
