"""Math-aware text keys shared by the dedup and decontamination matchers.

- `canonical_text`: one spelling for what is one problem: LaTeX delimiters and spacing dropped,
  synonym commands unified (\\dfrac -> \\frac, \\leq -> \\le, \\cdot / \\times -> *), single-token
  braces removed (x^{2} -> x^2), unicode superscripts and math symbols mapped to LaTeX, spaces
  around operators removed. Matchers compare these, so "$x^{2}-5x+6=0$" and "x^2 - 5x + 6 = 0"
  are the same text.
- `numbers`: the problem's numbers as invariants (a sorted multiset of exact rationals:
  "\\frac{1}{2}", "1/2", "0.5" and "one half" are one number). Two texts that differ only in their
  numbers are distinct problems from one template, never duplicates; a light paraphrase keeps
  its numbers. `numbers_compatible` applies that rule with a policy.
"""

from __future__ import annotations

import hashlib
import re
import string
import unicodedata
from collections import Counter
from fractions import Fraction
from typing import Literal

NumberPolicy = Literal["exact", "subset", "ignore"]

_SUPERSCRIPTS = str.maketrans({"⁰": "^0", "¹": "^1", "²": "^2", "³": "^3", "⁴": "^4", "⁵": "^5",
                               "⁶": "^6", "⁷": "^7", "⁸": "^8", "⁹": "^9"})
# Before NFKC, which would turn "x²" into "x2" and lose the exponent.
_SYMBOLS = str.maketrans({"×": "*", "·": "*", "⋅": "*", "÷": "/", "−": "-", "–": "-", "≤": "\\le ",
                          "≥": "\\ge ", "≠": "\\ne ", "π": "\\pi ", "∞": "\\infty ", "√": "\\sqrt ",
                          "°": "^\\circ ", "½": "1/2", "¼": "1/4", "¾": "3/4"})
_COMMAND_SYNONYMS = [
    (re.compile(r"\\[dt]frac\b"), r"\\frac"),
    (re.compile(r"\\leq?slant\b|\\leq\b"), r"\\le"),
    (re.compile(r"\\geq?slant\b|\\geq\b"), r"\\ge"),
    (re.compile(r"\\neq\b"), r"\\ne"),
    (re.compile(r"\\(?:cdot|times|ast)\b"), "*"),
    (re.compile(r"\\div\b"), "/"),
    (re.compile(r"\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big|displaystyle|textstyle)\b"), ""),
    (re.compile(r"\\(?:text|mathrm|textrm|textbf|mathbf|mathit|textit|operatorname|mbox)\s*\{([^{}]*)\}"), r" \1 "),
]
_DELIMITERS = re.compile(r"\$\$?|\\[()\[\]]")
_SPACING = re.compile(r"\\[,;:! ]|\\(?:q?quad|thinspace|medspace|thickspace|enspace)\b|~")
_SINGLE_BRACE = re.compile(r"([\^_])\{(\\?\w+|[^{}\s])\}")  # x^{2} -> x^2, a_{n} -> a_n
_FRAC_DIGITS = re.compile(r"\\frac\s*(\d)\s*(\d)")  # \frac12 -> \frac{1}{2}
_WS = re.compile(r"\s+")
_OP_SPACE = re.compile(r"\s*([^\w\s\\])\s*")  # spaces around operators and punctuation carry nothing
_PUNCT = str.maketrans("", "", string.punctuation.replace("\\", "").replace("^", "").replace("_", ""))


def canonical_text(text: str, *, lowercase: bool = True, latex: bool = True, punctuation: bool = False) -> str:
    """The matching form of a text (see module doc). `punctuation=True` also drops ASCII
    punctuation other than ^ _ \\ (aggressive: "2-3" == "23")."""
    text = unicodedata.normalize("NFKC", text.translate(_SUPERSCRIPTS).translate(_SYMBOLS))
    if latex:
        text = _DELIMITERS.sub(" ", text)
        text = _SPACING.sub(" ", text)
        for pattern, repl in _COMMAND_SYNONYMS:
            text = pattern.sub(repl, text)
        text = _FRAC_DIGITS.sub(r"\\frac{\1}{\2}", text)
        text = _SINGLE_BRACE.sub(r"\1\2", text)
    if lowercase:
        text = text.lower()
    if punctuation:
        text = text.translate(_PUNCT)
    text = _WS.sub(" ", text).strip()
    return _OP_SPACE.sub(r"\1", text) if latex else text


# ---- numbers as invariants ---------------------------------------------------------------------

_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())}
_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
               "ninety": 90, "hundred": 100, "thousand": 1000, "dozen": 12, "half": Fraction(1, 2),
               "squared": 2, "cubed": 3})
_WORD_RE = re.compile(r"\b(" + "|".join(sorted(_WORDS, key=len, reverse=True)) + r")\b", re.IGNORECASE)
_LATEX_FRAC = re.compile(r"\\frac\s*\{\s*(\d+(?:\.\d+)?)\s*\}\s*\{\s*(\d+(?:\.\d+)?)\s*\}")
_THOUSANDS = re.compile(r"\b\d{1,3}(?:,\d{3})+(?![\d,])")
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?:\s*/\s*(\d+(?:\.\d+)?))?")


def numbers(text: str) -> tuple[str, ...]:
    """The numbers a text states, as a sorted multiset of canonical rationals ("1/2", "6", ...).

    Magnitudes only: in "x^2 - 5x" the minus is an operator, so signs are not part of a number.
    Thousands separators ("1,000") are read as one number; number words up to twenty, the tens,
    "hundred", "dozen", "half", "squared" and "cubed" count as their numbers."""
    text = canonical_text(text)  # one spelling first: x_{1} and x_1 must agree
    found: list[Fraction] = []

    def take_frac(m: re.Match) -> str:
        found.append(Fraction(m.group(1)) / Fraction(m.group(2)) if float(m.group(2)) else Fraction(m.group(1)))
        return " "

    def take_word(m: re.Match) -> str:
        found.append(Fraction(_WORDS[m.group(1).lower()]))
        return " "

    text = _LATEX_FRAC.sub(take_frac, text)
    text = _THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)
    text = _WORD_RE.sub(take_word, text)
    for num, den in _NUMBER.findall(text):
        value = Fraction(num)
        if den and Fraction(den):
            value /= Fraction(den)
        elif den:
            found.append(Fraction(den))
        found.append(value)
    return tuple(sorted(str(f) for f in found))


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
