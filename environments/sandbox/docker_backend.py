"""`docker` backend (docker SDK): a fresh container per run or session, always removed.

The container runs `sleep infinity` under docker-init as its main process, with no network
(`network_mode="none"`), a memory cap without swap, a CPU share, a pids limit, a read-only root
filesystem, a tmpfs /tmp, and the host scratch dir bound at /work. Commands are `exec`s in it as
a throwaway uid, under coreutils `timeout` (the engine has no exec timeout); a host-side timer
kills the container if even that does not end the command. Starting a container is most of the
cost (~0.4 s here), so a small pool keeps started, unused containers ready; removal happens in the
background.
"""

from __future__ import annotations

import atexit
import math
import multiprocessing.util
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .base import Files, Limits, Result, Sandbox, Session, Status, classify
from .hostproc import HostSession, kill_uid, new_uid, release_uid
from .image import image_tag
from .scratch import Scratch, owner_alive, owner_id

ENV = {"HOME": "/work", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}


_clients: dict[int, object] = {}


def client():
    """One engine client per process (a forked pipeline worker must not share the parent's socket)."""
    import docker

    pid = os.getpid()
    if pid not in _clients:
        _clients[pid] = docker.from_env(timeout=60)
        _remove_orphans(_clients[pid])
    return _clients[pid]


def _remove_orphans(engine) -> None:
    """Containers left by a process that died without cleaning up (kill -9): remove them. The
    owner label names the process exactly (pid namespace, pid, start time: pids get reused)."""
    try:
        for c in engine.api.containers(all=True, filters={"label": "rlclimb.sandbox"}):
            labels = c["Labels"]
            # Labelled before owners were exact: the pid alone says whether it is gone.
            owner = labels.get("rlclimb.owner") or owner_id(int(labels.get("rlclimb.pid") or 0))
            if not owner_alive(owner):
                engine.api.remove_container(c["Id"], force=True)
    except Exception:
        pass  # the engine is down: docker_available() says so elsewhere


def docker_available(image: str | None = None) -> bool:
    """An engine answers and has the image (nothing can be pulled on machines with no registry)."""
    try:
        client().ping()
        client().images.get(image or image_tag())
        return True
    except Exception:
        return False


