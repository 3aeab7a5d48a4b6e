"""Sandboxes that really get attacked: fork bombs, 10 GB allocations, infinite loops, huge
outputs, network sockets, host files, leftover processes. Each backend must contain every one
with a clear status, and leave the host and the next run unaffected."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
from helpers.sandboxes import BACKENDS, sandbox_or_skip

from rlclimb.environments.sandbox import Limits, Status, get_sandbox
from rlclimb.environments.sandbox.base import classify

each_backend = pytest.mark.parametrize("backend", BACKENDS)

TIGHT = Limits(wall_s=3, cpu_s=2, memory_mb=256, processes=32, output_bytes=64 << 10)


def procs_with(marker: str) -> list[int]:
    """Host processes whose command line holds `marker` (sandboxed ones included: same kernel)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(entry.name))
            except OSError:
                pass
    return [p for p in found if p != os.getpid()]


def assert_next_run_fine(sb) -> None:
    t0 = time.monotonic()
    r = sb.run("echo fine")
    assert r.status == Status.OK and r.stdout == "fine\n", r
    assert time.monotonic() - t0 < 5


@each_backend
def test_runs_with_files_stdin_and_outputs(backend):
    sb = sandbox_or_skip(backend)
    r = sb.run(
        "python3 prog.py < data/in.txt > out.txt; cat - ; pwd",
        files={"prog.py": "print(sum(map(int, input().split())))", "data/in.txt": "2 40\n"},
        stdin="from stdin\n",
        outputs=["*.txt"],
    )
    assert r.status == Status.OK, r
    assert r.stdout == "from stdin\n/work\n" or r.stdout.startswith("from stdin\n")
    assert r.files_out == {"out.txt": b"42\n"}
    assert r.exit_code == 0 and r.wall_s > 0


@each_backend
def test_exit_codes_and_stderr(backend):
    sb = sandbox_or_skip(backend)
    r = sb.run("echo oops >&2; exit 3")
    assert (r.status, r.exit_code, r.stderr) == (Status.RE, 3, "oops\n")


@each_backend
def test_fork_bomb_is_contained(backend):
    sb = sandbox_or_skip(backend)
    marker = f"rlclimb-bomb-{uuid.uuid4().hex[:8]}"
    bomb = f"import os, sys\n# {marker}\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    r = sb.run(f"python3 bomb.py {marker}", files={"bomb.py": bomb}, limits=TIGHT.with_(wall_s=2))
    assert r.status in (Status.TLE, Status.BLOCKED, Status.RE), r
    time.sleep(0.3)
    assert procs_with(marker) == [], "fork bomb processes outlived the run"
    assert_next_run_fine(sb)


@each_backend
def test_ten_gigabyte_allocation_is_mle(backend):
    sb = sandbox_or_skip(backend)
    # a generous wall clock: on a loaded machine a 3 s budget can end before the kernel's verdict
    r = sb.run("python3 -c 'x = bytearray(10 * 1024**3); print(len(x))'", limits=TIGHT.with_(wall_s=60))
    assert r.status == Status.MLE, r
    assert r.stdout == ""
    assert_next_run_fine(sb)


@each_backend
def test_infinite_loop_is_tle(backend):
    sb = sandbox_or_skip(backend)
    t0 = time.monotonic()
    r = sb.run("python3 -c 'while True: pass'", limits=TIGHT.with_(wall_s=3, cpu_s=1))
    assert r.status == Status.TLE, r
    assert time.monotonic() - t0 < 8
    r = sb.run("sleep 60", limits=TIGHT.with_(wall_s=1))  # wall time, no CPU used
    assert r.status == Status.TLE and r.wall_s < 5, r


@each_backend
def test_huge_output_is_truncated_ole(backend):
    sb = sandbox_or_skip(backend)
    t0 = time.monotonic()
    r = sb.run("python3 -c 'import sys\nwhile True: sys.stdout.write(\"x\" * 65536)'", limits=TIGHT)
    assert r.status == Status.OLE, r
    assert len(r.stdout) == TIGHT.output_bytes
    assert time.monotonic() - t0 < 6
    # A file larger than the file-size limit is refused as well.
    r = sb.run("head -c 2000000 /dev/zero > big.bin", limits=TIGHT.with_(file_bytes=1 << 20))
    assert r.status == Status.OLE, r
    assert_next_run_fine(sb)


