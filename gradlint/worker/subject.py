"""The function under check, with its inputs, ready to be called again and again.

Every check works on fresh copies of the same base inputs. Low-precision inputs are
promoted to float64/complex128 copies (gradcheck needs double precision); the
``as_written`` check re-runs a call site with the original dtypes.
"""

import copy

import torch

from .links import linked
from .outcome import Outcome
from .through_forward import wrapping
from .tensors import fresh_containers, is_tensor, preview, promotion_map


class Subject(object):
    def __init__(self, fn, fclass, base, infos, grad_outputs, opts, reporter):
        self.fn = fn
        self.fclass = fclass
        self.base = base
        self.infos = infos
        self.in_names = [inf["name"] for inf in infos]
        self.grad_pos = [i for i, v in enumerate(base) if is_tensor(v) and v.requires_grad]
        self.go_base = grad_outputs
        self.opts = opts
        self.reporter = reporter
        self.op = None  # the custom op, when the target is one
        self.op_locations = reporter.op_locations
        self.reseeded = False
        self.may_reseed = False  # a random forward is checked with its random numbers fixed
        self.on_failure = None  # called with a provisional record as soon as gradcheck fails
        # filled in by the forward check
        self.out_count = None
        self.diff_out = []
        self.out_names = []

    def fresh(self):
        """Fresh copies of the inputs: tensors cloned, and containers (an options dict forward
        pops from, a list it appends to) copied, so no call sees what another one changed."""
        return tuple(
            v.detach().clone().requires_grad_(v.requires_grad)
            if is_tensor(v) and (v.is_floating_point() or v.is_complex()) else
            (v.clone() if is_tensor(v) else (copy.copy(v) if isinstance(v, (dict, list, set)) else v))
            for v in self.base
        )

    def call(self, inputs):
        torch.manual_seed(self.opts["seed"])
        return self.fn(*inputs)

    def reseed(self):
        """Make a random forward (a sampler) deterministic: the RNG is reseeded before every call,
        so every evaluation gradcheck makes sees the same random numbers."""
        if self.reseeded:
            return
        self.fn = reseeding(self.fn, self.opts["seed"])
        self.reseeded = True


def reseeding(fn, seed):
    def reseeded(*args):
        torch.manual_seed(seed)
        return fn(*args)

    return wrapping(reseeded, fn, lambda inner: reseeding(inner, seed))


class SparseInput(object):
    """A sparse COO/CSR/BSR input checked through its stored values: the checked function takes a
    dense tensor of values and rebuilds the sparse tensor (same indices) around it, so gradcheck
    compares the gradient with respect to the non-zero entries (the "masked" semantics of a sparse
    gradient) instead of failing inside torch on a sparse layout."""

    def __init__(self, t):
        self.layout = t.layout
        self.shape = tuple(t.shape)
        if t.layout == torch.sparse_coo:
            t = t.coalesce()
            self.index = (t.indices(),)
        elif t.layout in (torch.sparse_csr, torch.sparse_bsr):
            self.index = (t.crow_indices(), t.col_indices())
        else:  # csc, bsc
            self.index = (t.ccol_indices(), t.row_indices())
        self.values = t.values()

    def build(self, values):
        if self.layout == torch.sparse_coo:
            return torch.sparse_coo_tensor(self.index[0], values, self.shape, is_coalesced=True)
        return torch.sparse_compressed_tensor(self.index[0], self.index[1], values, self.shape, layout=self.layout)


def _rebuilding(fn, sparse):
    def with_sparse_inputs(*args):
        args = list(args)
        for i, spec in sparse.items():
            if i < len(args) and is_tensor(args[i]) and args[i].layout == torch.strided:
                args[i] = spec.build(args[i])
        return fn(*args)

    return wrapping(with_sparse_inputs, fn, lambda inner: _rebuilding(inner, sparse))


def copying_containers(fn):
    """``fn`` given its own copy of every dict/list/set argument on each call: gradcheck calls it
    many times with the same arguments, and a forward that pops from an options dict would
    otherwise see it emptied from the second call on."""
    def with_fresh_containers(*args):
        return fn(*fresh_containers(args))

    return wrapping(with_fresh_containers, fn, copying_containers)


def densifying_outputs(fn):
    """Sparse outputs made dense (torch's gradcheck refuses them: "call to_dense(masked_grad=...)"):
    the Jacobian is compared on the dense values, zeros included."""
    def densified(*args):
        out = fn(*args)
        if is_tensor(out):
            return out.to_dense() if out.layout != torch.strided else out
        if isinstance(out, tuple) and any(is_tensor(o) and o.layout != torch.strided for o in out):
            return tuple(o.to_dense() if is_tensor(o) and o.layout != torch.strided else o for o in out)
        return out

    return wrapping(densified, fn, densifying_outputs)


