"""PII: personal data in a question or answer -> dropped (`pii_<kind>`) or tagged.

Embedded detectors, run on the text with its LaTeX math masked (numbers in formulas are not
phone numbers): emails (reserved example domains allowed), phone numbers (Google's
libphonenumber via `phonenumbers`, formatted with separators or introduced as a phone number),
US social security numbers, payment card numbers (Luhn-checked), street addresses, ID numbers
introduced as such (passport, licence, patient, account...), dates of birth, and a person's full
name in a sentence about private matters (health, money, address, legal trouble). Fictional names
in word problems ("Maria buys 3 apples") are not PII. The LLM path judges the same categories.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from rlclimb.pipelines.stage import Drop, Record, StageContext

from .common import Action, CurateConfig, CurateStage, add_tag, kept, mask_math, sentences

_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})\b")
_SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")
_CARD = re.compile(r"\b(?:\d[ -]?){12,18}\d\b")
_PHONE_CONTEXT = re.compile(
    r"\b(?:phone|tel|telephone|cell|mobile|call(?:\s+me)?|text\s+me|fax|whatsapp|reach\s+(?:me|him|her)\s+at)"
    r"\s*(?:number|no\.?|#)?\s*(?:is|:|at)?\s*(\+?[\d(][\d\s().-]{6,}\d)", re.I)
_ADDRESS = re.compile(
    r"\b\d{1,5}\s+(?:[NSEW]\.?\s+)?(?:[A-Z][a-z]+\s+){1,3}(?:Street|St\.?|Avenue|Ave\.?|Road|Rd\.?|Boulevard|Blvd\.?|Lane|Ln\.?"
    r"|Drive|Dr\.?|Court|Ct\.?|Way|Place|Pl\.?|Terrace|Circle|Parkway)(?=[\s,.;]|$)(?:,?\s*(?:Apt|Apartment|Suite|Unit)\.?\s*#?\w+)?")
_ID = re.compile(
    r"\b(?:passport|driver'?s?\s+licen[cs]e|licen[cs]e|student|employee|patient|medical\s+record|MRN|account|bank\s+account"
    r"|social\s+security|national\s+insurance|tax|insurance|policy|member(?:ship)?)\s*(?:id|no\.?|number|#)\s*(?:is|:)?\s*#?\s*([A-Z0-9][A-Z0-9-]{4,})",
    re.I)
_DOB = re.compile(r"\b(?:born\s+on|date\s+of\s+birth|DOB|birthday\s+is)\s*:?\s*(?:\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}|[A-Z][a-z]+\s+\d{1,2},?\s+\d{4}|\d{1,2}\s+[A-Z][a-z]+\s+\d{4})", re.I)
_FULL_NAME = re.compile(r"\b(?:(?:Mr|Mrs|Ms|Miss|Dr|Prof)\.?\s+[A-Z][a-z]+|[A-Z][a-z]{1,15}\s+(?:[A-Z]\.\s+)?[A-Z][a-z]{1,20}(?:-[A-Z][a-z]+)?)\b")
_PRIVATE = re.compile(
    r"\b(?:diagnos\w*|patient|HIV|cancer|disease|illness|pregnan\w*|medical\s+record|prescri\w*|therapy|psychiatr\w*|disorder"
    r"|salary|earns|income|bank\s+account|credit\s+card|debt|loan|owes|SSN|social\s+security"
    r"|lives\s+at|home\s+address|resides\s+at|address\s+is|phone\s+number|email\s+address"
    r"|arrested|convicted|criminal\s+record|divorc\w*|affair|religion|sexual\s+orientation)\b", re.I)
# Capitalized pairs that are not people: sentence starts, science names, places.
_NOT_NAMES = re.compile(
    r"^(?:The|A|An|In|On|At|If|When|Find|What|How|Let|Suppose|Given|Compute|Calculate|Prove|Show|Determine|Which|Who|Why"
    r"|This|That|Each|Every|Some|All|For|A\s|Newton|Einstein|Euler|Gauss|Fourier|Laplace|Ohm|Kirchhoff|Maxwell|Planck|Bohr"
    r"|Avogadro|Boyle|Charles|Pascal|Hooke|Coulomb|Faraday|Lenz|Hess|Le|Van|New|North|South|East|West|United|San|Los|Las"
    r"|Mount|Lake|River|Saint|St|General|Special|Big|Hubble|Milky|Patient|Doctor|Nurse)\b")
_EXAMPLE_DOMAINS = {"example.com", "example.org", "example.net", "example.edu", "test.com", "domain.com"}

Kind = Literal["email", "phone", "ssn", "card", "address", "id_number", "birth_date", "private_person"]


def _luhn(digits: str) -> bool:
    total, odd = 0, False
    for d in reversed(digits):
        n = int(d)
        if odd:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
        odd = not odd
    return total % 10 == 0


def find_pii(text: str, region: str = "US") -> list[tuple[Kind, str]]:
    """(kind, evidence) for each personal datum found; [] when none."""
    import phonenumbers

    t = mask_math(text)
    found: list[tuple[Kind, str]] = []
    for m in _EMAIL.finditer(t):
        if m.group(1).lower() not in _EXAMPLE_DOMAINS:
            found.append(("email", m.group(0)))
    for m in _SSN.finditer(t):
        found.append(("ssn", m.group(0)))
    for m in _CARD.finditer(t):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and _luhn(digits) and len(set(digits)) > 1:
            found.append(("card", m.group(0)))
    if not any(k == "ssn" for k, _ in found):
        for m in phonenumbers.PhoneNumberMatcher(t, region, leniency=phonenumbers.Leniency.STRICT_GROUPING):
            if re.search(r"[\s().+-]", m.raw_string.strip()):  # a bare 10-digit run is a number, not a phone
                found.append(("phone", m.raw_string))
        found += [("phone", m.group(1)) for m in _PHONE_CONTEXT.finditer(t) if len(re.sub(r"\D", "", m.group(1))) >= 7]
    found += [("address", m.group(0)) for m in _ADDRESS.finditer(t)]
    found += [("id_number", m.group(0)) for m in _ID.finditer(t) if re.search(r"\d", m.group(1))]
    found += [("birth_date", m.group(0)) for m in _DOB.finditer(t)]
    for sentence in sentences(text):
        if _PRIVATE.search(sentence):
            for m in re.finditer(r"(?=(" + _FULL_NAME.pattern + r"))", sentence):  # overlapping: "Patient John Miller"
                if not _NOT_NAMES.match(m.group(1)):
                    found.append(("private_person", m.group(1)))
                    break
    return found


class PIIConfig(CurateConfig):
    action: Action = "drop"
    region: str = "US"  # default region for phone numbers without a country code
    fields: list[str] = Field(default_factory=lambda: ["question", "answer", "solution"])


class PIIReply(BaseModel):
    contains_pii: bool
    kinds: list[str] = Field(default_factory=list)
    evidence: str = ""


PROMPT = """Does this exam item contain personal data about a real, identifiable person: an email \
address, phone number, street address, government or account ID, date of birth, or a person's \
name together with private information (health, finances, address, legal matters)? Made-up names \
in word problems ("Maria buys 3 apples") and famous scientists are not personal data.

