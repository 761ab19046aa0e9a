"""The command line never imports torch for static work: run it with a `torch` on the path
that refuses to be imported (only `gradlint run`'s worker, another process, may import it;
the opt-in Python API `gradlint.check_gradients` runs in the user's own process)."""

from __future__ import annotations

import textwrap

POISON = textwrap.dedent("""\
    import os
    open(os.environ["GRADLINT_TORCH_MARKER"], "w").write("imported")
    raise ImportError("gradlint's command line must not import torch")
    """)

SOURCE = textwrap.dedent("""\
    import torch
    from torch.autograd import gradcheck


    @torch.library.custom_op("probe::scale", mutates_args=())
    def scale(x: torch.Tensor) -> torch.Tensor:
        return x


    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, grad):
            return 2 * grad, None


    def test_square():
        x = torch.randn(3, requires_grad=True)
        assert gradcheck(Square.apply, (x,))
    """)


def test_static_commands_never_import_torch(cli, tmp_path):
    fake = tmp_path / "poisoned"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text(POISON)
    marker = tmp_path / "marker"
    project = tmp_path / "project"
    project.mkdir()
    (project / "ops.py").write_text(SOURCE)
    env = {"PYTHONPATH": str(fake), "GRADLINT_TORCH_MARKER": str(marker)}
    found = cli("check", "--no-cache", "ops.py", cwd=project, env=env)
    assert found.returncode == 1 and "GL001" in found.stdout and "GL033" in found.stdout, found.stdout + found.stderr
    for args in (("check", "--no-cache", "--fix", "--unsafe-fixes", "ops.py"), ("rules",), ("rule", "GL004"),
                 ("config", "ops.py")):
        result = cli(*args, cwd=project, env=env)
        assert result.returncode in (0, 1), (args, result.stderr)
    assert not marker.exists(), "the command line imported torch"
    # the poison works: a plain import of torch in the same environment does trip it
    probe = cli("run", "ops.py::Square", "--no-cache", cwd=project, env=env, timeout=300)
    assert probe.returncode != 0 and marker.exists()
