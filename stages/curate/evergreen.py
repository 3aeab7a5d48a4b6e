"""Evergreen: questions whose correct answer changes over time are unstable ground truth.

Flagged (`time_sensitive`, then dropped or tagged by `action`): "current" / "latest" / "as of
now" / "this year" phrasing, office holders and record holders ("Who is the president of ...",
"the world record for ..."), counts and prices that drift ("How many countries are in the EU?",
"the population of ..."), newest versions and releases. Physics "current" (electric current),
"latest heat" and the like are not time words; word problems that define their own "today"
("Today is Monday; what day is it in 10 days?") are self-contained and pass, and so does a time word
in a problem's own scene ("A system is at rest. ... what equilibrium is it currently in?").
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from rlclimb.pipelines.stage import Drop, Record, StageContext

from .common import Action, CurateConfig, CurateStage, flag, kept, mask_math

_ROLE = (r"(?:president|prime\s+minister|chancellor|ceo|chief\s+executive|head\s+of\s+state|leader|chair(?:man|woman|person)?"
         r"|director|secretary[- ]general|pope|king|queen|monarch|governor|mayor|coach|captain|champion|owner|ambassador"
         r"|minister|senator|speaker|dean|editor|host)")
_PATTERNS = [
    (r"\bcurrently\b|\bat\s+present\b|\bnowadays\b|\bas\s+of\s+(?:now|today|this\s+year|\d{4})\b|\bright\s+now\b|\bto\s+date\b", "time word"),
    (r"\bcurrent\s+(?:[A-Z][\w.]*\s+){0,2}(?:" + _ROLE + r"|record|world\s+record|holder|version|release|population|price|rate|value\s+of\s+(?:the\s+)?(?:stock|dollar|euro|bitcoin)"
     r"|members?|membership|number\s+of\s+(?:countries|members|states|people|users)|edition|standings|ranking|year|age|interest\s+rate|inflation)\b", "current X"),
    # only things that have newer releases: "the latest start time" (critical path) and "the most
    # recent common ancestor" are terms of art
    (r"\b(?:the\s+)?(?:latest|newest|most\s+recent)\s+(?:\w+\s+)?(?:version|release|model|edition|update|iphone|phone|album|film|movie"
     r"|book|novel|census|data|figures|statistics|news|election|winner|champion|record|report|survey|season|generation|standard|president)s?\b", "latest X"),
    (r"\b(?:this|next|last)\s+(?:year|month|season|decade)\b|\brecent(?:ly)?\b(?!\s+common\s+ancestor)", "relative time"),
    (r"\bwho\s+(?:is|are)\s+(?:the\s+)?(?:current\s+)?" + _ROLE + r"\b", "office holder"),
    (r"\b(?:world|olympic|national)\s+record\b|\bholds?\s+the\s+record\b|\brecord\s+holder\b", "record holder"),
    (r"\b(?:tallest|largest|biggest|richest|most\s+(?:popular|valuable|populous|visited|subscribed))\s+(?:building|company|companies|city|cities|country|person|people|website|app|stock|tower|bank|airport|stadium)\b", "superlative that changes"),
    # a place's population drifts; "a population of 500 rabbits" is the problem's own data
    (r"\bpopulation\s+of\s+(?:the\s+)?(?:world|earth|(?-i:[A-Z])\w+)", "population"),
    (r"\bhow\s+many\s+(?:countries|member\s+states|states|people|users|subscribers|employees|moons|satellites)\s+(?:are|does|do|have|has)\s+(?:there\s+)?(?:in|on|at)?\s*(?:the\s+)?(?:EU|European\s+Union|UN|United\s+Nations|NATO|world|Earth|Jupiter|Saturn|company)?", "count that changes"),
    (r"\b(?:price|cost|exchange\s+rate|stock\s+price|market\s+cap(?:italization)?)\s+of\s+(?:a\s+|an\s+|one\s+)?(?:bitcoin|gold|oil|the\s+dollar|the\s+euro|[A-Z]\w+\s+(?:stock|shares))", "market price"),
    (r"\bhow\s+old\s+is\s+[A-Z]\w+", "age of a person"),
]
_TIME_SENSITIVE = [(re.compile(p, re.I), label) for p, label in _PATTERNS]
# "The current I through the resistor", "a current of 2 A": physics, not time.
_PHYSICS_CURRENT = re.compile(r"\bcurrent\s+(?:through|in\s+the|flowing|density|source|of\s+\S+\s*(?:A|mA|amperes?|amps?)\b|divider|loop|gain|law|I\b)", re.I)
_SELF_DATED = re.compile(r"\b(?:today|this\s+year)\s+is\b|\bsuppose\s+(?:that\s+)?(?:today|this\s+year)\b|\bif\s+(?:today|this\s+year)\b", re.I)
_RECENT_MATH = re.compile(r"\b(?:latest|most\s+recent)\s+(?:time|term|step|iteration|estimate|value|measurement|reading|observation|deposit|payment)\b", re.I)


_STATES_DATA = re.compile(r"\d")
_SCENARIO = re.compile(r"^\s*(?:suppose|imagine|assume|let)\b|\byou(?:'re|\s+are|\s+were)\b", re.I)


def _sentence_at(text: str, i: int) -> str:
    start = max(text.rfind(c, 0, i) for c in ".?!\n") + 1
    ends = [j for j in (text.find(c, i) for c in ".?!\n") if j >= 0]
    return text[start : min(ends) if ends else len(text)]


# The problem sets up its own scene ("A one-dimensional system is at rest.", "You are planning your
# descent onto planet Camelid ...") and the time word's sentence speaks of it ("it", "your", "the
# system"), naming nothing of the world (no proper name past its first word, no office).
_OPENS_SCENE = re.compile(r"^\s*(?:an?\s+(?!few\b)[\w-]+|suppose|imagine|assume|consider|you(?:'re|’re|\s+are|\s+were|\s+have)?)\b", re.I)
_REFERS_BACK = re.compile(r"\b(?:it|its|they|their|them|you|your|we|our|the\s+(?:system|object|body|block|ball|car|particle|mass|spring"
                          r"|cart|box|rocket|ship|satellite|circuit|gas|sample|wire))\b", re.I)
_PROPER_NAME = re.compile(r"(?<=[\w,]\s)[A-Z][a-z]{2,}")
_OFFICE = re.compile(r"\b" + _ROLE + r"\b", re.I)


def _own_scene(text: str, i: int) -> bool:
    sentence = _sentence_at(text, i)
    return (bool(_OPENS_SCENE.match(text)) and bool(_REFERS_BACK.search(sentence))
            and not _PROPER_NAME.search(sentence) and not _OFFICE.search(sentence))


def time_sensitivity(question: str) -> str | None:
    """The phrase that makes the answer time-dependent, or None."""
    text = mask_math(question)
    if _SELF_DATED.search(text):
        return None
    for pattern, label in _TIME_SENSITIVE:
        for m in pattern.finditer(text):
            phrase = m.group(0)
            if label == "current X" and _PHYSICS_CURRENT.match(text, m.start()):
                continue
            if label in ("latest X", "relative time") and _RECENT_MATH.match(text, m.start()):
                continue
            if label == "relative time" and _STATES_DATA.search(_sentence_at(text, m.start())):
                continue  # "Last year a store sold 120 bikes ...": the problem gives its own numbers
            if label in ("time word", "relative time") and _SCENARIO.search(_sentence_at(text, m.start())):
                continue  # "Suppose you are currently staying at a camp ...": the problem's own scene
            if label == "time word" and _own_scene(text, m.start()):
                continue  # "A one-dimensional system is at rest. ... what type of equilibrium is it currently in?"
            return f"{label}: {phrase.strip()!r}"
    return None


class EvergreenConfig(CurateConfig):
    action: Action = "drop"


class EvergreenReply(BaseModel):
    time_sensitive: bool
    reason: str = ""


PROMPT = """Would the correct answer to this question change over time (e.g. who currently holds an \
office or a record, the latest version of something, a population, price or count that drifts, \
"this year")? Questions about fixed facts, definitions, history and self-contained word problems \
are not time-sensitive.

Question:
{question}

Reply with JSON: {{"time_sensitive": true/false, "reason": "one short phrase"}}"""


class EvergreenStage(CurateStage):
    name = "evergreen"
    version = "4"
    Config = EvergreenConfig

    def embedded(self, record: Record, ctx: StageContext) -> Record | Drop:
        hit = time_sensitivity(record["question"])
        return flag(record, self.config.action, "time_sensitive", hit) if hit else record

    async def llm(self, record: Record, ctx: StageContext):
        reply, completion = await self.ask(ctx, PROMPT.format(question=record["question"]), EvergreenReply)
        if not reply.time_sensitive:
            return kept(record, completion)
        result = flag(record, self.config.action, "time_sensitive", f"model: {reply.reason[:200]}")
        if isinstance(result, Drop):
            return Drop(result.reason, result.detail, model=completion.model, cost=completion.cost)
        return kept(result, completion)
