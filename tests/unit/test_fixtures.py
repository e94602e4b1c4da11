"""Every state fixture under fixtures/ decodes to exactly what its expected.json states.

One test per expected.json, found by walking fixtures/<family>/<case>/, so a new fixture is checked the moment
it is added, and a family this module has no check for fails instead of being skipped. The expected.json
files come from the generators (the job's parameters and its witnesses, fixtures/README.md), never from
splitaudit's reader. Sink fixtures (`beam_sink`) hold no state: tests/unit/scenario/test_sink.py and
tests/integration/test_audit_sink.py check them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.handles import EmptySegmentFileStateHandle, SegmentFileStateHandle
from splitaudit.savepoint.metadata import read_metadata
from splitaudit.savepoint_view import inspect_savepoint, read_keyed_state
from splitaudit.splits import registry
from tests.unit.conftest import FIXTURES, normalized, versioned
from tests.unit.savepoint.test_all_types_fixture import check_all_types_fixture
from tests.unit.splits.test_dynamic_kafka_fixture import check_dynamic_kafka_fixture

EXPECTED_FILES = sorted(FIXTURES.glob("*/*/expected.json"))
SINK_FAMILIES = frozenset({"beam_sink"})


def _same_json(document: Any, expected: Any) -> None:
    """Equal as `--json` prints them: the keys' order is part of the contract."""
    assert json.dumps(document, indent=2) == json.dumps(expected, indent=2)


def _inspect(folder: Path, expected: dict[str, Any]) -> None:
    """A Flink job's snapshot: the whole `inspect` document."""
    snapshot = folder / expected["snapshot_dir"]
    document = inspect_savepoint(str(snapshot)).to_json()
    assert document.pop("path") == str(snapshot / "_metadata")
    _same_json(normalized(document), expected["inspect"])


def _file_merging(folder: Path, expected: dict[str, Any]) -> None:
    """FLIP-306 checkpoints: tags 17 (FileMergingOperatorStreamStateHandle), 15 (segment) and 16 (empty segment).

    Their segments sit outside the checkpoint folder, so what is checked is the metadata's handles."""
    metadata_path = folder / expected["snapshot_dir"] / "_metadata"
    want = expected["metadata"]
    metadata = read_metadata(metadata_path.read_bytes(), str(metadata_path))
    assert (metadata.version, metadata.checkpoint_id) == (want["format_version"], want["checkpoint_id"])
    assert metadata.properties is not None
    assert metadata.properties.kind == want["kind"]
    assert sorted(op.operator_id for op in metadata.operators) == sorted(want["operator_state_handles"])
    for operator in metadata.operators:
        handles = want["operator_state_handles"][operator.operator_id]
        for subtask in operator.subtask_states:
            handle = subtask.managed_operator_state
            assert handle is not None
            assert handle.tag == handles["tag"]
            if handles["delegate"] == "segment":
                assert isinstance(handle.delegate, SegmentFileStateHandle)
                assert handle.delegate.physical_path.startswith("file:/")
                assert not handle.is_empty
                assert all(0 <= o < handle.delegate.state_size for s in handle.states for o in s.offsets)
            else:
                assert isinstance(handle.delegate, EmptySegmentFileStateHandle)
                assert handle.is_empty
                assert handle.states == ()


def _beam_elements(folder: Path, expected: dict[str, Any]) -> None:
    """State elements Beam's own classes wrote: reader splits and the enumerator checkpoint as
    `SimpleVersionedSerialization` blobs, and a bare `UnboundedSourceWrapper` element."""
    elements = {name: want for name, want in expected.items() if name.endswith(".bin")}
    assert sorted(elements) == sorted(path.name for path in folder.glob("*.bin"))
    for name, want in elements.items():
        if "serializer_version" not in want:  # a `_default_` list element carries no version
            decoded = registry.decode_unbounded_wrapper_element(DataInput((folder / name).read_bytes(), name))
            _same_json({"type": decoded.type, "split": decoded.to_json()}, want)
            continue
        version, payload = versioned(folder / name)
        if "state" in want:
            enumerator = registry.decode_enumerator(version, payload, set())
            document = {"serializer_version": version, "type": enumerator.type, "state": enumerator.to_json()}
        else:
            split = registry.decode_reader_split(version, payload)
            document = {"serializer_version": version, "type": split.type, "split": split.to_json()}
        _same_json(document, want)


