"""Parse stage CPU time per book with and without the binomial/operator pass
(`parse_delimited.rebuild_delimited`), interleaved, best of 2:

    python benchmarks/truth/notation-delimited-cost.py levin-dmoi-2016.pdf judson-aata-2022.pdf

Books are read from ../shared/data/textbooks (relative to the repository root). The extension
glyph map (`parse_extension`) stays on in both: it renames glyphs where other passes read them."""

from __future__ import annotations

import sys

from notation_cost import parse_seconds  # (this script's folder is on sys.path when it runs)

from rlclimb.stages.documents import parse_pdf


def main() -> None:
    real = parse_pdf.rebuild_delimited
    for name in sys.argv[1:]:
        on, off = [], []
        for _ in range(2):
            parse_pdf.rebuild_delimited = lambda *a: 0
            off.append(parse_seconds(name))
            parse_pdf.rebuild_delimited = real
            on.append(parse_seconds(name))
        print(f"{name}: parse without {min(off):.2f} s, with {min(on):.2f} s ({min(on) / min(off):.2f}x)")


if __name__ == "__main__":
    main()
