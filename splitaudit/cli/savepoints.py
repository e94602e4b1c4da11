"""`inspect` and `diff`: one savepoint's source split state, and two savepoints of one job compared; pure Python."""

from __future__ import annotations

from dataclasses import replace
from typing import NoReturn

import click

from splitaudit.cli.context import Context, run
from splitaudit.cli.settings import SAVEPOINT_OPTIONS
from splitaudit.savepoint.fileio import SavepointOptions


@click.command()
@click.argument("before", metavar="SP0")
@click.argument("after", metavar="SP1")
@SAVEPOINT_OPTIONS
@click.pass_context
def diff(ctx: click.Context, before: str, after: str, savepoint_options: SavepointOptions) -> None:
    """Compare two savepoints of one job: SP0 the earlier, SP1 the later.

    Reports, per source operator and (topic, partition): a next offset that went backwards (rewind: the
    offsets between are read again; error), a partition SP1 no longer holds (dropped: error), and one only
    SP1 holds (new: info). Exit 0 clean, 1 findings of severity error, 2 bad input. The savepoints are read in
    pure Python: no Spark starts.
    """

    def action(context: Context) -> int:
        from splitaudit.audit.request import DiffRequest
        from splitaudit.audit.run import run_diff

        request = DiffRequest(before, after, savepoint_options)
        findings = run_diff(request, context.progress)
        context.output.findings(findings)
        return findings.exit_code

    run(ctx, action)


@click.command()
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON document (same as the global --json).")
@click.option(
    "--keyed",
    is_flag=True,
    help="Also read every keyed state to its end and count, per operator and state, the entries read whole, those "
    "kept partly as bytes (raw: a Kryo or unknown serializer) and the rows standing for entries that could not be "
    "read (unread: a heap state of an unknown serializer), with why. Reads all of the keyed state (about a "
    "minute per GiB; each operator's read shown on stderr as it goes); the data source's keyed table lists each "
    "entry.",
)
@SAVEPOINT_OPTIONS
@click.pass_context
def inspect(ctx: click.Context, path: str, as_json: bool, keyed: bool, savepoint_options: SavepointOptions) -> NoReturn:
    """Show the source split state of a Flink savepoint or checkpoint, without a JVM.

    PATH is a savepoint/checkpoint directory or its _metadata file: a local path or an s3://, hdfs://, gs:// or
    file: URI. Reads Flink 1.8-2.3 metadata (versions 2-6, tolerates 7) and decodes, per source subtask, the
    splits it held: Flink NumberSequenceSource, Flink KafkaSource, Flink FileSource, Beam FlinkSourceSplit
    (KafkaIO) and Beam UnboundedSourceWrapper state; anything else is shown as hex. The enumerator checkpoint of
    each source coordinator is decoded the same way. KafkaIO's splittable-DoFn read (Python's ReadFromKafka on
    the portable runner) is read from keyed state: one beam_kafka_sdf split per partition, its restriction
    [from, to) and the subtask and key group holding it. Nothing is written; no Java class is ever loaded.

    The console shows one row per (subtask, split, topic, partition) with its next and stopping offsets, and the
    enumerator's splits the same way; every split's full state is in --json.

    With the global --json, prints one document: {path, format_version, checkpoint_id, kind,
    savepoint_format, operators: [{id, uid, name, parallelism, max_parallelism, source}]}, and with --keyed
    keyed: [{operator_id, uid, state, read, raw, unread, reasons}].
    Only regular files are read, each at most --max-file-size and, for a state file, exactly as large as its
    state handle says. Exit code 2 (with the file and byte offset) when the input is corrupt or unreadable.
    """

    if as_json:
        ctx.obj = replace(ctx.obj, as_json=True)

    def action(context: Context) -> None:
        from splitaudit.savepoint_view import inspect_savepoint

        options = savepoint_options
        view = inspect_savepoint(
            path, options.uids, options.allow_external_state, options.max_file_size, keyed, context.progress
        )
        context.output.savepoint_view(view)

    run(ctx, action)
