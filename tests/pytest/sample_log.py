"""An independent reading of the sample log in plain Python: the oracle the Spark tables are
checked against. It shares no code with the models; it re-derives the documented rules."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


@dataclass(frozen=True)
class Delivery:
    event_id: str
    user_id: str
    page_path: str
    occurred_at: datetime
    ingested_at: datetime
    batch_id: int


def read_deliveries(project_root: Path) -> list[Delivery]:
    """Every row of the sample page-view log, one per delivery."""
    path = project_root / "seeds" / "sample_log" / "raw_web_page_views.csv"
    with path.open(newline="") as handle:
        return [
            Delivery(
                event_id=row["event_id"],
                user_id=row["user_id"],
                page_path=row["page_path"],
                occurred_at=datetime.strptime(row["occurred_at"], TIME_FORMAT),
                ingested_at=datetime.strptime(row["ingested_at"], TIME_FORMAT),
                batch_id=int(row["batch_id"]),
            )
            for row in csv.DictReader(handle)
        ]


def first_deliveries(deliveries: list[Delivery]) -> dict[str, Delivery]:
    """One delivery per event: lowest batch, then earliest ingestion, then the other fields."""
    kept: dict[str, Delivery] = {}
    for delivery in deliveries:
        rank = (
            delivery.batch_id,
            delivery.ingested_at,
            delivery.occurred_at,
            delivery.user_id,
            delivery.page_path,
        )
        current = kept.get(delivery.event_id)
        if current is None or rank < (
            current.batch_id,
            current.ingested_at,
            current.occurred_at,
            current.user_id,
            current.page_path,
        ):
            kept[delivery.event_id] = delivery
    return kept


def sessionize(views: list[Delivery], gap: timedelta) -> list[tuple]:
    """Sessions as (user, start, end, views, landing, exit, is_bounce, seconds) tuples.

    A view more than `gap` after the previous view of the same user starts a new session;
    ties on time are ordered by event id.
    """
    sessions: list[tuple] = []
    ordered = sorted(views, key=lambda view: (view.user_id, view.occurred_at, view.event_id))
    current: list[Delivery] = []
    for view in ordered:
        if current and (
            view.user_id != current[-1].user_id or view.occurred_at - current[-1].occurred_at > gap
        ):
            sessions.append(_session_row(current))
            current = []
        current.append(view)
    if current:
        sessions.append(_session_row(current))
    return sessions


def _session_row(views: list[Delivery]) -> tuple:
    start, end = views[0].occurred_at, views[-1].occurred_at
    return (
        views[0].user_id,
        start.strftime(TIME_FORMAT),
        end.strftime(TIME_FORMAT),
        len(views),
        views[0].page_path,
        views[-1].page_path,
        len(views) == 1,
        int((end - start).total_seconds()),
    )
