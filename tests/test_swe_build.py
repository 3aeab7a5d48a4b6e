"""SWE images built by the real Docker engine from the fixture repository: layers shared by
instances of one dependency set, the sanitized /testbed, dependency versions pinned by date and
recorded, the leak probe (clean images pass; planted future refs, tags, reflogs, objects and
test files fail), and the LLM Dockerfile agent against the scripted server."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.swe_repo import build_swe_repo, skip_without_docker_builds

from rlclimb.environments.swe.lang import PYTHON
from rlclimb.pipelines.llm import LLMClient, LLMConfig
from rlclimb.pipelines.scripted_server import Reply, ScriptedServer
from rlclimb.schemas.swe import parse_pr
from rlclimb.stages.swe import agent, builder, images
from rlclimb.stages.swe.probe import run_probe

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(3600)]  # image builds on a loaded machine


@pytest.fixture(scope="session")
def swe_built(tmp_path_factory):
    """The fixture repo and two instance images (#1 and #5: the same dependency set)."""
    root = tmp_path_factory.mktemp("swe")
    skip_without_docker_builds(root)  # builds need the package index from inside Docker
    fx = build_swe_repo(root / "repos")
    opts = builder.BuildOptions(work_dir=root / "builds", cache_dir=root / "cache", settings=images.host_pip_settings())
    prs = {r["instance_id"]: parse_pr(r, "fx", PYTHON.is_test_path).model_dump() for r in fx.records}
    built = {}
    for iid in ("fixture__minicalc-1", "fixture__minicalc-5"):
        built[iid] = asyncio.run(builder.build_instance(prs[iid], fx.repo, PYTHON, opts))
    return fx, prs, built, opts, root


def _docker(*args) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True, timeout=600).stdout


def _layers(tag: str) -> list[str]:
    return images.client().images.get(tag).attrs["RootFS"]["Layers"]


def test_instances_of_one_dependency_set_share_layers(swe_built):
    fx, prs, built, opts, _ = swe_built
    one, five = built["fixture__minicalc-1"], built["fixture__minicalc-5"]
    assert one.env_image == five.env_image and one.version == five.version
    env_layers = _layers(one.env_image)
    for b in (one, five):
        assert _layers(b.image)[: len(env_layers)] == env_layers
        assert len(_layers(b.image)) > len(env_layers)
    # a rebuild of the same instance reuses every layer (the image key matches)
    again = asyncio.run(builder.build_instance(prs["fixture__minicalc-5"], fx.repo, PYTHON, opts))
    assert again.steps == {"base": "cached", "env": "cached", "instance": "cached"}
    assert again.image == five.image


def test_image_holds_the_base_commit_installed(swe_built):
    fx, prs, built, _, _ = swe_built
    b = built["fixture__minicalc-1"]
    out = _docker("run", "--rm", "--network", "none", b.image, "bash", "-c",
                  "cd /testbed && git rev-parse HEAD && git status --porcelain --untracked-files=no | wc -l"
                  " && python3 -m pytest --version && python3 -c 'import minicalc; print(minicalc.__file__)'")
    lines = out.split()
    assert lines[0] == prs["fixture__minicalc-1"]["base_commit"]
    assert lines[1] == "0"
    assert "/testbed/minicalc/__init__.py" in out
    # the resolved versions are recorded, in the image and in the record
    assert any(v.startswith("pytest==") for v in b.resolved_versions)
    freeze = images.read_image_file(b.image, f"{images.BUILD_DIR}/pip-freeze.txt").decode().splitlines()
    assert freeze == b.resolved_versions
    log = Path(b.log).read_text()
    assert "leak probe clean" in log and "FROM " in log  # the Dockerfiles and build output are kept


