"""Killing a command and saying where the kill landed: a command run in a process group of its
own (Spark's JVM included) and killed with SIGKILL at a chosen moment of its work, or at the
first write into the warehouse after that moment, its output kept; where it was, read from what
it printed, from dbt's debug log (the model running, the SQL statement in flight) and from the
write it left unfinished in the warehouse. What the chaos campaign and the kill tests share."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime.processes import wait_for_the_group_to_die

# The line a step's command prints when its work begins (Spark is up): its kill's moment is
# drawn after it, uniform over the work's expected seconds (a kill while a JVM starts tries
# nothing). Compaction: the build's last node, after which the on-run-end hook commits the
# batch ledger and compacts it (about 3 s).
_ON_RUN_START = r"START hook: \S+\.on-run-start\.0"


# The directories Spark's file committers write into, inside a table's directory, while a write
# is in flight: `_temporary` (an insert, a static partition's overwrite, a create table as
# select), `.spark-staging-<job>` (a dynamic partition overwrite), `.hive-staging_*` (a Hive
# table). Each is removed when its write commits, so one still there after a kill is a write the
# kill interrupted. Delta writes its files in place and commits a log entry: nothing to see.
STAGING_PREFIXES = ("_temporary", ".spark-staging-", ".hive-staging")
WATCH_EVERY = 0.02  # seconds between two looks at the warehouse while a kill waits for a write


class WriteWatch:
    """The writes in flight in a local warehouse (spark.sql.warehouse.dir): the staging
    directories in its tables' directories, as `schema.table/<staging>` names. Those present
    when the watch starts (left by an earlier kill) are not counted."""

    def __init__(self, warehouse: Path) -> None:
        self.warehouse = warehouse
        self.baseline: set[str] = set()

    def start(self) -> None:
        self.baseline = self._staging()

    def in_flight(self) -> set[str]:
        return self._staging() - self.baseline

    def _staging(self) -> set[str]:
        found: set[str] = set()
        for schema in _entries(self.warehouse):
            if not schema.name.endswith(".db"):
                continue
            for table in _entries(Path(schema.path)):
                for entry in _entries(Path(table.path)):
                    if entry.name.startswith(STAGING_PREFIXES):
                        found.add(f"{schema.name[:-3]}.{table.name}/{entry.name}")
        return found


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    """The subdirectories of `directory`; none when it went meanwhile (a write committing)."""
    try:
        with os.scandir(directory) as entries:
            return [entry for entry in entries if entry.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def interrupted_tables(staging: set[str]) -> list[str]:
    """The tables (schema.table) of the writes a kill left unfinished."""
    return sorted({name.split("/", 1)[0] for name in staging})


@dataclass
class Outcome:
    """A command's run: what it printed, how it ended, how long it took."""

    output: str
    returncode: int | None
    seconds: float
    killed: bool
    marked_after: float | None = None  # seconds from its start to the marker's line
    # with a write watch: the writes the kill left unfinished (`schema.table/<staging dir>`)
    interrupted: list[str] = field(default_factory=list)
    waited: float = 0.0  # seconds from the kill's moment to the write it waited for


def run_killed(
    command: list[str],
    root: Path,
    environment: dict[str, str],
    kill_after: float | None,
    marker: str | None = None,
    timeout: float = 3600.0,
    write_watch: WriteWatch | None = None,
) -> Outcome:
    """Run `command` in a process group of its own and kill the group with SIGKILL
    `kill_after` seconds after it started (or after it printed a line matching the regular
    expression `marker`, when given); None: let it finish. With `write_watch`, the kill waits
    from that moment for a write in flight in the warehouse and lands inside it (the command
    may finish first). Returns once the group is gone and the metastore free."""
    if write_watch is not None:
        write_watch.start()
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
    waited = 0.0
    marked_after: float | None = None
    try:
        while True:
            wait = 0.5 if deadline is None else max(0.0, deadline - time.monotonic())
            if write_watch is not None and deadline is not None and wait == 0:
                wait = WATCH_EVERY  # past the moment: waiting for a write
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
            if (
                deadline is not None
                and time.monotonic() >= deadline
                and (write_watch is None or write_watch.in_flight())
            ):
                os.killpg(process.pid, signal.SIGKILL)
                killed = True
                waited = max(0.0, time.monotonic() - deadline)
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
    interrupted = sorted(write_watch.in_flight()) if killed and write_watch is not None else []
    return Outcome(
        "".join(seen),
        None if killed else process.returncode,
        time.monotonic() - started,
        killed,
        marked_after,
        interrupted,
        waited if write_watch is not None else 0.0,
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
    "live": r"^live: .+ -> ",  # (its first line: Spark started, its tables there)
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
            else "before its first ingestion batch was complete"
        )
        return where, "(Spark writes, not dbt)"
    if step == "live":  # (its build is quiet: where it was, from dbt's debug log alone)
        flying = statements_in_flight(log_tail)
        if not flying:
            return "its cycle, outside dbt (ingesting or recording)", "(Spark writes, not dbt)"
        names = ", ".join(sorted({node for node, _ in flying}))
        kinds = ", ".join(sorted({f"{kind} ({node})" for node, kind in flying}))
        return f"its cycle's build: {names}", kinds
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
