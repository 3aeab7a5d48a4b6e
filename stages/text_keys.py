"""Math-aware text keys shared by the dedup and decontamination matchers.

- `canonical_text`: one spelling for what is one problem: LaTeX delimiters and spacing dropped,
  synonym commands unified (\\dfrac -> \\frac, \\leq -> \\le, \\cdot / \\times -> *), single-token
  braces removed (x^{2} -> x^2), unicode superscripts and math symbols mapped to LaTeX, spaces
  around operators removed. Matchers compare these, so "$x^{2}-5x+6=0$" and "x^2 - 5x + 6 = 0"
  are the same text.
- `numbers`: the problem's numbers as invariants (a sorted multiset of canonical spellings:
  "\\frac{3}{4}" and "3/4", "007" and "7", "three" and "3" agree; "one" is read as an article, so
  "a train" and "one train" agree). Two texts that differ only in their numbers are distinct
  problems from one template, never duplicates; a light paraphrase keeps its numbers. `numbers_compatible` applies that rule with a policy.
"""

from __future__ import annotations

import hashlib
import re
import string
import unicodedata
from collections import Counter
from typing import Literal

NumberPolicy = Literal["exact", "subset", "ignore"]

_UNICODE = str.maketrans({
    # superscripts before NFKC, which would turn "x²" into "x2" and lose the exponent
    "⁰": "^0", "¹": "^1", "²": "^2", "³": "^3", "⁴": "^4", "⁵": "^5", "⁶": "^6", "⁷": "^7", "⁸": "^8",
    "⁹": "^9", "×": "*", "·": "*", "⋅": "*", "÷": "/", "−": "-", "–": "-", "≤": "\\le ", "≥": "\\ge ",
    "≠": "\\ne ", "π": "\\pi ", "∞": "\\infty ", "√": "\\sqrt ", "°": "^\\circ ", "½": "1/2",
    "¼": "1/4", "¾": "3/4", "\u00a0": " "})
# One pass over LaTeX: delimiters and spacing become a space, synonyms one command, sizing goes.
_LATEX_WORDS = {"dfrac": "\\frac", "tfrac": "\\frac", "leq": "\\le", "leqslant": "\\le", "geq": "\\ge",
                "geqslant": "\\ge", "neq": "\\ne", "cdot": "*", "times": "*", "ast": "*", "div": "/",
                "left": "", "right": "", "bigl": "", "bigr": "", "Bigl": "", "Bigr": "", "big": "",
                "Big": "", "displaystyle": "", "textstyle": "", "quad": " ", "qquad": " ",
                "thinspace": " ", "medspace": " ", "thickspace": " ", "enspace": " "}
_LATEX = re.compile(r"\\(?:text|mathrm|textrm|textbf|mathbf|mathit|textit|operatorname|mbox)\s*\{([^{}]*)\}"
                    r"|\\(" + "|".join(sorted(_LATEX_WORDS, key=len, reverse=True)) + r")(?![a-zA-Z])"
                    r"|\$\$?|\\[()\[\],;:! ]|~")
_FRAC_DIGITS = re.compile(r"\\frac\s*(\d)\s*(\d)")  # \frac12 -> \frac{1}{2}
_SINGLE_BRACE = re.compile(r"([\^_])\{(\\?\w+|[^{}\s])\}")  # x^{2} -> x^2, a_{n} -> a_n
# spaces next to an operator or punctuation carry nothing: "x ^ 2 + 1" == "x^2+1"
_OPERATORS = [c for c in string.punctuation if c != "\\"]
_PUNCT = str.maketrans("", "", string.punctuation.replace("\\", "").replace("^", "").replace("_", ""))


def _latex_repl(m: re.Match) -> str:
    if m.group(1) is not None:  # \text{...}: keep the words
        return f" {m.group(1)} "
    if m.group(2) is not None:
        return _LATEX_WORDS[m.group(2)]
    return " "


