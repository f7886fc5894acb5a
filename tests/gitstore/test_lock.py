"""The project lock, with real processes: exclusion, stale reclaim, bounded waits, safe release."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmwiki_git.errors import LlmwikiError, LockBusy
from llmwiki_git.gitstore.lock import ProjectLock, parse_owner, pid_alive, process_start_time

HAS_PROC = process_start_time(os.getpid()) is not None


@pytest.fixture
def state(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project / ".llmwiki"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not pid_alive(proc.pid)
    return proc.pid


def _write_record(state: Path, **record: object) -> Path:
    state.mkdir(parents=True, exist_ok=True)
    lock = state / "lock"
    lock.write_text(json.dumps(record))
    return lock


def _record(lock: Path) -> dict[str, object]:
    data = json.loads(lock.read_text())
    assert isinstance(data, dict)
    return data


HOLDER = """
import sys, time
from pathlib import Path
from llmwiki_git.gitstore.lock import ProjectLock
with ProjectLock(Path(sys.argv[1]), timeout=30, command=sys.argv[2]):
    print("held", flush=True)
    sys.stdin.read()  # hold until the test closes stdin (or kills us)
"""


def _spawn_holder(state: Path, command: str = "llmwiki query --save demo") -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(state), command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "held\n"
    return proc


def _stop(proc: subprocess.Popen[str] | subprocess.Popen[bytes]) -> None:
    """Kill (if still running), reap, and close the pipes of a helper process."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def test_record_names_owner_and_release_removes_it(state: Path) -> None:
    with ProjectLock(state, command="llmwiki query --save x") as lock:
        assert lock.held
        record = _record(state / "lock")
        assert list(record) == ["pid", "startTime", "host", "command"]
        assert record["pid"] == os.getpid()
        assert record["host"] == socket.gethostname()
        assert record["command"] == "llmwiki query --save x"
        if HAS_PROC:
            assert record["startTime"] == process_start_time(os.getpid())
    assert not (state / "lock").exists()
    assert not lock.held


#: Takes the lock once with no wait; prints "got" or "busy <holder pid>".
TRY_ONCE = """
import sys
from pathlib import Path
from llmwiki_git.errors import LockBusy
from llmwiki_git.gitstore.lock import ProjectLock
try:
    with ProjectLock(Path(sys.argv[1]), timeout=0):
        print("got", flush=True)
except LockBusy as exc:
    print("busy", exc.owner.pid if exc.owner else None, flush=True)
"""


def test_a_held_lock_refuses_other_processes(state: Path) -> None:
    """While this process holds the lock, another process's attempt is refused, naming us;
    once released, the same attempt succeeds."""
    with ProjectLock(state):
        held = subprocess.run(
            [sys.executable, "-c", TRY_ONCE, str(state)], capture_output=True, text=True
        )
    free = subprocess.run(
        [sys.executable, "-c", TRY_ONCE, str(state)], capture_output=True, text=True
    )
    assert (held.stdout, free.stdout) == (f"busy {os.getpid()}\n", "got\n"), (
        held.stderr + free.stderr
    )


def test_exclusive_between_processes(state: Path, tmp_path: Path) -> None:
    """Eight contending processes each get the lock once; inside, each finds a second
    attempt refused (the kernel lock is held for the whole block), and no two blocks overlap."""
    journal = tmp_path / "journal"
    worker = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from llmwiki_git.errors import LockBusy\n"
        "from llmwiki_git.gitstore.lock import ProjectLock\n"
        "with ProjectLock(Path(sys.argv[1]), timeout=60):\n"
        "    with open(sys.argv[2], 'a') as fh:\n"
        "        fh.write(f'start {os.getpid()}\\n'); fh.flush()\n"
        "    try:\n"
        "        ProjectLock(Path(sys.argv[1]), timeout=0).acquire()\n"
        "        inside = 'taken twice'\n"
        "    except LockBusy:\n"
        "        inside = 'end'\n"
        "    with open(sys.argv[2], 'a') as fh:\n"
        "        fh.write(f'{inside} {os.getpid()}\\n')\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", worker, str(state), str(journal)]) for _ in range(8)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * 8
    lines = journal.read_text().splitlines()
    assert len(lines) == 16
    for start, end in zip(lines[::2], lines[1::2]):  # never two holders at once
        assert start.startswith("start ") and end == "end " + start.split()[1]
    assert {int(line.split()[1]) for line in lines} == {p.pid for p in procs}
    assert not (state / "lock").exists()


