"""Vector arrows over the rows of a rebuilt fraction (issues 15/16, round 7): hefferon's
`\\frac{\\vec{v} • \\vec{s}}{\\vec{s} • \\vec{s}}` read "\\vec{\\}frac{v •\\vec{s}\\vec{}}{s •\\vec{s}}",
ostp's `\\frac{m}{M+m}\\vec{v}` read "\\frac{m}{M+m\\vec{}}v". MuPDF gives a combining mark the
place of the glyph before it in the content stream, so the fraction pass put the arrow over a
numerator's first letter on the row before the fraction, the one over the denominator's first
letter at the numerator's end, and the one over the letter after the fraction in its
denominator; TeX drew each right before its letter. The lines are the fraction pass's output
on those pages (a generated PDF whose rows hold marks is not rebuilt: MuPDF hangs their marks
on the lines before, whose text then disagrees with their raw glyphs)."""

from __future__ import annotations

from rlclimb.stages.documents.parse_accents import attach_marks

ARROW = "\u20d7"


def _attached(text: str) -> str:
    blocks = [{"lines": [{"text": text}]}]
    attach_marks(blocks)
    return blocks[0]["lines"][0]["text"]


def test_a_mark_before_a_rebuilt_fractions_row_goes_onto_that_rows_first_letter() -> None:
    assert _attached(f"{ARROW}\\frac{{v •{ARROW}s{ARROW}}}{{s •{ARROW}s}} ·{ARROW}s") \
        == "\\frac{\\vec{v} •\\vec{s}}{\\vec{s} •\\vec{s}} ·\\vec{s}"
    assert _attached(f"c = x ={ARROW} \\frac{{v •{ARROW}s{ARROW}}}{{s •{ARROW}s}}") \
        == "c = x = \\frac{\\vec{v} •\\vec{s}}{\\vec{s} •\\vec{s}}"
    assert _attached(f"(a)\\vec{{v}}_{{CM}} = \\frac{{m}}{{M+m{ARROW}}}v") == "(a)\\vec{v}_{CM} = \\frac{m}{M+m}\\vec{v}"
    # a mark before a letter in running text is that letter's, as before
    assert _attached(f"where{ARROW}p is") == "where \\vec{p} is"
