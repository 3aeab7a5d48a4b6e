"""Split exercises in parts: "Describe each set. (a) A ∩ B (b) B ∩ C" answered "(a) {2}; (b) {5}"
becomes two items, "Describe each set.\\n(a) A ∩ B" -> "{2}" and "...(b) B ∩ C" -> "{5}".

Textbooks print most exercises this way, and one answer per part is what the answer checker can
verify. A part is emitted only when the answer labels it; parts the answer skips (keys often
answer some parts) are dropped with the parent's other unanswered parts, not guessed.

Labels are "(a)" or "a)" (one style per text: the one that gives the longer run a, b, c, ...).
A label that only names a part ("Pour b), c), d), calculez", "parts (a) and (b)") is a mention,
not a label. Where the labels at line starts give a run as long as all labels do, only those
count (a mention in running text cannot then cut a part). An answer may open with prose shared
by its parts ("For all of these, ... (a) ... (b) ..."), kept as the parts' `answer_lead`, when
its first label starts a line or a sentence and the prose names no part; an answer that names
parts in prose ("For (a), use induction") is left whole, and the question-type stage tags it
`multi_part`. A split is refused, never shifted, when question and answer do not line up: an
answer label the question lacks, an empty part on either side (a label set apart from its text),
or a question run that jumps a letter (a, b, d: a label lost); such items are tagged
`parts_unaligned`. A part that leans on the parts before it (`leans_on_earlier`) notes them in its
meta `context`; the `part_context` stage puts them into its question once the stages that judge
the part's own text have run."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from rlclimb.pipelines.stage import Record, Stage, StageConfig, StageContext
from rlclimb.schemas.records import QAItem, qa_id

# "(a)": not after a word or a closing bracket ("f(a)", "(x)(a)"); "a)": after a space or at the start
_STYLES = {"paren": re.compile(r"(?<![\w)\]])\(([a-z])\)"), "close": re.compile(r"(?:^|(?<=\s))([a-z])\)")}
_FREE = "abcdefgh"  # letters a label may have anywhere; later ones ("(x)" of "f (x)") only right after the one before
# a label in a list of labels ("(a), (b) and (c)", "b), c), d),") or after "part": it names parts
_LIST_NEXT = re.compile(r"\s*(?:[,;]|(?:and|or|et|ou|&)\s+\(?[a-z]\))")
_LIST_PREV = re.compile(r"(?:[,;]|\b(?:and|or|et|ou|&))\s*$")
_NAMED = re.compile(r"\b(?:parts?|partie|parties|question|questions)\s*$", re.I)
_SENTENCE_END = re.compile(r"(?:[.:;!?]|\n)\s*$")
_TRAILING_JOIN = re.compile(r"(?:\s|[;,]|\band\b|\bor\b|\bet\b|\bou\b)*$")


@dataclass
class _Label:
    letter: str
    start: int
    end: int
    text: str  # "(a)" or "a)"
    line_start: bool
    mention: bool


def _labels(text: str, style: str) -> list[_Label]:
    out: list[_Label] = []
    for m in _STYLES[style].finditer(text):
        before = text[: m.start()]
        line_start = not before.strip() or bool(re.search(r"\n[ \t]*$", before))
        mention = bool(_LIST_NEXT.match(text, m.end()) or _NAMED.search(before))
        if not mention and out and out[-1].mention and _LIST_PREV.search(text[out[-1].end : m.start()]) \
                and not text[out[-1].end : m.start()].strip(" ,;").split()[1:]:
            mention = True  # the last item of a list of mentions: "(a), (b) and (c)"
        out.append(_Label(m.group(1), m.start(), m.end(), m.group(0).strip(), line_start, mention))
    return out


def _run(labels: list[_Label], *, from_start: bool) -> list[_Label]:
    """Question (from_start=False): a, b, c, ... consecutive, from the first "a". Answer: letters
    going up from the first label (keys skip parts, but never go back)."""
    out: list[_Label] = []
    for lab in labels:
        if lab.mention:
            continue
        if not out:
            if from_start and lab.letter in _FREE or lab.letter == "a":
                out.append(lab)
        elif ord(lab.letter) == ord(out[-1].letter) + 1 or from_start and out[-1].letter < lab.letter <= "h":
            out.append(lab)
    return out


def _best_run(text: str, *, from_start: bool) -> tuple[list[_Label], list[_Label]]:
    """(the run, all labels of its style): the style with the longer run (ties: "(a)"); within a
    style, the line-start labels when they give a run as long as all labels do."""
    best: tuple[list[_Label], list[_Label]] = ([], [])
    for style in ("paren", "close"):
        labels = _labels(text, style)
        run = _run(labels, from_start=from_start)
        at_line = _run([lab for lab in labels if lab.line_start], from_start=from_start)
        if len(at_line) >= max(2, len(run)):
            run = at_line
        if len(run) > len(best[0]):
            best = (run, labels)
    return best


def _chunks(text: str, run: list[_Label]) -> dict[str, str]:
    ends = [lab.start for lab in run[1:]] + [len(text)]
    return {lab.letter: _TRAILING_JOIN.sub("", text[lab.end : end]).strip() for lab, end in zip(run, ends, strict=True)}


@dataclass
class Split:
    parts: list[tuple[str, str, str]] = field(default_factory=list)  # (letter, part question, its answer)
    lead: str = ""  # answer prose before the first label, shared by the parts
    refused: str = ""  # why question and answer labels do not line up ("" when they do, or are absent)
    context: dict[str, dict[str, str]] = field(default_factory=dict)  # letter -> {cue, label, earlier_parts}: see leans_on_earlier


def split_exercise(question: str, answer: str) -> Split:
    q_run, q_all = _best_run(question, from_start=False)
    if len(q_run) < 2:
        return Split()
    a_run, a_all = _best_run(answer, from_start=True)
    if not a_run:
        return Split()
    lead = answer[: a_run[0].start].strip()
    if lead:
        # prose before the first label: shared prose, unless it names parts itself or the label runs on in it
        every = _labels(answer, "paren") + _labels(answer, "close")
        if any(lab.start < a_run[0].start for lab in every) or not _SENTENCE_END.search(answer[: a_run[0].start]):
            return Split()
        if len(a_run) < 2:
            return Split()  # one label after prose: too weak a cue that the answer goes part by part
    stem = question[: q_run[0].start].strip()  # may be empty: "(a) Prove X. (b) Prove Y." parts stand alone
    letters = [lab.letter for lab in q_run]
    if not {lab.letter for lab in a_run} <= set(letters):
        return Split(refused="the answer labels a part the question does not have")
    for lab in q_all:  # a label of the question's style that jumps the run, set as labels are: one was lost
        if not lab.mention and lab.start > q_run[0].start and letters[-1] < lab.letter <= "h" \
                and (lab.line_start or _SENTENCE_END.search(question[: lab.start])) \
                and ord(lab.letter) > ord(max(x.letter for x in q_run if x.start < lab.start)) + 1:
            return Split(refused=f"question labels jump to ({lab.letter})")
    parts, answers = _chunks(question, q_run), _chunks(answer, a_run)
    if any(not re.sub(r"[\W_]", "", parts[k]) for k in letters):
        return Split(refused="a question part is empty: its label stands apart from its text")
    if any(not answers[k] for k in answers):
        return Split(refused="an answer part is empty")
    text = {lab.letter: lab.text for lab in q_run}
    stems = {k: stem for k in letters}
    for k, (parts[k], note, named) in _instructions(question, q_run, q_all).items():
        for j in named:  # "Pour b), c), d), calculez lim x(t)." set after a): the stem of b), c), d)
            stems[j] = f"{stem}\n{note}"
    out, context = [], {}
    for k in sorted(answers):
        out.append((k, f"{stems[k]}\n{text[k]} {parts[k]}".lstrip("\n"), answers[k].rstrip(".").strip()))
        if cue := leans_on_earlier(stem, parts, letters, k):  # the part_context stage adds the earlier parts
            context[k] = {"cue": cue, "label": text[k],
                          "earlier_parts": "\n".join(f"{text[j]} {parts[j]}" for j in letters[: letters.index(k)])}
    return Split(out, lead=lead, context=context)


# a measured given: "12 V", "200 N/m", "3.0 × 10^6 N/C", "25 °C" (a number, a space, an SI unit; "5A" is a product);
# not a time ("from 0 s to 10 s", "after 20.0 s"): an earlier part's own moment or plotting range
_MEASURED = re.compile(r"(?<![\w.^_{])\d+(?:\.\d+)?(?:\s*×\s*10\^\{?[−-]?\d+\}?)?(?:\s+(?:[kMGmμnpc]?(?:m|g|N|J|W|V|A|Ω|C|T|Hz|K|Pa|eV|L|F)"
                       r"|rad)(?:\s*/\s*[A-Za-z]+|\^\{?[−-]?\d\}?)*|\s*°C?)(?![A-Za-z])")

# A part posed after others may lean on them: "(b) Solve that system.", "(c) If μ_s is less than this, ...",
# "(b) Would this change if ...", "(b) Repeat the prior item, ...", "(d) What identity have you just proved?"
_BACK_REFERENCE = re.compile(
    r"\b(?:than|as|from|with|like|under|of)\s+(?:this|that|these|those)\s*[.,;?)]"
    r"|\b(?:would|does|will|did|can|could|is|was|do)\s+(?:this|that|these|those|it)\s+(?:change|differ|depend|affect|happen|hold|matter|still|remain|work|mean|agree|be\s+(?:different|the\s+same|true))\b"
    r"|^\s*(?:what|how)\s+(?:if|about)\b|\b(?:repeat|redo)\b|\bdo\s+the\s+same\b|\bthe\s+same\s+(?:\w+\s+)?as\s+(?:in|before|above|for)\b"
    r"|\binstead\b|\bagain\b"
    r"|\b(?:prior|previous|preceding|above|earlier|last)\s+(?:part|item|question|answer|result|fact|calculation|case|step)s?\b"
    r"|\b(?:just|already)\s+(?:found|given|proved|proven|shown|computed|derived|obtained|calculated|described)\b"
    r"|\b(?:do|done|doing)\s+(?:this|that)\b|\bdo\s+it\s*[.?,]",  # "How many ways can you do this?" (not "did it travel")
    re.I,
)
# "this/these/those" + a noun; "that" only where it cannot open a clause ("Solve that system", not "Show that an ...",
# "a list that spans"); not a part's first word ("(b) This subset {...}": the part's own object)
_DEMONSTRATIVE = re.compile(r"(?:(?<!^)\b(?:this|these|those)|(?:(?<=[.?!]\s)|\b(?:in|of|from|on|for|to|with|by|at|about|into|solve|use|plot|interpret|apply)\s+)that)"
                            r"\s+(?:[a-z]+\s+)?(?P<noun>[a-z]{4,})\b", re.I)
# capitals standing alone or in a short run: a set, a matrix, a point, a product "PSP" ("A" and "I" alone are words too;
# "P_2", "M_{2×2}" and the number sets ("R^3") name spaces, not an exercise's objects)
_NAMED_OBJECT = re.compile(r"(?<![\w\\^_{∈])[A-Z]{1,3}(?![\w'′(_])")


def _words(text: str) -> set[str]:
    return {w.rstrip("s") for w in re.findall(r"[a-z]{4,}", text.casefold())}


def leans_on_earlier(stem: str, parts: dict[str, str], letters: list[str], k: str) -> str | None:
    """Why part `k` cannot stand without the parts before it (None when it can): it refers back
    ("Solve that system." where "system" is an earlier part's word, not the stem's; "Would this
    change ..."; "(a)" named), uses a symbol only earlier parts introduce ("T = PSP^{-1}" after
    "(b) Let S = ..."), or states no measured given while an earlier part states one the stem lacks
    ("(a) ... a 12 V battery ... (b) What is the resistance?")."""
    i = letters.index(k)
    if i == 0:
        return None
    own, before = parts[k], "\n".join(parts[j] for j in letters[:i])
    if (m := _BACK_REFERENCE.search(own)) is not None:
        return m.group(0).strip()
    if any(re.search(rf"(?<![\w)\]])\({j}\)", own) for j in letters[:i]):
        return "names an earlier part"
    stem_words, before_words = _words(stem), _words(before)
    for m in _DEMONSTRATIVE.finditer(own):
        noun = m.group("noun").casefold().rstrip("s")
        if noun in before_words and noun not in stem_words:
            return m.group(0)
    symbols = {c for c in _symbols(own) - _symbols(stem) if not _defines(own, c) and _defines(before, c)}
    if shared := sorted(symbols):
        return f"uses {', '.join(shared)} from an earlier part"
    if not _MEASURED.search(own) and (givens := [g.group(0) for g in _MEASURED.finditer(before) if g.group(0) not in stem]):
        return f"only an earlier part gives {', '.join(dict.fromkeys(givens[:3]))}"
    return None


def _defines(text: str, symbol: str) -> bool:
    """"Let S = ...", "S = {...}", "T be the map ...", "call it D": the text introduces the symbol."""
    return bool(re.search(rf"(?<![\w\\^_]){symbol}(?:\s*[=:]|\s+(?:be|denote|denotes)\b)|\b(?:let|call\s+\w+|called|denoted(?:\s+by)?)\s+{symbol}\b", text))


def _symbols(text: str) -> set[str]:
    # a capital opening a sentence is no symbol ("B. Find ...", "E. coli")
    text = re.sub(r"(?:^|(?<=[.?!:]\s))[A-Z](?=[.\s])", " ", text)
    return {c for run in _NAMED_OBJECT.findall(text) if run not in ("A", "I", "R", "N", "Z", "Q") for c in run}


def _instructions(question: str, run: list[_Label], labels: list[_Label]) -> dict[str, tuple[str, str, list[str]]]:
    """Parts whose text ends with a sentence naming later parts, an instruction those parts share:
    {letter: (the part without it, the instruction, the letters it names)}."""
    out: dict[str, tuple[str, str, list[str]]] = {}
    ends = [lab.start for lab in run[1:]] + [len(question)]
    for lab, end in zip(run, ends, strict=True):
        # only mentions of this exercise's own later parts: "V (t), given that ..." is a function's argument
        named = [m for m in labels if m.mention and lab.end <= m.start < end and m.letter > lab.letter
                 and m.letter in {x.letter for x in run}]
        if not named:
            continue
        head = question[lab.end : named[0].start]
        cut = max(head.rfind("\n"), *(head.rfind(p + " ") + 1 for p in ".?!:"))
        if cut <= 0 or not head[:cut].strip():
            continue  # the part itself is that sentence
        letters = sorted({m.letter for m in named})
        note = _TRAILING_JOIN.sub("", question[lab.end + cut : end]).strip()
        out[lab.letter] = (_TRAILING_JOIN.sub("", head[:cut]).strip(), note, letters)
    return out


def split_parts(question: str, answer: str) -> list[tuple[str, str, str]]:
    """[(label, question for the part, its answer)], or [] when the item is not split."""
    return split_exercise(question, answer).parts


class SplitPartsConfig(StageConfig):
    min_parts: int = 1  # answered parts needed to split (1: even a key answering only (a) splits)


class SplitParts(Stage):
    name = "split_parts"
    version = "5"  # v5: a part that leans on its earlier parts notes them (meta context) for part_context (earlier versions: DESIGN.md's rounds)
    kind = "expand"
    Config = SplitPartsConfig
    output_model = QAItem

    def process(self, record: Record, ctx: StageContext) -> list[Record]:
        split = split_exercise(record["question"], record.get("answer") or "")
        if split.refused:
            tags = list(record.get("tags") or [])
            return [{**record, "tags": tags if "parts_unaligned" in tags else [*tags, "parts_unaligned"]}]
        if len(split.parts) < self.config.min_parts or not split.parts:
            return [record]
        out = []
        number = (record.get("source") or {}).get("number")
        for label, question, answer in split.parts:
            child = {**record, "question": question, "answer": answer, "solution": None}
            meta = {**json.loads(record.get("meta") or "{}"), "part": label, "parent_id": record["id"]}
            if split.lead:
                meta["answer_lead"] = split.lead
            if label in split.context:  # the earlier parts it leans on, and why: part_context puts them in the question
                meta["context"] = split.context[label]
            child["meta"] = json.dumps(meta, ensure_ascii=False, sort_keys=True)
            if number:
                child["source"] = {**record["source"], "number": f"{number}({label})"}
            child["id"] = qa_id(question, answer)
            out.append(child)
        return out
