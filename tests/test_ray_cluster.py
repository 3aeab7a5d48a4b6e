"""The Ray executor on a real multi-process Ray cluster: the same datasets, ledgers and funnels
as the local executor; a killed worker process loses and duplicates nothing; a node that does
not share the run directory fails the run loudly.

The cluster is started once for the module: `ray start --head` plus a second `ray start
--address` worker node, both on 127.0.0.1 with one CPU each (token auth with a token file of
our own, so an operator's ~/.ray/auth_token cannot get in the way), and torn down by killing
exactly the processes that run under this cluster's temp directory. This process stays
connected to it as a driver for the module, so the runs share one job's task workers
instead of starting and importing new ones per run (actors are new per run either way); the
connect-by-RAY_ADDRESS path is tests/test_ray_url.py's killed driver's.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rlclimb.pipelines.consensus import Consensus
from rlclimb.pipelines.definitions import PIPELINES
from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
from rlclimb.pipelines.llm import LLMConfig
from rlclimb.pipelines.readers import InputError, JsonlReader
from rlclimb.pipelines.scripted_server import Reply, ScriptedServer
from rlclimb.pipelines.stage import Keep, Record, Stage, StageContext
from rlclimb.stages.dedup.exact import ExactDedup
from rlclimb.stages.dedup.minhash import MinHashDedup
from rlclimb.stages.documents.pair_qa import PairQA
from rlclimb.stages.qa.importer import ImportQA

pytestmark = pytest.mark.slow

RAY = str(Path(sys.executable).parent / "ray")
TESTS = Path(__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ours(marker: str) -> list[int]:
    """Pids of this cluster's processes: their command line or their environment (inherited
    from our `ray start`, RAY_AUTH_TOKEN_PATH) names this cluster's directory. Ray renames some
    (`ray::DashboardAgent`), so the environment is what finds them all."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                text = (d / "cmdline").read_bytes() + b"\0" + (d / "environ").read_bytes()
            except OSError:
                continue
            if marker.encode() in text:
                pids.append(int(d.name))
    return pids


def _kill(pids: list[int]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(1)


class Cluster:
    def __init__(self, root: Path):
        self.root = root
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        token = root / "token"
        token.write_text(secrets.token_hex(32))
        self.env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token),
                    "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
        self.env.pop("RAY_ADDRESS", None)

    def start(self) -> None:
        self._ray("start", "--head", f"--port={self.port}", "--num-cpus=1", "--node-ip-address=127.0.0.1",
                  "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={self.root / 'ray'}")
        self.add_node()

    def add_node(self, prefix: list[str] | None = None) -> subprocess.CompletedProcess:
        return self._ray("start", f"--address={self.address}", "--num-cpus=1", "--node-ip-address=127.0.0.1", prefix=prefix)

    def _ray(self, *args, prefix=None) -> subprocess.CompletedProcess:
        cmd = [*(prefix or []), RAY, *args]
        r = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{' '.join(cmd)}: {r.stdout[-2000:]}{r.stderr[-2000:]}"
        return r

    def stop(self) -> None:
        _kill(_ours(str(self.root)))
        shutil.rmtree(self.root, ignore_errors=True)

    def connect(self) -> None:
        """Join as a driver, as the Ray executor's `connect` does (which then leaves this
        connection open: it only shuts down what it started itself)."""
        import ray

        ray.init(address=self.address, log_to_driver=True, configure_logging=False)


@contextmanager
def while_killing(cluster: Cluster, *titles: bytes, delay_s: float) -> Iterator[dict[str, int]]:
    """While the block runs, SIGKILL once per title the first of the cluster's processes whose
    command line names it (a Ray worker's process title names the task it runs), `delay_s` after
    seeing it (mid-task). Yields {title: the pid killed}, filled in as the kills happen."""
    killed: dict[str, int] = {}
    done = threading.Event()

    def kill() -> None:
        while not done.is_set() and len(killed) < len(titles):
            for pid in _ours(str(cluster.root)):
                try:
                    title = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                for what in titles:
                    if what in title and what.decode() not in killed:
                        time.sleep(delay_s)
                        try:
                            os.kill(pid, signal.SIGKILL)
                            killed[what.decode()] = pid
                        except ProcessLookupError:
                            pass
            time.sleep(0.01)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    try:
        yield killed
    finally:
        done.set()
        killer.join(timeout=5)


