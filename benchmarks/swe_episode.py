"""SWE runtime timings: episode start latency and grading time per instance.

    python benchmarks/swe_episode.py [--input RUN/swebench.jsonl] [--repeats 10]
    python benchmarks/swe_episode.py --git-repo CLONE [--count 3] [--trials 3] [--repeats 3]

With --git-repo, instances come from the clone's latest merge commits that change code and tests
(each verified first: `verify` over --trials, timed). Without either it builds the test fixture instance (tests/helpers/swe_fixture_image.py: a tiny
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


def _from_git(repo: str, count: int) -> list[dict]:
    """Instances from a local clone's latest merge commits that change code and tests (< 15
    files): each base (first parent) exported into a one-commit repo and built into an image
    like the fixture's (pytest copied from the host; the repo root on sys.path via pytest's
    rootdir, so pure-Python projects need no install)."""
    import subprocess

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from helpers.swe_fixture_image import _git, build_image

    from rlclimb.environments.swe.lang import PYTHON

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", repo, *args], check=True, capture_output=True, text=True
        ).stdout

    out = []
    name = Path(repo).resolve().parent.name.replace("+", "/")
    for merge in git("log", "--merges", "--first-parent", "--format=%H").split():
        if len(out) >= count:
            break
        files = git("diff", "--name-only", f"{merge}^1", merge).split()
        tests = [f for f in files if PYTHON.is_test_path(f)]
        code = [f for f in files if f.endswith(".py") and f not in tests]
        if not tests or not code or len(files) >= 15:
            continue
        patch = git("diff", f"{merge}^1", merge, "--", *[f for f in files if f not in tests])
        test_patch = git("diff", f"{merge}^1", merge, "--", *tests)
        work = Path(tempfile.mkdtemp(prefix="swe-bench-git-")) / "testbed"
        work.mkdir()
        subprocess.run(
            f"git -C {repo} archive {merge}^1 | tar -x -C {work}", shell=True, check=True
        )
        _git(work, "init", "-q", "-b", "main")
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", "base")
        t0 = time.monotonic()
        image = build_image(work, "rlclimb-bench/swe-" + name.split("/")[-1])
        print(f"{name} {merge[:10]}: image {image} in {time.monotonic() - t0:.1f} s")
        out.append(
            {
                "instance_id": f"{name.replace('/', '__')}-{merge[:10]}",
                "repo": name,
                "base_commit": _git(work, "rev-parse", "HEAD").strip(),
                "patch": patch,
                "test_patch": test_patch,
                "image": image,
                "problem_statement": git("log", "-1", "--format=%B", merge),
            }
        )
    return out


def signal(instance: dict, trials: int) -> bool:
    """reference_signal + verify timings; fills FAIL_TO_PASS / PASS_TO_PASS. False: no F2P."""
    from rlclimb.environments.swe import grading

    t0 = time.monotonic()
    v = grading.verify(instance["image"], instance, trials=trials)
    print(
        f"  verify x{trials} ({2 * trials} runs): {time.monotonic() - t0:.1f} s -> ok={v.ok}: "
        f"{v.reason}"
    )
    instance["FAIL_TO_PASS"], instance["PASS_TO_PASS"] = v.fail_to_pass, v.pass_to_pass
    return v.ok


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
    ap.add_argument("--git-repo", help="a local clone: instances from its latest merge commits")
    ap.add_argument("--count", type=int, default=3, help="with --git-repo: merges to try")
    ap.add_argument("--trials", type=int, default=3, help="with --git-repo: verify trials")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument(
        "--write", help="with --git-repo: write the verified instances (swebench.jsonl)"
    )
    args = ap.parse_args()
    if args.git_repo:
        instances = [i for i in _from_git(args.git_repo, args.count) if signal(i, args.trials)]
        if args.write:
            from rlclimb.environments.swe.grading import eval_script

            with open(args.write, "w") as f:
                for inst in instances:
                    f.write(json.dumps({**inst, "eval_script": eval_script(inst)}) + "\n")
    else:
        instances = _instances(args.input)
    for inst in instances:
        times = measure(inst, args.repeats)
        print(f"{inst['instance_id']} ({inst['image']}), {args.repeats} repeats:")
        for name, xs in times.items():
            print(f"  {name:12} median {statistics.median(xs):.3f} s  max {max(xs):.3f} s")


if __name__ == "__main__":
    main()
