"""What the benchmark measures of processes, from /proc: the peak resident memory of a process
and its descendants (a sampling thread, MemorySampler; a command run to its end, run_sampled),
their CPU time, and how busy the machine's cores were."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any


class MemorySampler:
    """Peak resident memory of this process and its descendants, per labelled span."""

    def __init__(self, root_pid: int, interval: float = 0.2) -> None:
        self.root_pid = root_pid
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def reset(self) -> None:
        self.peak = tree_rss(self.root_pid)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, tree_rss(self.root_pid))


def _process_tree(root_pid: int) -> dict[int, list[str]]:
    """The /proc stat fields (from the state on: field 3 is index 0) and, last, the resident
    pages of a process and all its live descendants, by process id."""
    children: dict[int, list[int]] = {}
    found: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            pages = (entry / "statm").read_text().split()[1]
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(int(stat[1]), []).append(int(entry.name))
        found[int(entry.name)] = [*stat, pages]
    tree, stack = {}, [root_pid]
    while stack:
        pid = stack.pop()
        if pid in found:
            tree[pid] = found[pid]
        stack.extend(children.get(pid, []))
    return tree


def tree_rss(root_pid: int) -> int:
    """Resident bytes of a process and all its descendants, from /proc."""
    return _resident_bytes(_process_tree(root_pid))


def _resident_bytes(tree: dict[int, list[str]]) -> int:
    return sum(int(fields[-1]) for fields in tree.values()) * os.sysconf("SC_PAGE_SIZE")


def tree_cpu_seconds(root_pid: int) -> float:
    """CPU time (user and system) of a process and all its live descendants, each with what it
    collected from its children that have exited (utime, stime, cutime, cstime), from /proc."""
    tree = _process_tree(root_pid)
    ticks = sum(sum(int(value) for value in fields[11:15]) for fields in tree.values())
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_cpu_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all the machine's cores since boot, from /proc/stat."""
    values = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:9]]
    idle = values[3] + values[4]  # idle, iowait
    return sum(values) - idle, sum(values)


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float | None:
    """The share of the machine's CPU time that was busy between two machine_cpu_ticks()."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else None


def run_sampled(command: list[str], **popen: Any) -> tuple[int, int, float]:
    """Run `command` (subprocess.Popen's keyword arguments in `popen`) to its end; return its
    exit status, the peak resident memory of it and its descendants in bytes, and their CPU
    time in seconds: each process's own (utime, stime) as last seen, sampled every 0.2 s
    like the memory (a process that is not waited for, such as PySpark's JVM when its Python
    process ends, passes its time to no one), so up to 0.2 s of each one's end is missed."""
    process = subprocess.Popen(command, **popen)
    peak = 0
    ticks: dict[int, int] = {}
    while process.poll() is None:
        tree = _process_tree(process.pid)
        peak = max(peak, _resident_bytes(tree))
        for pid, fields in tree.items():
            ticks[pid] = max(ticks.get(pid, 0), int(fields[11]) + int(fields[12]))
        time.sleep(0.2)
    return process.returncode, peak, sum(ticks.values()) / os.sysconf("SC_CLK_TCK")
