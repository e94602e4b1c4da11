"""The KafkaSource restore failures of issue 38, run for real on every release of the matrix (connector 3.3.0-1.19
on Flink 1.19.3, 3.4.0-1.20 on 1.20.3, 4.0.1-2.0 on 2.0.1, 5.0.0-2.1 on 2.1.1, 5.0.0-2.2 on 2.2.1;
`splitaudit_lab.stack.kafka_matrix`), each on a stack of the release's Flink (test_flink_kafka_matrix.py's `matrix`
fixture), with the DataStream job of beam_pipelines/java/flink-jobs built for it: the truth (the restored job's rows
in the sink per partition and offset range, and a bounded job's state), the guard's prediction before the restore,
the watch's findings while the restored job runs and the audit's findings after it, asserted exactly per release,
and the words of the findings that say why (docs/flink-kafka-jobs.md, "Restore failures").

Each run: a topic of 2 partitions (two topics for the removed-topic run), 200 records (100 per partition), the job
at parallelism 2 until they are in its sink and a checkpoint covers them, a savepoint SP0, cancel; then

- FLINK-31006: the job bounded at offset 200 per partition; 200 more records; restored from SP0 it reads
  100..199 of each partition and is still RUNNING 30 s later (cancelled after a savepoint SP1); with 2 partitions
  added while it was down (and every partition filled to 200) the restored job finishes, as the guard says;
- FLINK-34089: 200 more records to each topic; restored from SP0 subscribing to the first topic only, it reads
  100..199 of the second topic's partitions all the same;
- the topic deleted and re-created (2 partitions) with 100 records (50 per partition) behind SP0: the restored
  readers' offset 100 is past the new log end 50; auto.offset.reset earliest (setStartingOffsets earliest) sends
  them to 0: they read 0..49 of the new log; with latest, none of the new log is read;
- `--startingOffsets=latest` on the restore: the restored readers resume at SP0's 100 and read 100..199.

Each case compares one dict of everything measured with what the release really did, so that a difference shows
every figure at once. Neither FLINK-31006 nor FLINK-34089 is fixed in any of these connector releases.

`make flink-matrix` runs it (marker `flink_kafka`); none of it is in `make test`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from splitaudit.audit.checks.bounded_sources import BOUNDED_SOURCE_NOT_ENDED, BOUNDED_SPLIT_FINISHED
from splitaudit.audit.checks.findings import ERROR, INFO, LAG, PAST_SAVEPOINT, REPLAY, REWIND, WARNING
from splitaudit.audit.checks.recreated_topics import OFFSET_PAST_LOG_END
from splitaudit.audit.checks.removed_topics import REMOVED_TOPIC_READ
from splitaudit.guard.kafka_restore import BOUNDED_NEVER_FINISHES, STARTING_OFFSETS_IGNORED
from splitaudit.guard.kafka_restore import REMOVED_TOPIC_READ as STILL_READ
from splitaudit.guard.predict import DISCOVERED_ON_RESTORE
from splitaudit.progress import Progress
from splitaudit_lab.scenario.kafka_restore_bugs import (
    RestoreBugRun,
    run_bounded_restore,
    run_recreated_topic_restore,
    run_removed_topic_restore,
    run_starting_offsets_restore,
)
from splitaudit_lab.scenario.restore import ScenarioSettings
from tests.integration.kafka_restore_rows import names, reads, rows, watch_rows

# The release's stack, shared with the clean/grown/rescale cases' module rather than copied.
from tests.integration.test_flink_kafka_matrix import MatrixStack, matrix  # noqa: F401

pytestmark = [pytest.mark.integration, pytest.mark.needs_build, pytest.mark.flink_kafka]

ONE_TOPIC = ScenarioSettings(partitions=2, records=200, parallelism=2, timeout=120.0)
TWO_TOPICS = ScenarioSettings(partitions=2, more_topics=(2,), records=200, parallelism=2, timeout=120.0)
GROWN = ScenarioSettings(partitions=2, records=200, parallelism=2, timeout=120.0, added_partitions=2)
QUICK = ScenarioSettings(partitions=2, records=200, parallelism=2, timeout=30.0)
P01 = (0, 1)


def _measured(result: RestoreBugRun) -> dict[str, Any]:
    """Everything a case asserts: the truth, the guard's findings, the sink's audit, the savepoints' audit and the
    watch's findings on the restored job."""
    t = names(result)
    return {
        "reads": reads(result, t),
        "state": result.state_after_wait,
        "guard": rows(result.guard.findings, t),
        "audit": rows(result.run.audit.findings, t),
        "savepoint_audit": None if result.savepoint_audit is None else rows(result.savepoint_audit.findings, t),
        "watch": watch_rows(result, t),
    }