@pytest.fixture(scope="module")
def cluster():
    root = Path(tempfile.mkdtemp(prefix="rlc-ray-", dir="/tmp"))  # short: Ray's socket paths must fit
    c = Cluster(root)
    try:
        c.start()
        with pytest.MonkeyPatch.context() as mp:
            for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_USAGE_STATS_ENABLED"):
                mp.setenv(k, c.env[k])
            mp.setenv("RAY_ADDRESS", c.address)
            _forget_auth()  # an earlier test's Ray in this process may have cached "no token"
            c.connect()
            yield c
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        c.stop()
        _forget_auth()


def _forget_auth() -> None:
    """Ray caches the auth mode and token in-process: with our environment gone, let later
    tests (a local Ray of their own, no token) start from Ray's defaults again."""
    try:
        from ray._private.authentication_test_utils import reset_auth_token_state
    except ImportError:  # another Ray version: nothing cached the same way
        return
    reset_auth_token_state()


def outputs(run_dir: Path) -> tuple[list, list, list]:
    data = pq.read_table(run_dir / "data").to_pylist()
    ledger = pq.read_table(run_dir / "ledger").select(["stage", "reason", "detail", "file", "line", "record_id"]).to_pylist()
    stats = json.loads((run_dir / "stats.json").read_text())
    funnel = [(s["name"], s["in"], s["kept"], s["out"], s["dropped"]) for s in stats["stages"]]
    return data, ledger, funnel


def both(tmp_path: Path, make, **options) -> tuple[tuple, tuple]:
    local = run_pipeline(make(), tmp_path / "local", RunOptions(progress=False, **options))
    ray_ = run_pipeline(make(), tmp_path / "ray", RunOptions(engine="ray", progress=False, **options))
    return outputs(local.run_dir), outputs(ray_.run_dir)


# ---- qa-jsonl: import, exact + MinHash dedup, decontam ----------------------------------------


def write_qa(tmp_path: Path) -> tuple[Path, Path]:
    lines = []
    for i in range(120):
        if i % 41 == 5:
            lines.append('{"question": "broken')
        elif i % 30 == 7:  # an exact duplicate after normalization
            lines.append(json.dumps({"question": f"WHAT is  the value of {i - 1} plus 3?", "answer": i + 2}))
        elif i % 30 == 11:  # a near duplicate (one word changed): MinHash
            lines.append(json.dumps({"question": f"Compute what the value of {i - 2} plus 3 is, please?", "answer": i + 1}))
        elif i % 30 == 9:
            lines.append(json.dumps({"question": f"Compute what the value of {i} plus 3 is, please", "answer": i + 3}))
        else:
            lines.append(json.dumps({"question": f"What is the value of {i} plus 3?", "answer": i + 3}))
    src = tmp_path / "qa.jsonl"
    src.write_text("\n".join(lines) + "\n")
    bench = tmp_path / "bench.jsonl"  # two test items leaked into the dump
    bench.write_text(json.dumps({"question": "What is the value of 20 plus 3?", "answer": "23"}) + "\n"
                     + json.dumps({"question": "What is the value of 100 plus 3?", "answer": "103"}) + "\n")
    return src, bench


ENGINE_FIELDS = ("time_s", "memory", "spill")  # where and how long: the only report fields that differ


def reports(run_dir: Path, names: tuple[str, ...]) -> dict[str, dict]:
    out = {}
    for name in names:
        report = json.loads((run_dir / "reports" / f"{name}.json").read_text())
        out[name] = {k: v for k, v in report.items() if k not in ENGINE_FIELDS}
    return out


GLOBAL_STAGES = ("dedup_exact", "dedup_minhash", "decontam")


