"""SWE records: pull requests as they come in (two input formats) and the instances we export.

Input (one JSONL line each):
- SWE-bench instance format: `repo, instance_id, base_commit, patch, test_patch,
  problem_statement, hints_text, created_at` (FAIL_TO_PASS / PASS_TO_PASS not needed);
- a GitHub-API-style PR export: `number, title, body, merged, base.sha, files` (each with
  `filename, status, patch`), `linked_issues` when known.
Both normalize to `PullRequest`. Output: `SweInstance`, one line of `swebench.jsonl`.
A record that does not fit raises `RecordError` naming the record, the field and what was wrong.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

_SHA = re.compile(r"^[0-9a-f]{7,40}$")
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class RecordError(ValueError):
    """A PR record that cannot be used; `reason` is the ledger's machine-readable reason."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


def _check_repo(v: str) -> str:
    if not _REPO.match(v):
        raise ValueError(f"expected owner/name, got {v!r}")
    return v


def _check_sha(v: str) -> str:
    v = v.strip().lower()
    if not _SHA.match(v):
        raise ValueError(f"expected a hex commit id (7-40 characters), got {v[:60]!r}")
    return v


class SweBenchPR(BaseModel):
    """A SWE-bench-format instance (what its `collect` step writes)."""

    model_config = ConfigDict(extra="ignore")

    repo: str
    instance_id: str = Field(min_length=1, max_length=200)
    base_commit: str
    patch: str = ""
    test_patch: str = ""
    problem_statement: str = ""
    hints_text: str = ""
    created_at: str | None = None
    merged: bool = True
    linked_issue: bool | None = None
    repo_path: str | None = None  # a local clone for this record (else --repos / git clone)

    _repo = field_validator("repo")(classmethod(lambda cls, v: _check_repo(v)))
    _sha = field_validator("base_commit")(classmethod(lambda cls, v: _check_sha(v)))


class GitHubFile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    filename: str = Field(min_length=1)
    status: str = "modified"  # added | removed | modified | renamed | copied | changed
    patch: str | None = None  # the hunks (GitHub leaves it out for binary and huge files)
    previous_filename: str | None = None


class GitHubRef(BaseModel):
    model_config = ConfigDict(extra="ignore")

    sha: str
    repo: dict[str, Any] | None = None

    _sha = field_validator("sha")(classmethod(lambda cls, v: _check_sha(v)))


class GitHubIssue(BaseModel):
    model_config = ConfigDict(extra="ignore")

    number: int | None = None
    title: str = ""
    body: str | None = ""


class GitHubPR(BaseModel):
    """A pull request as the GitHub API describes it (PR object + its files + linked issues)."""

    model_config = ConfigDict(extra="ignore")

    number: int
    title: str = ""
    body: str | None = ""
    merged: bool | None = None
    merged_at: str | None = None
    created_at: str | None = None
    base: GitHubRef
    files: list[GitHubFile]
    linked_issues: list[GitHubIssue] | None = None  # None: unknown; []: known to have none
    repo: str | None = None  # else base.repo.full_name
    repo_path: str | None = None


class PullRequest(BaseModel):
    """A PR record in our normalized form (what the collect stage filters)."""

    instance_id: str
    repo: str
    base_commit: str
    patch: str  # the code part of the diff
    test_patch: str  # the test part (by the language's path rules)
    problem_statement: str
    hints_text: str = ""
    created_at: str | None = None
    merged: bool = True
    linked_issue: bool | None = None
    files_changed: int
    repo_path: str | None = None
    source_format: Literal["swebench", "github", "git-history"]


class SweInstance(BaseModel):
    """One line of swebench.jsonl (SWE-bench's keys, plus ours at the end)."""

    model_config = ConfigDict(extra="ignore")

    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    problem_statement: str
    hints_text: str = ""
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    image: str
    eval_script: str
    version: str
    created_at: str | None = None
    environment_setup_commit: str | None = None
    test_files: list[str] = []
    problem_statement_original: str | None = None
    resolved_versions: list[str] = []


# ---- diffs ---------------------------------------------------------------------------------
def split_files(diff: str) -> list[tuple[str, str]]:
    """A unified git diff cut into (path, that file's diff), in order."""
    out: list[tuple[str, str]] = []
    for chunk in re.split(r"(?m)^(?=diff --git )", diff):
        if not chunk.startswith("diff --git "):
            continue
        m = re.match(r"diff --git (?:a/)?(\S+) (?:b/)?(\S+)", chunk)
        plus = re.search(r"(?m)^\+\+\+ (?:b/)?(\S+)", chunk)
        path = plus.group(1) if plus and plus.group(1) != "/dev/null" else (m.group(2) if m else "")
        out.append((path, chunk if chunk.endswith("\n") else chunk + "\n"))
    return out


