"""A client of Flink's REST API (the JobManager's /v1 endpoints) for the calls splitaudit needs.

Upload and run a jar, read a job's state, trigger a savepoint and wait for it, stop with a savepoint,
cancel, and read the checkpoint history including `latest.restored`. Flink's own error text reaches the user in
`FlinkRestError`: one escaped line (its message and the Java exceptions named in a server-side trace), the
whole text as the error's `detail` (shown with `--debug`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from splitaudit.errors import ExternalError, java_errors, printable
from splitaudit.polling import poll

TERMINAL_STATES = frozenset({"FINISHED", "FAILED", "CANCELED", "SUSPENDED"})
NO_WATERMARK = -(2**63)  # Flink's Long.MIN_VALUE: an operator that has seen no watermark yet
METRIC_READS = 3  # reads of a subtask's metric values while their names change between the list and the values


class FlinkRestError(ExternalError):
    """Flink answered a REST call with an error: one line of Flink's own text in the message, all of it (a
    server-side Java trace included) in `detail`."""

    def __init__(self, method: str, url: str, status: int, flink_errors: list[str]) -> None:
        self.status = status
        self.flink_errors = flink_errors
        self.detail = "\n".join(flink_errors) or None
        super().__init__(f"Flink REST {method} {url} → HTTP {status}: {printable(error_line(flink_errors))}")


class FlinkUnreachableError(ExternalError):
    """A REST call got no answer: the connection was refused or reset, or the answer did not come in time."""

    status = None  # no HTTP status: what `FlinkRestError.status` is for an answer

    def __init__(self, method: str, url: str, reason: BaseException) -> None:
        super().__init__(f"Flink REST {method} {url} failed: {printable(str(reason))}")


def error_line(flink_errors: list[str]) -> str:
    """One line for the errors Flink's REST API returned: its first message, then, from a server-side trace,
    the Java exception it names and the last `Caused by:` (the root) as `java_errors` finds them, class names
    kept, never the trace's frames (`Internal server error. (java.util.concurrent.CancellationException)`)."""
    lines = [line.strip() for text in flink_errors for line in text.splitlines() if line.strip()]
    if not lines:
        return "(no error text)"
    named = [line for line in java_errors(lines[1:]) if line != lines[0]]
    return f"{lines[0]} ({'; '.join(named)})" if named else lines[0]


@dataclass(frozen=True)
class CheckpointRef:
    """One checkpoint or savepoint as the checkpoint statistics report it."""

    id: int
    is_savepoint: bool
    external_path: str | None
    status: str
    trigger_timestamp: int = 0  # ms since the epoch on the JobManager's clock (0: not reported)
    # When its last acknowledgement arrived (a completed checkpoint: when it completed), on the same clock.
    latest_ack_timestamp: int = 0

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> CheckpointRef:
        return cls(
            id=int(document["id"]),
            is_savepoint=bool(document.get("is_savepoint", False)),
            external_path=document.get("external_path"),
            status=str(document.get("status", "COMPLETED")),
            trigger_timestamp=int(document.get("trigger_timestamp") or 0),
            latest_ack_timestamp=int(document.get("latest_ack_timestamp") or 0),
        )


@dataclass(frozen=True)
class CheckpointHistory:
    """GET /jobs/:id/checkpoints, reduced to what the tools use."""

    completed: int
    failed: int
    in_progress: int
    latest_completed: CheckpointRef | None
    latest_savepoint: CheckpointRef | None
    latest_restored: CheckpointRef | None
    history: tuple[CheckpointRef, ...]

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> CheckpointHistory:
        counts = document.get("counts", {})
        latest = document.get("latest", {})

        def ref(key: str) -> CheckpointRef | None:
            entry = latest.get(key)
            return CheckpointRef.from_json(entry) if entry else None

        restored = latest.get("restored")
        return cls(
            completed=int(counts.get("completed", 0)),
            failed=int(counts.get("failed", 0)),
            in_progress=int(counts.get("in_progress", 0)),
            latest_completed=ref("completed"),
            latest_savepoint=ref("savepoint"),
            latest_restored=(
                CheckpointRef(
                    id=int(restored["id"]),
                    is_savepoint=bool(restored.get("is_savepoint", False)),
                    external_path=restored.get("external_path"),
                    status="RESTORED",
                )
                if restored
                else None
            ),
            history=tuple(CheckpointRef.from_json(entry) for entry in document.get("history", [])),
        )


RUN_TIMEOUT = 300.0  # seconds a jar run may take to answer


