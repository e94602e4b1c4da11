"""The smoke scenario: the whole stack end to end with a plain Flink job, before the Beam pipeline exists.

Bring the stack up, create a topic and produce records, run the smoke job (KafkaSource → keyed count) with
checkpointing, take a savepoint through REST, cancel, restore from the savepoint, and check through REST that
the restored job names that savepoint as its restore source.
"""

from __future__ import annotations

from pathlib import Path

from splitaudit.clients import kafka as kafka_client
from splitaudit.errors import ExternalError, UsageError
from splitaudit.home import jobs_dir
from splitaudit.progress import Progress, StepLog
from splitaudit_lab.stack.install import SMOKE_JOB
from splitaudit_lab.stack.results import SmokeReport
from splitaudit_lab.stack.stack import Stack


def run_smoke(
    run_dir: Path,
    progress: Progress,
    *,
    partitions: int = 4,
    records: int = 10_000,
    parallelism: int = 2,
    keep_stack: bool = False,
) -> SmokeReport:
    """Run the smoke scenario in `run_dir` (which must not hold an earlier run) and report each step."""
    if (run_dir / "stack").exists():
        raise UsageError(f"{run_dir} already holds a run; choose a new --workdir (nothing is overwritten)")
    jar = jobs_dir() / SMOKE_JOB
    if not jar.exists():
        raise ExternalError(f"{jar} is missing; run `splitaudit setup`")
    steps = StepLog(progress)
    stack = Stack(run_dir / "stack")
    topic = "smoke"
    with stack.running(progress, keep=keep_stack, steps=steps):
        bootstrap = stack.kafka.bootstrap
        flink = stack.flink.client()
        with steps.step(f"create topic {topic} ({partitions} partitions), produce {records} records") as out:
            kafka_client.create_topic(bootstrap, topic, partitions)
            sent = kafka_client.produce(bootstrap, topic, partitions, records)
            out.append(", ".join(f"p{p}: {n}" for p, n in sent.items()))
        args = ["--bootstrap", bootstrap, "--topic", topic, "--group", "smoke", "--throttle-ms", "1"]
        with steps.step("upload the smoke job and run it") as out:
            jar_id = flink.upload_jar(jar)
            job_id = flink.run_jar(jar_id, program_args=args, parallelism=parallelism)
            flink.wait_all_running(job_id)
            checkpoint = flink.wait_for_checkpoint(job_id)
            out.append(f"job {job_id} running, checkpoint {checkpoint.id} completed")
        with steps.step("savepoint through REST, then cancel") as out:
            savepoint = flink.savepoint(job_id, (run_dir / "savepoints").as_uri())
            flink.cancel(job_id)
            out.append(savepoint)
        with steps.step("restore from the savepoint") as out:
            restored_id, restored = flink.restore(jar_id, savepoint, program_args=args, parallelism=parallelism)
            out.append(f"job {restored_id} restored from checkpoint {restored.id} (savepoint)")
        with steps.step("checkpoint the restored job, then cancel") as out:
            after = flink.wait_for_checkpoint(restored_id, after=restored.id)
            flink.cancel(restored_id)
            out.append(f"checkpoint {after.id} completed")
    return SmokeReport(
        run_dir=str(run_dir),
        topic=topic,
        records_per_partition=sent,
        job_id=job_id,
        savepoint_path=savepoint,
        restored_job_id=restored_id,
        restored_from=str(restored.external_path),
        steps=tuple(steps.done),
    )
