"""The restore scenario of beam#31313: run the reference pipeline, savepoint, restore, and count the sink.

On a real stack (Kafka broker + Flink session cluster), for one job jar (stock or patched):

1. create a topic with P partitions and produce N records (record i to partition i % P);
2. submit the job with parallelism 2 and wait until all N records are in the sink and a checkpoint has
   completed after that (the pipeline reads 20,000 records in about a second, so "about half" cannot be
   caught reliably; a savepoint with everything read also gives exact next offsets, N/P per partition);
3. savepoint, then cancel;
4. produce N more records;
5. restore from the savepoint, check through REST that the job names it as its restore source;
6. wait until all 2N offsets are in the sink, then until a whole checkpoint interval adds no rows (the twin
   reader of the stock build may still be re-reading offsets that the restored reader already emitted);
7. savepoint again, then cancel.

Flink job ids are chosen here and passed to /jars/<id>/run, so the sink's job_id column names the real jobs.
Everything (sink, savepoints, the stack's logs when it is the scenario's own) stays in the run directory.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow.compute as pc

from splitaudit.audit.request import AuditRequest
from splitaudit.clients import kafka as kafka_client
from splitaudit.clients.flink import FlinkRestClient
from splitaudit.errors import ExternalError, UsageError
from splitaudit.home import BEAM_VERSION, pipeline_jars
from splitaudit.progress import Progress, StepLog
from splitaudit.scenario.results import DemoReport, ScenarioReport, partition_counts
from splitaudit.scenario.sink import count_rows, read_sink
from splitaudit.stack.stack import Stack


@dataclass(frozen=True)
class ScenarioSettings:
    """The knobs of the scenario; the defaults are the issue's (4 partitions, 20,000 records, parallelism 2)."""

    partitions: int = 4
    records: int = 20_000
    parallelism: int = 2
    timeout: float = 300.0  # for each wait on the sink
    added_partitions: int = 0  # partitions added to the topic while the job is down (before the second batch)


def pipeline_jar(variant: str, beam_version: str = BEAM_VERSION) -> Path:
    """The shaded job jar of a variant ("stock" or "patched") of one Beam release, as the Maven build leaves it."""
    jars = pipeline_jars(beam_version)
    if variant not in jars:
        raise UsageError(f"the reference pipeline of Beam {beam_version} has no {variant} jar")
    if not jars[variant].is_file():
        setup = "splitaudit setup" if beam_version == BEAM_VERSION else "splitaudit setup --matrix"
        raise ExternalError(f"{jars[variant]} is missing; run `{setup}`")
    return jars[variant]


