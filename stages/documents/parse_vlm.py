"""OCR by a vision-language model: pages the parse stage marked `needs_ocr` (empty or garbled
text layer, with `parse.ocr: vlm`) are rendered to PNG and sent to the `ocr` role through the
LLM client (an OpenAI-compatible chat request with an image part); the reply (markdown or plain
text) becomes the page's lines. Markdown headings ("## 2.1 Limits") keep their rank as larger
type, and bold labels ("**3.**") as bold, so the structure stage reads them like a text layer.
Other pages pass through untouched. Async and row-cached: a resumed run pays for no page twice.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from pydantic import Field

from rlclimb.pipelines.stage import (
    ConfigError,
    Drop,
    Keep,
    Record,
    Stage,
    StageConfig,
    StageContext,
)

from .parse_layout import clean_text
from .parse_pdf import cached_pdf
from .parse_quality import assess
from .parse_records import DocPage

PROMPT = (
    "Transcribe this textbook page into markdown. Keep every word, number and formula as printed "
    "(formulas in LaTeX), keep exercise numbers and headings, one line per printed line. Output only "
    "the transcription."
)
_FENCE = re.compile(r"^```[a-z]*\s*$|^```\s*$", re.MULTILINE)
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BOLD = re.compile(r"^\*\*(.+?)\*\*\s*(.*)$")


class OcrVlmConfig(StageConfig):
    role: str = "ocr"  # LLM role or profile of a vision-language model
    dpi: int = Field(150, ge=50, le=400)
    prompt: str = PROMPT
    max_tokens: int = 4096


def markdown_lines(text: str, body: float = 10.0) -> list[dict]:
    """A transcription -> PageLine dicts: headings larger by rank, "**label**" bold."""
    lines = []
    for raw in _FENCE.sub("", text).splitlines():
        size, bold, line = body, False, raw.strip()
        if not line:
            continue
        if m := _HEADING.match(line):
            size, bold, line = body * (2.0 - 0.15 * (len(m.group(1)) - 1)), True, m.group(2)
        elif m := _BOLD.match(line):
            bold, line = True, f"{m.group(1)} {m.group(2)}".strip()
        line = clean_text(line.replace("**", "").replace("__", ""))
        if line:
            lines.append({"text": line, "x0": 0.0, "y0": float(len(lines)) * size * 1.3, "x1": 0.0,
                          "y1": float(len(lines)) * size * 1.3 + size, "size": size, "bold": bold,
                          "block": len(lines), "line": None})
    return lines


class OcrVlm(Stage):
    name = "ocr_vlm"
    version = "1"
    kind = "map"
    Config = OcrVlmConfig
    output_model = DocPage
    cache = True
    concurrency = 8

    def check(self, llm_config: Any) -> None:
        require_llm(llm_config, self.config.role, "parse.ocr=vlm")

    async def process(self, record: Record, ctx: StageContext) -> Record | Keep | Drop:
        if not record.get("needs_ocr"):
            return record
        src = record["source"]
        where = f"{src['document']} page {src['page']}"
        if ctx.llm is None:
            return Drop("ocr_unavailable", f"{where} needs OCR and parse.ocr=vlm, but no LLM profile is configured "
                                           f"(llm.roles.{self.config.role})")
        try:
            page = cached_pdf(src["document"]).load_page(src["page"] - 1)
            png = page.get_pixmap(dpi=self.config.dpi).tobytes("png")
        except Exception as e:
            return Drop("page_unreadable", f"{where}: cannot render: {type(e).__name__}: {e}")
        url = "data:image/png;base64," + base64.b64encode(png).decode()
        messages = [{"role": "user", "content": [
            {"type": "text", "text": self.config.prompt},
            {"type": "image_url", "image_url": {"url": url}},
        ]}]
        reply = await ctx.llm.complete(self.config.role, messages, tag=self.name, max_tokens=self.config.max_tokens)
        lines = markdown_lines(reply.text)
        quality = assess("\n".join(ln["text"] for ln in lines))
        if not lines:
            return Drop("ocr_empty", f"{where}: the vision model returned no text")
        record.update(lines=lines, backend="vlm", quality=quality.score, needs_ocr=False)
        return Keep(record, model=reply.model, cost=reply.cost)


def require_llm(llm_config: Any, role: str, what: str) -> None:
    """Fail before a run writes anything when a stage was asked to use a model that the run's
    config does not provide (no `llm:` section, or no profile for the role)."""
    if llm_config is None:
        raise ConfigError(f"{what} needs an LLM endpoint: add an `llm:` section with a profile for role "
                          f"{role!r} to the --config file (see README, Configuration)")
    try:
        llm_config.resolve(role)
    except ValueError as e:
        raise ConfigError(f"{what}: {e}") from None