class FakeClock:
    """``time`` for the lock module: ``sleep`` advances ``monotonic`` without waiting, and
    is recorded, so a bounded wait is measured by what the lock asked for, not by a clock."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def time(self) -> float:
        return time.time()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr("llmwiki_git.gitstore.lock.time", fake)
    return fake


def test_stale_lock_of_dead_pid_is_reclaimed(state: Path, clock: FakeClock) -> None:
    dead = _dead_pid()
    _write_record(
        state, pid=dead, startTime=1, host=socket.gethostname(), command="llmwiki query --save old"
    )
    with ProjectLock(state, timeout=5):
        assert _record(state / "lock")["pid"] == os.getpid()
    assert clock.sleeps == []  # taken at the first attempt, no waiting
    assert sorted(p.name for p in state.iterdir()) == []  # no side files, no lock.stale.* left


@pytest.mark.skipif(not HAS_PROC, reason="needs /proc to read process start times")
def test_live_pid_with_other_start_time_is_reclaimed(state: Path) -> None:
    mine = process_start_time(os.getpid())
    assert mine is not None
    _write_record(
        state, pid=os.getpid(), startTime=mine + 12345, host=socket.gethostname(), command="ghost"
    )
    with ProjectLock(state, timeout=5):
        assert _record(state / "lock")["startTime"] == mine


@pytest.mark.skipif(not HAS_PROC, reason="needs /proc to see zombies")
def test_zombie_owner_counts_as_dead(state: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        _write_record(
            state,
            pid=proc.pid,
            startTime=process_start_time(proc.pid),
            host=socket.gethostname(),
            command="z",
        )
        with ProjectLock(state, timeout=5):
            assert _record(state / "lock")["pid"] == os.getpid()
    finally:
        proc.wait()


@pytest.mark.parametrize(
    "content",
    [
        b"garbage{",
        b"",
        b"[1, 2]",
        b'{"pid": -3}',
        b'{"pid": "12"}',
        b"\xff\xfe",
        b'{"pid": 1}' + b" " * 5000,
    ],
)
def test_garbage_lock_is_reclaimed(state: Path, content: bytes) -> None:
    state.mkdir()
    (state / "lock").write_bytes(content)
    with ProjectLock(state, timeout=5):
        assert _record(state / "lock")["pid"] == os.getpid()


def test_symlinked_lock_is_replaced_never_followed(state: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    state.mkdir()
    (state / "lock").symlink_to(victim)
    with ProjectLock(state, timeout=5):
        assert not (state / "lock").is_symlink()
        assert _record(state / "lock")["pid"] == os.getpid()
    assert victim.read_text() == "precious"
    assert not (state / "lock").exists()


def test_dangling_symlinked_lock_creates_nothing_at_its_target(state: Path, tmp_path: Path) -> None:
    target = tmp_path / "nowhere" / "lockfile"
    state.mkdir()
    (state / "lock").symlink_to(target)
    with ProjectLock(state, timeout=5):
        assert not (state / "lock").is_symlink()
    assert not target.exists() and not target.parent.exists()


def test_state_dir_symlink_escaping_the_project_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".llmwiki").symlink_to(elsewhere)
    with pytest.raises(LlmwikiError, match="outside the project"):
        with ProjectLock(project / ".llmwiki", timeout=1):
            pass
    assert list(elsewhere.iterdir()) == []


def test_state_dir_symlink_inside_the_project_is_fine(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "state").mkdir(parents=True)
    (project / ".llmwiki").symlink_to(project / "state")
    with ProjectLock(project / ".llmwiki", timeout=1):
        assert (project / "state" / "lock").is_file()


def test_timeout_names_the_holder_and_says_what_to_do(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    holder = _spawn_holder(state)
    try:
        clock = FakeClock()
        with monkeypatch.context() as patched:
            patched.setattr("llmwiki_git.gitstore.lock.time", clock)
            with pytest.raises(LockBusy) as info:
                with ProjectLock(state, timeout=0.3):
                    pytest.fail("acquired a lock held by a live process")
        # It waited the whole timeout, in steps of at most the poll interval, then gave up.
        assert sum(clock.sleeps) == pytest.approx(0.3) and max(clock.sleeps) <= 0.025
        text = str(info.value)
        assert f"pid {holder.pid}" in text
        assert "llmwiki query --save demo" in text
        assert "since " in text
        assert f"wait for pid {holder.pid} to finish" in text and "frees itself" in text
        assert str(state / "lock") in text and ".llmwiki/lock" in text
        assert info.value.owner is not None and info.value.owner.pid == holder.pid
        assert _record(state / "lock")["pid"] == holder.pid  # the waiter left it alone
    finally:
        _stop(holder)
    # The holder was SIGKILLed while holding the lock: the next writer reclaims it.
    assert (state / "lock").exists()
    with ProjectLock(state, timeout=5):
        assert _record(state / "lock")["pid"] == os.getpid()


def test_waiter_gets_the_lock_when_the_holder_releases(state: Path) -> None:
    holder = _spawn_holder(state)
    try:
        assert holder.stdin is not None
        holder.stdin.close()  # the holder releases and exits
        with ProjectLock(state, timeout=30):
            assert _record(state / "lock")["pid"] == os.getpid()
        assert holder.wait(timeout=30) == 0
    finally:
        _stop(holder)


def test_zero_timeout_fails_fast_and_lock_is_not_reentrant(state: Path, clock: FakeClock) -> None:
    with ProjectLock(state):
        with pytest.raises(LockBusy, match=f"pid {os.getpid()}"):
            ProjectLock(state, timeout=0).acquire()
    assert clock.sleeps == []  # one attempt, no wait


def test_release_does_not_delete_someone_elses_lock(state: Path) -> None:
    other = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        with ProjectLock(state):
            # Someone deleted our lock by hand and another process took it.
            (state / "lock").unlink()
            _write_record(
                state,
                pid=other.pid,
                startTime=process_start_time(other.pid) or 0,
                host=socket.gethostname(),
                command="other",
            )
        assert _record(state / "lock")["pid"] == other.pid
    finally:
        _stop(other)


def test_release_keeps_a_rewritten_lock_even_with_our_pid(state: Path) -> None:
    with ProjectLock(state):
        lock = state / "lock"
        record = _record(lock)
        lock.unlink()
        lock.write_text(json.dumps({**record, "command": "someone else"}))
    assert _record(state / "lock")["command"] == "someone else"


def test_a_record_without_a_kernel_lock_is_a_leftover_whoever_it_names(state: Path) -> None:
    """The flock is the authority: a record naming a live process (here: us, or a process on
    another host) that holds no flock on the file is what a crash leaves behind -- taken over,
    where the pid/start-time/host heuristics used to refuse or guess."""
    other = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        for record in (
            {
                "pid": other.pid,
                "startTime": process_start_time(other.pid) or 0,
                "host": socket.gethostname(),
                "command": "alive but not holding",
            },
            {"pid": 1, "startTime": 1, "host": "another-machine.example", "command": "c"},
        ):
            _write_record(state, **record)
            with ProjectLock(state, timeout=0):
                assert _record(state / "lock")["pid"] == os.getpid()
        (state / "lock").write_text(str(os.getpid()))  # the reference tool's legacy bare pid
        with ProjectLock(state, timeout=0):
            assert _record(state / "lock")["pid"] == os.getpid()
    finally:
        _stop(other)


def test_lock_file_that_is_a_folder_is_refused_and_kept(state: Path) -> None:
    (state / "lock").mkdir(parents=True)
    (state / "lock" / "mine.txt").write_text("user data")
    with pytest.raises(LlmwikiError, match="lock"):
        ProjectLock(state, timeout=0).acquire()
    assert (state / "lock" / "mine.txt").read_text() == "user data"


def test_kill_9_tally(state: Path) -> None:
    """Holders killed with SIGKILL at random moments while holding: every time the next
    writer gets the lock at once (no waiting for a timeout, no stale-file judgement)."""
    for _ in range(5):
        holder = _spawn_holder(state, "kill -9 me")
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        _stop(holder)
        with ProjectLock(state, timeout=0):  # a single attempt: no waiting for a timeout
            assert _record(state / "lock")["pid"] == os.getpid()
    assert not (state / "lock").exists()


def test_parse_owner() -> None:
    owner = parse_owner(b'{"pid": 12, "startTime": 99, "host": "h", "command": "c"}')
    assert owner is not None and (owner.pid, owner.start_time, owner.host, owner.command) == (
        12,
        99,
        "h",
        "c",
    )
    assert parse_owner(b"42\n") is not None
    assert parse_owner(b'{"pid": true}') is None
    assert parse_owner(b"") is None


def test_killed_holder_is_reclaimed_by_a_waiting_process(state: Path) -> None:
    holder = _spawn_holder(state)
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, os\nfrom pathlib import Path\nfrom llmwiki_git.errors import LockBusy\n"
            "from llmwiki_git.gitstore.lock import ProjectLock\n"
            "try:\n    ProjectLock(Path(sys.argv[1]), timeout=0).acquire()\n    print('not held', flush=True)\n"
            "except LockBusy:\n    print('busy', flush=True)\n"
            "with ProjectLock(Path(sys.argv[1]), timeout=30):\n    print('got', os.getpid(), flush=True)\n",
            str(state),
        ],
        stdout=subprocess.PIPE,
        text=True,
    ) as waiter:
        try:
            assert waiter.stdout is not None
            assert waiter.stdout.readline() == "busy\n"  # it found the live holder's lock and waits
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait()
            out, _ = waiter.communicate(timeout=30)
        finally:
            _stop(holder)
    assert waiter.returncode == 0 and out.startswith("got ")
    assert not (state / "lock").exists()


FORKING_HOLDER = """
import os, sys, time
from pathlib import Path
from llmwiki_git.gitstore.lock import ProjectLock
with ProjectLock(Path(sys.argv[1]), timeout=30, command="llmwiki index"):
    child = os.fork()  # what the parallel page scan does: workers forked while the lock is held
    if child == 0:
        time.sleep(60)
        os._exit(0)
    print(child, flush=True)
    sys.stdin.read()
