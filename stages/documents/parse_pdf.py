"""Parse: one PDF page -> its lines in reading order, from the text layer or from OCR.

Per page: MuPDF's structured text (fonts, boxes; glyphs without Unicode keep their raw codes,
`TEXT_CID_FOR_UNKNOWN_UNICODE`, so they stay evidence instead of becoming U+FFFD) -> lines;
scripts and small fractions rebuilt from glyph sizes and baselines, and glyphs without Unicode
named from their fonts' glyph names (`parse_math`, `parse_glyphs`); glyphs whose code points lie
(`parse_repair.suspects`) are mapped back with substitutions learned
once per document from OCR of a few sample pages, and a page with suspects no substitution
covers goes to OCR; a quality check on the text (`parse_quality`); pages that are empty but hold
images, or whose text is garbled, go to OCR:
Tesseract (`parse_ocr`, here, in this CPU-bound stage), or a vision-language model (the
`ocr_vlm` stage that follows, marked by `needs_ocr`). The better-scoring text wins; the page
records which backend produced it and both scores. Memory holds one page at a time; documents
stay open per process (a small LRU), so consecutive pages do not re-open the file.
"""

from __future__ import annotations

import gc
import os
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext

from .parse_accents import attach_marks, rebuild_accents
from .parse_delimited import rebuild_delimited
from .parse_digit_groups import join_digit_groups
from .parse_extension import with_extension
from .parse_glyph_pool import ExtensionFonts, reading
from .parse_glyphs import document_fonts, font_tables
from .parse_layout import dropped_glyphs, page_lines, stext_blocks
from .parse_math import PageExtraction, glyph_pattern, rebuild_lines, wants_spans
from .parse_ocr import ocr_textpage
from .parse_quality import assess
from .parse_records import DocPage
from .parse_repair import Repairs, has_candidates, learn, main_script, repair, suspect_chars
from .parse_stacked import rebuild_stacked

_OPEN_DOCS: OrderedDict[str, Any] = OrderedDict()  # per process: path -> pymupdf.Document
_REPAIRS: dict[tuple[str, str], Repairs] = {}  # per process: (path, languages) -> learned substitutions
# per process: path -> (font -> {char: text}, trigger, the document's own extension fonts)
_GLYPHS: dict[str, tuple[dict, re.Pattern, ExtensionFonts]] = {}
_MAX_OPEN = 2


