"""Run an environment's untrusted tools in a sandbox: one long-lived worker per runtime.

    with ToolRuntime(load_env("examples/tool_envs/bike_shop")) as rt:
        rt.tools                        # [{"name", "kind": "read"|"write", "schema": {...}}]
        rt.call("get_customer", {"customer_id": "c1"})   # -> str (an observation)
        rt.state_hash()                 # canonical hash of the state now
    replay(env, task)                   # -> ReplayResult(outputs, final_hash, error)

The worker (worker.py) runs inside a sandbox session (`environments/sandbox`: bwrap, docker or
process) and keeps tools.py and the state loaded, answering JSON lines over stdin/stdout pipes:
a call costs a pipe round trip, not a process start (measured in the report). The host trusts
nothing it says: each reply is read with a size cap and a deadline; a call that times out,
crashes the worker, floods its output or answers garbage is killed with the whole sandbox, and
the runtime restarts in a FRESH sandbox (the tool may have rewritten files in the old one) and
replays the calls that had completed, so a failed call has no effect on the state and later
calls still work. The final-state hash is computed on the host from the exported state.

Backend: `backend=`, else `RLCLIMB_TOOL_SANDBOX`, else `RLCLIMB_SANDBOX`, else bwrap when it
works (tens of ms to start), docker, process. The worker has no network in any of them.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..sandbox import Limits, get_sandbox
from .format import ToolEnvSpec, ToolTask, load_env
from .state import canonical_hash

WORKER_FILE = Path(__file__).with_name("worker.py")
WORKER_CMD = ["env", "PYTHONHASHSEED=0", "python3", "-u", ".worker.py"]


class WorkerFailure(RuntimeError):
    """The worker broke the protocol (timeout, death, oversize or unreadable reply)."""

    def __init__(self, status: str, detail: str) -> None:
        super().__init__(f"{status}: {detail}")
        self.status, self.detail = status, detail


@dataclass
class CallRecord:
    name: str
    arguments: dict[str, Any]
    output: str
    status: str  # ok | raised (the tool raised: output is "Error: ...") | rejected | timeout | crashed | overflow
    wall_s: float = 0.0

    @property
    def applied(self) -> bool:
        """The call ran to completion in the worker (its effects, if any, are in the state)."""
        return self.status in ("ok", "raised")


@dataclass
class ReplayResult:
    outputs: list[str]
    final_hash: str | None
    error: str = ""
    state: Any = None
    calls: list[CallRecord] = field(default_factory=list)


class _Tail:
    """Drains the worker's stderr (tool prints land there), keeping the last `keep` bytes."""

    def __init__(self, stream, keep: int = 16384) -> None:
        self.data = bytearray()
        self._stream, self._keep = stream, keep
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        try:
            while chunk := self._stream.read1(65536):
                self.data += chunk
                if len(self.data) > 2 * self._keep:
                    del self.data[: -self._keep]
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        return bytes(self.data[-self._keep :]).decode("utf-8", "replace")


def _default_backend() -> str:
    backend = os.environ.get("RLCLIMB_TOOL_SANDBOX") or os.environ.get("RLCLIMB_SANDBOX", "auto")
    if backend != "auto":
        return backend
    from ..sandbox import available_backends

    found = available_backends()
    return "bwrap" if "bwrap" in found else found[0]