def test_a_bounded_restore_never_finishes(matrix: MatrixStack, tmp_path: Path) -> None:  # noqa: F811
    """FLINK-31006: bounded at 200, SP0 at 100, restored: reads 100..199 of each partition, then waits forever."""
    jar = matrix.release.datastream_job
    result = run_bounded_restore(matrix.stack, tmp_path / "bounded", Progress(), ONE_TOPIC, 30.0, jar)
    finished = [(BOUNDED_SPLIT_FINISHED, INFO, "A", p, 0, ()) for p in P01]
    assert _measured(result) == {
        "reads": [("A", p, 100, ((100, 199),)) for p in P01],
        "state": "RUNNING",
        "guard": [
            *[(LAG, INFO, "A", p, 100, ((100, 199),)) for p in P01],
            (BOUNDED_NEVER_FINISHES, ERROR, None, None, 2, ()),
        ],
        "audit": [*finished, *finished, (BOUNDED_SOURCE_NOT_ENDED, WARNING, None, None, 2, ())],
        "savepoint_audit": [*finished, *finished, (BOUNDED_SOURCE_NOT_ENDED, WARNING, None, None, 2, ())],
        "watch": [(BOUNDED_NEVER_FINISHES, ERROR, None, None, 2, ())],
    }
    # Every record up to the stopping offset in the sink once; the guard says why the restore never ends.
    assert [(p.partition, p.expected_records, p.sink_rows, p.missing_offsets) for p in result.run.partitions] == [
        (0, 200, 200, 0), (1, 200, 200, 0)
    ]  # fmt: skip
    assert "its splits carry stopping offsets (200: a bounded source)" in result.guard.findings[2].detail
    assert result.run.audit.exit_code == 0


def test_a_bounded_restore_whose_topic_gained_partitions_finishes(matrix: MatrixStack, tmp_path: Path) -> None:  # noqa: F811
    jar = matrix.release.datastream_job
    result = run_bounded_restore(matrix.stack, tmp_path / "bounded-grown", Progress(), GROWN, 30.0, jar)
    assert _measured(result) == {
        "reads": [
            ("A", 0, 100, ((100, 199),)),
            ("A", 1, 100, ((100, 199),)),
            ("A", 2, 200, ((0, 199),)),
            ("A", 3, 200, ((0, 199),)),
        ],
        "state": "FINISHED",
        "guard": [
            (DISCOVERED_ON_RESTORE, INFO, "A", 2, 200, ((0, 199),)),
            (DISCOVERED_ON_RESTORE, INFO, "A", 3, 200, ((0, 199),)),
            *[(LAG, INFO, "A", p, 200, ((100, 299),)) for p in P01],
        ],
        "audit": [],
        "savepoint_audit": None,  # a finished job takes no savepoint
        "watch": [],
    }
    assert result.guard.safe  # 2 and 3 are not in SP0's KafkaSourceEnumState: the restored job ends
    assert result.watch.job_state == "FINISHED"


