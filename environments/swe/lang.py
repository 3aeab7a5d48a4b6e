"""The per-language part of SWE environments: which paths are tests, how a repository is
installed in its image, how its tests run and how their structured results read back.

Everything else (collect, images, grading, sanitize) is language-neutral and goes through
`Language`. Python is the only language so far: pytest with JUnit XML output.
"""

from __future__ import annotations

import configparser
import re
import shlex
import tomllib
from pathlib import Path, PurePosixPath
from typing import Protocol

from defusedxml import ElementTree

STATUSES = ("passed", "failed", "error", "skipped")
# When one node id appears twice (pytest writes a second testcase for a teardown error),
# the worse status wins.
_SEVERITY = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


class Language(Protocol):
    name: str

    def is_test_path(self, path: str) -> bool: ...

    def install_steps(self, repo_dir: Path) -> list[str]: ...

    def test_command(self, test_files: list[str], junit_path: str) -> str: ...

    def parse_results(self, junit_xml: bytes) -> dict[str, str]: ...


# Extras and requirement files that conventionally hold the test dependencies.
_TEST_EXTRAS = ("test", "tests", "testing", "dev")
_REQ_GLOBS = (
    "requirements.txt",
    "requirements-test*.txt",
    "requirements_test*.txt",
    "requirements-dev*.txt",
    "requirements_dev*.txt",
    "test-requirements*.txt",
    "test_requirements*.txt",
    "dev-requirements*.txt",
    "requirements/test*.txt",
    "requirements/dev*.txt",
    "requirements/tests*.txt",
)
_TEST_DIRS = {"test", "tests", "testing"}
PIP = "python3 -m pip install --no-input"


class PythonLanguage:
    name = "python"

    def is_test_path(self, path: str) -> bool:
        p = PurePosixPath(path)
        if any(part in _TEST_DIRS for part in p.parts[:-1]):
            return True
        n = p.name
        return n == "conftest.py" or (
            n.endswith(".py") and (n.startswith("test_") or n.endswith("_test.py"))
        )

    # ---- install recipe -------------------------------------------------------------------
    def test_extras(self, repo_dir: Path) -> list[str]:
        """Extras named like test dependencies, from pyproject.toml or setup.cfg."""
        declared: set[str] = set()
        pyproject = repo_dir / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = tomllib.loads(pyproject.read_text(errors="replace"))
            except tomllib.TOMLDecodeError:
                data = {}
            declared |= set((data.get("project") or {}).get("optional-dependencies") or {})
            poetry = ((data.get("tool") or {}).get("poetry") or {}).get("extras") or {}
            declared |= set(poetry)
        cfg = repo_dir / "setup.cfg"
        if cfg.is_file():
            parser = configparser.ConfigParser(interpolation=None)
            try:
                parser.read_string(cfg.read_text(errors="replace"))
                if parser.has_section("options.extras_require"):
                    declared |= set(parser["options.extras_require"])
            except configparser.Error:
                pass
        setup_py = repo_dir / "setup.py"
        if setup_py.is_file():
            # extras_require keys written as literals: {"tests": [...]} / tests=[...]
            text = setup_py.read_text(errors="replace")
            if "extras_require" in text:
                declared |= {m for m in re.findall(r"""["'](\w[\w-]*)["']\s*:""", text)}
        return [e for e in _TEST_EXTRAS if e in declared]

    def test_groups(self, repo_dir: Path) -> list[str]:
        """PEP 735 dependency groups named like test dependencies (`pip install --group`)."""
        pyproject = repo_dir / "pyproject.toml"
        if not pyproject.is_file():
            return []
        try:
            groups = tomllib.loads(pyproject.read_text(errors="replace")).get("dependency-groups") or {}
        except tomllib.TOMLDecodeError:
            return []
        return [g for g in _TEST_EXTRAS if g in groups]

    def requirement_files(self, repo_dir: Path) -> list[str]:
        found: list[str] = []
        for pattern in _REQ_GLOBS:
            for f in sorted(repo_dir.glob(pattern)):
                rel = f.relative_to(repo_dir).as_posix()
                if f.is_file() and rel not in found:
                    found.append(rel)
        return found

    def tox_deps(self, repo_dir: Path) -> list[str]:
        """Plain requirement lines from tox.ini's [testenv] deps (no substitutions, no -r)."""
        tox = repo_dir / "tox.ini"
        if not tox.is_file():
            return []
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(tox.read_text(errors="replace"))
        except configparser.Error:
            return []
        if not parser.has_option("testenv", "deps"):
            return []
        deps = []
        for line in parser.get("testenv", "deps").splitlines():
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith("-") and not re.search(r"[{}:]", line):
                deps.append(line)
        return deps

    def install_steps(self, repo_dir: Path) -> list[str]:
        """Dockerfile RUN lines (run in /testbed) that install the project and its tests' deps."""
        repo_dir = Path(repo_dir)
        steps: list[str] = []
        for req in self.requirement_files(repo_dir):
            steps.append(f"RUN {PIP} -r {shlex.quote(req)}")
        installable = any(
            (repo_dir / f).is_file() for f in ("pyproject.toml", "setup.py", "setup.cfg")
        )
        if installable:
            extras = self.test_extras(repo_dir)
            target = "." + (f"[{','.join(extras)}]" if extras else "")
            steps.append(f"RUN {PIP} -e {shlex.quote(target)}")
        for group in self.test_groups(repo_dir)[:1]:  # pip >= 25.1
            steps.append(f"RUN {PIP} --group {shlex.quote(group)}")
        deps = self.tox_deps(repo_dir)
        if deps:
            steps.append(f"RUN {PIP} " + " ".join(shlex.quote(d) for d in deps))
        # pytest last: whatever the project pins wins when it is compatible.
        steps.append(f"RUN python3 -m pytest --version >/dev/null 2>&1 || {PIP} pytest")
        return steps

    # ---- tests ----------------------------------------------------------------------------
    def test_command(self, test_files: list[str], junit_path: str) -> str:
        # xunit1 writes the `file` attribute: node ids come from it, not from guessing paths.
        args = [
            "python3",
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-rA",
            "--tb=short",
            "-o",
            "junit_family=xunit1",
            f"--junitxml={junit_path}",
        ]
        return " ".join(shlex.quote(a) for a in args + list(test_files))

    def parse_results(self, junit_xml: bytes) -> dict[str, str]:
        """JUnit XML (pytest's) -> {node id: passed|failed|error|skipped}.

        defusedxml: the file is written by code under test and may be hostile (entity bombs)."""
        root = ElementTree.fromstring(junit_xml)
        out: dict[str, str] = {}
        for case in root.iter("testcase"):
            node = _node_id(case.get("classname") or "", case.get("name") or "", case.get("file"))
            if not node:
                continue
            tags = {child.tag for child in case}
            status = (
                "error"
                if "error" in tags
                else "failed"
                if "failure" in tags
                else "skipped"
                if "skipped" in tags
                else "passed"
            )
            prev = out.get(node)
            if prev is None or _SEVERITY[status] > _SEVERITY[prev]:
                out[node] = status
        return out


