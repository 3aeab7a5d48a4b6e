"""Quantities a text states, normalized so that one quantity written two ways agrees.

Decontamination compares a training item with a benchmark item it may paraphrase: a rephrasing
keeps the quantities but often writes them another way ("three quarters" / "3/4", "75%" /
"three-fourths", "4 PM" / "16:00", "half price" / "50% off", "2 hours" / "120 minutes",
"twenty dozen" / "240", "half as big" / "twice the size"). `quantities(text)` reads each stated
quantity as a set of values it may stand for (exact fractions):

- numerals ("1,000", "2.5", ".25", "3/4", "\\frac{3}{4}") and number words, compounds included
  ("twenty-four", "one hundred and twenty", "3 thousand"); `N dozen` is 12 N;
- fractions in words ("a third", "two fifths", "three quarters", "half"), percentages as their
  fraction ("75%", "75 percent" = 3/4);
- multipliers: "twice", "double", "triple", "half" also stand for their reciprocal (the same
  relation said from the other side: "A is half of B" / "B is twice A"), as does "N times";
- times of day as minutes after midnight ("4 pm", "4:00 p.m.", "16:00", "noon");
- a quantity followed by a unit of time, length, mass or volume also stands for its value in
  the other units of that dimension (metric and imperial lengths/masses kept apart).

The value 1 is left out: "one" is mostly an article ("a train" / "one train"). `cover(a, b)` is
the share of a's quantities that some quantity of b can stand for; `compatible` asks that one
side be covered entirely and the other at least `need` (a rephrasing may drop or add a number;
a template variant changes one, so both sides miss something; a different problem on the same
theme that happens to reuse one or two numbers covers little of the other).
"""

from __future__ import annotations

import re
from fractions import Fraction

from .text_keys import canonical_text

Quantity = frozenset  # of Fraction | str ("clock:MIN")

_UNITS_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
                "nineteen")
SMALL = {w: i for i, w in enumerate(_UNITS_WORDS)}
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fourty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
        "eighty": 80, "ninety": 90}
SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}
# denominators in words; "quarters" and "halves" after a numeral are usually coins / pieces
DENOMINATORS = {"half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fourth": 4,
                "fourths": 4, "fifth": 5, "fifths": 5, "sixth": 6, "sixths": 6, "seventh": 7, "sevenths": 7,
                "eighth": 8, "eighths": 8, "ninth": 9, "ninths": 9, "tenth": 10, "tenths": 10}
MULTIPLIERS = {"twice": 2, "double": 2, "doubled": 2, "doubles": 2, "triple": 3, "tripled": 3, "triples": 3,
               "thrice": 3, "quadruple": 4, "quadrupled": 4, "half": Fraction(1, 2)}
CLOCK_WORDS = {"noon": 720, "midday": 720, "midnight": 0}
_UNIT_GROUPS: list[dict[str, Fraction]] = [
    {"second": Fraction(1), "sec": Fraction(1), "minute": Fraction(60), "min": Fraction(60),
     "hour": Fraction(3600), "hr": Fraction(3600), "day": Fraction(86400), "week": Fraction(604800)},
    {"mm": Fraction(1, 1000), "millimeter": Fraction(1, 1000), "cm": Fraction(1, 100), "centimeter": Fraction(1, 100),
     "m": Fraction(1), "meter": Fraction(1), "metre": Fraction(1), "km": Fraction(1000), "kilometer": Fraction(1000)},
    {"inch": Fraction(1), "foot": Fraction(12), "feet": Fraction(12), "ft": Fraction(12), "yard": Fraction(36),
     "yd": Fraction(36), "mile": Fraction(63360)},
    {"mg": Fraction(1, 1000), "milligram": Fraction(1, 1000), "g": Fraction(1), "gram": Fraction(1),
     "kg": Fraction(1000), "kilogram": Fraction(1000)},
    {"ounce": Fraction(1), "oz": Fraction(1), "pound": Fraction(16), "lb": Fraction(16)},
    {"ml": Fraction(1, 1000), "milliliter": Fraction(1, 1000), "l": Fraction(1), "liter": Fraction(1),
     "litre": Fraction(1)},
    {"cent": Fraction(1), "dollar": Fraction(100)},
]
UNITS: dict[str, tuple[int, Fraction]] = {}
for _g, _group in enumerate(_UNIT_GROUPS):
    for _name, _factor in _group.items():
        UNITS[_name] = (_g, _factor)
        if len(_name) > 3 and _name != "feet":
            UNITS[_name + "s"] = (_g, _factor)
