"""Repositories for SWE instances: find the local clone, mine merged PRs from its history, and
make the time-travelled copy that goes into an image.

Lookup order for a record's repository: its own `repo_path`, then `<repos>/<owner>__<name>`,
then `git clone https://github.com/<owner>/<name>` into the run's cache (when the network allows).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",  # a clone of a missing repo must fail, not ask for a password
    "LC_ALL": "C",
}


class RepoError(RuntimeError):
    pass


def git(repo: Path | str, *args: str, check: bool = True, timeout: float = 600) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), "-c", "core.hooksPath=/dev/null", *args],
        capture_output=True,
        text=True,
        errors="replace",
        env={**os.environ, **GIT_ENV},
        timeout=timeout,
    )
    if check and out.returncode != 0:
        raise RepoError(f"git {' '.join(args[:3])}: {out.stderr.strip()[-400:]}")
    return out.stdout


def clone_url(repo: str) -> str:
    """Where a missing clone comes from: RLCLIMB_SWE_CLONE_URL with {owner}, {name}, {repo}
    (a mirror, a file:// directory), else GitHub."""
    owner, _, name = repo.partition("/")
    template = os.environ.get("RLCLIMB_SWE_CLONE_URL", "https://github.com/{owner}/{name}.git")
    return template.format(owner=owner, name=name, repo=repo)


def find_repo(repo: str, repo_path: str | None, repos_dir: str | None, cache_dir: Path, clone: bool) -> Path:
    """The local clone of `repo` (owner/name), cloning it into `cache_dir` as a last resort."""
    tried = []
    for cand in (repo_path, repos_dir and str(Path(repos_dir) / repo.replace("/", "__"))):
        if not cand:
            continue
        p = Path(cand)
        if (p / ".git").exists() or (p / "HEAD").is_file():  # a work tree or a bare repository
            return p
        tried.append(str(p))
    cached = cache_dir / repo.replace("/", "__")
    if (cached / "HEAD").is_file():
        return cached
    if not clone:
        raise RepoError(f"no clone of {repo} (looked in {', '.join(tried) or 'nothing: no --repos'}; cloning is off)")
    tmp = cached.with_name(cached.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(
        ["git", "clone", "--bare", "--quiet", clone_url(repo), str(tmp)],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
        timeout=1800,
    )
    if res.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RepoError(
            f"no clone of {repo} (looked in {', '.join(tried) or 'nothing'}) and git clone failed: "
            f"{res.stderr.strip()[-300:]} (give --repos DIR with {repo.replace('/', '__')}/ in it)"
        )
    tmp.rename(cached)
    return cached


def has_commit(clone: Path, sha: str) -> bool:
    return bool(git(clone, "cat-file", "-t", f"{sha}^{{commit}}", check=False).strip())


def commit_date(clone: Path, rev: str) -> str:
    return git(clone, "show", "-s", "--format=%cI", rev).strip()


def dependency_commit(clone: Path, base: str, files: list[str]) -> str:
    """The last commit up to `base` that changed a dependency file (base itself when none did)."""
    out = git(clone, "log", "-1", "--format=%H", base, "--", *files).strip()
    return out or git(clone, "rev-parse", base).strip()


def read_at(clone: Path, rev: str, path: str) -> bytes | None:
    res = subprocess.run(
        ["git", "-C", str(clone), "show", f"{rev}:{path}"], capture_output=True, env={**os.environ, **GIT_ENV}
    )
    return res.stdout if res.returncode == 0 else None


def export_tree(clone: Path, rev: str, dest: Path) -> None:
    """The files of `rev` (no .git) into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.Popen(
        ["git", "-C", str(clone), "archive", "--format=tar", rev], stdout=subprocess.PIPE, env={**os.environ, **GIT_ENV}
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, check=True)
    archive.stdout.close()
    if archive.wait() != 0:
        raise RepoError(f"git archive {rev} failed")


def time_travel_copy(clone: Path, base: str, dest: Path) -> None:
    """A fresh repository at `dest` holding `base` and its ancestors only, checked out at base.

    The objects arrive by fetching `base` from the clone, so nothing newer is ever copied; then
    every ref, the reflogs, FETCH_HEAD/ORIG_HEAD and the remote go, and gc prunes what is left
    unreachable. HEAD is detached at base. The leak probe checks all of this in the image."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    git(dest, "init", "-q")
    git(dest, "fetch", "-q", "--no-tags", "--no-recurse-submodules", f"file://{Path(clone).resolve()}", base)
    git(dest, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", base)
    sanitize_repo(dest)


def sanitize_repo(repo: Path) -> None:
    """Remove refs, remotes, stash, reflogs and unreachable objects from a checked-out repository."""
    for ref in git(repo, "for-each-ref", "--format=%(refname)").split():
        git(repo, "update-ref", "-d", ref)
    for remote in git(repo, "remote").split():
        git(repo, "remote", "remove", remote)
    gitdir = repo / ".git"
    for name in ("FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "packed-refs"):
        (gitdir / name).unlink(missing_ok=True)
    git(repo, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    shutil.rmtree(gitdir / "logs", ignore_errors=True)
    git(repo, "gc", "-q", "--prune=now")
    (gitdir / "packed-refs").unlink(missing_ok=True)  # gc writes one (a header, no refs)
    for sample in (gitdir / "hooks").glob("*"):
        sample.unlink()


# ---- mining merged PRs from history -------------------------------------------------------
_MERGE_PR = re.compile(r"^Merge pull request #(\d+)")
_SQUASH_PR = re.compile(r"\(#(\d+)\)\s*$")
_ISSUE_REF = re.compile(r"(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s+(?:[\w.-]+/[\w.-]+)?#(\d+)")


def repo_name(clone: Path) -> str:
    """owner/name from the clone's origin URL, else from an `owner__name` folder name."""
    url = git(clone, "config", "--get", "remote.origin.url", check=False).strip()
    if m := re.search(r"[:/]([\w.-]+)/([\w.-]+?)(?:\.git)?/?$", url):
        return f"{m.group(1)}/{m.group(2)}"
    name = Path(clone).resolve().name.removesuffix(".git")
    if "__" in name:
        owner, _, rest = name.partition("__")
        return f"{owner}/{rest}"
    return f"local/{name}"


def mine_history(clone: Path, limit: int | None = None, rev: str = "HEAD") -> list[dict]:
    """Merged PRs of `rev`'s first-parent history, newest first, as SWE-bench-format records.

    A PR is a merge commit (`Merge pull request #N ...`, or any merge: its second parent is the
    branch) or a squash-merged commit whose subject ends in `(#N)`. base = first parent; the
    problem statement is the PR's title and description (the merge message, the branch's
    commit messages); `linked_issue` is true when a message says `fixes #N`, else unknown."""
    repo = repo_name(clone)
    log = git(clone, "log", "--first-parent", "--format=%H%x00%P%x00%cI%x00%B%x1e", rev)
    out: list[dict] = []
    for entry in log.split("\x1e"):
        entry = entry.strip("\n")
        if not entry:
            continue
        sha, parents, date, message = entry.split("\x00", 3)
        parents = parents.split()
        subject = message.strip().splitlines()[0] if message.strip() else ""
        if len(parents) >= 2:
            m = _MERGE_PR.match(subject)
            number = m.group(1) if m else sha[:12]
            branch_msgs = git(clone, "log", "--format=%B", f"{parents[0]}..{parents[1]}", check=False)
            body = message.split("\n", 1)[1].strip() if "\n" in message else ""
            title = body.splitlines()[0] if (m and body) else subject
            text = "\n\n".join(x for x in (title, body if body != title else "", branch_msgs.strip()) if x)
        elif len(parents) == 1 and (m := _SQUASH_PR.search(subject)):
            number = m.group(1)
            title = subject
            text = message.strip()
        else:
            continue
        diff = git(clone, "diff", "--no-color", "--no-ext-diff", "--binary", parents[0], sha)
        issues = _ISSUE_REF.findall(message + "\n" + (branch_msgs if len(parents) >= 2 else ""))
        out.append(
            {
                "repo": repo,
                "instance_id": f"{repo.replace('/', '__')}-{number}",
                "base_commit": parents[0],
                "patch": diff,
                "test_patch": "",
                "problem_statement": text,
                "hints_text": "",
                "created_at": date,
                "linked_issue": True if issues else None,
                "repo_path": str(Path(clone).resolve()),
            }
        )
        if limit and len(out) >= limit:
            break
    return out
