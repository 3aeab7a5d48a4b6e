"""The stage contract: what a stage is and what it may return.

A stage is a small class with a `name`, a `version`, a pydantic `Config`, and one of:
- kind "map":    process(record, ctx) -> record | Keep | Drop
- kind "filter": process(record, ctx) -> bool | Keep | Drop
- kind "expand": process(record, ctx) -> list[record] | Drop
- kind "global": run(records, ctx) -> iterator of record | (record, Drop)   (sees the whole input)
`process` may be `async def` (I/O-bound: LLM calls run concurrently on asyncio) or plain `def`
(CPU-bound: shards run in worker processes). The engine does all bookkeeping (ledger, stats,
provenance, cache, resume); stages only decide.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

Record = dict[str, Any]

# Drop reasons that say nothing about the record (the endpoint was down, a bug raised): never
# cached, so a resumed run retries them.
# Drops a resumed run retries (never row-cached): failures of the moment, not of the record.
TRANSIENT_DROP_REASONS = frozenset(
    {"llm_timeout", "llm_rate_limited", "llm_server_error", "llm_connection", "error", "budget_exceeded"}
)
Kind = Literal["map", "filter", "expand", "global"]


@dataclass(frozen=True)
class Drop:
    """A decision to drop a record, with a machine-readable reason and a human detail."""

    reason: str
    detail: str = ""
    model: str | None = None
    votes: tuple[str, ...] = ()
    cost: float = 0.0


@dataclass(frozen=True)
class Keep:
    """A kept record with extra provenance (model used, votes, cost, a note)."""

    record: Record
    reason: str | None = None
    model: str | None = None
    votes: tuple[str, ...] = ()
    cost: float = 0.0


class ConfigError(ValueError):
    """Unusable configuration, found before anything is written (the CLI exits 2 with it)."""


class StageSetupError(ConfigError):
    """A stage could not start (a model, a tool or a data file is missing or broken)."""


def setup_stages(stages: list[Stage], ctx: StageContext) -> None:
    """Run each stage's setup; a failure becomes one line naming the stage (no traceback)."""
    for stage in stages:
        try:
            stage.setup(ctx)
        except StageSetupError:
            raise
        except Exception as e:
            raise StageSetupError(f"stage {stage.name}: setup failed: {type(e).__name__}: {e}") from e


class StageConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass
class StageContext:
    """What a stage may use at run time. `sample` distinguishes the runs of a consensus stage."""

    run_dir: Path | None = None
    llm: Any = None  # rlclimb.pipelines.llm.LLMClient when the run configures endpoints
    seed: int = 0
    sample: int = 0
    extras: dict[str, Any] = field(default_factory=dict)
    # The committed segment being computed: stage reports go there (keyed like the data they
    # describe) and the engine publishes the current segments' reports to <run>/reports/.
    segment_dir: Path | None = None

    @property
    def sample_seed(self) -> int:
        return self.seed * 1000 + self.sample

    def for_sample(self, sample: int) -> StageContext:
        return replace(self, sample=sample)


class Stage:
    name: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    kind: ClassVar[Kind] = "map"
    Config: ClassVar[type[StageConfig]] = StageConfig
    # Row-level result cache. Worth it for expensive stages (LLM, sandbox); cheap stages recompute.
    cache: ClassVar[bool] = False
    # Records in flight at once for async stages.
    concurrency: ClassVar[int] = 16
    # What one process running the stage needs: {"num_cpus": 2, "num_gpus": 1, "memory": bytes}.
    # The ray executor sizes its actors with it; the local one runs fewer worker processes when
    # a stage needs more than one CPU, and a GPU stage in one process. Default: one CPU (a
    # quarter for async stages on Ray).
    resources: ClassVar[dict[str, float]] = {}
    # Pydantic model of the records this stage emits, when it changes the record kind.
    output_model: ClassVar[type[BaseModel] | None] = None
    # Pipelines leave a stage out when its config section says `enabled: false` (the default
    # for opt-in stages such as vector dedup, which loads a model).
    enabled_by_default: ClassVar[bool] = True
    # An instance may also find it has nothing to do (e.g. decontam without benchmarks).
    active: bool = True
    # Set by check() when the stage runs but does less than its config says (e.g. grade with no
    # judge role): shown beside the stage in the funnel, so nothing is skipped silently.
    note: str | None = None
    # Whether results depend on the run seed (then it is in the fingerprint); None: when the
    # stage calls a model (sampling seeds).
    seeded: ClassVar[bool | None] = None
    # The content of every file the config names is in the fingerprint. Also hashed: everything
    # under directories named by `config_paths` fields; never: what `config_outputs` fields name
    # (files the stage writes, scratch space).
    config_paths: ClassVar[tuple[str, ...]] = ()
    config_outputs: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: StageConfig | dict | None = None, **overrides: Any):
        if isinstance(config, StageConfig):
            config = config.model_dump()
        self.config = self.Config(**{**(config or {}), **overrides})

    # -- contract ---------------------------------------------------------------------------
    def check(self, llm_config: Any) -> None:
        """Fail fast, before a run writes anything: raise ConfigError naming the problem and the
        fix (e.g. an LLM method with no `llm:` section, a missing extra). `llm_config` is the
        run's LLMConfig or None."""

    def setup(self, ctx: StageContext) -> None:
        """Load models, open resources. Called once per process before the first record."""

    def process(self, record: Record, ctx: StageContext) -> Any:
        raise NotImplementedError(f"stage {self.name} must implement process()")

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        raise NotImplementedError(f"global stage {self.name} must implement run()")

    # -- identity ---------------------------------------------------------------------------
    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.process)

    @property
    def usage_tags(self) -> tuple[str, ...]:
        """LLM usage tags whose tokens and cost the funnel books to this stage."""
        return (self.name,)

    def llm_models(self) -> dict[str, Any] | None:
        """The models this stage calls, role -> ModelProfile, once check() has run; None (the
        default): the roles its check() resolved, as recorded by the engine."""
        return None

    def identity(self) -> dict[str, Any]:
        """What the stage is, for its fingerprint (a combinator adds its inner stage)."""
        return {"name": self.name, "version": self.version, "config": self.config.model_dump(mode="json")}

    def code_modules(self) -> list[str]:
        """Modules whose source (and the project modules they import) the results depend on."""
        return [type(self).__module__]

    def bind_run(self, binding: dict[str, Any]) -> None:
        """The engine binds the run's part of the identity (models behind roles, seed)."""
        self.__dict__["run_binding"] = binding
        self.__dict__.pop("_fingerprint", None)

    @property
    def run_binding(self) -> dict[str, Any]:
        return self.__dict__.get("run_binding", {})

    @property
    def fingerprint(self) -> str:
        """Changes whenever results could: name, version, config, files the config names, code,
        models behind its roles, seed (see engine/fingerprint.py). Keys segments and cache entries."""
        fp = self.__dict__.get("_fingerprint")
        if fp is None:
            from .engine.fingerprint import compute

            fp = self.__dict__["_fingerprint"] = compute(self)
        return fp

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "kind": self.kind,
            "config": self.config.model_dump(mode="json"),
            "fingerprint": self.fingerprint,
            **({"note": self.note} if self.note else {}),
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"
