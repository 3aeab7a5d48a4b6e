"""Text-layer repair: glyphs whose code points do not say what the page shows, found and mapped back.

A font whose ToUnicode map is wrong or missing still draws the right glyphs; only the code points
lie. The evidence (`suspects`), each a span of a line that cannot be what a reader sees:
- U+FFFD (a glyph nothing could map) anywhere;
- a glyph with no Unicode (MuPDF then gives its raw code: a control character) or a private-use
  code point *inside* a word or a number ("Exercise \\x14.\\x16"), where TeX's delimiter pieces
  never sit;
- letters of another script in text of the page's main script: digits set as Coptic or Cyrillic
  letters ("ϭ.ϯ" for 1.3), math italics as Hangul syllables ("푦′ = 푓(푥)");
- a Latin Extended-B / IPA letter in a lower-case word: a ligature glyph ("AnalyƟcally");
- a word mixing letters with Latin-1 symbols ("SÊ½çã®ÊÄ"), or made of Latin-1 letters only
  ("´ÐÍÖÕÊÐÏÔ"): a heading font with a shifted map.
`learn` reads a few sample pages of the document twice, from the text layer and from Tesseract
(character boxes from both), and votes, per suspect code point, for the OCR text drawn in its
box; a code point whose votes agree becomes a substitution, once per document. `repair` applies
the substitutions at suspect positions only (a French "ç" elsewhere stays); a page with suspects
that no substitution covers goes to OCR instead (the parse stage decides), never through silently.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .parse_quality import ascii_letters, script_of

_CTRL = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ue000-\uf8ff"
# numeric positions: "X.X" (section and exercise numbers), a line that is only glyphs (a page number)
_NUMERIC = re.compile(rf"[{_CTRL}]+(?:[.,][{_CTRL}]+)+|(?<=[A-Za-z] )[{_CTRL}]{{1,3}}\.(?=[{_CTRL}\s])")
_PAGE_NUMBER = re.compile(rf"\A\s*([{_CTRL}]{{2,4}})\s*$|^\s*([{_CTRL}]{{2,4}})\s*\Z", re.M)
_CTRL_RUN = re.compile(rf"(?<![^\s(\[])[{_CTRL}]{{1,6}}(?=[\s.,:;)\]])")
_FFFD = re.compile("\ufffd+")
_LATIN1_SYMBOL = re.compile(r"[\u00a2-\u00a9\u00ab\u00ad-\u00af\u00b2-\u00b4\u00b6\u00b8-\u00bf]")  # not µ · ° ± ¬
# scripts a Latin-script book does not set its words in (symbols named OHM, ANGSTROM... are not scripts)
_SCRIPTS = frozenset("CYRILLIC COPTIC HANGUL CJK HIRAGANA KATAKANA ARMENIAN GEORGIAN HEBREW ARABIC THAI "
                     "DEVANAGARI BENGALI TAMIL ETHIOPIC CHEROKEE RUNIC OGHAM YI TIBETAN MONGOLIAN".split())
_LOWER_WORD = re.compile(r"[a-z]{2,}")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_ASCII_LETTER = re.compile(r"[A-Za-z]")
# the words that hold a non-ASCII character: an ASCII word is never evidence (no other script,
# no ligature or Latin-1 glyph), and skipping those is most of the work saved on a clean page
_NON_ASCII_WORD = re.compile(r"(?<!\S)(?=\S*[^\s\x00-\x7f])\S+")  # from word starts only: linear
_HAS_CTRL = re.compile(f"[{_CTRL}]")  # what the numeric-position patterns below look for
_SCRIPT_RANGE = re.compile("[\u03e2-\U0010ffff]")  # the lowest letter of a `_SCRIPTS` script is U+03E2 (Coptic)
_LATIN1_RANGE = re.compile("[\u00a0-\u00ff]")
_LIGATURE = re.compile("[\u0180-\u02af]")  # `_ligature_glyph`, as one search per word
# 3+ Latin-1 letters and symbols only (not the math signs × ÷ ± · µ ° ¬)
_LATIN1_ONLY = re.compile("[" + "".join(re.escape(chr(c)) for c in range(0xA1, 0x100) if chr(c) not in "×÷±·µ°¬") + "]{3,}")
MAX_SAMPLE_PAGES = 3  # pages OCR'd per document to learn its substitutions
MIN_VOTES, MIN_SHARE = 2, 0.7


@lru_cache(maxsize=1 << 14)
def _foreign(ch: str, main: str) -> bool:
    s = script_of(ch)
    return s in _SCRIPTS and s != main


def _ligature_glyph(ch: str) -> bool:
    return "\u0180" <= ch <= "\u02af"  # Latin Extended-B and IPA: no English or French word uses them


def main_script(text: str) -> str:
    # ASCII letters are all LATIN: counted in C; only the distinct other letters are looked up,
    # and scripts keep the order of their first letter (a tie goes to the script seen first)
    head = text[:6000]
    first: dict[str, int] = {}
    counts: Counter[str] = Counter()
    for c, n in Counter(_NON_ASCII.findall(head)).items():
        if c.isalpha():
            s = script_of(c)
            counts[s] += n
            at = head.find(c)
            first[s] = min(first.get(s, at), at)
    if (latin := _ASCII_LETTER.search(head)) is not None:
        counts["LATIN"] += ascii_letters(head)
        first["LATIN"] = min(first.get("LATIN", latin.start()), latin.start())
    counts.pop("", None)
    if not counts:
        return "LATIN"
    best = max(counts.values())
    return min((s for s, n in counts.items() if n == best), key=first.__getitem__)


# every suspect is one of these: a page without any (nearly all pages) is done with one C-level search.
# Not the no-break space and the math signs × ÷ ± · µ ° ¬: no rule finds one suspect without
# another Latin-1 glyph in its word (a page of "3 · 4" and "90°" is a clean page)
_CANDIDATE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xa1-\xab\xad-\xaf\xb2-\xb4\xb6\xb8-\xd6\xd8-\xf6"
                        "\xf8-\xff\u0180-\u02af\u03e2-\u03ef\u0400-\u1fff\u2c00-\u2dff\u3000-\ud7ff\ue000-\uf8ff\ufffd]")


def has_candidates(text: str) -> bool:
    return _CANDIDATE.search(text) is not None


def suspects(text: str, main: str = "LATIN") -> list[tuple[int, int]]:
    """Spans (start, end) of `text` whose code points are evidence of a remapped or unmapped font."""
    if not _CANDIDATE.search(text):
        return []
    spans = [m.span() for m in _FFFD.finditer(text)]
    if _HAS_CTRL.search(text):  # raw codes or private-use glyphs: are they where numbers go?
        spans += [m.span() for m in _NUMERIC.finditer(text)]
        spans += [m.span(g) for m in _PAGE_NUMBER.finditer(text) for g in (1, 2)
                  if m.group(g) and not (len(m.group(g)) > 2 and len(set(m.group(g))) == 1)]  # not |||| bars
        if main == "LATIN" and not any(map(text.__contains__, "0123456789")):
            runs = [m.span() for m in _CTRL_RUN.finditer(text)]
            if len(runs) >= 3:  # a page of text without one digit, but with glyph runs where numbers go
                spans += runs
    for m in _NON_ASCII_WORD.finditer(text):
        if offsets := _word_suspects(m.group(), main):
            at = m.start()
            spans += [(at + i, at + i + 1) for i in offsets]
    # one span per suspect glyph; the ASCII punctuation a pattern matched around them is no suspect
    return sorted({(i, i + 1) for a, b in spans for i in range(a, b) if not " " <= text[i] <= "~"})


@lru_cache(maxsize=1 << 16)
def _word_suspects(w: str, main: str) -> tuple[int, ...]:
    """Offsets of the suspect glyphs of one word that holds a non-ASCII character: a function of
    the word and the main script alone, so cached (a book repeats its words, numbers and symbols;
    on a remapped-font page nearly every number is such a word)."""
    out: list[int] = []
    foreign = [i for i, c in enumerate(w) if c >= "\u03e2" and _foreign(c, main)] if _SCRIPT_RANGE.search(w) else None
    if foreign and ((alpha := sum(map(str.isalpha, w))) > len(foreign) or len(w) <= 3 or main == "LATIN"):
        # a lone foreign letter, or letters of two scripts in one word (a real foreign word
        # in a Latin text is rare and long: 4+ letters of its own script, left alone)
        if not (main == "LATIN" and len(foreign) >= 4 and len(foreign) == alpha):
            out += foreign
    if main == "LATIN" and _LIGATURE.search(w) and _LOWER_WORD.search(w):
        # in a word of lower-case letters: where "ti", "ft", "fi" glyphs sit ("AnalyƟcally", "Ɵme")
        out += [i for i, c in enumerate(w) if _ligature_glyph(c)]
    if not _LATIN1_RANGE.search(w):
        return tuple(out)
    core = w.strip(".,:;!?()[]\"'")
    if _LATIN1_ONLY.fullmatch(core):
        # a word of Latin-1 letters and symbols only: no Western language spells one
        out += [i for i, c in enumerate(w) if "\u00a1" <= c <= "\u00ff"]
    elif _LATIN1_SYMBOL.search(w[1:-1]) and sum(c.isalpha() for c in w) >= 2:
        inner = [i for i, c in enumerate(w) if "\u00a0" <= c <= "\u00ff"]
        if len(inner) >= 2:
            out += inner
    return tuple(out)


def suspect_chars(text: str, main: str = "LATIN") -> Counter[str]:
    return Counter(text[a] for a, _ in suspects(text, main))  # spans are one glyph each


@dataclass
class Repairs:
    """A document's learned substitutions, and what they were learned from."""
    table: dict[str, str] = field(default_factory=dict)
    pages: list[int] = field(default_factory=list)  # the sample pages OCR'd
    votes: dict[str, dict[str, int]] = field(default_factory=dict)


