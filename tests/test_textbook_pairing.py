"""The pair stage on question and answer spans: numbering, answer books, duplicates, leftovers,
and (slow: loads MiniLM) embeddings."""

from __future__ import annotations

import json

import pytest

from rlclimb.pipelines.stage import Drop, StageContext
from rlclimb.stages.documents.pair_keys import KeyIndex
from rlclimb.stages.documents.pair_qa import PairQA


def span(role: str, doc: str, path: list[str], text: str, answer: str | None = None, order: int = 0) -> dict:
    return {"id": f"{role}-{doc}-{order}", "role": role, "kind": "answer" if role == "answer" else "exercise",
            "text": text, "answer": answer, "path": path, "section": ".".join(path[:-1]), "section_title": None,
            "number": path[-1] if path else None, "instruction": None,
            "source": {"document": doc, "page": 1, "span": "0,0,1,1", "line": None},
            "answer_source": None, "method": "structure", "confidence": 1.0, "backends": ["text"], "order": order,
            "provenance": []}


def pair(spans: list[dict], **config) -> tuple[list[dict], list[tuple[dict, Drop]]]:
    out = list(PairQA(**config).run(spans, None))
    return [r for r in out if isinstance(r, dict)], [r for r in out if isinstance(r, tuple)]


def methods(items: list[dict]) -> dict[str, tuple[str, str]]:
    return {i["question"]: (i["answer"], json.loads(i["meta"])["pair_method"]) for i in items}


def test_answer_book_is_matched_to_the_book_whose_numbering_it_fits():
    spans = [
        span("question", "algebra.pdf", ["1", "r1", "1", "17"], "Solve x + 1 = 3."),
        span("question", "algebra.pdf", ["1", "r1", "1", "18"], "Solve 2x = 8."),
        span("question", "algebra.pdf", ["2", "r1", "1", "17"], "Is R^2 a vector space?"),
        span("question", "calculus.pdf", ["1", "17"], "Differentiate x^2."),
        span("question", "calculus.pdf", ["1", "18"], "Differentiate x^3."),
        span("answer", "algebra-answers.pdf", ["1", "r1", "1", "17"], "x = 2"),
        span("answer", "algebra-answers.pdf", ["1", "r1", "1", "18"], "x = 4"),
        span("answer", "algebra-answers.pdf", ["2", "r1", "1", "17"], "Yes."),
    ]
    items, drops = pair(spans, embeddings=False, companion_min_matches=2)
    assert methods(items) == {
        "Solve x + 1 = 3.": ("x = 2", "numbering"), "Solve 2x = 8.": ("x = 4", "numbering"),
        "Is R^2 a vector space?": ("Yes.", "numbering"),
        "Differentiate x^2.": ("", "none"), "Differentiate x^3.": ("", "none"),  # the other book stays unanswered
    }
    assert drops == []
    item = next(i for i in items if i["answer"] == "x = 2")
    meta = json.loads(item["meta"])
    assert meta["pair_confidence"] == 0.95 and meta["answer_source"]["document"] == "algebra-answers.pdf"
    assert item["provenance"][-1]["stage"] == "pair" and item["provenance"][-1]["reason"] == "numbering (0.95)"


def test_section_and_number_beat_number_alone():
    spans = [
        span("question", "b.pdf", ["2", "1", "5"], "Section 2.1, exercise 5."),
        span("question", "b.pdf", ["2", "3", "5"], "Section 2.3, exercise 5."),
        span("answer", "b.pdf", ["2", "3", "5"], "answer for 2.3 #5"),
        span("answer", "b.pdf", ["2", "1", "5"], "answer for 2.1 #5"),
    ]
    items, drops = pair(spans, embeddings=False)
    assert methods(items) == {"Section 2.1, exercise 5.": ("answer for 2.1 #5", "numbering"),
                              "Section 2.3, exercise 5.": ("answer for 2.3 #5", "numbering")}
    assert drops == []


def test_inline_answers_duplicates_and_leftovers():
    spans = [
        span("question", "b.pdf", ["1", "1"], "Compute 2 + 2.", answer="4"),
        span("question", "b.pdf", ["1", "2"], "Compute 3 + 3."),
        span("question", "b.pdf", ["1", "3"], "Compute 4 + 4."),
        span("answer", "b.pdf", ["1", "2"], "6", order=1),
        span("answer", "b.pdf", ["1", "2"], "six", order=2),  # a second answer for 1.2
        span("answer", "b.pdf", ["9", "9"], "99", order=3),  # fits nothing
    ]
    items, drops = pair(spans, embeddings=False)
    assert methods(items) == {"Compute 2 + 2.": ("4", "inline"), "Compute 3 + 3.": ("6", "numbering"),
                              "Compute 4 + 4.": ("", "none")}
    assert items[2]["tags"] == ["unanswered"]
    assert [(r["text"], d.reason) for r, d in drops] == [("six", "duplicate_answer"), ("99", "unmatched_answer")]
    assert "b.pdf page 1" in drops[1][1].detail
    items, drops = pair(spans, embeddings=False, unanswered="ledger")
    assert [d.reason for _, d in drops].count("unanswered") == 1 and len(items) == 2  # in the ledger instead


