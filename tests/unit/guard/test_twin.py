"""Where an unfixed FlinkSource restore's twin reader starts, per consumer config: every branch, exact offsets."""

from __future__ import annotations

import pytest

from splitaudit.audit.checks.findings import WARNING
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.guard.partitions import HeldPartition
from splitaudit.guard.predict import (
    AUTO_COMMIT_WITHOUT_FINALIZE,
    COMMIT_NEVER_FINALIZED,
    LATEST_WITHOUT_COMMITTED,
    RESTORE_REREADS,
    Restore,
    judge,
)
from splitaudit.guard.results import SourceFacts
from splitaudit.guard.twin import (
    AUTO_OFFSET_RESET,
    COMMITTED,
    COMMITTED_OFFSET,
    LOG_END_AT_RESTORE,
    LOG_START,
    NO_SPEC,
    OFFSET_FOR_TIME,
    READER_FAILS,
    START_READ_TIME,
    UNKNOWN,
    TwinStart,
    config_bool,
    predict_twin,
    start_time_text,
)
from splitaudit.patch.jar import JarFacts
from splitaudit.splits.beam import ConfigScalar, ConsumerConfig, KafkaIORead

TOPIC = "orders"
HELD = HeldPartition(TOPIC, 1, 5000)  # the savepoint's next offset S = 5000
V2_62 = JarFacts("job.jar", "2.62.0", "beam-runners-flink-1.19", True, False, False, False, True)
V2_54 = JarFacts("job.jar", "2.54.0", "beam-runners-flink-1.16", True, False, False, False, False)
T0 = 1_700_000_000_000  # a startReadTime, epoch ms


def _spec(commit: bool | None = False, start: int | None = None, **config: ConfigScalar) -> KafkaIORead:
    """A KafkaIO.read() spec: KafkaIO's defaults (latest, no auto commit) with `config` (dots as underscores)."""
    values: dict[str, ConfigScalar] = {"auto.offset.reset": "latest", "enable.auto.commit": False}
    values |= {key.replace("_", "."): value for key, value in config.items()}
    return KafkaIORead("AutoValue_KafkaIO_Read", ConsumerConfig(tuple(sorted(values.items()))), None, commit, start)


def _twin(twin: TwinStart) -> tuple[int | None, str, str, tuple[tuple[int, int], ...], int]:
    return (twin.twin_start, twin.start_is, twin.decided_by, twin.read_twice, twin.read_twice_count)


# The topic now: log start 100, end 8000; the group committed 6000.
COMMITTED_6000 = PartitionOffsets(100, 8000, 6000)
NO_COMMIT = PartitionOffsets(100, 8000, None)


def test_the_groups_committed_offset_decides_when_the_group_has_one() -> None:
    twin = predict_twin(_spec(True, group_id="g", auto_offset_reset="earliest"), V2_62, HELD, COMMITTED_6000)
    assert _twin(twin) == (6000, COMMITTED, COMMITTED_OFFSET, ((6000, 7999),), 2000)
    assert twin.fact == "group.id g has committed offset 6000"
    assert (twin.restored_from, twin.after_restore) == (5000, True)


def test_a_committed_offset_below_the_savepoints_rereads_from_it() -> None:
    # Offsets the first job read (3000..4999) are read again by the twin, the rest twice by the restored job.
    twin = predict_twin(_spec(group_id="g"), V2_62, HELD, PartitionOffsets(0, 8000, 3000))
    assert _twin(twin) == (3000, COMMITTED, COMMITTED_OFFSET, ((3000, 7999),), 5000)


def test_offsets_committed_by_earlier_runs_decide_even_when_nothing_commits_now() -> None:
    twin = predict_twin(_spec(False, group_id="g"), V2_54, HELD, COMMITTED_6000)
    assert _twin(twin) == (6000, COMMITTED, COMMITTED_OFFSET, ((6000, 7999),), 2000)


