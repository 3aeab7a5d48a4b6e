"""What every kind shares: the `Computed` verdict, the stem / item split of a part, and the value,
integer and term-list readers with their "cannot tell" rules (moved from compute.py, unchanged)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..answer_consistency import _expr


@dataclass(frozen=True)
class Computed:
    kind: str
    value: str  # the computed answer, as text (kept in the record's meta when the gold agrees)
    agrees: bool
    sure: bool = True  # a disagreement is certain (clean question and gold); False: a doubt to tag
    detail: str = ""


_LABEL = re.compile(r"^\s*(?:\((?:[a-z]|[ivx]+)\)|[a-h]\))\s*")  # "(a) ", Lebl's "a) "
_ELLIPSIS = re.compile(r"\.\s*\.|…|·\s*·|\betc\b")


def _split(question: str) -> tuple[str, str]:
    """(stem, item): the last line without its part label when the question is a part of a
    numbered list ("Evaluate each of the following.\\n(a) (3 −2i) + (5i −6)"), else (question, question)."""
    lines = question.strip().split("\n")
    if len(lines) >= 2 and _LABEL.match(lines[-1]):
        if any(_LABEL.match(line) for line in lines[:-1]):
            return question.strip(), ""  # several parts in one item (not split): no one ask
        return "\n".join(lines[:-1]), _LABEL.sub("", lines[-1])
    return question.strip(), question.strip()


def _clean(text: str) -> str:
    return text.replace("−", "-").replace("–", "-").strip().rstrip(".").strip()


_INT = re.compile(r"^\s*([-+]?\d+)\s*$")


def _integer(text: str) -> int | None:
    m = _INT.match(_clean(text))
    return int(m.group(1)) if m else None


def _value(text: str, letters: str = ""):
    """A number (sympy) written in `text`, or None: only digits, operators, fractions, roots, powers,
    binomials, π and the `letters` allowed (none of a prose word, an ellipsis or a second value)."""
    t = _clean(text)
    if not t or _ELLIPSIS.search(t) or re.search(r"[=≡,;<>≤≥]", t):
        return None
    bare = re.sub(r"\\(?:frac|dfrac|sqrt|binom|cdot|times|pi|left|right)\b|π|·|×", " ", t)
    if re.search(rf"[^\d\s+\-*/^(){{}}\[\].{re.escape(letters)}]", bare):
        return None
    v = _expr(t.replace("×", "\\times ").replace("·", "\\cdot "))
    if v is None:
        return None
    import sympy

    if any(s.name not in letters for s in v.free_symbols):
        return None
    return sympy.nsimplify(v) if v.is_Float else v


def _same(a, b) -> bool | None:
    """Whether two constants are equal (exactly, else numerically); None when neither can tell."""
    import sympy

    try:
        d = sympy.simplify(a - b)
        if d == 0:
            return True
        za, zb = complex(sympy.N(a, 30)), complex(sympy.N(b, 30))
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    if any(z != z or abs(z) > 1e300 for z in (za, zb)):
        return None
    return abs(za - zb) <= 1e-9 * max(1.0, abs(za), abs(zb))


def _terms(text: str) -> list | None:
    """A listed sequence "0, 4, 4, 4, . ." or "1, 2, 16, 68, 364": its numbers (3 or more; an
    ellipsis only at the end), or None."""
    t = _clean(text)
    t = re.sub(r"(?:,\s*)?(?:\.\s*)+$|(?:,\s*)?(?:…|·\s*·\s*·|etc\.?)$", "", t).strip().rstrip(",")
    parts = [p for p in re.split(r",\s*", t)]
    if len(parts) < 3:
        return None
    out = []
    for p in parts:
        v = _value(p)
        if v is None or not v.is_number:
            return None
        out.append(v)
    return out


def _sequence_in(text: str) -> list | None:
    """The listed sequence a question states ("... the sequence 1, −2, 4, −8, 16,....", "(a) 4, 4, 4, 4,")."""
    m = re.search(r"(?<![\w^{_])((?:[−-]?\d+(?:/\d+)?\s*,\s*){2,}[−-]?\d+(?:/\d+)?)\s*(?:,\s*)?(?:\.\s*\.|…|·\s*·)", text)
    if m is None:
        return None
    return _terms(m.group(1))
