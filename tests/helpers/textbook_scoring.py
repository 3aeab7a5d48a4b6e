"""Precision and recall of extracted QA items against known truth (generated or hand-checked).

Texts are compared after normalization (lower case, letters and digits only), so layout and OCR
spacing do not count; a question matches when the normalized texts are at least `min_ratio`
similar (difflib), an answer when it is equal (short answers) or `min_ratio` similar (long ones).
Matching is one-to-one and greedy by similarity, questions restricted to the same document.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path

_NON_ALNUM = re.compile(r"[^0-9a-z]+")


# rebuilt matrices, fractions, radicals, binomials and accents vs raw-text truth: the markup is layout, not content
_MATRIX_MARKUP = re.compile(r"\\(?:begin|end)\{pmatrix\}|\\(?:frac|sqrt|binom|vec|hat|bar|tilde|dot|ddot|acute|grave|check|breve|mathring)\b")


def norm(text: str | None) -> str:
    return _NON_ALNUM.sub("", unicodedata.normalize("NFKC", _MATRIX_MARKUP.sub("", text or "")).lower())


def similar(a: str | None, b: str | None, min_ratio: float = 0.85) -> bool:
    """Equal short texts; long ones `min_ratio` similar, or (a boundary drawn a little
    differently: a trailing figure label, a running title) one at least 80% as long as the
    other and `min_ratio` similar to the other's start."""
    x, y = norm(a), norm(b)
    if not x or not y:
        return False
    if len(x) < 12 or len(y) < 12:
        return x == y
    if x == y:
        return True
    if _ratio(x, y) >= min_ratio:
        return True
    short, long_ = sorted((x, y), key=len)
    return len(short) >= 0.8 * len(long_) and _ratio(short, long_[: len(short)]) >= min_ratio


def _ratio(x: str, y: str) -> float:
    sm = SequenceMatcher(None, x, y, autojunk=False)
    return sm.ratio() if sm.real_quick_ratio() >= 0.5 and sm.quick_ratio() >= 0.5 else 0.0


@dataclass
class Truth:
    document: str
    question: str
    answer: str | None
    key: str = ""  # for reports: "2.1#5"


@dataclass
class Scores:
    questions_truth: int = 0
    questions_predicted: int = 0
    questions_matched: int = 0
    answers_truth: int = 0
    pairs_predicted: int = 0
    pairs_correct: int = 0
    unanswered_truth: int = 0
    unanswered_kept: int = 0
    missed: list[str] = field(default_factory=list)
    spurious: list[str] = field(default_factory=list)
    wrong_pairs: list[str] = field(default_factory=list)

    @staticmethod
    def _ratio(a: int, b: int) -> float:
        return a / b if b else 1.0

    @property
    def extraction_precision(self) -> float:
        return self._ratio(self.questions_matched, self.questions_predicted)

    @property
    def extraction_recall(self) -> float:
        return self._ratio(self.questions_matched, self.questions_truth)

    @property
    def pairing_precision(self) -> float:
        return self._ratio(self.pairs_correct, self.pairs_predicted)

    @property
    def pairing_recall(self) -> float:
        return self._ratio(self.pairs_correct, self.answers_truth)

    def summary(self) -> str:
        return (f"extraction P {self.extraction_precision:.3f} R {self.extraction_recall:.3f} "
                f"({self.questions_matched}/{self.questions_predicted} predicted, {self.questions_matched}/{self.questions_truth} true); "
                f"pairing P {self.pairing_precision:.3f} R {self.pairing_recall:.3f} "
                f"({self.pairs_correct}/{self.pairs_predicted} pairs, {self.pairs_correct}/{self.answers_truth} answers); "
                f"unanswered kept {self.unanswered_kept}/{self.unanswered_truth}")


def score(predicted: list[dict], truth: list[Truth], min_ratio: float = 0.85) -> Scores:
    """`predicted`: QA item rows (question, answer, source.document, tags)."""
    s = Scores(questions_truth=len(truth), questions_predicted=len(predicted))
    s.answers_truth = sum(1 for t in truth if t.answer)
    s.unanswered_truth = sum(1 for t in truth if not t.answer)
    s.pairs_predicted = sum(1 for p in predicted if p["answer"])
    by_doc: dict[str, list[int]] = {}
    for j, p in enumerate(predicted):
        by_doc.setdefault(Path(p["source"]["document"]).name, []).append(j)  # records name files relative to --input
    taken: set[int] = set()
    for t in truth:
        cands = [j for j in by_doc.get(Path(t.document).name, []) if j not in taken]
        tn = norm(t.question)
        exact = [j for j in cands if norm(predicted[j]["question"]) == tn]
        hit = exact[0] if exact else next((j for j in cands if similar(predicted[j]["question"], t.question, min_ratio)), None)
        if hit is None:
            s.missed.append(f"{t.key}: {t.question[:80]}")
            continue
        taken.add(hit)
        s.questions_matched += 1
        p = predicted[hit]
        if t.answer and p["answer"]:
            if similar(p["answer"], t.answer, min_ratio):
                s.pairs_correct += 1
            else:
                s.wrong_pairs.append(f"{t.key}: got {p['answer'][:60]!r}, want {t.answer[:60]!r}")
        elif t.answer and not p["answer"]:
            s.wrong_pairs.append(f"{t.key}: got no answer, want {t.answer[:60]!r}")
        elif not t.answer and not p["answer"]:
            s.unanswered_kept += 1
        elif not t.answer and p["answer"]:
            s.wrong_pairs.append(f"{t.key}: got {p['answer'][:60]!r}, want none")
    s.spurious = [predicted[j]["question"][:80] for j in range(len(predicted)) if j not in taken]
    return s