class DockerSession(HostSession):
    backend = "docker"

    def __init__(
        self,
        files: Files | None,
        limits: Limits,
        network: bool,
        image: str,
        warm: _Warm | None = None,
        *,
        exec_user: str | None = None,
        workdir: str = "/work",
    ) -> None:
        """`exec_user` ("0:0" for SWE containers, whose /testbed the image's root owns): commands
        run as that user instead of the session's throwaway uid; `workdir`: where they start."""
        if warm is None:
            warm = _Warm.start(limits, network, image)
        self.exec_user, self.workdir = exec_user, workdir
        # Adopt the prepared scratch, uid and container (HostSession.__init__ would make new ones).
        Session.__init__(self, limits, network)
        self.warm = warm
        self.uid, self.scratch, self.dir, self.cid = (
            warm.uid,
            warm.scratch,
            warm.scratch.path,
            warm.cid,
        )
        try:
            self.write_files(files or {})
        except Exception:  # a bad file name: the container goes, the error stays the caller's
            self.close()
            raise

    def run(
        self,
        command: str | Sequence[str],
        *,
        stdin: str | bytes | None = None,
        limits: Limits | None = None,
    ) -> Result:
        limits = limits or self.limits
        script = command if isinstance(command, str) else " ".join(_quote(a) for a in command)
        if stdin is not None:  # exec has no stdin pipe in the SDK's simple path: go through a file
            try:
                self.write_files({".stdin": stdin})
            except OSError as e:  # the program filled its quota in an earlier command
                status = Status.OLE if self.scratch.full() else Status.ERROR
                return Result(status, None, detail=f"cannot pass stdin: {e.strerror}")
            script = f"( {script}\n) < /work/.stdin"
        cpu = math.ceil(limits.cpu_limit_s)
        # Soft CPU limit only (SIGXCPU -> TLE; soft == hard would be a bare SIGKILL). `kill -9 -1`
        # ends background leftovers (all of the uid but the shell): the engine keeps an exec's
        # stream open while any process holds its stdout.
        # The container's memory cap is fixed at creation; a tighter per-command limit (a test
        # after a compile) becomes an address-space limit.
        vmem = (
            f"ulimit -S -v {(limits.memory_mb + 64) << 10}; "
            if limits.memory_mb < self.limits.memory_mb
            else ""
        )
        outer = (
            f'{vmem}ulimit -S -t {cpu}; timeout -s KILL {limits.wall_s:g} sh -c "$1"; rc=$?; '
            "kill -9 -1 2>/dev/null; exit $rc"
        )
        argv = ["sh", "-c", outer, "sh", script]
        api = client().api
        ooms = self.warm.oom_kills()
        t0 = time.monotonic()
        try:
            exec_id = api.exec_create(
                self.cid,
                argv,
                user=self.exec_user or f"{self.uid or 65534}:{self.uid or 65534}",
                workdir=self.workdir,
            )["Id"]
            stream = api.exec_start(exec_id, stream=True, demux=True)
        except Exception as e:
            return Result(
                Status.ERROR, None, wall_s=time.monotonic() - t0, detail=f"docker exec: {e}"[:300]
            )
        # Backstop: a command that outlives `timeout` (it should not) takes the container with it.
        watchdog = threading.Timer(limits.wall_s + 5, self._kill)
        watchdog.daemon = True
        watchdog.start()
        out, err, exceeded = bytearray(), bytearray(), False
        try:
            for chunk_out, chunk_err in stream:
                for buf, chunk in ((out, chunk_out), (err, chunk_err)):
                    if chunk:
                        room = limits.output_bytes - len(buf)
                        buf += chunk[: max(room, 0)]
                        exceeded |= len(chunk) > room
                if exceeded:
                    break
        except Exception:
            pass
        finally:
            watchdog.cancel()
        if exceeded:  # the container shares the host kernel: its uid's processes are ours to kill
            if self.exec_user is None:
                kill_uid(self.uid)
            else:  # container root without CAP_KILL: `kill -1` reaches its own processes only
                self._kill_exec_user()
        wall = time.monotonic() - t0
        info = _exec_result(api, exec_id)
        exit_code = info.get("ExitCode")
        timed_out = exit_code == 137 and wall >= limits.wall_s - 0.05
        stderr = err.decode("utf-8", "replace")
        # The kernel's OOM kill under the container's memory cap: its cgroup counts them. Where
        # the counter is unreadable, fall back to a SIGKILL (137) before the wall time.
        after = self.warm.oom_kills()
        if ooms is not None and after is not None:
            oom = after > ooms
        else:
            oom = exit_code == 137 and not timed_out and not exceeded
        status, detail = classify(
            exit_code,
            timed_out=timed_out,
            output_exceeded=exceeded,
            oom=oom,
            disk_full=exit_code not in (0, None) and self.scratch.full(),
            stderr=stderr,
        )
        if exit_code is None and not exceeded:
            status, detail = Status.ERROR, "container gone (killed by the watchdog?)"
        return Result(
            status, exit_code, out.decode("utf-8", "replace"), stderr, wall, None, detail=detail
        )

    def _kill_exec_user(self) -> None:
        try:
            api = client().api
            exec_id = api.exec_create(self.cid, ["sh", "-c", "kill -9 -1"], user=self.exec_user)
            api.exec_start(exec_id["Id"])
        except Exception:
            pass

    def _kill(self) -> None:
        try:
            client().api.kill(self.cid)
        except Exception:
            pass

    def close(self) -> None:
        """Remove the container in the background (saves ~0.15 s a run); `wait_removed` joins."""
        cid, self.cid = self.cid, None
        if cid is not None:
            _in_background(self.warm.remove)


