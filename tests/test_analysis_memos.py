"""The analysis's memos and shortcuts give the answers of the work they spare."""

from __future__ import annotations

import libcst as cst

from gradlint.analysis import memos
from gradlint.analysis.block import BlockAnalysis
from gradlint.analysis.facts import Evaluator
from gradlint.analysis.method_body import names_in
from gradlint.analysis.scopes import ModuleContext, find_site, function_scope


def _function_table(code: str):
    module = cst.parse_module(code)
    context = ModuleContext(module.body)
    BlockAnalysis(module, code, context, range(len(module.body)), Evaluator(context))
    function = module.body[0]
    site = find_site(context.statements, context.scope, function)
    return function_scope(function, context.scope, site).table


def test_walrus_targets_are_locals_of_a_function_whose_code_has_them():
    try:
        table = _function_table("def f(x):\n    if (y := x):\n        return y\n")
        assert "y" in table
    finally:
        memos.forget()


def test_a_function_without_walrus_gets_the_same_table():
    try:
        table = _function_table("def f(x):\n    y = x\n    return [z for z in y]\n")
        assert sorted(table.bindings) == ["x", "y"]
    finally:
        memos.forget()


def test_remembered_names_are_frozen_and_kept_per_node():
    try:
        first = cst.parse_expression("a + b.c")
        second = cst.parse_expression("d")
        assert names_in(first) == {"a", "b"}
        assert names_in(first) is names_in(first)
        assert names_in(second) == {"d"}
        assert isinstance(names_in(first), frozenset)
    finally:
        memos.forget()


def test_statement_expressions_collected_without_a_visitor_match_the_visitor():
    from pathlib import Path

    import gradlint
    from gradlint.analysis import gradcheck_calls
    from gradlint.analysis.scopes import walk_statements
    from gradlint.analysis.traverse import visit

    sources = sorted(Path(gradlint.__file__).parent.rglob("*.py"))[:40]
    compared = 0
    for path in sources:
        module = cst.parse_module(path.read_text())
        context = ModuleContext(module.body)
        for stmt, _ in walk_statements(context.statements, context.scope):
            for types in ((cst.Call,), (cst.Attribute,), (cst.Call, cst.Lambda, cst.If)):
                fast = gradcheck_calls._collected(stmt, types)
                collector = gradcheck_calls.StatementExpressions(stmt, types)
                if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                    for decorator in stmt.decorators:
                        visit(decorator, collector)
                else:
                    visit(stmt, collector)
                assert fast is not None
                assert [id(n) for n in fast] == [id(n) for n in collector.found]
                compared += len(fast)
    memos.forget()
    assert compared > 1000
