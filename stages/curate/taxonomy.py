"""Taxonomy: a hierarchical topic (["physics", "mechanics"]) for each question.

The taxonomy is a data file (`stages/data/taxonomy.yaml`, or `path`): domain -> subtopic, each
with a description and example questions. Embedded default: the question's embedding is compared
(cosine) with the embeddings of every subtopic's description and examples; the best subtopic
wins. Below `min_similarity` the topic is `["other"]` (tag `topic_uncertain`) or the item is
dropped (`off_taxonomy`), by `unknown`. The LLM path picks one path from the same file.

Embeddings come from `rlclimb.stages.embedding` (default all-MiniLM-L6-v2, packaged on PyPI; the
`embed` extra). They are batched: the records of a shard are submitted concurrently and encoded
together, one model call per `batch_size` texts (~20x faster than one call per record on CPU).
"""

from __future__ import annotations

import asyncio
import hashlib
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import create_model

from rlclimb.pipelines.stage import ConfigError, Drop, Record, StageContext
from rlclimb.schemas.io import load_yaml

from ..embedding import Backend, load_embedder, missing_extra
from .common import CurateConfig, CurateStage, add_tag, kept


class TaxonomyError(ValueError):
    """An unusable taxonomy file: the message names the file and the entry to fix."""


def load_taxonomy(path: str | None) -> tuple[dict[str, dict[str, dict[str, Any]]], bytes]:
    """{domain: {subtopic: {"description", "scopes", "examples"}}} and the file's bytes. `scopes`
    (optional) are further descriptions of one subtopic that covers several fields (algebra: school
    algebra, and abstract algebra): each is matched on its own, so that one does not dilute the other."""
    if path:
        try:
            raw = Path(path).read_bytes()
        except OSError as e:
            raise TaxonomyError(f"cannot read taxonomy file {path}: {e.strerror}") from None
        where = path
    else:
        raw = (resources.files("rlclimb.stages") / "data" / "taxonomy.yaml").read_bytes()
        where = "rlclimb/stages/data/taxonomy.yaml"
    try:
        data = load_yaml(raw) or {}
    except yaml.YAMLError as e:
        raise TaxonomyError(f"taxonomy file {where} is not valid YAML: {e}") from None
    domains = data.get("domains") if isinstance(data, dict) else None
    if not isinstance(domains, dict) or not domains:
        raise TaxonomyError(f"taxonomy file {where}: expected a `domains:` mapping of domain -> subtopics")
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for domain, body in domains.items():
        subs = (body or {}).get("subtopics") if isinstance(body, dict) else None
        if not isinstance(subs, dict) or not subs:
            raise TaxonomyError(f"taxonomy file {where}: domain {domain!r} needs a `subtopics:` mapping")
        out[str(domain)] = {}
        for sub, entry in subs.items():
            entry = entry or {}
            desc = entry.get("description") if isinstance(entry, dict) else None
            examples = entry.get("examples", []) if isinstance(entry, dict) else None
            scopes = entry.get("scopes", []) if isinstance(entry, dict) else None
            if not isinstance(desc, str) or not desc.strip():
                raise TaxonomyError(f"taxonomy file {where}: {domain}/{sub} needs a non-empty `description`")
            for key, value in (("examples", examples), ("scopes", scopes)):
                if not isinstance(value, list) or not all(isinstance(x, str) and x.strip() for x in value):
                    raise TaxonomyError(f"taxonomy file {where}: {domain}/{sub} `{key}` must be a list of non-empty strings")
            out[str(domain)][str(sub)] = {"description": desc.strip(), "scopes": [x.strip() for x in scopes], "examples": examples}
    return out, raw


def _plurality_share(own, groups: list[str], n: int):
    """Per item, a row with one entry set: the share of its group's other items (itself left out)
    whose own choice is the group's most common one, at that choice. Groups of fewer than 3 items,
    and items of no group (""), get none."""
    import numpy as np

    out = np.zeros((len(own), n))
    keys = np.array(groups, dtype=object)
    for g in set(groups) - {""}:
        rows = np.flatnonzero(keys == g)
        if len(rows) < 3:
            continue
        counts = np.bincount(own[rows], minlength=n)
        for r in rows:
            others = counts.copy()
            others[own[r]] -= 1
            top = int(others.argmax())
            out[r, top] = others[top] / (len(rows) - 1)
    return out