def _node_id(classname: str, name: str, file: str | None) -> str:
    """pytest node id `path::Class::test[param]` from a JUnit testcase.

    classname is the dotted module path plus classes (`tests.test_x.TestA`); with `file`
    (xunit1) the module part is known exactly and the rest are classes."""
    if not name:
        return ""
    parts = classname.split(".") if classname else []
    if file:
        path = PurePosixPath(file.replace("\\", "/"))
        module = list(path.with_suffix("").parts)
        if parts[: len(module)] == module:
            classes = parts[len(module) :]
        else:  # rootdir differs from the classname's root: classes are the capitalised tail
            classes = _class_tail(parts)
        return "::".join([path.as_posix(), *classes, name])
    classes = _class_tail(parts)
    module = parts[: len(parts) - len(classes)]
    return "::".join(["/".join(module) + ".py", *classes, name])


def _class_tail(parts: list[str]) -> list[str]:
    tail: list[str] = []
    for p in reversed(parts):
        if p[:1].isupper():
            tail.insert(0, p)
        else:
            break
    return tail


PYTHON = PythonLanguage()
LANGUAGES: dict[str, Language] = {"python": PYTHON}


def language_for(repo_dir: Path) -> Language:
    """The language of a checked-out repository (Python when it has Python packaging or code)."""
    repo_dir = Path(repo_dir)
    markers = ("pyproject.toml", "setup.py", "setup.cfg", "tox.ini")
    if any((repo_dir / m).is_file() for m in markers) or next(repo_dir.rglob("*.py"), None):
        return PYTHON
    raise LookupError(
        f"{repo_dir}: no supported language found (Python needs pyproject.toml, setup.py, "
        "setup.cfg or .py files)"
    )
