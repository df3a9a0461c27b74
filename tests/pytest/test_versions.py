"""The registry of a serving schema read as versions (kappa_shop.serving.versions.Versions):
which one is served, which one a rollback serves, and which reprocesses never ended. No Spark: the
registry's rows as a reprocess, a switch and a kill leave them (test_reprocess and
test_reprocess_killed write them for real)."""

from __future__ import annotations

from kappa_shop.serving.versions import FIRST_BUILD, NOT_SWITCHED, Event, Versions

V1 = {"shop.sessions": "shop__v1.sessions"}
V2 = {"shop.sessions": "shop__v2.sessions"}


def _versions(*events: tuple) -> Versions:
    return Versions("shop", [Event(*event) for event in events])


FIRST = [(1, "building", {}, FIRST_BUILD), (1, "switching", V1, ""), (1, "switched", V1, "")]


def test_a_reprocess_killed_in_its_build_is_unfinished_and_the_served_version_stays():
    versions = _versions(*FIRST, (2, "building", {}, "reprocess"))
    assert versions.served == 1 and versions.previous is None
    assert versions.state(2) == "building" and versions.unfinished(2)
    assert not versions.unfinished(1)
    assert versions.next_version == 3


def test_a_switch_killed_half_way_is_found_and_the_version_is_unfinished_until_undone():
    killed = _versions(*FIRST, (2, "building", {}, ""), (2, "built", V2, ""),
                       (2, "switching", V2, "reprocess"))  # fmt: skip
    assert killed.interrupted_switch == Event(2, "switching", V2, "reprocess")
    assert killed.served == 1 and killed.unfinished(2)
    # the next command points the views back and records the served version's switch again
    undone = Versions("shop", [*killed.events, Event(1, "switched", V1, "undone")])
    assert undone.interrupted_switch is None
    assert undone.served == 1 and undone.state(2) == "built"


def test_versions_that_ended_are_not_unfinished():
    versions = _versions(
        *FIRST,
        (2, "building", {}, ""), (2, "failed", {}, "1 of 320 tests failed"),
        (3, "building", {}, ""), (3, "built", V2, f"compared with version 1; {NOT_SWITCHED}"),
        (4, "building", {}, ""), (4, "built", V2, ""), (4, "switching", V2, ""),
        (4, "switched", V2, ""),
    )  # fmt: skip
    assert [versions.unfinished(version) for version in (1, 2, 3, 4)] == [False] * 4
    assert versions.served == 4 and versions.previous == 1
    assert [versions.state(version) for version in (1, 2, 3, 4)] == [
        "served before", "failed", "built", "serving"
    ]  # fmt: skip


def test_of_two_reprocesses_that_started_one_version_the_first_is_the_versions():
    versions = _versions(
        *FIRST, (2, "building", {}, "reprocess by pid 7 on a"),
        (2, "building", {}, "reprocess by pid 9 on b"),
    )  # fmt: skip
    assert versions.detail(2) == "reprocess by pid 7 on a"
    assert versions.unfinished(2)
