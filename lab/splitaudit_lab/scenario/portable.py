"""The restore scenario for the Python pipeline (beam_pipelines/python) on Flink's portable runner.

Three processes of the run directory serve the pipeline, each started here and stopped by its pid file:
Beam's expansion service (expands the SDK's ReadFromKafka into KafkaIO, Java environment EMBEDDED, so
KafkaIO runs inside the TaskManager's JVM), Beam's Flink job server (translates the portable pipeline and
submits it to the session cluster) and a Python SDK worker pool (the EXTERNAL environment the Python DoFns
run in; Docker is not available here). Then, as the Java scenario does:

1. create a topic and produce N records;
2. submit the pipeline through the job server at parallelism 2; wait until all N are in the sink and a
   checkpoint completed after them;
3. stop with a savepoint (Flink REST: the job server only submits);
4. add partitions to the topic when the settings say so (`added_partitions`), then produce N more;
5. submit again with the savepoint (`--savepoint_path`, Beam's FlinkPipelineOptions) at the restore
   parallelism (the same, lower or higher), proven through REST;
6. wait until the sink holds every offset (or until it stops growing: a restore may lose partitions), and
   stop with a savepoint again.

The TaskManager is restarted before every submission (`FlinkCluster.restart_taskmanager`): each job loads
Beam's classes (the job server jar) into its own class loader, and the EMBEDDED Java harness keeps threads
that pin it after the job ends, so a second job in the same TaskManager ran out of metaspace.

`read` chooses KafkaIO's read: `deprecated` (the legacy UnboundedSource in Beam's UnboundedSourceWrapper,
whose state the savepoint reader decodes) or `sdf` (the splittable DoFn).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from splitaudit.clients.flink import FlinkRestClient
from splitaudit.errors import ExternalError, UsageError
from splitaudit.home import PYTHON_PIPELINE_ROOT, beam_python_home, portable_jars
from splitaudit.polling import poll
from splitaudit.progress import Progress
from splitaudit_lab.scenario.restore import (
    SAVEPOINT,
    ScenarioRun,
    ScenarioSettings,
    own_stack,
    wait_for_offsets,
    wait_until_settled,
)
from splitaudit_lab.scenario.results import READS, ScenarioReport
from splitaudit_lab.stack import process
from splitaudit_lab.stack.stack import Stack

SUBMIT_TIMEOUT = 300.0  # the job server uploads a 200 MB jar to the cluster on every submission
RETAINED_CHECKPOINT = "retained-checkpoint"
RESTORE_POINTS = (SAVEPOINT, RETAINED_CHECKPOINT)


@dataclass(frozen=True)
class PortableServices:
    """The expansion service, job server and worker pool of one run: their ports and where they log."""

    workdir: Path
    expansion_port: int
    job_port: int
    worker_port: int

    def pid_file(self, name: str) -> Path:
        return self.workdir / "pids" / f"{name}.pid"

    def start(self, flink_rest: str, read: str) -> None:
        """Start the three services and wait until each listens."""
        jars = portable_jars()
        for jar in jars.values():
            if not jar.exists():
                raise ExternalError(f"{jar} not found; run `splitaudit setup`")
        python = beam_python_home() / "bin" / "python"
        if not python.exists():
            raise ExternalError(f"the Beam SDK environment {beam_python_home()} not found; run `splitaudit setup`")
        java = process.java_executable()
        # KafkaIO takes the deprecated read from the expansion service's own options.
        experiments = ["--experiments=use_deprecated_read"] if read == "deprecated" else []
        artifact_port, job_expansion_port = process.free_port(), process.free_port()
        host = flink_rest.removeprefix("http://")
        commands = {
            "expansion-service": [
                java, "-jar", str(jars["expansion-service"]), str(self.expansion_port),
                "--defaultEnvironmentType=EMBEDDED", *experiments,
            ],
            "job-server": [
                java, "-jar", str(jars["job-server"]), f"--flink-master={host}", "--job-host=127.0.0.1",
                f"--job-port={self.job_port}", f"--artifact-port={artifact_port}",
                f"--expansion-port={job_expansion_port}",
            ],
            "worker-pool": [
                str(python), "-m", "apache_beam.runners.worker.worker_pool_main",
                f"--service_port={self.worker_port}",
            ],
        }  # fmt: skip
        ports = {"expansion-service": self.expansion_port, "job-server": self.job_port, "worker-pool": self.worker_port}
        env = self.python_env()
        for name, argv in commands.items():
            record = process.spawn(
                name, argv, pid_file=self.pid_file(name), log_file=self.workdir / f"{name}.log", env=env,
                cwd=self.workdir,
            )  # fmt: skip
            port = ports[name]
            process.wait_until(
                f"the {name} on 127.0.0.1:{port}",
                lambda port=port: _listening(port),  # type: ignore[misc]
                timeout=120.0,
                alive=record,
                log=self.workdir / f"{name}.log",
            )

    def python_env(self) -> dict[str, str]:
        """The SDK environment first on PATH (the worker pool starts workers as `python`) and the pipeline's
        package importable (workers unpickle its DoFns by name)."""
        env = dict(os.environ)
        env["PATH"] = f"{beam_python_home() / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONPATH"] = str(PYTHON_PIPELINE_ROOT)
        return env

    def stop(self) -> None:
        """Stop the three services by their pid files (any may be gone already)."""
        for name in ("worker-pool", "job-server", "expansion-service"):
            process.stop(self.pid_file(name))


@dataclass(frozen=True)
class PortableSettings:
    """The Python scenario's knobs beyond the Java scenario's: KafkaIO's read (one of READS) and what the job is
    restored from (one of RESTORE_POINTS: a savepoint the first job stops with, or the latest checkpoint the
    cluster retained of it when it is cancelled, as a restore after a failure does), refused when made if they
    are none of them (a UsageError, exit 2), before any stack starts."""

    read: str = "deprecated"
    restore_from: str = SAVEPOINT

    def __post_init__(self) -> None:
        if self.read not in READS:
            raise UsageError(f"--read must be one of {', '.join(READS)}, not {self.read!r}")
        if self.restore_from not in RESTORE_POINTS:
            raise UsageError(f"the restore point must be one of {', '.join(RESTORE_POINTS)}, not {self.restore_from!r}")


def run_portable_scenario(
    stack: Stack,
    run_dir: Path,
    progress: Progress,
    settings: ScenarioSettings,
    portable: PortableSettings,
) -> ScenarioReport:
    """Run the Python pipeline's savepoint restore on a running `stack`, everything under `run_dir` (new)."""
    name = f"py-{portable.read}-p{settings.parallelism}to{settings.parallelism_after}"
    run = ScenarioRun(stack, run_dir, name, settings, progress)
    services = PortableServices(run_dir / "portable", process.free_port(), process.free_port(), process.free_port())
    (services.workdir / "pids").mkdir(parents=True)
    with run.steps.step(f"start the expansion service, Flink job server and Python worker pool ({portable.read} read)"):
        services.start(stack.flink.rest_url, portable.read)
    try:
        run.produce(settings.records)
        first = _submit(run, services, portable, "first", settings.parallelism, None)
        run.wait_for_first_batch(first)
        if portable.restore_from == RETAINED_CHECKPOINT:
            savepoint_before = _cancel_keeping_checkpoint(run, first)
        else:
            savepoint_before = _stop_with_savepoint(run, first)
        if settings.added_partitions:
            run.grow_topics(settings.added_partitions)
        run.produce(settings.records)
        after = _submit(run, services, portable, "restored", settings.parallelism_after, savepoint_before)
        since = time.monotonic()
        complete = _wait_for_sink(run, after)
        # Only a restore that read everything has a rate; one that lost partitions waited for nothing.
        records_per_second = settings.records / (time.monotonic() - since) if complete else 0.0
        savepoint_after = _stop_with_savepoint(run, after)
    finally:
        services.stop()
    return run.report(
        f"python-{portable.read}",
        f"{portable.restore_from} p{settings.parallelism}->p{settings.parallelism_after}",
        portable_jars()["job-server"],
        (first, after),
        (savepoint_before, savepoint_after),
        records_per_second,
    )


