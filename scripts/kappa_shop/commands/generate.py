"""`kappa-shop generate`: write a generated event log (arrival batches and a manifest)."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

from kappa_shop.commands.common import Subcommands
from kappa_shop.log.generator import GeneratorConfig

GENERATOR_HELP: dict[str, str] = {
    "seed": "random seed: the same seed and options give the same bytes",
    "events": "about how many valid events to generate (1,000 to 100,000,000; within a few %%)",
    "days": "length of the simulated period in days",
    "start": "first day of the simulated period (UTC), YYYY-MM-DD",
    "partitions": "partitions per topic",
    "batches": "number of arrival batches the period is cut into",
    "late_fraction": "fraction of events delivered late (minutes, hours, or a tail of days)",
    "duplicate_fraction": "fraction of events redelivered (same event_id, new offset)",
    "conflict_fraction": "fraction of events redelivered with a conflicting payload",
    "malformed_fraction": "fraction of records malformed (spread over every malformed kind)",
    "drift_fraction": "fraction of events carrying an unknown extra field (valid schema drift)",
    "skewed_producer_fraction": "fraction of users whose device clock is skewed",
    "max_clock_skew_seconds": "largest clock skew of a skewed device, either way",
    "max_partition_lag_minutes": "largest steady lag of a topic-partition reaching storage",
    "held_back_fraction": "fraction of the events of the last --held-back-days days held back "
    "until the period has ended, to arrive in the stragglers batch (benchmarks; 0 = off)",
    "held_back_days": "how far back held-back events reach, in days",
    "first_offset": "offset of each partition's first record, for a log that continues "
    "another one (benchmarks)",
    "first_lsn": "the profile changes' log sequence numbers start after this one, for a log "
    "that continues another one (benchmarks)",
}


def register(commands: Subcommands) -> None:
    generate = commands.add_parser(
        "generate",
        help="write a generated event log: arrival batches of landed files and a manifest",
        description=(
            "Simulate the shop and write its event log as a broker-to-storage sink would land "
            "it: OUT/batch=NNNNNN/topics/<topic>/partition=<p>/*.jsonl for each arrival batch, "
            "and OUT/manifest.json with the ground truth (counts per stream, per imperfection "
            "and per batch). Deterministic for a seed; memory stays flat at any scale."
        ),
    )
    generate.add_argument(
        "--out", type=Path, required=True, help="directory to write (new or empty)"
    )
    defaults = GeneratorConfig()
    for config_field in fields(GeneratorConfig):
        option = "--" + config_field.name.replace("_", "-")
        default = getattr(defaults, config_field.name)
        generate.add_argument(
            option,
            type=type(default),
            default=default,
            help=f"{GENERATOR_HELP[config_field.name]} (default: {default})",
        )
    generate.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.log.generator import generate

    config = GeneratorConfig(
        **{field.name: getattr(arguments, field.name) for field in fields(GeneratorConfig)}
    )
    result = generate(config, arguments.out)
    totals = result.manifest["totals"]
    malformed = sum(totals["malformed"].values())
    print(
        f"Wrote {totals['records']:,} records ({totals['valid']:,} valid events, "
        f"{totals['duplicate']:,} redeliveries, {totals['conflicting_duplicate']:,} conflicting, "
        f"{malformed:,} malformed; {totals['late']:,} late) in {len(result.manifest['batches'])} "
        f"arrival batches to {result.out_dir} in {result.seconds:.1f} s "
        f"(peak memory {result.peak_rss_mib:.0f} MiB)."
    )
    return 0
