"""The event log generator: an online shop simulated event by event, delivered as imperfectly
as a log-based broker delivers it, written as landed files in numbered arrival batches.

How it works, in two layers:

1. Behaviour (event time). A discrete-event simulation: each user session, order, the
   profile database and the restocking process is a Python generator that emits events and
   yields how long to wait before its next step. A heap orders the steps by time. Users browse
   in bursts separated by inactivity, search and sometimes click a result, add to cart and
   sometimes order; orders go through payment (with failures, and rare card-testing bursts),
   shipping or cancellation; inventory follows orders and restocks; profiles are created,
   updated and deleted with a log sequence number (LSN).

2. Delivery (arrival time). Every event gets a delivery delay (usually seconds; for a fraction
   of events minutes, hours or days: the late tail), the producer's clock skew on its event
   time, and a partition by key. Some events are redelivered (same event_id, new offset), some
   redelivered with a conflicting payload, some are malformed in one of the ways a real log is,
   and some carry an unknown extra field (schema drift, which is valid). Each topic-partition
   reaches storage with its own lag, so partitions are out of order with each other. A record
   is given its offset when it arrives, so offsets grow in arrival order per partition.

Output (`out/`):

    batch=000001/topics/<topic>/partition=<p>/<topic>+<p>+<first offset>.jsonl
    ...
    batch=<N+1>/...    the stragglers: records that arrive after the period ends (late only)
    manifest.json      ground truth: counts per stream, per imperfection, per batch

Memory: the simulation holds the open sessions and orders, one small state per user (capped
at MAX_USERS), and the records still in flight between emission and arrival; the records
already written are gone. None of this grows with the length of the log.

Determinism: one seeded random.Random drives everything, heap ties break by a sequence
number, JSON keys keep insertion order, and the manifest holds no timings: the same seed and
options give the same bytes.
"""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError
from kappa_shop.log.config import GeneratorConfig
from kappa_shop.log.delivery import MALFORMED_KINDS, RECORD_CATEGORIES, Writer
from kappa_shop.log.format import MAX_RECORD_BYTES
from kappa_shop.log.shop import Shop, run_shop


@dataclass(frozen=True)
class GenerationResult:
    """What a run wrote, for the command line to report."""

    out_dir: Path
    manifest: dict[str, Any]
    seconds: float
    peak_rss_mib: float


def generate(
    config: GeneratorConfig, out_dir: Path, progress: Callable[[str], None] = print
) -> GenerationResult:
    """Generate the log for `config` into `out_dir` (which must be empty or not exist)."""
    config.validate()
    if out_dir.exists() and any(out_dir.iterdir()):
        raise KappaShopError(f"{out_dir} is not empty: choose a new directory or remove it")
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    progress(
        f"Generating ~{config.events:,} events (seed {config.seed}, {config.days:g} days from "
        f"{config.start}, {config.batches} arrival batches) into {out_dir}"
    )
    shop = Shop(config, progress)
    shop.delivery.writer = Writer(out_dir, config)
    run_shop(shop)
    manifest = _manifest(config, shop)
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return GenerationResult(out_dir, manifest, time.monotonic() - started, peak_rss_mib)


def _manifest(config: GeneratorConfig, shop: Shop) -> dict[str, Any]:
    writer = shop.delivery.writer
    by_topic = {}
    for topic, counts in shop.delivery.counts.items():
        entry = asdict(counts)
        entry["by_event_type"] = dict(sorted(counts.by_event_type.items()))
        by_topic[topic] = entry
    totals = {
        name: sum(by_topic[topic][name] for topic in by_topic)
        for name in ("records", "valid", "duplicate", "conflicting_duplicate", "late")
    }
    totals["malformed"] = {
        kind: sum(by_topic[topic]["malformed"][kind] for topic in by_topic)
        for kind in MALFORMED_KINDS
    }
    totals["schema_drift"] = sum(by_topic[topic]["schema_drift"] for topic in by_topic)
    return {
        "format": "kappa_shop event log v1",
        "config": asdict(config),
        "record_categories": list(RECORD_CATEGORIES),
        "malformed_kinds": list(MALFORMED_KINDS),
        "max_record_bytes": MAX_RECORD_BYTES,
        "totals": totals,
        "by_topic": by_topic,
        "lateness_of_late_events": shop.delivery.lateness_buckets,
        "users_created": len(shop.users),
        "orders": shop.order_number,
        "batches": [
            {
                "batch": number,
                "directory": f"batch={number:06d}",
                "files": writer.batch_files[number - 1],
                "records": sum(writer.batch_records[number - 1].values()),
                "records_by_topic": writer.batch_records[number - 1],
                "stragglers_only": number == config.batches + 1,
            }
            for number in range(1, config.batches + 2)
            if number <= config.batches or writer.batch_files[number - 1]
        ],
        "partition_end_offsets": {
            f"{topic}/{partition}": offset
            for (topic, partition), offset in sorted(writer.offsets.items())
        },
    }


def made_with(log_dir: Path, config: GeneratorConfig) -> bool:
    """Whether `log_dir` holds a finished log generated with `config` (a knob added to the
    generator since the log was made counts at its default: the same bytes as before it
    existed), so that it can be reused."""
    if not (log_dir / "manifest.json").is_file():
        return False
    made = {**asdict(GeneratorConfig()), **read_manifest(log_dir)["config"]}
    return made == asdict(config)


def read_manifest(log_dir: Path) -> dict[str, Any]:
    """The manifest of a generated log; a clear error if the directory is not one."""
    path = log_dir / "manifest.json"
    if not path.is_file():
        raise KappaShopError(
            f"{log_dir} has no manifest.json: not a generated log (or its generation did not "
            "finish); run `kappa-shop generate` first"
        )
    return json.loads(path.read_text())
