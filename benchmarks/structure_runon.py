"""Do item texts end where their exercise ends? Counts, per real book, the exercise and answer
units whose text swallowed a line that reads as something else: a heading (type larger than the
body, or a short bold line, or heading wording / section numbering), a page's running furniture,
a new "Exercises" / "Answers" heading, or text that runs on past the next page.

    python benchmarks/structure_runon.py RUN_DIR [RUN_DIR ...] [--show N]

    python benchmarks/structure_runon.py --code /tmp/head/stages/documents RUN_DIR ...  # other code

RUN_DIR: a textbook-pdf run directory (its parse stage's pages are read back; structure is run
again here on them with the current code, so the counts follow the code, not the run).
The cues here are deliberately broader than the structure stage's own (any large or short bold
line counts), so the count is an upper bound that the hand-checked sample calibrates. Units that
only run over 3+ pages are listed apart: most are real long answers (hefferon), some swallowed
prose; read them.
"""

from __future__ import annotations

import argparse
import glob
import re
import sys
from collections import Counter
from pathlib import Path

if "--code" in sys.argv:  # the structure modules of another commit (`git archive`), for a before/after
    import rlclimb.stages.documents as _documents

    _documents.__path__ = [sys.argv[sys.argv.index("--code") + 1]]

from rlclimb.schemas.io import read_rows  # noqa: E402
from rlclimb.stages.documents.structure import DocumentBuilder, StructureConfig  # noqa: E402
from rlclimb.stages.documents.structure_headers import FurnitureFilter  # noqa: E402
from rlclimb.stages.documents.structure_patterns import ANSWER_MARKER, KEY_PREFIX, zone_of  # noqa: E402

_SECTION_NUMBER = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2}){1,2}|[A-Z]\.\d{1,2})\.?\s+[A-Z][a-z]")


def pages_of(run: Path) -> list[dict]:
    files = [f for f in sorted(glob.glob(str(run / "stages" / "*-parse-*" / "part-*.parquet"))) if "ledger" not in f]
    pages = [r for f in files for r in read_rows(f)]
    pages.sort(key=lambda p: (p["source"]["document"], p["source"]["page"]))
    return pages


class Recorder(DocumentBuilder):
    """The structure state machine, keeping each unit's lines (with their font cues)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.units: list[dict] = []
        self._ln: dict | None = None
        self._body = 10.0

    def _line(self, ln, page, body, ocr):
        self._ln, self._body = dict(ln, page=page["source"]["page"], body=body, height=page.get("height") or 792.0), body
        return super()._line(ln, page, body, ocr)

    def _open(self, kind, label, text, ln, page, **kw):
        super()._open(kind, label, text, ln, page, **kw)
        self.unit["_lines"] = [self._ln] if self._ln else []

    def _append(self, text, page, *ln):  # (older code: no line geometry)
        super()._append(text, page, *ln)
        self.unit.setdefault("_lines", []).append(dict(self._ln, text=text) if self._ln else {"text": text})

    def _heading(self, h, size, page):
        if self.unit is None and self.units:
            self.units[-1]["_last"] = True  # the last item before a heading: where block ends go wrong
        elif self.unit is not None:
            self.unit["_last"] = True
        return super()._heading(h, size, page)

    def _close(self):
        u = self.unit
        super()._close()
        if u is not None and u["kind"] in ("exercise", "answer", "example"):
            self.units.append(u)


def structure(pages: list[dict]) -> list[dict]:
    units: list[dict] = []
    builder = furniture = None
    for page in pages:
        doc = page["source"]["document"]
        if builder is None or builder.document != doc:
            if builder is not None:
                for ready in furniture.flush():
                    list(builder.page(ready))
                list(builder.finish())
                units += builder.units
            builder, furniture = Recorder(doc, StructureConfig()), FurnitureFilter()
        for ready in furniture.feed(page):
            list(builder.page(ready))
    if builder is not None:
        for ready in furniture.flush():
            list(builder.page(ready))
        list(builder.finish())
        units += builder.units
    return units


def _sig(text: str) -> str:
    return re.sub(r"\d+", "#", text.strip().lower())


def _in_band(ln: dict, height: float) -> bool:
    return ln["y1"] <= 0.1 * height or ln["y0"] >= 0.9 * height


def furniture_signatures(pages: list[dict]) -> set[str]:
    """Lines in the top or bottom tenth of a page that recur there (digits masked) on 3 or more
    pages: running headers/footers the filter missed."""
    seen: Counter[str] = Counter()
    for p in pages:
        h = p.get("height") or 792.0
        for sig in {_sig(ln["text"]) for ln in p["lines"] if _in_band(ln, h)}:
            if len(sig) >= 4:
                seen[sig] += 1
    return {s for s, n in seen.items() if n >= 3}


_MATH = re.compile(r"[\\∑∏∫=+<>^_]|\d\s*[−-]\s*\d")


def _wordy(t: str) -> bool:
    """Mostly letters: words, not a figure's axis labels ("0 10 20 30 40") or a formula."""
    chars = [c for c in t if not c.isspace()]
    return bool(chars) and sum(c.isalpha() for c in chars) >= 0.6 * len(chars)


