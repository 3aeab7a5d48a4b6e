"""Test stages, in an importable module: worker processes are spawned and unpickle stages by name.

Input items are JSONL reader items {"file", "line", "data"} with data {"id", "text", "n"}; `ImportItem`
turns them into `Item` records whose `source` carries the file and line (so ledger rows locate them).
Stages that count their calls append one line per call to a file named in their config (works across
processes); in-process tests may also read the class-level `calls` lists.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterable, Iterator

from pydantic import BaseModel, Field

from rlclimb.pipelines.stage import Drop, Keep, Record, Stage, StageConfig, StageContext
from rlclimb.schemas.records import Source, StageEvent


class Item(BaseModel):
    id: str
    text: str
    n: int
    tags: list[str] = Field(default_factory=list)
    source: Source = Field(default_factory=Source)
    provenance: list[StageEvent] = Field(default_factory=list)


def item_row(id: str, text: str, n: int, document: str | None = None, line: int | None = None) -> dict:
    return Item(id=id, text=text, n=n, source=Source(document=document, line=line)).model_dump()


def log_call(path: str, what: str) -> None:
    """One line per call; O_APPEND writes of a short line are atomic across processes."""
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{what} {os.getpid()}\n".encode())
        finally:
            os.close(fd)


def read_calls(path) -> list[str]:
    """The logged calls (first word of each line); [] when the stage was never called."""
    try:
        with open(path) as f:
            return [line.split()[0] for line in f if line.strip()]
    except FileNotFoundError:
        return []


class ImportItem(Stage):
    name = "import_item"
    kind = "map"
    output_model = Item

    def process(self, record: Record, ctx: StageContext) -> Record:
        data = record["data"]
        return Item(
            id=data["id"], text=data["text"], n=data["n"],
            source=Source(document=record["file"], line=record["line"]),
        ).model_dump()


class Upper(Stage):
    name = "upper"
    kind = "map"

    def process(self, record: Record, ctx: StageContext) -> Record:
        record["text"] = record["text"].upper()
        return record


class FilterConfig(StageConfig):
    multiple_of: int = 3  # n % multiple_of == 0 -> False (reason: the stage's name)
    explicit: int = 7  # n == explicit -> Drop("explicit_drop")


class DropSome(Stage):
    name = "drop_some"
    kind = "filter"
    Config = FilterConfig

    def process(self, record: Record, ctx: StageContext) -> bool | Drop:
        if record["n"] == self.config.explicit:
            return Drop("explicit_drop", f"n is {self.config.explicit}")
        return record["n"] % self.config.multiple_of != 0


class Annotate(Stage):
    """Map: n == 4 gets an annotated Keep; everything else passes unchanged."""

    name = "annotate"
    kind = "map"

    def process(self, record: Record, ctx: StageContext) -> Record | Keep:
        if record["n"] == 4:
            record["tags"] = [*record["tags"], "annotated"]
            return Keep(record, reason="note", model="m1", votes=("x", "y"), cost=0.5)
        return record


class KeepFilter(Stage):
    """Filter returning Keep for n == 2 (a 'keep' event), True otherwise."""

    name = "keep_filter"
    kind = "filter"

    def process(self, record: Record, ctx: StageContext) -> bool | Keep:
        if record["n"] == 2:
            return Keep(record, reason="kept on purpose")
        return True


class SplitWords(Stage):
    """Expand: one child per word of text; n == 8 -> Drop("no_split")."""

    name = "split"
    kind = "expand"

    def process(self, record: Record, ctx: StageContext) -> list[Record] | Drop:
        if record["n"] == 8:
            return Drop("no_split", "n is 8")
        return [
            {**record, "id": f"{record['id']}-{k}", "text": w, "provenance": list(record["provenance"])}
            for k, w in enumerate(record["text"].split())
        ]


class DedupText(Stage):
    """Global: the first record with a given text is kept, later ones drop as duplicate_text."""

    name = "dedup_text"
    kind = "global"

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        first: dict[str, str] = {}
        for rec in records:
            if rec["text"] in first:
                yield rec, Drop("duplicate_text", f"same text as {first[rec['text']]}")
            else:
                first[rec["text"]] = rec["id"]
                yield rec


class TooBig(Exception):
    drop_reason = "too_big"


def _faulty(record: Record) -> Record:
    n = record["n"]
    if n == 3:
        raise ValueError("boom on three")
    if n == 5:
        raise TooBig("five is too big")
    if n == 6:
        return 42  # type: ignore[return-value]  # a wrong return type
    return record


class Faulty(Stage):
    """Sync map: raises on n == 3 (ValueError) and n == 5 (drop_reason too_big), returns an int on 6."""

    name = "faulty"
    kind = "map"

    def process(self, record: Record, ctx: StageContext) -> Record:
        return _faulty(record)


class AsyncFaulty(Stage):
    name = "faulty"
    kind = "map"

    async def process(self, record: Record, ctx: StageContext) -> Record:
        await asyncio.sleep(0)
        return _faulty(record)


class SleepConfig(StageConfig):
    delay_s: float = 0.1


class Sleepy(Stage):
    """Async map sleeping `delay_s`; records the peak number of records in flight."""

    name = "sleepy"
    kind = "map"
    concurrency = 32
    Config = SleepConfig
    in_flight = 0
    peak = 0

    async def process(self, record: Record, ctx: StageContext) -> Record:
        cls = type(self)
        cls.in_flight += 1
        cls.peak = max(cls.peak, cls.in_flight)
        try:
            await asyncio.sleep(self.config.delay_s)
        finally:
            cls.in_flight -= 1
        record["tags"] = [*record["tags"], "slept"]
        return record


class SleepyFour(Sleepy):
    name = "sleepy4"
    concurrency = 4


class CountConfig(StageConfig):
    counter: str = ""  # file that gets one line per process() call
    transient: list[int] = []  # n values whose first call returns Drop("llm_timeout")
    permanent: list[int] = []  # n values that always return Drop("judged_bad")


def _count(stage: Stage, record: Record) -> Record | Drop:
    c = stage.config
    previous = read_calls(c.counter)
    log_call(c.counter, record["id"])
    if record["n"] in c.transient and record["id"] not in previous:
        return Drop("llm_timeout", "first call times out")
    if record["n"] in c.permanent:
        return Drop("judged_bad")
    record["tags"] = [*record["tags"], f"{stage.name}-v{stage.version}"]
    return record


class Counting(Stage):
    """Sync, cached (row-level result cache); counts its process() calls in a file."""

    name = "counting"
    kind = "map"
    cache = True
    Config = CountConfig
    config_outputs = ("counter",)  # a log the stage writes, not an input

    def process(self, record: Record, ctx: StageContext) -> Record | Drop:
        return _count(self, record)


class AsyncCounting(Stage):
    name = "acounting"
    kind = "map"
    cache = True
    concurrency = 8
    Config = CountConfig
    config_outputs = ("counter",)

    async def process(self, record: Record, ctx: StageContext) -> Record | Drop:
        await asyncio.sleep(0.001)
        return _count(self, record)


class AsyncCountingV2(AsyncCounting):
    version = "2"


class CPUWork(Stage):
    """Sync map that burns a little CPU and records which process handled the record."""

    name = "cpu_work"
    kind = "map"

    def process(self, record: Record, ctx: StageContext) -> Record:
        t = time.perf_counter()
        while time.perf_counter() - t < 0.002:
            pass
        record["text"] = f"{record['text']}|{sum(ord(c) for c in record['text']) % 97}"
        return record


# ---- consensus ---------------------------------------------------------------------------------


def _label(record: Record, ctx: StageContext) -> str | Drop:
    mode = record["text"].split()[0]
    if mode == "agree":
        return "yes"
    if mode == "disagree":
        return f"v{ctx.sample}"
    if mode == "two":  # samples 0 and 1 agree, sample 2 differs
        return "a" if ctx.sample < 2 else "b"
    if mode == "case":  # differs only in case: agrees under Labeler.agree
        return ["Yes", "YES", "yes"][ctx.sample]
    if mode == "seed":
        return f"s{ctx.sample_seed}"
    return Drop("unlabelable", "no mode")


class Labeler(Stage):
    """Map for consensus tests: label depends on the record's mode word and ctx.sample."""

    name = "labeler"
    kind = "map"

    def process(self, record: Record, ctx: StageContext) -> Keep | Drop:
        label = _label(record, ctx)
        if isinstance(label, Drop):
            return label
        record["tags"] = [*record["tags"], label]
        return Keep(record, model="m1", cost=0.25)

    def vote(self, record: Record) -> str:
        return record["tags"][-1]

    def agree(self, a: str, b: str) -> bool:
        return a.lower() == b.lower()


