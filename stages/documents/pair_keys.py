"""Matching answers to questions by numbering: the structural half of pairing.

Both sides carry a numbering path (`structure_patterns`): a question under chapter 1, section 4,
numbered 17 has ["1", "4", "17"]; the key entry "1.4.17." has the same path, the answer book's
"One.I.1.17" has ["1", "r1", "1", "17"] like the book's "1.17" under subsection I.1. Paths are
compared right-aligned: the item numbers must agree, then as many enclosing levels as both
sides know. The longest agreement wins; a tie is ambiguous (left to embeddings or an LLM).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass


def _same(a: str, b: str) -> bool:
    # "Appendix A" is chapter "app-a" in the book; its key "A.1.3." says just "a"
    return a == b or a.removeprefix("app-") == b.removeprefix("app-")


def agreement(question_path: list[str], answer_path: list[str]) -> int:
    """How many trailing components agree; -1 when any compared component disagrees."""
    if not question_path or not answer_path or question_path[-1] != answer_path[-1]:
        return -1
    n = min(len(question_path), len(answer_path))
    for k in range(1, n + 1):
        if not _same(question_path[-k], answer_path[-k]):
            return -1
    return n


@dataclass
class KeyMatch:
    question: int | None  # index of the matched question
    agreement: int  # components that agree (0: no candidate)
    tied: list[int]  # candidates sharing the best agreement, when ambiguous


class KeyIndex:
    """Questions of some documents, indexed by their item number: from (document, numbering path)
    per question, in order (so the per-run index that places answer books holds paths only)."""

    def __init__(self, questions: Iterable[tuple[str | None, list[str]]]):
        self.paths: list[list[str]] = []
        self.by_number: dict[tuple[str | None, str], list[int]] = defaultdict(list)
        for i, (doc, path) in enumerate(questions):
            self.paths.append(path)
            if path:
                self.by_number[(doc, path[-1])].append(i)

    def match(self, answer_path: list[str], documents: list[str]) -> KeyMatch:
        if not answer_path:
            return KeyMatch(None, 0, [])
        scored = []
        for doc in documents:
            for i in self.by_number.get((doc, answer_path[-1]), ()):
                a = agreement(self.paths[i], answer_path)
                if a > 0:
                    scored.append((a, i))
        if not scored:
            return KeyMatch(None, 0, [])
        best = max(a for a, _ in scored)
        tied = [i for a, i in scored if a == best]
        if len(tied) == 1:
            return KeyMatch(tied[0], best, [])
        return KeyMatch(None, best, tied)

    def full_matches(self, answer_paths: list[list[str]], document: str) -> int:
        """How many answer paths match a question of `document` on their whole path (>= 2 levels):
        evidence that an answer book belongs to that book."""
        n = 0
        for path in answer_paths:
            if len(path) >= 2 and any(
                agreement(self.paths[i], path) == len(path)
                for i in self.by_number.get((document, path[-1]), ())
            ):
                n += 1
        return n


def key_confidence(agreement_len: int, answer_len: int) -> float:
    """Numbering agreement -> confidence: the whole path (section and number) is near-certain,
    the bare number alone is a guess."""
    if agreement_len >= 2 and agreement_len >= answer_len:
        return 0.95
    if agreement_len >= 2:
        return 0.85
    return 0.6
