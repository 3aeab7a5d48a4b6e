"""Smoke tests: every tool executed once, in the sandboxed runtime, with its example arguments.

Read tools run one after another on the seed state; each write tool runs on a fresh copy of it
and must change the state (a write that changes nothing is a bug the repair loop should see).
A failure is anything but a clean return: the module not loading, a tool missing, a rejected
call (bad arguments), a raised exception, a timeout or crash, or an "Error: ..." output.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlclimb.environments.tooluse.runtime import ToolRuntime

from .bundle import materialize

OUTPUT_CHARS = 600  # of a failing output, shown to the repair prompt


@dataclass
class SmokeResult:
    load_error: str | None = None
    failures: dict[str, str] = field(default_factory=dict)  # tool -> what happened
    outputs: dict[str, str] = field(default_factory=dict)  # tool -> its output (passing tools)
    listing: list[dict[str, Any]] = field(default_factory=list)  # the runtime's tools

    @property
    def ok(self) -> bool:
        return self.load_error is None and not self.failures


def smoke_test(bundle: dict[str, Any], backend: str | None = None, call_timeout_s: float = 10.0) -> SmokeResult:
    result = SmokeResult()
    with tempfile.TemporaryDirectory(prefix="rlclimb-smoke-") as tmp:
        spec = materialize(bundle, Path(tmp) / "env")
        rt = ToolRuntime(spec, backend=backend, call_timeout_s=call_timeout_s)
        try:
            rt.start()
        except Exception as e:  # the module does not import (syntax, a bad import, a raise at load)
            result.load_error = str(e)[-2000:]
            return result
        try:
            result.listing = list(rt.tools)
            kinds = {t["name"]: t["kind"] for t in rt.tools}
            for t in bundle["tools"]:
                if t["name"] not in kinds:
                    result.failures[t["name"]] = "not defined in tools.py (no @tool function of that name)"
            examples = bundle.get("examples") or {}
            reads = [n for n, k in kinds.items() if k == "read"]
            writes = [n for n, k in kinds.items() if k == "write"]
            for name in reads + writes:
                args = examples.get(name)
                if not isinstance(args, dict):
                    result.failures[name] = "no example arguments for this tool"
                    continue
                if kinds[name] == "write":
                    rt.reset()
                    before = rt.state_hash()
                rec = rt.call_record(name, args)
                if rec.status != "ok" or rec.output.startswith("Error:"):
                    result.failures[name] = f"called with {args}: {rec.status}: {rec.output[:OUTPUT_CHARS]}"
                elif kinds[name] == "write" and rt.state_hash() == before:
                    result.failures[name] = f"called with {args}: a write tool, but the state did not change"
                else:
                    result.outputs[name] = rec.output
        finally:
            rt.close()
    return result
