"""Build the truth files for the real textbooks, independently of the pipeline.

    python benchmarks/truth/build_truth.py /work/shared/data/textbooks [--levin-src DIR] [--lebl-src DIR]

Each truth file (`<book>.json`) holds labels, counts and page numbers only, never book text:
`exercises`: [{"key": "0.2#8", "n": "8", "page": 21, "answer_page": 240 | null}], pages 1-based.
How each is built (the PDF's own text is read with `page.get_text()` only: no layout analysis,
none of the pipeline's structure code):
- levin: from the book's LaTeX source (github.com/oscarlevin/discrete-book at f247ff7, the commit
  of the PDF): per section file the count of `\\question`s and of `answer` environments, plus the
  chapters' unanswered "Homework Problems" (`homework/*.tex`); the PDF
  gives each item's page (the section's "Exercises" block, items "N." in sequence, as many as the
  source has) and each answer key's page ("0.2.8." in the solutions appendix).
- lebl: from the book's LaTeX source (github.com/JCBustamante/RELCALC-4 at 4237581, the commit of
  the PDF): `exercise` environments and `\\exsol` answers per chapter file; the PDF gives pages of
  "Exercice 1.2.3 :" / "Exercise A.1.3:" labels and of the answer keys "1.2.102:".
- thompson: no source; the "Exercises I." .. "Exercises XIX." sets (items "(n)" in sequence from
  the set heading to the next chapter / set), answers from the ANSWERS chapter ("Exercises I."
  groups of "(n)" items). Checked by hand on pages 35, 42, 263-265.
- ostp: no source used; items "N." numbered 1..581 through the file; answered when one of its
  options carries "(Correct)" (multiple choice) or an "Answer:" block follows before the next
  item. Checked by hand on pages 5, 11, 60.
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import subprocess
from pathlib import Path

import pymupdf

HERE = Path(__file__).resolve().parent
ROMAN = {r: i + 1 for i, r in enumerate("I II III IV V VI VII VIII IX X XI XII XIII XIV XV XVI XVII XVIII XIX XX".split())}


class Text:
    """A document's raw text as one string, with page lookups."""

    def __init__(self, path: Path, first: int = 1, last: int | None = None):
        doc = pymupdf.open(path)
        self.offsets, parts, pos = [], [], 0
        self.first = first
        for i in range(first - 1, last or doc.page_count):
            t = doc[i].get_text() + "\n"
            self.offsets.append(pos)
            parts.append(t)
            pos += len(t)
        self.text = "".join(parts)

    def page(self, pos: int) -> int:
        return self.first + bisect.bisect_right(self.offsets, pos) - 1


def sequence(text: str, label: re.Pattern, start: int, stop: int, count: int | None = None,
             gaps: bool = False) -> list[tuple[int, int]]:
    """(n, position) of labels numbered 1, 2, 3... between start and stop (at most `count`);
    `gaps`: any increasing numbers (an answer key that skips some)."""
    out, expect = [], 1
    for m in label.finditer(text, start, stop):
        n = int(m.group("n"))
        if n == expect or (gaps and expect < n <= expect + 5):
            expect = n
            out.append((expect, m.start()))
            expect += 1
            if count and expect > count:
                break
    return out


def git_show(repo: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", f"--git-dir={repo}", "show", f"{commit}:{path}"], capture_output=True, text=True,
                          check=True).stdout


def uncommented(tex: str) -> str:
    return re.sub(r"(?<!\\)%.*", "", tex)


# ---- levin ----------------------------------------------------------------------------------------
LEVIN_COMMIT = "f247ff7afb761618483ffb534eff420661fd01b9"


