"""`inspect_savepoint` on real fixtures: offsets against the job's witnesses, uids, V3 kinds, read-only access.

(That every fixture decodes to its expected.json is tests/unit/test_fixtures.py.)
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from splitaudit.savepoint_view import inspect_savepoint
from tests.unit.conftest import FlinkFixture, fixture, flink_fixtures

FIXTURES = flink_fixtures()


def test_split_offsets_follow_from_what_the_job_emitted() -> None:
    # The witness says subtask s emitted values first..last, so its reader resumes at last + 1.
    case = fixture("2.1.1-savepoint-native-files-snappy")
    view = inspect_savepoint(str(case.snapshot))
    source = next(op.source for op in view.operators if op.uid == "seq-source")
    assert source is not None
    resumes = {split.subtask: split.state.to_json()["from"] for split in source.reader_splits}
    assert resumes == {w["subtask"]: w["last"] + 1 for w in case.expected["job"]["witness"]}


def test_kafka_reader_and_enumerator_state_match_the_topic() -> None:
    # Connector 5.0.0 (enum state v3) keeps each partition's split in the enumerator as well.
    case = fixture("2.1.1-kafka-5.0.0-2.1-savepoint")
    view = inspect_savepoint(str(case.snapshot), uids=["kafka-source"])
    [source] = [op.source for op in view.operators]
    assert source is not None
    assert source.enumerator is not None
    assert source.enumerator.serializer_version == 3
    topic = case.expected["job"]["topic"]
    partitions = {(s.state.to_json()["topic"], s.state.to_json()["partition"]) for s in source.reader_splits}
    assert partitions == {(topic, p) for p in range(case.expected["job"]["partitions"])}


def test_v3_kind_comes_from_the_folder_name(tmp_path: Path) -> None:
    # Flink 1.15 writes metadata V3, without the CheckpointProperties trailer.
    case = fixture("1.15.4-savepoint-canonical-inline")
    assert inspect_savepoint(str(case.snapshot)).kind == "savepoint"
    assert inspect_savepoint(str(fixture("1.15.4-checkpoint-retained-inline").snapshot)).kind == "checkpoint"
    renamed = tmp_path / "my-backup"
    shutil.copytree(case.snapshot, renamed)
    view = inspect_savepoint(str(renamed))
    assert (view.kind, view.savepoint_format, view.format_version) == (None, None, 3)


def test_metadata_file_path_is_accepted() -> None:
    case = fixture("1.20.3-checkpoint-retained-inline")
    assert inspect_savepoint(str(case.metadata)) == inspect_savepoint(str(case.snapshot))


def test_uid_names_operators_of_1x_files_and_filters() -> None:
    case = fixture("1.19.3-savepoint-canonical-inline")
    view = inspect_savepoint(str(case.snapshot), uids=["seq-source"])
    assert [(op.operator_id, op.uid) for op in view.operators] == [("7a0e22450c7ff084b745556dd9e4a928", "seq-source")]
    assert inspect_savepoint(str(case.snapshot), uids=["no-such-uid"]).operators == ()


def _tree_hash(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("case", FIXTURES, ids=lambda f: f.name)
def test_inspect_leaves_the_directory_byte_identical(case: FlinkFixture) -> None:
    before = _tree_hash(case.snapshot)
    mtimes = {p: p.stat().st_mtime_ns for p in case.snapshot.rglob("*")}
    inspect_savepoint(str(case.snapshot))
    assert _tree_hash(case.snapshot) == before
    assert {p: p.stat().st_mtime_ns for p in case.snapshot.rglob("*")} == mtimes
