"""Docker images for SWE instances, in three layers so that instances share what they can:

  base   rlclimb/swe-base:<h>   the sandbox base + pip + the host's package-index settings
  env    rlclimb/swe-env:<h>    one per repository and dependency set: the project's install
                                recipe run on the commit that last changed its dependency files,
                                dependency versions resolved as of that commit's date
  inst   rlclimb/swe:<id>       the time-travelled repository at the base commit in /testbed,
                                installed editable without dependencies; `pip freeze` recorded

Builds use the Docker engine's classic builder through the SDK; every build's log is kept.
An image whose label `rlclimb.swe.key` matches its inputs is reused, never rebuilt.

pip settings pass through from the host (environment, then `pip config list`): index URL,
extra index URLs, trusted hosts, CA bundle (copied into the build), proxies (Docker's
predefined proxy build args: they are kept out of the image history). file:// indexes and
find-links of the host cannot be reached from a build and are left out (the log says so).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from rlclimb.environments.sandbox.image import image_tag as sandbox_image

DEP_FILES = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "tox.ini",
    "requirements.txt",
    "requirements-test.txt",
    "requirements-dev.txt",
    "requirements_test.txt",
    "requirements_dev.txt",
    "test-requirements.txt",
    "dev-requirements.txt",
    "requirements",
)
PIP_MIN = "pip>=25.1"  # --uploaded-prior-to (resolve as of a date) arrived in pip 25.1
BUILD_DIR = "/opt/rlclimb-build"
LABEL_KEY = "rlclimb.swe.key"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")


class BuildError(RuntimeError):
    def __init__(self, message: str, log: str = "", dockerfile: str = ""):
        super().__init__(message)
        self.log = log
        self.dockerfile = dockerfile


def client():
    import docker

    return docker.from_env(timeout=1800)


# ---- pip settings --------------------------------------------------------------------------
@dataclass
class PipSettings:
    index_url: str | None = None
    extra_index_urls: list[str] = field(default_factory=list)
    trusted_hosts: list[str] = field(default_factory=list)
    cert: str | None = None  # a host path: the bundle is copied into the build context
    proxies: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # what cannot be reached from a build

    def env_lines(self) -> list[str]:
        env = {"PIP_BREAK_SYSTEM_PACKAGES": "1", "PIP_ROOT_USER_ACTION": "ignore",
               "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1", "PIP_DEFAULT_TIMEOUT": "120"}
        if self.index_url:
            env["PIP_INDEX_URL"] = self.index_url
        if self.extra_index_urls:
            env["PIP_EXTRA_INDEX_URL"] = " ".join(self.extra_index_urls)
        if self.trusted_hosts:
            env["PIP_TRUSTED_HOST"] = " ".join(self.trusted_hosts)
        if self.cert:
            env["PIP_CERT"] = f"{BUILD_DIR}/ca.crt"
        return [f"ENV {k}={shlex.quote(v)}" for k, v in env.items()]

    def identity(self) -> dict:
        cert = hashlib.sha256(Path(self.cert).read_bytes()).hexdigest() if self.cert else None
        return {"index": self.index_url, "extra": self.extra_index_urls, "trusted": self.trusted_hosts, "cert": cert}


def _pip_config() -> dict[str, str]:
    """`pip config list` of the host (global/user/site files and PIP_* variables)."""
    try:
        out = subprocess.run(
            ["python3", "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    conf: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition("=")
        name = key.split(".", 1)[-1].strip()
        conf.setdefault(name, value.strip().strip("'\""))  # pip lists env values first
    return conf


def host_pip_settings(environ: dict[str, str] | None = None) -> PipSettings:
    env = dict(os.environ if environ is None else environ)
    conf = {} if environ is not None else _pip_config()
    s = PipSettings()

    def reachable(url: str) -> bool:
        if url.startswith("file:") or url.startswith("/"):
            s.skipped.append(url)
            return False
        return True

    index = env.get("PIP_INDEX_URL") or conf.get("index-url")
    if index and reachable(index):
        s.index_url = index
    extra = env.get("PIP_EXTRA_INDEX_URL") or conf.get("extra-index-url") or ""
    s.extra_index_urls = [u for u in extra.split() if reachable(u)]
    s.trusted_hosts = (env.get("PIP_TRUSTED_HOST") or conf.get("trusted-host") or "").split()
    for key in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        if env.get(key) and Path(env[key]).is_file():
            s.cert = env[key]
            break
    else:
        if conf.get("cert") and Path(conf["cert"]).is_file():
            s.cert = conf["cert"]
    if links := (env.get("PIP_FIND_LINKS") or conf.get("find-links")):
        s.skipped.append(f"find-links {links}")
    s.proxies = {k: env[k] for k in PROXY_VARS if env.get(k)}
    return s


def pip_wheel(cache_dir: Path) -> Path:
    """A pip wheel new enough for --uploaded-prior-to, downloaded once with the host's settings
    (the base system has no pip)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    found = sorted(cache_dir.glob("pip-*.whl"))
    if found:
        return found[-1]
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        res = subprocess.run(
            ["python3", "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d", tmp, PIP_MIN],
            capture_output=True, text=True, timeout=600,
        )
        wheels = sorted(Path(tmp).glob("pip-*.whl"))
        if res.returncode != 0 or not wheels:
            raise BuildError(f"cannot download a pip wheel ({PIP_MIN}) for the images: {res.stderr.strip()[-300:]}")
        dest = cache_dir / wheels[-1].name
        shutil.move(str(wheels[-1]), dest)
    return dest


