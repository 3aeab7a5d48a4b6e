"""Typed records: the things that flow through rlclimb.

Every record has a stable content `id`, a `source` block and `provenance` (one event per stage).
Free-form payloads that vary per kind (tool parameters, databases, metadata) are JSON strings so
that every record kind maps onto a fixed Arrow schema.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .ids import content_id, normalize_text


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Source(Model):
    """Where a record came from: a document (file, page, span), a URL/commit, or an input line."""

    document: str | None = None
    page: int | None = None
    section: str | None = None
    number: str | None = None  # exercise / problem number as printed
    span: str | None = None  # e.g. "120:348" character offsets, or a bbox "x0,y0,x1,y1"
    url: str | None = None
    commit: str | None = None
    line: int | None = None  # 1-based line in a JSONL input
    license: str | None = None


class StageEvent(Model):
    """One stage's decision about one record."""

    stage: str
    version: str
    decision: Literal["keep", "modify", "drop", "expand", "create"] = "keep"
    reason: str | None = None
    model: str | None = None
    votes: list[str] = Field(default_factory=list)
    cost: float = 0.0


AnswerType = Literal[
    "numeric", "expression", "interval", "set", "choice", "boolean", "text", "proof"
]
QuestionType = Literal["open", "multiple_choice", "proof", "true_false"]


class TierSolve(Model):
    """One model tier's attempts at a QA item (difficulty scoring): extracted answers, not texts."""

    tier: str  # role, e.g. "tier-0"
    model: str  # the profile that answered
    samples: int = 0
    correct: int = 0
    answers: list[str] = Field(default_factory=list)  # final answers stated; "" when none
    verdicts: list[bool] = Field(default_factory=list)  # per sample, by the answer checker
    truncated: int = 0  # stopped at max tokens without a final answer (counted wrong)
    no_answer: int = 0  # finished without a final answer (counted wrong)
    texts: list[str] = Field(default_factory=list)  # full responses, only with solve.keep_texts
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0  # at the tier's price (a sample answered from the cache counts too)


class TierRate(Model):
    """One tier's share of correct samples. A list of these, not a map: Hugging Face `datasets`
    has no map type, and every output column must load there."""

    tier: str
    rate: float


def pass_rate_map(rates: list | dict | None) -> dict[str, float]:
    """`pass_rates` as {tier: rate}, from a row ([{tier, rate}]), models, or the old map form."""
    if isinstance(rates, dict):
        return dict(rates)
    rows = [r.model_dump() if isinstance(r, BaseModel) else r for r in rates or []]
    return {r["tier"]: r["rate"] for r in rows}


def pass_rate_list(rates: dict[str, float]) -> list[dict[str, float | str]]:
    """{tier: rate} as the stored form, in the order given (weakest tier first)."""
    return [{"tier": t, "rate": r} for t, r in rates.items()]


class QAItem(Model):
    id: str = ""
    question: str
    answer: str
    solution: str | None = None  # worked solution text, when the source has one
    answer_type: AnswerType | None = None
    question_type: QuestionType | None = None
    choices: list[str] = Field(default_factory=list)
    topic: list[str] = Field(default_factory=list)  # hierarchical path, e.g. ["math", "algebra"]
    difficulty: str | None = None
    tags: list[str] = Field(default_factory=list)
    pass_rates: list[TierRate] = Field(default_factory=list)  # per tier, weakest first
    solve: list[TierSolve] = Field(default_factory=list)  # the samples behind pass_rates
    meta: str = "{}"  # JSON object: fields kept from the input that the schema does not name
    source: Source = Field(default_factory=Source)
    provenance: list[StageEvent] = Field(default_factory=list)

    @field_validator("pass_rates", mode="before")
    @classmethod
    def _rates_from_mapping(cls, v):  # {tier: rate} is accepted and stored as a list
        return pass_rate_list(v) if isinstance(v, dict) else v

    def model_post_init(self, __context) -> None:
        if not self.id:
            self.id = qa_id(self.question, self.answer)


def qa_id(question: str, answer: str) -> str:
    return content_id("qa", normalize_text(question), normalize_text(answer))


class TestCase(Model):
    __test__ = False  # not a pytest class
    input: str  # stdin, or the call expression for function-style tests
    output: str  # expected stdout, or the expected value's repr
    kind: Literal["stdio", "call"] = "stdio"


class Solution(Model):
    language: str  # "python", "cpp", ...
    code: str


class CodeProblem(Model):
    id: str = ""
    statement: str
    tests: list[TestCase]
    solutions: list[Solution] = Field(default_factory=list)
    entry_point: str | None = None  # function name for call-style tests
    time_limit_s: float = 6.0
    memory_limit_mb: int = 512
    difficulty: str | None = None
    tags: list[str] = Field(default_factory=list)
    meta: str = "{}"
    source: Source = Field(default_factory=Source)
    provenance: list[StageEvent] = Field(default_factory=list)

    def model_post_init(self, __context) -> None:
        if not self.id:
            self.id = content_id("code", normalize_text(self.statement))