@pytest.mark.slow
def test_embeddings_break_numbering_ties_and_place_unnumbered_answers():
    spans = [
        span("question", "b.pdf", ["1", "1", "3"], "Find the area of a circle whose radius is 3 cm."),
        span("question", "b.pdf", ["1", "2", "3"], "How many ways can 5 books be arranged on a shelf?"),
        span("question", "b.pdf", ["1", "2", "4"], "Name the largest planet of the solar system."),
        span("answer", "b.pdf", ["3"], "The 5 books can be arranged on a shelf in 120 ways."),  # ties on "3"
        span("answer", "b.pdf", [], "The largest planet of the solar system is Jupiter."),  # no number at all
    ]
    items, drops = pair(spans)
    got = methods(items)
    assert got["How many ways can 5 books be arranged on a shelf?"] == (
        "The 5 books can be arranged on a shelf in 120 ways.", "numbering+embedding")
    assert got["Name the largest planet of the solar system."] == (
        "The largest planet of the solar system is Jupiter.", "embedding")
    assert got["Find the area of a circle whose radius is 3 cm."] == ("", "none") and drops == []


class GroupSizes(PairQA):
    """PairQA recording how many spans each group it pairs holds at once."""

    def pair_group(self, spans, targets, ctx):
        spans = list(spans)
        self.sizes = [*getattr(self, "sizes", []), len(spans)]
        return super().pair_group(spans, targets, ctx)


def test_pairs_one_document_group_at_a_time_with_the_run_at_once_results(tmp_path):
    """Two books, one with its answers at the back, the other with a separate answer book that
    arrives after a third document: each group is paired alone (memory: the largest group), and
    the items and drops equal pairing the whole run as one group (the old behaviour)."""
    spans = [
        span("question", "algebra.pdf", ["1", "r1", "1", "17"], "Solve x + 1 = 3.", order=0),
        span("question", "algebra.pdf", ["1", "r1", "1", "18"], "Solve 2x = 8.", order=1),
        span("question", "algebra.pdf", ["2", "r1", "1", "17"], "Is R^2 a vector space?", order=2),
        span("question", "calculus.pdf", ["1", "17"], "Differentiate x^2.", order=3),
        span("question", "calculus.pdf", ["1", "18"], "Differentiate x^3.", order=4),
        span("answer", "calculus.pdf", ["1", "17"], "2x", order=5),
        span("answer", "calculus.pdf", ["1", "17"], "two x", order=6),  # a duplicate answer
        span("answer", "stray-key.pdf", ["7", "1"], "42", order=7),  # an answer book fitting no book
        span("answer", "algebra-answers.pdf", ["1", "r1", "1", "17"], "x = 2", order=8),
        span("answer", "algebra-answers.pdf", ["1", "r1", "1", "18"], "x = 4", order=9),
        span("answer", "algebra-answers.pdf", ["2", "r1", "1", "17"], "Yes.", order=10),
    ]
    stage = GroupSizes(embeddings=False, companion_min_matches=2)
    out = list(stage.run(iter(spans), StageContext(run_dir=tmp_path)))
    assert sorted(stage.sizes) == [1, 4, 6]  # calculus, stray key alone, algebra + its answer book
    assert not (tmp_path / "tmp").exists() or not any((tmp_path / "tmp").iterdir())  # spool removed
    whole = PairQA(embeddings=False, companion_min_matches=2)
    targets = whole._targets({"calculus.pdf": [["1", "17"]] * 2, "stray-key.pdf": [["7", "1"]],
                              "algebra-answers.pdf": [s["path"] for s in spans[8:]]},
                             KeyIndex((s["source"]["document"], s["path"]) for s in spans[:5]),
                             {"algebra.pdf", "calculus.pdf"})
    at_once = list(whole.pair_group(spans, targets, None))
    items = [r for r in out if isinstance(r, dict)]
    assert items == [r for r in at_once if isinstance(r, dict)]  # same items, same order
    drops = sorted((r["id"], d.reason) for r, d in (r for r in out if isinstance(r, tuple)))
    assert drops == sorted((r["id"], d.reason) for r, d in (r for r in at_once if isinstance(r, tuple)))
    assert drops == [("answer-calculus.pdf-6", "duplicate_answer"), ("answer-stray-key.pdf-7", "unmatched_answer")]
    assert methods(items)["Solve 2x = 8."] == ("x = 4", "numbering")