class _Batcher:
    """Coalesces the texts of concurrently awaiting records into one encode call. `encode` gets
    the texts and their documents and returns one result per text."""

    def __init__(self, encode, max_batch: int):
        self.encode, self.max_batch = encode, max_batch
        self.pending: list[tuple[tuple[str, str], asyncio.Future]] = []
        self.scheduled = False

    async def submit(self, text: str, document: str = ""):
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.pending.append(((text, document), future))
        if len(self.pending) >= self.max_batch:
            self.flush()
        elif not self.scheduled:  # runs after every record already started has submitted
            self.scheduled = True
            loop.call_soon(self.flush)
        return await future

    def flush(self) -> None:
        self.scheduled = False
        batch, self.pending = self.pending, []
        if not batch:
            return
        try:
            results = self.encode([t for t, _ in batch])  # each t: (text, document)
        except Exception as e:
            for _, f in batch:
                if not f.done():
                    f.set_exception(e)
            return
        for (_, f), v in zip(batch, results, strict=True):
            if not f.done():
                f.set_result(v)


class TaxonomyConfig(CurateConfig):
    path: str | None = None  # taxonomy YAML; default: the packaged stages/data/taxonomy.yaml
    backend: Backend = "minilm"  # rlclimb.stages.embedding backend (minilm, minilm-int8, static)
    min_similarity: float = 0.2  # below: unknown topic (~4% of the STEM items in tests/data/curate_*.jsonl; half the non-STEM ones)
    # Document context: the section heading is read with the question, and the domain most other
    # items of the same document (in the batch) fall in gets this bonus x their share: a book on
    # abstract algebra makes "groups of order 8" math, not chemistry. 0 turns the prior off.
    document_prior: float = 0.2
    # The same at the subtopic level: the subtopic most of the document's other items fall in gets
    # this x their share. "Find dy/dx" in a calculus book stays calculus though "differential
    # equations" is as close; a discrete-maths book's logic items stay with its combinatorics.
    # (Per chapter instead was measured too: worse, chapters are small and their pluralities noisy.)
    # 0 turns it off.
    subtopic_prior: float = 0.2
    with_heading: bool = True
    unknown: Literal["other", "drop"] = "other"
    batch_size: int = 128
    max_chars: int = 1000  # of the question, embedded


PROMPT = """Classify this question into exactly one topic path from the list.

Topics:
{topics}

Question:
{question}

Reply with JSON: {{"path": "domain/subtopic"}}"""