def test_qa_jsonl_with_dedup_and_decontam_matches_local(cluster, tmp_path):
    src, bench = write_qa(tmp_path)
    sections = {"decontam": {"benchmarks": [str(bench)]}}
    local, ray_ = both(tmp_path, lambda: PIPELINES["qa-jsonl"]([str(src)], sections, 17))
    assert ray_ == local
    reasons = {r["reason"] for r in local[1]}
    assert {"bad_json", "duplicate_exact", "duplicate_minhash", "benchmark_match"} <= reasons
    assert len(local[0]) > 80
    # the global stages were decided on the cluster, and report the same clusters and matches
    assert reports(tmp_path / "ray", GLOBAL_STAGES) == reports(tmp_path / "local", GLOBAL_STAGES)
    spill = json.loads((tmp_path / "ray" / "reports" / "dedup_minhash.json").read_text())["spill"]
    assert spill["engine"].startswith("ray")


def write_clusters(path: Path, n: int = 400) -> None:
    """Templated questions in clusters of 1 to 5 near-duplicates (answers of varied length, so
    keep=longest_answer picks a representative other than the first; the same number in each, so
    a cluster's answers agree), exact copies, blanks."""
    lines = []
    for i in range(n):
        c, k = divmod(i, 4)
        base = f"A train leaves station {c} at {c % 12} o'clock and travels {3 * c} miles; how long is the trip"
        q = [base + "?", base + ", roughly?", base.upper() + "?", base.replace("travels", "goes") + "?"][k] if c % 3 else base + f" {i}?"
        if i % 53 == 0:
            q = ""
        lines.append(json.dumps({"question": q, "answer": f"{3 * c} minutes" + " roughly" * ((i * 7) % 11)}))
    path.write_text("\n".join(lines) + "\n")


def test_minhash_keep_rule_and_small_parts_match_local(cluster, tmp_path):
    src = tmp_path / "c.jsonl"
    write_clusters(src)
    make = lambda: Pipeline("clusters", JsonlReader([src]), [  # noqa: E731
        ImportQA(), ExactDedup(), MinHashDedup(keep="longest_answer", partitions=8, batch_size=50)], shard_size=9)
    local, ray_ = both(tmp_path, make)
    assert ray_ == local
    stages = ("dedup_exact", "dedup_minhash")
    assert reports(tmp_path / "ray", stages) == reports(tmp_path / "local", stages)
    minhash = reports(tmp_path / "local", stages)["dedup_minhash"]
    assert minhash["largest_cluster"] >= 3 and minhash["dropped"] > 30
    assert len(list((tmp_path / "ray" / "stages").glob("*minhash*/part-*.done.json"))) > 10


# ---- a consensus LLM stage against the scripted server ------------------------------------------


class VoteJudge(Stage):
    """Async, asks the judge for a label; the scripted server's answer depends on the question
    and the sampling seed, so consensus agrees on some records and not on others."""

    name = "vote_judge"
    kind = "map"
    concurrency = 4

    async def process(self, record: Record, ctx: StageContext) -> Keep:
        c = await ctx.llm.complete("judge", [{"role": "user", "content": record["question"]}],
                                   tag=self.name, seed=ctx.sample_seed)
        record["tags"] = [*record["tags"], c.text]
        return Keep(record, model="judge-model")

    def vote(self, record: Record) -> str:
        return record["tags"][-1]

    def agree(self, a: str, b: str) -> bool:
        return a == b


def judge_reply(body: dict, n: int) -> Reply:
    q = body["messages"][-1]["content"]
    k = int("".join(ch for ch in q if ch.isdigit()) or 0)
    label = "yes" if k % 3 else f"maybe-{body.get('seed', 0) % 2}"  # every third: votes split
    return Reply(label, delay_s=0.01)


