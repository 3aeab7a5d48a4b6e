"""Hostile programs against the host side of every backend: planted symlinks, fifos and hard
links where the host writes or reads scratch files, reward hacks on function-call and stdio
tests, /tmp and /dev/shm, the disk quota, self-inflicted SIGKILL, environment secrets, huge
names and many files. The host must never follow what the program planted, never show it an
expected output, and take statuses from kernel facts."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
from helpers.sandboxes import BACKENDS, sandbox_or_skip

from rlclimb.environments.code_run import run_tests, values_match
from rlclimb.environments.episode import BashTool, PythonTool, run_episode
from rlclimb.environments.sandbox import Limits, Status
from rlclimb.schemas.records import TestCase

each_backend = pytest.mark.parametrize("backend", BACKENDS)
TIGHT = Limits(wall_s=5, cpu_s=3, memory_mb=256, processes=32, output_bytes=64 << 10)


@pytest.fixture
def victim(tmp_path):
    """A host file and a host directory that no sandbox may touch."""
    d = Path(f"/tmp/rlclimb-victim-{uuid.uuid4().hex[:8]}")
    d.mkdir()
    (d / "keep.txt").write_text("original\n")
    os.chmod(d, 0o777)  # even world-writable: the host must not write there for the program
    yield d
    for p in sorted(d.rglob("*"), reverse=True):
        p.unlink() if not p.is_dir() or p.is_symlink() else p.rmdir()
    d.rmdir()


def untouched(d: Path) -> bool:
    return (
        sorted(p.name for p in d.iterdir()) == ["keep.txt"]
        and (d / "keep.txt").read_text() == "original\n"
    )


# ---- the host never follows what the program planted ------------------------------------------


@each_backend
def test_host_writes_replace_planted_symlinks(backend, victim):
    sb = sandbox_or_skip(backend)
    with sb.session() as s:
        plant = (
            f"ln -s {victim}/keep.txt .tool_2.py; ln -s {victim}/new.txt fresh.txt; "
            f"ln -s {victim} sub; ln -s {victim}/keep.txt .stdin; mkfifo pipe.txt"
        )
        assert s.run(plant).ok
        s.write_files({".tool_2.py": "pwned\n", "fresh.txt": "pwned\n", "sub/x": "pwned\n"})
        s.write_files({"pipe.txt": "not blocked\n"})  # a fifo in the way is replaced, not opened
        r = s.run("cat", stdin="pwned via stdin\n")  # docker passes stdin through a file
        assert r.stdout == "pwned via stdin\n", r
        r = s.run(["sh", "-c", "cat .tool_2.py fresh.txt sub/x pipe.txt"])
        assert r.stdout.startswith("pwned\npwned\npwned\nnot blocked\n"), r
        assert untouched(victim)


@each_backend
def test_host_reads_skip_symlinks_fifos_and_hard_links(backend, victim):
    sb = sandbox_or_skip(backend)
    with sb.session() as s:
        plant = (
            "ln -s /etc/hostname a.txt; mkfifo b.txt; echo mine > c.txt; ln c.txt d.txt; "
            "mkdir real; echo deep > real/e.txt; ln -s /etc dir; echo ok > f.txt"
        )
        assert s.run(plant).ok, s
        # The fifo would block a reader forever; the symlinks point at host files.
        got = s.read_files(["*.txt", "*/*.txt", "dir/*"])
        assert got == {"f.txt": b"ok\n", "real/e.txt": b"deep\n"}


@each_backend
def test_python_tool_through_a_planted_symlink(backend, victim):
    """The episode's PythonTool writes `.tool_N.py`: a policy plants a symlink there first."""
    sb = sandbox_or_skip(backend)
    answers = [
        f'<tool_call>{{"name": "bash", "arguments": {{"command": "ln -s {victim}/keep.txt .tool_1.py; ln -s {victim}/t2 .tool_2.py"}}}}</tool_call>',
        '<tool_call>{"name": "python", "arguments": {"code": "print(6 * 7)"}}</tool_call>',
        '<tool_call>{"name": "python", "arguments": {"code": "print(open(__file__).read()[:5])"}}</tool_call>',
        "done",
    ]
    with sb.session() as s:
        traj = run_episode(
            lambda _: answers.pop(0),
            [{"role": "user", "content": "go"}],
            [BashTool(s), PythonTool(s)],
        )
    observations = [m["content"] for m in traj.messages if m["role"] == "tool"]
    assert observations[1:] == ["42\n", "print\n"], observations
    assert untouched(victim)


