"""The textual cues of a textbook's structure: headings, item labels, instructions, numbering.

Everything here is a pure function of one line's text (plus its font cues where noted), so the
structure stage reads as a state machine over lines and these rules can be tested one by one.

Numbering is normalized into *path tokens* so that "Chapter One", "1", "One.I.1.17" and "1.4.17."
compare: arabic digits stay digits ("017" -> "17"), number words become digits ("One" -> "1"),
roman numerals inside a dotted number become "r<n>" ("I.1" -> ["r1", "1"]: a section numbered in
roman is not the chapter numbered in arabic), single letters are lower-cased ("B" -> "b").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WORD_NUMBERS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_ROMAN = re.compile(r"^(?=[IVXLC]+$)(C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})$")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}

_WORDNUM = "|".join(w.capitalize() for w in WORD_NUMBERS)
# one component of a printed number: 12, IV, One, B
_PART = rf"(?:\d{{1,4}}|[IVXLC]{{1,6}}|{_WORDNUM}|[A-Z])"
NUMBER = rf"{_PART}(?:\.(?:\d{{1,4}}|[IVXLC]{{1,6}}|[A-Za-z]))*"

END_MARKS = ("□", "■", "∎", "◻", "QED", "Q.E.D.")

# ---- numbering ---------------------------------------------------------------------------------


def roman_value(s: str) -> int | None:
    if not s or not _ROMAN.match(s):
        return None
    total = 0
    for a, b in zip(s, s[1:] + " ", strict=True):
        v = _ROMAN_VALUES[a]
        total += -v if b != " " and _ROMAN_VALUES.get(b, 0) > v else v
    return total


def number_tokens(printed: str, chapter_level: bool = False) -> list[str]:
    """Path tokens of a printed number: "One.I.1.17" -> ["1", "r1", "1", "17"]."""
    parts = [p for p in printed.strip().rstrip(".").split(".") if p]
    out = []
    for i, p in enumerate(parts):
        if p.isdigit():
            out.append(str(int(p)))
        elif p.lower() in WORD_NUMBERS:
            out.append(WORD_NUMBERS[p.lower()])
        elif (r := roman_value(p)) is not None and (len(p) > 1 or p in "IVX"):
            # a lone roman numeral as a chapter number is just the chapter's number
            out.append(str(r) if chapter_level and i == 0 else f"r{r}")
        else:
            out.append(p.lower())
    return out


def merge_path(context: list[str], tokens: list[str]) -> list[str]:
    """Place a (possibly partial) number under its context.

    A dotted number usually repeats the end of its context ("1.4" under chapter 1, "1.17" under
    subsection I.1, "One.I.1.17" under One.I.1): overlap them. Otherwise a dotted number that
    starts like the context is absolute ("2.1" under 2.1); a single number is a child.
    """
    if not context:
        return list(tokens)
    if len(tokens) >= 2:
        ctx = [t.removeprefix("app-") for t in context]  # "A.1" under "Appendix A" (app-a)
        for k in range(min(len(context), len(tokens) - 1), 0, -1):
            if ctx[-k:] == tokens[:k]:
                return context + tokens[k:]  # the overlap in the context's spelling
        if tokens[0] == ctx[0]:
            return [context[0], *tokens[1:]]
    return context + tokens


def printed_path(tokens: list[str]) -> str:
    return ".".join(t[1:] if t.startswith("r") and t[1:].isdigit() else t for t in tokens)


# ---- headings ------------------------------------------------------------------------------------
_KEYWORD_HEADING = re.compile(
    rf"^(?P<kw>Chapter|CHAPTER|Part|PART|Appendix|APPENDIX|Lecture|LECTURE|Unit|UNIT|Lesson|LESSON|"
    rf"Section|SECTION|Subsection|SUBSECTION|Topic|TOPIC)\b\s*:?\s*(?P<num>{NUMBER})?\s*"
    rf"(?:[.:·—–-]\s*)?(?P<title>.*)$"
)
# the title starts with a capital of any script ("Équations séparables"): checked in parse_heading
_NUMBERED_HEADING = re.compile(rf"^(?P<num>{NUMBER})(?:\s*[.:·—–]\s*|\s+)(?P<title>(?:[^\W\d_]|[“\"']).{{0,110}})$")
_BARE_NUMBER = re.compile(r"^(?P<num>\d{1,2}|[A-Z])\.?$")
_LECTURE = re.compile(r"^(?P<num>\d{1,3})\.\s+(?P<title>(?:Lecture|Week|Day)\s+\d+)$")

_EXERCISE_ZONE = re.compile(
    r"^(?:(?:Additional|Review|Supplementary|Practice|Chapter|Section|Selected|Programming|Reading|"
    r"Review|Further|More)\s+)?(?:Exercises|Exercise\s+Set|Problems|Problem\s+Set|Homework|Questions|"
    r"Multiple\s+Choice|Long\s+Answers?|Short\s+Answers?|True\s+or\s+False|Quiz|Self-Test|"
    r"Exercices|Problèmes|Übungen|Aufgaben|Ejercicios|Problemas|Esercizi|Упражнения|Задачи)\b",
    re.IGNORECASE,
)
# answer-key headings in en / fr / de / es / pt / it (and ru): "Solutions à des exercices choisis",
# "Lösungen zu ausgewählten Aufgaben", "Respuestas a ejercicios seleccionados", "Soluções dos exercícios"
_KEY_WORD = (r"hints?|answers?|solutions?|réponses|corrigés?|indications|lösungen|hinweise|antworten|soluciones|"
             r"respuestas|soluções|respostas|soluzioni|risposte|suggerimenti|ответы|решения")
_ANSWER_ZONE = re.compile(
    rf"^(?:(?:{_KEY_WORD})"
    rf"(?:\s+(?:and|&|et|und|y|e)\s+(?:{_KEY_WORD}))*"
    r"(?:\s+(?:to|for|of|à|aux|des|de|du|d’|d'|zu|zur|zum|für|der|a|para|dos|das|degli|agli|ai|alle|dei|delle)"
    r"(?=[\s’'])\W*.*|\s+key)?|answer\s+key|key\s+to\s+.*)$",
    re.IGNORECASE,
)
_ANSWER_TARGET = re.compile(
    r"exercises|problems|questions|selected|odd|even|book|text|chapter|section|key|"
    r"exercices|problèmes|choisis|sélectionnés|impairs|chapitre|aufgaben|übungen|ausgewählte|ungerade|kapitel|"
    r"ejercicios|problemas|seleccionados|impares|capítulo|exercícios|selecionados|esercizi|problemi|selezionati|"
    r"dispari|capitolo",
    re.IGNORECASE)
# what may follow a zone word: a set number ("Exercises I.", "Problems 2.3") and a parenthetical
# cross-reference ("(See p. 252 for Answers.)")
_ZONE_TAIL = re.compile(rf"^\s*(?:{NUMBER})?\.?\s*(?:\(.{{0,100}})?$")  # the parenthetical may wrap
# or a numbered set, then a sentence on the same line ("Exercises VII. You can now try the following.")
_ZONE_SET_SENTENCE = re.compile(rf"^\s+(?:{NUMBER})\.\s+[A-Z][^.]{{0,100}}[.:](?:\s*\(.{{0,100}})?$")
_BACK_MATTER = re.compile(
    r"^(?:Index|Bibliography|References?(?:\s+and\s+.*)?|Glossary|Notation|List of Symbols|"
    r"GNU Free Documentation License|License|Copyright|Acknowledge?ments|Preface|Foreword|"
    r"(?:Table of )?Contents|About the Authors?|Colophon|Further Reading|Suggested Readings?)\b",
    re.IGNORECASE,
)


@dataclass
class Heading:
    kind: str  # "chapter" | "section" | "named" | "title"
    tokens: list[str]  # numbering (path tokens), empty for unnumbered headings
    number: str | None  # as printed
    title: str
    zone: str | None  # "exercises" | "answers" | "other" when the heading opens such a zone
    bare: bool = False  # a number alone ("2" in large type above a chapter title)


def zone_of(title: str) -> str | None:
    """The zone a heading opens: "exercises", "answers" (a key), "other" (back matter), or None.
    "Solution:" or "Hint." is an item's answer marker, not a heading; a book title that starts
    with "Problems" is a title."""
    raw = title.strip()
    if KEY_PREFIX.match(raw) and raw.endswith((":", ".")) and len(raw.split()) <= 2:
        return None  # "Solution:", "Hint." open an item's answer
    title = raw.strip(":.").strip()
    if _BACK_MATTER.match(title):
        return "other"
    if _ANSWER_ZONE.match(title) and (len(title.split()) <= 2 or _ANSWER_TARGET.search(title)):
        return "answers"
    m = _EXERCISE_ZONE.match(title)
    if m and (len(title[m.end():].split()) <= 3 or title[m.end():].lstrip().startswith(":")
              or _ZONE_TAIL.match(raw[m.end():]) or _ZONE_SET_SENTENCE.match(raw[m.end():])):
        return "exercises"  # "Exercises", "Exercises for Section 2.3", "Additional Exercises: Codes"
    return None


_HEADING_WORD = re.compile(
    r"^(?:Chapter|CHAPTER|Part|PART|Appendix|APPENDIX|Lecture|LECTURE|Unit|UNIT|Lesson|LESSON|Section|SECTION|"
    r"Subsection|SUBSECTION|Topic|TOPIC|\d+\.\s+(?:Lecture|Week|Day)|(?:\d+(?:\.\d+)*\s*[·.:—–-]?\s*)?"
    r"(?:(?:Additional|Review|Supplementary|Practice|Chapter|Section|Selected|Programming|Reading|Further|More)\s+)?"
    r"(?:Exercises|EXERCISES|Exercise Set|Problems|PROBLEMS|Problem Set|Homework|Questions|Multiple Choice|"
    r"Long [Aa]nswers?|Short [Aa]nswers?)|Answers?|ANSWERS?|"
    r"Solutions?|SOLUTIONS?|Hints?|HINTS?|Key|Exercices|Problèmes|Übungen|Aufgaben|Ejercicios|Problemas|Esercizi|"
    r"Упражнения|Задачи|Réponses|Corrigés?|Indications|Lösungen|Hinweise|Antworten|Soluciones|Respuestas|Soluções|"
    r"Respostas|Soluzioni|Risposte|Ответы|Решения)\b"
)


_STRUCTURAL_START = re.compile(
    rf"^(?:[\d(✓✔*†‡?•]|[IVX]{{1,5}}\.|[A-H]\.\d|[A-Z]\s?\d{{1,3}}[.:)]?\s|(?:{_WORDNUM})\.|Exercise|EXERCISE|Problem|PROBLEM|Question|Ex\.|Prob\.|"
    r"Exercice|Problème|Aufgabe|Übung|Ejercicio|Problema|Esercizio|Упражнение|Задача|"
    r"Example|EXAMPLE|Worked|In\s|IN\s|For\s|Use\s|Using\s|Programming|Reading|Review|Additional|Supplementary|"
    r"Practice|Selected|Further|More|Homework)"
)


def could_be_structural(text: str) -> bool:
    """Cheap test for a line in body type inside an open item: could it be a label, a heading or
    an instruction? Nearly all lines are plain continuation text and skip the full rules."""
    return bool(_STRUCTURAL_START.match(text) or _HEADING_WORD.match(text))


def maybe_heading(text: str) -> bool:
    """Cheap test: could a line in body type (no font cue) be a heading at all?"""
    return bool(_HEADING_WORD.match(text))


def parse_heading(text: str, big: bool, bold: bool = False) -> Heading | None:
    """A heading line, or None. Keyword headings ("Chapter 2", "Topic: Fields") and zone
    headings ("Exercises") need bold or large type unless they carry a number; numbered
    headings without a keyword ("2.1 Limits") and plain titles need large type: in body type
    "2.1 Limits" is more likely an exercise, an equation or a numbered theorem."""
    text = text.strip()
    if not text or len(text) > 130:
        return None
    cue = big or bold
    m = _KEYWORD_HEADING.match(text)
    if m and not cue and (len(m.group("title").split()) > 8 or text.endswith((",", ";"))):
        m = None  # "Chapter 3 shows that ..." is a sentence
    if m:
        kw = m.group("kw").lower()
        title, num = m.group("title").strip(), m.group("num")
        if kw == "topic":
            if not cue:
                return None  # a running header "Topic: Fields 139"
            name = (num + " " + title if num else title).strip()
            return Heading("named", ["t:" + _slug(name)], None, name, zone_of(name))
        if num or cue:
            kind = "chapter" if kw in ("chapter", "part", "appendix", "lecture", "unit", "lesson") else "section"
            toks = number_tokens(num, chapter_level=kind == "chapter") if num else []
            if kw == "appendix" and toks:
                toks = ["app-" + toks[0]]
            return Heading(kind, toks, num, title, zone_of(title) or ("other" if kw == "appendix" else None))
    m = _LECTURE.match(text)
    if m:
        return Heading("chapter", [str(int(m.group("num")))], m.group("num"), m.group("title"), None)
    zone = zone_of(text)
    if zone == "exercises":  # "Exercises", "Exercises 2.1", "1.4 Exercises", "2.4 · Exercises"
        num = _zone_number(text)
        return Heading("section", number_tokens(num) if num else [], num, text, zone)
    if zone and (cue or (zone == "answers" and len(text.split()) <= 6 and text[:1].isupper()
                         and not text.endswith((".", ",", ";")))):
        return Heading("title", [], None, text, zone)  # "Answers to Exercises" is distinctive enough
    if not big:
        return None
    m = _NUMBERED_HEADING.match(text)
    if m and not (m.group("title")[:1].isupper() or m.group("title")[:1] in "“\"'"):
        m = None  # "2 x + 3" or "3 is prime": a number and lower-case text
    if m and len(m.group("num")) == 1 and m.group("num") not in "IVX123456789":
        m = None  # "A Short Note on Proofs": an article, not section A
    if m and not text.endswith((",", ";")) and len(m.group("title").split()) <= 14:
        num, title = m.group("num"), m.group("title").strip()
        return Heading("section", number_tokens(num), num, title, zone_of(title))
    m = _BARE_NUMBER.match(text)
    if m:
        return Heading("chapter", number_tokens(m.group("num"), chapter_level=True), m.group("num"), "", None, bare=True)
    if len(text.split()) <= 12 and not text.endswith((".", ",", ";", ":")):
        return Heading("title", [], None, text, zone)
    return None


def _zone_number(text: str) -> str | None:
    m = re.match(rf"^({NUMBER})\s*[·.:—–-]?\s+\D", text)
    if m and any(c.isdigit() for c in m.group(1)):
        return m.group(1)
    m = _EXERCISE_ZONE.match(text)
    if m and (t := _ZONE_TAIL.match(text[m.end():]) or _ZONE_SET_SENTENCE.match(text[m.end():])) and (
            n := re.match(rf"\s*({NUMBER})", t.group(0))):
        return n.group(1)  # "Exercises IV. (See p. 252 for Answers.)": set IV
    m = re.search(r"(\d+(?:\.\d+)+|\d+)\s*$", text)
    return m.group(1) if m else None


def _slug(text: str) -> str:
    """Letters and digits only: small capitals extract as "C omputer", plain type as "Computer"."""
    return re.sub(r"[^a-z0-9]+", "", text.lower())


_CAPTION = re.compile(r"^(?:Figure|Fig\.|Table|Chart|Diagram|Graph)\s", re.IGNORECASE)
def is_caption(text: str) -> bool:
    """A figure's or table's caption ("Figure 53: A force is applied ...")."""
    return bool(_CAPTION.match(text.strip()))


_MINOR_WORDS = frozenset("a an and as at by for from in into of on or the to with vs".split())


def is_title_line(text: str, big: bool) -> bool:
    """Does a line in bold or large type read as a heading ("The Logarithmic Curve.",
    "SIMPLE INTEGRATIONS", "Computer Code") rather than as part of an item (a bold "Hint." or
    "Solution:", a caption, a formula, a bold word opening a sentence)? In large type any short
    capitalized line of words qualifies; in bold (body size) it must be in title case, since a
    line whose first word is bold ("Note that ...") is a sentence."""
    t = text.strip()
    words = t.split()
    if not words or len(words) > 10 or len(t) > 80 or not t[:1].isupper() or t.endswith((",", ";", ":", "-")):
        return False
    if ANSWER_MARKER.match(t) or KEY_PREFIX.match(t) or _CAPTION.match(t):
        return False
    chars = [c for c in t if not c.isspace()]
    if sum(c.isalpha() for c in chars) < max(3, 0.8 * len(chars)):
        return False  # a formula, a numbered list or a figure's labels
    if t.endswith(".") and len(words) > 6:
        return False  # a sentence
    if big:
        return True
    content = [w for w in words if w.strip(".,;:!?()'’").lower() not in _MINOR_WORDS]
    return bool(content) and all(w[:1].isupper() for w in content)


_NUMBERED_BLOCK = re.compile(r"^[^\W\d_]{3,}(?:\s[^\W\d_]{3,})?\s+\d{1,3}(?:\.\d{1,3})*(?!\.?\d)\s*(?:[.:(](?!\d)|$)")


def opens_numbered_block(text: str) -> bool:
    """A bold line that opens a numbered block in any language ("Exemple 1.6.3 : Résolvons",
    "Théorème 2.2.2 (La formule d'Euler).", "Lemma 4."): the item before it has ended. A
    reference inside a sentence ("Theorem 2.7 implies ...") has no mark after the number."""
    t = text.strip()
    return bool(_NUMBERED_BLOCK.match(t)) and not (ANSWER_MARKER.match(t) or KEY_PREFIX.match(t) or _CAPTION.match(t))


# a licence or legal notice opening in any type (Project Gutenberg's is set in small body type):
# its own wording says so, on a short line of its own
_LEGAL_BLOCK = re.compile(
    r"^\W*(?:\*{3}\s*)?(?:END\s+OF\s+(?:THE\s+|THIS\s+)?PROJECT\s+GUTENBERG|End\s+of\s+(?:the\s+)?Project\s+Gutenberg|"
    r"(?:START:?\s+)?(?:THE\s+)?FULL\s+(?:PROJECT\s+GUTENBERG\s+)?LICEN[CS]E|"
    r"(?i:GNU\s+(?:Free\s+Documentation|General\s+Public)\s+Licen[cs]e|Creative\s+Commons\s+Legal\s+Code)\W*$)"
)


def opens_legal_block(text: str) -> bool:
    """A line that opens a licence or legal notice ("*** END OF THIS PROJECT GUTENBERG EBOOK
    ... ***", "*** START: FULL LICENSE ***", a title line "GNU Free Documentation License",
    "Creative Commons Legal Code"): what follows is no exercise or answer, whatever its numbering ("1.A.")."""
    t = text.strip()
    return len(t.split()) <= 14 and bool(_LEGAL_BLOCK.match(t)) and not t.endswith((",", ";"))


# ---- item labels ------------------------------------------------------------------------------------
@dataclass
class Label:
    printed: str  # the label as printed: "Exercise 3.", "✓1.17", "One.I.1.17", "12."
    number: str  # the number inside it: "3", "1.17", "One.I.1.17", "12"
    kind: str  # "exercise" | "example" | "answer-key" | "number"
    rest: str  # the line's text after the label
    keyword: bool  # introduced by a word ("Exercise", "Problem", "Example")


_KEYWORD_LABEL = re.compile(
    r"^(?P<kw>Exercise|EXERCISE|Problem|PROBLEM|Question|Ex\.|Prob\.|Exercice|Problème|Aufgabe|Übung|Ejercicio|"
    r"Problema|Esercizio|Упражнение|Задача)\s+(?P<num>(?:\d+|[A-Z])(?:\.\d+)*[a-z]?)"
    r"(?P<punct>\s*[.:](?!\d)\s*|\s+|$)"
)
_EXAMPLE_LABEL = re.compile(
    r"^(?P<kw>Example|EXAMPLE|Worked Example)\s+(?P<num>\d+(?:\.\d+)*)(?P<punct>\s*[.:](?!\d)\s*|\s+|$)"
)
_REFERENCE_TAIL = re.compile(r"^(?:[a-z,;)]|and\b|or\b)")  # "Exercise 19 checks ...", "Example 2.2)"
_KEY_LABEL = re.compile(
    rf"^(?P<num>(?:\d{{1,3}}|{_WORDNUM}|[IVX]{{1,5}}|[A-H])(?:\.(?:\d{{1,3}}|[IVX]{{1,5}})){{1,4}})[.:]?(?:\s+|$)"
)
_NUMBER_LABEL = re.compile(
    r"^(?P<mark>(?:[✓✔*†‡?•]\s*)+)?(?:(?P<paren>\()(?P<pnum>\d{1,4})\)|(?P<num>\d{1,4}(?:\.\d{1,3})*)(?P<punct>[.)])?)"
    r"(?P<cite>\s*\[[^\]]{1,40}\])?(?:\s+|$|(?<=[.)])(?=[A-Z\u20d0-\u20ff]))"  # "12.Compute", "18.⃗a": tight
)
# "T 5 Show that ...", "E3. Find ...": a one-letter prefix before the number (a workbook's task or
# exercise series); outside a key the text after it must open a sentence ("A 2 by 2 matrix" is no label)
_PREFIX_LABEL = re.compile(r"^(?P<pre>[A-Z])\s?(?P<num>\d{1,3})(?P<punct>[.:)])?\s+(?=\S)")
_FOLLOW_BARE = re.compile(r"^[A-Z(\[“\"'$\\]")  # a bare "3 Use ..." label must be followed by a word
_INLINE_KEY = re.compile(r"(?<=\s)(\d{1,3})[.)]\s+(?=\S)")


def _keyword_ok(m: re.Match, text: str, bold: bool) -> bool:
    """A keyword label, not a cross-reference that a line break put at the start of a line."""
    rest = text[m.end():]
    return bold or "." in m.group("punct") or ":" in m.group("punct") or not _REFERENCE_TAIL.match(rest)


def parse_label(text: str, zone: str, bold: bool = False) -> Label | None:
    """An item label at the start of a line, read by the rules of its zone."""
    m = _KEYWORD_LABEL.match(text)
    if m and _keyword_ok(m, text, bold):
        kind = "answer-key" if zone == "answers" else "exercise"
        return Label(m.group(0).strip(), m.group("num"), kind, text[m.end():].strip(), True)
    if zone not in ("answers", "exercises"):  # worked examples live in the body; in an exercise
        m = _EXAMPLE_LABEL.match(text)       # list "Example 2.2" is a cross-reference
        if m and _keyword_ok(m, text, bold):
            return Label(m.group(0).strip(), m.group("num"), "example", text[m.end():].strip(), True)
    if zone == "answers":
        m = _KEY_LABEL.match(text)
        if m:
            return Label(m.group(0).strip(), m.group("num").rstrip("."), "answer-key", text[m.end():].strip(), False)
    if zone not in ("exercises", "answers"):
        return None
    m = _NUMBER_LABEL.match(text)
    if not m:
        p = _PREFIX_LABEL.match(text)
        if p and (p.group("punct") or bold or " " in p.group(0).strip()) and (
                zone == "answers" or _FOLLOW_BARE.match(text[p.end():])):
            return Label(p.group(0).strip(), p.group("num"), "number", text[p.end():].strip(), False)
        return None
    num = m.group("pnum") or m.group("num")
    rest = text[m.end():].strip()
    bare = not (m.group("paren") or m.group("punct"))
    sure = m.group("mark") or m.group("cite") or bold  # "✓1.17", "3.38 [Strang 80]", a bold number
    if bare and not (rest and _FOLLOW_BARE.match(rest)) and not sure:
        return None  # "2 x + 3" is an equation, "3 Use the ..." a label
    if bare and "." not in num and not rest and not bold:
        return None
    return Label(m.group(0).strip(), num, "number", rest, False)


def key_number(text: str) -> str | None:
    """The dotted number a line starts with when it reads like an answer-key entry ("1.2.101:",
    "One.I.1.17", "3.4.7."), else None: for the alignment cue, whatever the zone's language."""
    m = _KEY_LABEL.match(text)
    return m.group("num").rstrip(".") if m else None


