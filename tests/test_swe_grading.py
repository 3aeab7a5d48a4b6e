"""SWE grading on a real instance image (tests/helpers/swe_fixture_image.py) built by the real
engine: F2P/P2P extraction, flaky tests over trials, gold and empty patches, hostile patches that
plant a symlink, a huge or a garbled file at the JUnit path, the eval script."""

from __future__ import annotations

import subprocess

import pytest
from helpers.sandboxes import sandbox_or_skip
from helpers.swe_fixture_image import F2P, FLAKY, GOLD, P2P, build_instance

from rlclimb.environments.swe import grading

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="session")
def fixture_instance(tmp_path_factory):
    sandbox_or_skip("docker")
    return build_instance(tmp_path_factory.mktemp("swe-grading"))


def _without_flaky(instance: dict) -> dict:
    """The instance's test diff minus tests/test_flaky.py (deterministic runs)."""
    sections = instance["test_patch"].split("diff --git ")
    kept = [s for s in sections if s and not s.startswith("a/tests/test_flaky.py")]
    return {**instance, "test_patch": "".join("diff --git " + s for s in kept)}


HOOK = """

import atexit as _a, os as _o, sys as _s


def _evil():
    for arg in _s.argv:
        if arg.startswith("--junitxml="):
            p = arg.split("=", 1)[1]
{body}


_a.register(_evil)
"""


def _hostile_fix(fx, body: str) -> str:
    """The gold fix plus code that, once calc is imported under pytest, does `body` to the JUnit
    file at interpreter exit (after pytest wrote it): what a hostile patch could do."""
    code = GOLD["calc/__init__.py"] + HOOK.format(
        body="".join(f"            {line}\n" for line in body.splitlines())
    )
    return fx.patch({"calc/__init__.py": code})


def test_reference_signal_extracts_f2p_and_p2p(fixture_instance):
    fx = fixture_instance
    image, instance = fx.image, fx.instance
    f2p, p2p = grading.reference_signal(image, _without_flaky(instance))
    assert f2p == sorted(F2P)
    assert p2p == P2P


def test_empty_patch_fails_and_gold_passes(fixture_instance):
    fx = fixture_instance
    image, instance = fx.image, fx.instance
    inst = _without_flaky(instance)
    empty = grading.run_tests(image, inst, patch="")
    gold = grading.run_tests(image, inst, patch=inst["patch"])
    assert not empty.error and not gold.error
    assert {t: empty.statuses[t] for t in F2P} == dict.fromkeys(F2P, "failed")
    assert all(gold.statuses[t] == "passed" for t in F2P + P2P)
    assert "tests/test_calc.py::test_add" in empty.statuses  # P2P passes before too
    assert empty.statuses["tests/test_calc.py::test_add"] == "passed"


def test_verify_drops_flaky_tests(fixture_instance):
    """Eight coin-flip tests: with three gold trials each stays the same with p = 1/4, so at
    least one of them varies (and is dropped) except with p = 1/4^8; the real tests never do."""
    fx = fixture_instance
    image, instance = fx.image, fx.instance
    inst = {k: v for k, v in instance.items() if k not in ("FAIL_TO_PASS", "PASS_TO_PASS")}
    v = grading.verify(image, inst, trials=3)
    assert v.ok, v.reason
    assert v.flaky and set(v.flaky) <= FLAKY
    assert set(F2P) <= set(v.fail_to_pass) <= set(F2P) | FLAKY
    assert not set(v.flaky) & set(v.fail_to_pass)
    assert v.pass_to_pass == P2P
    assert "flaky" in v.reason


def test_verify_with_given_signal_and_no_f2p_left(fixture_instance):
    fx = fixture_instance
    image, instance = fx.image, fx.instance
    inst = _without_flaky(instance)
    v = grading.verify(image, inst, trials=1)
    assert v.ok and v.fail_to_pass == F2P and v.pass_to_pass == P2P and not v.flaky
    # A claimed F2P test that passes with the empty patch is no F2P test: nothing left.
    claimed = {**inst, "FAIL_TO_PASS": ["tests/test_calc.py::test_add"], "PASS_TO_PASS": []}
    v = grading.verify(image, claimed, trials=1)
    assert not v.ok and "no FAIL_TO_PASS" in v.reason


def test_patch_that_does_not_apply_is_a_setup_error(fixture_instance):
    fx = fixture_instance
    image, instance = fx.image, fx.instance
    bad = instance["patch"].replace("-    return a + b", "-    return a ** b")
    run = grading.run_tests(image, instance, patch=bad)
    assert run.setup_error == "patch does not apply" and run.statuses == {}
    v = grading.verify(image, {**instance, "patch": bad}, trials=1)
    assert not v.ok and "does not apply" in v.reason


@pytest.mark.parametrize(
    "body, expect",
    [
        # A symlink at the JUnit path to a file the host must not read (its own /etc/passwd
        # resolves inside the container anyway; the engine reports the link, not its target).
        ("_o.remove(p)\n_o.symlink('/etc/passwd', p)", "not a regular file"),
        # A sparse 600 MB file: refused from the archive header, nothing of it is read.
        ("f = open(p, 'wb')\nf.truncate(600 << 20)\nf.close()", "over the"),
        ("open(p, 'w').write('<testsuite><testcase name=')", "unreadable JUnit XML"),
        ("_o.remove(p)", "not written"),
        ("_o.remove(p)\n_o.mkdir(p)", "not a regular file"),
    ],
    ids=["symlink", "huge", "garbled", "missing", "directory"],
)
def test_hostile_junit_is_an_error_not_a_pass(fixture_instance, body, expect):
    fx = fixture_instance
    image, instance = fx.image, fx.instance
    inst = _without_flaky(instance)
    run = grading.run_tests(image, inst, patch=_hostile_fix(fx, body))
    assert run.statuses == {}
    assert expect in run.error
    # The same patch without the hook would pass: the hook is what broke the results.
    assert "passed" in run.log  # pytest ran and printed (the log is for people only)


