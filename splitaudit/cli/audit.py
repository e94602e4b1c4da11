"""`audit`: a savepoint's Kafka split assignment and the job's sink, on Spark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from splitaudit.audit.request import (
    SINK_FORMATS,
    AggregateMatch,
    AuditRequest,
    IdentityMatch,
    SinkColumns,
)
from splitaudit.cli.context import Context, run
from splitaudit.cli.options import LOG_FILE, SINK_NAMING, default_log
from splitaudit.cli.partitions import comma_items, partition_counts
from splitaudit.cli.settings import SAVEPOINT_OPTIONS, settings

SPARK_MASTER = click.option(
    "--master",
    default="local[*]",
    show_default=True,
    help="Spark master: local[*] on a laptop, or a cluster's (spark://host:7077, yarn, k8s://…).",
)


# Which sink columns hold the Kafka coordinates of each record.
SINK_COLUMNS = settings(
    "columns",
    SinkColumns,
    click.option(
        "--topic-col", "topic", default="topic", show_default=True, help="Sink column holding the Kafka topic."
    ),
    click.option(
        "--partition-col",
        "partition",
        default="partition",
        show_default=True,
        help="Sink column holding the partition.",
    ),
    click.option(
        "--offset-col", "offset", default="offset", show_default=True, help="Sink column holding the record's offset."
    ),
)
# A sink without coordinates: how its rows map to source records (`audit.identity`).
IDENTITY = settings(
    "identity",
    IdentityMatch.from_options,
    click.option(
        "--sink-key",
        metavar="EXPR",
        help="A sink without the source's coordinates: a Spark SQL expression over the sink's columns giving each "
        "row's record identity (e.g. `timestamp`), matched to --source-key's over the source records (needs "
        "--bootstrap). With --match-payload: the sink column holding the record value (default `value`).",
    ),
    click.option(
        "--source-key",
        metavar="EXPR",
        help="The same identity over each source record as Spark's Kafka source gives it (key, value, topic, "
        "partition, offset, timestamp, headers), e.g. `get_json_object(CAST(value AS STRING), '$.timestamp')`. "
        "Both sides are compared as text.",
    ),
    click.option(
        "--match-payload",
        is_flag=True,
        help="A pass-through job's sink: the identity is the record's whole value (the sink's `value` column, or "
        "--sink-key's), so no expressions are needed.",
    ),
)
# An aggregating sink reconciled against its source (`audit.aggregate`).
AGGREGATE = settings(
    "aggregate",
    AggregateMatch.from_options,
    click.option(
        "--aggregate",
        metavar="count|sum:EXPR",
        help="The sink holds aggregates, not records: reconcile them with the source from --before's offsets "
        "to --savepoint's (needs --bootstrap). count, or sum:EXPR over the source record; max, min, latest and "
        "distinct are reported unauditable (a double read leaves them unchanged).",
    ),
    click.option(
        "--group-key",
        metavar="EXPR",
        help="The key each source record is aggregated under: a Spark SQL expression over Spark's Kafka columns, "
        "or an array of keys (e.g. `split(CAST(value AS STRING), ' ')` for words).",
    ),
    click.option("--sink-group-key", metavar="EXPR", help="The key of each sink record (a Spark SQL expression)."),
    click.option("--sink-value", metavar="EXPR", help="The aggregate of each sink record (a Spark SQL expression)."),
    click.option(
        "--event-time",
        metavar="EXPR",
        help="The job windows on event time: each source record's time in epoch ms (e.g. `timestamp` as ms, or a "
        "value field); keys are then compared per (window, key). Needs --window-size and --sink-window.",
    ),
    click.option("--window-size", type=float, metavar="SECONDS", help="The fixed windows' size (event time)."),
    click.option(
        "--window-offset",
        type=float,
        default=0.0,
        show_default=True,
        metavar="SECONDS",
        help="The fixed windows' offset.",
    ),
    click.option("--sink-window", metavar="EXPR", help="The window start (epoch ms) of each sink record."),
    click.option(
        "--panes",
        type=click.Choice(("accumulating", "discarding")),
        default="discarding",
        show_default=True,
        help="How the job's panes are emitted: accumulating (the last pane of a window and key holds its "
        "aggregate) or discarding (its panes add up).",
    ),
)


def _topic_names(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    """Click callback of `--topic`: the topics named, repeated or comma-separated (empty items left out)."""
    return tuple(topic for topic in comma_items(values) if topic)


@click.command()
@click.option(
    "--savepoint",
    metavar="SP",
    help="A savepoint or checkpoint (dir or its _metadata; local path or s3://, hdfs://, gs:// URI): check that "
    "every partition is held by exactly one split, and find sink records past its next offsets.",
)
@click.option(
    "--before",
    metavar="SP0",
    help="An earlier savepoint of the same job (needs --savepoint): rewinds, dropped and new partitions.",
)
@click.option(
    "--sink",
    metavar="PATH",
    help="The job's output: a directory or file of sink records, as the job wrote it (Beam's windowed names with "
    "':', its .temp-beam folders and compressed files by suffix: .gz, .bz2, .zst, .deflate).",
)
@click.option(
    "--sink-format",
    type=click.Choice(SINK_FORMATS),
    default="parquet",
    show_default=True,
    help="How the sink is stored (JSON means JSON lines; CSV needs a header row; text: one row per line, in a "
    "`value` column). kafka: --sink is a topic of the --bootstrap cluster whose record values are JSON objects "
    "with the coordinate (and lineage) fields.",
)
@SINK_NAMING
@click.option(
    "--watermark-delay",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="Override: how far the job's watermark trailed its records' Kafka time at --before. By default which "
    "windows had closed at that savepoint is read from it (its window operators' state, else its KafkaIO "
    "timestamp policy's watermark); given, windows ending this long before the records it had read closed, "
    "whatever the savepoint says.",
)
@SINK_COLUMNS
@click.option(
    "--bootstrap",
    metavar="HOST:PORT",
    help="The source topic's Kafka cluster: its partitions (admin API) for the assignment check, the offsets "
    "that really exist for the gaps (transaction markers and compaction are not loss), expired records "
    "(log start above the savepoint's next offset) and lag. With --sink-format kafka, also the sink's cluster.",
)
@click.option("--topic", "topics", metavar="T", multiple=True, callback=_topic_names,
              help="A source topic; repeat it (or separate with commas) for several (default: every topic the "
                   "savepoint's sources read).")  # fmt: skip
@click.option("--subscription", "subscription", metavar="T", multiple=True, callback=_topic_names,
              help="A topic the restored job's KafkaSource subscribes to (repeat or separate with commas; needs "
                   "--before): offsets of another topic --before's splits held and read on up to --savepoint "
                   "are found (removed_topic_read, FLINK-34089).")  # fmt: skip
@click.option(
    "--group",
    metavar="G",
    help="A consumer group (needs --bootstrap): its committed offsets against the savepoint's next offsets and "
    "the sink's processed ones.",
)
@click.option(
    "--partitions",
    metavar="N|TOPIC=N",
    multiple=True,
    callback=partition_counts,
    help="The topic has partitions 0..N-1 (N: the one source topic; TOPIC=N, repeated or comma-separated, per "
    "topic): partitions the savepoint holds nowhere are reported missing. --bootstrap asks Kafka instead; "
    "without either the list comes from the sink, else from the enumerator's checkpoint. The report says which.",
)
@IDENTITY
@click.option(
    "--jar",
    metavar="JOB.jar",
    help="The jar the job was restored with (needs --before): evidence for classifying duplicates of a sink "
    "without lineage (an unfixed FlinkSource re-reads restored splits).",
)
@AGGREGATE
@SAVEPOINT_OPTIONS
@click.option(
    "--exactly-once",
    is_flag=True,
    help="Declare the sink exactly-once: replays after a restore, and sink records past the savepoint's next "
    "offsets, become errors instead of warnings.",
)
@SPARK_MASTER
@LOG_FILE
@click.option(
    "--html",
    "html_path",
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the findings as a self-contained HTML page to FILE (a new file in an existing folder).",
)
@click.pass_context
def audit(ctx: click.Context, /, html_path: Path | None, log_path: Path | None, **options: Any) -> None:
    """Audit a Flink savepoint's Kafka split assignment and the job's sink, on Spark.

    Give --savepoint, --sink or both (a sink alone is a valid audit: any Kafka consumer's output). Spark starts
    only for a sink: the savepoint checks run without it (a savepoint-only audit starts no JVM).

    \b
    Savepoint: a partition held by two splits or subtasks, held by a reader and also pending in the
      enumerator, or held by nobody (error). With --before: a partition whose next offset went backwards
      (rewind), or that was dropped (error) or is new (info).
    Several topics: every check works per (topic, partition); --bootstrap reads every topic the savepoint's
      sources read (or each --topic).
    Sink: duplicate (topic, partition, offset) keys, classified by the lineage columns reader_id and attempt
      (and job_id) when present, per generation (a job_id and attempt; the attempt alone without job_id):
      double assignment (two readers within one generation, an error) or replay (one reader in each of several
      generations: a restore or failover, a warning unless --exactly-once); missing offsets: with --bootstrap
      the offsets that exist in the topic but not in the sink, else those between a partition's lowest and
      highest sink offset (dense offsets assumed, and the report says so).
    Both: sink records at or past the savepoint's next offsets, which a restore from it reads again.
    A sink whose coordinates name only topics no source reads is refused (exit 2): they are its own, not its
      source's. Rows of other topics beside source ones are left out (not_a_source_topic, info).
    Your own job's sink (no coordinates): --sink-key/--source-key (or --match-payload) with --bootstrap map each
      row to the source record carrying its identity, then every check above runs on those coordinates;
      unmatched_sink_rows and ambiguous_source_identity (error) say what could not be mapped. Without lineage,
      --before (the savepoint the job was restored from) and --jar classify duplicates by where their runs
      start and end: double assignment or replay, marked classified_by "inferred" with the evidence.
    Kafka (--bootstrap, --group): records deleted before the job read them (log start above the offset it
      resumes from: loss), committed group offsets that disagree with the savepoint or the sink, and lag.
    File sinks: the ledger of Beam's windowed file names (window, pane, shard, rows, size, time; "ledger" in
      the JSON): files left in .temp-beam folders (unfinalized_files), absent shards and panes. With --before,
      the files written after that savepoint for windows that closed before it (rewritten_files: a restored job
      re-read those windows and replaced their files; closed as the savepoint's window state, else its
      timestamp policy's watermark, says; undecided_windows, info, where neither can) and, with --bootstrap,
      their records held once though read twice (masked_duplicates) or lost with the replaced file
      (lost_by_rewrite).
    Aggregating sinks (--aggregate, --before SP0 --savepoint SP1, --bootstrap): the aggregate per key the source
      records from SP0's to SP1's offsets give, against what the sink emitted after SP0 (aggregate_excess,
      aggregate_deficit); a twin-reader start that explains every key's excess is double_assignment, inferred.

    --html FILE also writes one page (no external resources) with the summary, the partition x subtask
    assignment matrix, per-partition offset-coverage bars and the findings; it never overwrites FILE.

    Exit 0 clean, 1 findings of severity error, 2 bad input.
    """

    def action(context: Context) -> int:
        from splitaudit.report.html import check_html_target, write_html

        if html_path is not None:
            check_html_target(html_path)  # before the audit, not after an hour of Spark
        request = AuditRequest(**options)
        from splitaudit.audit.run import run_audit  # imports pyspark: only when auditing

        findings = run_audit(request, context.progress)
        context.output.findings(findings)
        if html_path is not None:
            with context.progress.step(f"write the HTML report {html_path}"):
                write_html(
                    html_path,
                    findings,
                    "splitaudit audit of " + " and ".join(filter(None, (request.savepoint, request.sink))),
                )
        return findings.exit_code

    run(ctx, action, log_path or default_log("audit"))
