"""The github-prs funnel on real public Python repositories' histories.

    python benchmarks/swe_funnel.py [--prs 15] [--repos attrs,toolz,more-itertools] [--out DIR]

Each repository comes from a local mirror (the bare git dirs `fetch` leaves under
/work/.mirror/owner+name/repo, or --mirror-root), is cloned to a temporary directory as
`owner__name` and mined with `rlclimb run github-prs --from-git-history` (its newest --prs merged
PRs: merge commits and squash merges). Prints the funnel per repository (per stage: in, out,
drop reasons) and image build times: instances whose repository environment layer was built
("cold") vs reused ("shared layers"), from the build logs. Writes DIR/summary.json.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOS = {
    "attrs": "python-attrs/attrs",
    "toolz": "pytoolz/toolz",
    "more-itertools": "more-itertools/more-itertools",
}


def clone(mirror_root: Path, repo: str, dest_root: Path) -> Path:
    src = mirror_root / repo.replace("/", "+") / "repo"
    if not src.exists():
        raise SystemExit(f"no mirror of {repo} at {src} (fetch github:{repo} first)")
    dest = dest_root / repo.replace("/", "__")
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(src), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "remote", "remove", "origin"], check=True)
    return dest


def build_times(log_dir: Path) -> list[dict]:
    """Per instance: seconds spent in docker builds and whether its env layer was built."""
    out = []
    for log in sorted(log_dir.glob("*.log")):
        text = log.read_text(errors="replace")
        blocks = re.findall(r"(?m)^# (rlclimb/swe[\w.:/-]*)\n.*?^# ([\d.]+) s$", text, re.S)
        secs = {"base": 0.0, "env": 0.0, "instance": 0.0}
        for tag, s in blocks:
            kind = "base" if "swe-base" in tag else "env" if "swe-env" in tag else "instance"
            secs[kind] += float(s)
        out.append({"id": log.stem, **secs, "env_built": secs["env"] > 0, "ok": "leak probe clean" in text})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prs", type=int, default=15, help="newest merged PRs per repository")
    ap.add_argument("--repos", default=",".join(REPOS))
    ap.add_argument("--mirror-root", default="/work/.mirror")
    ap.add_argument("--out", default=None, help="where the runs go (default: a temporary directory)")
    ap.add_argument("--trials", type=int, default=3)
    args = ap.parse_args()
    out_root = Path(args.out or tempfile.mkdtemp(prefix="swe-funnel-"))
    out_root.mkdir(parents=True, exist_ok=True)
    summary = {}
    with tempfile.TemporaryDirectory(prefix="swe-clones-") as tmp:
        for short in args.repos.split(","):
            repo = REPOS.get(short, short)
            clone_dir = clone(Path(args.mirror_root), repo, Path(tmp))
            run = out_root / short
            t0 = time.monotonic()
            res = subprocess.run(
                [sys.executable, "-m", "rlclimb.pipelines.cli", "run", "github-prs", "--from-git-history",
                 str(clone_dir), "--out", str(run), "-q", "--set", f"swe_import.history_limit={args.prs}",
                 "--set", f"swe_verify.trials={args.trials}", "--set", "swe_build.clone=false"],
                capture_output=True, text=True,
            )
            wall = time.monotonic() - t0
            if res.returncode != 0:
                print(f"{repo}: run failed: {res.stderr[-800:]}", file=sys.stderr)
            stats = json.loads((run / "stats.json").read_text()) if (run / "stats.json").is_file() else {"stages": []}
            builds = build_times(run / "builds" / "logs")
            cold = [b["env"] + b["instance"] for b in builds if b["env_built"] and b["ok"]]
            warm = [b["instance"] for b in builds if not b["env_built"] and b["ok"]]
            summary[repo] = {
                "wall_s": round(wall, 1),
                "funnel": [{"stage": s["name"], "in": s["in"], "out": s["out"], "dropped": s["dropped"],
                            "time_s": s["time_s"]} for s in stats["stages"]],
                "kept": stats.get("records"),
                "builds": builds,
                "cold_build_s_median": round(statistics.median(cold), 1) if cold else None,
                "shared_build_s_median": round(statistics.median(warm), 1) if warm else None,
                "cold_builds": len(cold),
                "shared_builds": len(warm),
            }
            print(f"\n== {repo}: {stats.get('records')} instances kept of {args.prs} PRs mined, {wall:.0f} s")
            for s in summary[repo]["funnel"]:
                drops = ", ".join(f"{k} {v}" for k, v in s["dropped"].items())
                print(f"  {s['stage']:<12} in {s['in']:>3}  out {s['out']:>3}  {drops}")
            print(f"  image build: cold (env layer built) median {summary[repo]['cold_build_s_median']} s "
                  f"over {len(cold)}; shared layers median {summary[repo]['shared_build_s_median']} s over {len(warm)}")
    (out_root / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"\nsummary: {out_root / 'summary.json'}")


if __name__ == "__main__":
    main()