def test_a_committed_offset_outside_the_log_falls_back_to_auto_offset_reset() -> None:
    twin = predict_twin(_spec(group_id="g", auto_offset_reset="earliest"), V2_62, HELD, PartitionOffsets(100, 8000, 50))
    assert _twin(twin) == (100, LOG_START, AUTO_OFFSET_RESET, ((100, 7999),), 7900)
    assert twin.fact == "auto.offset.reset=earliest, group.id g's committed offset 50 is outside the log"


def test_earliest_without_committed_offsets_starts_at_the_log_start() -> None:
    twin = predict_twin(_spec(True, group_id="g", auto_offset_reset="earliest"), V2_62, HELD, NO_COMMIT)
    assert _twin(twin) == (100, LOG_START, AUTO_OFFSET_RESET, ((100, 7999),), 7900)
    assert twin.fact == "auto.offset.reset=earliest, group.id g has no committed offset"
    fresh = predict_twin(_spec(auto_offset_reset=" EARLIEST "), V2_62, HELD, PartitionOffsets(0, 8000))
    assert _twin(fresh) == (0, LOG_START, AUTO_OFFSET_RESET, ((0, 7999),), 8000)
    assert fresh.fact == "auto.offset.reset=earliest, no group.id"


def test_latest_starts_at_the_log_end_at_the_restore_so_only_later_records_are_read_twice() -> None:
    twin = predict_twin(_spec(), V2_62, HELD, NO_COMMIT)
    assert _twin(twin) == (None, LOG_END_AT_RESTORE, AUTO_OFFSET_RESET, (), 0)
    assert twin.sentence() == (
        "a second reader starts at the log end at the restore (auto.offset.reset=latest, no group.id): nothing "
        "already in the topic (the backlog from 5000 is read once); every record produced after the restore is "
        "read twice"
    )


def test_an_absent_auto_offset_reset_is_kafkas_latest() -> None:
    spec = KafkaIORead("AutoValue_KafkaIO_Read", ConsumerConfig(()), None, None, None)
    assert _twin(predict_twin(spec, V2_62, HELD, NO_COMMIT)) == (None, LOG_END_AT_RESTORE, AUTO_OFFSET_RESET, (), 0)


def test_auto_offset_reset_none_makes_the_twin_fail() -> None:
    twin = predict_twin(_spec(auto_offset_reset="none"), V2_62, HELD, NO_COMMIT)
    assert _twin(twin) == (None, READER_FAILS, AUTO_OFFSET_RESET, (), 0)
    assert twin.after_restore is False


def test_an_unknown_auto_offset_reset_is_unknown() -> None:
    twin = predict_twin(_spec(auto_offset_reset="by_duration:PT1H"), V2_62, HELD, NO_COMMIT)
    assert _twin(twin) == (None, UNKNOWN, AUTO_OFFSET_RESET, (), 0)


def test_start_read_time_decides_before_any_committed_offset() -> None:
    spec = _spec(True, T0, group_id="g", auto_offset_reset="earliest")
    twin = predict_twin(spec, V2_62, HELD, COMMITTED_6000, for_time=4200)
    assert _twin(twin) == (4200, OFFSET_FOR_TIME, START_READ_TIME, ((4200, 7999),), 3800)
    assert twin.fact == "startReadTime 2023-11-14T22:13:20.000Z: offset 4200"
    # No record at or after the time yet: the twin starts at the first produced before the restore.
    later = predict_twin(spec, V2_62, HELD, COMMITTED_6000, for_time=None)
    assert _twin(later) == (None, LOG_END_AT_RESTORE, START_READ_TIME, (), 0)
    # Without --bootstrap the offset for the time is not known.
    assert _twin(predict_twin(spec, V2_62, HELD, None)) == (None, OFFSET_FOR_TIME, START_READ_TIME, (), 0)


