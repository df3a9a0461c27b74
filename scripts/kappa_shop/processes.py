"""Whether a process still runs, read from /proc: what the local cluster and the class
archive's writer share (so that neither imports the other)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


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