class SWETask(Model):
    """A SWE-bench-style flat instance: a repository at a base commit, the gold patch, and the tests that must flip from failing to passing."""

    id: str = ""  # instance id, e.g. "owner__repo-1234"
    repo: str
    base_commit: str
    patch: str  # gold code diff
    test_patch: str  # hidden test diff
    problem_statement: str
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    image: str | None = None
    test_command: str | None = None
    created_at: str | None = None
    meta: str = "{}"
    source: Source = Field(default_factory=Source)
    provenance: list[StageEvent] = Field(default_factory=list)

    def model_post_init(self, __context) -> None:
        if not self.id:
            self.id = content_id("swe", self.repo, self.base_commit, self.patch)


class ToolSpec(Model):
    name: str
    description: str
    parameters: str = "{}"  # JSON schema of the arguments (OpenAI function format)
    implementation: str = ""  # Python source of `invoke(data, **kwargs)`


class ToolCall(Model):
    name: str
    arguments: str = "{}"  # JSON object


class ToolTask(Model):
    id: str = ""
    environment_id: str = ""
    instruction: str
    persona: str | None = None
    actions: list[ToolCall] = Field(default_factory=list)  # gold trajectory
    outputs: list[str] = Field(default_factory=list)  # strings the final answer must contain
    needs_tools: bool = True

    def model_post_init(self, __context) -> None:
        if not self.id:
            self.id = content_id("task", self.environment_id, normalize_text(self.instruction))


class ToolEnvironment(Model):
    id: str = ""
    name: str
    description: str
    tools: list[ToolSpec] = Field(default_factory=list)
    database: str = "{}"  # JSON: the seeded initial state
    tasks: list[ToolTask] = Field(default_factory=list)
    meta: str = "{}"
    source: Source = Field(default_factory=Source)
    provenance: list[StageEvent] = Field(default_factory=list)

    def model_post_init(self, __context) -> None:
        if not self.id:
            self.id = content_id("toolenv", self.name, normalize_text(self.description))


class RewardComponents(Model):
    """The reward parts every environment reports (environments/rewards.py); a struct, not a map,
    so rollouts load in Hugging Face `datasets`."""

    task: float = 0.0  # the environment's verdict: 1 solved, 0 not (partial for some kinds)
    format: float = 0.0  # 1 when the response has the expected answer format
    lang: float = 0.0  # language consistency of the reasoning
    length: float = 0.0  # pass-rate-scaled length penalty (subtracted)


class Rollout(Model):
    id: str = ""
    prompt_id: str
    environment: str  # "math", "code", "swe", "tool"
    policy_version: int
    prompt: str
    completion: str
    reward: float
    reward_components: RewardComponents = Field(default_factory=RewardComponents)
    num_tokens: int = 0
    truncated: bool = False
    step: int = 0

    def model_post_init(self, __context) -> None:
        if not self.id:
            self.id = content_id(
                "rollout", self.prompt_id, str(self.policy_version), str(self.step), self.completion
            )


class MixSource(Model):
    """One selection of a mix: a dataset and what to take from it (all filters must hold)."""

    path: str  # a run directory, a mix directory, a dataset directory or file
    name: str | None = None  # label in the manifest and card (default: the path)
    weight: float = Field(1.0, gt=0)
    filter: str | None = None  # polars SQL WHERE clause, e.g. "difficulty = 'hard'"
    kinds: list[Literal["math", "code"]] = Field(default_factory=list)  # environment kinds; [] = all
    topics: list[str] = Field(default_factory=list)  # topic path prefixes, e.g. "math/algebra"
    difficulty: list[str] = Field(default_factory=list)  # difficulty bins, e.g. ["tier-0", "unsolved"]
    pass_rate: tuple[float, float] | None = None  # keep items whose pass rate lies in [lo, hi]
    pass_rate_tier: str | None = None  # the tier the band reads (default: mean over tiers)
    max_items: int | None = Field(None, ge=0)  # cap, drawn at random (seeded)


class MixSpec(Model):
    """A weighted union of curated datasets: read by `rlclimb train` and materialized by
    `rlclimb mix` (which also splits it and removes near-duplicates across sources)."""

    name: str
    sources: list[MixSource] = Field(min_length=1)
    total: int | None = Field(None, ge=1)  # sample count of the mix; None = use weights as relative shares
    seed: int = 0
    validation: float = Field(0.1, ge=0, lt=1)  # `mix`: share of items held out (by content id)
    dedup: Literal["minhash", "exact", "none"] = "minhash"  # `mix`: near-duplicates across sources
    license: str | None = None  # `mix`/`card`: the dataset's license (default: the sources')
    description: str | None = None  # `card`: the summary paragraph


RECORD_KINDS: dict[str, type[Model]] = {
    "qa": QAItem,
    "code": CodeProblem,
    "swe": SWETask,
    "toolenv": ToolEnvironment,
    "tooltask": ToolTask,
    "rollout": Rollout,
}