def levin(pdf: Path, src: Path) -> dict:
    main = uncommented(git_show(src, LEVIN_COMMIT, "discretebook.tex"))
    blocks = []  # (file, questions, answered) in book order, files with questions only
    for f in re.findall(r"\\withanswers\\input\{exercises/([^}]*)\}", main):
        tex = uncommented(git_show(src, LEVIN_COMMIT, f"exercises/{f}.tex"))
        # a question is answered when an answer environment follows before the next question
        parts = re.split(r"\\question\b", tex)[1:]
        if parts:
            blocks.append((f, len(parts), [("\\begin{answer}" in p) for p in parts]))
    t = Text(pdf)
    heads = [m.end() for m in re.finditer(r"^Exercises\s*$", t.text, re.M)]
    sol = re.search(r"^Solutions for Section 0\.2\s*$", t.text, re.M).start()
    sections = re.findall(r"^Solutions for Section ([\dA-Z]+\.\d+)\s*$", t.text[sol:], re.M)
    # the preface's "Exercises" paragraph comes first: the blocks are the last len(blocks) headings
    heads = [h for h in heads if h < sol][-len(blocks):]
    assert len(sections) == len(blocks), (len(sections), len(blocks))
    label = re.compile(r"^(?P<n>\d{1,2})\.\s", re.M)
    keys = {(s, n): t.page(sol + m.start()) for m in re.finditer(r"^([\dA-Z]+\.\d+)\.(\d+)\.", t.text[sol:], re.M)
            for s, n in [(m.group(1), int(m.group(2)))]}
    items = []
    for (f, count, answered), section, h, nxt in zip(blocks, sections, heads, [*heads[1:], sol], strict=True):
        found = sequence(t.text, label, h, nxt, count)
        assert len(found) == count, (f, section, len(found), count)
        for (n, pos), has in zip(found, answered, strict=True):
            items.append({"key": f"{section}#{n}", "n": str(n), "page": t.page(pos),
                          "answer_page": keys.get((section, n)) if has else None})
    # the chapters' "Homework Problems" (\noanswers\starthwsol\input{homework/X}): printed, never answered
    homework = [(f, len(re.split(r"\\question\b", uncommented(git_show(src, LEVIN_COMMIT, f"homework/{f}.tex")))) - 1)
                for f in re.findall(r"\\starthwsol\\input\{homework/([^}]*)\}", main)]
    hw_heads = [m.end() for m in re.finditer(r"^Homework Problems\s*$", t.text[:sol], re.M)][-len(homework):]
    for (f, count), h in zip(homework, hw_heads, strict=True):
        found = sequence(t.text, label, h, sol, count)
        assert len(found) == count, (f, len(found), count)
        for n, pos in found:
            items.append({"key": f"{f}-homework#{n}", "n": str(n), "page": t.page(pos), "answer_page": None})
    return {"book": pdf.name, "source": f"github.com/oscarlevin/discrete-book@{LEVIN_COMMIT[:7]} (LaTeX) + PDF pages",
            "homework_in_source": sum(c for _, c in homework),
            "answers_in_source": sum(sum(a) for _, _, a in blocks), "answer_keys_in_pdf": len(keys), "exercises": items}


# ---- lebl -----------------------------------------------------------------------------------------
LEBL_COMMIT = "423758155ac2714d525fd926226d6e46bf134457"
LEBL_FILES = ["ch-intro-fr", "ch-first-order-ode-fr", "ch-higher-order-ode-fr", "ch-systems-fr",
              "ch-fourier-and-pde-fr", "ap-linear-algebra"]


def lebl(pdf: Path, src: Path) -> dict:
    counts = {}
    for f in LEBL_FILES:
        tex = uncommented(git_show(src, LEBL_COMMIT, f"{f}.tex"))
        counts[f] = (tex.count("\\begin{exercise}"), len(re.findall(r"\\exsol\b", tex)))
    t = Text(pdf)
    sol = re.search(r"^Solutions à des exercices choisis\s*$", t.text, re.M)
    sol_at = [m.start() for m in re.finditer(r"^Solutions à des exercices choisis\s*$", t.text, re.M)]
    # the answers section: the last page range headed so (the table of contents names it first)
    start = next(p for p in sol_at if t.page(p) >= 240) if any(t.page(p) >= 240 for p in sol_at) else sol.start()
    keys = {m.group(1): t.page(start + m.start())
            for m in re.finditer(r"^([\dA-Z]+\.\d+\.\d+)\s*:", t.text[start:], re.M)}
    items, seen = [], set()
    for m in re.finditer(r"Exercic?e\s+([\dA-Z]+\.\d+\.\d+)\s*(?:\([^)\n]*\)\s*)?:", t.text[:start]):
        key = m.group(1)
        if key in seen:  # a cross-reference in prose ("voir l'exercice ...") never carries the colon; be safe
            continue
        seen.add(key)
        n = key.rsplit(".", 1)[1]
        items.append({"key": key.rsplit(".", 1)[0] + "#" + n, "n": n, "page": t.page(m.start()),
                      "answer_page": keys.get(key)})
    return {"book": pdf.name, "source": f"github.com/JCBustamante/RELCALC-4@{LEBL_COMMIT[:7]} (LaTeX) + PDF pages",
            "exercises_in_source": sum(c for c, _ in counts.values()),
            "answers_in_source": sum(a for _, a in counts.values()), "answer_keys_in_pdf": len(keys),
            "per_file_in_source": counts, "exercises": items}