UNITS.update({"inches": UNITS["inch"], "hrs": UNITS["hr"], "mins": UNITS["min"], "secs": UNITS["sec"],
              "lbs": UNITS["lb"], "pennies": UNITS["cent"]})

# a decimal point needs a digit before it, or a "$" ("$.25"), not a sentence's end ("toys.5")
_TOKEN = re.compile(r"(\d{1,2}):(\d{2})(?!\d)|(\d+(?:,\d{3})+(?![\d,])(?:\.\d+)?|\d+\.\d+|(?<=\$)\.\d+|\d+)(?:/(\d+))?"
                    r"|([a-z]+)|(%)|([,.;:!?()])")
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{\s*(\d+(?:\.\d+)?)\s*\}\s*\{\s*(\d+(?:\.\d+)?)\s*\}")


def _tokens(text: str) -> list[tuple[str, object]]:
    # the raw text, lowercased (canonical_text would join "toys. 5" into "toys.5")
    text = _LATEX_FRAC.sub(r" \1/\2 ", canonical_text(text, latex=False))
    out: list[tuple[str, object]] = []
    for m in _TOKEN.finditer(text):
        hh, mm, num, den, word, pct, punct = m.groups()
        if punct is not None:  # ends a number in words: "at six, seven times" is 6 and 7
            out.append(("punct", punct))
            continue
        if hh is not None:
            out.append(("clock", (int(hh), int(mm))))
        elif num is not None:
            value = Fraction(num.replace(",", ""))
            if den is not None:
                value = value / int(den) if int(den) else value
            out.append(("num", value))
        elif word is not None:
            out.append(("word", word))
        else:
            out.append(("pct", pct))
    return out


def _word_number(toks: list, i: int) -> tuple[Fraction | None, int]:
    """A number written in words from toks[i]: (value, next index) or (None, i)."""
    total, current, j, seen, last = 0, 0, i, False, None
    while j < len(toks) and toks[j][0] == "word":
        w = toks[j][1]
        if w in SMALL:
            if last in ("small", "teen") or (last == "tens" and SMALL[w] > 9) or (last == "tens" and not SMALL[w]):
                break  # "two fifteen-minute breaks" is 2 and 15, "twenty-four" is 24
            current += SMALL[w]
            last = "teen" if SMALL[w] > 9 else "small"
        elif w in TENS:
            if last in ("small", "teen", "tens"):
                break
            current += TENS[w]
            last = "tens"
        elif w in SCALES and seen:
            scale = SCALES[w]
            if scale == 100:
                current = (current or 1) * 100
            else:
                total += (current or 1) * scale
                current = 0
            last = "scale"
        elif w == "and" and seen and j + 1 < len(toks) and toks[j + 1][0] == "word" and (
                toks[j + 1][1] in SMALL or toks[j + 1][1] in TENS):
            pass
        else:
            break
        seen = True
        j += 1
    return (Fraction(total + current), j) if seen else (None, i)


def _word(toks: list, i: int) -> str | None:
    return toks[i][1] if i < len(toks) and toks[i][0] == "word" else None


def _with_units(values: set, toks: list, j: int, primary) -> tuple[set, int]:
    """Conversions into the other units of the dimension, when a unit follows (of the primary
    reading only: a "half-hour" is not two hours)."""
    k = j + 1 if _word(toks, j) in ("a", "an") else j
    unit = UNITS.get(_word(toks, k) or "")
    if unit is None:
        return values, j
    group, factor = unit
    values = {primary} if primary is not None else values
    out = set(values)
    for v in values:
        if isinstance(v, Fraction):
            out.update(v * factor / f for f in _UNIT_GROUPS[group].values())
    return out, k + 1