def test_consensus_llm_stage_matches_local_and_limits_the_endpoint(cluster, tmp_path):
    src = tmp_path / "q.jsonl"
    src.write_text("".join(json.dumps({"question": f"Is {i} a nice number?", "answer": str(i)}) + "\n" for i in range(40))
                   + json.dumps({"question": "Is 1 a nice number?", "answer": "1"}) + "\n")
    with ScriptedServer() as server:
        server.script(judge_reply)
        llm = LLMConfig.from_dict({
            "profiles": {"local": {"base_url": server.base_url, "model": "judge-model", "api_key": "k",
                                   "concurrency": 3, "timeout_s": 60, "backoff_s": 0.01}},
            "roles": {"judge": "local"},
        })
        # the LLM segment comes after a global stage: its workers read their shards from the parts
        make = lambda: Pipeline("llm-qa", JsonlReader([src]), [ImportQA(), ExactDedup(), Consensus(VoteJudge(), n=3)],  # noqa: E731
                                shard_size=7)
        local, ray_ = both(tmp_path, make, llm=llm, seed=3)
        calls = server.count["/v1/chat/completions"]
        peak = server.max_in_flight
        # a run killed after its LLM work but before its commits: the per-shard row cache on the
        # shared run dir answers everything again (no request repeated)
        for marker in (tmp_path / "ray" / "stages").glob("02-*/part-*.done.json"):
            marker.unlink()
        again = run_pipeline(make(), tmp_path / "ray", RunOptions(engine="ray", progress=False, llm=llm, seed=3))
        assert server.count["/v1/chat/completions"] == calls
        assert outputs(again.run_dir) == local
    assert ray_ == local
    assert calls == 2 * 40 * 3  # each run asks each distinct question three times, nothing more
    assert peak <= 3  # one limit for the endpoint across both Ray actors (and the local run)
    assert {r["reason"] for r in local[1]} == {"duplicate_exact", "no_consensus"}
    assert len(local[0]) == 40 - 14


# ---- textbook-pdf on a generated book -----------------------------------------------------------


def test_textbook_pdf_matches_local(cluster, tmp_path):
    from helpers.textbook_gen import ChapterSpec, make_textbook

    book = make_textbook(tmp_path / "book.pdf", chapters=[
        ChapterSpec("Arithmetic", "inline", exercises=5, example=True),
        ChapterSpec("Functions", "key", exercises=6, instruction=(2, 4)),
    ])
    local, ray_ = both(tmp_path, lambda: PIPELINES["textbook-pdf"]([str(book.path)], {}, 2))
    assert ray_ == local
    assert len(local[0]) >= 8


class SlowPair(PairQA):
    """PairQA taking a while per document group, so that a worker can be killed mid-pairing."""

    def pair_group(self, spans, targets, ctx):
        time.sleep(2.0)
        return super().pair_group(spans, targets, ctx)


def with_slow_pair(pipeline: Pipeline) -> Pipeline:
    i = next(k for k, s in enumerate(pipeline.stages) if s.name == "pair")
    slow = SlowPair(**pipeline.stages[i].config.model_dump())
    slow.documents = pipeline.stages[i].documents
    pipeline.stages[i] = slow
    return pipeline


def test_pair_with_a_separate_answer_book_and_a_killed_pairing_worker_matches_local(cluster, tmp_path):
    """Two books and one's separate answer book, pair per document group on the two nodes
    (unanswered questions ledgered: drops between rows; parts of two items, cut across groups);
    a SIGKILLed pairing worker is retried by Ray: the local executor's parts, data, ledger and funnel."""
    from test_ray_pair import books, pair_parts

    inputs = books(tmp_path)
    make = lambda: with_slow_pair(PIPELINES["textbook-pdf"](inputs, {"pair": {"unanswered": "ledger"}}, 2))  # noqa: E731
    local = run_pipeline(make(), tmp_path / "local", RunOptions(progress=False))
    with while_killing(cluster, b"pair_group", delay_s=0.5) as killed:
        ray_ = run_pipeline(make(), tmp_path / "ray", RunOptions(engine="ray", progress=False))
    assert killed, "the test never saw a pairing worker to kill"
    assert outputs(ray_.run_dir) == outputs(local.run_dir)
    assert pair_parts(ray_.run_dir) == pair_parts(local.run_dir) and len(pair_parts(local.run_dir)) > 5
    assert any(r["reason"] == "unanswered" for r in outputs(local.run_dir)[1])


# ---- faults -------------------------------------------------------------------------------------


class SlowTag(Stage):
    """Sync map that takes a while per record and tells the test which process runs it."""

    name = "slow_tag"
    kind = "map"

    def process(self, record: Record, ctx: StageContext) -> Record:
        (Path(ctx.run_dir) / "tmp").mkdir(exist_ok=True)
        (Path(ctx.run_dir) / "tmp" / f"pid-{os.getpid()}").touch()
        time.sleep(0.15)
        record["tags"] = [*record["tags"], f"seen-{record['answer']}"]
        return record