def _submit(
    run: ScenarioRun, services: PortableServices, portable: PortableSettings, label: str, parallelism: int,
    savepoint: str | None,
) -> str:  # fmt: skip
    """Restart the TaskManager, submit the pipeline through the job server, wait until it runs; the Flink job id."""
    flink = run.stack.flink
    what = f"submit the Python pipeline ({label}, parallelism {parallelism}"
    what += f", from {savepoint})" if savepoint else ")"
    with run.steps.step(what) as out:
        flink.restart_taskmanager()
        client = flink.client()
        known = client.job_ids()
        argv = [
            str(beam_python_home() / "bin" / "python"), "-m", "splitaudit_beam",
            f"--bootstrap_servers={run.stack.kafka.bootstrap}", f"--topic={','.join(run.topics)}",
            f"--group_id={next(iter(run.topics))}",
            f"--sink_dir={run.sink}", f"--run_label={label}", f"--read={portable.read}",
            f"--expansion_service=127.0.0.1:{services.expansion_port}", "--runner=PortableRunner",
            f"--job_endpoint=127.0.0.1:{services.job_port}", "--environment_type=EXTERNAL",
            f"--environment_config=127.0.0.1:{services.worker_port}", f"--parallelism={parallelism}",
            "--checkpointing_interval=1000",
        ]  # fmt: skip
        if savepoint is not None:
            argv.append(f"--savepoint_path={savepoint}")
        if portable.restore_from == RETAINED_CHECKPOINT:
            # Beam's Flink runner sets the job's checkpoint retention itself (FlinkPipelineOptions): the cluster's
            # RETAIN_ON_CANCELLATION does not reach a job the job server submits
            argv += ["--externalized_checkpoints_enabled", "--retain_externalized_checkpoints_on_cancellation"]
        log = services.workdir / f"submit-{label}.log"
        with log.open("w") as handle:
            result = subprocess.run(
                argv, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=services.python_env(),
                cwd=services.workdir, timeout=SUBMIT_TIMEOUT, check=False,
            )  # fmt: skip
        if result.returncode != 0:
            tail = "\n  ".join(log.read_text(errors="replace").splitlines()[-15:])
            raise ExternalError(f"submitting the Python pipeline failed (exit {result.returncode}); {log}\n  {tail}")
        job = poll(
            "the job server's Flink job",
            lambda: next(iter(client.job_ids() - known), None),
            timeout=SUBMIT_TIMEOUT,
            interval=1.0,
        )
        client.wait_all_running(job, timeout=SUBMIT_TIMEOUT)
        if savepoint is not None:
            restored = _restored_from(client, job)
            out.append(f"job {job} restored from {restored}")
        else:
            out.append(f"job {job}")
    return job


