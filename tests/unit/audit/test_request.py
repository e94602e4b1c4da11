"""An audit or diff request is checked when it is made: options that do not combine, and local inputs that do not
exist, are refused with one exact message (a UsageError: exit 2) before anything is read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from splitaudit.audit.request import (
    AggregateMatch,
    AuditRequest,
    DiffRequest,
    IdentityMatch,
    SinkColumns,
)
from splitaudit.errors import UsageError
from splitaudit.savepoint.fileio import SavepointOptions

# What `audit` passes when only the options a test names are given (click's defaults).
DEFAULTS: dict[str, Any] = {
    "savepoint": None,
    "before": None,
    "sink": None,
    "sink_format": "parquet",
    "sink_naming": None,
    "watermark_delay": None,
    "topic_col": "topic",
    "partition_col": "partition",
    "offset_col": "offset",
    "bootstrap": None,
    "topics": (),
    "group": None,
    "partitions": (),
    "sink_key": None,
    "source_key": None,
    "match_payload": False,
    "jar": None,
    "uids": (),
    "allow_external_state": False,
    "max_file_size": 1 << 30,
    "exactly_once": False,
    "master": "local[*]",
}


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, str]:
    """A savepoint, an earlier one and a sink that exist."""
    paths = {name: tmp_path / name for name in ("savepoint", "before", "sink")}
    for path in paths.values():
        path.mkdir()
    return {name: str(path) for name, path in paths.items()}


def _request(**options: Any) -> AuditRequest:
    """The request `audit` makes of these options (click's defaults for the others): each settings group built
    first, as the command's decorators do (`cli/audit.py`), then the request of them and the other options."""
    given = {**DEFAULTS, **options}
    columns = SinkColumns(given.pop("topic_col"), given.pop("partition_col"), given.pop("offset_col"))
    reading = SavepointOptions(given.pop("uids"), given.pop("allow_external_state"), given.pop("max_file_size"))
    identity = IdentityMatch.from_options(given.pop("sink_key"), given.pop("source_key"), given.pop("match_payload"))
    return AuditRequest(columns=columns, savepoint_options=reading, identity=identity, **given)


def _refused(message: str, **options: Any) -> None:
    with pytest.raises(UsageError) as refused:
        _request(**options)
    assert str(refused.value) == message


def test_the_options_become_one_request(inputs: dict[str, str]) -> None:
    request = _request(
        savepoint=inputs["savepoint"],
        sink=inputs["sink"],
        topic_col="t",
        uids=("source",),
        sink_key="timestamp",
        source_key="timestamp",
        bootstrap="localhost:9092",
    )
    assert request.columns == SinkColumns("t", "partition", "offset")
    assert request.savepoint_options == SavepointOptions(("source",), False, 1 << 30)
    assert request.identity == IdentityMatch("timestamp", "timestamp")


@pytest.mark.parametrize(
    ("sink_key", "source_key", "match_payload", "identity"),
    [
        (None, None, False, None),
        ("k", "v", False, IdentityMatch("k", "v")),
        (None, None, True, IdentityMatch("value", "value")),
        ("payload", None, True, IdentityMatch("payload", "value")),
    ],
)
def test_the_identity_options(
    sink_key: str | None, source_key: str | None, match_payload: bool, identity: IdentityMatch | None
) -> None:
    assert IdentityMatch.from_options(sink_key, source_key, match_payload) == identity


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"match_payload": True, "source_key": "v"},
            "--match-payload compares the record values: give no --source-key with it",
        ),
        ({"sink_key": "k"}, "give --sink-key and --source-key together (or --match-payload for a pass-through job)"),
        ({"source_key": "v"}, "give --sink-key and --source-key together (or --match-payload for a pass-through job)"),
        ({}, "give --savepoint, --sink or both: there is nothing to audit"),
        ({"before": "sp0"}, "give --savepoint, --sink or both: there is nothing to audit"),
        ({"sink": "s", "before": "sp0"}, "--before needs --savepoint: it is the earlier savepoint to compare it with"),
        ({"savepoint": "sp", "partitions": ((None, 0),)}, "--partitions must be at least 1, not 0"),
        ({"savepoint": "sp", "partitions": (("t", -1),)}, "--partitions must be at least 1, not -1 (topic t)"),
        (
            {"savepoint": "sp", "partitions": ((None, 4), (None, 2))},
            "--partitions N names the one source topic: give it once, or TOPIC=N per topic",
        ),
        (
            {"savepoint": "sp", "group": "g"},
            "--group needs --bootstrap: the group's offsets are read from the Kafka cluster",
        ),
        (
            {"sink": "s", "sink_format": "kafka"},
            "--sink-format kafka needs --bootstrap: --sink names a topic of that cluster",
        ),
        (
            {"sink": "s", "bootstrap": "b:9092"},
            "--bootstrap needs --topic (or a --savepoint whose sources name their topics)",
        ),
        (
            {"savepoint": "sp", "bootstrap": "b:9092", "match_payload": True},
            "--sink-key/--source-key and --match-payload need --sink and --bootstrap: the sink's rows are mapped "
            "to the records of the source topics, read from that cluster",
        ),
        (
            {"sink": "s", "sink_key": "k", "source_key": "v"},
            "--sink-key/--source-key and --match-payload need --sink and --bootstrap: the sink's rows are mapped "
            "to the records of the source topics, read from that cluster",
        ),
        (
            {"savepoint": "sp", "sink_naming": "{start}-{end}"},
            "--sink-naming needs --sink naming a directory of files: it reads their names",
        ),
        (
            {
                "sink": "t",
                "sink_format": "kafka",
                "bootstrap": "b:9092",
                "topics": ("t",),
                "sink_naming": "{start}-{end}",
            },
            "--sink-naming needs --sink naming a directory of files: it reads their names",
        ),
        (
            {"sink": "s", "sink_naming": "{shard}"},
            "the --sink-naming template '{shard}' names neither {shard} and {shards} nor {start} and {end}: it would "
            "say nothing of a file",
        ),
        (
            {"savepoint": "sp", "jar": "job.jar"},
            "--jar needs --before: it is the jar of the job restored from that savepoint",
        ),
    ],
)
def test_options_that_do_not_combine_are_refused(options: dict[str, Any], message: str) -> None:
    _refused(message, **options)


