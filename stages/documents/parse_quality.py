"""Text-layer quality of one page: is this text what a reader sees, or should the page go to OCR?

Broken text layers fail in recognizable ways:
- nothing there (scans, vector-outlined text)                         -> "empty"
- replacement characters, unassigned code points, `(cid:NN)` debris   -> "unmapped glyphs"
- a broken ToUnicode map: digits or letters come out as letters of other alphabets, so words
  mix scripts ("Иx + Л") or lone foreign letters stand where digits were -> "mixed scripts"
- letters remapped inside one alphabet: words without vowels, no function words -> "gibberish"
- private-use code points everywhere (a font with no Unicode map at all) -> "private-use glyphs"
- ligature holes: "de ne", "speci c" (an fi/fl glyph that maps to nothing) -> "ligature holes"
TeX fonts legitimately emit some private-use glyphs (big delimiters) and control codes (small
ones), and Greek letters sit next to Latin ones in formulas: all tolerated up to a limit; U+FFFD
is not (TeX never needs it: a page with more than a few per mille of it is garbled).
The score is 1 minus the summed penalties; `garbled` names the worst signal when the score is
below the threshold. Regex counting keeps this at a fraction of the cost of text extraction.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice

_SCRIPT_CACHE: dict[str, str] = {}
_UNMAPPED = re.compile(r"[\ufff0-\uffff]|\(cid:\d+\)|/uni[0-9A-Fa-f]{4}")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
_PRIVATE = re.compile(r"[\ue000-\uf8ff\U000f0000-\U0010ffff]")
_NON_ASCII_LETTER = re.compile(r"[^\W\x00-\x7f]")  # what every `_NON_ASCII_WORD` holds: one C scan, no lookahead per word
_NON_ASCII_WORD = re.compile(r"(?<!\w)(?=\w*[^\W\x00-\x7f])\w+")  # words with a non-ASCII letter (from word starts: linear)
_LATIN_WORD = re.compile(r"(?<![\w])[a-z]{3,}(?![\w])")
# Letter pairs that make up 90% of the pairs in English textbook prose (measured on the
# development textbooks); French, German and Spanish text hits them nearly as often, a text
# layer whose letters were remapped does not.
_COMMON_BIGRAMS = frozenset(
    "ab ac ad ai al am an ap ar as at be bl by ca ce ch ci cl co ct de di do du ea ec ed ee ef el "
    "em en eo ep eq er es et ex fi fo ge gr ha he hi ho ia ic id ie if ig il im in io ir is it iv "
    "ix la ld le li ll lo ls lu ly ma mb me mi mo mp mu na nc nd ne ng ni no ns nt nu ny od of ol "
    "om on oo op or os ot ou ov ow pa pe pl po pp pr pt qu ra rd re ri rm ro rs rt ry sa se sh si "
    "so sp ss st su ta te th ti to tr ts tw ty ua ub uc ue ul um un up ur us ut va ve vi we wh wi "
    "wo xa".split()
)
_WORD = re.compile(r"\w+")
_NOT_ASCII_LETTERS = bytes(c for c in range(256) if chr(c) not in string.ascii_letters)
# What is left of a word when its fi / fl / ff ligature glyph maps to nothing ("de ne", "speci c",
# "rst", "e cient"): fragments that are not words in the languages checked here.
_LIGATURE_HOLES = frozenset("rst xed gure speci signi coe cient ciently nition nitions nitely satis ected ered".split())
# The most common function words of a few languages: running text hits them in 20-50% of words.
_FUNCTION_WORDS = frozenset(
    "the of and a to in is that for it as with be by on are this we an or not which from at if "
    "let then so there can has have its all when find show prove what suppose "  # en
    "le la les de des du et est un une en que qui dans pour sur par pas au aux "  # fr
    "der die das und ist ein eine zu den von mit sich auf nicht für dem des im "  # de
    "el los las del y es por con para se lo al il di che per non della sono "  # es it pt
    "и в не на что с по как это для из к то а или η το και του της να".split()  # ru el
)


def script_of(ch: str) -> str:
    """Script family of a letter: first word of its Unicode name (LATIN, CYRILLIC, GREEK, CJK...)."""
    s = _SCRIPT_CACHE.get(ch)
    if s is None:
        if unicodedata.category(ch) not in ("Lu", "Ll", "Lt", "Lo"):
            s = ""  # not a letter: digits, marks, modifier letters (ˆ), symbols
        else:
            try:
                s = unicodedata.name(ch).split(" ", 1)[0]
            except ValueError:
                s = "UNKNOWN"
            if s in ("MATHEMATICAL", "DOUBLE-STRUCK", "SCRIPT", "BLACK-LETTER"):
                s = "MATH"
        _SCRIPT_CACHE[ch] = s
    return s


def ascii_letters(text: str) -> int:
    """How many ASCII letters `text` has (counted on its ASCII bytes, in C)."""
    return len(text.encode("ascii", "ignore").translate(None, _NOT_ASCII_LETTERS))


@lru_cache(maxsize=1 << 16)
def _common_pairs(word: str) -> int:
    """How many of a word's letter pairs are `_COMMON_BIGRAMS` (prose repeats its words)."""
    return sum(map(_COMMON_BIGRAMS.__contains__, map(str.__add__, word, word[1:])))


