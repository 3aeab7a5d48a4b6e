"""SWE runtime timings: episode start latency and grading time per instance.

    python benchmarks/swe_episode.py [--input RUN/swebench.jsonl] [--repeats 10]

Without --input it builds the test fixture instance (tests/helpers/swe_fixture_image.py: a tiny
pure-Python repo in an image FROM rlclimb/base:bookworm). Per instance it measures
  start      container from the instance image -> first tool output (`bash: git status`),
  first_edit a str_replace_editor view on top of that,
  grade_gold grade_patch with the gold patch (fresh container, reset, apply, tests, JUnit),
  grade_empty the same with the empty patch,
and prints medians and maxima over --repeats.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _instances(path: str | None) -> list[dict]:
    if path:
        return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from helpers.swe_fixture_image import build_instance

    t0 = time.monotonic()
    fx = build_instance(Path(tempfile.mkdtemp(prefix="swe-bench-")))
    print(f"fixture image {fx.image} ready in {time.monotonic() - t0:.2f} s")
    return [fx.instance]


def measure(instance: dict, repeats: int) -> dict[str, list[float]]:
    from rlclimb.environments.episode import BashTool
    from rlclimb.environments.sandbox.docker_backend import wait_removed
    from rlclimb.environments.swe import grading
    from rlclimb.environments.swe.editor import StrReplaceEditor
    from rlclimb.environments.swe.env import EPISODE_LIMITS, grade_patch

    times: dict[str, list[float]] = {
        "start": [],
        "first_edit": [],
        "grade_gold": [],
        "grade_empty": [],
    }
    for _ in range(repeats):
        t0 = time.monotonic()
        session = grading.open_container(instance["image"], EPISODE_LIMITS)
        out = BashTool(session)(command="git status --short | wc -l")
        times["start"].append(time.monotonic() - t0)
        assert out.strip() == "0", out
        StrReplaceEditor(session)(command="view", path="/testbed")
        times["first_edit"].append(time.monotonic() - t0)
        session.close()
        for label, patch, want in (
            ("grade_gold", instance["patch"], True),
            ("grade_empty", "", False),
        ):
            t1 = time.monotonic()
            g = grade_patch(instance, patch)
            times[label].append(time.monotonic() - t1)
            assert g.resolved == want, g.detail()
    wait_removed()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--input", help="swebench.jsonl (default: the test fixture instance)")
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    for inst in _instances(args.input):
        times = measure(inst, args.repeats)
        print(f"{inst['instance_id']} ({inst['image']}), {args.repeats} repeats:")
        for name, xs in times.items():
            print(f"  {name:12} median {statistics.median(xs):.3f} s  max {max(xs):.3f} s")


if __name__ == "__main__":
    main()
