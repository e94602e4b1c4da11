"""`guard`: before a restore, what restoring a savepoint with a job jar will do to the data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from splitaudit.audit.checks.beam_names import NamingTemplate
from splitaudit.cli.context import Context, run
from splitaudit.cli.options import LOG_FILE, MAX_FILE_SIZE, SINK_NAMING, default_log


@click.command()
@click.option("--savepoint", metavar="SP", required=True,
              help="The savepoint or checkpoint the job will restore from (dir or its _metadata).")  # fmt: skip
@click.option("--jar", "jar", metavar="JOB.jar", required=True, type=click.Path(path_type=Path),
              help="The job jar that will restore it.")  # fmt: skip
@click.option("--bootstrap", metavar="HOST:PORT",
              help="The source topics' Kafka cluster: partitions no split covers, offsets expired unread, "
                   "the backlog, the read's group's committed offsets and offsets at its startReadTime, and "
                   "so the offsets an unfixed jar reads twice.")  # fmt: skip
@click.option("--parallelism", type=int, default=None, metavar="N",
              help="The parallelism of the restored job, when it differs from the savepoint's.")  # fmt: skip
@click.option("--sink", metavar="DIR",
              help="The job's file sink directory (Beam's windowed names): with --bootstrap, name the window files "
                   "a re-read of windows closed before the savepoint will rewrite.")  # fmt: skip
@click.option("--kafka-topics", metavar="T[,T…]",
              help="The topics the restored job's KafkaSource subscribes to (its setTopics, from its arguments): "
                   "a topic the savepoint's splits hold and this list does not is read on (FLINK-34089).")  # fmt: skip
@click.option("--kafka-starting-offsets", metavar="earliest|latest|committed",
              help="The restored job's KafkaSource setStartingOffsets: ignored for the partitions the savepoint "
                   "holds (info); its auto.offset.reset decides where a reader past the log end reads.")  # fmt: skip
@SINK_NAMING
@MAX_FILE_SIZE
@LOG_FILE
@click.pass_context
def guard(
    ctx: click.Context,
    /,
    log_path: Path | None,
    sink: str | None,
    sink_naming: str | None,
    kafka_topics: str | None,
    kafka_starting_offsets: str | None,
    **options: Any,
) -> None:
    """Before a restore: say what restoring SP with JOB.jar will do to the data.

    \b
    From the jar's own contents: its Beam release, Flink runner and enumerator build, and whether its reader
      finalizes checkpoints (commits offsets; 2.56 on). An affected Beam (2.52 up to the fix) without the
      upstream fix or splitaudit's patch gives every partition a FlinkSource savepoint holds a second, twin
      reader (beam#31313): error per partition, with `splitaudit patch-jar` as the remedy. Where the twin
      starts comes from the job's KafkaIO consumer config in the savepoint: startReadTime, else the group's
      committed offset (group.id set and an offset committed), else auto.offset.reset (earliest: the log
      start; latest, KafkaIO's default: the log end at the restore). Every offset from there on is read twice,
      every record produced after the restore included; with --bootstrap the part already in the topic is
      counted exactly (the `twins` of --json say the start and the fact that decided it).
    Warnings on consumer settings that lose or never commit offsets (beam#21742): enable.auto.commit without
      commitOffsetsInFinalize, auto.offset.reset=latest without committed offsets, commitOffsetsInFinalize on
      a release that never finalizes (2.52-2.55).
    With --bootstrap: partitions of the topic no split covers are never read after the restore unless the
      jar's enumerator discovers partitions on restore (error, else info); a savepoint next offset below the
      log start means records expired unread (error); the backlog is shown (info).
    A twin that starts below the savepoint's offsets re-reads records read before it (warning per partition,
      with --bootstrap their Kafka times): a job windowing by Kafka time fires their closed windows again, and
      a file sink with deterministic names rewrites those files (masked duplicates; losses in the window
      re-read from inside). --sink DIR names the window files that will be written again.
    With --parallelism N different from the savepoint's: Beam's legacy UnboundedSourceWrapper state is list
      state Flink hands out whole, no split dropped (info); on the FlinkSource path a jar with the fix hands
      the splits out again (info). A portable pipeline's splittable-DoFn read (keyed state) moves its
      residuals with their key groups (info), but a change to or from parallelism 1 changes the id of the
      uid-less Impulse it starts from, and Flink refuses the restore (error).
    Flink's own KafkaSource (connector 3.3.0): a bounded source whose enumerator state names every partition
      assigned never finishes after the restore (FLINK-31006, error); with --kafka-topics, splits of a topic
      the job no longer subscribes to are read on (FLINK-34089, error); with --bootstrap, a split's offset past
      the partition's log end (a re-created topic) goes to auto.offset.reset (warning, error with latest);
      with --kafka-starting-offsets, the restored splits ignore it (info).

    Prints the findings and one line a CI step can read ("splitaudit-guard: safe …" or "splitaudit-guard:
    UNSAFE errors=N kinds=…"). Exit 0 safe, 1 unsafe, 2 bad input.
    """

    def action(context: Context) -> int:
        from splitaudit.guard.kafka_restore import KafkaSourceJob
        from splitaudit.guard.predict import SinkFolder, run_guard

        folder = None
        if sink is not None:
            naming = NamingTemplate.beam_defaults() if sink_naming is None else NamingTemplate.custom(sink_naming)
            folder = SinkFolder(sink, naming)
        topics = None if kafka_topics is None else tuple(t for t in kafka_topics.split(",") if t)
        kafka_job = KafkaSourceJob(topics, kafka_starting_offsets)
        # savepoint, jar, bootstrap, parallelism and max_file_size: run_guard's parameters of those names
        report = run_guard(progress=context.progress, sink=folder, kafka_job=kafka_job, **options)
        context.output.guard_report(report)
        return report.exit_code

    run(ctx, action, log_path or default_log("guard"))
