"""Text sources (markdown, LaTeX, plain text exports) -> the same `DocPage` records a PDF yields.

The reader streams each file line by line and cuts it into pages of `lines_per_page` lines, so
the structure, extract and pair stages serve both paths. Markup becomes the cues a PDF gives by
typography: markdown `#` headings and LaTeX `\\chapter` / `\\section` (numbered as LaTeX numbers
them) become larger type, `**bold**` labels bold; LaTeX exercise environments and `\\item`s in an
exercise list become numbered labels ("3."), solution environments "Solution." lines.
Each line keeps its 1-based line number in the source.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import pyarrow as pa

from rlclimb.pipelines.readers import Rejected, _files_fingerprint, check_inputs
from rlclimb.pipelines.stage import Drop

from .parse_layout import clean_text
from .parse_records import page_id

TEXT_SUFFIXES = (".md", ".markdown", ".tex", ".txt")
BODY = 10.0
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*$")
_MD_BOLD_LABEL = re.compile(r"^\*\*(.+?)\*\*\s*(.*)$")
_TEX_HEADING = re.compile(r"^\\(chapter|section|subsection|subsubsection)(\*?)\s*(?:\[[^\]]*\])?\{(.*)\}\s*$")
_TEX_BEGIN = re.compile(r"^\\begin\{(exercise|problem|question|example|solution|answer|proof|enumerate|itemize)\}\s*(?:\[([^\]]*)\])?\s*(.*)$")
_TEX_END = re.compile(r"^\\end\{(exercise|problem|question|example|solution|answer|proof|enumerate|itemize)\}\s*(.*)$")
_TEX_ITEM = re.compile(r"^\\item\s*(?:\[([^\]]*)\])?\s*(.*)$")
_TEX_DROP = re.compile(r"\\(?:label|index|vspace|hspace|noindent|medskip|bigskip|smallskip|newpage|clearpage)\b(?:\{[^}]*\})?")
_TEX_COMMENT = re.compile(r"(?<!\\)%.*$")
_EXERCISE_TITLE = re.compile(r"exercises|problems|questions|homework", re.IGNORECASE)


class _LatexState:
    """Counters LaTeX would keep: chapter.section numbering, exercise and item numbers."""

    def __init__(self) -> None:
        self.numbers = [0, 0, 0, 0]
        self.exercise = 0
        self.example = 0
        self.lists: list[list] = []  # [kind, counter, numbered-as-exercises]
        self.in_exercises = False

    def heading(self, level_name: str, starred: bool, title: str) -> tuple[str, float]:
        level = ["chapter", "section", "subsection", "subsubsection"].index(level_name)
        self.in_exercises = bool(_EXERCISE_TITLE.search(title))
        size = BODY * (2.0 - 0.25 * level)
        if starred:
            return title, size
        self.numbers[level] += 1
        self.numbers[level + 1 :] = [0] * (3 - level)
        if level == 0:
            self.exercise = self.example = 0
            return f"Chapter {self.numbers[0]}: {title}", size
        nums = [n for n in self.numbers[: level + 1]]
        if nums[0] == 0:  # an article: sections without chapters
            nums = nums[1:]
        return f"{'.'.join(map(str, nums))} {title}", size


def convert_line(raw: str, state: _LatexState, latex: bool) -> tuple[str, float, bool] | None:
    """One source line -> (text, size, bold), or None to skip it."""
    line = raw.rstrip("\n")
    if latex:
        line = _TEX_DROP.sub("", _TEX_COMMENT.sub("", line)).strip()
        if not line:
            return None
        if m := _TEX_HEADING.match(line):
            text, size = state.heading(m.group(1), bool(m.group(2)), m.group(3))
            return text, size, True
        if m := _TEX_BEGIN.match(line):
            env, opt, rest = m.group(1), m.group(2), m.group(3)
            if env in ("exercise", "problem", "question"):
                state.exercise += 1
                return f"Exercise {state.exercise}. {(opt + '. ') if opt else ''}{rest}".strip(), BODY, True
            if env == "example":
                state.example += 1
                return f"Example {state.example}. {rest}".strip(), BODY, True
            if env in ("solution", "answer", "proof"):
                return f"{'Solution' if env != 'answer' else 'Answer'}. {rest}".strip(), BODY, False
            state.lists.append([env, 0, state.in_exercises and env == "enumerate" and not state.lists])
            return (rest, BODY, False) if rest else None
        if m := _TEX_END.match(line):
            if m.group(1) in ("enumerate", "itemize") and state.lists:
                state.lists.pop()
            return (m.group(2), BODY, False) if m.group(2) else None
        if m := _TEX_ITEM.match(line):
            if state.lists:
                top = state.lists[-1]
                top[1] += 1
                label = m.group(1) or (f"{top[1]}." if top[0] == "enumerate" and top[2] else
                                       f"({chr(96 + top[1])})" if top[0] == "enumerate" else "•")
                return f"{label} {m.group(2)}".strip(), BODY, top[2]
            return f"• {m.group(2)}", BODY, False
        if line.startswith("\\") and re.match(r"^\\[a-zA-Z]+(\[[^\]]*\])?(\{[^}]*\})*\s*$", line):
            return None  # a bare command (\maketitle, \usepackage{...})
        return line, BODY, False
    line = line.strip()
    if not line:
        return None
    if m := _MD_HEADING.match(line):
        level = len(m.group(1))
        return m.group(2), BODY * (2.0 - 0.25 * min(level - 1, 3)), True
    if m := _MD_BOLD_LABEL.match(line):
        return f"{m.group(1)} {m.group(2)}".strip(), BODY, True
    return line.lstrip("> ").replace("**", ""), BODY, False


class TextDocumentReader:
    """Markdown / LaTeX / plain-text files -> DocPage records of `lines_per_page` lines each."""

    schema: pa.Schema | None = None

    def __init__(self, paths: list[str | Path], lines_per_page: int = 200):
        self.paths = check_inputs(paths, TEXT_SUFFIXES)
        self.lines_per_page = lines_per_page

    def fingerprint(self) -> str:
        return _files_fingerprint(self.paths)

    def estimate_total(self) -> int | None:
        return None

    def describe(self) -> dict:
        return {"reader": "text-documents", "files": [str(p) for p in self.paths], "lines_per_page": self.lines_per_page}

    def __iter__(self) -> Iterator[dict | Rejected]:
        for path in self.paths:
            yield from self._pages(path)

    def _pages(self, path: Path) -> Iterator[dict | Rejected]:
        doc, latex = str(path), path.suffix == ".tex"
        state = _LatexState()
        lines: list[dict] = []
        page = 0
        try:
            with open(path, encoding="utf-8") as fh:
                for n, raw in enumerate(fh, 1):
                    converted = convert_line(raw, state, latex)
                    if converted is None:
                        continue
                    text, size, bold = converted
                    text = clean_text(text)
                    if not text:
                        continue
                    y = float(len(lines)) * size * 1.3
                    lines.append({"text": text, "x0": 0.0, "y0": y, "x1": 0.0, "y1": y + size, "size": size,
                                  "bold": bold, "block": len(lines), "line": n})
                    if len(lines) >= self.lines_per_page:
                        page += 1
                        yield self._page(doc, page, lines)
                        lines = []
        except UnicodeDecodeError as e:
            yield Rejected(Drop("bad_encoding", f"{doc}: not UTF-8 text ({e.reason} at byte {e.start}); "
                                                "convert it first (iconv -t UTF-8)"), doc, None)
            return
        if lines or page == 0:
            if not lines and page == 0:
                yield Rejected(Drop("empty_document", f"{doc}: no text"), doc, None)
                return
            page += 1
            yield self._page(doc, page, lines)

    @staticmethod
    def _page(doc: str, page: int, lines: list[dict]) -> dict:
        return {
            "id": page_id(doc, page), "source": {"document": doc, "page": page}, "pages": 0,
            "width": 0.0, "height": 0.0, "backend": "source", "quality": 1.0, "text_layer_quality": None,
            "ocr_reason": None, "needs_ocr": False, "lines": lines, "provenance": [],
        }

    def shards(self, size: int) -> Iterator[list[dict | Rejected]]:
        it = iter(self)
        while chunk := list(islice(it, size)):
            yield chunk
