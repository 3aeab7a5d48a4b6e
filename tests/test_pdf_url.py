"""PDF inputs at URLs: a generated book in the moto S3 bucket gives the same dataset, ledger and
funnel as the same book read from a local path (a file, or a directory/prefix with a sidecar
license), on the local executor and on a local Ray; a missing object is a one-line error."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import BUCKET
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.pipelines.definitions import PIPELINES
from rlclimb.pipelines.engine import RunOptions, run_pipeline
from rlclimb.stages.documents import parse_pdf

TESTS = Path(__file__).parent
INTERMEDIATE_ID = re.compile(r"\b(page|unit)-[0-9a-f]{16,}")

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")


@pytest.fixture(scope="module")
def library(s3, tmp_path_factory):
    """(local directory `books` holding book.pdf + its .license and a broken PDF, its URL)."""
    from helpers.textbook_gen import ChapterSpec, make_textbook

    books = tmp_path_factory.mktemp("pdfurl") / "books"
    books.mkdir()
    make_textbook(books / "book.pdf", chapters=[ChapterSpec("Arithmetic", "inline", exercises=5, example=True),
                                                ChapterSpec("Geometry", "key", exercises=4)])
    (books / "book.pdf.license").write_text("cc-by-4.0\n")
    (books / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    url = f"s3://{BUCKET}/pdf-inputs/books"
    for f in books.iterdir():
        s3.put_file(str(f), f"{url.removeprefix('s3://')}/{f.name}")
    return books, url


def outputs(run_dir: Path, location: str) -> tuple[list, list, list]:
    """Dataset, ledger (with where the input lay written as INPUT) and funnel of a run. The ids
    of intermediate records (pages, units) hash the document's location, a path or a URL, so
    provenance naming them is compared with them masked; the records' own ids are compared."""
    data = pq.read_table(run_dir / "data").to_pylist()
    for r in data:
        r["provenance"] = [{**p, "reason": INTERMEDIATE_ID.sub(r"\1-ID", p["reason"] or "")} for p in r["provenance"]]
    ledger = pq.read_table(run_dir / "ledger").select(["stage", "reason", "detail", "file", "line"]).to_pylist()
    for r in ledger:
        r["detail"], r["file"] = (str(r[k] or "").replace(location, "INPUT") for k in ("detail", "file"))
        if r["reason"] == "corrupt_pdf":  # MuPDF words it "Failed to open file X" / "... stream"
            r["detail"] = r["detail"].split(" (")[0]
    stats = json.loads((run_dir / "stats.json").read_text())
    funnel = [(s["name"], s["in"], s["kept"], s["out"], s["dropped"]) for s in stats["stages"]]
    return data, ledger, funnel


def run(inputs: list[str], out: Path, engine: str = "local"):
    parse_pdf.close_cached_pdfs()
    pipe = PIPELINES["textbook-pdf"](inputs, {}, 3)
    return run_pipeline(pipe, out, RunOptions(engine=engine, progress=False)).run_dir


def test_a_prefix_and_an_object_at_s3_read_like_the_local_directory_and_file(library, tmp_path, monkeypatch):
    books, url = library
    local_dir = outputs(run([str(books)], tmp_path / "local-dir"), str(books))
    fetched: list[str] = []
    real = parse_pdf._fetch
    monkeypatch.setattr(parse_pdf, "_fetch", lambda u: fetched.append(u) or real(u))
    remote_dir = outputs(run([url + "/"], tmp_path / "s3-dir"), url)
    assert remote_dir == local_dir
    data, ledger, _ = local_dir
    assert len(data) == 10 and {r["source"]["document"] for r in data} == {"books/book.pdf"}
    assert {r["source"]["license"] for r in data} == {"cc-by-4.0"}  # the sidecar, found next to the object too
    assert ("corrupt_pdf", "INPUT/broken.pdf") in {(r["reason"], r["file"]) for r in ledger}
    # each document fetched once: counted and parsed from the same open copy
    assert sorted(fetched) == [f"{url}/book.pdf", f"{url}/broken.pdf"]

    local_file = outputs(run([str(books / "book.pdf")], tmp_path / "local-file"), str(books))
    remote_file = outputs(run([f"{url}/book.pdf"], tmp_path / "s3-file"), url)
    assert remote_file == local_file
    assert {r["source"]["document"] for r in remote_file[0]} == {"book.pdf"}


def test_an_object_gone_after_listing_is_a_ledgered_page_not_a_crash(library, tmp_path, s3):
    """Deleted between the reader's listing and the parse: its pages are dropped, with the URL."""
    books, url = library
    gone = f"{url}/gone.pdf"
    s3.put_file(str(books / "book.pdf"), gone.removeprefix("s3://"))
    pipe = PIPELINES["textbook-pdf"]([gone], {}, 3)
    list(pipe.reader.shards(50))  # counted
    s3.rm_file(gone.removeprefix("s3://"))
    parse_pdf.close_cached_pdfs()
    result = run_pipeline(pipe, tmp_path / "gone", RunOptions(progress=False))
    ledger = pq.read_table(result.run_dir / "ledger").to_pylist()
    parse_drops = [r for r in ledger if r["stage"] == "parse"]
    assert parse_drops and all(r["reason"] == "pdf_not_found" and gone in r["detail"] and "no such object" in r["detail"]
                               for r in parse_drops)


def test_a_missing_object_is_a_one_line_error_naming_the_url(library, tmp_path):
    _, url = library
    missing = f"{url}/nope.pdf"
    result = CliRunner().invoke(app, ["run", "textbook-pdf", "--input", missing, "--out", str(tmp_path / "run"), "--quiet"])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [f"error: input not found: {missing}"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_on_ray_the_workers_fetch_the_pdfs_from_the_store(library, tmp_path, monkeypatch):
    import ray

    books, url = library
    local = outputs(run([str(books)], tmp_path / "local"), str(books))

    def not_on_the_driver(u):
        raise AssertionError(f"the driver fetched {u}")

    monkeypatch.setattr(parse_pdf, "_fetch", not_on_the_driver)  # (Ray's workers are other processes)
    sys.path.insert(0, str(TESTS))
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=True, configure_logging=False)
    try:
        on_ray = outputs(run([url], tmp_path / "ray", engine="ray"), url)
    finally:
        ray.shutdown()
    assert on_ray == local