def test_a_removed_topic_is_still_read(matrix: MatrixStack, tmp_path: Path) -> None:  # noqa: F811
    """FLINK-34089: topics A and B, restored subscribing to A only: B's restored splits are read all the same."""
    jar = matrix.release.datastream_job
    result = run_removed_topic_restore(matrix.stack, tmp_path / "removed", Progress(), TWO_TOPICS, jar)
    assert _measured(result) == {
        "reads": [(topic, p, 100, ((100, 199),)) for topic in "AB" for p in P01],
        "state": None,
        "guard": [
            *[(LAG, INFO, topic, p, 100, ((100, 199),)) for topic in "AB" for p in P01],
            *[(STILL_READ, ERROR, "B", p, 100, ((100, 199),)) for p in P01],
        ],
        "audit": [],
        "savepoint_audit": [(REMOVED_TOPIC_READ, ERROR, "B", p, 100, ((100, 199),)) for p in P01],
        "watch": [(REMOVED_TOPIC_READ, ERROR, "B", p, 100, ((100, 199),)) for p in P01],
    }


def test_a_recreated_topic_is_read_from_earliest(matrix: MatrixStack, tmp_path: Path) -> None:  # noqa: F811
    jar = matrix.release.datastream_job
    result = run_recreated_topic_restore(
        matrix.stack, tmp_path / "recreated", Progress(), ONE_TOPIC, 100, "earliest", jar
    )
    rewind = [(REWIND, ERROR, "A", p, 50, ((50, 99),)) for p in P01]
    assert _measured(result) == {
        "reads": [("A", p, 50, ((0, 49),)) for p in P01],
        "state": None,
        "guard": [(OFFSET_PAST_LOG_END, WARNING, "A", p, 50, ((0, 49),)) for p in P01],
        "audit": [
            *rewind,
            *[(REPLAY, WARNING, "A", p, 50, ((0, 49),)) for p in P01],
            *[(PAST_SAVEPOINT, WARNING, "A", p, 50, ((50, 99),)) for p in P01],
        ],
        "savepoint_audit": [*rewind, *[(OFFSET_PAST_LOG_END, WARNING, "A", p, 50, ((0, 49),)) for p in P01]],
        "watch": [(OFFSET_PAST_LOG_END, WARNING, "A", p, 50, ((0, 49),)) for p in P01],
    }
    assert result.guard.safe
    assert "auto.offset.reset decides: earliest (setStartingOffsets earliest)" in result.guard.findings[0].detail
    assert result.savepoint_audit is not None
    assert "it read offsets 0..49 of the new log" in result.savepoint_audit.findings[2].detail


def test_a_recreated_topic_restored_with_latest_loses_the_new_log(matrix: MatrixStack, tmp_path: Path) -> None:  # noqa: F811
    jar = matrix.release.datastream_job
    result = run_recreated_topic_restore(
        matrix.stack, tmp_path / "recreated-latest", Progress(), QUICK, 100, "latest", jar
    )
    lost = [(OFFSET_PAST_LOG_END, ERROR, "A", p, 50, ((0, 49),)) for p in P01]
    assert _measured(result) == {
        "reads": [],
        "state": None,
        "guard": lost,
        "audit": [],
        "savepoint_audit": lost,
        "watch": lost,
    }
    assert "it skips to the log end: the 50 records there are lost" in result.guard.findings[0].detail
    assert result.savepoint_audit is not None
    assert "still holds it at 100, past the new log" in result.savepoint_audit.findings[0].detail


def test_starting_offsets_are_ignored_on_restore(matrix: MatrixStack, tmp_path: Path) -> None:  # noqa: F811
    jar = matrix.release.datastream_job
    result = run_starting_offsets_restore(matrix.stack, tmp_path / "starting", Progress(), ONE_TOPIC, jar)
    assert _measured(result) == {
        "reads": [("A", p, 100, ((100, 199),)) for p in P01],
        "state": None,
        "guard": [
            *[(LAG, INFO, "A", p, 100, ((100, 199),)) for p in P01],
            *[(STARTING_OFFSETS_IGNORED, INFO, "A", p, 0, ()) for p in P01],
        ],
        "audit": [],
        "savepoint_audit": [],
        "watch": [],
    }
