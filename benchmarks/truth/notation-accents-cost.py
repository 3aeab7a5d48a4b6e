"""Parse stage CPU time per book with and without the accent passes
(`parse_accents.rebuild_accents` and `attach_marks`), interleaved, best of 2:

    python benchmarks/truth/notation-accents-cost.py hefferon-linalg-book-2012.pdf ostp-physics-question-library-2021.pdf

Books are read from ../shared/data/textbooks (relative to the repository root)."""

from __future__ import annotations

import sys

from notation_cost import parse_seconds  # (this script's folder is on sys.path when it runs)

from rlclimb.stages.documents import parse_pdf


def main() -> None:
    real = parse_pdf.rebuild_accents, parse_pdf.attach_marks
    for name in sys.argv[1:]:
        on, off = [], []
        for _ in range(2):
            parse_pdf.rebuild_accents = parse_pdf.attach_marks = lambda *a: 0
            off.append(parse_seconds(name))
            parse_pdf.rebuild_accents, parse_pdf.attach_marks = real
            on.append(parse_seconds(name))
        print(f"{name}: parse without {min(off):.2f} s, with {min(on):.2f} s ({min(on) / min(off):.2f}x)", flush=True)


if __name__ == "__main__":
    main()
