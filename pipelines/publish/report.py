"""`rlclimb report RUN_OR_MIX`: one self-contained HTML page (report.html) a person can look at.

No server and nothing fetched: figures are inline PNGs (base64), styles and the small script are
inline, data for the drop-reason browser is an inline JSON block. Sections: the funnel, drop
reasons (click one: its records with source file, page and line), difficulty and topic
distributions, dedup clusters (kept representative beside what it removed), decontamination
matches side by side, LLM cost per stage and tier; for a training run (metrics.jsonl): reward,
pass-rate, entropy and clip-rate curves.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

from .card import clip, difficulties, figures, slug, topics
from .describe import DescribeError, Description, describe

EXAMPLES_PER_REASON = 20
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2733;background:#f5f7fa}
header{background:#24364d;color:#fff;padding:18px 28px}header h1{margin:0 0 4px;font-size:22px}
header .sub{opacity:.85}main{padding:8px 28px 40px;max-width:1200px}
section{background:#fff;border:1px solid #dde3ea;border-radius:8px;padding:14px 18px;margin:16px 0}
h2{font-size:17px;margin:0 0 10px}table{border-collapse:collapse;margin:6px 0 10px}
td,th{border-bottom:1px solid #e6eaef;padding:4px 10px;text-align:right;vertical-align:top}
td:first-child,th:first-child,td.t,th.t{text-align:left}th{background:#f0f3f7}
.num{font-variant-numeric:tabular-nums}.cards{display:flex;gap:12px;flex-wrap:wrap}
.card{background:#eef3f9;border-radius:6px;padding:8px 14px}.card b{display:block;font-size:20px}
button.reason{border:1px solid #b9c6d6;background:#f7f9fc;border-radius:14px;padding:3px 10px;margin:3px;cursor:pointer}
button.reason.on{background:#24364d;color:#fff}.pair{display:grid;grid-template-columns:1fr 1fr;gap:10px;margin:8px 0}
.pair div{background:#f7f9fc;border:1px solid #e1e6ec;border-radius:6px;padding:8px}.kept{border-left:4px solid #3b8a4a!important}
.removed{border-left:4px solid #b5473a!important}.muted{color:#6a7786}img{max-width:min(100%,760px);display:block;margin:6px 0}
#records .rec{border-top:1px solid #e6eaef;padding:6px 0}code{background:#f0f3f7;padding:0 3px;border-radius:3px}
"""
SCRIPT = """
const drops = JSON.parse(document.getElementById('drop-data').textContent);
function esc(s){return String(s ?? '').replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));}
function show(key){
  document.querySelectorAll('button.reason').forEach(b => b.classList.toggle('on', b.dataset.key === key));
  const d = drops[key], box = document.getElementById('records');
  let h = `<h3>${esc(d.stage)} · ${esc(d.reason)}: ${d.count.toLocaleString()} records` +
          (d.examples.length < d.count ? ` (first ${d.examples.length} shown)` : '') + '</h3>';
  for (const r of d.examples) {
    const where = [r.file && `file <code>${esc(r.file)}</code>`, r.page != null && `page ${r.page}`,
                   r.line != null && `line ${r.line}`].filter(Boolean).join(', ');
    h += `<div class="rec"><div class="muted">${esc(r.record_id)} · ${where || 'no source position'}</div>` +
         `<div>${esc(r.text)}</div><div class="muted">${esc(r.detail)}</div></div>`;
  }
  box.innerHTML = h;
}
document.querySelectorAll('button.reason').forEach(b => b.addEventListener('click', () => show(b.dataset.key)));
"""


def e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def png_tag(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{e(alt)}" src="data:image/png;base64,{data}">'


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) or bool(re.fullmatch(r"-?[\d,]+(\.\d+)?", str(v)))