class TaxonomyStage(CurateStage):
    name = "taxonomy"
    version = "4"
    Config = TaxonomyConfig
    concurrency = 1024  # records in flight per shard: the batcher's supply

    @property
    def is_async(self) -> bool:  # both paths: the embedded one awaits its batch
        return True

    @cached_property
    def _taxonomy(self) -> tuple[dict, bytes]:
        return load_taxonomy(self.config.path)

    @property
    def fingerprint(self) -> str:  # an edited taxonomy file re-runs the stage
        return hashlib.sha256((super().fingerprint + hashlib.sha256(self._taxonomy[1]).hexdigest()).encode()).hexdigest()[:16]

    def check(self, llm_config) -> None:
        super().check(llm_config)
        if self.config.method != "llm" and (message := missing_extra(self.config.backend)) is not None:
            raise ConfigError(f"stage {self.name}: {message}")

    def setup(self, ctx: StageContext) -> None:
        super().setup(ctx)
        taxonomy = self._taxonomy[0]
        self.paths = [f"{d}/{s}" for d, subs in taxonomy.items() for s in subs]
        self.domains = list(taxonomy)
        if self.config.method == "llm":
            self.reply_model = create_model("TopicReply", path=(Literal[tuple(self.paths)], ...))  # type: ignore[valid-type]
            self.topics_text = "\n".join(f"- {d}/{s}: {' '.join([e['description'], *e['scopes']])}"
                                         for d, subs in taxonomy.items() for s, e in subs.items())
            return
        import numpy as np

        if (message := missing_extra(self.config.backend)) is not None:
            raise RuntimeError(f"stage {self.name}: {message}")
        self.model = load_embedder(self.config.backend)
        texts, owners, scope = [], [], []  # every description, scope and example is an anchor of its subtopic
        for d, subs in taxonomy.items():
            for s, entry in subs.items():
                scoped = [entry["description"], *entry["scopes"]]
                for i, text in enumerate([*scoped, *entry["examples"]]):
                    texts.append(text)
                    owners.append(self.paths.index(f"{d}/{s}"))
                    scope.append(i < len(scoped))
        self.anchor_vectors = self._encode(texts)
        self.anchor_owner = np.array(owners)
        self.scope_anchor = np.array(scope)  # the descriptions and scopes among the anchors
        self._batchers: dict[int, _Batcher] = {}

    def _encode(self, texts: list[str]):
        return self.model.encode(texts)  # L2-normalized float32: inner product = cosine

    def subtopic_scores(self, vectors):
        """Per embedded question, a score per subtopic: the mean of the cosine to its closest
        description or scope and the cosine to its closest anchor (description, scope or example):
        the description keeps the scope, examples catch phrasing (this beat max-only by 8 points of
        subtopic accuracy on tests/data/curate_labeled.jsonl)."""
        import numpy as np

        sims = vectors @ self.anchor_vectors.T  # all normalized: cosine
        best = np.full((len(vectors), len(self.paths)), -1.0)
        np.maximum.at(best.T, self.anchor_owner, sims.T)  # per subtopic: its closest anchor
        described = np.full((len(vectors), len(self.paths)), -1.0)
        np.maximum.at(described.T, self.anchor_owner[self.scope_anchor], sims[:, self.scope_anchor].T)
        return 0.5 * best + 0.5 * described

    def classify_vectors(self, vectors, documents: list[str] | None = None) -> list[tuple[str, float, float]]:
        """(path, similarity) for each embedded question. With `documents`, a document prior: the
        subtopics of the domain most of the document's other items (in the batch) fall in get
        `document_prior` x that share added before the argmax, and the subtopic most of them fall in
        gets `subtopic_prior` x its share. The similarity reported is the question's own score,
        which `min_similarity` applies to; the third value is the share of the document's other
        items in the chosen path's domain (0 without a prior)."""
        import numpy as np

        score = self.subtopic_scores(vectors)
        total = score
        share = np.zeros(len(vectors))
        domain_share = np.zeros((len(vectors), len(self.domains)))
        if documents is not None and self.config.document_prior:
            domain_of = np.array([self.domains.index(p.split("/")[0]) for p in self.paths])
            own = domain_of[score.argmax(axis=1)]
            domain_share = _plurality_share(own, documents, len(self.domains))
            total = total + self.config.document_prior * domain_share[:, domain_of]
        if documents is not None and self.config.subtopic_prior:
            total = total + self.config.subtopic_prior * _plurality_share(score.argmax(axis=1), documents, len(self.paths))
        top = total.argmax(axis=1)
        for i, t in enumerate(top):
            share[i] = domain_share[i, self.domains.index(self.paths[t].split("/")[0])]
        return [(self.paths[t], float(score[i, t]), float(share[i])) for i, t in enumerate(top)]

    def _encode_and_classify(self, items: list[tuple[str, str]]) -> list[tuple[str, float, float]]:
        vectors = self._encode([t for t, _ in items])
        return self.classify_vectors(vectors, [d for _, d in items])

    def _text(self, record: Record) -> str:
        question = record["question"][: self.config.max_chars]
        if not self.config.with_heading:
            return question
        import json

        heading = json.loads(record.get("meta") or "{}").get("section_title")
        return f"{heading}: {question}" if heading else question

    def process(self, record: Record, ctx: StageContext) -> Any:
        if self.config.method == "llm":
            return self.llm(record, ctx)
        return self._embedded_async(record, ctx)

    async def _embedded_async(self, record: Record, ctx: StageContext) -> Record | Drop:
        loop_id = id(asyncio.get_running_loop())
        batcher = self._batchers.get(loop_id)
        if batcher is None:
            batcher = self._batchers[loop_id] = _Batcher(self._encode_and_classify, self.config.batch_size)
        document = str((record.get("source") or {}).get("document") or "")
        path, similarity, document_share = await batcher.submit(self._text(record), document)
        if similarity < self.config.min_similarity and document_share >= 0.5:
            # the question alone is unclear, but most of its document is in this domain: keep the path, say so
            record["topic"] = path.split("/")
            return add_tag(record, "topic_uncertain")
        if similarity < self.config.min_similarity:
            if self.config.unknown == "drop":
                return Drop("off_taxonomy", f"best topic {path} at similarity {similarity:.2f} < {self.config.min_similarity}")
            record["topic"] = ["other"]
            return add_tag(record, "topic_uncertain")
        record["topic"] = path.split("/")
        return record

    async def llm(self, record: Record, ctx: StageContext):
        prompt = PROMPT.format(topics=self.topics_text, question=record["question"])
        reply, completion = await self.ask(ctx, prompt, self.reply_model)
        record["topic"] = reply.path.split("/")
        return kept(record, completion)

