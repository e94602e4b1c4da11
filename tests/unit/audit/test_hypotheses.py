"""Twin-start hypotheses of an aggregate reconciliation: which are tested, and which one is chosen."""

from __future__ import annotations

from splitaudit.audit.checks.hypotheses import (
    COMMITTED,
    LOG_END_AT_RESTORE,
    LOG_START,
    SAVEPOINT_OFFSET,
    Hypothesis,
    choose,
    hypotheses_of,
)

SPAN_START = {("in", 0): 4, ("in", 1): 6}


def test_every_start_kafka_gives_is_tested_once() -> None:
    found = hypotheses_of(SPAN_START, {("in", 0): 0, ("in", 1): 0}, {("in", 0): 2, ("in", 1): 8})
    assert [(h.start_is, h.starts) for h in found] == [
        (SAVEPOINT_OFFSET, ((("in", 0), 4), (("in", 1), 6))),
        (LOG_START, ((("in", 0), 0), (("in", 1), 0))),
        (COMMITTED, ((("in", 0), 2), (("in", 1), 8))),
    ]


def test_the_log_end_at_the_restore_is_tested_when_known_on_every_partition() -> None:
    # The twin of a consumer with no group (Kafka's default, latest) starts at the log end when it starts: 9 and 11
    # here, after records produced while the job was down; it predicts offsets 9.. and 11.. read twice.
    found = hypotheses_of(SPAN_START, {}, {}, {("in", 0): 9, ("in", 1): 11})
    assert [(h.start_is, h.starts) for h in found] == [
        (SAVEPOINT_OFFSET, ((("in", 0), 4), (("in", 1), 6))),
        (LOG_END_AT_RESTORE, ((("in", 0), 9), (("in", 1), 11))),
    ]
    assert found[1].ranges({("in", 0): 12, ("in", 1): 12}) == {("in", 0): (9, 11), ("in", 1): (11, 11)}
    assert [h.start_is for h in hypotheses_of(SPAN_START, {}, {}, {("in", 0): 9, ("in", 1): None})] == [
        SAVEPOINT_OFFSET
    ]


def test_a_start_missing_on_one_partition_and_a_repeated_start_set_are_not_tested() -> None:
    found = hypotheses_of(SPAN_START, {("in", 0): 4, ("in", 1): 6}, {("in", 0): 2, ("in", 1): None})
    assert [h.start_is for h in found] == [SAVEPOINT_OFFSET]  # log start = SP0's offsets: one set, its first name


def test_the_one_exact_hypothesis_is_chosen_with_the_others_rejected() -> None:
    found = hypotheses_of(SPAN_START, {("in", 0): 0, ("in", 1): 0}, {("in", 0): 2, ("in", 1): 8})
    choice = choose(found, (2, 4, 0), excess_keys=4)
    assert choice.chosen is found[2]
    assert choice.rejected_text == "savepoint_offset: 2 keys wrong; log_start: 4 keys wrong"
    assert choice.chosen.ranges({("in", 0): 10, ("in", 1): 10}) == {("in", 0): (2, 9), ("in", 1): (8, 9)}


def test_no_choice_without_excess_or_with_two_exact_hypotheses() -> None:
    a = Hypothesis(SAVEPOINT_OFFSET, ((("in", 0), 4),))
    b = Hypothesis(COMMITTED, ((("in", 0), 10),))
    assert choose((a, b), (3, 0), excess_keys=0).chosen is None
    assert choose((a, b), (0, 0), excess_keys=2).chosen is None
    assert (
        choose((a, b), (0, 0), excess_keys=2).rejected_text
        == "savepoint_offset: 0 keys wrong; committed_offset: 0 keys wrong"
    )


def test_a_start_at_the_span_end_reads_nothing_twice() -> None:
    assert Hypothesis(COMMITTED, ((("in", 0), 10),)).ranges({("in", 0): 10}) == {}