@pytest.fixture
def host_server():
    """A TCP server on the host's 127.0.0.1 that records whoever connects."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)
    hits: list = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, addr = srv.accept()
                hits.append(addr)
                conn.close()
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1], hits
    stop.set()
    t.join()
    srv.close()


@each_backend
def test_network_is_off(backend, host_server):
    port, hits = host_server
    sb = sandbox_or_skip(backend)
    prog = f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('connected')\n"
    r = sb.run("python3 net.py", files={"net.py": prog}, limits=TIGHT)
    assert r.status == Status.BLOCKED, r
    assert "connected" not in r.stdout and hits == []
    r = sb.run(
        "python3 -c \"import socket; socket.getaddrinfo('deb.debian.org', 80)\"", limits=TIGHT
    )
    assert r.status == Status.BLOCKED, r


@each_backend
def test_host_files_outside_scratch_are_out_of_reach(backend, tmp_path):
    sb = sandbox_or_skip(backend)
    secret = uuid.uuid4().hex
    private = Path("/root") / f".rlclimb-secret-{secret[:8]}"
    private.write_text(secret)
    private.chmod(0o600)
    public = Path("/tmp") / f"rlclimb-secret-{secret[:8]}"
    public.write_text(secret)
    public.chmod(0o644)
    try:
        r = sb.run(f"cat {private}", limits=TIGHT)
        assert r.status in (Status.BLOCKED, Status.RE) and secret not in r.stdout, r
        if backend != "process":  # the process backend sees world-readable host files (documented)
            r = sb.run(f"cat {public}; ls /tmp", limits=TIGHT)
            assert secret not in r.stdout and public.name not in r.stdout, r
        # Nothing outside the scratch dir is writable either.
        r = sb.run("echo x > /usr/rlclimb-pwned; echo x > /etc/rlclimb-pwned", limits=TIGHT)
        assert r.status == Status.BLOCKED, r
        assert not Path("/usr/rlclimb-pwned").exists() and not Path("/etc/rlclimb-pwned").exists()
        r = sb.run(f"echo changed > {public}", limits=TIGHT)
        assert public.read_text() == secret
    finally:
        private.unlink()
        public.unlink()


@each_backend
def test_background_leftovers_are_killed(backend):
    sb = sandbox_or_skip(backend)
    marker = f"rlclimb-left-{uuid.uuid4().hex[:8]}"
    t0 = time.monotonic()
    r = sb.run(f"python3 -c 'import time; time.sleep(300)' {marker} & echo started", limits=TIGHT)
    assert r.status == Status.OK and r.stdout == "started\n", r
    assert time.monotonic() - t0 < 3
    time.sleep(0.3)
    assert procs_with(marker) == []
    assert_next_run_fine(sb)


@each_backend
def test_session_keeps_files_between_commands(backend):
    sb = sandbox_or_skip(backend)
    with sb.session(files={"a.txt": "1\n"}) as s:
        assert s.run("echo 2 >> a.txt").ok
        s.write_files({"b.txt": b"3\n"})
        r = s.run(["cat", "a.txt", "b.txt"])
        assert r.stdout == "1\n2\n3\n", r
        assert s.read_files(["*.txt"]) == {"a.txt": b"1\n2\n", "b.txt": b"3\n"}


@each_backend
def test_bad_file_paths_are_refused(backend):
    sb = sandbox_or_skip(backend)
    before = set(Path(tempfile.gettempdir()).glob("rlclimb-sbx-*"))
    for name in ("/etc/x", "../x", "a/../../x"):
        r = sb.run("true", files={name: "x"})
        assert r.status == Status.ERROR and "relative" in r.detail
    if backend != "docker":  # docker keeps a started container (and its dir) in its pool
        assert set(Path(tempfile.gettempdir()).glob("rlclimb-sbx-*")) <= before


def test_classify_shell_reported_signals():
    assert classify(152, stderr="CPU time limit exceeded")[0] == Status.TLE
    assert classify(153)[0] == Status.OLE
    assert classify(1, stderr="Traceback...\nMemoryError")[0] == Status.MLE
    assert (
        classify(134, stderr="terminate called after throwing an instance of 'std::bad_alloc'")[0]
        == Status.MLE
    )
    assert classify(0, output_exceeded=True)[0] == Status.OLE


def test_unknown_backend_is_named():
    with pytest.raises(ValueError, match="unknown sandbox backend 'nope'"):
        get_sandbox("nope")


@pytest.mark.docker
def test_docker_leaves_no_container_behind():
    sb = sandbox_or_skip("docker")
    from rlclimb.environments.sandbox import docker_backend as db

    sb.run("echo hi")
    sb.run("true", files={"../escape": "x"})  # refused after a pooled container was taken
    with sb.session() as s:
        s.run("sleep 30 &")
    db.wait_removed()
    labeled = {
        c["Id"]
        for c in db.client().api.containers(
            all=True, filters={"label": f"rlclimb.pid={os.getpid()}"}
        )
    }
    pooled = {w.cid for ws in db._pool.ready.values() for w in ws}
    assert labeled <= pooled, "containers outlived their sessions"
    # A container whose owner process is gone is removed by the next process's first client.
    api = db.client().api
    orphan = api.create_container(
        db.image_tag(), ["true"], labels={"rlclimb.sandbox": "1", "rlclimb.pid": "999999999"}
    )["Id"]
    db._remove_orphans(db.client())
    assert not api.containers(all=True, filters={"id": orphan})