def test_writable_layer_is_capped(fixture_instance, monkeypatch):
    """Filling the container's own layer (no engine quota here) gets the container killed, and a
    patch whose tests do that gets an error, not results."""
    fx = fixture_instance
    monkeypatch.setattr(grading, "LAYER_MAX_BYTES", 40 << 20)
    session = grading.open_container(fx.image)
    try:
        assert session.run("dd if=/dev/zero of=/root/small bs=1M count=5 2>/dev/null").ok
        r = session.run(
            "for i in $(seq 1 30); do dd if=/dev/zero of=/root/f$i bs=1M count=10 2>/dev/null;"
            " sleep 0.1; done"
        )
        assert not r.ok and "over its cap" in session.layer_exceeded
    finally:
        session.close()
    fill = (
        "\nimport time\nwith open('/root/fill', 'wb') as f:\n    for _ in range(400):\n"
        "        f.write(bytes(1 << 20))\n        f.flush()\n        time.sleep(0.01)\n"
    )
    hostile = fx.patch({"calc/__init__.py": GOLD["calc/__init__.py"] + fill})
    run = grading.run_tests(fx.image, _without_flaky(fx.instance), patch=hostile)
    assert run.statuses == {} and "over its cap" in run.error


def test_read_file_cap_and_regular_files(fixture_instance):
    image = fixture_instance.image
    session = grading.open_container(image)
    try:
        session.run(
            "printf 'x%.0s' $(seq 1 5000) > /tmp/big; ln -s /testbed/calc/__init__.py /tmp/link"
        )
        assert len(grading.read_file(session, "/tmp/big")) == 5000
        with pytest.raises(grading.GradingError, match="over the 1000-byte cap"):
            grading.read_file(session, "/tmp/big", max_bytes=1000)
        with pytest.raises(grading.GradingError, match="not a regular file"):
            grading.read_file(session, "/tmp/link")
        assert b"def add" in grading.read_file(session, "/testbed/calc/__init__.py")
    finally:
        session.close()


def test_container_is_offline_and_unprivileged(fixture_instance):
    image = fixture_instance.image
    session = grading.open_container(image)
    try:
        r = session.run(
            "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\""
        )
        assert not r.ok and "unreachable" in r.stderr.lower()
        r = session.run("grep CapEff /proc/self/status")
        assert r.stdout.split()[1] == "0000000000000000"
        # Root of the container, but without CAP_KILL: the main process is out of its reach.
        r = session.run("kill -9 1; echo $?")
        assert r.stdout.strip() == "1"
        assert session.run("true").ok  # the container is still there
    finally:
        session.close()


def test_eval_script_grades_in_the_image(fixture_instance, tmp_path):
    """The stored eval script, run by hand in the image after the gold patch: the tests pass
    (exit 0); after the empty patch they fail (exit 1)."""
    fx = fixture_instance
    image, instance = fx.image, fx.instance
    inst = _without_flaky(instance)
    script = grading.eval_script(inst)
    assert "git apply" in script and "--junitxml=/tmp/junit.xml" in script
    for patch, expect in ((inst["patch"], 0), ("", 1)):
        apply = f"cd /testbed && printf %s {_sq(patch)} | git apply - && " if patch else ""
        cmd = f"{apply}bash -c {_sq(script)}"
        r = subprocess.run(
            ["docker", "run", "--rm", "--network", "none", image, "bash", "-c", cmd],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == expect, r.stdout[-2000:] + r.stderr[-2000:]
        assert ("3 failed" in r.stdout) == (expect == 1)


def _sq(text: str) -> str:
    import shlex

    return shlex.quote(text)


def test_diff_files_and_run_list(fixture_instance):
    instance = fixture_instance.instance
    assert grading.diff_files(instance["test_patch"]) == [
        "tests/test_calc.py",
        "tests/test_flaky.py",
    ]
    assert grading.files_to_run(instance) == ["tests/test_calc.py", "tests/test_flaky.py"]
    assert grading.is_framework_file("pkg/conftest.py") and grading.is_framework_file("x.pth")
    gone = {
        **instance,
        "test_patch": instance["test_patch"]
        + "diff --git a/tests/test_old.py b/tests/test_old.py\ndeleted file mode 100644\n"
        "--- a/tests/test_old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n",
    }
    assert grading.files_to_run(gone) == ["tests/test_calc.py", "tests/test_flaky.py"]


def test_verify_takes_candidates_from_every_trial(monkeypatch):
    """The aggregation alone, over recorded runs (the containers are the real test above): a test that passes
    with the gold patch in the second trial only is flaky, not missed because the first trial failed it."""
    runs = iter([
        grading.TestRun({"t::fix": "failed", "t::coin": "failed"}, ""), grading.TestRun({"t::fix": "passed", "t::coin": "failed"}, ""),
        grading.TestRun({"t::fix": "failed", "t::coin": "failed"}, ""), grading.TestRun({"t::fix": "passed", "t::coin": "passed"}, ""),
        grading.TestRun({"t::fix": "failed", "t::coin": "failed"}, ""), grading.TestRun({"t::fix": "passed", "t::coin": "failed"}, ""),
    ])  # empty, gold, empty, gold, ...
    monkeypatch.setattr(grading, "run_tests", lambda image, instance, patch: next(runs))
    v = grading.verify("unused", {"instance_id": "x", "patch": "diff"}, trials=3)
    assert v.ok and v.fail_to_pass == ["t::fix"] and v.flaky == ["t::coin"]
