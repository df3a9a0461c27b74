"""Killing a command and saying where the kill landed: a command run in a process group of its
own (Spark's JVM included) and killed with SIGKILL at a chosen moment of its work, its output
kept; where it was, read from what it printed and from dbt's debug log (the model running, the
SQL statement in flight). What the chaos campaign and the kill tests share."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime.processes import wait_for_the_group_to_die

# The line a step's command prints when its work begins (Spark is up): its kill's moment is
# drawn after it, uniform over the work's expected seconds (a kill while a JVM starts tries
# nothing). Compaction: the build's last node, after which the on-run-end hook commits the
# batch ledger and compacts it (about 3 s).
_ON_RUN_START = r"START hook: \S+\.on-run-start\.0"


@dataclass
class Outcome:
    """A command's run: what it printed, how it ended, how long it took."""

    output: str
    returncode: int | None
    seconds: float
    killed: bool
    marked_after: float | None = None  # seconds from its start to the marker's line


def run_killed(
    command: list[str],
    root: Path,
    environment: dict[str, str],
    kill_after: float | None,
    marker: str | None = None,
    timeout: float = 3600.0,
) -> Outcome:
    """Run `command` in a process group of its own and kill the group with SIGKILL
    `kill_after` seconds after it started (or after it printed a line matching the regular
    expression `marker`, when given); None: let it finish. Returns once the group is gone and
    the metastore free."""
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=root,
        env={**environment, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,  # its own process group: Spark's JVM dies with it
    )
    assert process.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in process.stdout:  # type: ignore[union-attr]
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    deadline = None if kill_after is None or marker is not None else started + kill_after
    killed = False
    marked_after: float | None = None
    try:
        while True:
            wait = 0.5 if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                line = lines.get(timeout=min(wait, 0.5))
            except queue.Empty:
                line = ""
            if line is None:  # the output's end: the command ended
                break
            if line:
                seen.append(line)
                if marker is not None and marked_after is None and re.search(marker, line):
                    marked_after = time.monotonic() - started
                    if kill_after is not None:
                        deadline = time.monotonic() + kill_after
            if deadline is not None and time.monotonic() >= deadline:
                os.killpg(process.pid, signal.SIGKILL)
                killed = True
                break
            if time.monotonic() - started > timeout:
                os.killpg(process.pid, signal.SIGKILL)
                raise KappaShopError(f"{' '.join(command[2:])} ran over {timeout:g} s: killed")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        metastore = root / "metastore_db"
        wait_for_the_group_to_die(process.pid, metastore if metastore.is_dir() else None)
    return Outcome(
        "".join(seen),
        None if killed else process.returncode,
        time.monotonic() - started,
        killed,
        marked_after,
    )


# --- where a kill landed ---------------------------------------------------------------------

_START = re.compile(r"\d+ of \d+ START (?:sql \S+ model|hook:?) (\S+)")
# a run's last node done (printed with its own number as the total): the on-run-end hook follows
IN_THE_HOOK = "the on-run-end hook (ledger commit and compaction)"
AFTER_THE_HOOK = "after the on-run-end hook's SQL (dbt finishing)"
_LAST_NODE = re.compile(r"\b(\d+) of \1 (?!START)(?!.* hook: )")
_STATEMENT = re.compile(r"\[(Thread-\d+|MainThread)[^\]]*\]: On ([^:]+): /\*")
_DONE = re.compile(r"\[(Thread-\d+|MainThread)[^\]]*\]: SQL status")
WORK_BEGINS = {
    "ingest": r"^Ingesting what is new in ",
    "build": _ON_RUN_START,
    "full-refresh": _ON_RUN_START,
    "reprocess": r"^Reprocess: ",
    "compaction": _LAST_NODE.pattern,
}
_KINDS = (
    ("insert overwrite", "insert overwrite"), ("insert into", "insert"),
    ("create or replace view", "create view"), ("create view", "create view"),
    ("create or replace table", "create table"), ("create table", "create table"),
    ("merge into", "merge"), ("replace table", "create table"), ("drop", "drop"),
    ("alter", "alter"), ("describe", "describe"), ("show", "show"), ("select", "select"),
    ("with", "select"), ("refresh", "refresh"), ("cache", "cache"), ("use", "use"),
)  # fmt: skip


def statement_kind(sql: str) -> str:
    """'insert overwrite', 'merge', 'create table', 'select', ... of a statement's text."""
    text = " ".join(sql.lower().split())
    for prefix, kind in _KINDS:
        if text.startswith(prefix):
            return kind
    return text.split(" ", 1)[0] if text else "?"


def statements_in_flight(log_tail: str) -> list[tuple[str, str]]:
    """(node, statement kind) of each dbt thread's last statement without a `SQL status`
    after it in dbt's debug log: what the kill interrupted."""
    open_: dict[str, tuple[str, str]] = {}
    lines = log_tail.splitlines()
    for index, line in enumerate(lines):
        started = _STATEMENT.search(line)
        if started:
            body = next(
                (
                    text
                    for text in lines[index + 1 : index + 40]
                    if text.strip() and not text.strip().startswith(("--", "/*"))
                ),
                "",
            )
            open_[started.group(1)] = (started.group(2).split(".")[-1], statement_kind(body))
            continue
        done = _DONE.search(line)
        if done:
            open_.pop(done.group(1), None)
    return list(open_.values())


def where_it_landed(step: str, output: str, log_tail: str) -> tuple[str, str]:
    """(where in the step, the statement in flight) from what the killed command printed and
    what dbt wrote to its debug log meanwhile."""
    ingested = re.findall(r"ingestion batch (\d+):", output)
    if step == "ingest":
        where = (
            f"after ingestion batch {ingested[-1]} ({len(ingested)} written)"
            if ingested
            else "before its first ingestion batch was written"
        )
        return where, "(Spark writes, not dbt)"
    phase = ""
    if step == "reprocess":
        for pattern, name in (
            ("Reprocess:", "build"), ("built ", "catch-up"), ("catching up", "catch-up"),
            ("is through ingestion batch", "tests"), ("tests passed", "compare"),
            ("differ", "switch"),
        ):  # fmt: skip
            if pattern in output:
                phase = name
        phase = f"{phase or 'start'}: "
    lines = output.splitlines()
    starts = [index for index, line in enumerate(lines) if _START.search(line)]
    last_node = [index for index, line in enumerate(lines) if _LAST_NODE.search(line)]
    if last_node and (not starts or last_node[-1] > starts[-1]):
        model = IN_THE_HOOK
    elif not starts:
        model = "before dbt's first node (Spark starting, parsing)"
    else:
        name = _START.search(lines[starts[-1]]).group(1)  # type: ignore[union-attr]
        hook = re.search(r"on-run-(start|end)", name)
        if hook is None:
            model = name.split(".")[-1]
        elif hook.group(1) == "start":
            model = "the on-run-start hook"
        else:  # (dbt prints the hook's line once its SQL has run)
            model = AFTER_THE_HOOK
    flying = statements_in_flight(log_tail)
    statement = (
        ", ".join(sorted({f"{kind} ({node})" for node, kind in flying}))
        if flying
        else "between statements"
    )
    return phase + model, statement


def log_offset(log: Path) -> int:
    return log.stat().st_size if log.is_file() else 0


def log_since(log: Path, offset: int) -> str:
    if not log.is_file():
        return ""
    size = log.stat().st_size
    with log.open("rb") as handle:
        handle.seek(offset if size >= offset else 0)  # (rotated meanwhile: the new file)
        handle.seek(max(handle.tell(), size - 4_000_000))
        return handle.read().decode("utf-8", errors="replace")
