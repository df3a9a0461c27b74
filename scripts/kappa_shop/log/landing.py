"""The landing zone: where a broker-to-storage sink drops newline-delimited JSON files, one
per topic-partition and arrival batch, and where ingestion picks them up.

    <landing>/topics/<topic>/partition=<p>/<topic>+<p>+<first offset>.jsonl

`deliver` moves a generated log's arrival batches into a landing zone, batch by batch, the
way a sink would: each file appears whole (written under a hidden name, then renamed), so
ingestion never reads half a file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kappa_shop.errors import KappaShopError
from kappa_shop.log.generator import read_manifest


@dataclass(frozen=True)
class Delivered:
    """What one delivery did."""

    batches: list[int]
    files_delivered: int
    files_already_there: int


def batch_numbers(log_dir: Path) -> list[int]:
    """The arrival batches of a generated log, in order."""
    return [entry["batch"] for entry in read_manifest(log_dir)["batches"]]


def deliver(log_dir: Path, landing_dir: Path, batches: Iterable[int]) -> Delivered:
    """Copy the files of the given arrival batches of `log_dir` into `landing_dir`.

    Safe to repeat: a file already landed with the same size is left alone; a file landed with
    different content is an error (the log is append-only, so it must never change).
    """
    manifest = read_manifest(log_dir)
    known = {entry["batch"]: entry["directory"] for entry in manifest["batches"]}
    delivered = already = 0
    chosen = list(batches)
    for batch in chosen:
        if batch not in known:
            raise KappaShopError(f"{log_dir} has no arrival batch {batch} (it has 1..{len(known)})")
        source_root = log_dir / known[batch]
        for source in sorted(source_root.rglob("*.jsonl")):
            target = landing_dir / source.relative_to(source_root)
            if target.exists():
                if target.stat().st_size != source.stat().st_size:
                    raise KappaShopError(
                        f"{target} already landed with different content; the log is "
                        "append-only: use a fresh landing directory for a different log"
                    )
                already += 1
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            hidden = target.with_name(f".{target.name}.partial")
            shutil.copyfile(source, hidden)
            os.replace(hidden, target)
            delivered += 1
    return Delivered(batches=chosen, files_delivered=delivered, files_already_there=already)