def run_restore_scenario(
    stack: Stack,
    run_dir: Path,
    jar: Path,
    variant: str,
    progress: Progress,
    settings: ScenarioSettings,
    restore_jar: Path | None = None,
) -> ScenarioReport:
    """Run the scenario with `jar` on a running `stack`; everything it writes goes under `run_dir` (new).

    `restore_jar`, when given, is the jar the restored job runs: a savepoint of one build restored into
    another, as when a user upgrades a running job to the patched jar.
    """
    steps = StepLog(progress)
    sink, savepoints, topic, first, args = _prepare(stack, run_dir, f"restore-{variant}", settings, steps)
    bootstrap, flink = stack.kafka.bootstrap, stack.flink.client()
    records, partitions = settings.records, settings.partitions
    with steps.step(f"upload {jar.name} and run it (parallelism {settings.parallelism})") as out:
        jar_id = flink.upload_jar(jar)
        job_before = flink.run_jar(jar_id, program_args=args, job_id=uuid.uuid4().hex)
        flink.wait_all_running(job_before)
        out.append(f"job {job_before}")
    with steps.step(f"wait for the {records} records in the sink and a checkpoint after them") as out:
        _wait_for_offsets(sink, topic, records, settings.timeout)
        checkpoint = _checkpoint_after_now(flink, job_before)
        out.append(f"checkpoint {checkpoint}")
    with steps.step("savepoint, then cancel") as out:
        savepoint_before = flink.savepoint(job_before, savepoints.as_uri())
        flink.cancel(job_before)
        out.append(savepoint_before)
    if settings.added_partitions:
        with steps.step(f"add {settings.added_partitions} partitions to {topic} while the job is down"):
            kafka_client.grow_topic(bootstrap, topic, partitions + settings.added_partitions)
    with steps.step(f"produce {records} more records") as out:
        grown = partitions + settings.added_partitions
        second = kafka_client.produce(bootstrap, topic, grown, records, start=records)
        out.append(", ".join(f"p{p}: {n}" for p, n in second.items()))
    with steps.step("restore from the savepoint" + (f" into {restore_jar.name}" if restore_jar else "")) as out:
        restore_jar_id = flink.upload_jar(restore_jar) if restore_jar else jar_id
        job_after, restored = flink.restore(
            restore_jar_id, savepoint_before, program_args=args, job_id=uuid.uuid4().hex
        )
        out.append(f"job {job_after} restored from {restored.external_path}")
    # Partitions added while the job was down are not read by a job that keeps its restored splits: wait for
    # the offsets of the partitions it had, and let the audit report the others.
    readable = records + sum(n for p, n in second.items() if p < partitions)
    with steps.step(f"wait for {readable} offsets in the sink, until a checkpoint adds no rows") as out:
        started = time.monotonic()
        _wait_for_offsets(sink, topic, readable, settings.timeout)
        records_per_second = records / (time.monotonic() - started)
        checkpoint = _wait_until_settled(flink, job_after, sink, settings.timeout)
        out.append(f"{records_per_second:.0f} records/s after the restore; checkpoint {checkpoint}")
    with steps.step("savepoint, then cancel") as out:
        savepoint_after = flink.savepoint(job_after, savepoints.as_uri())
        flink.cancel(job_after)
        out.append(savepoint_after)
    expected = {p: first.get(p, 0) + second[p] for p in second}
    return _report(
        variant, "savepoint", jar, run_dir, topic, (job_before, job_after), (savepoint_before, savepoint_after),
        sink, expected, records_per_second, steps,
    )  # fmt: skip


def run_failover_scenario(
    stack: Stack, run_dir: Path, jar: Path, variant: str, progress: Progress, settings: ScenarioSettings
) -> ScenarioReport:
    """The TaskManager-failure variant: the job is not cancelled and restored, its TaskManager is killed.

    Produce N records, run the job, wait for them and a checkpoint; produce N/2 more and kill -9 the
    TaskManager at once, while the job reads them; start a new TaskManager, let Flink restart the job from
    its latest checkpoint (a new attempt of the same job), produce the last N/2, wait for all 2N offsets and
    a checkpoint, savepoint, cancel. Records read after the last checkpoint before the kill are read again
    by the next attempt: replays, expected with an at-least-once sink. Two readers in one attempt are not.
    """
    steps = StepLog(progress)
    sink, savepoints, topic, first, args = _prepare(stack, run_dir, f"failover-{variant}", settings, steps)
    bootstrap, cluster = stack.kafka.bootstrap, stack.flink
    flink = cluster.client()
    records, partitions, half = settings.records, settings.partitions, settings.records // 2
    with steps.step(f"upload {jar.name} and run it (parallelism {settings.parallelism})") as out:
        job = flink.run_jar(flink.upload_jar(jar), program_args=args, job_id=uuid.uuid4().hex)
        flink.wait_all_running(job)
        out.append(f"job {job}")
    with steps.step(f"wait for the {records} records in the sink and a checkpoint after them") as out:
        _wait_for_offsets(sink, topic, records, settings.timeout)
        out.append(f"checkpoint {_checkpoint_after_now(flink, job)}")
    with steps.step(f"produce {half} more records and kill -9 the TaskManager while the job reads them") as out:
        second = kafka_client.produce(bootstrap, topic, partitions, half, start=records)
        out.append(f"killed TaskManager pid {cluster.kill_taskmanager()}")
    with steps.step("start a new TaskManager; Flink restarts the job from its latest checkpoint") as out:
        cluster.start_taskmanager()
        restored = _wait_for_restart(flink, job, settings.timeout)
        flink.wait_all_running(job)
        out.append(f"job {job} restarted from {restored}")
    with steps.step(f"produce the last {records - half} records") as out:
        third = kafka_client.produce(bootstrap, topic, partitions, records - half, start=records + half)
        out.append(", ".join(f"p{p}: {n}" for p, n in third.items()))
    with steps.step(f"wait for all {2 * records} offsets in the sink, until a checkpoint adds no rows") as out:
        started = time.monotonic()
        _wait_for_offsets(sink, topic, 2 * records, settings.timeout)
        records_per_second = (records - half) / (time.monotonic() - started)
        out.append(f"checkpoint {_wait_until_settled(flink, job, sink, settings.timeout)}")
    with steps.step("savepoint, then cancel") as out:
        savepoint_after = flink.savepoint(job, savepoints.as_uri())
        flink.cancel(job)
        out.append(savepoint_after)
    expected = {p: first[p] + second[p] + third[p] for p in range(partitions)}
    return _report(
        variant, "taskmanager-kill", jar, run_dir, topic, (job, job), (restored, savepoint_after), sink, expected,
        records_per_second, steps,
    )  # fmt: skip