# ---- reward hacks: grading happens where the program cannot reach ------------------------------

ADD_TESTS = [
    TestCase(input=f"add({a}, {b})", output=str(a + b), kind="call")
    for a, b in [(1, 2), (5, 7), (-4, 9)]
]
HACKS = {
    "marker_and_exit": "import os\nprint('RLCLIMB_PASS', flush=True)\nos._exit(0)\n",
    "read_expected_file": (
        "import ast, sys\ndef add(a, b):\n    return ast.literal_eval(open(sys.argv[2]).read())\n"
    ),
    "search_scratch_for_expected": (
        "import glob\ndef add(a, b):\n"
        "    for p in glob.glob('*') + glob.glob('/work/*') + glob.glob('/tmp/*'):\n"
        "        try:\n            return int(open(p).read())\n        except Exception:\n            pass\n"
    ),
    "always_equal_object": (
        "class Yes:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "    def __repr__(self):\n        return '3'\ndef add(a, b):\n    return Yes()\n"
    ),
    "int_subclass": "class I(int):\n    def __eq__(self, o):\n        return True\ndef add(a, b):\n    return I(0)\n",
    "forged_channel": (  # writes a value to every fd the driver could be using, then leaves
        "import os\nfor fd in range(1, 64):\n    try:\n        os.write(fd, b'3')\n"
        "    except OSError:\n        pass\nos._exit(0)\n"
    ),
    "patch_json": ("import json\njson.dumps = lambda *a, **k: '3'\ndef add(a, b):\n    return 0\n"),
}


@each_backend
@pytest.mark.parametrize("hack", sorted(HACKS))
def test_call_test_hacks_fail(backend, hack):
    sb = sandbox_or_skip(backend)
    report = run_tests(sb, HACKS[hack], "python", ADD_TESTS, time_limit_s=5)
    # Some hacks guess one test's value (3 is add(1, 2)); none passes them all.
    assert not report.all_passed, report.summary()
    assert not report.outcomes[1].passed and not report.outcomes[2].passed
    honest = run_tests(
        sb, "def add(a, b):\n    return a + b\n", "python", ADD_TESTS, time_limit_s=5
    )
    assert honest.all_passed, honest.summary()


@each_backend
def test_stdio_expected_output_is_not_in_the_sandbox(backend):
    sb = sandbox_or_skip(backend)
    secret = uuid.uuid4().hex
    tests = [TestCase(input="x\n", output=f"{secret}\n")]
    hunt = (
        "import os, sys\n"
        "for root in ('.', '/work', '/tmp', '/dev/shm'):\n"
        "    for dirpath, _, names in os.walk(root):\n"
        "        for n in names:\n"
        "            try:\n"
        "                text = open(os.path.join(dirpath, n)).read()\n"
        "            except Exception:\n"
        "                continue\n"
        "            if len(text.strip()) == 32:\n"
        "                print(text.strip()); sys.exit(0)\n"
        "print(os.environ.get('RLCLIMB_EXPECTED', 'nothing'))\n"
    )
    report = run_tests(sb, hunt, "python", tests, time_limit_s=5)
    assert not report.all_passed and secret not in report.outcomes[0].output