def github_file_diff(f: GitHubFile) -> str:
    """A git-applicable diff for one file of a GitHub PR export (headers + GitHub's hunks)."""
    old = f.previous_filename or f.filename
    head = [f"diff --git a/{old} b/{f.filename}"]
    if f.status == "added":
        head += ["new file mode 100644", "--- /dev/null", f"+++ b/{f.filename}"]
    elif f.status == "removed":
        head += ["deleted file mode 100644", f"--- a/{old}", "+++ /dev/null"]
    else:
        if old != f.filename:
            head += [f"rename from {old}", f"rename to {f.filename}"]
        head += [f"--- a/{old}", f"+++ b/{f.filename}"]
    body = f.patch or ""
    return "\n".join(head) + "\n" + (body if body.endswith("\n") or not body else body + "\n")


def split_code_and_tests(diff_files: list[tuple[str, str]], is_test_path) -> tuple[str, str]:
    code = "".join(d for p, d in diff_files if not is_test_path(p))
    tests = "".join(d for p, d in diff_files if is_test_path(p))
    return code, tests


# ---- input records -------------------------------------------------------------------------
def _where(e: ValidationError, name: str) -> str:
    err = e.errors()[0]
    field = ".".join(str(x) for x in err["loc"]) or "(record)"
    msg = err["msg"].removeprefix("Value error, ")
    return f"{name}: field '{field}': {msg}"


def parse_pr(obj: Any, name: str, is_test_path) -> PullRequest:
    """Either input format -> PullRequest; `name` says which record it is (file:line)."""
    if not isinstance(obj, dict):
        raise RecordError("bad_record", f"{name}: expected a JSON object, got {type(obj).__name__}")
    if "instance_id" in obj or "base_commit" in obj:
        try:
            r = SweBenchPR.model_validate(obj)
        except ValidationError as e:
            raise RecordError("bad_record", _where(e, name) + " (SWE-bench format)") from None
        files = split_files(r.patch) + split_files(r.test_patch)
        if not files:
            raise RecordError("bad_record", f"{name}: field 'patch': no `diff --git` file sections in patch or test_patch")
        code, tests = split_code_and_tests(files, is_test_path)
        return PullRequest(
            instance_id=r.instance_id,
            repo=r.repo,
            base_commit=r.base_commit,
            patch=code,
            test_patch=tests,
            problem_statement=r.problem_statement,
            hints_text=r.hints_text,
            created_at=r.created_at,
            merged=r.merged,
            linked_issue=r.linked_issue,
            files_changed=len({p for p, _ in files}),
            repo_path=r.repo_path,
            source_format="swebench",
        )
    if "number" in obj and "files" in obj:
        try:
            g = GitHubPR.model_validate(obj)
        except ValidationError as e:
            raise RecordError("bad_record", _where(e, name) + " (GitHub PR format)") from None
        repo = g.repo or ((g.base.repo or {}).get("full_name"))
        if not repo:
            raise RecordError("bad_record", f"{name}: field 'base.repo.full_name': missing (or give 'repo': owner/name)")
        try:
            repo = _check_repo(repo)
        except ValueError as e:
            raise RecordError("bad_record", f"{name}: field 'repo': {e}") from None
        files = [(f.filename, github_file_diff(f)) for f in g.files]
        code, tests = split_code_and_tests(files, is_test_path)
        issues = g.linked_issues
        statement = "\n\n".join(
            f"{i.title}\n\n{i.body or ''}".strip() for i in (issues or [])
        ) or f"{g.title}\n\n{g.body or ''}".strip()
        merged = g.merged if g.merged is not None else g.merged_at is not None
        return PullRequest(
            instance_id=f"{repo.replace('/', '__')}-{g.number}",
            repo=repo,
            base_commit=g.base.sha,
            patch=code,
            test_patch=tests,
            problem_statement=statement,
            hints_text="",
            created_at=g.created_at,
            merged=merged,
            linked_issue=None if issues is None else bool(issues),
            files_changed=len(g.files),
            repo_path=g.repo_path,
            source_format="github",
        )
    raise RecordError(
        "bad_record",
        f"{name}: neither a SWE-bench instance (needs instance_id, base_commit, repo) nor a GitHub PR "
        f"export (needs number, base.sha, files); keys: {', '.join(sorted(obj)[:12])}",
    )