{text}

Reply with JSON: {{"contains_pii": true/false, "kinds": [...], "evidence": "the span, or empty"}}"""


class PIIStage(CurateStage):
    name = "pii"
    version = "1"
    Config = PIIConfig

    def _text(self, record: Record) -> str:
        return "\n".join(str(record.get(f) or "") for f in self.config.fields if record.get(f))

    def embedded(self, record: Record, ctx: StageContext) -> Record | Drop:
        found = find_pii(self._text(record), self.config.region)
        if not found:
            return record
        kinds = sorted({k for k, _ in found})
        if self.config.action == "drop":
            return Drop(f"pii_{kinds[0]}", "; ".join(f"{k}: {_redact(e)}" for k, e in found[:5]))
        for k in kinds:
            add_tag(record, f"pii_{k}")
        return record

    async def llm(self, record: Record, ctx: StageContext):
        reply, completion = await self.ask(ctx, PROMPT.format(text=self._text(record)), PIIReply)
        if not reply.contains_pii:
            return kept(record, completion)
        kind = re.sub(r"\W+", "_", (reply.kinds or ["personal_data"])[0].lower()).strip("_") or "personal_data"
        if self.config.action == "drop":
            return Drop(f"pii_{kind}", f"model: {_redact(reply.evidence)}", model=completion.model, cost=completion.cost)
        return kept(add_tag(record, f"pii_{kind}"), completion)


def _redact(evidence: str) -> str:
    """The ledger says what was found without repeating the personal data in full."""
    e = evidence.strip()
    return e if len(e) <= 4 else f"{e[:2]}…{e[-2:]} ({len(e)} chars)"
