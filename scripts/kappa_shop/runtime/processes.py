"""Processes and ports on this machine, read from /proc and the loopback interface: what the
local cluster, the local broker, the chaos campaign and the class archive's writer share (so
that none of them imports another).

Everything binds to and probes 127.0.0.1 (LOOPBACK) only."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from pathlib import Path

from kappa_shop.errors import KappaShopError

LOOPBACK = "127.0.0.1"


def runs_main_class(pid: int | None, main_class: str) -> bool:
    """Whether `pid` runs and is the process we started (not a reused id)."""
    if not pid:
        return False
    try:
        command_line = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        status = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    if status == "Z":
        return False
    # empty while the launcher script execs java: the same process, mid-exec
    return not command_line or main_class in command_line


def port_taken(port: int) -> bool:
    """Whether a process listens on (or has bound) `port` of the loopback. A port whose last
    server stopped a moment ago, its connections' ends still waiting (TIME_WAIT), is free: a
    server binds it as Java's do (SO_REUSEADDR), and so does this probe."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return True
    return False


def listening(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=2):
            return True
    except OSError:
        return False


def log_tail(path: Path, lines: int = 12) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    interesting = [line for line in text if "WARNING: Using incubator modules" not in line]
    return "\n".join(f"    {line}" for line in interesting[-lines:]) or "(empty log)"


def processes_under(directory: Path) -> list[int]:
    """Spark processes whose working directory is inside `directory` (executors, strays)."""
    found = []
    own = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == own:
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
            command_line = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        inside = cwd == directory or directory in cwd.parents
        if inside and "org.apache.spark" in command_line:
            found.append(int(entry.name))
    return found


def stop_process(pid: int, timeout: float) -> int:
    """SIGTERM, then SIGKILL after `timeout`; 1 if the process existed."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process_alive(pid):
            return 1
        time.sleep(0.2)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return 1
    while process_alive(pid):
        time.sleep(0.1)
    return 1


def process_alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie does not: one of ours is reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    if state == "Z":
        # a zombie child of ours (the test runner's): reap it
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        return False
    return True


def live_members(group: int) -> list[int]:
    """The processes of `group` with a thread that has not exited."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields_ = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields_[2]) != group:
                continue
            states = [
                (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
                for task in (entry / "task").iterdir()
            ]
        except OSError:
            continue
        if any(state not in ("Z", "X") for state in states):
            members.append(int(entry.name))
    return members


def wait_for_the_group_to_die(group: int, metastore: Path | None, timeout: float = 60.0) -> None:
    """Until every process of the killed group (Spark's JVM too) is gone and the OS lock the
    JVM held on the project's embedded metastore (if any) is released.

    A killed JVM's main thread can show as a zombie while its other threads still tear down
    (unmapping a large heap takes a while) and still hold its files and locks; nothing may reap
    orphans, so zombies stay. Hence: no live thread in the group, then the lock."""
    from kappa_shop.runtime.spark import check_metastore_free

    deadline = time.monotonic() + timeout
    while live_members(group):
        if time.monotonic() > deadline:
            raise KappaShopError(f"process group {group} still runs {timeout:g} s after SIGKILL")
        time.sleep(0.1)
    while metastore is not None:
        try:
            check_metastore_free(metastore)
            return
        except KappaShopError:
            if time.monotonic() > deadline:
                raise KappaShopError(
                    f"{metastore} still locked {timeout:g} s after group {group} was killed"
                ) from None
            time.sleep(0.1)