"""


def test_a_killed_holder_s_forked_workers_do_not_keep_the_lock(state: Path) -> None:
    """Found in review: `llmwiki index` forks scan workers while it holds the lock; they
    inherited the lock's descriptor, so after the writer was killed with -9 they kept the
    lock (and every writer was told to wait for a dead pid) for as long as they lived."""
    holder = subprocess.Popen(
        [sys.executable, "-c", FORKING_HOLDER, str(state)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    child = int(holder.stdout.readline())
    try:
        assert pid_alive(child)
        with pytest.raises(LockBusy):
            ProjectLock(state, timeout=0).acquire()  # the holder itself still holds it
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        assert pid_alive(child)  # the forked worker outlives its parent (it sleeps 60 s)...
        # ...and does not hold the lock. A few seconds of patience: under load the child may
        # not have run its at-fork hook yet when its parent is killed.
        with ProjectLock(state, timeout=10):
            assert _record(state / "lock")["pid"] == os.getpid()
    finally:
        _stop(holder)
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_forked_child_leaving_the_with_block_does_not_release_the_parent_s_lock(
    state: Path,
) -> None:
    """A child forked inside the `with` that unwinds it (or calls release) must neither
    delete the lock file nor drop the parent's lock."""
    lock = ProjectLock(state, timeout=0).acquire()
    try:
        pid = os.fork()
        if pid == 0:  # the child
            try:
                lock.release()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        assert (state / "lock").exists()
        other = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys\nfrom pathlib import Path\nfrom llmwiki_git.errors import LockBusy\n"
                "from llmwiki_git.gitstore.lock import ProjectLock\n"
                "try:\n    ProjectLock(Path(sys.argv[1]), timeout=0).acquire()\nexcept LockBusy:\n    sys.exit(3)\n",
                str(state),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert other.returncode == 3, other.stderr
    finally:
        lock.release()
    assert not (state / "lock").exists()