def repair(text: str, table: dict[str, str], main: str = "LATIN", page_chars: frozenset[str] = frozenset()
           ) -> tuple[str, int, int]:
    """(text with substitutions at suspect positions, substitutions made, suspects left).
    `page_chars`: code points found suspect elsewhere on the page (the whole page is the context:
    a page number, a digit-free page); those that are no letters of the main script are replaced
    wherever they occur, letters of the main script only inside words found suspect here."""
    at = [a for a, _ in suspects(text, main)]  # one glyph per span
    if page_chars and (anywhere := _anywhere(page_chars, main)) is not None:
        at = {*at, *(m.start() for m in anywhere.finditer(text))}
    if not at:
        return text, 0, 0
    out, done = list(text), 0
    for k in at:
        if (sub := table.get(out[k])) is not None:
            out[k] = sub
            done += 1
    return "".join(out), done, len(at) - done


@lru_cache(maxsize=256)
def _anywhere(page_chars: frozenset[str], main: str) -> re.Pattern | None:
    """The page's suspect code points that `repair` replaces wherever they occur (no letters of
    the main script), as one pattern; compiled once per page, not searched glyph by glyph per line."""
    chars = sorted(c for c in page_chars if script_of(c) != main or _ligature_glyph(c))
    return re.compile("[" + "".join(map(re.escape, chars)) + "]") if chars else None