def _prepare(
    stack: Stack, run_dir: Path, name: str, settings: ScenarioSettings, steps: StepLog
) -> tuple[Path, Path, str, dict[int, int], list[str]]:
    """Make the new run directory, a fresh topic holding the first N records, and the pipeline's arguments.

    Returns the sink dir, the savepoints dir, the topic, the records produced per partition, and the args.
    """
    if run_dir.exists():
        raise UsageError(f"{run_dir} already exists; the scenario never reuses a run directory")
    sink, savepoints = run_dir / "sink", run_dir / "savepoints"
    savepoints.mkdir(parents=True)
    bootstrap = stack.kafka.bootstrap
    topic = f"{name}-{uuid.uuid4().hex[:8]}"
    records, partitions = settings.records, settings.partitions
    with steps.step(f"create topic {topic} ({partitions} partitions), produce {records} records") as out:
        kafka_client.create_topic(bootstrap, topic, partitions)
        first = kafka_client.produce(bootstrap, topic, partitions, records)
        out.append(", ".join(f"p{p}: {n}" for p, n in first.items()))
    args = [
        f"--bootstrapServers={bootstrap}",
        f"--topic={topic}",
        f"--groupId={topic}",
        f"--sinkDir={sink}",
        f"--parallelism={settings.parallelism}",
    ]
    return sink, savepoints, topic, first, args


def _report(
    variant: str,
    restart: str,
    jar: Path,
    run_dir: Path,
    topic: str,
    jobs: tuple[str, str],
    savepoints: tuple[str, str],
    sink: Path,
    expected: dict[int, int],
    records_per_second: float,
    steps: StepLog,
) -> ScenarioReport:
    """The scenario's report: the auditor's verdict on the sink and the savepoints, counted per partition
    against what was produced."""
    request = AuditRequest(
        sink=str(sink),
        sink_format="json",
        savepoint=savepoints[1],
        before=savepoints[0] if restart == "savepoint" else None,  # a failover restarts from a checkpoint
        topics=(topic,),
        partitions=((topic, len(expected)),),
    )
    from splitaudit.audit.run import run_audit  # imports pyspark: not when the CLI merely starts

    with steps.step("audit the sink and the savepoints on Spark") as out:
        findings = run_audit(request, steps.progress)
        out.append(f"{len(findings.findings)} findings")
    return ScenarioReport(
        variant=variant,
        restart=restart,
        jar=str(jar),
        run_dir=str(run_dir),
        topic=topic,
        job_id_before=jobs[0],
        job_id_after=jobs[1],
        savepoint_before=savepoints[0],
        savepoint_after=savepoints[1],
        sink_path=str(sink),
        sink_format="json",
        expected_records=sum(expected.values()),
        records_per_second=records_per_second,
        partitions=partition_counts(findings, topic, expected),
        steps=tuple(steps.done),
        audit=findings,
    )


