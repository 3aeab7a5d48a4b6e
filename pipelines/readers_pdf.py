"""PDF input: one item per page, so a 1000-page book streams through the engine a shard at a time.

The reader opens each PDF only to count its pages (and to reject what cannot be read: encrypted,
corrupt, zero pages); the parse stage opens it again in whichever process handles the page.
Items are small page references; pages never sit in memory all at once.

Inputs may be URLs (`s3://bucket/book.pdf`, or a prefix holding *.pdf): listed through the
storage layer like JSONL inputs; a page reference then names the URL, and every process that
parses a page fetches that document once (`parse_pdf.cached_pdf`), so no node needs a shared mount.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import pyarrow as pa

from rlclimb.stages.documents.parse_pdf import PdfUnreadable, cached_pdf, open_pdf
from rlclimb.stages.documents.parse_records import page_id

from .readers import Rejected, _files_fingerprint, check_inputs
from .stage import Drop
from .storage import RemoteFile, is_url

PDF_SUFFIXES = (".pdf", ".PDF")


def page_count(path: Path | RemoteFile | str) -> int | PdfUnreadable:
    """A document's page count, or why it cannot be read. A URL's document stays open in this
    process's cache (fetched once: the parse stage, if it runs here, reuses it)."""
    try:
        if is_url(path):
            return cached_pdf(str(path)).page_count
        doc = open_pdf(path)
    except PdfUnreadable as e:
        return e
    n = doc.page_count
    doc.close()
    return n


class PdfPageReader:
    """PDF files (or directories of them) -> one page reference per page, in document order.

    Items: {"id", "source": {"document", "page"}, "pages"}; unreadable documents become one
    `Rejected` item each (ledgered by the engine's `read` pseudo-stage with the reason).
    """

    schema: pa.Schema | None = None

    def __init__(self, paths: list[str | Path], pages_per_shard: int = 50):
        self.paths = check_inputs(paths, PDF_SUFFIXES, urls=True)
        self.pages_per_shard = pages_per_shard
        self._counts: dict[Path | RemoteFile, int | PdfUnreadable] = {}

    def fingerprint(self) -> str:
        return _files_fingerprint(self.paths)

    def _count(self, path: Path | RemoteFile) -> int | PdfUnreadable:
        if path not in self._counts:
            self._counts[path] = page_count(path)
        return self._counts[path]

    def known_counts(self, counts: dict[Path | RemoteFile, int | PdfUnreadable]) -> None:
        """Page counts found elsewhere (the Ray executor counts them on its workers)."""
        self._counts.update(counts)

    def estimate_total(self) -> int:
        return sum(c if isinstance(c, int) else 1 for c in map(self._count, self.paths))

    def __iter__(self) -> Iterator[dict | Rejected]:
        for path in self.paths:
            count = self._count(path)
            if isinstance(count, PdfUnreadable):
                yield Rejected(Drop(count.drop_reason, count.detail), str(path), None)
                continue
            doc = str(path)
            for page in range(1, count + 1):
                yield {"id": page_id(doc, page), "source": {"document": doc, "page": page}, "pages": count}

    def shards(self, size: int) -> Iterator[list[dict | Rejected]]:
        """Shards of at most `pages_per_shard` pages: a page costs far more than a JSONL line."""
        it, size = iter(self), min(size, self.pages_per_shard)
        while chunk := list(islice(it, size)):
            yield chunk

    def describe(self) -> dict:
        return {"reader": "pdf-pages", "files": [str(p) for p in self.paths], "pages_per_shard": self.pages_per_shard}