def split_inline_keys(rest: str, first: int) -> list[tuple[str, str]]:
    """More answers on the same line of a key ("1. 42   3. 17   5. x = 2"): [(number, text)].
    Only numbers that continue the sequence by 1 or 2 split, so "t = 6. (b)" stays whole."""
    out, last, start, number = [], first, 0, str(first)
    for m in _INLINE_KEY.finditer(rest):
        n = int(m.group(1))
        if n in (last + 1, last + 2):
            out.append((number, rest[start : m.start()].strip()))
            number, last, start = m.group(1), n, m.end()
    out.append((number, rest[start:].strip()))
    return out


# ---- instructions, answer markers, end marks ----------------------------------------------------------
_INSTRUCTION_RANGE = re.compile(
    r"^(?:(?:In|For|Use|Using)\s+(?:the\s+)?)?(?:Exercises|Problems|Questions)\s+(?P<lo>\d{1,3})\s*(?:-|–|—|to|through)\s*"
    r"(?P<hi>\d{1,3})\b",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(
    r"^(?:Find|Compute|Evaluate|Solve|Simplify|Determine|Prove|Show|Use|Calculate|Sketch|Graph|Write|"
    r"Express|Factor|Expand|Differentiate|Integrate|Decide|Verify|Check|Give|State|Explain|Let|"
    r"Each|For each|In each|Answer|Identify|Classify|Convert|Estimate|Approximate)\b"
)
ANSWER_MARKER = re.compile(
    r"^(?:Solution|SOLUTION|Answer|ANSWER|Answers|Ans\.?|Sol\.?|Réponse|Lösung|Antwort|Solución|Respuesta|Soluzione|"
    r"Risposta|Решение|Ответ)\b\s*(?:\d+(?:\.\d+)*)?\s*[.:)]?\s*"
)
KEY_PREFIX = re.compile(r"^(?:Hint|Answer|Solution|Ans|Sol)\b\s*[.:)]?\s*", re.IGNORECASE)


def instruction_range(text: str) -> tuple[int, int] | None:
    m = _INSTRUCTION_RANGE.match(text.strip())
    if not m:
        return None
    lo, hi = int(m.group("lo")), int(m.group("hi"))
    return (lo, hi) if lo <= hi else None


def looks_like_instruction(text: str) -> bool:
    return bool(_IMPERATIVE.match(text.strip())) and len(text) <= 400


def strip_end_mark(text: str) -> tuple[str, bool]:
    """("text", True) when the line ends an item with a QED box."""
    t = text.rstrip()
    if not t or t[-1] not in "□■∎◻D.":  # the last characters of END_MARKS: most lines stop here
        return text, False
    for mark in END_MARKS:
        if t.endswith(mark):
            return t[: -len(mark)].rstrip(), True
    return text, False


# ---- page kinds ---------------------------------------------------------------------------------------
_DOT_LEADER = re.compile(r"(?:\.\s*){4,}\s*\d+\s*$|\s\d{1,4}$")
_MATH_SIGNAL = re.compile(r"[0-9=+×÷^∑∫√≤≥≠∈∪∩→λπθαβγΔ∞±<>/%]")


_LEADER_DOTS = re.compile(r"(?:\.\s*){6,}")


def is_contents_page(lines: list[str]) -> bool:
    """A table of contents: titled "Contents" with page references, or mostly dot leaders."""
    if not lines:
        return False
    if "contents" in " ".join(lines[:3]).lower():
        return sum(1 for t in lines if _DOT_LEADER.search(t)) >= 0.3 * len(lines)
    if len(lines) < 8:
        return False
    dotted = sum(1 for t in lines if t.count(".") >= 6 and _LEADER_DOTS.search(t))
    return dotted >= 0.4 * len(lines)


def has_stem_signal(text: str) -> bool:
    """Digits or math symbols at a rate running STEM text has (prose-only pages have none)."""
    return len(_MATH_SIGNAL.findall(text)) >= max(3, len(text) // 400)