# ---- building ------------------------------------------------------------------------------
def image_labels(tag: str) -> dict[str, str] | None:
    import docker

    try:
        return client().images.get(tag).labels or {}
    except docker.errors.ImageNotFound:
        return None


def build_image(context: Path, tag: str, key: str, log_path: Path, proxies: dict[str, str], network: str | None) -> str:
    """Build `context` (its Dockerfile) as `tag` unless an image with the same key exists.
    Returns "cached" or "built"; raises BuildError with the log tail."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if (image_labels(tag) or {}).get(LABEL_KEY) == key:
        with open(log_path, "a") as f:
            f.write(f"# {tag}: reused (same inputs)\n{(context / 'Dockerfile').read_text()}\n")
        return "cached"
    lines: list[str] = []
    t0 = time.monotonic()
    error = None
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(context), arcname=".")
    buf.seek(0)
    try:
        for chunk in client().api.build(
            fileobj=buf, custom_context=True, tag=tag, rm=True, forcerm=True, decode=True,
            labels={LABEL_KEY: key}, buildargs=proxies or None, network_mode=network, pull=False,
        ):
            if "stream" in chunk:
                lines.append(chunk["stream"])
            if "error" in chunk:
                error = chunk["error"].strip()
                lines.append(f"ERROR: {error}\n")
    except Exception as e:  # the engine refused the build (bad Dockerfile syntax, no engine)
        error = f"{type(e).__name__}: {e}"
        lines.append(f"ERROR: {error}\n")
    dockerfile = (context / "Dockerfile").read_text()
    text = f"# {tag}\n{dockerfile}\n# ---- build log\n{''.join(lines)}\n# {time.monotonic() - t0:.1f} s\n"
    with open(log_path, "a") as f:
        f.write(text)
    if error:
        raise BuildError(error[:500], "".join(lines)[-6000:], dockerfile)
    return "built"


def _key(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def slug(text: str, n: int = 100) -> str:
    return re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-.")[:n] or "x"


def base_dockerfile(settings: PipSettings, wheel_name: str) -> str:
    copy = [f"COPY {wheel_name} {BUILD_DIR}/"] + ([f"COPY ca.crt {BUILD_DIR}/ca.crt"] if settings.cert else [])
    return "\n".join(
        [
            f"FROM {sandbox_image()}",
            *copy,
            *settings.env_lines(),
            # pip runs from its own wheel once to install itself: the base system has none
            f"RUN python3 {BUILD_DIR}/{wheel_name}/pip install --no-index {BUILD_DIR}/{wheel_name}",
            "",
        ]
    )


def ensure_base(work: Path, settings: PipSettings, cache_dir: Path, log_path: Path, network: str | None) -> tuple[str, str]:
    wheel = pip_wheel(cache_dir)
    dockerfile = base_dockerfile(settings, wheel.name)
    key = _key("base", dockerfile, settings.identity(), sandbox_image())
    tag = f"rlclimb/swe-base:{key[:16]}"
    ctx = work / "base"
    shutil.rmtree(ctx, ignore_errors=True)
    ctx.mkdir(parents=True)
    shutil.copy(wheel, ctx / wheel.name)
    if settings.cert:
        shutil.copy(settings.cert, ctx / "ca.crt")
    (ctx / "Dockerfile").write_text(dockerfile)
    return tag, build_image(ctx, tag, key, log_path, settings.proxies, network)


def build_requires(src: Path) -> list[str]:
    """[build-system] requires of pyproject.toml (setuptools + wheel for legacy projects):
    installed in the env layer so the instance layer installs with --no-build-isolation."""
    py = src / "pyproject.toml"
    if py.is_file():
        try:
            req = (tomllib.loads(py.read_text(errors="replace")).get("build-system") or {}).get("requires")
        except tomllib.TOMLDecodeError:
            req = None
        if req:
            req = [str(r) for r in req]
            # setuptools before 70.1 builds editable wheels with the separate `wheel` package
            if any(r.startswith("setuptools") for r in req) and not any(r.startswith("wheel") for r in req):
                req.append("wheel")
            # hatchling's editable builds need `editables` (asked for by its build hook)
            if any(r.startswith("hatchling") for r in req) and not any(r.startswith("editables") for r in req):
                req.append("editables")
            return req
    return ["setuptools", "wheel"]


def env_dockerfile(base_tag: str, install_steps: list[str], requires: list[str], pin_date: str | None) -> str:
    # the env source is a `git archive` (no .git): VCS-versioned projects (setuptools-scm,
    # hatch-vcs) get a fixed version instead of failing to find one
    lines = [f"FROM {base_tag}", "ENV SETUPTOOLS_SCM_PRETEND_VERSION=0.0.0"]
    if pin_date:  # pip reads PIP_UPLOADED_PRIOR_TO like --uploaded-prior-to
        lines.append(f"ENV PIP_UPLOADED_PRIOR_TO={pin_date}")
    lines += [
        "COPY src/ /envsrc/",
        "WORKDIR /envsrc",
        "RUN python3 -m pip install --no-input " + " ".join(shlex.quote(r) for r in requires),
        *install_steps,
        "",
    ]
    return "\n".join(lines)


def instance_dockerfile(env_tag: str, editable: bool) -> str:
    # without build isolation first (the env layer has the build requirements); a backend
    # that needs more for editable builds gets them resolved, date-pinned like the rest
    pip = "python3 -m pip install --no-input --no-deps"
    install = f"({pip} --no-build-isolation -e . || {pip} -e .) && " if editable else ""
    return "\n".join(
        [
            f"FROM {env_tag}",
            "COPY testbed/ /testbed/",
            "WORKDIR /testbed",
            f"RUN rm -rf /envsrc && {install}python3 -m pip freeze --all > {BUILD_DIR}/pip-freeze.txt",
            "",
        ]
    )


def read_image_file(tag: str, path: str, max_bytes: int = 4 << 20) -> bytes:
    """A file of an image, through a created (never started) container."""
    c = client().containers.create(tag, command=["true"], labels={"rlclimb.owner": "swe-build"})
    try:
        stream, _ = c.get_archive(path)
        data = b"".join(stream)
    finally:
        c.remove(force=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        m = tar.getmembers()[0]
        f = tar.extractfile(m)
        return f.read(max_bytes) if f else b""


def remove_image(tag: str) -> None:
    import docker

    try:
        client().images.remove(tag, force=True)
    except docker.errors.ImageNotFound:
        pass
