"""A sparse matrix passed in pieces: values, row indices, column indices and a shape.

Scientific packages hand a sparse matrix to a Function as separate arguments, COO style:
``forward(ctx, val, row, col, shape, b)`` (torch-sla's solves and determinants), and
``forward(ctx, a_val, a_row, a_col, a_shape, b_val, b_row, b_col, b_shape)`` (a sparse product).
The pieces must agree: ``row`` and ``col`` are int64 index tensors as long as ``val``, inside
``shape``. Made one by one they never do (float "row" tensors, a ``shape`` copied from ``val``).

``group`` finds such sets by their names (a common prefix: ``a_val``/``a_row``/``a_col``/``a_shape``, or ``val_a``/``row_a``/...;
a values parameter by its name, else the tensor just before the rows) and marks them; ``Pattern``
draws one matrix per set: square, ``n x n``, its diagonal and about two entries more per row, in
row-major order without duplicates (what ``coalesce`` gives), symmetric, with values that make it
strictly diagonally dominant: symmetric positive definite, which every solver a Function may pick
takes (conjugate gradients and MINRES need it: on another matrix they do not converge, measured on
torch-sla). Values named for a batch (``val_batch``) are [batch, nnz]: matrices of one pattern. Only the
values are differentiated; the indices and the shape are constants. What such
inputs cannot show: a backward that uses the matrix where its transpose belongs (a symmetric matrix
is its transpose); inputs from the project's own tests and examples come first where there are some.
"""

import torch

from ..tensors import away_from_zero
from .kinds import INDEX, SEQUENCE, SIZE, TENSOR

ROLE_VALUES, ROLE_ROWS, ROLE_COLS, ROLE_SHAPE = "values", "rows", "cols", "shape"
_SUFFIXES = {
    ROLE_VALUES: ("val", "vals", "value", "values", "data", "nzval", "nnz_values"),
    ROLE_ROWS: ("row", "rows", "row_indices", "row_idx", "rowidx", "row_index", "rowind", "row_ind"),
    ROLE_COLS: ("col", "cols", "col_indices", "col_idx", "colidx", "col_index", "colind", "col_ind"),
    ROLE_SHAPE: ("shape", "size", "sparse_shape", "mat_shape"),
}
MIN_N, MAX_N, DEFAULT_N = 3, 6, 4


def _split(name):
    """(key, role) when ``name`` is a role's word with a prefix or a suffix that names its matrix:
    ``a_row`` → ("a_", "rows"), ``row_a`` → ("_a", "rows"), ``row`` and ``row_indices`` → ("", "rows")."""
    low = name.lower()
    words = sorted(((w, role) for role, ws in _SUFFIXES.items() for w in ws), key=lambda wr: -len(wr[0]))
    for word, role in words:
        if low == word:
            return "", role
    for word, role in words:
        if low.endswith("_" + word):
            return low[: -len(word)], role
    for word, role in words:
        if low.startswith(word + "_") and "_" not in low[len(word) + 1:]:
            return low[len(word):], role
    return None, None


def group(params):
    """Mark the parameters that make up sparse matrices in pieces (``param.coo = (prefix, role)``;
    the rows and columns become index tensors, the shape a size); returns the prefixes found."""
    by_prefix = {}
    for i, p in enumerate(params):
        prefix, role = _split(p.name)
        if role is not None:
            by_prefix.setdefault(prefix, {}).setdefault(role, (i, p))
    found = []
    for prefix, roles in by_prefix.items():
        if ROLE_ROWS not in roles or ROLE_COLS not in roles:
            continue
        shape = roles.get(ROLE_SHAPE) or by_prefix.get("", {}).get(ROLE_SHAPE)
        values = roles.get(ROLE_VALUES)
        if values is None:  # the tensor just before the rows: ``forward(ctx, A, Ai, row, col, shape)``
            i = roles[ROLE_ROWS][0]
            values = (i - 1, params[i - 1]) if i and params[i - 1].kind == TENSOR else None
        if shape is None or values is None:
            continue
        pieces = [values[1], roles[ROLE_ROWS][1], roles[ROLE_COLS][1], shape[1]]
        if values[1].kind != TENSOR or any(p.kind not in (TENSOR, INDEX) for p in pieces[1:3]) \
                or shape[1].kind not in (SIZE, TENSOR, SEQUENCE) or any(p.coo for p in pieces):
            continue  # annotated or used as something else: not a matrix in pieces
        for p, role in zip(pieces, (ROLE_VALUES, ROLE_ROWS, ROLE_COLS, ROLE_SHAPE)):
            p.coo = (prefix, role)
            if role in (ROLE_ROWS, ROLE_COLS):
                p.kind, p.requires_grad = INDEX, False
                p.why = "the %s of a sparse matrix given in pieces (with %s)" % (role, pieces[0].name)
            elif role == ROLE_SHAPE:
                p.kind, p.requires_grad, p.candidates = SIZE, False, []
                p.why = "the shape of the sparse matrix %s, %s, %s" % tuple(q.name for q in pieces[:3])
        found.append(prefix)
    return found


def batched(values_param):
    """Are the values a batch of matrices of one pattern (``val_batch``: [batch, nnz])?"""
    return "batch" in values_param.name.lower()


def sizes_for(shapes_of_others, batch):
    """(batch size or None, the matrices' order) from the first other tensor (a right-hand side:
    [n], or [batch, n] for a batch), else (2, 4) / (None, 4)."""
    for shape in shapes_of_others:
        if len(shape) >= 2 and batch:
            return max(1, min(4, shape[0])), max(MIN_N, min(MAX_N, shape[-1]))
        if len(shape) and not batch:
            return None, max(MIN_N, min(MAX_N, shape[0]))
    return (2 if batch else None), DEFAULT_N


class Pattern(object):
    """One square sparse matrix: its rows, columns (int64, row-major, unique) and values."""

    def __init__(self, n, gen, batch=None):
        self.n = n
        self.batch = batch  # a batch size when the values are [batch, nnz] (``batched``)
        pairs = set((i, i) for i in range(n))
        for i in range(n):
            for k in (1, 2):
                if float(torch.rand((), generator=gen)) < 0.5:
                    pairs.update(((i, (i + k) % n), ((i + k) % n, i)))
        ordered = sorted(pairs)
        self.rows = torch.tensor([r for r, _c in ordered], dtype=torch.int64)
        self.cols = torch.tensor([c for _r, c in ordered], dtype=torch.int64)
        self.shape = (n, n)

    @property
    def nnz(self):
        return int(self.rows.numel())

    def values(self, gen, dtype):
        """Symmetric off-diagonal entries away from zero, each diagonal entry larger than its row's
        others together: symmetric positive definite, so that every solver takes it ([batch, nnz]
        for a batch of such matrices)."""
        if self.batch is not None:
            return torch.stack([self._one(gen, dtype) for _ in range(self.batch)])
        return self._one(gen, dtype)

    def _one(self, gen, dtype):
        dense = torch.zeros(self.n, self.n, dtype=torch.float64)
        dense[self.rows, self.cols] = away_from_zero((self.nnz,), gen)
        off = torch.triu(dense, 1)
        dense = off + off.transpose(0, 1)
        dense += torch.diag(dense.abs().sum(dim=1) + 1.0 + torch.rand(self.n, generator=gen, dtype=torch.float64))
        return dense[self.rows, self.cols].to(dtype)
