"""The generator's settings (GeneratorConfig: scale, period, arrival batches, every delivery
imperfection's share, the held-back tail) and the units of its simulated clock (milliseconds)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from kappa_shop.errors import KappaShopError

SECOND = 1000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR

# file names carry the first offset in 12 digits (sorting by name sorts by offset): room is
# left above the largest first offset for the records of one log
MAX_FIRST_OFFSET = 10**11


@dataclass(frozen=True)
class GeneratorConfig:
    """Every knob of the generator. Defaults are meant to be realistic for a web shop."""

    seed: int = 42
    events: int = 10_000
    days: float = 7.0
    start: str = "2024-03-01"
    partitions: int = 4
    batches: int = 12
    late_fraction: float = 0.03
    duplicate_fraction: float = 0.01
    conflict_fraction: float = 0.001
    malformed_fraction: float = 0.002
    drift_fraction: float = 0.005
    skewed_producer_fraction: float = 0.05
    max_clock_skew_seconds: float = 90.0
    max_partition_lag_minutes: float = 15.0
    # the benchmark's late data: this fraction of the events of the last `held_back_days`
    # days of the period is held back until just after it ends (the stragglers batch)
    held_back_fraction: float = 0.0
    held_back_days: float = 3.0
    # the offset of each partition's first record: a log that continues another one (the
    # benchmark's fixed batch, appended after histories of other sizes) starts past its offsets
    first_offset: int = 0
    # the log sequence number (LSN) before the first profile change's: a log that continues
    # another one continues its LSNs too (a key's changes are ordered by LSN, so two logs that
    # both start at 1 would give changes of the same user the same LSN, an order no log has)
    first_lsn: int = 0

    def validate(self) -> None:
        """Refuse settings that cannot make a log, with one line naming the setting."""
        if self.events < 1:
            raise KappaShopError(f"--events must be at least 1 (got {self.events})")
        if self.days <= 0:
            raise KappaShopError(f"--days must be positive (got {self.days})")
        if not 1 <= self.partitions <= 64:
            raise KappaShopError(f"--partitions must be 1..64 (got {self.partitions})")
        if not 1 <= self.batches <= 100_000:
            raise KappaShopError(f"--batches must be 1..100000 (got {self.batches})")
        for name in (
            "late_fraction",
            "duplicate_fraction",
            "conflict_fraction",
            "malformed_fraction",
            "drift_fraction",
            "skewed_producer_fraction",
            "held_back_fraction",
        ):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                option = "--" + name.replace("_", "-")
                raise KappaShopError(f"{option} must be between 0 and 1 (got {value})")
        if not 0 <= self.first_offset <= MAX_FIRST_OFFSET:
            raise KappaShopError(
                f"--first-offset must be 0..{MAX_FIRST_OFFSET} (got {self.first_offset})"
            )
        if not 0 <= self.first_lsn <= MAX_FIRST_OFFSET:
            raise KappaShopError(
                f"--first-lsn must be 0..{MAX_FIRST_OFFSET} (got {self.first_lsn})"
            )
        if self.max_clock_skew_seconds < 0 or self.max_partition_lag_minutes < 0:
            raise KappaShopError("clock skew and partition lag must not be negative")
        if self.held_back_fraction and not 1 / 24 < self.held_back_days <= self.days:
            raise KappaShopError(
                f"--held-back-days must be more than an hour and at most --days "
                f"(got {self.held_back_days})"
            )
        try:
            datetime.strptime(self.start, "%Y-%m-%d")
        except ValueError:
            raise KappaShopError(
                f"--start must be a date YYYY-MM-DD (got {self.start!r})"
            ) from None

    @property
    def start_ms(self) -> int:
        moment = datetime.strptime(self.start, "%Y-%m-%d").replace(tzinfo=UTC)
        return int(moment.timestamp() * 1000)

    @property
    def end_ms(self) -> int:
        return self.start_ms + int(self.days * DAY)