def table(header: list[str], rows: list[list[Any]]) -> str:
    """Numbers right-aligned (thousands separated), text left; headers follow the first row."""
    first = rows[0] if rows else []
    head = "".join(f'<th class="{"" if i < len(first) and is_number(first[i]) else "t"}">{e(h)}</th>'
                   for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(
        f'<td class="{"num" if is_number(v) else "t"}">{e(f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else v)}</td>'
        for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def section(title: str, body: str, sid: str) -> str:
    return f'<section id="{sid}"><h2>{e(title)}</h2>{body}</section>'


# ---- drops ---------------------------------------------------------------------------------------


def drop_examples(d: Description) -> dict[str, dict[str, Any]]:
    """(stage, reason) -> count and the first records with their source position."""
    files = d.ledgers()
    if not files:
        return {}
    ledger = pl.read_parquet(files, columns=["stage", "reason", "detail", "record_id", "file", "line", "record"])
    out: dict[str, dict[str, Any]] = {}
    for (stage, reason), group in ledger.group_by(["stage", "reason"], maintain_order=True):
        examples = []
        for row in group.head(EXAMPLES_PER_REASON).iter_rows(named=True):
            try:
                record = json.loads(row["record"] or "{}")
            except ValueError:
                record = {"raw": row["record"]}
            source = record.get("source") if isinstance(record, dict) else None
            text = next((record.get(k) for k in ("question", "statement", "answer", "raw") if isinstance(record, dict) and record.get(k)), None)
            if text is None and isinstance(record, dict) and record.get("lines"):
                text = " ".join(ln.get("text", "") for ln in record["lines"][:6])
            examples.append({"record_id": row["record_id"], "file": Path(row["file"]).name if row["file"] else None,
                             "page": (source or {}).get("page") if isinstance(source, dict) else None,
                             "line": row["line"] if row["line"] is not None else ((source or {}).get("line") if isinstance(source, dict) else None),
                             "detail": row["detail"], "text": clip(text or "", 400)})
        out[f"{stage}/{reason}"] = {"stage": stage, "reason": reason, "count": group.height, "examples": examples}
    return out


# ---- training curves -----------------------------------------------------------------------------


CURVES = {"reward": ("reward_all", "reward"), "pass rate": ("pass_rate_all", "eval/pass@1"),
          "entropy": ("entropy",), "clip rate": ("clip/low", "clip/high", "clip/outer")}


def training_figure(metrics: Path) -> tuple[str, list[dict[str, Any]]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    fig, axes = plt.subplots(2, 2, figsize=(10, 6))
    for ax, (title, keys) in zip(axes.ravel(), CURVES.items(), strict=True):
        for key in keys:
            points = [(r["step"], r[key]) for r in rows if isinstance(r.get(key), int | float) and "step" in r]
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", label=key)
        ax.set_title(title)
        ax.set_xlabel("step")
        if ax.lines:
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes, color="gray")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return f'<img alt="training curves" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">', rows


def training_report(path: Path) -> str:
    img, rows = training_figure(path / "metrics.jsonl")
    config = json.loads((path / "config.json").read_text()) if (path / "config.json").exists() else {}
    keys = [k for k in ("step", "reward_all", "pass_rate_all", "entropy", "clip/low", "clip/high", "clip/outer", "k",
                        "truncation", "eval/pass@1")
            if any(k in r for r in rows)]
    steps = table(keys, [[r.get(k, "") if not isinstance(r.get(k), float) else f"{r[k]:.4f}" for k in keys] for r in rows if "step" in r])
    meta = config.get("meta") or config  # {model, mix} as rlclimb train records them
    cards = (f'<div class="cards"><div class="card"><b>{len(rows)}</b>steps logged</div>'
             f'<div class="card"><b>{e(meta.get("model", "?"))}</b>model</div>'
             f'<div class="card"><b>{e(Path(str(meta.get("mix", "?"))).name)}</b>mix</div></div>')
    body = section("Training", cards, "summary") + section("Curves: reward, pass rate, entropy, clip rate", img, "curves")
    body += section("Metrics per step (metrics.jsonl)", steps, "metrics")
    return page(f"training run {path.name}", "GRPO (rlclimb train)", body, {})


# ---- a run or mix --------------------------------------------------------------------------------


def funnel_html(owner: Description) -> str:
    stages = owner.funnel()
    rows = [[s["name"], s["in"], s.get("out", s["kept"]), sum((s.get("dropped") or {}).values()),
             int(s.get("created") or 0), int(s.get("merged") or 0),
             ", ".join(f"{r} {n:,}" for r, n in sorted((s.get("dropped") or {}).items(), key=lambda x: -x[1])) or "-"]
            for s in stages]
    return f"<h3>{e(owner.name)} <span class='muted'>({e(owner.pipeline)})</span></h3>" + table(
        ["stage", "in", "out", "dropped", "created", "merged", "dropped by reason"], rows)


def dedup_html(d: Description) -> str:
    parts = []
    for where, r in d.reports.items():
        for m in r.get("matches") or []:
            parts.append(f'<div class="pair"><div class="removed"><b>dataset</b> {e(m.get("input_id"))}<br>{e(m.get("input_text"))}</div>'
                         f'<div><b>{e(m.get("benchmark"))}</b> {e(m.get("benchmark_id"))} · {e(m.get("matcher"))} {e(m.get("score"))}'
                         f'<br>{e(m.get("benchmark_text"))}</div></div>')
        for ex in r.get("examples") or []:
            members = [m for m in ex.get("members") or [] if isinstance(m, dict)]
            kept = next((m for m in members if m.get("kept")), None)
            for m in members:
                if kept is not None and m is not kept:
                    parts.append(f'<div class="muted">{e(where)} · cluster of {ex.get("size")}</div><div class="pair">'
                                 f'<div class="kept"><b>kept</b> {e(kept.get("id"))}<br>{e(kept.get("text"))}</div>'
                                 f'<div class="removed"><b>removed</b> {e(m.get("id"))} (score {e(m.get("score_to_kept"))})'
                                 f'<br>{e(m.get("text"))}</div></div>')
    summary = table(["report", "records", "clusters", "removed / flagged"],
                    [[w, r.get("records", 0), r.get("clusters", "-"), r.get("dropped", r.get("flagged", 0))]
                     for w, r in d.reports.items() if "records" in r])
    if not any(r.get("matches") is not None for r in d.reports.values()):
        summary += "<p class='muted'>No decontamination against benchmarks in this run.</p>"
    return summary + ("".join(parts) or "<p class='muted'>No duplicate clusters.</p>")


def dataset_report(d: Description) -> str:
    drops = drop_examples(d)
    with tempfile.TemporaryDirectory() as tmp:
        figs = {k: png_tag(p, k) for k, p in figures(d, Path(tmp)).items()}
    cards = [(f"{d.records:,}", "records"), *((f"{n:,}", f"{s} split") for s, n in d.splits.items() if d.kind == "mix"),
             (f"{sum(x['count'] for x in drops.values()):,}", "drops"), (d.pipeline, "pipeline")]
    if d.kind == "run":
        cards.append((f"{d.stats.get('elapsed_s', '?')} s", "run time"))
    body = section("Summary", '<div class="cards">' + "".join(f'<div class="card"><b>{e(v)}</b>{e(k)}</div>' for v, k in cards) + "</div>", "summary")
    funnel = ""
    if d.kind == "mix":
        funnel += table(["source", "weight", "share", "read", "duplicates removed", "available", "rows", "repeated"],
                        [[s["name"], s["weight"], f"{s['share']:.3f}", s["selection"].get("read", 0), s["removed_as_duplicates"],
                          s["available"], s["rows"], s["repeated"]] for s in d.config["sources"]])
    for owner in [d, *d.sources]:
        if owner.funnel():
            name = "funnel" if owner is d else f"funnel-{slug(owner.name)}"
            funnel += funnel_html(owner) + figs.get(name, "")
    body += section("Funnel", funnel, "funnel")
    buttons = "".join(f'<button class="reason" data-key="{e(k)}">{e(v["stage"])} · {e(v["reason"])} '
                      f'<b>{v["count"]:,}</b></button>' for k, v in sorted(drops.items(), key=lambda kv: -kv[1]["count"]))
    body += section("Drop reasons (click one to see its records)",
                    (buttons or "<p class='muted'>Nothing was dropped.</p>") + '<div id="records"></div>', "drops")
    dif, top = difficulties(d), topics(d)
    body += section("Difficulty", (table(["difficulty", "items"], dif.rows()) if dif.height else "") + figs.get("difficulty", ""), "difficulty")
    body += section("Topics", (table(["topic", "items"], top.rows()) if top.height else "") + figs.get("topics", ""), "topics")
    body += section("Dedup clusters and decontamination", dedup_html(d), "dedup")
    usage = d.llm_usage()
    body += section("LLM cost per stage and tier", table(
        ["run", "stage", "tier / tag", "requests", "prompt tokens", "completion tokens", "cost $"],
        [[u["run"], u["stage"], u["tier"], u["requests"], u["prompt_tokens"], u["completion_tokens"], f"{u['cost']:.4f}"] for u in usage])
        if usage else "<p class='muted'>No LLM calls: every stage ran on embedded rules.</p>", "cost")
    return page(d.name, f"{d.kind} · {d.pipeline} · {d.path}", body, drops)


def page(title: str, subtitle: str, body: str, drops: dict[str, Any]) -> str:
    data = json.dumps(drops, ensure_ascii=False).replace("</", "<\\/")
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{e(title)} · rlclimb report</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head><body>'
            f'<header><h1>{e(title)}</h1><div class="sub">{e(subtitle)}</div></header><main>{body}</main>'
            f'<script type="application/json" id="drop-data">{data}</script><script>{SCRIPT}</script></body></html>')


def write_report(target: Path, out: Path | None = None) -> Path:
    """`report.html` in the run, mix or training directory (or at `out`)."""
    target = Path(target)
    if (target / "metrics.jsonl").exists():
        text = training_report(target)
    else:
        try:
            text = dataset_report(describe(target))
        except DescribeError as err:
            raise DescribeError(f"{err} (or a training run from `rlclimb train`, with metrics.jsonl)") from None
    out = out or target / "report.html"
    out.write_text(text)
    return out
