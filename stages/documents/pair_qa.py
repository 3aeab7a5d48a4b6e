"""Pair: question and answer spans -> QA items, when answers live apart from their questions.

A global stage (answers at the back of a book, or in a separate answer book, need every question
first). For each answer-key entry, in order:
1. numbering (`pair_keys`): the question whose numbering path agrees with the answer's on the
   most levels (section + number beats number alone); an answer book with no questions of its
   own is matched against the book whose numbering it fits best (`companion`);
2. embeddings (sentence-transformers, MiniLM by default, via `rlclimb.stages.embedding`, faiss
   inner-product search): to break numbering ties, and to place answers whose numbering fits
   nothing (only when the similarity is high and clearly ahead of the runner-up);
3. an LLM, when `llm_role` is set: picks among the top candidates for answers still unplaced or
   ambiguous, and (`llm_verify`) confirms numbering matches, rejecting mismatched pairs.
Inline answers (printed with their question) pass straight through. Each item records how it was
paired and a confidence. Questions without an answer are kept, tagged `unanswered` (or ledgered,
`unanswered: ledger`); answers that fit no question are ledgered (`unmatched_answer`).
Pairing runs per document group: a document with questions, plus the answer books whose
numbering places them there (decided first, from every span's numbering path). The spans spool
to disk as they come; each group is read back and paired alone. Memory: the largest group's
spans (text only; pages are long gone) plus embeddings of the few that need them, and per span
of the run 8 bytes of spool offset and its numbering path (~100 bytes).
"""

from __future__ import annotations

import asyncio
import json
import struct
from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any, Literal

import orjson
from pydantic import BaseModel, Field

from rlclimb.pipelines.spill import RecordSpool, spilling
from rlclimb.pipelines.stage import ConfigError, Drop, Record, Stage, StageConfig, StageContext
from rlclimb.schemas.records import QAItem, Source

from .pair_keys import KeyIndex, key_confidence
from .parse_vlm import require_llm


class PairConfig(StageConfig):
    embeddings: bool = True  # use embedding similarity for ties and for unnumbered answers
    embedding_backend: str = "minilm"  # see rlclimb.stages.embedding
    min_similarity: float = 0.6  # embedding-only pairs need this cosine ...
    min_margin: float = 0.05  # ... and this lead over the runner-up
    top_k: int = 5  # candidates shown to the LLM
    llm_role: str | None = None  # LLM role/profile: pick among candidates for unplaced answers
    llm_verify: bool = False  # also ask the LLM to confirm numbering matches
    companion_min_matches: int = 3  # an answer book adopts the book it matches this often
    unanswered: Literal["keep", "ledger"] = "keep"
    license: str | None = None  # of documents without a sidecar FILE.license (rlclimb run --license)


class PickAnswer(BaseModel):
    """The LLM's choice among numbered candidate questions."""

    choice: int | None = Field(None, description="number of the matching question, or null if none matches")
    confidence: float = Field(0.5, ge=0, le=1)


class VerifyPair(BaseModel):
    matches: bool = Field(description="true if the answer answers this question")
    reason: str = ""