def _chars(textpage: Any) -> list[tuple[str, tuple[float, float, float, float]]]:
    out = []
    for b in textpage.extractRAWDICT()["blocks"]:
        for ln in b.get("lines", []):
            for sp in ln["spans"]:
                out += [(ch["c"], tuple(ch["bbox"])) for ch in sp["chars"]]
    return out


def _word_glyphs(chars: list[tuple[str, tuple]]) -> list[tuple[str, tuple]]:
    """OCR characters with a word's trailing space given back to its glyphs: Tesseract's PDF
    renderer stretches "1. " over the box of the word "1.", so each glyph's box would lie left of
    the glyph (a gap after the space shows it; MuPDF's own OCR layer puts the space in the gap)."""
    out = list(chars)
    i, n = 0, len(out)
    while i < n:
        j = i
        while j < n and not out[j][0].isspace():
            j += 1
        if i < j < n and (j + 1 == n or out[j + 1][1][0] > out[j][1][2] + 0.5) and out[j][1][0] >= out[j - 1][1][2] - 0.5:
            x0, x1 = out[i][1][0], out[j][1][2]  # the word's box: its glyphs and the space after them
            step = (x1 - x0) / (j - i)
            for k in range(i, j):
                c, (_, y0, _, y1) = out[k]
                out[k] = (c, (x0 + (k - i) * step, y0, x0 + (k - i + 1) * step, y1))
        i = j + 1
    return out


