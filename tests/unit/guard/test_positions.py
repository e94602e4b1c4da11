"""The watch's final tally of a KafkaSource in positions (`splitaudit/guard/positions.py`): the figures of the real
restores (docs/watch.md, docs/flink-kafka-jobs.md) as the pure part computes them."""

from __future__ import annotations

from splitaudit.guard.positions import (
    BELOW_RESTORED,
    NOT_READ,
    NOTHING_TO_READ,
    PAST_END,
    READ,
    SHORT,
    PartitionPositions,
    PositionsSeen,
    position_tally,
)

T = "orders"


def _seen(restored: dict[int, int], last: dict[int, int], below: dict[int, int] | None = None) -> PositionsSeen:
    return PositionsSeen(
        {(T, p): o for p, o in restored.items()},
        {(T, p): o for p, o in last.items()},
        frozenset((T, p) for p in last),
        {(T, p): o for p, o in (below or {}).items()},
    )


def test_a_clean_restore_read_from_its_restored_offset_to_the_end() -> None:
    # SP0 at 100 on p0 and p1, 200 records each now, the readers last seen at 199.
    tally = position_tally(_seen({0: 100, 1: 100}, {0: 199, 1: 199}), {(T, 0): (0, 200), (T, 1): (0, 200)})
    assert tally == (
        PartitionPositions(T, 0, 100, 199, (100, 199), (100, 199), READ),
        PartitionPositions(T, 1, 100, 199, (100, 199), (100, 199), READ),
    )
    assert tally[0].to_json() == {
        "topic": T,
        "partition": 0,
        "restored": 100,
        "last_read": 199,
        "read": [100, 199],
        "expected": [100, 199],
        "verdict": READ,
    }


def test_partitions_added_while_running_and_never_held_are_not_read() -> None:
    # The job not restored (from earliest): p0, p1 read to 149; p2, p3 added with 50 records each, never held.
    log = {(T, 0): (0, 150), (T, 1): (0, 150), (T, 2): (0, 50), (T, 3): (0, 50)}
    tally = position_tally(_seen({}, {0: 149, 1: 149}), log)
    assert [(p.partition, p.restored, p.last_read, p.read, p.expected, p.verdict) for p in tally] == [
        (0, None, 149, (0, 149), (0, 149), READ),
        (1, None, 149, (0, 149), (0, 149), READ),
        (2, None, None, None, (0, 49), NOT_READ),
        (3, None, None, None, (0, 49), NOT_READ),
    ]
    assert tally[2].to_json()["read"] is None


def test_a_rewound_reader_read_from_the_lowest_offset_its_finding_proves() -> None:
    # The source's state dropped: read_below_restored proves 0..99 read again below SP0's 100.
    tally = position_tally(_seen({0: 100}, {0: 199}, below={0: 0}), {(T, 0): (0, 200)})
    assert tally == (PartitionPositions(T, 0, 100, 199, (0, 199), (100, 199), BELOW_RESTORED),)


def test_a_reader_behind_the_end_is_short_and_one_past_it_past_the_end() -> None:
    log = {(T, 0): (0, 200), (T, 1): (0, 200)}
    tally = position_tally(_seen({0: 100, 1: 100}, {0: 150, 1: 205}), log)
    assert [(p.read, p.verdict) for p in tally] == [((100, 150), SHORT), ((100, 205), PAST_END)]


def test_a_held_partition_with_nothing_new_had_nothing_to_read() -> None:
    # Restored at the end (100 of 100) and held, its reader fetched nothing; an empty partition nobody held is left
    # out, one the savepoint holds but no reader held with nothing to read stays.
    seen = PositionsSeen({(T, 0): 100, (T, 2): 100}, {}, frozenset({(T, 0)}), {})
    tally = position_tally(seen, {(T, 0): (0, 100), (T, 1): (0, 0), (T, 2): (0, 100)})
    assert [(p.partition, p.read, p.expected, p.verdict) for p in tally] == [
        (0, None, None, NOTHING_TO_READ),
        (2, None, None, NOTHING_TO_READ),
    ]