@pytest.mark.parametrize("option", ["savepoint", "before", "sink"])
def test_a_local_input_that_does_not_exist_is_refused(inputs: dict[str, str], tmp_path: Path, option: str) -> None:
    absent = str(tmp_path / "absent")
    _refused(f"{absent}: no such file or directory (--{option})", **{**inputs, option: absent})


def test_uris_and_a_sink_topic_are_left_to_the_readers(inputs: dict[str, str]) -> None:
    AuditRequest(savepoint="s3://bucket/savepoint-1", before="hdfs://nn/savepoint-0", sink="gs://b/sink")
    AuditRequest(sink="no such topic here", sink_format="kafka", bootstrap="b:9092", topics=("t",))


def test_the_checks_hold_for_every_caller_not_only_the_cli() -> None:
    # The pytest plugin and the scenarios make their requests directly: the same checks, the same messages.
    with pytest.raises(UsageError) as refused:
        AuditRequest()
    assert str(refused.value) == "give --savepoint, --sink or both: there is nothing to audit"


def test_a_diff_names_the_argument_whose_savepoint_does_not_exist(inputs: dict[str, str], tmp_path: Path) -> None:
    absent = str(tmp_path / "absent")
    assert DiffRequest(inputs["before"], inputs["savepoint"]).after == inputs["savepoint"]
    with pytest.raises(UsageError) as refused:
        DiffRequest(absent, inputs["savepoint"])
    assert str(refused.value) == f"{absent}: no such file or directory (SP0)"
    with pytest.raises(UsageError) as refused:
        DiffRequest(inputs["before"], absent)
    assert str(refused.value) == f"{absent}: no such file or directory (SP1)"


def test_aggregate_options_are_checked_before_anything_is_read(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="give count, or sum"):
        AggregateMatch("avg:x", "value", "k", "n")
    with pytest.raises(UsageError, match="needs the expression"):
        AggregateMatch("sum", "value", "k", "n")
    with pytest.raises(UsageError, match="takes no expression"):
        AggregateMatch("count:x", "value", "k", "n")
    with pytest.raises(UsageError, match="--event-time, --window-size and --sink-window together"):
        AggregateMatch("count", "value", "k", "n", event_time="timestamp")
    match = AggregateMatch("latest:value", "key", "k", "n")
    assert (match.function, match.expression, match.auditable) == ("latest", "value", False)
    with pytest.raises(UsageError, match="--aggregate needs --sink, --bootstrap, --before SP0 and --savepoint SP1"):
        AuditRequest(sink=str(tmp_path), aggregate=AggregateMatch("count", "value", "k", "n"))


NO_AGGREGATE: dict[str, Any] = {
    "group_key": None,
    "sink_group_key": None,
    "sink_value": None,
    "event_time": None,
    "window_size": None,
    "window_offset": 0.0,
    "sink_window": None,
    "panes": "discarding",
}


def test_the_aggregate_group_is_none_without_aggregate_and_whole_with_it() -> None:
    assert AggregateMatch.from_options(None, **NO_AGGREGATE) is None
    described = {**NO_AGGREGATE, "group_key": "value", "sink_group_key": "k", "sink_value": "n"}
    assert AggregateMatch.from_options("count", **described) == AggregateMatch("count", "value", "k", "n")
    with pytest.raises(UsageError) as refused:
        AggregateMatch.from_options(None, **{**NO_AGGREGATE, "sink_value": "n", "event_time": "timestamp"})
    assert str(refused.value) == "--sink-value, --event-time: only with --aggregate (they describe an aggregating sink)"
    with pytest.raises(UsageError) as refused:
        AggregateMatch.from_options("count", **{**NO_AGGREGATE, "group_key": "value"})
    assert str(refused.value) == "--aggregate needs --sink-group-key, --sink-value"
