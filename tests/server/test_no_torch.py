"""The server process never imports torch: run it with a `torch` on the path that
refuses to be imported, and use every static feature."""

from __future__ import annotations

import os
import sys
import textwrap

from lsprotocol import types
from pytest_lsp import ClientServerConfig, client_capabilities

from lsp_helpers import close_client, SERVER, make_client, uri_of, wait_until

POISON = textwrap.dedent("""\
    import os
    open(os.environ["GRADLINT_TORCH_MARKER"], "w").write("imported")
    raise ImportError("the gradlint server must not import torch")
    """)


async def test_static_features_never_import_torch(tmp_path):
    fake = tmp_path / "poisoned"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text(POISON)
    marker = tmp_path / "marker"
    root = tmp_path / "workspace"
    root.mkdir()
    env = {**os.environ, "PYTHONPATH": str(fake), "GRADLINT_TORCH_MARKER": str(marker)}
    config = ClientServerConfig(server_command=SERVER, client_factory=make_client, server_env=env)
    client = await config.start()
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual_studio_code"), root_uri=uri_of(root),
            initialization_options={"settings": {"debounce": 0}}))
        path = root / "test_ops.py"
        text = ("import torch\nfrom torch.autograd import gradcheck\n\ndef test():\n"
                "    x = torch.randn(3, requires_grad=True)\n    gradcheck(torch.sin, (x,))\n")
        path.write_text(text)
        uri = uri_of(path)
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        await wait_until(lambda: client.diagnostics.get(uri), what="diagnostics")
        [diagnostic] = client.diagnostics[uri]
        await client.text_document_code_action_async(types.CodeActionParams(
            types.TextDocumentIdentifier(uri), diagnostic.range,
            types.CodeActionContext(diagnostics=[diagnostic])))
        await client.text_document_hover_async(types.HoverParams(
            types.TextDocumentIdentifier(uri), diagnostic.range.start))
        await client.shutdown_session()
    finally:
        await close_client(client)
    assert not marker.exists(), "the server imported torch"
    # and the poison works: a plain interpreter with that path does import it
    import subprocess
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True)
    assert probe.returncode != 0 and marker.exists()


async def test_a_run_in_an_interpreter_without_torch_says_what_to_do(tmp_path):
    import venv

    env_dir = tmp_path / "no-torch"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(str(env_dir))
    python = str(env_dir / "bin" / "python")
    root = tmp_path / "workspace"
    root.mkdir()
    text = ("import torch\n\n\nclass Double(torch.autograd.Function):\n    @staticmethod\n"
            "    def forward(ctx, x):\n        return x * 2\n\n    @staticmethod\n"
            "    def backward(ctx, grad):\n        return grad * 2\n")
    (root / "ops.py").write_text(text)
    uri = uri_of(root / "ops.py")
    client = await ClientServerConfig(server_command=SERVER, client_factory=make_client).start()
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual_studio_code"), root_uri=uri_of(root),
            initialization_options={"settings": {"debounce": 0, "interpreter": python},
                                    "workspaceTrusted": True}))
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        reply = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="gradlint.runGradcheck", arguments=[{"uri": uri, "position": {"line": 3, "character": 6}}]))
        result = reply["result"]
        assert (result["status"], result["verdict"]) == ("error", "worker_unavailable")
        assert result["summary"] == f"✗ torch is not installed in {python}"
        assert "set the `interpreter` setting (VS Code: `gradlint.interpreter`)" in result["message"]
        assert f"`{python} -m pip install torch==2.13.0`" in result["message"]
        assert '`pip install "torch-gradlint[torch] @ git+https://github.com/gradlint/gradlint@v' in result["message"]
        await client.shutdown_session()
    finally:
        await close_client(client)
