"""Cleanup: strip non-problem text and external references; flag items that depend on a figure
or on another exercise.

Stripped (embedded): leading labels ("Exercise 3.2.", "Problem 5:"), point values ("(5 points)"),
competition attributions ("(AMC 2019)"), parenthetical references ("(see Example 3)", "(cf.
Figure 2)"), "Source: ..." lines and URLs. Flagged, then dropped or tagged by `on_figure` /
`on_external` / `on_flattened`: questions that need a figure, table or image they do not contain
(`needs_figure`), questions that lean on another exercise, example or part
(`external_reference`), and items whose matrix or table a PDF text layer flattened into a run of
bare numbers (`flattened_layout`).
The LLM path rewrites the question the same way; a rewrite whose numbers are not all in the
original is rejected (`cleanup_changed_problem`): cleanup may remove text, never change the problem.
"""

from __future__ import annotations

import re
from collections import Counter

from pydantic import BaseModel

from rlclimb.pipelines.stage import Drop, Keep, Record, StageContext

from ..text_keys import numbers
from .common import Action, CurateConfig, CurateStage, flag, kept, mask_math

_REF_NOUN = r"(?:example|exercise|problem|question|section|chapter|theorem|lemma|corollary|definition|proposition|table|equation|eq\.|figure|fig\.|page|p\.|appendix)"
_EXT_NOUN = r"(?:example|exercise|problem|question|section|chapter|equation|eq\.|page|p\.|appendix)"  # figures: needs_figure
_LEADING_LABEL = re.compile(
    r"^\s*(?:\*\*)?(?:(?:problem|exercise|question|example|ex\.|prob\.|q)\s*\d+(?:\.\d+)*[a-z]?\s*(?:\*\*)?\s*[:.)\-]?"
    r"|\d+(?:\.\d+)+[a-z]?\s*[:.)])\s*(?:\*\*)?\s*",  # a bare "3.2" needs its delimiter: "3.5 kg" is data
    re.I,
)
_LEADING_NUMBER = re.compile(r"^\s*\(?\d{1,3}[a-z]?[.)]\s+(?=[A-Z$\\])")
_POINTS = re.compile(r"\s*[\(\[]\s*\d+(?:\.\d+)?\s*(?:points?|pts?\.?|marks?|p)\s*[\)\]]", re.I)
_COMPETITIONS = r"(?:AMC|AIME|IMO|USAMO|USAJMO|Putnam|HMMT|ARML|AoPS|MATHCOUNTS|BMO|CMO|APMO|Olympiad|IOI|IPhO|IChO)"
_ATTRIBUTION = re.compile(rf"\s*[\(\[]\s*(?:source:?\s*|from\s+|adapted\s+from\s+)?{_COMPETITIONS}[^()\[\]]{{0,40}}[\)\]]", re.I)
_PAREN_REF = re.compile(rf"\s*\(\s*(?:see|cf\.?|compare|refer\s+to|as\s+in|recall)\s+(?:also\s+)?(?:the\s+)?{_REF_NOUN}[^()]{{0,60}}\)", re.I)
_SOURCE_LINE = re.compile(r"^\s*(?:source|reference|credit|from)\s*:.*$", re.I | re.M)
_URL = re.compile(r"\s*\(?https?://\S+\)?")
_HINT_REF = re.compile(rf"\s*\bhint\s*:\s*(?:see|use|recall)\s+(?:the\s+)?{_REF_NOUN}\s*[\w.\-]+\.?", re.I)