class PairQA(Stage):
    name = "pair"
    version = "1"
    kind = "global"
    Config = PairConfig
    output_model = QAItem
    # Set by the pipeline definition from its reader: a document's path -> (the name records
    # carry, relative to its --input; its sidecar license). Paths stay absolute until here
    # because the parse stages open the files.
    documents: dict[str, tuple[str, str | None]] = {}

    def check(self, llm_config: Any) -> None:
        if self.config.llm_role:
            require_llm(llm_config, self.config.llm_role, "pair.llm_role")
        from ..embedding import BACKENDS

        if self.config.embeddings and self.config.embedding_backend not in BACKENDS:
            raise ConfigError(f"pair.embedding_backend: unknown {self.config.embedding_backend!r}; "
                              f"choose one of {', '.join(BACKENDS)}")

    note: str | None = None  # why embeddings are off, when their extra is missing (set by _by_meaning)

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        """Spool the spans, then pair one document group at a time (a document with the answer
        books that answer it), so memory holds the largest group, not the run."""
        self.note = None
        with spilling(ctx or StageContext(), self.name, None) as workdir:
            spool = SpanSpool(workdir)
            for r in records:
                spool.append(r)
            spool.close()
            targets, groups = self.groups(spool.keys)
            for docs in groups:
                yield from self.pair_group(spool.read(docs), targets, ctx)

    def groups(self, keys: SpanKeys) -> tuple[dict[str, list[str]], list[list[str]]]:
        """(the documents each answer document answers, the document groups in output order),
        from the spans' numbering paths alone. Each group is then paired alone (`pair_group`,
        its spans in input order): the Ray executor pairs the groups on the cluster."""
        targets = self._targets(keys.answer_paths, KeyIndex(keys.question_paths), keys.with_questions)
        return targets, document_groups(keys.documents, keys.with_questions, targets)

    def pair_group(self, spans: Iterable[dict], targets: dict[str, list[str]],
                   ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        """One document group's items and drops, in output order. `spans`: the group's spans in
        input order, as the spool gives them back (a JSON round trip)."""
        questions: list[dict] = []
        answers: list[dict] = []
        for r in spans:
            (questions if r["role"] == "question" else answers).append(r)
        pairs: dict[int, tuple[dict, str, float]] = {}  # question -> (answer, method, confidence)
        drops: list[tuple[dict, Drop]] = []
        open_q = [i for i, q in enumerate(questions) if not q.get("answer")]
        index = KeyIndex((q["source"]["document"], q["path"]) for q in questions)
        pending: list[tuple[int, list[int]]] = []  # (answer, candidate questions) for embeddings/LLM
        for ai, a in enumerate(answers):
            docs = targets.get(a["source"]["document"], [])
            m = index.match(a["path"], docs)
            if m.question is not None:
                self._assign(pairs, drops, m.question, a, "numbering", key_confidence(m.agreement, len(a["path"])))
            elif m.tied:
                pending.append((ai, m.tied))
            else:
                pending.append((ai, [i for i in open_q if questions[i]["source"]["document"] in docs]))
        if pending:
            unplaced = self._by_meaning(questions, answers, pending, pairs, drops)
            if self.config.llm_role and ctx.llm is not None and unplaced:
                unplaced = self._by_llm(questions, answers, unplaced, pairs, drops, ctx)
            for ai, _ in unplaced:
                a = answers[ai]
                hint = f" (embeddings off: {self.note})" if self.note else ""
                drops.append((a, Drop("unmatched_answer", f"{_where(a)}: answer {a.get('number')!r} "
                                                           f"(path {'.'.join(a['path'])}) fits no question{hint}")))
        if self.config.llm_verify and self.config.llm_role and ctx.llm is not None:
            self._verify(questions, pairs, drops, ctx)
        for qi, q in enumerate(questions):
            if q.get("answer"):
                yield self._item(q, q["answer"], q.get("answer_source"), "inline", q.get("confidence", 1.0))
            elif qi in pairs:
                a, method, conf = pairs[qi]
                yield self._item(q, a["text"], a["source"], method, conf)
            else:
                item = self._item(q, "", None, "none", 0.0)
                if self.config.unanswered == "ledger":
                    yield item, Drop("unanswered", f"{_where(q)}: no answer found for {q.get('number')!r}")
                else:
                    yield item
        yield from drops

    def _item(self, q: dict, answer: str, answer_source: dict | None, method: str, confidence: float) -> dict:
        """qa_item with the documents named as records carry them, and the license."""
        def named(src: dict | None) -> dict | None:
            if not src or src.get("document") not in self.documents:
                return src
            return {**src, "document": self.documents[src["document"]][0]}

        item = qa_item({**q, "source": named(q["source"])}, answer, named(answer_source), method, confidence)
        sidecar = self.documents.get(q["source"].get("document"), (None, None))[1]
        item["source"]["license"] = item["source"].get("license") or sidecar or self.config.license
        return item

    # ---- numbering -------------------------------------------------------------------------
    def _targets(self, answer_paths: dict[str, list[list[str]]], index: KeyIndex,
                 with_questions: set[str]) -> dict[str, list[str]]:
        """Documents whose questions an answer document answers: itself, or (an answer book)
        the book it matches best by numbering. `answer_paths`: each document's answer paths."""
        out = {}
        for doc, paths in answer_paths.items():
            if doc in with_questions:
                out[doc] = [doc]
                continue
            scores = sorted(((index.full_matches(paths, d), d) for d in with_questions), reverse=True)
            best = [d for n, d in scores if n >= self.config.companion_min_matches and n == scores[0][0]]
            out[doc] = best[:1]
        return out

    def _assign(self, pairs, drops, qi: int, a: dict, method: str, conf: float) -> None:
        held = pairs.get(qi)
        if held is None or conf > held[2]:
            if held is not None:
                drops.append((held[0], Drop("duplicate_answer", f"{_where(held[0])}: a better-fitting answer replaced it")))
            pairs[qi] = (a, method, conf)
        else:
            drops.append((a, Drop("duplicate_answer", f"{_where(a)}: question already has an answer ({held[1]})")))

    # ---- embeddings ------------------------------------------------------------------------
    def _by_meaning(self, questions, answers, pending, pairs, drops) -> list[tuple[int, list[int]]]:
        """Place pending answers by embedding similarity; returns those still unplaced, each with
        its best candidates (for the LLM)."""
        c = self.config
        if not c.embeddings:
            return [(ai, cands[: c.top_k]) for ai, cands in pending]
        from ..embedding import load_embedder, missing_extra

        if (problem := missing_extra(c.embedding_backend)) is not None:
            self.note = problem  # numbering still pairs; ledgered leftovers say what is missing
            return [(ai, cands[: c.top_k]) for ai, cands in pending]
        pending = [(ai, [i for i in cands if i not in pairs]) for ai, cands in pending]  # only free questions
        embedder = load_embedder(c.embedding_backend)
        need_q = sorted({i for _, cands in pending for i in cands})
        qvec = dict(zip(need_q, embedder.encode([questions[i]["text"] for i in need_q]), strict=True))
        avec = embedder.encode([answers[ai]["text"] for ai, _ in pending])
        unplaced = []
        for (ai, cands), av in zip(pending, avec, strict=True):
            free = [i for i in cands if i not in pairs]
            if not free:
                unplaced.append((ai, []))
                continue
            sims = _top(av, [qvec[i] for i in free], len(free))
            ranked = [(free[j], s) for j, s in sims]
            best, s1 = ranked[0]
            s2 = ranked[1][1] if len(ranked) > 1 else -1.0
            tie_break = len(cands) <= 5 and answers[ai]["path"] and questions[best]["path"][-1:] == answers[ai]["path"][-1:]
            if tie_break and s1 - s2 >= 0.02:
                self._assign(pairs, drops, best, answers[ai], "numbering+embedding", round(0.6 + 0.3 * s1, 3))
            elif s1 >= c.min_similarity and s1 - s2 >= c.min_margin:
                self._assign(pairs, drops, best, answers[ai], "embedding", round(float(s1), 3))
            else:
                unplaced.append((ai, [i for i, _ in ranked[: c.top_k]]))
        return unplaced

    # ---- LLM ---------------------------------------------------------------------------------
    def _by_llm(self, questions, answers, unplaced, pairs, drops, ctx) -> list[tuple[int, list[int]]]:
        role = self.config.llm_role

        async def pick(ai: int, cands: list[int]):
            if not cands:
                return None
            listing = "\n\n".join(f"[{k + 1}] {questions[i]['text'][:1500]}" for k, i in enumerate(cands))
            messages = [{"role": "user", "content": (
                "A textbook's answer key has this entry:\n\n" f"ANSWER: {answers[ai]['text'][:1500]}\n\n"
                "Which of these questions does it answer? Reply with the question's number, or null if "
                f"none.\n\n{listing}")}]
            choice, completion = await ctx.llm.structured(role, messages, PickAnswer, tag=self.name)
            return choice, completion

        results = _run_async([pick(ai, cands) for ai, cands in unplaced])
        still = []
        for (ai, cands), res in zip(unplaced, results, strict=True):
            if isinstance(res, Exception) or res is None or res[0].choice is None or not 1 <= res[0].choice <= len(cands):
                still.append((ai, cands))
                continue
            qi = cands[res[0].choice - 1]
            self._assign(pairs, drops, qi, answers[ai], "llm", round(res[0].confidence, 3))
        return still

    def _verify(self, questions, pairs, drops, ctx) -> None:
        role = self.config.llm_role
        items = [(qi, a) for qi, (a, _, _) in sorted(pairs.items())]

        async def verify(qi: int, a: dict):
            messages = [{"role": "user", "content": (
                f"QUESTION: {questions[qi]['text'][:2000]}\n\nANSWER: {a['text'][:2000]}\n\n"
                "Is this answer the answer to this question (not to a different one)?")}]
            verdict, _ = await ctx.llm.structured(role, messages, VerifyPair, tag=self.name)
            return verdict

        results = _run_async([verify(qi, a) for qi, a in items])
        for (qi, a), res in zip(items, results, strict=True):
            if isinstance(res, Exception):
                continue  # keep the structural pair; the failure shows in the LLM stats
            _, method, conf = pairs[qi]
            if res.matches:
                pairs[qi] = (a, method + "+llm", max(conf, 0.97))
            else:
                del pairs[qi]
                drops.append((a, Drop("llm_rejected_pair", f"{_where(a)}: {res.reason[:300]}")))


class SpanKeys:
    """What grouping needs of each span: its document, role and numbering path (~100 bytes)."""

    def __init__(self) -> None:
        self.documents: list[str] = []  # in order of first appearance
        self._seen: set[str] = set()
        self.question_paths: list[tuple[str, list[str]]] = []
        self.answer_paths: dict[str, list[list[str]]] = defaultdict(list)
        self.with_questions: set[str] = set()

    def add(self, doc: str, role: str, path: list[str]) -> None:
        if doc not in self._seen:
            self._seen.add(doc)
            self.documents.append(doc)
        if role == "question":
            self.question_paths.append((doc, path))
            self.with_questions.add(doc)
        else:
            self.answer_paths[doc].append(path)


class SpanSpool(RecordSpool):
    """The run's spans on disk, in order; in memory per document only where its spans are (8
    bytes each) and the numbering paths that place answer books (`keys`)."""

    def __init__(self, directory):
        super().__init__(directory)
        self.offsets: dict[str, array] = {}  # document -> its spans' offsets, in input order
        self.keys = SpanKeys()

    def append(self, record: Record) -> None:
        doc = record["source"]["document"]
        self.offsets.setdefault(doc, array("q")).append(self.bytes)
        self.keys.add(doc, record["role"], record["path"])
        super().append(record)

    def read(self, documents: list[str]) -> Iterator[Record]:
        """The spans of these documents, in input order."""
        offsets = sorted(o for d in documents for o in self.offsets[d])
        with open(self.path, "rb") as f:
            for o in offsets:
                f.seek(o)
                (n,) = struct.unpack("<I", f.read(4))
                yield orjson.loads(f.read(n))


def document_groups(documents: list[str], with_questions: set[str],
                    targets: dict[str, list[str]]) -> list[list[str]]:
    """Documents paired together: each document with questions, with the answer books whose
    answers target it; an answer book that targets none alone (its answers fit nothing).
    In order of first appearance, so items come out in the order the spans came in."""
    groups = {d: [d] for d in documents if d in with_questions}
    alone = []
    for d in documents:
        if d not in with_questions:
            if target := targets.get(d):
                groups[target[0]].append(d)
            else:
                alone.append([d])
    return [*groups.values(), *alone]


def _top(vec, mats, k):
    import numpy as np

    sims = np.asarray(mats, dtype="float32") @ np.asarray(vec, dtype="float32")
    order = np.argsort(-sims)[:k]
    return [(int(j), float(sims[j])) for j in order]


def _run_async(coros: list):
    """Run LLM calls concurrently from this (synchronous) global stage; errors come back as values.
    `asyncio.run` cancels leftover tasks before closing its loop: the LLM client's cue to close
    that loop's connections."""
    async def gather():
        return await asyncio.gather(*coros, return_exceptions=True)

    return asyncio.run(gather())


def _where(span: dict) -> str:
    src = span["source"]
    return f"{src.get('document')} page {src.get('page')}"


def qa_item(q: dict, answer: str, answer_source: dict | None, method: str, confidence: float) -> dict:
    """A QAItem row: the question's source; how and where its answer was found in `meta`."""
    src = dict(q["source"])
    src["section"] = q.get("section")
    src["number"] = q.get("number")
    meta = {
        "pair_method": method, "pair_confidence": confidence, "kind": q.get("kind"),
        "section_title": q.get("section_title"), "path": q.get("path"), "instruction": q.get("instruction"),
        "extract_method": q.get("method"), "parse_backends": q.get("backends"),
    }
    if answer_source:
        meta["answer_source"] = {k: answer_source.get(k) for k in ("document", "page", "span", "line")}
    tags = ["unanswered"] if not answer else []
    if q.get("kind") == "example":
        tags.append("worked_example")
    history = [*(q.get("provenance") or []), {
        "stage": "pair", "version": PairQA.version, "decision": "create", "reason": f"{method} ({confidence:g})",
        "model": None, "votes": [], "cost": 0.0}]
    item = QAItem(question=q["text"], answer=answer, tags=tags, source=Source(**src),
                  meta=json.dumps(meta, ensure_ascii=False, sort_keys=True), provenance=history)
    return item.model_dump()