class PdfUnreadable(Exception):
    """A document that cannot be read at all; `drop_reason` is what the ledger records."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.drop_reason = reason
        self.detail = detail


def open_pdf(path: str | Path):
    """Open a PDF for reading, or raise PdfUnreadable naming the file, the reason and the fix.
    A URL (`s3://...`, any fsspec filesystem) is read whole into memory through the storage
    layer, so any process can open it; a local path is opened (memory-mapped) by MuPDF."""
    import pymupdf

    from rlclimb.pipelines.storage import is_url

    data = _fetch(str(path)) if is_url(path) else None
    try:
        doc = pymupdf.open(path, filetype="pdf") if data is None else pymupdf.open(stream=data, filetype="pdf")
    except Exception as e:  # FileDataError, RuntimeError: MuPDF could not even repair it
        raise PdfUnreadable("corrupt_pdf", f"{path}: not a readable PDF ({type(e).__name__}: {e})") from None
    if doc.needs_pass and not doc.authenticate(""):  # an empty user password opens many
        doc.close()
        raise PdfUnreadable(
            "encrypted_pdf",
            f"{path}: password-protected; decrypt it first (e.g. qpdf --decrypt --password=PW in.pdf out.pdf)",
        )
    if doc.page_count == 0:
        doc.close()
        raise PdfUnreadable("empty_pdf", f"{path}: the PDF has no pages")
    return doc


def _fetch(url: str) -> bytes:
    """A PDF object's bytes, or PdfUnreadable saying why not (gone, no access, store down)."""
    from rlclimb.pipelines.storage import read_bytes

    try:
        return read_bytes(url)
    except FileNotFoundError:
        raise PdfUnreadable("pdf_not_found", f"{url}: no such object (moved or deleted since the run was listed)") from None
    except Exception as e:  # no credentials, no fsspec backend, endpoint down: say which
        raise PdfUnreadable("pdf_not_readable", f"{url}: cannot read it ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None


def cached_pdf(path: str):
    """The open document at a path or URL, per process (a URL is fetched once per process)."""
    doc = _OPEN_DOCS.get(path)
    if doc is None:
        doc = _OPEN_DOCS[path] = open_pdf(path)
        while len(_OPEN_DOCS) > _MAX_OPEN:
            _OPEN_DOCS.popitem(last=False)[1].close()
    else:
        _OPEN_DOCS.move_to_end(path)
    return doc


def close_cached_pdfs() -> None:
    """Close this process's open documents (tests, benchmarks, long-lived workers)."""
    while _OPEN_DOCS:
        _OPEN_DOCS.popitem()[1].close()
    _GLYPHS.clear()


def text_flags() -> int:
    import pymupdf

    # no images, no ligatures kept (MuPDF expands "fi"), whitespace kept, clipped to the page;
    # a glyph without Unicode keeps its code (not U+FFFD): evidence for repair, and its identity
    return pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP | pymupdf.TEXT_CID_FOR_UNKNOWN_UNICODE


def textpage_lines(textpage: Any, width: float) -> tuple[list[dict], str]:
    """Lines in reading order and the raw text of a MuPDF text page."""
    return page_lines(stext_blocks(textpage), width)


class ParsePdfConfig(StageConfig):
    ocr: Literal["tesseract", "vlm", "off"] = "tesseract"  # backend for empty or garbled pages
    ocr_language: str = "eng"  # Tesseract languages, e.g. "eng+fra" (needs tesseract-ocr-fra)
    ocr_dpi: int = Field(200, ge=72, le=600)
    tessdata: str | None = None  # Tesseract language folder; default: $TESSDATA_PREFIX or autodetect
    min_quality: float = Field(0.8, ge=0, le=1)  # pages scoring below go to OCR
    min_chars: int = 20  # fewer non-space characters: the text layer counts as empty
    force_ocr: bool = False  # OCR every page (scanned books with a poor hidden text layer)
    pages_per_shard: int = Field(50, ge=1)  # pages per committed shard: the unit of resume and of parallel work


class ParsePdf(Stage):
    name = "parse"
    version = "16"  # v16: a radicand row read from its text, not its big delimiters (hung from their tops); a bracket piece is no radical sign; v15: fractions found by their bars alone (no text cue: inline fractions in prose); v14: nested display fractions (brackets set bigger than the letters, side by side, big delimiters in a part), radicals over fractions, an index apart from the exponent before the sign; v13: a script on the math-italic 𝜕 (unicode-math fonts); v12: a script on ∂ (∂^2u/∂x^2); v11: \mapsto (cmsy bar + arrow) read as one arrow; v10: TeX glyph names the AGL lacks (negated relations, pxsys vec); v9: nested scripts, fraction triggers, marks before fractions, cells in big brackets, part grids, per-document extension fonts
    kind = "map"
    Config = ParsePdfConfig
    output_model = DocPage

    def setup(self, ctx: StageContext) -> None:
        self._tessdata: str | None = None
        self._ocr_problem: str | None = None
        if self.config.ocr == "tesseract":
            self._tessdata, self._ocr_problem = find_tessdata(self.config.tessdata, self.config.ocr_language)

    def process(self, record: Record, ctx: StageContext) -> Record | Drop:
        # A page allocates tens of thousands of short-lived dicts, spans and glyphs, freed by
        # reference counting (no cycles); the cyclic collector, set off every 700 allocations,
        # would scan them and the per-process caches again and again: paused for the page (it
        # runs once after it), ~20% of a math page's CPU time
        if not gc.isenabled():
            return self._process(record, ctx)
        gc.disable()
        try:
            return self._process(record, ctx)
        finally:
            gc.enable()

    def _process(self, record: Record, ctx: StageContext) -> Record | Drop:
        if not hasattr(self, "_ocr_problem"):
            self.setup(ctx)
        src = record["source"]
        path, number = src["document"], src["page"]
        where = f"{path} page {number}"
        c = self.config
        try:
            page = cached_pdf(path).load_page(number - 1)
            rect = page.rect  # (each `page.rect` is a call into MuPDF)
            drawn = DrawnPage(page)  # (the text page, and whether the page draws any path)
            textpage = drawn.textpage
            blocks = stext_blocks(textpage)
            glyphs, pattern, fonts = self._glyphs(path)
            extraction = PageExtraction(textpage)  # glyphs, spans: extracted once, if a pass needs them
            with reading(fonts):  # this document's extension fonts, whatever documents came before
                rebuild_stacked(drawn, extraction, blocks, glyphs)  # display fractions, radicals: only where cues
                rebuild_delimited(drawn, extraction, blocks, glyphs)  # binomials, operator limits: extension-font pages
                rebuild_accents(extraction, blocks, glyphs)  # \vec{p}, \hat{x}: pages whose lines hold an accent
                if wants_spans(blocks, pattern):  # scripts or glyphs to rename: the span-level pass (slower, so only here)
                    rebuild_lines(blocks, extraction.extractDICT()["blocks"], glyphs)
                attach_marks(blocks)  # accent marks the glyph pass could not place (they end the line before)
                join_digit_groups(extraction, blocks)  # "25 857" set with a thin space: pages with such a pattern
                lines, raw = page_lines(blocks, rect.width)
            # suspects are looked for in the page's visual lines (first and last line are where page
            # numbers sit), behind one C-level pre-check that nearly every clean page fails
            bad = suspect_chars(raw, main := main_script(raw)) if has_candidates(raw) else None
            path_taken, why, unrepaired = "text", None, 0
            if bad:  # remapped or unmapped glyphs: substitutions learned for this document, or OCR
                table, chars = self._repairs(path).table, frozenset(bad)
                fixed = []
                for b in blocks:
                    fixed_lines = []
                    for ln in b["lines"]:
                        text, _, left = repair(ln["text"], table, main, chars)
                        unrepaired += left
                        fixed_lines.append({**ln, "text": text})
                    fixed.append({**b, "lines": fixed_lines})
                lines, raw = page_lines(fixed, rect.width)
                shown = "".join(sorted(bad))[:12].encode("unicode_escape").decode()
                if unrepaired:
                    path_taken, why = "ocr", f"{unrepaired} of {sum(bad.values())} suspect glyphs unrepaired ({shown})"
                else:
                    path_taken, why = "repaired", f"{sum(bad.values())} suspect glyphs mapped ({shown})"
        except PdfUnreadable as e:  # the document itself (an object deleted since the run was listed)
            return Drop(e.drop_reason, f"{where}: {e.detail}")
        except Exception as e:  # a broken page object or content stream
            return Drop("page_unreadable", f"{where}: {type(e).__name__}: {e}")
        quality = assess(raw, c.min_chars, c.min_quality)
        out = {
            "id": record["id"], "source": {"document": path, "page": number}, "pages": record["pages"],
            "width": rect.width, "height": rect.height, "backend": "text",
            "quality": quality.score, "text_layer_quality": None, "ocr_reason": None,
            "needs_ocr": False, "lines": lines, "text_path": path_taken, "path_reason": why,
            "glyphs_dropped": dropped_glyphs(raw),
        }
        if quality.empty and not c.force_ocr and not _has_picture(page):
            out["path_reason"] = "blank page"
            return out  # a blank page: nothing to OCR; the structure stage drops it
        if not (c.force_ocr or quality.garbled or unrepaired):
            return out
        reason = ("forced" if c.force_ocr else "empty" if quality.empty else f"garbled: {quality.garbled}"
                  if quality.garbled else f"garbled: {why}")
        out["text_path"], out["path_reason"] = "ocr", reason
        out["ocr_reason"], out["text_layer_quality"] = reason, quality.score
        if c.ocr == "vlm":
            out["needs_ocr"] = True
            return out
        if c.ocr == "off":
            what = "image_only_page" if quality.empty else "garbled_text_layer"
            return Drop(what, f"{where}: {reason} (score {quality.score:.2f}); OCR is off: --set parse.ocr=tesseract")
        if self._ocr_problem:
            return Drop("ocr_unavailable", f"{where} needs OCR ({reason}): {self._ocr_problem}")
        try:
            ocr_page = ocr_textpage(page, text_flags(), c.ocr_language, c.ocr_dpi, self._tessdata)
            ocr_lines, ocr_raw = textpage_lines(ocr_page, rect.width)
        except Exception as e:
            return Drop("ocr_failed", f"{where}: Tesseract failed: {type(e).__name__}: {e}")
        ocr_quality = assess(ocr_raw, c.min_chars, c.min_quality)
        if quality.empty or unrepaired or ocr_quality.score > quality.score + 0.1:
            out.update(backend="tesseract", quality=ocr_quality.score, lines=[_ocr_line(ln) for ln in ocr_lines],
                       glyphs_dropped=dropped_glyphs(ocr_raw))
        else:
            out["text_path"], out["path_reason"] = "text", f"{reason}; OCR scored no better ({ocr_quality.score:.2f})"
        return out

    def _glyphs(self, path: str) -> tuple[dict[str, dict[str, str]], re.Pattern, ExtensionFonts]:
        """The document's glyph-name tables (`parse_glyphs`), what triggers them and its math
        extension fonts (`parse_extension`), read once per process."""
        got = _GLYPHS.get(path)
        if got is None:
            doc = cached_pdf(path)
            listed = document_fonts(doc)  # (each page's font list read once, for both tables)
            table = font_tables(doc, listed)
            # extension glyphs ("X" for a sum) are renamed where a pass reads their font, but do
            # not send lines to the span pass: "X" is mostly a letter
            glyphs, fonts = with_extension(table, doc, listed)
            got = _GLYPHS[path] = (glyphs, glyph_pattern(table), fonts)
        return got

    def _repairs(self, path: str) -> Repairs:
        """The document's substitutions, learned once per process from OCR of sample pages."""
        key = (path, self.config.ocr_language)
        rep = _REPAIRS.get(key)
        if rep is None:
            c = self.config
            if c.ocr != "tesseract" or self._ocr_problem:
                rep = Repairs()  # nothing to learn from: every suspect page goes to OCR (or is ledgered)
            else:
                def ocr(page):
                    return ocr_textpage(page, text_flags(), c.ocr_language, c.ocr_dpi, self._tessdata)
                rep = learn(cached_pdf(path), text_flags(), ocr)
            _REPAIRS[key] = rep
        return rep


class DrawnPage:
    """A page as the glyph passes read it (`rect`, `get_fonts`, `get_cdrawings`), drawn once into
    a display list: its text page comes from the list (the same as `page.get_textpage`), and the
    list tells whether the page strokes or fills any path at all, replayed into a device that
    only counts them (text and images pass it by: ~0.03 ms); without one, `get_cdrawings`
    (MuPDF interpreting the page again, ~0.4-0.6 ms) has nothing to find (it lists only those
    two calls). Pages whose text asks for their rules but draw none: the generated book's short
    stacked lines, half of ostp's pages. A rotated page is read as before, its drawings asked for."""

    def __init__(self, page: Any) -> None:
        import pymupdf

        self.page, self.rect = page, page.rect
        self._paths: bool | None = None
        if page.rotation:  # (`get_textpage` reads it unrotated)
            self.list, self._paths = None, True
            self.textpage = page.get_textpage(flags=text_flags())
            return
        self.list = page.get_displaylist()
        self.textpage = pymupdf.TextPage(self.list.get_textpage(flags=text_flags()))
        self.textpage.parent = page

    def get_fonts(self) -> list:
        return self.page.get_fonts()

    def get_cdrawings(self) -> list:
        if self._paths is None:
            import pymupdf

            seen = _path_counter()
            mupdf = pymupdf.mupdf
            mupdf.fz_run_display_list(self.list.this, seen, mupdf.FzMatrix(), mupdf.FzRect(mupdf.FzRect.Fixed_INFINITE),
                                      mupdf.FzCookie())
            seen.fz_close_device()
            self._paths = seen.paths > 0
        return self.page.get_cdrawings() if self._paths else []


_PATH_COUNTER: Any = None


def _path_counter() -> Any:
    """A MuPDF device that counts the paths stroked or filled into it (nothing else reaches Python)."""
    global _PATH_COUNTER
    if _PATH_COUNTER is None:
        import pymupdf

        class PathCounter(pymupdf.mupdf.FzDevice2):
            def __init__(self) -> None:
                super().__init__()
                self.use_virtual_fill_path()
                self.use_virtual_stroke_path()
                self.paths = 0

            def fill_path(self, *args: Any) -> None:
                self.paths += 1

            def stroke_path(self, *args: Any) -> None:
                self.paths += 1

        _PATH_COUNTER = PathCounter
    return _PATH_COUNTER()


def _has_picture(page: Any) -> bool:
    """Images covering a fair part of the page (a scan, a photographed page), not a logo."""
    import pymupdf

    area = abs(page.rect) or 1.0
    return sum(abs(pymupdf.Rect(info["bbox"]) & page.rect) for info in page.get_image_info()) >= 0.2 * area


def _ocr_line(line: dict) -> dict:
    line["bold"] = False  # OCR knows no fonts: the structure stage goes by patterns alone
    return line


def find_tessdata(explicit: str | None, languages: str) -> tuple[str | None, str | None]:
    """(tessdata folder, None) or (None, what is wrong and how to fix it)."""
    import pymupdf

    try:
        folder = pymupdf.get_tessdata(explicit or os.environ.get("TESSDATA_PREFIX"))
    except Exception:
        return None, (
            "Tesseract is not installed: apt-get install tesseract-ocr tesseract-ocr-eng "
            "(or set TESSDATA_PREFIX / parse.tessdata, or parse.ocr=vlm with an LLM profile)"
        )
    missing = [lang for lang in languages.split("+") if not Path(folder, f"{lang}.traineddata").exists()]
    if missing:
        return None, f"no Tesseract data for {'+'.join(missing)} in {folder}: apt-get install tesseract-ocr-{missing[0]}"
    return folder, None