_FIGURE = re.compile(
    r"\b(?:in|from|of|on|using|use|to|see|consider)\s+the\s+(?:accompanying\s+|following\s+|given\s+|adjacent\s+)?(?:figure|diagram|picture|image|drawing|illustration|photo|sketch)\b"
    r"|\bthe\s+(?:\w+\s+)?(?:figure|diagram|picture|image|graph|table|circuit|chart|plot)\s+(?:below|above|shown|given|provided|on\s+the\s+right|on\s+the\s+left)\b"
    r"|\b(?:from|in|on|using|read\s+off)\s+the\s+(?:graph|chart|plot)\b(?!\s+(?:of|with|that|whose|G\b))"
    r"|\b(?:as|is|are)\s+shown\s+(?:in|below|above|at\s+right)?|\bshown\s+(?:below|above|in\s+the\s+(?:figure|diagram|graph))"
    r"|\b(?:figure|fig\.)\s*\d+(?:\.\d+)*\b|\[(?:image|figure|diagram)[^\]]*\]|<img\b|!\[[^\]]*\]\(|\bthe\s+following\s+(?:figure|diagram|graph|picture)\b",
    re.I,
)
_TABLE_PRESENT = re.compile(r"^\s*\|.*\|\s*$|\\begin\{(?:tabular|array)\}", re.M)
_EXTERNAL = re.compile(
    rf"\b(?:in|from|of|using|use|by|repeat|extend|generalize|continue|recall|see|as\s+in|modify)\s+(?:the\s+(?:result|answer|method|data|setup|function|situation)s?\s+(?:of|from|in)\s+)?{_EXT_NOUN}\s*\d+(?:\.\d+)*[a-z]?\b"
    r"|\b(?:the|this)\s+(?:worked|previous|preceding|above|last|earlier)\s+(?:example|exercise|problem|solution)\b|\bin\s+the\s+(?:worked\s+)?example\b"
    r"|\b(?:previous|preceding|last|above|prior)\s+(?:problem|exercise|question|example|part)\b"
    r"|\b(?:your|the)\s+(?:answer|result)s?\s+(?:to|from|of|in)\s+(?:part|problem|exercise|question)\b"
    r"|\bin\s+part\s+\(?[a-h]\)?|\bfrom\s+part\s+\(?[a-h]\)?"
    # numbered items named together ("Examples 14.1–14.5 in the first section each describe ..."):
    # a range or list of them is the text's, whatever verb leads in
    # (not the group instruction the item shares: "In Exercises 1-2, find ...")
    rf"|(?<!in\s)\b{_EXT_NOUN}s\s+\d+(?:\.\d+)*[a-z]?\s*(?:[–—-]|,|\band\b|\bto\b|\bthrough\b)\s*\d+(?:\.\d+)*[a-z]?\b",
    re.I,
)


def strip_non_problem(text: str) -> str:
    t = _SOURCE_LINE.sub("", text)
    t = _URL.sub("", t)
    t = _HINT_REF.sub("", t)
    t = _PAREN_REF.sub("", t)
    t = _ATTRIBUTION.sub("", t)
    t = _POINTS.sub("", t)
    t = _LEADING_LABEL.sub("", t, count=1)
    t = _LEADING_NUMBER.sub("", t, count=1)
    t = re.sub(r"[ \t]+([.,;:?])", r"\1", t)
    t = re.sub(r"[ \t]{2,}", " ", t)
    return re.sub(r"\n{3,}", "\n\n", t).strip()


# A figure the task is about, not one that illustrates a text that says it all: "the circuit in
# Figure 180", "in the figure below", "point P (shown)", "as shown." (pointing, nothing named),
# "See Fig. 2.1." / "In Figure 5, ..." (the figure is where to look).
_FIGURE_NEEDED = re.compile(
    r"\b(?:system|circuit|setup|set-up|geometry|arrangement|configuration|apparatus|network|graph|diagram|picture|drawing|curve|shape|region)s?"
    r"\s+(?:that\s+is\s+|which\s+is\s+)?(?:shown\s+|drawn\s+|depicted\s+)?(?:in|of)\s+(?:figure|fig\.)\s*\d+"
    r"|\breferring\s+to\b[^.?]{0,30}\b(?:figure|fig\.)|(?:^|[.?!:]\s+)(?:in|from|using|use|see|consider|study)\s+(?:figure|fig\.)\s*\d+"
    r"|\(shown\)|\bas\s+shown\s*[.,;)]|\bin\s+the\s+figure\b|\bshown\s+(?:below|above|at\s+right)|\b(?:below|above)\s+(?:figure|diagram)",
    re.I,
)