@dataclass
class _Warm:
    """A started container with its scratch and uid, not used by any command yet."""

    cid: str | None
    scratch: Scratch
    uid: int | None
    oom_file: str | None = None  # the container's memory cgroup file that counts OOM kills

    def oom_kills(self) -> int | None:
        """The kernel's count of OOM kills in the container (cgroup v1 memory.oom_control or v2
        memory.events `oom_kill`); None when it cannot be read here."""
        if self.oom_file is None:
            return None
        try:
            with open(self.oom_file) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            pass
        return None

    @staticmethod
    def start(
        limits: Limits,
        network: bool,
        image: str,
        *,
        user: str | None = None,
        read_only: bool = True,
        working_dir: str = "/work",
        environment: dict[str, str] | None = None,
    ) -> _Warm:
        """`user`: the container's main process (and default exec) user; `read_only=False` for
        images whose files the commands edit in place (SWE's /testbed: the container's own
        layer, thrown away with it); `environment`: overrides of ENV."""
        from docker.types import Ulimit

        uid = new_uid()
        try:
            scratch = Scratch(uid, limits.disk_bytes, limits.disk_files)
        except Exception:
            release_uid(uid)
            raise
        api = client().api
        cid = None
        try:
            host_config = api.create_host_config(
                init=True,
                network_mode="bridge" if network else "none",
                mem_limit=f"{limits.memory_mb}m",
                memswap_limit=f"{limits.memory_mb}m",
                nano_cpus=int(limits.cpus * 1e9),
                pids_limit=limits.processes,
                read_only=read_only,
                # One quota for all it may write: the scratch tmpfs's work/, tmp/ and shm/.
                binds={
                    str(scratch.path): {"bind": "/work", "mode": "rw"},
                    str(scratch.tmp_path): {"bind": "/tmp", "mode": "rw"},
                    str(scratch.shm_path): {"bind": "/dev/shm", "mode": "rw"},
                },
                ulimits=[
                    Ulimit(name="fsize", soft=limits.file_bytes, hard=limits.file_bytes),
                    Ulimit(name="core", soft=0, hard=0),
                ],
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
            )
            cid = api.create_container(
                image,
                ["sleep", "infinity"],
                working_dir=working_dir,
                user=user,
                environment={**ENV, **(environment or {})},
                host_config=host_config,
                labels={
                    "rlclimb.sandbox": "1",
                    "rlclimb.pid": str(os.getpid()),
                    "rlclimb.owner": owner_id(),
                },
            )["Id"]
            api.start(cid)
            return _Warm(cid, scratch, uid, _oom_file(api, cid))
        except Exception:
            _Warm(cid, scratch, uid).remove()
            raise

    def remove(self) -> None:
        try:
            if self.cid is not None:
                client().api.remove_container(self.cid, force=True)
        except Exception:
            pass
        kill_uid(self.uid)  # nothing should be left; the scratch dir is the host's
        release_uid(self.uid)
        self.scratch.close()


def _oom_file(api, cid: str) -> str | None:
    """Where the host reads the container's OOM-kill count (None: not visible from here)."""
    try:
        pid = api.inspect_container(cid)["State"]["Pid"]
        with open(f"/proc/{pid}/cgroup") as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f]
    except Exception:
        return None
    for _, controllers, path in lines:
        if "memory" in controllers.split(","):
            candidate = f"/sys/fs/cgroup/memory{path}/memory.oom_control"
            break
    else:
        path = next((p for h, c, p in lines if h == "0"), None)
        candidate = f"/sys/fs/cgroup{path}/memory.events" if path is not None else None
    return candidate if candidate and os.path.exists(candidate) else None


def _container_key(limits: Limits, network: bool, image: str) -> tuple:
    """What a container (and its scratch quota) fixes at creation; commands may still tighten
    time and output limits."""
    return (
        image,
        network,
        limits.memory_mb,
        limits.processes,
        limits.cpus,
        limits.file_bytes,
        limits.disk_bytes,
        limits.disk_files,
    )


