"""`watch`: after a restore, follow the running job and act on the first partition read twice."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from splitaudit.cli.context import Context, run
from splitaudit.cli.options import LOG_FILE, default_log
from splitaudit.cli.settings import settings
from splitaudit.guard.lifecycle import DEFAULT_REST_TIMEOUT
from splitaudit.guard.results import ACTIONS, STOP

if TYPE_CHECKING:
    from splitaudit.guard.watch import WatchSettings


def _watch_settings(**options: Any) -> WatchSettings:
    """The WatchSettings the options give (the watch's package imported only when it runs)."""
    from splitaudit.guard.watch import WatchSettings

    return WatchSettings(**options)


# What the watch follows and how: one WatchSettings (`guard.watch`), which checks them.
WATCH_SETTINGS = settings(
    "watch_settings",
    _watch_settings,
    click.option(
        "--flink-rest", metavar="URL", required=True, help="The Flink cluster's REST address, e.g. http://127.0.0.1:8081."
    ),
    click.option("--job", "job", metavar="JOB_ID", default=None,
                 help="The job to watch, e.g. just restored; with --wait it may not be listed yet (a job id fixed at "
                      "submission: REST run's jobId, $internal.pipeline.job-id)."),
    click.option("--savepoint", metavar="PATH|URI", default=None,
                 help="The savepoint the job restores from: its offsets are read before the job runs; without --job "
                      "the watch follows the unfinished job Flink says restored from it."),
    click.option("--wait", type=click.FloatRange(min=0), default=0.0, show_default=True,
                 help="Seconds to wait for the job to be listed: start the watch, then submit the restore, and it "
                      "polls from the job's first second."),
    click.option("--bootstrap", metavar="HOST:PORT",
                 help="The source topics' Kafka cluster: compares what each partition's readers read with what it "
                      "holds past the restored offset, and checks those offsets against the log start."),
    click.option("--on-error", type=click.Choice(ACTIONS), default=STOP, show_default=True,
                 help="What to do on the first error: stop the job with a savepoint, cancel it, or report "
                      "only."),
    click.option("--interval", type=click.FloatRange(min=0.1), default=0.25, show_default=True,
                 help="Seconds between polls of the job's metrics."),
    click.option("--duration", type=click.FloatRange(min=0), default=None,
                 help="Stop watching this many seconds after the job is listed (default: until the job ends or an "
                      "error is acted on)."),
    click.option("--savepoint-dir", metavar="DIR", default=None,
                 help="Where stop-with-savepoint writes (default: the cluster's state.savepoints.dir)."),
    click.option("--probe", type=click.FloatRange(min=0), default=0.0, show_default=True,
                 help="For this many seconds after the job's first records are read, trigger a checkpoint after each "
                      "poll (Flink 1.19+ REST) to judge its counts at once instead of at the job's next checkpoint: "
                      "catches a twin reader sooner, at the price of extra checkpoints."),
    click.option("--rest-timeout", type=click.FloatRange(min=0), default=DEFAULT_REST_TIMEOUT, show_default=True,
                 help="Seconds one REST call that Flink answers with HTTP 500/502/503/504, or not at all, is retried "
                      "(backoff from 0.1 s doubling up to 2 s; the attempts' own time counted) before it counts: as "
                      "the job gone, or as the error it is. One attempt waits at most this long for its answer (at "
                      "least 10 s, at most 60 s)."),
    click.option("--kafka-topics", metavar="T[,T…]", default=None, callback=lambda _ctx, _param, value: _topics(value),
                 help="The topics the restored job's KafkaSource subscribes to (as guard's): a reader of another "
                      "topic's partition is removed_topic_read (FLINK-34089)."),
)  # fmt: skip


def _topics(value: str | None) -> tuple[str, ...] | None:
    """`--kafka-topics` as a tuple of topic names (None: not given)."""
    return None if value is None else tuple(topic for topic in value.split(",") if topic)


@click.command()
@WATCH_SETTINGS
@LOG_FILE
@click.pass_context
def watch(ctx: click.Context, watch_settings: WatchSettings, log_path: Path | None) -> None:
    """After a restore: follow a running Beam-on-Flink job and stop it when it reads a partition twice.

    \b
    Each poll reads the source vertex's per-subtask metrics through Flink's REST API:
      partition_read_twice: Beam KafkaIO's per-partition reader metric on two subtasks (two readers);
      read_more_than_advanced: a partition's readers had read more records than a checkpoint taken after
      the poll (read here) holds it advanced past the offset the job restored it from (--savepoint, else
      Flink's latest.restored): one reader cannot, so this catches beam#31313's twin reader early;
      read_more_than_available (with --bootstrap): they read more records than the partition holds past
      that offset (late: only once the backlog is read).
    With --bootstrap also expired_unread: restored offsets below the log start.
    A job reading with Flink's own KafkaSource (DataStream or SQL) is judged by the connector's per-partition
    currentOffset gauges and its source's numRecordsOut instead: partition_read_twice, read_below_restored (a
    partition read again below its restored offset), partition_not_read (at the end: no reader held it),
    source_state_dropped (the savepoint's source is no vertex of the job: found by its state, not by name).
    Its restore failures (docs/flink-kafka-jobs.md): removed_topic_read (with --kafka-topics: a reader of a
    topic the job no longer subscribes to, FLINK-34089), bounded_restore_never_finishes (every bounded split's
    reader at its stopping offset for 10 s, the job still running: FLINK-31006), offset_past_log_end (with
    --bootstrap: a partition restored past its log end, read from the new log's start, or at the end never read).
    Flink serves metrics refreshed every metrics.fetcher.update-interval (10 s by default) and job and
    checkpoint details every web.refresh-interval (3 s): set them to 100-500 ms on the cluster for a fast
    watch.

    Every finding is written at once as a JSON line on stdout, and again whenever its figure grows; on the
    first error the job is stopped with a savepoint (default), cancelled or only reported (the watch then
    follows the job to its end). A restart of the job (a TaskManager lost), a rescale by the adaptive
    scheduler (its source's subtasks polled at the new parallelism) and a JobManager failover in a highly
    available cluster (set --rest-timeout above its duration) are each followed as a new attempt, listed in the
    report's attempts.

    \b
    When the job ends (or --duration does), the final tally (with --bootstrap): per partition, the records read
    twice since the restore, from each attempt's last counts against the partition's offsets from where it
    started to its end offset, as read_twice findings. A figure is exact when the counts had stayed steady for
    two of Flink's metric refresh intervals before the end; otherwise a lower bound, and the tally says why.
    An attempt that ended by a restart counts up to the checkpoint the restart resumed from (what it read
    after it is read again, a replay): exact when its counts were steady around that checkpoint, else counted
    at its last poll before it, not exact.

    \b
    Ends with one line a CI step can read: "splitaudit-watch: silent state=…", "splitaudit-watch: ERROR
    kinds=… after=…s action=… state=…" or "splitaudit-watch: LOST state=failed|suspended|gone reason=…".
    Exit 0 silent (the job finished, was cancelled or stopped with a savepoint, or still runs), 1 an error
    found, 4 nothing found but the job failed, was suspended (in a cluster without high availability) or
    vanished (404, or REST silent for --rest-timeout) without a final state. Flink's server-side traces are
    shown in one escaped line (all of them with --debug).
    """

    def action(context: Context) -> int:
        from splitaudit.guard.watch import run_watch

        report = run_watch(watch_settings, context.progress, context.output.watch_event)
        context.output.watch_report(report)
        return report.exit_code

    run(ctx, action, log_path or default_log("watch"))
