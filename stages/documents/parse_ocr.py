"""Tesseract OCR of one page, returned as a MuPDF text page (the shape the text layer has).

Through the system's libtesseract, the library the `tesseract` CLI runs, loaded once per process
with ctypes (its C API is stable) and its model read once per (tessdata, languages): MuPDF
rasterizes the page and hands Tesseract the pixels (no image file), Tesseract's own PDF renderer
writes the recognized text as a text-only layer, and MuPDF reads that back at the page's scale,
so lines and character boxes come out as from any PDF. PyMuPDF's `get_textpage_ocr` does the same
with the Tesseract that MuPDF bundles (a 5.0 alpha without the SIMD dot products, its model
re-read for every page), at about twice the CPU per page: it is the fallback where libtesseract
or its PDF font cannot be found.
One thread (OMP_THREAD_LIMIT=1 unless set before the library loads): parse workers are one
process per core, and OpenMP threads spinning on a busy machine only take time from the others.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import os
import tempfile
import threading
import weakref
from functools import lru_cache
from pathlib import Path
from typing import Any

_P = ctypes.c_void_p
_LOCK = threading.Lock()  # one TessBaseAPI per (tessdata, languages) and process; not thread-safe
_APIS: dict[tuple[str, str], int | None] = {}


@lru_cache(maxsize=1)
def _library() -> Any | None:
    """libtesseract with the C API's signatures declared, or None where it cannot be loaded."""
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("tesseract") or "libtesseract.so.5")
    except OSError:
        return None
    sig = {
        "TessBaseAPICreate": ([], _P),
        "TessBaseAPIInit3": ([_P, ctypes.c_char_p, ctypes.c_char_p], ctypes.c_int),
        "TessBaseAPISetImage": ([_P, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int], None),
        "TessBaseAPISetSourceResolution": ([_P, ctypes.c_int], None),
        "TessBaseAPIRecognize": ([_P, _P], ctypes.c_int),
        "TessBaseAPIEnd": ([_P], None),
        "TessBaseAPIDelete": ([_P], None),
        "TessPDFRendererCreate": ([ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int], _P),
        "TessResultRendererBeginDocument": ([_P, ctypes.c_char_p], ctypes.c_int),
        "TessResultRendererAddImage": ([_P, _P], ctypes.c_int),
        "TessResultRendererEndDocument": ([_P], ctypes.c_int),
        "TessDeleteResultRenderer": ([_P], None),
    }
    try:
        for name, (args, res) in sig.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res
    except AttributeError:  # a libtesseract without the C API (or not Tesseract 4/5)
        return None
    return lib


def _api(tessdata: str, language: str) -> int | None:
    """This process's initialized TessBaseAPI for the languages, or None (use the fallback)."""
    key = (tessdata, language)
    if key not in _APIS:
        lib = _library()
        handle = None
        if lib is not None and Path(tessdata, "pdf.ttf").exists():
            handle = lib.TessBaseAPICreate()
            if lib.TessBaseAPIInit3(handle, tessdata.encode(), language.encode()) != 0:
                lib.TessBaseAPIDelete(handle)
                handle = None
        _APIS[key] = handle
    return _APIS[key]


@atexit.register
def _end() -> None:
    for handle in filter(None, _APIS.values()):  # (a handle means the library is loaded)
        _library().TessBaseAPIEnd(handle)
        _library().TessBaseAPIDelete(handle)
    _APIS.clear()


def ocr_textpage(page: Any, flags: int, language: str, dpi: int, tessdata: str) -> Any:
    """The page's MuPDF text page from Tesseract OCR of the whole page rasterized at `dpi`."""
    import pymupdf

    with _LOCK:
        handle = _api(tessdata, language)
        if handle is None:
            return page.get_textpage_ocr(flags=flags, language=language, dpi=dpi, full=True, tessdata=tessdata)
        lib = _library()
        pix = page.get_pixmap(dpi=dpi)
        samples = pix.samples  # kept referenced while Tesseract reads it
        lib.TessBaseAPISetImage(handle, samples, pix.width, pix.height, pix.n, pix.stride)
        lib.TessBaseAPISetSourceResolution(handle, dpi)
        with tempfile.TemporaryDirectory(prefix="rlclimb-ocr-") as tmp:  # the renderer writes a file
            base = os.path.join(tmp, "page")
            renderer = lib.TessPDFRendererCreate(base.encode(), tessdata.encode(), 1)  # text only
            if not renderer:
                raise RuntimeError("Tesseract could not create its PDF renderer")
            try:
                ok = (lib.TessResultRendererBeginDocument(renderer, b"")
                      and lib.TessBaseAPIRecognize(handle, None) == 0
                      and lib.TessResultRendererAddImage(renderer, handle)
                      and lib.TessResultRendererEndDocument(renderer))
            finally:
                lib.TessDeleteResultRenderer(renderer)
            if not ok:
                raise RuntimeError(f"Tesseract failed to recognize the page ({pix.width}x{pix.height} px at {dpi} dpi)")
            data = Path(base + ".pdf").read_bytes()
    ocr_page = pymupdf.open("pdf", data).load_page(0)
    # as PyMuPDF's own OCR text page: back to the page's coordinates, U+FFFD not suppressed
    unzoom = page.rect.width / ocr_page.rect.width
    flags &= ~pymupdf.TEXT_USE_CID_FOR_UNKNOWN_UNICODE & ~pymupdf.TEXT_USE_GID_FOR_UNKNOWN_UNICODE
    textpage = ocr_page.get_textpage(flags=flags, matrix=pymupdf.Matrix(unzoom, unzoom) * page.derotation_matrix)
    textpage.parent = weakref.proxy(page)
    return textpage
