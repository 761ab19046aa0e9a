"""What forward's errors say about the inputs it wants: shapes ("a Bx3x3 batch", "det requires a
square matrix", "last dim should be 4"), the values a string takes ("Available: cg, bicgstab"), the
sign of a named input ("length must be strictly positive"), a dtype it refuses (float64), and
whether an error is about values (try another domain) rather than shapes."""

import re

from . import constraints
from .kinds import TENSOR
from ..text import first_line

_DOMAIN_WORDS = ("positive", "domain", "cholesky", "singular", "invertible", "nan", "inf", "invalid value",
                 "linalg", "negative", "must be >", "must be non", "out of bounds", "sqrt", "log")


_BATCH_SHAPE = re.compile(r"\b[BNLbn]\s*[x×]\s*(\d+)(?:\s*[x×]\s*(\d+))?(?:\s*[x×]\s*(\d+))?")
_MATMUL = re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)")
_CHANNELS = re.compile(r"expected input\[[^\]]*\] to have (\d+) channels")
_SQUARE = re.compile(r"\b(?:must be|requires?|expected|expects|needs?|only|not)\b[^.;:]{0,40}\bsquare\b", re.I)
_LAST_DIM = re.compile(r"last (?:dim|dimension|axis)\w*(?: size)? (?:should|must|to) be (?:of size )?(\d+)", re.I)


_CHOICES = re.compile(r"(?:available|supported|valid|one of|choose from|options are|expected)\b[^:\[\(\{]{0,30}"
                      r"[:\[\(\{]?\s*((?:['\"]?[A-Za-z_][\w\-]*['\"]?\s*(?:,|\bor\b|\|)\s*)+['\"]?[A-Za-z_][\w\-]*['\"]?)",
                      re.IGNORECASE)


def choices(message):
    """The values an error message lists for a string ("Available: cg, bicgstab, gmres"), or []."""
    m = _CHOICES.search(message)
    if not m:
        return []
    words = re.split(r"\s*(?:,|\bor\b|\|)\s*", m.group(1))
    out = [w.strip("'\" ") for w in words if w.strip("'\" ")]
    return out if 2 <= len(out) <= 16 else []


def shape_hints(message):
    """Shapes an error message asks for: "a Bx3x3 batch" → (2, 3, 3); "last dim should be 4" → (2, 4)."""
    hints = []
    for m in _BATCH_SHAPE.finditer(message):
        dims = tuple(int(d) for d in m.groups() if d)
        if dims and all(0 < d <= 64 for d in dims):
            hints.append((2,) + dims)
    for m in _LAST_DIM.finditer(message):
        d = int(m.group(1))
        if 0 < d <= 64:
            hints += [(3, d), (2, 3, d)]
    m = _MATMUL.search(message)  # a Linear layer of the caller's: the input's last dim is its in_features
    if m and 0 < int(m.group(3)) <= 4096:
        d = int(m.group(3))
        hints += [(3, d), (2, 3, d)]
    m = _CHANNELS.search(message)  # a conv layer: the input's channels
    if m and 0 < int(m.group(1)) <= 512:
        hints += [(1, int(m.group(1)), 8, 8), (1, int(m.group(1)), 16)]
    if _SQUARE.search(message):  # "det requires a square matrix, got (2, 7)": square matrices, then batches
        hints += [(4, 4), (3, 3), (2, 4, 4)]
    marker = "values to unpack (expected "  # `B, C, H, W = x.shape` on a tensor of another rank
    if marker in message:
        rank = message.split(marker, 1)[1].split(")", 1)[0].split(",")[0].strip()
        hints += {"3": [(2, 3, 8)], "4": [(1, 3, 8, 8), (2, 3, 16, 16)], "5": [(1, 2, 4, 8, 8)]}.get(rank, [])
    return hints


_SIGNS = (
    (re.compile(r"^(?:must be |should be |requires? |expected |needs? to be |be )?(?:strictly |all )?"
                r"(?:positive|> ?0(?:\.0)?\b|>= ?0|non-?negative)", re.I), "positive"),
    (re.compile(r"^(?:must be |should be |requires? |expected |needs? to be |be )?(?:strictly |all )?"
                r"(?:negative|< ?0(?:\.0)?\b|<= ?0|non-?positive)", re.I), "negative"),
)


def learn_domains(message, params, found):
    """A tensor parameter forward's error names with a sign it must have ("length must be strictly
    positive", "Okada convention requires z <= 0": ``z_obs`` when no other parameter starts with
    ``z``) gets that domain, insisted on over the recipe's own (``Constraint.insisted``). True when
    something was learned."""
    tensors = [p for p in params if p.kind == TENSOR]
    learned = False
    for p in tensors:
        words = [p.name]
        head = p.name.split("_")[0]
        if head != p.name and len(head) >= 1 and sum(1 for q in tensors if q.name.split("_")[0] == head) == 1:
            words.append(head)  # ``z`` for ``z_obs``, the only one so named
        for word in words:
            for m in re.finditer(r"(?<![\w.])%s(?![\w(])\s*(.{0,40})" % re.escape(word), message):
                for pattern, domain in _SIGNS:
                    if pattern.match(m.group(1)):
                        c = found.get(p.name)
                        if c is None or c.domain != domain:
                            c = constraints.say(found, p.name, "%s (forward's error: %s)" % (domain, first_line(message)[:80]))
                            c.domain, c.insisted = domain, True
                            learned = True
    return learned


def looks_like_domain(exc):
    text = str(exc).lower()
    return isinstance(exc, ValueError) or any(w in text for w in _DOMAIN_WORDS)


_FLOAT64_WORDS = ("Double", "double", "float64", "dtype", "scalar type", "without overflow")


def float64_refused(exc):
    """Does forward's error say that it does not take float64 (a dtype mismatch with a float32
    buffer or weight, float64's range overflowing a float32 tensor, a kernel typed for float)?"""
    text = str(exc)
    return isinstance(exc, (RuntimeError, TypeError, ValueError, AssertionError)) and any(
        w in text for w in _FLOAT64_WORDS)


def gist(exc):
    """An error without its numbers: the same complaint about other shapes."""
    return type(exc).__name__ + ": " + "".join(c for c in str(exc)[:200] if not c.isdigit())