def prepare(fn, fclass, names, raw, source, opts, reporter, synth=None, grad_outputs=None, notes=None):
    """A Subject for ``fn`` at ``raw`` inputs (promoted, detached copies)."""
    fn = linked(fn, raw)  # an argument that holds another (a module and its parameters) keeps holding it
    promote = bool(opts["promote"])
    promo = promotion_map()
    base = []
    infos = []
    sparse = {}
    raw = list(raw)
    for i, v in enumerate(raw):
        if is_tensor(v) and v.layout != torch.strided and (v.is_floating_point() or v.is_complex()):
            try:
                sparse[i] = SparseInput(v.detach())
            except Exception:  # noqa: BLE001 - a layout without values(): checked as it is
                continue
            values = sparse[i].values.detach().clone().requires_grad_(v.requires_grad)
            raw[i] = values
            sparse[i].given = v
    for i, v in enumerate(raw):
        name = names[i] if i < len(names) else "input%d" % i
        if is_tensor(v):
            dt = v.dtype
            new = v.detach()
            promoted_from = None
            if promote and dt in promo:
                new = new.to(promo[dt])
                promoted_from = str(dt).replace("torch.", "")
            differentiable = new.is_floating_point() or new.is_complex()
            new = new.clone().requires_grad_(v.requires_grad) if differentiable else new.clone()
            base.append(new)
            info = {
                "index": i, "name": name, "kind": "tensor", "shape": list(v.shape),
                "dtype": str(new.dtype).replace("torch.", ""), "requires_grad": bool(v.requires_grad),
                "promoted_from": promoted_from, "preview": preview(v), "source": source,
                "device": str(v.device),
            }
            if v.layout != torch.strided:
                info["layout"] = str(v.layout).replace("torch.", "")
            if differentiable and not v.requires_grad:
                info["not_checked"] = getattr(v, "gradlint_constant", None) or (
                    "it does not require grad in this call" if source == "call_site" else
                    "it does not require grad where the inputs come from")
            if i in sparse:  # checked through its stored values
                info.update(shape=list(sparse[i].shape), layout=str(sparse[i].layout).replace("torch.", ""),
                            checked="its %d stored values" % v.numel(), preview=preview(sparse[i].given))
            if synth is not None:
                info["seed"] = synth["seed"]
            infos.append(info)
        else:
            base.append(v)
            r = repr(v)
            infos.append({"index": i, "name": name, "kind": "value", "repr": r[:80] + ("…" if len(r) > 80 else ""),
                          "type": type(v).__name__, "source": source})
    if source == "expression" and not any(is_tensor(v) and v.requires_grad for v in base):
        # declared inputs are values to check at; a declaration that leaves requires_grad
        # out means "differentiate with respect to the floating-point tensors"
        for i, v in enumerate(base):
            if is_tensor(v) and (v.is_floating_point() or v.is_complex()):
                v.requires_grad_(True)
                infos[i]["requires_grad"] = True
        if notes is not None:
            notes.append("the declared inputs did not require grad: every floating-point tensor was made "
                         "to require grad for the check")
    go_base = None
    if grad_outputs is not None:
        go_base = []
        for g in (grad_outputs if isinstance(grad_outputs, (tuple, list)) else (grad_outputs,)):
            if is_tensor(g):
                g2 = g.detach()
                if promote and g2.dtype in promo:
                    g2 = g2.to(promo[g2.dtype])
                go_base.append(g2.clone().requires_grad_(g.requires_grad))
            else:
                go_base.append(g)
        go_base = tuple(go_base)
    if sparse:
        fn = _rebuilding(fn, sparse)
        if notes is not None and not any("stored values" in n for n in notes):
            notes.append("sparse input%s %s checked through %s stored (non-zero) values: the gradient is "
                         "compared where the sparse tensor has entries" % (
                             "s" if len(sparse) > 1 else "", ", ".join(infos[i]["name"] for i in sorted(sparse)),
                             "their" if len(sparse) > 1 else "its"))
    fn = densifying_outputs(copying_containers(fn))
    subject = Subject(fn, fclass, tuple(base), infos, go_base, opts, reporter)
    if not subject.grad_pos:
        raise Outcome("error", "bad_inputs",
                      "✗ no input requires grad: gradcheck needs at least one floating-point input "
                      "tensor with requires_grad=True")
    return subject