def figure_reference(text: str) -> tuple[str, bool] | None:
    """(the words, needed) of a reference to a figure, diagram, image or table the text does not hold.
    `needed` is False for a figure named beside a description that states what the task needs ("a
    tank of diameter D ... (Figure 130)", "as shown in Figure 219", a caption line): the text may
    be enough; the item is tagged, not dropped."""
    masked = mask_math(text)
    m = _FIGURE.search(masked)
    if not m:
        return None
    if re.search(r"\btable\b", m.group(0), re.I) and _TABLE_PRESENT.search(text):
        return None  # the table is in the text
    strong = _FIGURE_NEEDED.search(masked)
    if strong:
        return strong.group(0).strip(" .,;"), True
    return m.group(0), not _only_numbered(masked)


def _only_numbered(masked: str) -> bool:
    """Every figure reference is a numbered figure mentioned in passing ("as in Figure 133", "(Figure
    130)", "Figure 130: A tank draining."): no deictic ask ("the figure below", "shown above")."""
    hits = [m.group(0) for m in _FIGURE.finditer(masked)]
    return all(re.fullmatch(r"(?:(?:as|is|are)\s+shown\s+in\s+)?(?:figure|fig\.)\s*[\d.]+|(?:as|is|are)\s+shown\s+in", h.strip(), re.I) for h in hits)


# Signs that a figure named in passing still carries something the task needs: the figure as the
# subject ("Figure 2 shows two vectors"), labels only it can place (point P, block A, panels, "the
# given coordinate system", options to pick from), a direction asked for or answered (unit vectors,
# "to the right"): orientation is what a caption never says.
_FIGURE_CARRIES = re.compile(
    r"\b(?:[Ff]igure|[Ff]ig\.)\s*\d+(?:\.\d+)*\s+(?:shows|illustrates|depicts|gives|displays)\b"
    r"|\b(?:[Pp]oints?|[Bb]locks?|[Ss]upports?|[Ww]ires?|[Rr]ods?|[Ss]pheres?|[Ll]oops?)\s+(?:[A-Z]|\d)\b(?![_^])|\b(?:[Mm]ass|[Cc]harge)(?:e?s)?\s+\d\b"
    r"|\b[Cc]oordinate\s+system\b|\b[Pp]anels?\b|\b[Ll]abell?ed\b|\b[Dd]irection\b|\b[Ww]hich\s+(?:of\s+the\s+following|statement)|⃝"
    r"|(?:^|\s)A[.)]\s.*\sB[.)]\s",
    re.S,
)
_ORIENTED_ANSWER = re.compile(
    r"\\hat\{?[xyzijk]\b|\b(?:right|left|upwards?|downwards?|clockwise|counter-?clockwise|north|south|east|west|into\s+the|out\s+of\s+the)\b"
    r"|[φ]\s*=", re.I,
)


def figure_carries_task(question: str, answer: str) -> str | None:
    """Why a figure named only in passing is still needed (see `_FIGURE_CARRIES`), or None when the
    text states the task and its answer needs nothing the figure places."""
    m = _FIGURE_CARRIES.search(mask_math(question)) or _ORIENTED_ANSWER.search(answer)
    return m and m.group(0).strip()


def needs_figure(text: str) -> str | None:
    """The words of any figure reference (needed or mentioned in passing): what cleanup flags."""
    found = figure_reference(text)
    return found[0] if found else None


# Nine or more bare numbers in a row ("A = 2 0 0 0 3 2 0 0 3 ..."): a matrix or table whose
# layout the text layer lost; nobody can tell its rows from its columns any more.
_FLAT_NUMBERS = re.compile(r"(?<![\w.,])(?:[−-]?\d+(?:\.\d+)?\s+){8,}[−-]?\d+(?:\.\d+)?(?![\w.,]\d)")


def flattened_layout(question: str, answer: str) -> str | None:
    m = _FLAT_NUMBERS.search(question) or _FLAT_NUMBERS.search(answer)
    return m.group(0)[:40] if m else None


def external_reference(text: str) -> str | None:
    """The words of a reference to another exercise, example or part; "in part (b)" of an exercise
    whose part (b) is in this text is internal (once split, usability checks that part's own text)."""
    masked = mask_math(text)
    for m in _EXTERNAL.finditer(masked):
        part = re.match(r".*\bpart\s+\(?([a-h])\)?", masked[m.start():m.end() + 6], re.I | re.S)
        if part and re.search(rf"(?:^|\s)\({part.group(1).lower()}\)\s", text):
            continue
        return m.group(0)
    return None