def test_dependencies_resolved_as_of_the_dependency_commit(swe_built):
    """pip --uploaded-prior-to the date of the commit that last changed pyproject.toml
    (2024-03-01 in the fixture): no release after it is installed."""
    _, _, built, _, _ = swe_built
    b = built["fixture__minicalc-1"]
    if not b.pinning.startswith("uploaded-prior-to"):
        pytest.skip(f"the index gives no upload times here ({b.pinning})")
    assert b.pinning == "uploaded-prior-to 2024-03-01T11:00:00+00:00"
    pytest_version = next(v for v in b.resolved_versions if v.startswith("pytest=="))
    major, minor = (int(x) for x in pytest_version.split("==")[1].split(".")[:2])
    assert (major, minor) <= (8, 0)  # pytest 8.1 came out on 2024-03-02


def test_leak_probe_passes_clean_images(swe_built):
    _, prs, built, _, _ = swe_built
    for iid, b in built.items():
        assert run_probe(b.image, prs[iid]["base_commit"], prs[iid]["test_patch"]) == []


def _plant(swe_built, name: str, run_lines: list[str]) -> str:
    """An image FROM instance #1 with something planted in /testbed (the fixture's full
    history is at /tmp/future.git during the build only)."""
    fx, _, built, _, root = swe_built
    ctx = root / f"plant-{name}"
    shutil.rmtree(ctx, ignore_errors=True)
    ctx.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(fx.repo), str(ctx / "future.git")], check=True)
    steps = " && ".join(["cd /testbed", *run_lines, "rm -rf /tmp/future.git"])
    (ctx / "Dockerfile").write_text(
        f"FROM {built['fixture__minicalc-1'].image}\nCOPY future.git /tmp/future.git\n"
        f"RUN git config --global user.email x@example.com && git config --global user.name x && {steps}\n"
    )
    tag = f"rlclimb/swe-test-plant:{name}"
    images.build_image(ctx, tag, f"plant-{name}", ctx / "build.log", {}, None)
    return tag


@pytest.mark.parametrize(
    "name,run_lines,expect",
    [
        ("tag", ["git fetch -q /tmp/future.git refs/tags/v0.2:refs/tags/v0.2"], ["refs present:", "refs/tags/v0.2", "not reachable", "dated after"]),
        ("branch", ["git fetch -q --no-tags /tmp/future.git main:refs/heads/main"], ["refs present: refs/heads/main"]),
        ("remote", ["git remote add origin https://example.com/x.git"], ["remotes present: origin"]),
        ("reflog", ["mkdir -p .git/logs", "git log -1 --format='%H %H x <x> 1 +0000%x09commit' HEAD > .git/logs/HEAD"], ["reflog present"]),
        ("objects", ["git fetch -q --no-tags /tmp/future.git main", "rm -f .git/FETCH_HEAD"], ["not reachable from the base commit", "dated after"]),
        ("stash", ["echo x >> minicalc/ops.py", "git stash -q"], ["refs present: refs/stash", "stash entries present"]),
        ("testfile", ["echo '# planted' >> tests/test_ops.py"], ["test file differs from base: tests/test_ops.py"]),
    ],
)
def test_leak_probe_catches_what_is_planted(swe_built, name, run_lines, expect):
    _, prs, _, _, _ = swe_built
    tag = _plant(swe_built, name, run_lines)
    try:
        problems = run_probe(tag, prs["fixture__minicalc-1"]["base_commit"], prs["fixture__minicalc-1"]["test_patch"])
    finally:
        images.remove_image(tag)
    text = "\n".join(problems)
    for e in expect:
        assert e in text, (name, problems)


def test_added_test_file_in_image_fails_the_probe(swe_built):
    """Instance #4's test diff adds tests/test_clamp.py: an image that has it is a leak."""
    fx, _, _, _, _ = swe_built
    pr4 = parse_pr(fx.records[3], "fx", PYTHON.is_test_path).model_dump()
    assert "tests/test_clamp.py" in pr4["test_patch"]
    # instance #1's image at #4's base would be wrong anyway; plant the file into #1's image
    tag = _plant(swe_built, "added", ["printf 'def test_x():\\n    pass\\n' > tests/test_clamp.py"])
    try:
        problems = run_probe(tag, fx.records[0]["base_commit"], pr4["test_patch"])
    finally:
        images.remove_image(tag)
    assert any("test file from the test diff present: tests/test_clamp.py" in p for p in problems)