class _Pool:
    """Started containers waiting for a session, per container key: a fresh container per
    session still, but its ~0.4 s start happens before the caller asks (refilled in background)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ready: dict[tuple, list[_Warm]] = {}
        self.filling: set[tuple] = set()
        self.pid = os.getpid()
        self.ready_cond = threading.Condition(self.lock)

    def take(self, key: tuple, size: int) -> _Warm | None:
        with self.lock:
            if self.pid != os.getpid():  # a forked worker: the parent's containers are not ours
                self.pid, self.ready, self.filling = os.getpid(), {}, set()
            # A start already under way finishes sooner than a second one next to it.
            self.ready_cond.wait_for(
                lambda: self.ready.get(key) or key not in self.filling, timeout=10
            )
            warm = self.ready.get(key, []).pop() if self.ready.get(key) else None
        self.refill(key, size)
        return warm

    def refill(self, key: tuple, size: int) -> None:
        with self.lock:
            if key in self.filling or len(self.ready.get(key, [])) >= size:
                return
            self.filling.add(key)

        def fill() -> None:
            image, network, memory_mb, processes, cpus, file_bytes, disk_bytes, disk_files = key
            limits = Limits(
                memory_mb=memory_mb,
                processes=processes,
                cpus=cpus,
                file_bytes=file_bytes,
                disk_bytes=disk_bytes,
                disk_files=disk_files,
            )
            try:
                while not _closing.is_set():
                    with self.lock:
                        if len(self.ready.get(key, [])) >= size:
                            break
                    warm = _Warm.start(limits, network, image)
                    with self.lock:
                        self.ready.setdefault(key, []).append(warm)
                        self.ready_cond.notify_all()
            except Exception:
                pass
            finally:
                with self.lock:
                    self.filling.discard(key)
                    self.ready_cond.notify_all()

        _in_background(fill)

    def drain(self) -> None:
        with self.lock:
            warms = [w for ws in self.ready.values() for w in ws]
            self.ready.clear()
        for w in warms:
            w.remove()


_pool = _Pool()
_closing = threading.Event()


def _in_background(fn) -> None:
    def run() -> None:
        try:
            fn()
        finally:
            with _pending_lock:
                _pending.discard(threading.current_thread())

    thread = threading.Thread(target=run, daemon=True)
    with _pending_lock:
        _pending.add(thread)
    thread.start()


_pending: set[threading.Thread] = set()
_pending_lock = threading.Lock()


def wait_removed() -> None:
    """Join background removals and refills (tests; interpreter exit)."""
    while True:
        with _pending_lock:
            threads = [t for t in _pending if t is not threading.current_thread()]
        if not threads:
            return
        for t in threads:
            t.join()


@atexit.register
def shutdown() -> None:
    """No container outlives the interpreter: stop refills, remove pooled and used ones."""
    _closing.set()
    wait_removed()
    _pool.drain()


# Worker processes of the pipeline engine leave through os._exit, skipping atexit; they do run
# multiprocessing's finalizers.
multiprocessing.util.Finalize(None, shutdown, exitpriority=100)


def _exec_result(api, exec_id: str) -> dict:
    # The stream ends a moment before the engine records the exit code.
    for _ in range(50):
        info = api.exec_inspect(exec_id)
        if not info.get("Running"):
            return info
        time.sleep(0.01)
    return info


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


class DockerSandbox(Sandbox):
    name = "docker"

    def __init__(
        self, limits: Limits | None = None, image: str | None = None, pool: int | None = None
    ) -> None:
        """`pool`: started containers kept ready per container configuration (default 1, env
        RLCLIMB_DOCKER_POOL; 0 = start each container on demand)."""
        super().__init__(limits)
        self.image = image or image_tag()
        self.pool = int(os.environ.get("RLCLIMB_DOCKER_POOL", 1)) if pool is None else pool

    def session(
        self, *, files: Files | None = None, limits: Limits | None = None, network: bool = False
    ) -> Session:
        limits = limits or self.limits
        warm = (
            _pool.take(_container_key(limits, network, self.image), self.pool)
            if self.pool
            else None
        )
        return DockerSession(files, limits, network, self.image, warm)

    def describe(self) -> str:
        return f"docker ({self.image})"
