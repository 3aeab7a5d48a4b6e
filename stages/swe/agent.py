"""The Dockerfile agent: with an LLM configured, a failing environment build (or its smoke
test) is shown to the model, which answers with a whole revised Dockerfile. The builder builds
each revision and gives the model the new error, up to its attempt limit."""

from __future__ import annotations

import re
from typing import Any

PROMPT = """You fix the Docker build of a Python repository's test environment.
The image must install the project (source in /envsrc, the working directory) and everything
its tests need, so that `python3 -m pytest` can run the tests. Keep the first line
(`{from_line}`) unchanged; pip is `python3 -m pip`; the network is available during the build.

Repository: {repo}
Top-level files: {files}

Current Dockerfile:
```dockerfile
{dockerfile}
```

Attempt {attempt}. The build or the test collection failed; the end of the log:
```
{log}
```

Answer with the complete revised Dockerfile in one ```dockerfile block, nothing else."""

_BLOCK = re.compile(r"```(?:dockerfile|Dockerfile|docker)?\s*\n(.*?)```", re.S)


def extract_dockerfile(text: str) -> str | None:
    m = _BLOCK.search(text or "")
    body = (m.group(1) if m else text or "").strip()
    return body + "\n" if body.startswith("FROM ") else None


def reviser(llm: Any, role: str, pr: dict, tag: str = "swe_build"):
    async def revise(dockerfile: str, log: str, files: list[str], attempt: int) -> str | None:
        from_line = dockerfile.splitlines()[0] if dockerfile else "FROM ..."
        prompt = PROMPT.format(
            from_line=from_line,
            repo=pr.get("repo"),
            files=", ".join(files[:80]),
            dockerfile=dockerfile.strip(),
            attempt=attempt,
            log=(log or "")[-5000:],
        )
        completion = await llm.complete(role, [{"role": "user", "content": prompt}], tag=tag, seed=attempt)
        return extract_dockerfile(completion.text)

    return revise