class AsyncLabeler(Labeler):
    name = "alabeler"

    async def process(self, record: Record, ctx: StageContext) -> Keep | Drop:  # type: ignore[override]
        await asyncio.sleep(0.001)
        return Labeler.process(self, record, ctx)


class PlainLabeler(Stage):
    """No vote()/agree(): votes are the JSON of the record, agreement is equality."""

    name = "plain_labeler"
    kind = "map"

    def process(self, record: Record, ctx: StageContext) -> Record | Drop:
        label = _label(record, ctx)
        if isinstance(label, Drop):
            return label
        record["tags"] = [*record["tags"], label]
        return record


# ---- LLM -----------------------------------------------------------------------------------------


class AskLLM(Stage):
    """Async map: asks the 'judge' role about the text, appends the reply to tags (no row cache)."""

    name = "ask"
    kind = "map"
    concurrency = 8

    async def process(self, record: Record, ctx: StageContext) -> Record:
        c = await ctx.llm.complete("judge", [{"role": "user", "content": record["text"]}], tag=self.name)
        record["tags"] = [*record["tags"], c.text]
        return record


class RoleConfig(StageConfig):
    role: str = "judge"


class AskRole(Stage):
    """Async, row-cached filter: keeps a record when the `role` model answers "yes". It declares
    no roles: the engine learns them from what check() resolves."""

    name = "ask_role"
    kind = "filter"
    cache = True
    Config = RoleConfig

    def check(self, llm_config) -> None:
        llm_config.resolve(self.config.role)

    async def process(self, record: Record, ctx: StageContext) -> bool:
        c = await ctx.llm.complete(self.config.role, [{"role": "user", "content": record["text"]}],
                                   tag=self.name, seed=ctx.seed)
        return c.text.strip() == "yes"


class AskOther(AskRole):
    name = "ask_other"