_LAST_NUMBER = re.compile(r"(\d+)\D*$")


@dataclass
class KeyedScores:
    """Scores against label truth (benchmarks/truth/*.json: item number, page, answer page)."""
    questions_truth: int = 0
    questions_predicted: int = 0  # worked examples left out: the truth lists exercises only
    questions_matched: int = 0
    answers_truth: int = 0
    pairs_predicted: int = 0
    pairs_correct: int = 0
    examples: int = 0
    missed: list[str] = field(default_factory=list)
    wrong_pairs: list[str] = field(default_factory=list)

    @property
    def extraction_precision(self) -> float:
        return Scores._ratio(self.questions_matched, self.questions_predicted)

    @property
    def extraction_recall(self) -> float:
        return Scores._ratio(self.questions_matched, self.questions_truth)

    @property
    def pairing_precision(self) -> float:
        return Scores._ratio(self.pairs_correct, self.pairs_predicted)

    @property
    def pairing_recall(self) -> float:
        return Scores._ratio(self.pairs_correct, self.answers_truth)

    @property
    def pairing_f1(self) -> float:
        p, r = self.pairing_precision, self.pairing_recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def summary(self) -> str:
        return (f"exercises {self.questions_matched}/{self.questions_truth} found ({self.questions_predicted} predicted, "
                f"P {self.extraction_precision:.3f} R {self.extraction_recall:.3f}); pairing P {self.pairing_precision:.3f} "
                f"R {self.pairing_recall:.3f} F1 {self.pairing_f1:.3f} ({self.pairs_correct}/{self.pairs_predicted} pairs, "
                f"{self.answers_truth} answers); {self.examples} worked examples not scored")


def score_keyed(predicted: list[dict], truth: list[dict]) -> KeyedScores:
    """Match items by (page where the item starts, the last number of its label); a pair is right
    when its answer came from the page the truth names, or one page off (an entry split by a page
    break; an inline answer is recorded at its question's first page). `truth`: [{"key", "n", "page", "answer_page"}]. A page-level check: two answer-key
    entries on one page are not told apart, so precision here is an upper bound."""
    import json as _json

    s = KeyedScores(questions_truth=len(truth), answers_truth=sum(1 for t in truth if t.get("answer_page")))
    rows = []
    for p in predicted:
        if "worked_example" in (p.get("tags") or []):
            s.examples += 1
            continue
        rows.append(p)
    s.questions_predicted = len(rows)
    s.pairs_predicted = sum(1 for p in rows if p["answer"])
    index: dict[tuple[int, str], list[int]] = {}
    for j, p in enumerate(rows):
        m = _LAST_NUMBER.search(str(p["source"].get("number") or ""))
        if m:
            index.setdefault((p["source"]["page"], str(int(m.group(1)))), []).append(j)
    taken: set[int] = set()
    for t in truth:
        hit = None
        for page in (t["page"], t["page"] - 1, t["page"] + 1):  # exact page first
            cands = [j for j in index.get((page, str(int(t["n"]))), []) if j not in taken]
            if cands:
                hit = cands[0]
                break
        if hit is None:
            s.missed.append(f"{t['key']} (page {t['page']})")
            continue
        taken.add(hit)
        s.questions_matched += 1
        p = rows[hit]
        want = t.get("answer_page")
        if not (want and p["answer"]):
            if want:
                s.wrong_pairs.append(f"{t['key']}: no answer, want one from page {want}")
            elif p["answer"]:
                s.wrong_pairs.append(f"{t['key']}: answer {p['answer'][:50]!r}, want none")
            continue
        got = (_json.loads(p.get("meta") or "{}").get("answer_source") or {}).get("page")
        if got in (want - 1, want, want + 1) or (got is None and p["answer"]):
            s.pairs_correct += 1
        else:
            s.wrong_pairs.append(f"{t['key']}: answer from page {got}, want {want}")
    return s