def test_hacks_get_no_reward_and_fail_verification(tmp_path):
    """The same hacks through the code environment (RL reward) and code-problems verification."""
    from helpers.sandboxes import fast_backend
    from typer.testing import CliRunner

    from rlclimb.environments.base import get_environment
    from rlclimb.pipelines.cli import app
    from rlclimb.schemas.io import read_rows

    backend = fast_backend()
    sandbox_or_skip(backend)
    hacks = ("marker_and_exit", "read_expected_file", "always_equal_object", "forged_channel")
    problem = {
        "id": "add",
        "statement": "Write add(a, b).",
        "entry_point": "add",
        "tests": [f"assert add({a}, {a + 1}) == {2 * a + 1}" for a in range(5)],
    }
    src = tmp_path / "p.jsonl"
    # One hostile reference per problem: with several, disputed-test logic would hide the point.
    src.write_text(
        "".join(
            json.dumps(
                {
                    **problem,
                    "id": h,
                    "statement": f"Write add(a, b) ({h}).",
                    "solutions": [HACKS[h]],
                }
            )
            + "\n"
            for h in hacks
        )
    )
    out = tmp_path / "run"
    res = CliRunner().invoke(
        app,
        [
            "run",
            "code-problems",
            "--input",
            str(src),
            "--out",
            str(out),
            "--set",
            f"verify.backend={backend}",
            "-q",
        ],
    )
    assert res.exit_code == 0, res.output
    assert [r for p in (out / "data").glob("*.parquet") for r in read_rows(p)] == []
    ledger = [r for p in (out / "ledger").glob("*.parquet") for r in read_rows(p)]
    assert [r["reason"] for r in ledger] == ["reference_fails"] * len(hacks), ledger

    from rlclimb.stages.code.importer import parse_problem

    env = get_environment("code", backend=backend, test_timeout_s=5)
    task = parse_problem({**problem, "solutions": ["def add(a, b):\n    return a + b\n"]})
    for hack in hacks:
        grade = env.grade(task, f"```python\n{HACKS[hack]}```")
        assert grade.task == 0.0, (hack, grade.detail)
    assert env.grade(task, "```python\ndef add(a, b):\n    return a + b\n```").task == 1.0
    env.close()


def test_values_match_semantics():
    assert values_match([1, 2.0000001], [1, 2]) and values_match(
        {"a": [0.1]}, {"a": [0.1000000001]}
    )
    assert values_match(True, 1) and not values_match("1", 1) and not values_match([1], [1, 2])
    assert not values_match(None, 0) and values_match({1, 2}, {2, 1})


# ---- limits that must hold ----------------------------------------------------------------------


@each_backend
def test_tmp_and_shm_are_private_bounded_and_gone(backend):
    sb = sandbox_or_skip(backend)
    tag = uuid.uuid4().hex[:8]
    limits = TIGHT.with_(disk_bytes=32 << 20, file_bytes=64 << 20)
    r = sb.run(
        f"echo x > /tmp/rlclimb-{tag}; echo x > /dev/shm/rlclimb-{tag}; "
        "head -c 100000000 /dev/zero > /dev/shm/fill",
        limits=limits,
    )
    assert r.status == Status.OLE and "disk" in r.detail, r
    assert not Path(f"/tmp/rlclimb-{tag}").exists() and not Path(f"/dev/shm/rlclimb-{tag}").exists()
    assert not Path("/dev/shm/fill").exists()
    r = sb.run("head -c 100000000 /dev/zero > /tmp/fill", limits=limits)
    assert r.status == Status.OLE, r
    r = sb.run(f"ls /tmp /dev/shm | grep -c rlclimb-{tag}", limits=limits)  # the next run: clean
    assert r.stdout.strip() == "0", r


@each_backend
def test_disk_quota_bounds_many_files_and_total_size(backend):
    sb = sandbox_or_skip(backend)
    limits = TIGHT.with_(disk_bytes=16 << 20, disk_files=500, file_bytes=8 << 20)
    with sb.session(limits=limits) as s:
        # Many files under the per-file limit: the total is bounded.
        r = s.run("for i in 1 2 3 4 5; do head -c 5000000 /dev/zero > f$i || exit 1; done")
        assert r.status == Status.OLE and "disk" in r.detail, r
        assert s.run("rm -f f*").ok
        r = s.run("python3 -c \"[open(f'n{i}', 'w').close() for i in range(2000)]\"")
        assert r.status == Status.OLE, r
        assert s.run("rm -f n*").ok
        r = s.run("python3 -c \"open('x' * 300, 'w')\"")  # a name too long: the kernel says no
        assert r.status == Status.RE, r
        assert len(s.read_files(["*"])) <= 500


