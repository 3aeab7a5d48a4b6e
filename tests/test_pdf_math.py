"""Math notation rebuilt from glyph geometry (issues 15/16): superscripts, subscripts and small
stacked fractions from glyph sizes and baselines, and glyphs without Unicode named from their
fonts' glyph names, per font. Every PDF is generated here; the truth is what the generator drew."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from rlclimb.pipelines.readers_pdf import PdfPageReader
from rlclimb.stages.documents import parse_pdf
from rlclimb.stages.documents.parse_glyphs import font_tables, name_to_text


def parse_lines(path: Path) -> list[str]:
    parse_pdf.close_cached_pdfs()
    stage = parse_pdf.ParsePdf(ocr="off")
    stage.setup(None)
    pages = [stage.process(item, None) for item in PdfPageReader([path])]
    return [ln["text"] for page in pages for ln in page["lines"]]


def draw(page: pymupdf.Page, y: float, pieces: list[tuple[str, float, float]]) -> None:
    """Pieces (text, font size, baseline shift up) drawn left to right on one line at `y`."""
    x = 72.0
    font = pymupdf.Font("helv")
    for text, size, rise in pieces:
        page.insert_text((x, y - rise), text, fontname="helv", fontsize=size)
        x += font.text_length(text, fontsize=size)


def test_scripts_and_small_fractions_are_rebuilt_from_size_and_baseline(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    draw(page, 100, [("1. Compute 292", 11, 0), ("3171", 7.5, 4), (" (mod 582).", 11, 0)])
    draw(page, 130, [("2. Let a", 11, 0), ("n", 7.5, -2), (" = 2 * 5", 11, 0), ("n-1", 7.5, 4), (" for n > 0.", 11, 0)])
    draw(page, 160, [("3. Solve x", 11, 0), ("2", 7.5, 4), (" + y", 11, 0), ("k+1", 7.5, -2), (" = 0.", 11, 0)])
    # a small fraction p/q: numerator raised and denominator lowered, at one x
    page.insert_text((72, 190), "4. Evaluate f(x) = ", fontname="helv", fontsize=11)
    fx = 72 + pymupdf.Font("helv").text_length("4. Evaluate f(x) = ", fontsize=11)
    page.insert_text((fx, 186), "p", fontname="helv", fontsize=7.5)
    page.insert_text((fx, 194), "q", fontname="helv", fontsize=7.5)
    # no scripts: a line all in one small size, and small text on the same baseline
    page.insert_text((72, 220), "A footnote set small throughout.", fontname="helv", fontsize=7.5)
    draw(page, 250, [("5. See the ", 11, 0), ("APPENDIX", 7.5, 0), (" for tables.", 11, 0)])
    doc.save(tmp_path / "math.pdf")
    text = "\n".join(parse_lines(tmp_path / "math.pdf"))
    assert "292^{3171} (mod 582)" in text
    assert "a_n = 2 * 5^{n-1} for n > 0" in text
    assert "x^2 + y_{k+1} = 0" in text
    assert "f(x) = \\frac{p}{q}" in text
    assert "A footnote set small throughout." in text
    assert "See the APPENDIX for tables." in text
    assert "^" not in text.split("See the")[1] and "_" not in text.split("A footnote")[1]


def _raw_pdf(content: bytes, fonts: dict[str, bytes]) -> bytes:
    """A one-page PDF written by hand: `fonts` are font dicts by resource name (F1, F2...)."""
    res = b"".join(b"/%s %d 0 R" % (name.encode(), 5 + i) for i, name in enumerate(fonts))
    objs = [b"<</Type/Catalog/Pages 2 0 R>>", b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
            b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Resources<</Font<<" + res + b">>>>/Contents 4 0 R>>",
            b"<</Length %d>>stream\n" % len(content) + content + b"\nendstream", *fonts.values()]
    out, offsets = b"%PDF-1.4\n", []
    for i, obj in enumerate(objs):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % (i + 1) + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    return out + b"trailer\n<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)


def test_glyphs_without_unicode_are_named_from_their_font_per_font(tmp_path):
    # code 3 is "equalx" (a TeX math font's "=": no Adobe Glyph List name, so no Unicode) in one
    # font and a delimiter piece in another: only the first may become "="
    content = (b"BT /F3 12 Tf 72 700 Td (1. Let A ) Tj /F1 12 Tf (\\003) Tj /F3 12 Tf ( {1, 2} and B ) Tj "
               b"/F1 12 Tf (\\003) Tj /F3 12 Tf ( {3}. Find A ) Tj /F2 12 Tf (\\003) Tj /F3 12 Tf ( B.) Tj ET")
    fonts = {
        "F1": b"<</Type/Font/Subtype/Type1/BaseFont/TestMath/FirstChar 3/LastChar 3/Widths[600]"
              b"/Encoding<</Type/Encoding/Differences[3/equalx]>>>>",
        "F2": b"<</Type/Font/Subtype/Type1/BaseFont/TestDelim/FirstChar 3/LastChar 3/Widths[600]"
              b"/Encoding<</Type/Encoding/Differences[3/parenleftbig]>>>>",
        "F3": b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>",
    }
    path = tmp_path / "glyphs.pdf"
    path.write_bytes(_raw_pdf(content, fonts))
    assert pymupdf.open(path)[0].get_text(flags=parse_pdf.text_flags()).count("\x03") == 3  # MuPDF alone: raw codes
    assert font_tables(pymupdf.open(path)) == {"TestMath": {"\x03": "="}}
    lines = parse_lines(path)
    assert lines == ["1. Let A = {1, 2} and B = {3}. Find A B."]  # the delimiter piece stays dropped (counted)


def test_glyph_name_rules():
    assert name_to_text("equalx") == "="
    assert name_to_text("uni2212") == "\u2212"
    assert name_to_text("minus.alt") == "\u2212"
    assert name_to_text("parenleftbig") == ""  # a delimiter size variant: drawn in pieces, not text
    assert name_to_text("g1234") == ""


def test_a_script_on_a_partial_sign_is_its_order():
    from rlclimb.stages.documents.parse_math import line_text

    def span(text, size, x0, baseline):
        return {"text": text, "size": size, "origin": (x0, baseline), "flags": 0, "font": "F",
                "bbox": (x0, baseline - size, x0 + 5 * len(text), baseline + 2)}

    # "∂²u/∂x²" as Thompson and OpenStax print it inline: the 2 raised and small after the ∂
    spans = [span("Find ", 11, 72, 100), span("∂", 11, 100, 100), span("2", 7.5, 106, 96), span("u + x", 11, 111, 100),
             span("2", 7.5, 136, 96), span(" = 0.", 11, 141, 100)]
    assert line_text(spans) == "Find ∂^2u + x^2 = 0."
    # unicode-math fonts (lebl) print the math-italic 𝜕 (U+1D715), which is no letter either
    spans = [span("𝜕", 12, 337, 715), span("2", 8.8, 344, 710.7), span("𝑢", 12, 349, 715)]
    assert line_text(spans) == "𝜕^2𝑢"
