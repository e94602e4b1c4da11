"""The watch's final tally as a pure function of each attempt's last counts, start and end offsets."""

from __future__ import annotations

from splitaudit.guard.tally import (
    AttemptReads,
    PartitionTally,
    SteadySpan,
    kept,
    spans_since,
    spans_with,
    steady_since,
    tally,
)

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


def test_polls_showing_the_same_counts_make_one_span() -> None:
    spans = spans_with((), {(T, 0): 5}, 10.0)
    spans = spans_with(spans, {(T, 0): 5}, 10.5)
    spans = spans_with(spans, {(T, 0): 7}, 11.0)
    assert spans == (SteadySpan(10.0, 10.5, {(T, 0): 5}), SteadySpan(11.0, 11.0, {(T, 0): 7}))
    # A checkpoint triggered at 10.8 needs the counts just before it and those after.
    assert spans_since(spans, 10.8) == spans
    assert spans_since(spans, 11.5) == spans[1:]


# The stock restore's twin readers both read 500..999 and were idle (1000 counted) from 20.0 to 30.0 s; checkpoint
# 12, at 1000, was triggered at 24.0 s and completed at 24.5 s; they then read 1000..1299 of more records (1600
# counted at the last poll) when the TaskManager was killed, and the restart resumed from checkpoint 12.
SPANS = (
    SteadySpan(12.0, 19.8, {(T, 0): 900}),
    SteadySpan(20.0, 30.0, {(T, 0): 1000}),
    SteadySpan(30.2, 30.2, {(T, 0): 1400}),
    SteadySpan(30.4, 30.4, {(T, 0): 1600}),
)
FROM = {(T, 0): 500}
KILLED = AttemptReads(0, FROM, {(T, 0): 1600}, {(T, 0): 1500}, final=False, why="it failed")
RESUMED = {(T, 0): 1000}


def test_an_attempt_ended_by_a_restart_is_tallied_up_to_the_checkpoint_the_restart_resumed_from() -> None:
    # Its counts were steady from before the trigger to past the completion: 1000 at the checkpoint, 500 twice; what
    # it read after it (1000..1299, twice) the restart reads again, and counts.
    at_checkpoint = kept(KILLED, SPANS, RESUMED, 12, 24.0, 24.5, 1.0)
    assert at_checkpoint == AttemptReads(0, FROM, {(T, 0): 1000}, RESUMED, True)
    restart = AttemptReads(1, RESUMED, {(T, 0): 500}, {(T, 0): 1500}, final=True)
    assert tally([at_checkpoint, restart]) == (PartitionTally(T, 0, 1500, 500, True),)


def test_readers_reading_while_the_checkpoint_was_taken_are_counted_at_the_poll_before_it_not_exactly() -> None:
    reading = kept(KILLED, SPANS, RESUMED, 12, 19.9, 20.5, 1.0)
    why = (
        "its readers were reading when checkpoint 12, which the restart resumed from, was taken: counted at its last "
        "poll before it"
    )
    assert reading == AttemptReads(0, FROM, {(T, 0): 900}, RESUMED, False, why)
    # Steady, but not yet long past the completion when the attempt ended.
    assert not kept(KILLED, SPANS, RESUMED, 12, 24.0, 29.5, 1.0).final


def test_an_attempt_idle_at_the_end_the_checkpoint_holds_stays_exact() -> None:
    idle = AttemptReads(0, FROM, {(T, 0): 1000}, {(T, 0): 1000}, final=True)
    assert kept(idle, (), RESUMED, 12, 24.0, 24.5, 1.0) == AttemptReads(0, FROM, {(T, 0): 1000}, RESUMED, True)