def test_killed_worker_process_loses_and_duplicates_nothing(cluster, tmp_path):
    src = tmp_path / "q.jsonl"
    src.write_text("".join(json.dumps({"question": f"Question {i}?", "answer": str(i)}) + "\n" for i in range(48)))
    make = lambda: Pipeline("slow", JsonlReader([src]), [ImportQA(), SlowTag(), ExactDedup()], shard_size=4)  # noqa: E731
    local = outputs(run_pipeline(make(), tmp_path / "local", RunOptions(progress=False)).run_dir)

    killed: list[int] = []

    def kill_one_worker() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed:
            for f in (tmp_path / "ray" / "tmp").glob("pid-*"):
                pid = int(f.name.split("-")[1])
                time.sleep(0.3)  # mid-shard
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                break
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one_worker, daemon=True)
    killer.start()
    result = run_pipeline(make(), tmp_path / "ray", RunOptions(engine="ray", progress=False))
    killer.join(timeout=5)
    assert killed, "the test never saw a worker to kill"
    assert outputs(result.run_dir) == local
    assert len(local[0]) == 48


def test_killed_worker_mid_global_stage_loses_and_duplicates_nothing(cluster, tmp_path):
    """SIGKILL to a Ray worker process computing MinHash signatures (and to one committing the
    stage's parts, when the poll catches one running), while it runs: Ray restarts it and redoes
    its task (a retried task rewrites the same scratch files and parts), and the output is the
    local executor's."""
    src = tmp_path / "c.jsonl"
    write_clusters(src, 1600)
    make = lambda: Pipeline("clusters", JsonlReader([src]), [ImportQA(), MinHashDedup(batch_size=64)], shard_size=16)  # noqa: E731
    local = outputs(run_pipeline(make(), tmp_path / "local", RunOptions(progress=False)).run_dir)
    with while_killing(cluster, b"MinHashSketcher", b"commit_parts", delay_s=0.05) as killed:
        result = run_pipeline(make(), tmp_path / "ray", RunOptions(engine="ray", progress=False))
    print("killed:", killed)
    assert "MinHashSketcher" in killed, f"the test never saw a signature worker to kill ({killed})"
    assert outputs(result.run_dir) == local
    assert local[2][-1][4] == {"duplicate_minhash": local[2][-1][1] - local[2][-1][2]} and local[2][-1][2] < 1400


def test_a_node_that_does_not_share_the_run_dir_fails_the_run_loudly(cluster, tmp_path):
    """A third node whose /tmp/.../private is its own tmpfs (a mount namespace of its own): a
    run directory there is not shared storage; the run must stop before any shard, naming it."""
    private = tmp_path / "private"
    private.mkdir()
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unshare --mount is not permitted here (needs CAP_SYS_ADMIN)")
    script = f"mount -t tmpfs rlclimb-private {private} && exec \"$@\""
    cluster.add_node(prefix=["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"])
    src = tmp_path / "q.jsonl"
    src.write_text(json.dumps({"question": "What is 1 plus 1?", "answer": "2"}) + "\n")
    pipe = Pipeline("p", JsonlReader([src]), [ImportQA(), ExactDedup()], shard_size=4)
    with pytest.raises(InputError, match="storage every Ray node mounts") as e:
        run_pipeline(pipe, private / "run", RunOptions(engine="ray", progress=False))
    assert str(private / "run") in str(e.value)
    assert not list((private / "run").glob("stages/*/part-*.done.json"))


def test_a_commit_the_driver_cannot_see_is_an_error(tmp_path):
    from rlclimb.pipelines.engine.ray_cluster import CommitNotVisible, check_commit

    (tmp_path / "part-00003.done.json").write_text("{}")
    check_commit(tmp_path, 3, "node-a")
    with pytest.raises(CommitNotVisible, match=r"shard 4 was committed by a worker on node-b, but .*part-00004.done.json"):
        check_commit(tmp_path, 4, "node-b")