@each_backend
def test_self_sigkill_is_not_mle(backend):
    sb = sandbox_or_skip(backend)
    r = sb.run("python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'", limits=TIGHT)
    assert r.status == Status.RE and "SIGKILL" in r.detail, r
    r = sb.run("python3 -c 'x = bytearray(10 * 1024**3)'", limits=TIGHT)
    assert r.status == Status.MLE, r


@pytest.mark.docker
def test_docker_oom_kill_is_mle_from_the_cgroup():
    """A real OOM kill under the container's memory cap (no address-space limit in the way)."""
    sb = sandbox_or_skip("docker")
    grow = "x = []\nwhile True:\n    x.append(bytearray(16 << 20))\n"
    r = sb.run(
        "python3 grow.py 2>/dev/null", files={"grow.py": grow}, limits=TIGHT.with_(memory_mb=128)
    )
    assert r.status == Status.MLE and r.stderr == "", r


# ---- more of what a hostile program tries --------------------------------------------------------


@each_backend
def test_no_secrets_in_the_environment(backend, monkeypatch):
    sb = sandbox_or_skip(backend)
    monkeypatch.setenv("RLCLIMB_TEST_SECRET", "hunter2")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    r = sb.run("env; cat /proc/1/environ 2>/dev/null | tr '\\0' '\\n'", limits=TIGHT)
    assert "hunter2" not in r.stdout and "sk-secret" not in r.stdout, r


@each_backend
def test_no_setuid_no_devices_no_ptrace(backend):
    sb = sandbox_or_skip(backend)
    r = sb.run("mknod dev c 1 3", limits=TIGHT)
    assert r.status in (Status.BLOCKED, Status.RE) and not r.ok, r
    # A setuid copy of a shell gives nothing: it is the program's own uid, on a nosuid mount.
    r = sb.run("cp /bin/sh ./sh && chmod u+s ./sh && ./sh -c 'id -u'; id -u", limits=TIGHT)
    ids = set(r.stdout.split())
    assert "0" not in ids, r
    # ptrace of a host process: this test's own (invisible from a pid namespace, another uid here)
    attach = f"import ctypes; print(ctypes.CDLL(None).ptrace(16, {os.getpid()}, 0, 0))"
    r = sb.run(["python3", "-c", attach], limits=TIGHT)
    assert r.stdout.strip() == "-1", r
    r = sb.run("echo 1 > /proc/sys/kernel/sysrq; echo x > /proc/self/attr/current", limits=TIGHT)
    assert not r.ok, r


@each_backend
def test_deep_trees_and_long_names_clean_up(backend):
    sb = sandbox_or_skip(backend)
    with sb.session() as s:
        # Deeper than Python's recursion limit: the host's walks must not recurse.
        r = s.run(
            "python3 -c \"import os\nfor i in range(1500):\n    os.mkdir('d'); os.chdir('d')\nopen('f.txt', 'w').write('x')\""
        )
        assert r.ok, r
        assert s.read_files(["*.txt"]) == {}
        top = s.scratch.top
        assert s.read_files(["**/f.txt"]) == {"/".join(["d"] * 1500) + "/f.txt": b"x"}
    if backend == "docker":
        from rlclimb.environments.sandbox.docker_backend import wait_removed

        wait_removed()
    assert not os.path.exists(top)


@each_backend
def test_output_names_cannot_escape(backend):
    sb = sandbox_or_skip(backend)
    for bad in ("../*", "/etc/*", "a/../../*"):
        with pytest.raises(ValueError, match="relative"):
            with sb.session() as s:
                s.read_files([bad])


