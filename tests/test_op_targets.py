"""torch.library custom ops as run targets, found statically: every form the custom-op
model knows, the lines of each piece, what the worker is asked, and what "run
everything" leaves out (with the reason)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from gradlint.engine.linter import LintCache
from gradlint.runner.plans import plan, runnable
from gradlint.runner.targets import find_targets, symbol_target

OPS = textwrap.dedent('''\
    import torch
    from torch.library import Library, custom_op

    lib = Library("mylib", "DEF")
    lib.define("scale(Tensor x, float a) -> Tensor")


    def scale_cpu(x, a):
        return x * a


    lib.impl("scale", scale_cpu, "CompositeExplicitAutograd")
    torch.library.define("mylib::lonely", "(Tensor x) -> Tensor")


    def _twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2


    twice = custom_op("mylib::twice", mutates_args=())(_twice)


    # gradlint: inputs=(torch.randn(3),)
    @custom_op("mylib::mysin", mutates_args=())
    def mysin(x: torch.Tensor) -> torch.Tensor:
        return x.sin()


    @mysin.register_fake
    def _(x):
        return torch.empty_like(x)


    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])


    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


    mysin.register_autograd(backward, setup_context=setup_context)


    @custom_op("mylib::gpu_only", mutates_args=(), device_types="cuda")
    def gpu_only(x: torch.Tensor) -> torch.Tensor:
        return x.clone()


    @torch.library.triton_op("mylib::tri", mutates_args=())
    def tri(x: torch.Tensor) -> torch.Tensor:
        return x.clone()


    def test_local():
        @custom_op("mylib::local", mutates_args=())
        def local(x: torch.Tensor) -> torch.Tensor:
            return x.clone()


    class Ops:
        @staticmethod
        @custom_op("mylib::member", mutates_args=())
        def member(x: torch.Tensor) -> torch.Tensor:
            return x.clone()
''')


def line(fragment: str, text: str = OPS) -> int:
    return next(n for n, source in enumerate(text.splitlines(), 1) if fragment in source)


def ops() -> dict:
    return {t.name: t for t in find_targets(OPS) if t.kind == "custom_op"}


def test_every_form_is_a_target_named_by_its_op_name():
    found = ops()
    assert list(found) == ["mylib::scale", "mylib::lonely", "mylib::twice", "mylib::mysin",
                           "mylib::gpu_only", "mylib::tri", "mylib::local", "mylib::member"]
    # the Python name the worker imports, when the op object has one
    assert {name: t.qualname for name, t in found.items()} == {
        "mylib::scale": None, "mylib::lonely": None, "mylib::twice": "twice", "mylib::mysin": "mysin",
        "mylib::gpu_only": "gpu_only", "mylib::tri": "tri", "mylib::local": None, "mylib::member": "Ops.member"}


def test_lines_of_the_op_and_its_pieces():
    mysin = ops()["mylib::mysin"]
    # the lens sits above the whole definition: on the decorator
    assert (mysin.line, mysin.column) == (line('@custom_op("mylib::mysin"'), 0)
    assert mysin.end_line == line("return x.sin()")
    assert mysin.forward_line == line("def mysin(")
    assert mysin.fake_line == line("def _(x):")
    assert mysin.setup_context_line == line("def setup_context(")
    assert mysin.backward_line == line("def backward(")
    # a declaration above the op is the op's, not a second (callable) target
    assert mysin.declared_inputs == "(torch.randn(3),)"
    assert not [t for t in find_targets(OPS) if t.kind == "callable"]
    assert ops()["mylib::scale"].line == line('lib.define("scale')


def test_what_run_everything_leaves_out_and_why():
    found = ops()
    assert {name: t.skip for name, t in found.items() if t.skip} == {
        "mylib::lonely": "defined with torch.library.define, but no kernel is registered in this file (impl)",
        "mylib::gpu_only": "its kernel is for cuda only (device_types=); gradlint runs on the CPU",
        "mylib::tri": "a triton_op: its kernels need Triton and a GPU",
    }
    assert not found["mylib::local"].importable  # made when a test runs, not on import
    assert [t.name for t in runnable(find_targets(OPS)) if t.kind == "custom_op"] == [
        "mylib::scale", "mylib::twice", "mylib::mysin", "mylib::member"]


def test_named_by_python_name_or_op_name():
    assert symbol_target(OPS, "mysin").name == "mylib::mysin"
    assert symbol_target(OPS, "mylib::mysin").kind == "custom_op"
    assert symbol_target(OPS, "mylib::scale").op == "mylib::scale"
    assert symbol_target(OPS, "mylib::nope") is None


def test_the_worker_request_and_input_sources(tmp_path: Path):
    path = tmp_path / "ops.py"
    path.write_text(OPS)
    # a gradcheck call on the op elsewhere would run gradcheck alone: not an input source
    (tmp_path / "test_ops.py").write_text("import torch\nfrom ops import mysin\n\n\n"
                                          "def test_it():\n    torch.autograd.gradcheck(mysin, (torch.randn(2),))\n")
    mysin = symbol_target(OPS, "mysin")
    run = plan(mysin, path, OPS, tmp_path, cache=LintCache())
    assert run.display == "ops.py::mylib::mysin"
    assert run.request["target"] == {
        "kind": "custom_op", "line": mysin.line, "qualname": "mysin", "op": "mylib::mysin",
        "op_line": line("def mysin("), "backward_line": line("def backward("),
        "setup_context_line": line("def setup_context("), "fake_line": line("def _(x):")}
    assert run.inputs_source == f"declared at line {line('# gradlint: inputs=')}"
    assert run.fallbacks == ()
    scale = plan(symbol_target(OPS, "mylib::scale"), path, OPS, tmp_path)
    assert scale.request["target"] == {"kind": "custom_op", "line": line('lib.define("scale'),
                                       "op": "mylib::scale"}
    assert scale.request["inputs"]["kind"] == "synthesize"


def test_targets_follow_edits_and_keep_their_place():
    cache = LintCache()
    before = [t.name for t in find_targets(OPS, cache)]
    edited = OPS.replace('    return x.sin()\n', '    return x.sin()\n\n\nclass Extra:\n    pass\n')
    after = {t.name: t for t in find_targets(edited, cache)}
    assert list(after) == before
    assert after["mylib::mysin"].backward_line == line("def backward(", edited)
    assert after["mylib::mysin"].backward_line == ops()["mylib::mysin"].backward_line + 4


def test_a_cuda_op_with_a_cpu_kernel_registered_later_runs():
    source = textwrap.dedent('''\
        import torch

        @torch.library.custom_op("mylib::both", mutates_args=(), device_types="cuda")
        def both(x: torch.Tensor) -> torch.Tensor:
            return x.clone()

        @both.register_kernel("cpu")
        def _(x):
            return x.clone()

        @torch.library.custom_op("mylib::cuda_only", mutates_args=(), device_types=("cuda",))
        def cuda_only(x: torch.Tensor) -> torch.Tensor:
            return x.clone()

        torch.library.register_kernel("mylib::cuda_only", "cuda:0", lambda x: x.clone())
    ''')
    skips = {t.name: t.skip for t in find_targets(source)}
    assert skips == {"mylib::both": None,
                     "mylib::cuda_only": "its kernel is for cuda only (device_types=); gradlint runs on the CPU"}