class ToolRuntime:
    def __init__(
        self,
        env: ToolEnvSpec | str | Path,
        *,
        backend: str | None = None,
        call_timeout_s: float = 10.0,
        startup_timeout_s: float = 60.0,
        memory_mb: int = 1024,
        cpu_s: float = 600.0,
        max_output_bytes: int = 1 << 20,
        max_state_bytes: int = 256 << 20,
    ) -> None:
        self.env = env if isinstance(env, ToolEnvSpec) else load_env(env)
        self.backend = backend or _default_backend()
        self.call_timeout_s = call_timeout_s
        self.startup_timeout_s = startup_timeout_s
        self.max_output_bytes = max_output_bytes
        self.max_state_bytes = max_state_bytes
        # The worker lives for the whole runtime: its wall time is ours to police per call.
        self.limits = Limits(
            wall_s=24 * 3600.0,
            cpu_s=cpu_s,
            memory_mb=memory_mb,
            processes=16,
            file_bytes=16 << 20,
            disk_bytes=64 << 20,
            disk_files=2000,
        )
        self._files = self.env.sandbox_files()
        self._files[".worker.py"] = WORKER_FILE.read_bytes()
        self._files[".worker.json"] = json.dumps(self._worker_config()).encode()
        self._sandbox = get_sandbox(self.backend, limits=self.limits)
        self._session = None
        self._proc: subprocess.Popen | None = None
        self._stderr: _Tail | None = None
        self._buf = bytearray()
        self.tools: list[dict[str, Any]] = []
        self.calls: list[CallRecord] = []  # every call this episode, in order
        self.restarts = 0

    def _worker_config(self) -> dict[str, Any]:
        st = self.env.state
        module = Path(self.env.tools_file).with_suffix("").as_posix().replace("/", ".")
        return {
            "state_kind": st.kind,
            "state_file": st.file if st.kind == "json" else None,
            "schema_file": st.schema_file if st.kind == "sqlite" else None,
            "seed_file": st.seed if st.kind == "sqlite" and st.seed in self._files else None,
            "tools_module": module,
        }

    # lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> ToolRuntime:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        if self._proc is None:
            self._launch()

    def reset(self) -> None:
        """A fresh state (new sandbox, new worker) for the next episode."""
        self._stop()
        self.calls = []
        self._launch()

    def close(self) -> None:
        self._stop()

    def _launch(self) -> None:
        self._session = self._sandbox.session(files=self._files, limits=self.limits)
        session = self._session
        try:
            if session.backend == "docker":
                cpu = int(self.limits.cpu_limit_s)
                argv = [
                    "docker", "exec", "-i", "-u", f"{session.uid or 65534}:{session.uid or 65534}",
                    "-w", "/work", session.cid, "sh", "-c",
                    f"ulimit -S -t {cpu}; exec {' '.join(WORKER_CMD)}",
                ]  # fmt: skip
                env = {
                    k: v for k, v in os.environ.items() if k == "PATH" or k.startswith("DOCKER_")
                }
                cwd = None
            else:
                argv, env = session.argv(WORKER_CMD, self.limits)
                cwd = session.dir
            self._proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            self._stderr = _Tail(self._proc.stderr)
            self._buf = bytearray()
            hello = self._read(self.startup_timeout_s, self.max_output_bytes)
        except BaseException:
            self._stop()
            raise
        if not hello.get("ready"):
            detail = str(hello.get("error", ""))[-2000:]
            self._stop()
            raise RuntimeError(f"environment {self.env.name}: tools did not load:\n{detail}")
        self.tools = [t for t in hello.get("tools", []) if isinstance(t, dict)]

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            from ..sandbox.hostproc import kill_uid

            kill_uid(getattr(self._session, "uid", None), rounds=5)
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
        session, self._session = self._session, None
        if session is not None:
            session.close()

    # protocol --------------------------------------------------------------------------------
    def _read(self, timeout: float, cap: int) -> dict[str, Any]:
        assert self._proc is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        start = 0
        while (end := self._buf.find(b"\n", start)) < 0:
            start = len(self._buf)
            if len(self._buf) > cap:
                raise WorkerFailure("overflow", f"reply over {cap} bytes")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerFailure("timeout", f"no reply within {timeout:g} s")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    self._proc.wait(5)
                    raise WorkerFailure(
                        "crashed",
                        f"worker exited ({self._proc.returncode}): {self._stderr.text()[-800:]}",
                    )
                self._buf += chunk
        if end > cap:
            raise WorkerFailure("overflow", f"reply over {cap} bytes")
        line = bytes(self._buf[:end])
        del self._buf[: end + 1]
        try:
            reply = json.loads(line)
        except ValueError:
            raise WorkerFailure("crashed", "unreadable reply") from None
        if not isinstance(reply, dict):
            raise WorkerFailure("crashed", "unreadable reply")
        return reply

    def _request(self, request: dict[str, Any], timeout: float, cap: int) -> dict[str, Any]:
        if self._proc is None:
            self._launch()
        try:
            self._proc.stdin.write(json.dumps(request).encode() + b"\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerFailure("crashed", "worker gone") from None
        return self._read(timeout, cap)

    def _recover(self) -> None:
        """A fresh sandbox with the completed calls replayed: the failed call leaves no trace."""
        self._stop()
        self.restarts += 1
        self._launch()
        for rec in self.calls:
            if rec.applied:
                self._request(
                    {"op": "call", "name": rec.name, "arguments": rec.arguments},
                    self.call_timeout_s,
                    self.max_output_bytes,
                )

    # API ---------------------------------------------------------------------------------------
    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of the tools (for a chat template's tool list)."""
        self.start()
        return [t["schema"] for t in self.tools]

    def kind(self, name: str) -> str | None:
        self.start()
        return next((t["kind"] for t in self.tools if t["name"] == name), None)

    def call_record(self, name: str, arguments: dict[str, Any]) -> CallRecord:
        self.start()
        t0 = time.monotonic()
        try:
            reply = self._request(
                {"op": "call", "name": name, "arguments": arguments},
                self.call_timeout_s,
                self.max_output_bytes,
            )
            if reply.get("ok"):
                output = reply.get("output")
                output = output if isinstance(output, str) else json.dumps(output)
                rec = CallRecord(name, arguments, output, "raised" if reply.get("raised") else "ok")
            else:
                rec = CallRecord(name, arguments, f"Error: {reply.get('error', '')}", "rejected")
        except WorkerFailure as e:
            rec = CallRecord(name, arguments, f"Error: tool {name} failed ({e})", e.status)
            rec.wall_s = time.monotonic() - t0
            self.calls.append(rec)
            self._recover()
            return rec
        rec.wall_s = time.monotonic() - t0
        self.calls.append(rec)
        return rec

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one tool call; the output string is what the policy sees (errors included)."""
        return self.call_record(name, arguments).output

    def state(self) -> Any:
        """The state now, exported (JSON documents, or {table: [rows]} for SQLite)."""
        try:
            reply = self._request({"op": "state"}, self.call_timeout_s * 3, self.max_state_bytes)
        except WorkerFailure:
            self._recover()
            reply = self._request({"op": "state"}, self.call_timeout_s * 3, self.max_state_bytes)
        if "state" not in reply:
            raise WorkerFailure("crashed", "no state in reply")
        return reply["state"]

    def unordered(self) -> list[str]:
        return ["*"] if self.env.state.kind == "sqlite" else list(self.env.state.unordered)

    def state_hash(self, state: Any = None) -> str:
        return canonical_hash(self.state() if state is None else state, self.unordered())


def replay(
    env: ToolEnvSpec | str | Path,
    task: ToolTask,
    *,
    runtime: ToolRuntime | None = None,
    keep_state: bool = False,
    **options: Any,
) -> ReplayResult:
    """Run a task's gold actions in a fresh state; `error` names the first call the sandbox
    had to stop (a tool that merely returns or raises an error is an output, not a failure)."""
    own = runtime is None
    try:
        rt = runtime or ToolRuntime(env, **options)
        if own:
            rt.start()
        else:
            rt.reset()
    except Exception as e:
        return ReplayResult([], None, f"runtime did not start: {e}")
    try:
        outputs, error = [], ""
        for i, action in enumerate(task.actions):
            rec = rt.call_record(action.name, action.arguments)
            outputs.append(rec.output)
            if not rec.applied and not error:
                error = f"action {i} ({action.name}): {rec.status}: {rec.output}"
        state = rt.state()
        return ReplayResult(
            outputs, rt.state_hash(state), error, state if keep_state else None, list(rt.calls)
        )
    except Exception as e:
        return ReplayResult([], None, f"{type(e).__name__}: {e}")
    finally:
        if own:
            rt.close()