def _restore_scenario(folder: Path, expected: dict[str, Any]) -> None:
    """A savepoint of the reference pipeline (the beam#31313 restore scenario, or a consumer config case): its one
    source operator's state, minus the checkpoint marks' watermarks (they depend on the run's clock)."""
    view = inspect_savepoint(str(folder)).to_json()
    assert (view["kind"], view["savepoint_format"]) == (expected["kind"], expected["savepoint_format"])
    [source] = [operator for operator in view["operators"] if operator["source"] is not None]
    assert source["parallelism"] == expected["parallelism"]
    for split in source["source"]["reader_splits"]:
        for mark in split["split"]["checkpoint"]["partitions"]:
            del mark["watermark_millis"]
    _same_json(source["source"], expected["source"])


def _sdf_restore(folder: Path, expected: dict[str, Any]) -> None:
    """A savepoint of the Python pipeline's splittable-DoFn read: one resumed residual per partition, with the
    restriction the sink witnessed ([next offset, Long.MAX_VALUE)), held by the one operator with keyed state."""
    [snapshot] = folder.glob("savepoint-*")
    view = inspect_savepoint(str(snapshot)).to_json()
    assert (view["kind"], view["savepoint_format"]) == (expected["kind"], expected["savepoint_format"])
    [source] = [operator for operator in view["operators"] if operator["source"] is not None]
    assert source["parallelism"] == expected["parallelism"]
    assert source["source"]["enumerator"] is None
    splits = source["source"]["reader_splits"]
    assert {split["type"] for split in splits} == {"beam_kafka_sdf"}
    restrictions = [
        {"topic": s["split"]["topic"], "partition": s["split"]["partition"], **s["split"]["restriction"]}
        for s in splits
    ]
    _same_json(restrictions, expected["restrictions"])


def _file_source(folder: Path, expected: dict[str, Any]) -> None:
    """A `FileSource` savepoint taken mid-read: each subtask's split is the file its witness read, resuming at the
    line after the last one it emitted (TextLineInputFormat cannot seek: no byte offset, lines to skip); the files
    no subtask read are pending in the enumerator, unread; every input file is an already-processed path."""
    job = expected["job"]
    files = {f["name"]: f for f in job["input"]}

    def split(name: str, next_line: int | None) -> dict[str, Any]:
        file = files[name]
        position = None if next_line is None else {"offset": -1, "records_after_offset": next_line}
        return {
            "path": "file:" + file["path"],
            "offset": 0,
            "length": file["size"],
            "file_modification_time": file["modified"],
            "file_size": file["size"],
            "hostnames": [],
            "position": position,
        }

    view = inspect_savepoint(str(folder / expected["snapshot_dir"])).to_json()
    [operator] = [operator for operator in view["operators"] if operator["source"] is not None]
    assert (operator["id"], operator["parallelism"]) == (job["source_operator_id"], job["parallelism"])
    source = operator["source"]
    readers = [{k: v for k, v in s["split"].items() if k != "split_id"} for s in source["reader_splits"]]
    assert [(s["subtask"], s["type"]) for s in source["reader_splits"]] == [(0, "flink_file"), (1, "flink_file")]
    assert readers == [split(held["file"], held["next_line"]) for held in expected["held"]]
    state = source["enumerator"]["state"]
    pending = sorted((s for s in state["splits"]), key=lambda s: s["path"])
    assert [{k: v for k, v in s.items() if k != "split_id"} for s in pending] == [
        split(name, None) for name in expected["pending_files"]
    ]
    assert sorted(state["processed_paths"]) == sorted("file:" + f["path"] for f in job["input"])
    # The enumerator numbers the files it finds "0000000001", "0000000002", ... (one split per unsplittable file).
    ids = [s["split"]["split_id"] for s in source["reader_splits"]] + [s["split_id"] for s in state["splits"]]
    assert sorted(ids) == [f"{n:010d}" for n in range(1, len(files) + 1)]


