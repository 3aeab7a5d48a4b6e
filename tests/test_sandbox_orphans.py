"""kill -9 of a process that holds sandboxes: what it left (containers, scratch dirs and their
mounts, processes of its throwaway uid) is removed by the next process that starts a sandbox;
the worker processes of a pipeline run die with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.sandboxes import BACKENDS, sandbox_or_skip

HOLDER = """
import json, sys, threading
from rlclimb.environments.sandbox import get_sandbox
sb = get_sandbox(sys.argv[1])
s = sb.session(files={"main.py": "print(1)"})
threading.Thread(target=s.run, args=("sleep 300 # rlclimb-orphan-" + sys.argv[2],), daemon=True).start()
print(json.dumps({"top": s.scratch.top, "cid": getattr(s, "cid", None)}), flush=True)
threading.Event().wait()
"""


def spawn(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, cwd="/"
    )


def wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def procs_with(marker: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_kill_9_leftovers_are_reaped_at_the_next_start(backend):
    sandbox_or_skip(backend)
    marker = f"{os.getpid()}-{time.monotonic_ns()}"
    holder = spawn(HOLDER, backend, marker)
    held = json.loads(holder.stdout.readline())
    top = Path(held["top"])
    assert wait_for(lambda: procs_with(f"rlclimb-orphan-{marker}")), "the command did not start"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    holder.stdout.close()
    # What the dead process held is still there: nobody cleaned up.
    assert top.is_dir() and os.path.ismount(top / "fs")
    if held["cid"]:
        from rlclimb.environments.sandbox.docker_backend import client

        assert client().api.containers(filters={"id": held["cid"]})
    # The next process that starts a sandbox removes it all.
    nxt = spawn(
        "import sys; from rlclimb.environments.sandbox import get_sandbox\n"
        "print(get_sandbox(sys.argv[1]).run('echo ok').stdout, end='', flush=True)",
        backend,
    )
    out, _ = nxt.communicate(timeout=120)
    assert out == "ok\n"
    assert not top.exists()
    assert wait_for(lambda: not procs_with(f"rlclimb-orphan-{marker}")), "its command still runs"
    if held["cid"]:
        assert not client().api.containers(all=True, filters={"id": held["cid"]})


POOL = """
import os, sys, time
from rlclimb.pipelines.engine.executors import _pool
pool = _pool(2)
pids = set()
while len(pids) < 2:
    pids |= {f.result() for f in [pool.submit(time.sleep, 0.2) and pool.submit(os.getpid) for _ in range(4)]}
print(" ".join(map(str, sorted(pids))), flush=True)
time.sleep(300)
"""


@pytest.mark.slow
def test_pool_workers_die_with_their_parent():
    parent = spawn(POOL)
    workers = [int(p) for p in parent.stdout.readline().split()]
    assert len(workers) == 2 and all(Path(f"/proc/{p}").exists() for p in workers)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    parent.stdout.close()

    def gone() -> bool:
        for p in workers:
            try:
                with open(f"/proc/{p}/stat") as f:
                    if f.read().rpartition(")")[2].split()[0] != "Z":
                        return False
            except OSError:
                pass
        return True

    assert wait_for(gone), "pool workers outlived their parent"


def test_reaper_takes_only_its_own_dirs(tmp_path):
    """A dir named like a dead owner's scratch, planted by someone else (or naming uid 0), is
    neither removed nor a reason to kill anything."""
    from rlclimb.environments.sandbox import scratch

    dead = f"{scratch.owner_id().split('.')[0]}.999999999.1"
    planted = tmp_path / f"rlclimb-sbx-{dead}-u0-x"
    planted.mkdir()
    os.chown(planted, 12345, 12345)
    ours = tmp_path / f"rlclimb-sbx-{dead}-u-y"
    ours.mkdir(mode=0o711)
    os.chmod(ours, 0o711)
    assert scratch.reap_orphans(str(tmp_path)) == 1
    assert planted.is_dir() and not ours.exists()
    sleeper = subprocess.Popen(["sleep", "30"])  # a root process: kill_uid(0) would end it
    try:
        planted.chmod(0o711)
        os.chown(planted, 0, 0)
        scratch._reaped.clear()
        scratch.reap_orphans(str(tmp_path))
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def children(pid: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    if int(f.read().rpartition(")")[2].split()[1]) == pid:
                        found.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                pass
    return found


@pytest.mark.slow
def test_kill_9_of_a_workers_run_leaves_nothing(tmp_path):
    """`rlclimb run code-problems --workers 2`, killed with -9 while a worker has a reference
    running in a sandbox: the workers and their sandboxed programs die with it, and the next
    start removes the scratch dirs they left."""
    from helpers.sandboxes import fast_backend

    backend = fast_backend()
    sandbox_or_skip(backend)
    marker = f"rlclimb-worker-orphan-{os.getpid()}-{time.monotonic_ns()}"
    row = {
        "id": "slow",
        "statement": "Sleep.",
        "tests": [{"input": "", "output": "x"}] * 5,
        "solutions": [f"import os\nos.execvp('sleep', [{marker!r}, '120'])\n"],
        "time_limit": 100,
    }
    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps(row) + "\n")
    cli = [sys.executable, "-c", "from rlclimb.pipelines.cli import main; main()"]
    args = ["run", "code-problems", "--input", str(src), "--out", str(tmp_path / "run")]
    sets = ["--set", f"verify.backend={backend}", "--set", "verify.max_time_limit_s=100"]
    run = subprocess.Popen([*cli, *args, *sets, "--workers", "2", "-q"], cwd="/")
    try:
        assert wait_for(lambda: procs_with(marker), timeout=120), "the reference never started"
        workers = children(run.pid)
        assert workers, "no worker processes"
        owners = {f".{w}." for w in workers}
        run.send_signal(signal.SIGKILL)
        run.wait()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rpartition(")")[2].split()[0] != "Z"
        except OSError:
            return False

    assert wait_for(lambda: not any(alive(w) for w in workers)), "workers outlived the run"
    assert wait_for(lambda: not procs_with(marker)), "the sandboxed reference outlived the run"
    from rlclimb.environments.sandbox.scratch import scratch_base

    def left() -> list[str]:
        return [n for n in os.listdir(scratch_base()) if any(o in n for o in owners)]

    nxt = spawn(
        "import sys; from rlclimb.environments.sandbox import get_sandbox\n"
        "print(get_sandbox(sys.argv[1]).run('echo ok').stdout, end='', flush=True)",
        backend,
    )
    assert nxt.communicate(timeout=120)[0] == "ok\n"
    assert left() == []