def _restored_from(client: FlinkRestClient, job: str) -> str:
    """The savepoint the job restored from, as REST reports it (proof the job server passed it on)."""

    def restored() -> str | None:
        latest = client.checkpoints(job).latest_restored
        return None if latest is None else latest.external_path

    return poll(f"Flink job {job} to report its restore", restored, timeout=120.0, interval=1.0)


def _wait_for_sink(run: ScenarioRun, job: str) -> bool:
    """Wait until every produced offset is in the sink (or for half the timeout: a restore that lost partitions
    never completes), then until checkpoints add no rows (`wait_until_settled`); whether every offset arrived."""
    with run.steps.step(f"wait for {run.total} offsets in the sink, or until it stops growing") as out:
        try:
            wait_for_offsets(run.sink, tuple(run.topics), run.total, run.settings.timeout / 2)
            complete = True
        except ExternalError:
            complete = False
        checkpoint = wait_until_settled(run.flink, job, run.sink_rows, str(run.sink), run.settings.timeout)
        rows = run.sink_rows()
        out.append(f"{rows} rows; checkpoint {checkpoint}" + ("" if complete else "; offsets missing"))
    return complete


def _listening(port: int) -> bool:
    """Whether a server accepts connections on 127.0.0.1:port."""
    with socket.socket() as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _stop_with_savepoint(run: ScenarioRun, job: str) -> str:
    """Stop the job with a savepoint through Flink REST; its path."""
    with run.steps.step("stop with a savepoint") as out:
        client = run.flink
        trigger = client.stop_with_savepoint(job, run.savepoints.as_uri())
        savepoint = client.wait_for_savepoint(job, trigger)
        out.append(savepoint)
    return savepoint


def _cancel_keeping_checkpoint(run: ScenarioRun, job: str) -> str:
    """Cancel the job (its latest checkpoint is retained on cancellation); Flink's pointer to that checkpoint,
    from the job's checkpoint statistics: the directory listing can still hold the one before, which the
    JobManager deletes after the next completes."""
    with run.steps.step("cancel, keeping the latest checkpoint") as out:
        run.flink.cancel(job)
        latest = run.flink.checkpoints(job).latest_completed
        if latest is None or latest.external_path is None:
            raise ExternalError(f"job {job} has no completed checkpoint to restore from")
        out.append(f"checkpoint {latest.id}: {latest.external_path}")
    return latest.external_path


def run_portable_with_own_stack(
    run_dir: Path, progress: Progress, settings: ScenarioSettings, portable: PortableSettings, keep_stack: bool
) -> ScenarioReport:
    """Bring a stack up in `<run_dir>/stack`, run the Python scenario in `<run_dir>/python`, bring it down."""
    with own_stack(run_dir, progress, keep_stack) as stack:
        return run_portable_scenario(stack, run_dir / "python", progress, settings, portable)
