"""Where a finding about the value of one gradcheck input is shown at the call."""

from __future__ import annotations

import libcst as cst

from ...analysis.gradcheck_calls import GradcheckCall, InputElement

# expressions that only refer to a tensor made elsewhere: they show nothing of its value
_REFERENCES = (cst.Name, cst.Attribute, cst.Subscript)


def input_node(call: GradcheckCall, element: InputElement) -> cst.BaseExpression:
    """The node a finding about ``element``'s value (its dtype, contents, strides) underlines.

    An input made in the call (``torch.randn(3)``, ``x.float()``) is itself what is wrong,
    so the finding covers that expression. An input the call only refers to (``(x,)``,
    ``(self.x, y)``, ``inputs``) was made elsewhere: its name, often one character, shows
    nothing of the mistake, so the finding covers the inputs argument that passes it to
    gradcheck (as type checkers underline a mistyped argument), and its message names the
    input. A bare tensor argument (``gradcheck(f, x)``) is that argument itself.
    """
    assert call.inputs is not None
    if element.inline and not isinstance(element.expr, _REFERENCES):
        return element.expr
    return call.inputs.value
