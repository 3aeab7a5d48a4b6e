"""`rlclimb report`: one self-contained HTML page, checked in a real headless Chromium (Debian's
`chromium`, driven by Playwright; no browser download): it loads with no console errors and no
requests, shows the numbers of stats.json, and a click on a drop reason shows its records."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app

runner = CliRunner()
SAMPLE = Path(__file__).resolve().parents[1] / "pipelines" / "samples" / "qa_sample.jsonl"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def qa_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("report") / "qa"
    res = cli("run", "qa-jsonl", "--input", SAMPLE, "--out", run, "-q")
    assert res.exit_code == 0, res.output
    return run


def test_report_is_self_contained(qa_run):
    res = cli("report", qa_run)
    assert res.exit_code == 0, res.output
    text = (qa_run / "report.html").read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # nothing fetched
    assert "<img" in text and "data:image/png;base64," in text
    stats = json.loads((qa_run / "stats.json").read_text())
    for s in stats["stages"]:
        for reason, n in s["dropped"].items():
            assert f"{reason} <b>{n:,}</b>" in text


def test_report_refuses_a_directory_that_is_not_a_run(tmp_path):
    res = cli("report", tmp_path)
    assert res.exit_code == 2 and "not a run or mix directory" in res.output


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists() and not os.environ.get("CI"), reason="needs Debian's chromium (apt-get install chromium)")
def test_report_in_a_headless_browser(qa_run, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    res = cli("report", qa_run, "--out", tmp_path / "report.html")
    assert res.exit_code == 0, res.output
    stats = json.loads((qa_run / "stats.json").read_text())
    errors, requests = [], []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        page.goto((tmp_path / "report.html").as_uri())
        page.wait_for_load_state("load")
        funnel = page.inner_text("#funnel")
        for s in stats["stages"]:  # each stage's row: name, in, out, dropped as stats.json has them
            row = page.locator("#funnel tr", has_text=s["name"]).first.inner_text().split("\t")
            assert row[:4] == [s["name"], f"{s['in']:,}", f"{s['out']:,}", f"{sum(s['dropped'].values()):,}"], row
        assert f"{stats['records']:,}" in page.inner_text("#summary")
        assert "import" in funnel
        assert page.inner_text("#records") == ""
        page.click("button.reason:has-text('bad_json')")
        shown = page.inner_text("#records")
        assert "bad_json: 1 records" in shown and "qa_sample.jsonl" in shown and "line " in shown
        page.click("button.reason:has-text('duplicate_exact')")
        shown = page.inner_text("#records")
        assert "duplicate_exact: 2 records" in shown and "line " in shown
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert not errors, errors
    assert not requests, requests
    assert (tmp_path / "report.png").read_bytes()[:4] == b"\x89PNG"
