"""The LLM options of textbook-pdf, against a real OpenAI-compatible HTTP server (scripted):
OCR by a vision-language model, LLM span marking in extraction, LLM pick and verify in pairing."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import yaml
from helpers.textbook_gen import make_image_only_pdf, make_text_pdf
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.pipelines.definitions.textbook_pdf import build
from rlclimb.pipelines.engine import RunOptions, run_pipeline
from rlclimb.pipelines.llm import LLMConfig
from rlclimb.pipelines.scripted_server import Reply
from rlclimb.schemas.io import read_rows

runner = CliRunner()


def llm_config(server) -> dict:
    return {"profiles": {"local": {"base_url": server.base_url, "model": "scripted", "api_key": "k",
                                   "timeout_s": 20, "backoff_s": 0.01}},
            "roles": {"ocr": "local", "extractor": "local", "judge": "local"}}


def rows_of(run: Path) -> list[dict]:
    return [r for f in sorted((run / "data").glob("*.parquet")) for r in read_rows(f)]


def user_text(body: dict) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


def test_vlm_ocr_transcribes_scanned_pages_through_the_cli(tmp_path, llm_server):
    pdf = make_image_only_pdf(tmp_path / "scan.pdf", ["Exercises", "1. Compute 12 + 30."])
    seen = []

    def vision(body, n):
        parts = body["messages"][0]["content"]
        image = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
        seen.append(image)
        return Reply("```markdown\n## Exercises\n**1.** Compute 12 + 30 for the table.\nAnswer: 42\n```")

    llm_server.script(vision)
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"llm": llm_config(llm_server), "stages": {"parse": {"ocr": "vlm"}}}))
    result = runner.invoke(app, ["run", "textbook-pdf", "--input", str(pdf), "--out", str(tmp_path / "run"),
                                 "--config", str(config), "--quiet"])
    assert result.exit_code == 0, result.output
    [row] = rows_of(tmp_path / "run")
    assert (row["question"], row["answer"]) == ("Compute 12 + 30 for the table.", "42")
    assert json.loads(row["meta"])["parse_backends"] == ["vlm"]
    assert len(seen) == 1 and seen[0].startswith("data:image/png;base64,")
    assert base64.b64decode(seen[0].split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    ocr = next(s for s in stats["stages"] if s["name"] == "ocr_vlm")
    assert ocr["llm"]["requests"] == 1 and ocr["llm"]["completion_tokens"] > 0
    # a resumed run pays for nothing again
    result = runner.invoke(app, ["run", "textbook-pdf", "--input", str(pdf), "--out", str(tmp_path / "run"),
                                 "--config", str(config), "--quiet"])
    assert result.exit_code == 0 and len(seen) == 1


def test_llm_options_without_an_endpoint_fail_before_any_work(tmp_path):
    pdf = make_image_only_pdf(tmp_path / "scan.pdf", ["Exercises", "1. Compute 12 + 30."])
    for option in ("parse.ocr=vlm", "extract.method=llm", "pair.llm_role=judge"):
        result = runner.invoke(app, ["run", "textbook-pdf", "--input", str(pdf), "--out", str(tmp_path / option),
                                     "--set", option, "--quiet"])
        assert result.exit_code == 2, result.output
        assert f"{option.split('=')[0]}" in result.output and "needs an LLM endpoint" in result.output
        assert not (tmp_path / option / "data").exists()


BOOK = [
    ["Exercises 1.1", "1. Compute 2 + 3 and write the sum in words.", "2. Compute 4 + 5 and write the sum in words.",
     "Exercises 1.2", "1. Name the capital city of France.", "2. Name the capital city of Italy."],
    ["Answers", "1. Paris", "2. Rome"],
]


def test_llm_marks_spans_and_its_inventions_are_discarded(tmp_path, llm_server):
    pdf = make_text_pdf(tmp_path / "book.pdf", [BOOK[0][:3]])

    def marker(body, n):
        block = user_text(body).split("BLOCK:\n", 1)[1]
        items = [{"number": None, "question": block.strip(), "answer": None}]
        items.append({"number": "9", "question": "What is the meaning of life?", "answer": "42"})  # not in the text
        return Reply(json.dumps({"items": items}))

    llm_server.script(marker)
    opts = RunOptions(progress=False, llm=LLMConfig.from_dict(llm_config(llm_server)))
    run_pipeline(build([str(pdf)], {"extract": {"method": "llm"}}), tmp_path / "run", opts)
    rows = rows_of(tmp_path / "run")
    assert [r["question"] for r in rows] == ["Compute 2 + 3 and write the sum in words.",
                                            "Compute 4 + 5 and write the sum in words."]
    assert all(json.loads(r["meta"])["extract_method"] == "llm" for r in rows)
    events = [e for r in rows for e in r["provenance"] if e["stage"] == "extract" and e["model"]]
    assert events and all(e["reason"] == "1 invented span(s) discarded" for e in events)


def test_llm_picks_among_ambiguous_candidates_and_verifies_pairs(tmp_path, llm_server):
    """A key with bare numbers fits two exercise lists equally well: numbering cannot decide."""
    pdf = make_text_pdf(tmp_path / "book.pdf", BOOK)
    calls = {"pick": 0, "verify": 0}

    def judge(body, n):
        text = user_text(body)
        if text.startswith("A textbook's answer key"):
            calls["pick"] += 1
            answer = re.search(r"ANSWER: (.*)", text).group(1)
            listing = dict(re.findall(r"\[(\d+)\] (.*)", text))
            country = {"Paris": "France", "Rome": "Italy"}[answer]
            choice = next(int(k) for k, q in listing.items() if country in q)
            return Reply(json.dumps({"choice": choice, "confidence": 0.9}))
        calls["verify"] += 1
        return Reply(json.dumps({"matches": "Paris" in text, "reason": "the capital of Italy is Rome"}))

    llm_server.script(judge)
    opts = RunOptions(progress=False, llm=LLMConfig.from_dict(llm_config(llm_server)))
    sections = {"pair": {"embeddings": False, "llm_role": "judge"}}
    run_pipeline(build([str(pdf)], sections), tmp_path / "run", opts)
    answered = {r["question"]: (r["answer"], json.loads(r["meta"])["pair_method"]) for r in rows_of(tmp_path / "run")}
    assert answered["Name the capital city of France."] == ("Paris", "llm")
    assert answered["Name the capital city of Italy."] == ("Rome", "llm")
    assert answered["Compute 2 + 3 and write the sum in words."] == ("", "none")
    assert calls == {"pick": 2, "verify": 0}

    sections["pair"]["llm_verify"] = True  # now the judge also checks each pair (and rejects Rome)
    run_pipeline(build([str(pdf)], sections), tmp_path / "run2", opts)
    answered = {r["question"]: r["answer"] for r in rows_of(tmp_path / "run2")}
    assert answered["Name the capital city of France."] == "Paris"
    assert answered["Name the capital city of Italy."] == ""
    drops = pq.read_table(tmp_path / "run2" / "ledger").to_pylist()
    assert [(d["reason"], json.loads(d["record"])["text"]) for d in drops] == [("llm_rejected_pair", "Rome")]
    assert calls == {"pick": 4, "verify": 2}  # a new run directory: a new request cache


def test_fallback_sends_only_zone_pages_without_items_to_the_llm(tmp_path, llm_server):
    """Issue 15: an exercise page in a layout the rules do not read ("Q-A", "Q-B" labels) is
    ledgered as such on embedded defaults; with extract.method=fallback it alone goes to the
    model, whose spans must be verbatim; the pages the rules read cost no call; a resumed run
    repeats no call."""
    pages = [["Exercises 1.1", "1. Compute 2 + 3 and write the sum in words.", "2. Compute 4 + 5 and write the sum in words."],
             ["Review Exercises", "Q-A Compute 12 + 30 for the pump in the tank.",
              "Q-B Compute 7 + 6 for the cyclist on the road."]]
    pdf = make_text_pdf(tmp_path / "book.pdf", pages)
    run_pipeline(build([str(pdf)], {}), tmp_path / "plain", RunOptions(progress=False))
    assert len(rows_of(tmp_path / "plain")) == 2
    ledger = [r for f in sorted((tmp_path / "plain" / "ledger").glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    assert [r["reason"] for r in ledger if r["stage"] == "structure"] == ["zone_page_without_items"]
    blocks = []

    def marker(body, n):
        block = user_text(body).split("BLOCK:\n", 1)[1]
        blocks.append(block)
        items = [{"number": m.group(1), "question": m.group(2), "answer": None}
                 for m in re.finditer(r"Q-([AB]) (.+?\.)(?= Q-|\s*$)", block, re.S)]
        items.append({"number": "C", "question": "Compute 1 + 1 for the robot.", "answer": "2"})  # invented
        return Reply(json.dumps({"items": items}))

    llm_server.script(marker)
    opts = RunOptions(progress=False, llm=LLMConfig.from_dict(llm_config(llm_server)))
    run_pipeline(build([str(pdf)], {"extract": {"method": "fallback"}}), tmp_path / "run", opts)
    rows = rows_of(tmp_path / "run")
    assert len(blocks) == 1 and "Q-A" in blocks[0] and "Exercises 1.1" not in blocks[0]
    by_method = {json.loads(r["meta"])["extract_method"]: [] for r in rows}
    for r in rows:
        by_method[json.loads(r["meta"])["extract_method"]].append(r["question"])
    assert by_method["structure"] == ["Compute 2 + 3 and write the sum in words.", "Compute 4 + 5 and write the sum in words."]
    assert sorted(by_method["llm"]) == ["Compute 12 + 30 for the pump in the tank.", "Compute 7 + 6 for the cyclist on the road."]
    run_pipeline(build([str(pdf)], {"extract": {"method": "fallback"}}), tmp_path / "run", opts)
    assert len(blocks) == 1  # resumed: no call repeated