class CleanupConfig(CurateConfig):
    on_figure: Action = "drop"  # tag keeps the item with a `needs_figure` tag (e.g. when images travel with it)
    # a numbered figure named in passing beside a full description, with no label or direction that
    # only the figure places (`figure_carries_task`): kept, tagged `maybe_needs_figure`
    on_figure_mention: Action = "tag"
    on_external: Action = "drop"
    on_flattened: Action = "drop"  # a matrix or table flattened into a run of numbers (PDF text layers)
    min_chars: int = 8  # a question shorter than this after cleanup is dropped (`empty_after_cleanup`)


class CleanupReply(BaseModel):
    question: str
    depends_on_figure: bool
    depends_on_other_problem: bool


PROMPT = """Clean this exam question for a training set. Remove only text that is not part of the \
problem: numbering and labels, point values, source or competition attributions, URLs, and \
references to other material such as "(see Example 3)". Do not change anything else: keep every \
number, formula and condition exactly as written, and do not solve it.
Also say whether the question cannot be solved without a figure, diagram, image or table that is \
not included in its text, and whether it depends on another problem, example or part.

Question:
{question}

Reply with JSON: {{"question": "...", "depends_on_figure": true/false, "depends_on_other_problem": true/false}}"""


class CleanupStage(CurateStage):
    name = "cleanup"
    version = "7"
    Config = CleanupConfig

    def embedded(self, record: Record, ctx: StageContext) -> Record | Drop:
        cleaned = strip_non_problem(record["question"])
        figure_ref = figure_reference(cleaned)
        carried = figure_ref is not None and not figure_ref[1] and figure_carries_task(cleaned, record.get("answer") or "")
        if carried:  # named in passing, but it places labels or a direction the task needs
            figure_ref = (f"{figure_ref[0]}' ({carried!r} needs it)", True)
        if figure_ref is not None and not figure_ref[1]:  # mentioned in passing: the text says it all
            record = flag(record, self.config.on_figure_mention, "maybe_needs_figure", figure_ref[0])
            if isinstance(record, Drop):
                return Drop("needs_figure", f"mentions {figure_ref[0]!r}")
            figure_ref = None
        figure = figure_ref and figure_ref[0]
        external = external_reference(cleaned)
        flat = flattened_layout(cleaned, record.get("answer") or "")
        return self._finish(record, cleaned, figure and f"mentions {figure!r}", external and f"mentions {external!r}",
                            flat and f"numbers without layout: {flat!r}...")

    async def llm(self, record: Record, ctx: StageContext) -> Keep | Drop | Record:
        reply, completion = await self.ask(ctx, PROMPT.format(question=record["question"]), CleanupReply)
        added = Counter(numbers(reply.question)) - Counter(numbers(record["question"]))
        if added:
            return Drop("cleanup_changed_problem", f"the rewrite has numbers the original lacks: {sorted(added)[:5]}",
                        model=completion.model, cost=completion.cost)
        result = self._finish(record, reply.question.strip(), "model: needs a figure" if reply.depends_on_figure else None,
                              "model: depends on another problem" if reply.depends_on_other_problem else None)
        if isinstance(result, Drop):
            return Drop(result.reason, result.detail, model=completion.model, cost=completion.cost)
        return kept(result, completion)

    def _finish(self, record: Record, cleaned: str, figure: str | None, external: str | None,
                flattened: str | None = None) -> Record | Drop:
        if len(cleaned) < self.config.min_chars:
            return Drop("empty_after_cleanup", f"{len(cleaned)} chars left of {len(record['question'])}")
        record["question"] = cleaned
        for reason, hit, action in (("needs_figure", figure, self.config.on_figure),
                                    ("external_reference", external, self.config.on_external),
                                    ("flattened_layout", flattened, self.config.on_flattened)):
            if hit:
                result = flag(record, action, reason, hit)
                if isinstance(result, Drop):
                    return result
        return record
