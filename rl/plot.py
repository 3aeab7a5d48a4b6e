"""reward.png from a run's metrics.jsonl: the reward curve (all sampled responses and the groups
trained on), task pass rate, held-out pass@1, and response length."""

from __future__ import annotations

import json
from pathlib import Path


def smooth(values: list[float], window: int) -> list[float]:
    out = []
    for i in range(len(values)):
        part = values[max(0, i - window + 1) : i + 1]
        out.append(sum(part) / len(part))
    return out


def plot_rewards(metrics: str | Path, out: str | Path | None = None, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = Path(metrics)
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    steps = [r for r in rows if "reward" in r]
    evals = [r for r in rows if "eval/pass@1" in r]
    out = Path(out) if out else metrics.with_name("reward.png")
    x = [r["step"] for r in steps]
    window = max(1, len(steps) // 10)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True, height_ratios=[2, 1])
    all_rewards = [r["reward_all"] for r in steps]
    top.plot(x, all_rewards, color="tab:blue", alpha=0.3, lw=1)
    top.plot(x, smooth(all_rewards, window), color="tab:blue", label="reward, all samples")
    top.plot(
        x,
        smooth([r["pass_rate_all"] for r in steps], window),
        color="tab:green",
        label="task pass rate, all samples",
    )
    if evals:
        top.plot(
            [r["step"] for r in evals],
            [r["eval/pass@1"] for r in evals],
            "o-",
            color="tab:red",
            label="held-out pass@1 (greedy)",
        )
    top.set_ylabel("reward / rate")
    top.legend(loc="best", fontsize=8)
    top.grid(alpha=0.3)
    top.set_title(title or metrics.parent.name)
    bottom.plot(x, [r["len/mean"] for r in steps], color="tab:purple", label="mean response tokens")
    bottom.set_ylabel("tokens")
    bottom.set_xlabel(f"step (smoothing window {window})")
    bottom.grid(alpha=0.3)
    bottom.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