@lru_cache(maxsize=1 << 16)
def _word_scripts(word: str) -> tuple[tuple[str, int], ...]:
    """(script, letter count) pairs of a word, most letters first."""
    counts = Counter(script_of(c) for c in word)
    counts.pop("", None)
    return tuple(counts.most_common())


@dataclass
class Quality:
    score: float  # 0 (garbage) .. 1 (clean)
    chars: int  # non-space characters
    garbled: str | None  # the worst signal when the page looks broken ("empty" when no text)
    details: dict[str, float]

    @property
    def empty(self) -> bool:
        return self.garbled == "empty"


def assess(text: str, min_chars: int = 20, threshold: float = 0.8) -> Quality:
    """Score a page's text; `garbled` is set when the score is below `threshold`."""
    text = unicodedata.normalize("NFKC", text)
    n = len(text) - sum(map(text.count, " \n\t\r\xa0"))
    if n < min_chars:
        return Quality(0.0, n, "empty", {"chars": n})
    unmapped = sum(len(m) for m in _UNMAPPED.findall(text)) if _UNMAPPED.search(text) else 0
    control = len(_CONTROL.findall(text)) if _CONTROL.search(text) else 0
    private = len(_PRIVATE.findall(text)) if _PRIVATE.search(text) else 0

    # Scripts: only words with non-ASCII characters can mix alphabets.
    # Each distinct word once, weighted by its count (a math page repeats its symbols), in the
    # order of first occurrence: scripts enter `letters` in the same order (ties of the dominant
    # script go to the one seen first).
    letters: Counter[str] = Counter({"LATIN": ascii_letters(text)})
    profiles = [(w, k, _word_scripts(w)) for w, k in Counter(_NON_ASCII_WORD.findall(text) if _NON_ASCII_LETTER.search(text) else ()).items()]
    for _, k, scripts in profiles:
        for name, count in scripts:
            letters[name] += count * k
    dominant = letters.most_common(1)[0][0] if sum(letters.values()) else "LATIN"
    tolerated = {dominant, "MATH", "UNKNOWN"} | ({"GREEK"} if dominant == "LATIN" else set())
    mixed = isolated = short_foreign = 0
    for w, k, scripts in profiles:
        names = {name for name, _ in scripts}
        if not names - tolerated:
            continue
        if len(names) > 1:
            mixed += len(w) * k  # "Иx": letters of two alphabets inside one word
        elif scripts[0][1] == 1:
            isolated += k  # a lone foreign letter, where a digit stood
        elif len(w) <= 3:
            short_foreign += k
    # digits that all came out as letters: a page of Latin text without a single digit, but
    # with short words of another alphabet ("the sum of ИЖ and ИЛ")
    no_digits = dominant == "LATIN" and short_foreign + isolated >= 3 and not any(map(text.__contains__, "0123456789"))

    low = text.lower()
    tokens = _WORD.findall(low)
    words = len(tokens) - sum(map(str.isdigit, tokens))
    function_share = sum(map(_FUNCTION_WORDS.__contains__, tokens)) / max(words, 1)
    gibberish = 0.0
    # a sample of the page's words is enough: its first 120 within 4000 characters (the scan stops there)
    latin = [m.group() for m in islice(_LATIN_WORD.finditer(low, 0, 4000), 120)]
    bigram_share = 1.0
    if dominant == "LATIN" and len(latin) >= 30:
        sample = " ".join(latin)  # letter pairs across the spaces are in no list: counted per word
        hits = sum(map(_common_pairs, latin))
        bigram_share = hits / (len(sample) - 2 * min(len(latin), 120) + 1)  # the words' letter pairs
        # real pages: >= 0.68 of pairs are common (worst page of the development textbooks)
        floor = 0.7 if function_share < 0.05 else 0.55  # no "the", "of", "and": be stricter
        gibberish = min(1.0, max(0.0, floor - bigram_share) * 4)
    holes = sum(map(_LIGATURE_HOLES.__contains__, tokens))

    penalties = {
        # TeX math fonts leave big-delimiter pieces unmapped: ~10% of a matrix page, over 20% of
        # a page of determinants; its prose stays readable (function words), a broken font's not
        # a glyph nothing could map (U+FFFD, "(cid:N)") is no TeX delimiter: a few per mille at most
        "unmapped glyphs": 10 * max(0.0, unmapped / n - 0.002)
        + 4 * max(0.0, control / n - (0.3 if function_share >= 0.1 else 0.12)),
        "private-use glyphs": 2 * max(0.0, private / n - 0.25),
        "mixed scripts": 4 * mixed / n + 2 * isolated / max(words, 1) + (0.5 if no_digits else 0.0),
        "ligature holes": 0.05 * max(0, holes - 2),
        "gibberish": gibberish,
    }
    score = max(0.0, 1.0 - sum(penalties.values()))
    worst = max(penalties, key=penalties.__getitem__)
    details = {
        "chars": n,
        "unmapped": unmapped / n,
        "control": control / n,
        "private": private / n,
        "mixed_script": mixed / n,
        "isolated_foreign": isolated / max(words, 1),
        "function_words": round(function_share, 3),
        "ligature_holes": holes,
        "common_bigrams": round(bigram_share, 3),
        "gibberish": gibberish,
    }
    return Quality(round(score, 4), n, worst if score < threshold else None, details)