@pytest.mark.parametrize(
    ("spec", "jar", "expected"),
    [
        (_spec(True, group_id="g"), V2_62, (None, COMMITTED, COMMITTED_OFFSET, (), 0)),
        (_spec(False, group_id="g", enable_auto_commit="True"), V2_62, (None, COMMITTED, COMMITTED_OFFSET, (), 0)),
        # 2.54.0 never finalizes: nothing commits, so auto.offset.reset decides unless earlier runs committed.
        (_spec(True, group_id="g", auto_offset_reset="earliest"), V2_54, (None, LOG_START, AUTO_OFFSET_RESET, (), 0)),
        (_spec(False, auto_offset_reset="earliest"), V2_62, (None, LOG_START, AUTO_OFFSET_RESET, (), 0)),
    ],
    ids=["finalize-commits", "auto-commit", "2.54-never-finalizes", "no-group"],
)
def test_without_bootstrap_the_deciding_fact_is_named_and_no_offset_guessed(
    spec: KafkaIORead, jar: JarFacts, expected: tuple[object, ...]
) -> None:
    assert _twin(predict_twin(spec, jar, HELD, None)) == expected


def test_a_source_without_a_kafka_spec_is_unknown() -> None:
    assert _twin(predict_twin(None, V2_62, HELD, NO_COMMIT)) == (None, UNKNOWN, NO_SPEC, (), 0)


def test_kafka_booleans_and_times_read_as_the_client_reads_them() -> None:
    assert [config_bool(v) for v in (True, False, " TRUE ", "false", "yes", 1, None)] == [
        True, False, True, False, None, None, None
    ]  # fmt: skip
    assert start_time_text(T0) == "2023-11-14T22:13:20.000Z"


def _source(spec: KafkaIORead) -> SourceFacts:
    return SourceFacts("kafka-read", 2, ("beam_flink_source",), (HELD, HeldPartition(TOPIC, 3, 5000)), spec=spec)


def _warnings(jar: JarFacts, spec: KafkaIORead, kafka: dict[tuple[str, int], PartitionOffsets]) -> list[object]:
    findings = judge(Restore(jar, [_source(spec)]), (), (), kafka)
    return [(f.kind, f.topic, f.partition, f.count) for f in findings if f.severity == WARNING]


def test_the_data_loss_settings_warn() -> None:
    kafka = {(TOPIC, 1): NO_COMMIT, (TOPIC, 3): COMMITTED_6000}
    # KafkaIO's defaults: latest and no group: every partition starts at the end without state.
    assert _warnings(V2_62, _spec(), kafka) == [(LATEST_WITHOUT_COMMITTED, TOPIC, None, 2)]
    # A group: only the partition the group has no committed offset for.
    assert _warnings(V2_62, _spec(True, group_id="g"), kafka) == [(LATEST_WITHOUT_COMMITTED, TOPIC, 1, 1)]
    # Auto commit without commitOffsetsInFinalize (and latest: partition 1 has no committed offset).
    auto = _spec(False, group_id="g", enable_auto_commit=True)
    assert _warnings(V2_62, auto, kafka) == [
        (AUTO_COMMIT_WITHOUT_FINALIZE, None, None, 2),
        (LATEST_WITHOUT_COMMITTED, TOPIC, 1, 1),
    ]
    # commitOffsetsInFinalize on 2.54.0, whose FlinkSource never finalizes; earliest, so no latest warning.
    stale = _spec(True, group_id="g", auto_offset_reset="earliest")
    assert _warnings(V2_54, stale, kafka) == [(COMMIT_NEVER_FINALIZED, None, None, 2)]
    assert _warnings(V2_62, stale, kafka) == []
    # Without --bootstrap: a group the job commits to has offsets to start from; one nobody commits to has not.
    assert _warnings(V2_62, _spec(True, group_id="g"), {}) == []
    assert _warnings(V2_62, _spec(False, group_id="g"), {}) == [(LATEST_WITHOUT_COMMITTED, TOPIC, None, 2)]


def test_the_reread_finding_carries_the_known_part_and_says_the_rest() -> None:
    (finding, *_) = judge(Restore(V2_62, [_source(_spec())]), (), (), {(TOPIC, 1): NO_COMMIT, (TOPIC, 3): NO_COMMIT})
    assert (finding.kind, finding.partition, finding.count, finding.offset_ranges) == (RESTORE_REREADS, 1, 0, ())
    assert "every record produced after the restore is read twice" in finding.detail