def _broken_repo(root: Path) -> Path:
    """A repo whose requirements name a package that does not exist: the recipe fails."""
    repo = root / "local__broken"
    (repo / "tests").mkdir(parents=True)
    (repo / "requirements.txt").write_text("rlclimb-no-such-package-4cb1f0==0.0.1\n")
    (repo / "calc.py").write_text("def one():\n    return 1\n")
    (repo / "tests" / "test_calc.py").write_text("from calc import one\n\n\ndef test_one():\n    assert one() == 1\n")
    env = {"GIT_AUTHOR_NAME": "x", "GIT_AUTHOR_EMAIL": "x@e", "GIT_COMMITTER_NAME": "x", "GIT_COMMITTER_EMAIL": "x@e",
           "GIT_AUTHOR_DATE": "2024-05-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-05-01T00:00:00Z", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env)
    return repo


def test_build_failure_keeps_the_log_and_the_agent_fixes_it(swe_built, tmp_path):
    _, _, _, opts, _ = swe_built
    repo = _broken_repo(tmp_path)
    base = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    test_patch = ""  # only the environment is under test here
    pr = {"instance_id": "local__broken-1", "repo": "local/broken", "base_commit": base, "test_patch": test_patch, "patch": ""}
    work = builder.BuildOptions(work_dir=tmp_path / "builds", cache_dir=opts.cache_dir, settings=opts.settings)

    # without an agent: both recipes (date-pinned, project pins) fail; the log says why
    with pytest.raises(images.BuildError) as e:
        asyncio.run(builder.build_instance(pr, repo, PYTHON, work))
    assert "uploaded-prior-to" in str(e.value) and "project pins" in str(e.value)
    log = (tmp_path / "builds" / "logs" / "local__broken-1.log").read_text()
    assert "rlclimb-no-such-package-4cb1f0" in log

    # with the agent: the scripted model reads the Dockerfile and the error from the prompt and
    # answers with a revision that drops the requirement the index does not have
    seen = []

    def model(body, n):
        prompt = body["messages"][0]["content"]
        seen.append(prompt)
        dockerfile = re.search(r"```dockerfile\n(.*?)```", prompt, re.S).group(1)
        fixed = "\n".join(ln for ln in dockerfile.splitlines() if "requirements" not in ln)
        return Reply(f"Here you go:\n```dockerfile\n{fixed}\n```\n")

    with ScriptedServer() as server:
        server.script(model)
        config = LLMConfig.from_dict({"profiles": {"p": {"base_url": server.base_url, "model": "m", "api_key": "k",
                                                         "timeout_s": 30.0}}, "roles": {"builder": "p"}})
        client = LLMClient(config)
        work.agent_attempts = 2
        built = asyncio.run(builder.build_instance(pr, repo, PYTHON, work, agent.reviser(client, "builder", pr)))
    assert built.agent_revisions == 1 and built.pinning == "agent revision 1"
    assert len(seen) == 1 and "rlclimb-no-such-package-4cb1f0" in seen[0]  # the error reached the model
    out = _docker("run", "--rm", "--network", "none", built.image, "bash", "-c", "cd /testbed && python3 -m pytest -q -p no:cacheprovider tests")
    assert "1 passed" in out
    assert run_probe(built.image, base, test_patch) == []
    # the revision is remembered for the dependency set: a rebuild needs no model call
    again = asyncio.run(builder.build_instance(pr, repo, PYTHON, work, None))
    assert again.pinning == "agent revision (remembered)"


def test_extract_dockerfile():
    assert agent.extract_dockerfile("x\n```dockerfile\nFROM a\nRUN b\n```") == "FROM a\nRUN b\n"
    assert agent.extract_dockerfile("FROM a\n") == "FROM a\n"
    assert agent.extract_dockerfile("no idea") is None