class FlinkRestClient:
    """Calls one Flink cluster's REST API, e.g. `FlinkRestClient("http://127.0.0.1:8081")`."""

    def __init__(self, base_url: str, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()

    def _call(self, method: str, path: str, timeout: float | None = None, **kwargs: Any) -> Any:
        url = f"{self.base_url}{path}"
        try:
            response = self.session.request(method, url, timeout=timeout or self.timeout, **kwargs)
        except requests.RequestException as ex:
            raise FlinkUnreachableError(method, url, ex) from ex
        if response.status_code >= 400:
            try:
                errors = [str(e) for e in response.json().get("errors", [])]
            except ValueError:
                errors = [response.text]
            raise FlinkRestError(method, url, response.status_code, errors)
        return response.json() if response.content else {}

    def overview(self) -> dict[str, Any]:
        """GET /overview: Flink version, task managers, slots, job counts."""
        result: dict[str, Any] = self._call("GET", "/overview")
        return result

    def jobmanager_config(self) -> dict[str, str]:
        """GET /jobmanager/config: the JobManager's configuration, key → value as Flink shows it."""
        return {str(entry["key"]): str(entry["value"]) for entry in self._call("GET", "/jobmanager/config")}

    def job_ids(self) -> set[str]:
        """GET /jobs/overview: the ids of every job the cluster knows, ended ones included."""
        return {str(job["jid"]) for job in self._call("GET", "/jobs/overview").get("jobs", [])}

    def taskmanager_ids(self) -> set[str]:
        """GET /taskmanagers: the resource ids of the TaskManagers the cluster lists."""
        return {str(tm["id"]) for tm in self._call("GET", "/taskmanagers").get("taskmanagers", [])}

    def upload_jar(self, jar: Path) -> str:
        """Upload a job jar; return the id /jars/:id/run takes."""
        with jar.open("rb") as handle:
            document = self._call(
                "POST", "/jars/upload", files={"jarfile": (jar.name, handle, "application/x-java-archive")}
            )
        return str(document["filename"]).rsplit("/", 1)[-1]

    def run_jar(
        self,
        jar_id: str,
        *,
        program_args: list[str] | None = None,
        entry_class: str | None = None,
        parallelism: int | None = None,
        savepoint_path: str | None = None,
        allow_non_restored_state: bool = False,
        job_id: str | None = None,
    ) -> str:
        """Run an uploaded jar, optionally restoring from a savepoint; return the job id.

        `job_id` (32 hex digits) fixes the id Flink gives the job instead of a random one.
        """
        body: dict[str, Any] = {"programArgsList": program_args or []}
        if job_id is not None:
            body["jobId"] = job_id
        if entry_class is not None:
            body["entryClass"] = entry_class
        if parallelism is not None:
            body["parallelism"] = parallelism
        if savepoint_path is not None:
            body["savepointPath"] = savepoint_path
            body["allowNonRestoredState"] = allow_non_restored_state
        # Flink answers once the JobManager has run the jar's main() and created the job, its checkpoint
        # storage included (for s3:// the S3 filesystem's first start): minutes on a loaded machine.
        return str(
            self._call("POST", f"/jars/{jar_id}/run", timeout=max(self.timeout, RUN_TIMEOUT), json=body)["jobid"]
        )

    def restore(
        self,
        jar_id: str,
        savepoint: str,
        *,
        program_args: list[str] | None = None,
        parallelism: int | None = None,
        job_id: str | None = None,
        entry_class: str | None = None,
    ) -> tuple[str, CheckpointRef]:
        """Run an uploaded jar (its `entry_class`, else its manifest's main class) from `savepoint` until all its
        vertices run, and prove through REST that it restored from that very savepoint (`latest.restored`); the
        job id and that checkpoint."""
        restored_id = self.run_jar(
            jar_id,
            program_args=program_args,
            entry_class=entry_class,
            parallelism=parallelism,
            savepoint_path=savepoint,
            job_id=job_id,
        )
        self.wait_all_running(restored_id)
        restored = self.checkpoints(restored_id).latest_restored
        if restored is None or restored.external_path != savepoint:
            raise ExternalError(f"job {restored_id} did not restore from {savepoint}: REST says {restored}")
        return restored_id, restored

    def jobs(self) -> list[dict[str, Any]]:
        """GET /jobs/overview: every job the cluster knows (`jid`, `name`, `state`, `start-time`, …)."""
        return [dict(job) for job in self._call("GET", "/jobs/overview").get("jobs", [])]

    def job(self, job_id: str) -> dict[str, Any]:
        """GET /jobs/:id: state, vertices, timestamps."""
        result: dict[str, Any] = self._call("GET", f"/jobs/{job_id}")
        return result

    def subtask_metrics(
        self, job_id: str, vertex_id: str, subtask: int, prefix: str = "", keep: Callable[[str], bool] | None = None
    ) -> dict[str, str]:
        """The metrics of one subtask of a vertex whose names start with `prefix` (and that `keep` keeps), name →
        value as Flink reports it (a string). Flink's REST metric fetcher refreshes them every
        `metrics.fetcher.update-interval`, and Flink answers names and values in two requests: the names are
        listed again after the values are read, and the values read again while names appeared in between, so
        that no value comes from a fetch that had metrics the list lacked (a count of records beside no gauge of
        the partition they came from). At most METRIC_READS reads; the last one's values then."""
        path = f"/jobs/{job_id}/vertices/{vertex_id}/subtasks/{subtask}/metrics"

        def listed() -> list[str]:
            names = (str(m["id"]) for m in self._call("GET", path))
            return sorted(name for name in names if name.startswith(prefix) and (keep is None or keep(name)))

        names, values = listed(), {}
        for _ in range(METRIC_READS):
            if not names:
                return {}
            values = {str(m["id"]): str(m["value"]) for m in self._call("GET", path, params={"get": ",".join(names)})}
            again = listed()
            if again == names:
                break
            names = again
        return values

    def input_watermarks(self, job_id: str) -> dict[str, int]:
        """Per vertex that has inputs (not a source), the lowest `currentInputWatermark` of its subtasks, epoch ms:
        event time before it is complete there (windows ending at or before it have fired). A vertex whose
        subtasks report no watermark yet (just deployed, or the metric fetcher has not reached them) has Flink's
        own "no watermark", `Long.MIN_VALUE`: nothing is complete there."""
        plan = self.job(job_id)["plan"]["nodes"]
        lowest: dict[str, int] = {}
        for node in plan:
            if node.get("inputs"):
                values = self._call("GET", f"/jobs/{job_id}/vertices/{node['id']}/watermarks")
                lowest[str(node["id"])] = min((int(float(m["value"])) for m in values), default=NO_WATERMARK)
        return lowest

    def job_state(self, job_id: str) -> str:
        """The job's state: CREATED, RUNNING, FINISHED, FAILED, CANCELED, …"""
        return str(self.job(job_id)["state"])

    def job_exceptions(self, job_id: str) -> str:
        """The job's root exception, if any, for error messages."""
        document = self._call("GET", f"/jobs/{job_id}/exceptions")
        return str(document.get("root-exception") or "")

    def wait_for_state(self, job_id: str, states: set[str], timeout: float = 120.0) -> str:
        """Wait until the job is in one of `states`; fail if it ends in another terminal state."""
        seen = ["UNKNOWN"]

        def reached() -> str | None:
            state = seen[0] = self.job_state(job_id)
            if state in states:
                return state
            if state in TERMINAL_STATES:
                raise ExternalError(
                    f"Flink job {job_id} ended {state} while waiting for {sorted(states)}:\n"
                    f"{self.job_exceptions(job_id)}"
                )
            return None

        wanted = "/".join(sorted(states))
        return poll(f"Flink job {job_id} to be {wanted}", reached, timeout=timeout, last_seen=lambda: seen[0])

    def wait_all_running(self, job_id: str, timeout: float = 120.0) -> None:
        """Wait until the job and every one of its vertices run (sources can be checkpointed from then on)."""
        self.wait_for_state(job_id, {"RUNNING"}, timeout)

        def all_running() -> bool:
            vertices = self.job(job_id).get("vertices", [])
            return bool(vertices) and all(v.get("status") == "RUNNING" for v in vertices)

        poll(f"every vertex of Flink job {job_id} to be RUNNING", all_running, timeout=timeout)

    def trigger_savepoint(
        self,
        job_id: str,
        target_directory: str | None = None,
        *,
        format_type: str = "CANONICAL",
        cancel: bool = False,
    ) -> str:
        """POST /jobs/:id/savepoints; return the trigger id to wait on."""
        body: dict[str, Any] = {"cancel-job": cancel, "formatType": format_type}
        if target_directory is not None:
            body["target-directory"] = target_directory
        return str(self._call("POST", f"/jobs/{job_id}/savepoints", json=body)["request-id"])

    def stop_with_savepoint(
        self,
        job_id: str,
        target_directory: str | None = None,
        *,
        format_type: str = "CANONICAL",
        drain: bool = False,
    ) -> str:
        """POST /jobs/:id/stop (stop with a savepoint); return the trigger id to wait on."""
        body: dict[str, Any] = {"drain": drain, "formatType": format_type}
        if target_directory is not None:
            body["targetDirectory"] = target_directory
        return str(self._call("POST", f"/jobs/{job_id}/stop", json=body)["request-id"])

    def wait_for_savepoint(self, job_id: str, request_id: str, timeout: float = 120.0) -> str:
        """Wait for a savepoint trigger to complete; return its location (a file: URI). Flink's failure verbatim."""

        def location() -> str | None:
            document = self._call("GET", f"/jobs/{job_id}/savepoints/{request_id}")
            if document.get("status", {}).get("id") != "COMPLETED":
                return None
            operation = document.get("operation", {})
            if "location" in operation:
                return str(operation["location"])
            cause = operation.get("failure-cause", {})
            raise ExternalError(f"savepoint of job {job_id} failed: {cause.get('stack-trace') or cause or document}")

        return poll(f"the savepoint of Flink job {job_id}", location, timeout=timeout, interval=0.3)

    def savepoint(
        self,
        job_id: str,
        target_directory: str | None = None,
        *,
        format_type: str = "CANONICAL",
        timeout: float = 120.0,
    ) -> str:
        """Trigger a savepoint and wait for it; return its location."""
        request_id = self.trigger_savepoint(job_id, target_directory, format_type=format_type)
        return self.wait_for_savepoint(job_id, request_id, timeout)

    def cancel(self, job_id: str, timeout: float = 60.0) -> None:
        """Cancel the job and wait until it is CANCELED (or already ended, also between the check and the call:
        a job ending on its own, e.g. just after a stop-with-savepoint completed, is answered 409)."""
        if self.job_state(job_id) in TERMINAL_STATES:
            return
        try:
            self._call("PATCH", f"/jobs/{job_id}", params={"mode": "cancel"})
        except FlinkRestError as ex:
            if ex.status == 409 and self.job_state(job_id) in TERMINAL_STATES:
                return
            raise

        def ended() -> bool:
            return self.job_state(job_id) in TERMINAL_STATES

        poll(f"Flink job {job_id} to be canceled", ended, timeout=timeout, interval=0.3)

    def rescale(self, job_id: str, parallelism: int) -> None:
        """PUT /jobs/:id/resource-requirements (Flink 1.18+, the adaptive scheduler): every vertex's parallelism
        between 1 and `parallelism`; the scheduler restarts the job from its latest checkpoint at the highest its
        slots allow."""
        vertices = self._call("GET", f"/jobs/{job_id}/resource-requirements")
        bounds = {"parallelism": {"lowerBound": 1, "upperBound": parallelism}}
        self._call("PUT", f"/jobs/{job_id}/resource-requirements", json=dict.fromkeys(vertices, bounds))

    def checkpoints(self, job_id: str) -> CheckpointHistory:
        """The job's checkpoint statistics: counts, latest completed/savepoint/restored, recent history."""
        return CheckpointHistory.from_json(self._call("GET", f"/jobs/{job_id}/checkpoints"))

    def trigger_checkpoint(self, job_id: str) -> str:
        """POST /jobs/:id/checkpoints (Flink 1.19+): take a checkpoint now; the trigger id to ask about."""
        return str(self._call("POST", f"/jobs/{job_id}/checkpoints", json={})["request-id"])

    def triggered_checkpoint(self, job_id: str, request_id: str) -> int | None:
        """The id of the checkpoint a trigger took, once completed (None while it runs); a failure's cause verbatim
        as an ExternalError."""
        document = self._call("GET", f"/jobs/{job_id}/checkpoints/{request_id}")
        if document.get("status", {}).get("id") != "COMPLETED":
            return None
        operation = document.get("operation", {})
        if operation.get("checkpointId") is not None:
            return int(operation["checkpointId"])
        raise ExternalError(f"checkpoint of job {job_id} failed: {operation.get('failureCause') or document}")

    def checkpoint(self, job_id: str, checkpoint_id: int) -> CheckpointRef:
        """GET /jobs/:id/checkpoints/details/:checkpointid: one checkpoint's statistics, its location included."""
        return CheckpointRef.from_json(self._call("GET", f"/jobs/{job_id}/checkpoints/details/{checkpoint_id}"))

    def wait_for_checkpoint(self, job_id: str, after: int = 0, timeout: float = 120.0) -> CheckpointRef:
        """Wait until a checkpoint with id > `after` has completed; return it."""

        def newer() -> CheckpointRef | None:
            latest = self.checkpoints(job_id).latest_completed
            return latest if latest is not None and latest.id > after else None

        return poll(f"a completed checkpoint > {after} of Flink job {job_id}", newer, timeout=timeout)
