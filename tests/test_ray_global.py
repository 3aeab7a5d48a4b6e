"""The pieces of the distributed global stages that need no cluster: the output parts cut from
the dropped indices are the local executor's, and input ranges read across parts."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rlclimb.pipelines.engine.ray_dedup import kept_indices
from rlclimb.pipelines.engine.ray_global import Decisions, input_slices, part_ranges, read_range


def local_parts(n: int, dropped: set[int], size: int) -> list[tuple[int, int]]:
    """What LocalExecutor._run_global commits: a part after every `size`-th kept record, the rest last."""
    parts, start, rows, ledger = [], 0, 0, 0
    for g in range(n):
        if g in dropped:
            ledger += 1
        else:
            rows += 1
        if rows >= size:
            parts.append((start, g + 1))
            start, rows, ledger = g + 1, 0, 0
    if rows or ledger or not parts:
        parts.append((start, n))
    return parts


@pytest.mark.parametrize("seed", range(40))
def test_part_ranges_are_the_local_executors(seed):
    rng = random.Random(seed)
    n, size = rng.choice([0, 1, 5, 37, 200]), rng.choice([1, 3, 10, 64])
    rate = rng.choice([0.0, 0.1, 0.5, 0.95, 1.0])
    dropped = {g for g in range(n) if rng.random() < rate}
    got = part_ranges(n, np.array(sorted(dropped), np.int64), size)
    assert got == local_parts(n, dropped, size)
    kept = [g for g in range(n) if g not in dropped]
    assert kept_indices(np.arange(len(kept)), np.array(sorted(dropped), np.int64)).tolist() == kept


def test_read_range_crosses_parts_in_order(tmp_path):
    parts = []
    for j, count in enumerate([7, 0, 12, 3]):
        p = tmp_path / f"part-{j:05d}.parquet"
        pq.write_table(pa.table({"id": [f"{j}-{k}" for k in range(count)]}), p)
        parts.append(p)
    slices = input_slices(parts, 5)
    assert [(s.length, s.start) for s in slices] == [(5, 0), (2, 5), (5, 7), (5, 12), (2, 17), (3, 19)]
    everything = [r["id"] for _, r in read_range(slices, 0, 22)]
    assert len(everything) == 22 and everything[7] == "2-0"
    assert [(g, r["id"]) for g, r in read_range(slices, 4, 9)] == [(4, "0-4"), (5, "0-5"), (6, "0-6"), (7, "2-0"), (8, "2-1")]
    assert list(read_range(slices, 22, 30)) == []


def test_decisions_are_sorted_by_index_with_their_details():
    d = Decisions("r", np.array([9, 2, 5]), ["nine", "two", "five"])
    assert d.idx.tolist() == [2, 5, 9] and d.detail == ["two", "five", "nine"]


def test_jsonl_read_on_workers_gives_the_readers_shards(tmp_path):
    """Each file read alone (as a worker does) and cut by the counts: the local shards, item
    for item, across file boundaries, with the rejected lines where the reader puts them."""
    import numpy as np

    from rlclimb.pipelines.engine.ray_read import _shards, read_file
    from rlclimb.pipelines.readers import JsonlReader

    files = []
    for j, lines in enumerate([7, 0, 23, 1, 12]):
        p = tmp_path / f"in-{j}.jsonl"
        p.write_text("".join('{"broken\n' if k % 9 == 4 else ("\n" if k % 11 == 6 else f'{{"q": "{j}-{k}"}}\n') for k in range(lines)))
        files.append(p)
    reader = JsonlReader([str(tmp_path)])
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    for size in (1, 5, 8, 100):
        counts = read_file({"j": np.arange(len(reader.paths))}, reader=reader, scratch=str(scratch), size=size)["count"]
        got = [p.load() for p in _shards(counts, str(scratch), size)]
        want = list(reader.shards(size))
        assert [len(s) for s in got] == [len(s) for s in want]
        assert [repr(x) for s in got for x in s] == [repr(x) for s in want for x in s]