def canonical_text(text: str, *, lowercase: bool = True, latex: bool = True, punctuation: bool = False) -> str:
    """The matching form of a text (see module doc). `punctuation=True` also drops ASCII
    punctuation other than ^ _ \\ (aggressive: "2-3" == "23")."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text.translate(_UNICODE))
    if latex and ("\\" in text or "$" in text or "~" in text):
        text = _LATEX.sub(_latex_repl, text)
        if "\\frac" in text:
            text = _FRAC_DIGITS.sub(r"\\frac{\1}{\2}", text)
        if "{" in text:
            text = _SINGLE_BRACE.sub(_unbrace, text)
    if lowercase:
        text = text.lower()
    if punctuation:
        text = text.translate(_PUNCT)
    text = " ".join(text.split())
    if latex:  # str.replace per operator present: 3x faster than one regex with lookarounds
        for op in _OPERATORS:
            if op in text:
                text = text.replace(" " + op, op).replace(op + " ", op)
        if " \\" in text:  # "a \le b" == "a\le b" (the space after a command name does matter)
            text = text.replace(" \\", "\\")
    return text


def _unbrace(m: re.Match) -> str:
    return m.group(1) + m.group(2)


# ---- numbers as invariants ---------------------------------------------------------------------

_WORDS = {w: str(i) for i, w in enumerate(
    "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split()) if w != "_"}  # "one" is mostly an article
_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80",
               "ninety": "90", "hundred": "100", "thousand": "1000", "dozen": "12", "half": "1/2",
               "squared": "2", "cubed": "3"})
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:/\d+(?:\.\d+)?)?")
_LATEX_FRAC = re.compile(r"\\frac\{(\d+(?:\.\d+)?)\}\{(\d+(?:\.\d+)?)\}")
_THOUSANDS = re.compile(r"\b\d{1,3}(?:,\d{3})+(?![\d,])")
_LETTERS = re.compile(r"[a-z]+")


def _canonical_number(token: str) -> str:
    """"007" -> "7", "2.50" -> "2.5", "3/4" stays: spelling variants of one number agree."""
    num, _, den = token.partition("/")
    if "." in num:
        num = num.rstrip("0").rstrip(".") or "0"
    num = num.lstrip("0") or "0" if not num.startswith("0.") else num
    return f"{num}/{_canonical_number(den)}" if den else num


def numbers(text: str, *, canonical: bool = False) -> tuple[str, ...]:
    """The numbers a text states, as a sorted multiset of canonical spellings ("7", "2.5", "3/4").

    Magnitudes only: in "x^2 - 5x" the minus is an operator, so signs are not part of a number.
    "\\frac{3}{4}" and "3/4" agree; "1,000" is one number; number words up to twenty, the tens,
    "hundred", "dozen", "half", "squared" and "cubed" count as their numbers. `canonical=True`:
    `text` already is `canonical_text(text)` (saves a second normalization)."""
    if not canonical:
        text = canonical_text(text)  # one spelling first: x_{1} and x_1 must agree
    if "\\frac" in text:
        text = _LATEX_FRAC.sub(r" \1/\2 ", text)
    if "," in text:
        text = _THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)
    found = [_canonical_number(t) for t in _NUMBER.findall(text)]
    found += [_WORDS[w] for w in _LETTERS.findall(text) if w in _WORDS]
    found.sort()
    return tuple(found)


def numbers_compatible(a: tuple[str, ...], b: tuple[str, ...], policy: NumberPolicy) -> bool:
    """exact: the same numbers (a template variant with one number changed is another problem);
    subset: one text's numbers are all in the other (tolerates a paraphrase that drops a stated
    number, e.g. "2-digit" -> "two-digit" written out, or an added unit conversion); ignore: always."""
    if policy == "ignore" or a == b:
        return True
    if policy == "exact":
        return False
    ca, cb = Counter(a), Counter(b)
    small, large = (ca, cb) if len(a) <= len(b) else (cb, ca)
    return not (small - large)


def numbers_hash(nums: tuple[str, ...]) -> int:
    """A 63-bit fingerprint of a number multiset: what the dedup stages keep per record."""
    return int.from_bytes(hashlib.blake2b("\x1f".join(nums).encode(), digest_size=8).digest(), "little") >> 1