def learn(doc: Any, flags: int, ocr: Any, main: str | None = None) -> Repairs:
    """Substitutions for the document's suspect code points, learned from OCR of a few pages.
    `ocr(page) -> MuPDF text page` (Tesseract, `parse_ocr`). Deterministic: the same sample
    pages whichever page asked first (those with the most distinct suspects, greedily)."""
    per_page: list[tuple[int, Counter[str]]] = []
    texts = []
    for i in range(doc.page_count):
        t = doc[i].get_text(flags=flags)
        texts.append(t)
    main = main or main_script(" ".join(t[:2000] for t in texts[: min(40, len(texts))]))
    for i, t in enumerate(texts):
        c = suspect_chars(t, main)
        if c:
            per_page.append((i, c))
    rep = Repairs()
    need: Counter[str] = Counter()  # occurrences still wanted per suspect code point (MIN_VOTES each)
    for _, c in per_page:
        for ch in c:
            need[ch] = MIN_VOTES + 1
    while per_page and len(rep.pages) < MAX_SAMPLE_PAGES:
        def gain(pc: tuple[int, Counter[str]]) -> tuple[int, int]:
            return sum(min(n, need[ch]) for ch, n in pc[1].items()), -pc[0]
        i, c = max(per_page, key=gain)
        if gain((i, c))[0] == 0:
            break
        rep.pages.append(i + 1)
        for ch, n in c.items():
            need[ch] = max(0, need[ch] - n)
        per_page = [pc for pc in per_page if pc[0] != i]
    votes: dict[str, Counter[str]] = defaultdict(Counter)
    for number in rep.pages:
        page = doc[number - 1]
        text_chars = _chars(page.get_textpage(flags=flags))
        layer = "".join(c for c, _ in text_chars)
        bad = {k for a, b in suspects(layer, main) for k in range(a, b)}
        if not bad:
            continue
        ocr_chars = [(c, bb) for c, bb in _word_glyphs(_chars(ocr(page))) if not c.isspace()]
        for k in sorted(bad):
            c, (x0, y0, x1, y1) = text_chars[k]
            if x1 <= x0 or y1 <= y0:
                continue
            # the OCR characters drawn in this glyph's box, and nearer to it than to its neighbours
            near = [text_chars[j][1] for j in (k - 1, k + 1) if 0 <= j < len(text_chars)]
            mid = (x0 + x1) / 2
            inside = []
            for oc, ob in ocr_chars:
                cx, cy = (ob[0] + ob[2]) / 2, (ob[1] + ob[3]) / 2
                if not (x0 - 1 <= cx <= x1 + 1 and y0 - 1 <= cy <= y1 + 1):
                    continue
                if any(nb[1] <= cy <= nb[3] and abs(cx - (nb[0] + nb[2]) / 2) < abs(cx - mid) for nb in near):
                    continue
                inside.append(oc)
            votes[c]["".join(inside)] += 1
    for c, v in votes.items():
        best, n = v.most_common(1)[0]
        total = sum(v.values())
        rep.votes[c] = dict(v.most_common(4))
        if best and n >= MIN_VOTES and n / total >= MIN_SHARE and not suspects(best, main):
            rep.table[c] = unicodedata.normalize("NFKC", best)
    return rep