def fold_keyed_state(location: str) -> dict[str, dict[str, Any]]:
    """The keyed state of `KeyedStateFixtureJob`'s snapshot in the shape of its expected.json's `keyed`: per
    operator id and state, values by key (window contents and timers as sorted lists)."""
    folded: dict[str, dict[str, Any]] = {}
    for row in read_keyed_state(location):
        entry = row.entry
        states = folded.setdefault(row.operator_id, {})
        if entry.state.startswith("_timer_state/"):
            timer = [entry.value, entry.key]
            if entry.namespace is not None:
                timer.append([entry.namespace["start"], entry.namespace["end"]])
            states.setdefault(entry.state, []).append(timer)
        elif entry.state == "window-contents":
            window = [entry.namespace["start"], entry.namespace["end"], entry.value]
            states.setdefault(entry.state, {}).setdefault(entry.key, []).append(window)
        elif entry.state == "residues":
            states.setdefault(entry.state, {}).setdefault(entry.key, {})[entry.user_key] = entry.value
        else:
            assert entry.namespace is None  # VoidNamespace
            states.setdefault(entry.state, {})[entry.key] = entry.value
    for states in folded.values():
        for name, value in states.items():
            if isinstance(value, list):
                value.sort()
            else:
                states[name] = {key: sorted(v) if name == "window-contents" else v for key, v in sorted(value.items())}
            if name == "residues":
                states[name] = {key: dict(sorted(v.items())) for key, v in states[name].items()}
    return folded


def _keyed(folder: Path, expected: dict[str, Any]) -> None:
    """`KeyedStateFixtureJob`'s snapshots: every key and value of every keyed state, as the job was fed, RocksDB
    native snapshots (handle tag 11: NATIVE savepoints, full and incremental checkpoints, whose list states are
    RocksDB merge operands over several tables) included."""
    snapshot = str(folder / expected["snapshot_dir"])
    metadata = read_metadata((folder / expected["snapshot_dir"] / "_metadata").read_bytes(), snapshot)
    assert (metadata.version, metadata.checkpoint_id) == (expected["format_version"], expected["checkpoint_id"])
    if expected["job"].get("class") == "AllTypesFixtureJob":
        check_all_types_fixture(folder, expected)
        return
    want = {
        operator_id: {name: value for name, value in operator["states"].items() if value}
        for operator_id, operator in expected["keyed"].items()
    }
    assert fold_keyed_state(snapshot) == want


CHECKS: dict[str, Callable[[Path, dict[str, Any]], None]] = {
    "flink": _inspect,
    "kafka": _inspect,
    "flink-file-merging": _file_merging,
    "beam": _beam_elements,
    "beam_flink_source": _restore_scenario,
    "keyed": _keyed,
    "beam_sdf": _sdf_restore,
    "flink_file": _file_source,
    "dynamic_kafka": check_dynamic_kafka_fixture,
}


def test_every_fixture_family_has_its_check() -> None:
    # Both ways: a family on disk without a check, or a check whose fixtures the walk no longer finds, fails.
    assert {path.parent.parent.name for path in EXPECTED_FILES} == set(CHECKS) | SINK_FAMILIES


@pytest.mark.parametrize(
    "expected_file",
    [path for path in EXPECTED_FILES if path.parent.parent.name not in SINK_FAMILIES],
    ids=lambda path: f"{path.parent.parent.name}/{path.parent.name}",
)
def test_every_fixture_decodes_to_its_expected_json(expected_file: Path) -> None:
    CHECKS[expected_file.parent.parent.name](expected_file.parent, json.loads(expected_file.read_text()))
