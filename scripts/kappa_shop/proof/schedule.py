"""The proof's delivery schedule: the generated log's arrival batches cut into rounds in a
shuffled order in which batches overtake each other, a round that redelivers a batch whole
(duplicates only), and the rounds of edge and old-day batches the proof adds near the end
(kappa_shop.proof.reach_edges)."""

from __future__ import annotations

import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from kappa_shop.log.generator import read_manifest

REDELIVERY = "redelivery"
REACH_EDGES = (
    "reach edges"  # a batch of kappa_shop.proof.reach_edges, delivered alone, near the end
)
OLD_DAY = "old day"  # a few held-back events of one old day (add_old_day_batch), delivered last


@dataclass(frozen=True)
class Round:
    """One delivery round: generator batches to land, or one batch to land again whole."""

    batches: tuple[int, ...]
    kind: str = "arrival"  # or REDELIVERY, REACH_EDGES, OLD_DAY
    # models rebuilt alone with --full-refresh after the round's ingestion and before its
    # incremental build (as after a change to their logic: `dbt run -s <model> --full-refresh`)
    rebuilt: tuple[str, ...] = ()


def plan_schedule(batch_numbers: list[int], rounds: int, seed: int) -> list[Round]:
    """Cut the arrival batches into `rounds` - 1 delivery rounds in a shuffled order, in which
    a batch of the first round always overtakes one of the second (it is delivered before an
    older one), plus one round that redelivers an already delivered batch (duplicates only)."""
    rng = random.Random(seed * 7919 + 17)
    order = list(batch_numbers)
    # keep rough time order but let batches overtake each other: sort by a jittered position
    order.sort(key=lambda number: number + rng.uniform(-2.5, 2.5))
    arrival_rounds = max(1, rounds - 1)
    cuts = sorted(rng.sample(range(1, len(order)), min(arrival_rounds - 1, len(order) - 1)))
    groups = [order[start:end] for start, end in zip([0, *cuts], [*cuts, len(order)], strict=True)]
    if len(groups) > 1 and max(groups[0]) < min(groups[1]):
        # no batch of the first round overtook one of the second: swap the newest of the first
        # with the oldest of the second, so that one does
        newest, oldest = max(groups[0]), min(groups[1])
        groups[0][groups[0].index(newest)], groups[1][groups[1].index(oldest)] = oldest, newest
    schedule = [Round(tuple(group)) for group in groups]
    position = rng.randint(1, len(schedule))
    delivered = [number for entry in schedule[:position] for number in entry.batches]
    schedule.insert(position, Round((rng.choice(delivered),), REDELIVERY))
    return schedule


def redeliver(log_dir: Path, landing_dir: Path, batch: int, round_number: int) -> int:
    """Land a batch's files again under new names: the same records, delivered twice."""
    manifest = read_manifest(log_dir)
    directory = next(entry["directory"] for entry in manifest["batches"] if entry["batch"] == batch)
    count = 0
    for source in sorted((log_dir / directory).rglob("*.jsonl")):
        relative = source.relative_to(log_dir / directory)
        target = landing_dir / relative.with_name(f"{source.stem}.redelivery-{round_number}.jsonl")
        target.parent.mkdir(parents=True, exist_ok=True)
        hidden = target.with_name(f".{target.name}.partial")
        shutil.copyfile(source, hidden)
        os.replace(hidden, target)
        count += 1
    return count