def quantities(text: str) -> tuple[Quantity, ...]:
    """The quantities stated, in order, each as the set of values it may stand for."""
    toks = _tokens(text)
    found: list[set] = []
    i = 0
    while i < len(toks):
        kind, val = toks[i]
        values: set | None = None
        primary = None  # a multiplier's own value (its reciprocal is the other reading)
        j = i + 1
        if kind == "clock":
            hh, mm = val  # type: ignore[misc]
            ampm = _word(toks, j)
            if ampm in ("am", "pm") or (ampm in ("a", "p") and _word(toks, j + 1) == "m"):
                j += 1 if ampm in ("am", "pm") else 2
                values = {f"clock:{(hh % 12 + (12 if ampm.startswith('p') else 0)) * 60 + mm}"}
            else:
                values = {f"clock:{hh * 60 + mm}"} | ({f"clock:{(hh + 12) * 60 + mm}"} if hh < 12 else set())
        elif kind == "num" or (kind == "word" and (val in SMALL or val in TENS)):
            if kind == "num":
                value = val
            else:
                value, j = _word_number(toks, i)
            while _word(toks, j) in SCALES:
                value *= SCALES[_word(toks, j)]  # type: ignore[index]
                j += 1
            nxt = _word(toks, j)
            if j < len(toks) and (toks[j][0] == "pct" or nxt in ("percent", "per") and (nxt == "percent" or _word(toks, j + 1) == "cent")):
                j += 1 if toks[j][0] == "pct" or nxt == "percent" else 2
                values = {value / 100}
            elif nxt == "dozen":
                values, j = {value * 12}, j + 1
            elif nxt in ("am", "pm") and value.denominator == 1 and 1 <= value <= 12:
                values, j = {f"clock:{(int(value) % 12 + (12 if nxt == 'pm' else 0)) * 60}"}, j + 1
            elif nxt in ("a", "p") and _word(toks, j + 1) == "m" and value.denominator == 1 and 1 <= value <= 12:
                values, j = {f"clock:{(int(value) % 12 + (12 if nxt == 'p' else 0)) * 60}"}, j + 2
            elif nxt in DENOMINATORS and value >= 1 and not (nxt == "half" or nxt == "second"):
                d = DENOMINATORS[nxt]
                # "two thirds" is 2/3; "5 quarters" may be coins: both readings
                values = {value / d} if kind == "word" and nxt not in ("quarters", "halves") else {value / d, value}
                j += 1
            elif nxt == "times":
                values = {value, 1 / value} if value else {value}
            else:
                values = {value}
        elif kind == "word":
            if val in ("a", "an") and _word(toks, j) == "dozen":
                values, j = {Fraction(12)}, j + 1
            elif val in ("a", "an", "one") and _word(toks, j) in DENOMINATORS and _word(toks, j) != "half":
                values, j = {Fraction(1, DENOMINATORS[_word(toks, j)])}, j + 1  # type: ignore[index]
            elif val in ("a", "an", "one") and _word(toks, j) in SCALES:
                values, j = {Fraction(SCALES[_word(toks, j)])}, j + 1  # type: ignore[index]
            elif val in MULTIPLIERS:
                m = primary = Fraction(MULTIPLIERS[val])
                values = {m, 1 / m}
                if val == "half" and _word(toks, j) in ("a", "an") and _word(toks, j + 1) == "dozen":
                    values, j = {Fraction(6)}, j + 2
            elif val in CLOCK_WORDS:
                values = {f"clock:{CLOCK_WORDS[val]}"}
        if values is None:
            i += 1
            continue
        values, j = _with_units(values, toks, j, primary)
        if values != {Fraction(1)} and not (Fraction(1) in values and len(values) > 1 and toks[i][1] in (1, "one")):
            found.append(frozenset(values))
        i = max(j, i + 1)
    return tuple(found)


def cover(a: tuple[Quantity, ...], b: tuple[Quantity, ...]) -> float:
    """Share of a's quantities that a distinct quantity of b can stand for (1.0 when a states
    none). Mentions count: "from 0 to 5 of 5x" is not covered by "from 0 to 3 of 5x"."""
    if not a:
        return 1.0
    free = list(b)
    matched = 0
    for q in sorted(a, key=lambda q: sum(1 for r in b if q & r)):  # the most constrained first
        for k, r in enumerate(free):
            if q & r:
                matched += 1
                del free[k]
                break
    return matched / len(a)


def compatible(a: tuple[Quantity, ...], b: tuple[Quantity, ...], need: float) -> bool:
    """Both texts state (nearly) the same quantities: one side's are all found in the other
    (a rephrasing may drop or add a number, but a quantity changed on both sides is a template
    variant, another problem) and the other side's are covered at least `need` (a problem on the
    same theme that reuses one or two numbers covers little). Two texts without quantities
    agree; one without and one with do not."""
    if not a or not b:
        return not a and not b
    ca, cb = cover(a, b), cover(b, a)
    return max(ca, cb) == 1.0 and min(ca, cb) >= need