def cues(unit: dict, furniture: set[str]) -> list[str]:
    """What the unit's lines after its first read as, besides its own text. A unit that only
    runs over 3+ pages is counted apart ("long"): long answers are real (hefferon's)."""
    out = []
    lines = unit.get("_lines") or []
    for ln in lines[1:]:
        t = ln.get("text", "").strip()
        if not t or "size" not in ln:
            continue
        if _MATH.search(t) or re.match(r"^(?:Figure|Table|Fig\.)\s", t) or ANSWER_MARKER.match(t) or KEY_PREFIX.match(t):
            continue  # formulas are set large; a caption is a figure's, not a heading
        if _in_band(ln, ln["height"]) and _sig(t) in furniture and _wordy(t):
            out.append(f"furniture:{t[:50]}")
        elif ln["size"] >= 1.12 * ln["body"] and len(t) <= 130 and sum(c.isalpha() for c in t) >= 3:
            out.append(f"big:{t[:50]}")
        elif ln.get("bold") and len(t) <= 80 and len(t.split()) >= 2 and t[:1] not in "(0123456789":
            out.append(f"bold:{t[:50]}")
        elif t[:1].isupper() and zone_of(t) in ("exercises", "answers", "other") and len(t) <= 60:
            out.append(f"zone:{t[:50]}")  # (a wrapped sentence's last word "solutions." is no heading)
        elif _SECTION_NUMBER.match(t) and len(t) <= 70 and not t.endswith((".", ",", ";")):
            out.append(f"secnum:{t[:50]}")
    return out


def long_unit(unit: dict) -> bool:
    return unit["last_page"] - unit["page"] >= 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--show", type=int, default=0, help="examples to print per book")
    ap.add_argument("--code", help="a directory holding the documents stage modules to measure instead")
    args = ap.parse_args()
    for run in args.runs:
        pages = pages_of(run)
        furniture = furniture_signatures(pages)
        units = structure(pages)
        flagged = [(u, c) for u in units if (c := cues(u, furniture))]
        long = [u for u in units if long_unit(u) and not cues(u, furniture)]
        by_kind = Counter(u["kind"] for u in units)
        bad_kind = Counter(u["kind"] for u, _ in flagged)
        by_cue = Counter(c.split(":")[0] for _, cs in flagged for c in set(x.split(":")[0] + ":" for x in cs))
        print(f"{run.name}: " + ", ".join(f"{k} {bad_kind[k]}/{by_kind[k]}" for k in sorted(by_kind))
              + f" flagged; cues {dict(by_cue)!r}; {len(long)} more only long (3+ pages)")
        for u, c in flagged[: args.show]:
            print(f"   p{u['page']}-{u['last_page']} {u['kind']} {u['label']!r}: {c[:3]}")
        for u in long[: args.show]:
            print(f"   p{u['page']}-{u['last_page']} {u['kind']} {u['label']!r}: long")

if __name__ == "__main__":
    main()
