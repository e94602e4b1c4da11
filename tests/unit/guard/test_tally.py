"""The watch's final tally as a pure function of each attempt's last counts, start and end offsets."""

from __future__ import annotations

from splitaudit.guard.tally import AttemptReads, PartitionTally, steady_since, tally

T = "orders-7"
START = {(T, p): 500 for p in range(4)}
ENDS = {(T, p): 1000 for p in range(4)}


def test_twin_readers_idle_at_the_end_read_every_backlog_record_twice_exactly() -> None:
    # The stock restore: each partition's restored reader and its twin both read offsets 500..999.
    restored = AttemptReads(0, START, {(T, p): 1000 for p in range(4)}, ENDS, final=True)
    assert tally([restored]) == tuple(PartitionTally(T, p, 1000, 500, True) for p in range(4))


def test_one_reader_per_partition_reads_nothing_twice_exactly() -> None:
    restored = AttemptReads(0, START, {(T, p): 500 for p in range(4)}, ENDS, final=True)
    assert tally([restored]) == tuple(PartitionTally(T, p, 500, 0, True) for p in range(4))


def test_counts_that_may_miss_records_give_a_lower_bound_with_the_reason() -> None:
    why = "its counts changed within the last 1 s before the job ended"
    restored = AttemptReads(0, START, {(T, 0): 700, (T, 1): 400}, ENDS, final=False, why=why)
    assert tally([restored]) == (
        PartitionTally(T, 0, 700, 200, False, f"the restored job: {why}"),
        PartitionTally(T, 1, 400, 0, False, f"the restored job: {why}"),
        PartitionTally(T, 2, 0, 0, False, f"the restored job: {why}"),
        PartitionTally(T, 3, 0, 0, False, f"the restored job: {why}"),
    )


def test_steady_counts_short_of_the_end_offset_are_not_exact() -> None:
    restored = AttemptReads(0, {(T, 0): 500}, {(T, 0): 300}, {(T, 0): 1000}, final=True)
    assert tally([restored]) == (
        PartitionTally(
            T,
            0,
            300,
            0,
            False,
            "the restored job: its readers read 300 records, fewer than the 500 of offsets 500..1000",
        ),
    )


def test_unknown_offsets_are_said() -> None:
    restored = AttemptReads(0, {}, {(T, 0): 300}, {(T, 0): 1000}, final=True)
    assert tally([restored]) == (
        PartitionTally(T, 0, 300, 0, False, "the restored job: the partition's offsets are unknown"),
    )


def test_a_restart_is_tallied_against_its_own_checkpoint_neither_reset_nor_doubled() -> None:
    # The restored job's two readers had both read 500..799 (600 counted, 300 twice) when its TaskManager was
    # killed, its counts steady; it restarted from a checkpoint at 700, and its two readers read 700..999 (600
    # counted, 300 twice). The restart's replay of 700..799 is not a double read of one attempt: 600, not 700.
    first = AttemptReads(0, {(T, 0): 500}, {(T, 0): 600}, {(T, 0): 800}, final=True)
    second = AttemptReads(1, {(T, 0): 700}, {(T, 0): 600}, {(T, 0): 1000}, final=True)
    assert tally([first, second]) == (PartitionTally(T, 0, 1200, 600, True),)
    # Killed while reading: its last counts against the end offset at the end are a lower bound (100, not 300).
    killed = AttemptReads(0, {(T, 0): 500}, {(T, 0): 600}, {(T, 0): 1000}, final=False, why="it failed")
    assert tally([killed, second]) == (PartitionTally(T, 0, 1200, 400, False, "the restored job: it failed"),)


def test_counts_are_steady_since_the_first_poll_that_showed_them() -> None:
    assert steady_since(None, None, {(T, 0): 5}, 10.0) == 10.0
    assert steady_since(10.0, {(T, 0): 5}, {(T, 0): 5}, 10.5) == 10.0
    assert steady_since(10.0, {(T, 0): 5}, {(T, 0): 6}, 11.0) == 11.0