def _wait_for_restart(flink: FlinkRestClient, job_id: str, timeout: float) -> str:
    """Wait until the job has restarted from a checkpoint (REST latest.restored); that checkpoint's path."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        restored = flink.checkpoints(job_id).latest_restored
        if restored is not None:
            return restored.external_path or f"checkpoint {restored.id}"
        time.sleep(1.0)
    raise ExternalError(f"Flink job {job_id} did not restart from a checkpoint within {timeout:.0f} s")


def _wait_for_offsets(sink: Path, topic: str, distinct: int, timeout: float) -> None:
    """Wait until the sink holds `distinct` different (partition, offset) keys of `topic`."""
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        table = read_sink(sink)
        rows = table.filter(pc.equal(table["topic"], topic))
        seen = rows.group_by(["partition", "offset"]).aggregate([]).num_rows
        if seen >= distinct:
            return
        time.sleep(1.0)
    raise ExternalError(f"{sink}: {seen} of {distinct} offsets of {topic} after {timeout:.0f} s")


def _wait_until_settled(flink: FlinkRestClient, job_id: str, sink: Path, timeout: float) -> int:
    """Wait until a whole checkpoint interval adds no sink rows; that checkpoint's id.

    Every offset being in the sink is not the end of the output: a second reader of the same partition (the
    twin of beam#31313) may still be catching up and emit the same offsets again a little later.
    """
    deadline = time.monotonic() + timeout
    rows = count_rows(sink)
    while True:
        checkpoint = _checkpoint_after_now(flink, job_id)
        now = count_rows(sink)
        if now == rows:
            return checkpoint
        if time.monotonic() > deadline:
            raise ExternalError(f"{sink}: still growing ({rows} -> {now} rows) after {timeout:.0f} s")
        rows = now


def _checkpoint_after_now(flink: FlinkRestClient, job_id: str) -> int:
    """Wait for a checkpoint triggered after this call (so it covers everything emitted so far); its id."""
    latest = flink.checkpoints(job_id).latest_completed
    # The latest completed one may have been triggered before the last rows; the one after the next is not.
    after = (latest.id if latest is not None else 0) + 1
    return flink.wait_for_checkpoint(job_id, after=after).id


def run_with_own_stack(
    run_dir: Path,
    jar: Path,
    variant: str,
    progress: Progress,
    settings: ScenarioSettings,
    keep_stack: bool,
    kill_taskmanager: bool = False,
) -> ScenarioReport:
    """Bring a stack up in `<run_dir>/stack`, run the scenario (or its TaskManager-failure variant) in
    `<run_dir>/<variant>`, bring the stack down."""
    if run_dir.exists():
        raise UsageError(f"{run_dir} already exists; choose a new --workdir (nothing is overwritten)")
    stack = Stack(run_dir / "stack")
    stack.up(progress)
    try:
        scenario = run_failover_scenario if kill_taskmanager else run_restore_scenario
        return scenario(stack, run_dir / variant, jar, variant, progress, settings)
    finally:
        if not keep_stack:
            stack.down(progress)


def run_demo(run_dir: Path, progress: Progress, settings: ScenarioSettings, keep_stack: bool) -> DemoReport:
    """The scenario with the stock jar, then with the patched jar, on one stack in `<run_dir>/stack`."""
    if run_dir.exists():
        raise UsageError(f"{run_dir} already exists; choose a new --workdir (nothing is overwritten)")
    started = time.monotonic()
    stock_jar, patched_jar = pipeline_jar("stock"), pipeline_jar("patched")
    stack = Stack(run_dir / "stack")
    stack.up(progress)
    try:
        stock = run_restore_scenario(stack, run_dir / "stock", stock_jar, "stock", progress, settings)
        patched = run_restore_scenario(stack, run_dir / "patched", patched_jar, "patched", progress, settings)
    finally:
        if not keep_stack:
            stack.down(progress)
    return DemoReport(str(run_dir), time.monotonic() - started, stock, patched)