# ---- thompson -------------------------------------------------------------------------------------
def thompson(pdf: Path) -> dict:
    t = Text(pdf)
    answers_at = re.search(r"^ANSWERS\.\s*$", t.text, re.M).start()
    label = re.compile(r"^\((?P<n>\d{1,2})\)", re.M)
    stops = sorted([m.start() for m in re.finditer(r"^(?:CHAPTER [IVXL]+\.|EPILOGUE|Exercises [IVXL]+\.)\s*$",
                                                    t.text, re.M)] + [answers_at])
    heads = [(m.group(1), m.end()) for m in re.finditer(r"^Exercises ([IVXL]+)\.\s*$", t.text[:answers_at], re.M)]
    ans_heads = [(m.group(1), answers_at + m.end())
                 for m in re.finditer(r"^Exercises ([IVXL]+)\.\s*$", t.text[answers_at:], re.M)]
    end = re.search(r"^THE END\.?\s*$|^\s*THE END", t.text[answers_at:], re.M)
    ans_end = answers_at + (end.start() if end else len(t.text) - answers_at)
    answers: dict[tuple[str, int], int] = {}
    for k, (roman, pos) in enumerate(ans_heads):
        stop = ans_heads[k + 1][1] if k + 1 < len(ans_heads) else ans_end
        for n, p in sequence(t.text, label, pos, stop, gaps=True):
            answers[(roman, n)] = t.page(p)
    items = []
    for roman, pos in heads:
        stop = next(s for s in stops if s > pos)
        for n, p in sequence(t.text, label, pos, stop):
            items.append({"key": f"{roman}#{n}", "n": str(n), "page": t.page(p), "answer_page": answers.get((roman, n))})
    return {"book": pdf.name, "source": "PDF text: Exercises I..XIX sets and the ANSWERS chapter (no source available)",
            "answer_items_in_pdf": len(answers), "exercises": items}


# ---- ostp -----------------------------------------------------------------------------------------
def ostp(pdf: Path) -> dict:
    t = Text(pdf)
    found = sequence(t.text, re.compile(r"^(?P<n>\d{1,3})\.(?!\d)", re.M), 0, len(t.text))
    items = []
    for k, (n, pos) in enumerate(found):
        stop = found[k + 1][1] if k + 1 < len(found) else len(t.text)
        body = t.text[pos:stop]
        m = re.search(r"\(Correct\)|\bAnswer:", body)
        items.append({"key": f"#{n}", "n": str(n), "page": t.page(pos),
                      "answer_page": t.page(pos + m.start()) if m else None,
                      "kind": "choice" if "\u20dd" in body else "long"})
    return {"book": pdf.name, "source": "PDF text: items 1..N in sequence, (Correct) flags and Answer: blocks",
            "exercises": items}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("books", type=Path)
    ap.add_argument("--levin-src", type=Path, default=Path("/work/.mirror/oscarlevin+discrete-book/repo"))
    ap.add_argument("--lebl-src", type=Path, default=Path("/work/.mirror/JCBustamante+RELCALC-4/repo"))
    args = ap.parse_args()
    d = args.books
    built = {
        "levin": lambda: levin(d / "levin-dmoi-2016.pdf", args.levin_src),
        "lebl": lambda: lebl(d / "lebl-diffyqs-fr-2023.pdf", args.lebl_src),
        "thompson": lambda: thompson(d / "thompson-calculus-made-easy-pg33283.pdf"),
        "ostp": lambda: ostp(d / "ostp-physics-question-library-2021.pdf"),
    }
    for name, make in built.items():
        truth = make()
        ex = truth["exercises"]
        truth["counts"] = {"exercises": len(ex), "answered": sum(1 for e in ex if e["answer_page"])}
        head = json.dumps({k: v for k, v in truth.items() if k != "exercises"}, ensure_ascii=False)[:-1]
        rows = ",\n".join(json.dumps(e, ensure_ascii=False) for e in ex)
        (HERE / f"{name}.json").write_text(f'{head}, "exercises": [\n{rows}\n]}}\n')
        print(name, truth["counts"], {k: v for k, v in truth.items() if k.endswith("_in_source") or k.endswith("_in_pdf")})


if __name__ == "__main__":
    main()