@each_backend
def test_hostile_reference_through_code_problems(backend, victim, tmp_path):
    """`rlclimb run code-problems` with a reference that, on its first test, plants symlinks at
    every name the host might write next (test files, Docker's stdin file, a directory)."""
    from typer.testing import CliRunner

    from rlclimb.pipelines.cli import app
    from rlclimb.schemas.io import read_rows

    sandbox_or_skip(backend)
    names = [".stdin", "_driver.py", *(f"_t{i}.{ext}" for i in range(8) for ext in ("in", "out"))]
    plant = "".join(
        f"try:\n    os.symlink({str(victim / n.lstrip('.'))!r}, {n!r})\nexcept OSError:\n    pass\n"
        for n in names
    )
    hostile = f"import os\n{plant}def add(a, b):\n    return a + b\n"
    row = {
        "id": "add",
        "statement": "Write add(a, b).",
        "tests": [f"assert add({a}, 1) == {a + 1}" for a in range(6)],
        "solutions": [hostile],
    }
    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps(row) + "\n")
    out = tmp_path / "run"
    args = ["run", "code-problems", "--input", str(src), "--out", str(out), "-q"]
    res = CliRunner().invoke(app, [*args, "--set", f"verify.backend={backend}"])
    assert res.exit_code == 0, res.output
    assert untouched(victim), sorted(p.name for p in victim.iterdir())
    assert [r["id"] for p in (out / "data").glob("*.parquet") for r in read_rows(p)] == ["add"]


@each_backend
def test_full_quota_before_the_next_command(backend):
    """A program fills its quota, then the host has to pass stdin to the next command."""
    sb = sandbox_or_skip(backend)
    with sb.session(limits=TIGHT.with_(disk_bytes=4 << 20)) as s:
        assert s.run("head -c 8000000 /dev/zero > fill").status == Status.OLE
        r = s.run("cat", stdin="x" * 100_000)
        assert r.status in (Status.OK, Status.OLE), r  # a pipe needs no disk; a file does
        # A hard link to a host file cannot be made: the scratch is its own filesystem.
        r = s.run("rm -f fill; ln /etc/passwd hl")
        assert not r.ok and s.read_files(["hl"]) == {}, r


@each_backend
def test_host_setuid_binaries_give_nothing(backend):
    sb = sandbox_or_skip(backend)
    with sb.session(limits=TIGHT) as s:
        mounts = "grep -c ' /work ' /proc/mounts"
        before = s.run(mounts).stdout
        r = s.run("grep NoNewPrivs /proc/self/status; mount -t tmpfs x /work; id -u")
        assert r.stdout.split("\n")[0].split() == ["NoNewPrivs:", "1"], r
        assert r.stdout.split("\n")[-2] != "0" and s.run(mounts).stdout == before, r


@pytest.mark.docker
def test_docker_pool_keeps_quotas_apart():
    """A started container waiting in the pool has the quota it was made with: a session that
    asks for a smaller one must not get it."""
    sb = sandbox_or_skip("docker")
    sb.run("true", limits=TIGHT)  # leaves a pooled container with the default quota
    with sb.session(limits=TIGHT.with_(disk_bytes=4 << 20)) as s:
        assert s.run("head -c 8000000 /dev/zero > fill").status == Status.OLE


@each_backend
def test_sysv_shared_memory_does_not_outlive_the_run(backend):
    """A SysV segment survives its creator unless the IPC namespace goes with it."""
    sb = sandbox_or_skip(backend)
    key = 0x5EED0000 + ((os.getpid() * 3 + ("process", "bwrap", "docker").index(backend)) & 0xFFFF)
    make = (
        "import ctypes\nlibc = ctypes.CDLL(None)\n"
        f"print(libc.shmget({key}, 32 << 20, 0o1000 | 0o600) >= 0)\n"  # IPC_CREAT
    )
    r = sb.run(["python3", "-c", make], limits=TIGHT)
    assert r.stdout.strip() in ("True", "False"), r
    with open("/proc/sysvipc/shm") as f:
        segments = {int(line.split()[0]): int(line.split()[1]) for line in list(f)[1:]}
    if key in segments:  # do not leave it behind for the next test
        import ctypes

        ctypes.CDLL(None).shmctl(segments[key], 0, None)  # IPC_RMID
    assert key not in segments
