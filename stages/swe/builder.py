"""Build the image of one SWE instance: base -> repo environment -> instance, then the smoke
test (the base commit's touched test files collect under pytest) and the leak probe.

With an LLM, a failing environment (its build or the smoke test) goes to a bounded agent loop:
the model reads the Dockerfile, the repository's top-level files and the error log, and writes
a revised Dockerfile; each revision is built and smoke-tested, at most `agent_attempts` times.
A revision that works is remembered for the dependency set (other instances reuse it).
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from rlclimb.environments.swe.lang import Language

from . import images, repos
from .images import BUILD_DIR, BuildError, PipSettings, build_image, slug
from .probe import diff_paths, run_probe


class LeakError(RuntimeError):
    pass


@dataclass
class BuildOptions:
    work_dir: Path  # contexts and logs (the run directory's builds/)
    cache_dir: Path  # pip wheel, clones
    settings: PipSettings
    pin_by_date: bool = True
    network: str | None = None  # Docker network for builds (None: the default bridge)
    agent_attempts: int = 0  # > 0 with an LLM: revise failing Dockerfiles
    keep_failed: bool = False


@dataclass
class Built:
    image: str
    env_image: str
    version: str  # the dependency set: the commit whose dependency files the env installs
    pinning: str
    resolved_versions: list[str]
    log: str
    steps: dict[str, str] = field(default_factory=dict)  # layer -> built | cached
    agent_revisions: int = 0


Reviser = Callable[[str, str, list[str], int], Awaitable[str | None]]


def dependency_files(clone: Path, rev: str) -> list[str]:
    names = repos.git(clone, "ls-tree", "-r", "--name-only", rev).splitlines()
    return [
        n for n in names
        if n in images.DEP_FILES or n.startswith("requirements/") or re.fullmatch(r"[\w-]*requirements[\w-]*\.txt", n)
    ]


async def build_instance(
    pr: dict, clone: Path, lang: Language, opts: BuildOptions, revise: Reviser | None = None
) -> Built:
    base = pr["base_commit"]
    if not repos.has_commit(clone, base):
        raise repos.RepoError(f"base commit {base} is not in the clone {clone} (fetch it, or a newer clone)")
    iid = slug(pr["instance_id"], 120)
    logs = opts.work_dir / "logs"
    log = logs / f"{iid}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    ctx_root = opts.work_dir / "ctx" / iid
    steps: dict[str, str] = {}
    to_thread = asyncio.to_thread

    base_tag, steps["base"] = await to_thread(
        images.ensure_base, ctx_root, opts.settings, opts.cache_dir, log, opts.network
    )

    # ---- environment: one per dependency set ---------------------------------------------
    dep_commit = repos.dependency_commit(clone, base, dependency_files(clone, base) or ["pyproject.toml"])
    pin_date = repos.commit_date(clone, dep_commit) if opts.pin_by_date else None
    src = ctx_root / "env" / "src"
    shutil.rmtree(src.parent, ignore_errors=True)
    repos.export_tree(clone, dep_commit, src)
    steps_ = lang.install_steps(src)
    requires = images.build_requires(src)
    files = sorted(p.name for p in src.iterdir())
    remembered = opts.work_dir / "agent" / f"{slug(pr['repo'])}-{dep_commit[:12]}.Dockerfile"

    async def env_attempt(dockerfile: str) -> str:
        (src.parent / "Dockerfile").write_text(dockerfile)
        key = images._key("env", pr["repo"], dep_commit, dockerfile)
        tag = f"rlclimb/swe-env:{slug(pr['repo'], 60)}-{key[:12]}"
        steps["env"] = await to_thread(build_image, src.parent, tag, key, log, opts.settings.proxies, opts.network)
        return tag

    candidates: list[tuple[str, str]] = []
    if remembered.is_file():
        candidates.append((remembered.read_text(), "agent revision (remembered)"))
    if pin_date:
        candidates.append((images.env_dockerfile(base_tag, steps_, requires, pin_date), f"uploaded-prior-to {pin_date}"))
    candidates.append((images.env_dockerfile(base_tag, steps_, requires, None), "project pins"))

    testbed = ctx_root / "inst" / "testbed"
    await to_thread(repos.time_travel_copy, clone, base, testbed)
    editable = any((testbed / f).is_file() for f in ("pyproject.toml", "setup.py", "setup.cfg"))
    _, changed = diff_paths(pr.get("test_patch") or "")
    smoke_files = [f for f in changed if (testbed / f).is_file() and f.endswith(".py")]

    async def instance_attempt(env_tag: str) -> tuple[str, str]:
        dockerfile = images.instance_dockerfile(env_tag, editable)
        (testbed.parent / "Dockerfile").write_text(dockerfile)
        key = images._key("inst", env_tag, base, dockerfile, pr.get("test_patch") or "")
        tag = f"rlclimb/swe:{iid}"
        steps["instance"] = await to_thread(build_image, testbed.parent, tag, key, log, opts.settings.proxies, opts.network)
        if smoke_files:
            await to_thread(smoke_test, tag, lang, smoke_files, log)
        return tag, key

    errors: list[str] = []
    last: BuildError | None = None
    image = env_tag = None
    revisions = 0
    dockerfile = candidates[0][0]
    while image is None:
        if candidates:
            dockerfile, pinning = candidates.pop(0)
        elif revise is not None and revisions < opts.agent_attempts and last is not None:
            revisions += 1
            revised = await revise(last.dockerfile or dockerfile, last.log, files, revisions)
            if not revised or not revised.lstrip().startswith(f"FROM {base_tag}"):
                errors.append(f"agent revision {revisions}: no usable Dockerfile (must start with FROM {base_tag})")
                continue
            dockerfile, pinning = revised.strip() + "\n", f"agent revision {revisions}"
        else:
            raise BuildError("; ".join(errors)[-1500:], last.log if last else "", dockerfile)
        try:
            env_tag = await env_attempt(dockerfile)
            image, _ = await instance_attempt(env_tag)
        except BuildError as e:
            errors.append(f"{pinning}: {e}")
            # the agent revises the environment's Dockerfile, whichever layer failed
            last = BuildError(str(e), e.log, dockerfile)
    if pinning.startswith("agent revision") and "remembered" not in pinning:
        remembered.parent.mkdir(parents=True, exist_ok=True)
        remembered.write_text(dockerfile)

    problems = await to_thread(run_probe, image, base, pr.get("test_patch") or "")
    if problems:
        if not opts.keep_failed:
            images.remove_image(image)
        with open(log, "a") as f:
            f.write("# leak probe FAILED:\n" + "\n".join(problems) + "\n")
        raise LeakError("; ".join(problems)[:800])
    freeze = (await to_thread(images.read_image_file, image, f"{BUILD_DIR}/pip-freeze.txt")).decode().splitlines()
    with open(log, "a") as f:
        f.write(f"# leak probe clean; pinning: {pinning}\n# pip freeze:\n" + "\n".join(freeze) + "\n")
    shutil.rmtree(ctx_root, ignore_errors=True)
    return Built(
        image=image,
        env_image=env_tag,
        version=dep_commit[:12],
        pinning=pinning,
        resolved_versions=freeze,
        log=str(log),
        steps=steps,
        agent_revisions=revisions,
    )


def smoke_test(image: str, lang: Language, test_files: list[str], log: Path) -> None:
    """The base commit's versions of the touched test files must at least be collected: a
    missing test dependency shows here, not as a false FAIL_TO_PASS later."""
    from .images import client

    cmd = lang.test_command(test_files, "/tmp/smoke.xml") + " --collect-only -q"
    c = client().containers.run(
        image, ["bash", "-c", cmd], network_disabled=True, mem_limit="2g", pids_limit=512,
        labels={"rlclimb.owner": "swe-smoke"}, detach=True, working_dir="/testbed",
    )
    try:
        rc = c.wait(timeout=600).get("StatusCode", 1)
        out = c.logs().decode(errors="replace")
    finally:
        c.remove(force=True)
    with open(log, "a") as f:
        f.write(f"# smoke: {cmd}\n{out[-4000:]}\n# exit {rc}\n")
    if rc not in (0, 5):  # 5: nothing collected (not an environment problem)
        raise BuildError(f"smoke test: collecting {' '.join(test_files)} failed (exit {rc})", out[-6000:], "")
