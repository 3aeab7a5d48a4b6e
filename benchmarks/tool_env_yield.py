"""Synthesis yield of `rlclimb run tool-envs`, stage by stage.

1. scripted: the pipeline against the scripted OpenAI-compatible server answering like a capable
   model, with planted faults (tests/helpers/tool_env_script.py): what each stage keeps and why
   it drops, LLM requests by prompt kind, wall time. This measures the pipeline's own machinery
   (parsing, sandboxed smoke tests, repair, replay, dedup), not a model.
2. --real: the same pipeline with no `llm:` section, so the embedded SmolLM2 (the packaged
   135M GGUF, in-process on the CPU) writes everything, on one description. Also `--probe N`:
   N direct design calls (different seeds) and how many replies are a valid design at all.

    python benchmarks/tool_env_yield.py                      # scripted only
    python benchmarks/tool_env_yield.py --real --probe 3     # + the embedded model (minutes)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from rlclimb.pipelines.definitions import PIPELINES  # noqa: E402
from rlclimb.pipelines.engine import RunOptions, run_pipeline  # noqa: E402
from rlclimb.pipelines.llm import LLMClient, LLMConfig, LLMError  # noqa: E402
from rlclimb.pipelines.scripted_server import ScriptedServer  # noqa: E402
from rlclimb.stages.tooluse.llm import EMBEDDED_LLM, prompt  # noqa: E402
from rlclimb.stages.tooluse.models import EnvDesign  # noqa: E402

SCRIPTED = """\
- name: bike_shop
  description: An inventory and order system for a small bike shop with customers, bikes and orders.
  n_tasks: 14
  personas: [A hurried commuter whose old bike was stolen, A parent buying a first bike for a child]
- name: garage
  description: A booking system for a parking garage with spaces, cars and reservations.
"""
REAL = """\
- name: bike_shop
  description: An inventory and order system for a small bike shop with customers, bikes and orders.
  n_tasks: 4
  personas: [A hurried commuter whose old bike was stolen]
"""


def funnel(run: Path) -> list[dict]:
    stats = json.loads((run / "stats.json").read_text())
    return [{"stage": s["name"], "in": s["in"], "out": s["out"], "dropped": s["dropped"],
             "llm_requests": int(s["llm"].get("requests", 0)),
             "tokens": int(s["llm"].get("prompt_tokens", 0) + s["llm"].get("completion_tokens", 0)),
             "time_s": round(s["time_s"], 2)} for s in stats["stages"]]


def ledger(run: Path) -> list[dict]:
    path = run / "ledger"
    if not path.exists() or not any(path.rglob("*.parquet")):
        return []
    return [{"stage": r["stage"], "reason": r["reason"], "detail": r["detail"][:300]} for r in pq.read_table(path).to_pylist()]


def envs(run: Path) -> list[dict]:
    data = run / "data"
    return pq.read_table(data).to_pylist() if data.exists() and any(data.rglob("*.parquet")) else []


def scripted(tmp: Path) -> dict:
    from helpers.tool_env_script import ToolEnvScript

    src = tmp / "scripted.yaml"
    src.write_text(SCRIPTED)
    script = ToolEnvScript()
    with ScriptedServer(script) as server:
        llm = LLMConfig.from_dict({"profiles": {"scripted": {"base_url": server.base_url, "model": "gen", "api_key": "k"}},
                                   "roles": {"generator": "scripted"}})
        pipe = PIPELINES["tool-envs"]([str(src)], {"bootstrap": {"critique_rounds": 2}, "tasks": {"no_tool_share": 0.3}}, 100)
        t0 = time.perf_counter()
        run_pipeline(pipe, tmp / "scripted", RunOptions(progress=False, llm=llm))
        wall = time.perf_counter() - t0
    return {"wall_s": round(wall, 1), "requests_by_kind": dict(script.kinds), "funnel": funnel(tmp / "scripted"),
            "drops": dict(Counter(f"{d['stage']}:{d['reason']}" for d in ledger(tmp / "scripted"))),
            "environments": envs(tmp / "scripted")}


def real(tmp: Path, max_tokens: int) -> dict:
    src = tmp / "real.yaml"
    src.write_text(REAL)
    sections = {"bootstrap": {"critique_rounds": 1, "repair_rounds": 1, "max_tokens": max_tokens},
                "tasks": {"max_tokens": min(max_tokens, 512)}}
    pipe = PIPELINES["tool-envs"]([str(src)], sections, 100)
    t0 = time.perf_counter()
    run_pipeline(pipe, tmp / "real", RunOptions(progress=False, llm=None))
    wall = time.perf_counter() - t0
    return {"wall_s": round(wall, 1), "funnel": funnel(tmp / "real"), "ledger": ledger(tmp / "real"),
            "environments": envs(tmp / "real")}


async def probe(n: int, max_tokens: int) -> dict:
    """N design calls with the embedded model: how many replies are a valid EnvDesign."""
    client = LLMClient(LLMConfig.from_dict(EMBEDDED_LLM))
    text = prompt("design", description="An inventory and order system for a small bike shop with customers, bikes and orders.",
                  personas="- A hurried commuter", min_tools=4, max_tools=10)
    valid, failures, samples = 0, Counter(), []
    t0 = time.perf_counter()
    for seed in range(n):
        try:
            design, c = await client.structured("generator", [{"role": "user", "content": text}], EnvDesign,
                                                seed=seed, max_tokens=max_tokens)
            valid += 1
            samples.append(json.dumps(design.model_dump())[:300])
        except LLMError as e:
            failures[e.drop_reason] += 1
            samples.append(str(e)[:300])
    await client.aclose()
    return {"calls": n, "valid_designs": valid, "failures": dict(failures), "wall_s": round(time.perf_counter() - t0, 1),
            "samples": samples}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real", action="store_true", help="also run with the embedded SmolLM2 (slow)")
    ap.add_argument("--probe", type=int, default=0, help="N direct design calls to the embedded model")
    ap.add_argument("--max-tokens", type=int, default=768, help="per embedded-model reply")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    args = ap.parse_args()
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="tool-env-yield-") as tmp:
        results["scripted"] = scripted(Path(tmp))
        print(json.dumps(results["scripted"], indent=1), flush=True)
        if args.probe:
            results["probe"] = asyncio.run(probe(args.probe, args.max_tokens))
            print(json.dumps(results["probe"], indent=1), flush=True)
        if args.real:
            results["real"] = real(Path(tmp), args.max_tokens)
            print(json.dumps(results["real"], indent=1), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
