"""The watch's pure judgement of one poll: Flink's per-subtask source metrics as REST reports them, Kafka offsets,
and the checkpoints taken after a poll."""

from __future__ import annotations

import pytest

from splitaudit.audit.checks.findings import ERROR, Finding
from splitaudit.clients.flink import CheckpointHistory, CheckpointRef, FlinkRestClient, FlinkRestError
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.errors import UsageError
from splitaudit.guard.lifecycle import request_timeout
from splitaudit.guard.tally import AttemptReads, SteadySpan
from splitaudit.guard.watch import (
    PARTITION_READ_TWICE,
    READ_MORE_THAN_ADVANCED,
    READ_MORE_THAN_AVAILABLE,
    SubtaskSample,
    WatchSettings,
    fresh_sample,
    judge_checkpoint,
    judge_sample,
    subtask_sample,
)
from splitaudit.guard.watch import checkpoints as checkpoints_module
from splitaudit.guard.watch import rest as rest_module
from splitaudit.guard.watch.checkpoints import Poll
from splitaudit.guard.watch.loop import _same_location, _Watch
from splitaudit.guard.watch.rest import JobRest
from splitaudit.progress import Progress

SOURCE = "Source__Read/KafkaIO_Read_ReadFromKafkaViaUnbounded/Read(KafkaUnboundedSource)"
TOPIC = "orders-7"  # a topic name that itself ends in -<digits>
TOPICS = frozenset({TOPIC})


def _metrics(**read: int) -> dict[str, str]:
    """A source subtask's metrics as Flink's REST API lists them: `p2=8997` is 8,997 records read of partition 2."""
    metrics = {f"{SOURCE}.numRecordsOut": str(sum(read.values())), f"{SOURCE}.source_splits_0_elements_read": "1"}
    for name, count in read.items():
        value = f"DistributionResult{{sum={count * 10}, count={count}, min=10, max=10}}"
        metrics[f"{SOURCE}.KafkaIOReader_rawSize/{TOPIC}-{name.removeprefix('p')}"] = value
    return metrics


def test_a_subtask_sample_reads_the_per_partition_counts_of_the_watched_topics() -> None:
    metrics = _metrics(p2=8997, p0=10) | {f"{SOURCE}.KafkaIOReader_rawSize/other-3": "DistributionResult{count=4}"}
    sample = subtask_sample(1, metrics, TOPICS)
    assert (sample.subtask, dict(sample.partitions)) == (1, {(TOPIC, 2): 8997, (TOPIC, 0): 10})


def test_a_subtask_sample_carries_what_its_source_emitted() -> None:
    assert subtask_sample(0, _metrics(p0=7, p2=5), TOPICS).records_out == 12
    assert subtask_sample(0, {}, TOPICS).records_out is None


def test_a_restarted_subtask_drops_the_dead_attempts_counts_flink_still_serves() -> None:
    closed = SubtaskSample(0, {(TOPIC, 0): 1000, (TOPIC, 2): 1000}, 2000)
    # The new attempt has not reported yet: Flink serves the dead attempt's metrics, all of them.
    assert fresh_sample(closed, closed) == SubtaskSample(0, {}, 2000)
    # It reported numRecordsOut (0: nothing to read past its checkpoint) but no partition metric: both are old.
    assert fresh_sample(SubtaskSample(0, dict(closed.partitions), 0), closed) == SubtaskSample(0, {}, 0)
    # It read 30 records of partition 2 (a new metric value), none of partition 0 (the old value still served).
    reading = SubtaskSample(0, {(TOPIC, 0): 1000, (TOPIC, 2): 30}, 30)
    assert fresh_sample(reading, closed) == SubtaskSample(0, {(TOPIC, 2): 30}, 30)
    # Its own counts, as many as it emitted: nothing is old, whatever they equal.
    own = SubtaskSample(0, {(TOPIC, 0): 1000, (TOPIC, 2): 5}, 1005)
    assert fresh_sample(own, closed) == own
    assert fresh_sample(own, None) == own
    # Its own counts of a partition it read exactly as often as the dead attempt did, with numRecordsOut a record
    # behind them in the same poll (seen on the stack): the excess of one cannot be an old count of 500.
    replayed = SubtaskSample(1, {(TOPIC, 1): 500, (TOPIC, 3): 439}, 938)
    dead = SubtaskSample(1, {(TOPIC, 1): 500, (TOPIC, 3): 661}, 1160)
    assert fresh_sample(replayed, dead) == replayed


RESUME = {(TOPIC, p): 5000 for p in range(4)}
KAFKA = {(TOPIC, p): PartitionOffsets(0, 10_000) for p in range(4)}  # 5,000 records each past the restored offset


def _rows(findings: list[Finding]) -> list[tuple[str, str, str | None, int | None, int]]:
    return [(f.kind, f.severity, f.topic, f.partition, f.count) for f in findings]


def test_one_reader_per_partition_reading_no_more_than_available_is_silent() -> None:
    samples = (
        subtask_sample(0, _metrics(p0=5000, p2=4000), TOPICS),
        subtask_sample(1, _metrics(p1=5000, p3=1), TOPICS),
    )
    assert judge_sample(samples, RESUME, KAFKA) == []


def test_a_partition_on_two_subtasks_is_read_twice() -> None:
    samples = (
        subtask_sample(0, _metrics(p0=300, p2=300), TOPICS),
        subtask_sample(1, _metrics(p1=300, p2=200, p3=300), TOPICS),
    )
    findings = judge_sample(samples, RESUME, KAFKA)
    assert _rows(findings) == [(PARTITION_READ_TWICE, ERROR, TOPIC, 2, 2)]
    assert findings[0].detail.startswith("subtasks 0 and 1 both run a Kafka reader of this partition")


def test_twin_readers_on_one_subtask_read_more_than_the_partition_holds() -> None:
    # As the stock restored job does: both readers of partitions 0 and 2 on subtask 0, each 2,600 records in.
    samples = (subtask_sample(0, _metrics(p0=5200, p2=5000), TOPICS), subtask_sample(1, _metrics(p1=10), TOPICS))
    findings = judge_sample(samples, RESUME, KAFKA)
    assert _rows(findings) == [(READ_MORE_THAN_AVAILABLE, ERROR, TOPIC, 0, 200)]
    assert findings[0].detail == (
        "its readers read 5200 records since the restore, but it holds 5000 past offset 5000 (end offset 10000): "
        "at least 200 were read twice"
    )


def test_a_partition_the_savepoint_lacks_counts_from_its_log_start() -> None:
    kafka = KAFKA | {(TOPIC, 4): PartitionOffsets(100, 600)}  # grown: 500 records, none restored
    assert judge_sample((subtask_sample(0, _metrics(p4=500), TOPICS),), RESUME, kafka) == []
    assert _rows(judge_sample((subtask_sample(0, _metrics(p4=501), TOPICS),), RESUME, kafka)) == [
        (READ_MORE_THAN_AVAILABLE, ERROR, TOPIC, 4, 1)
    ]


def test_one_reader_reads_no_more_than_a_later_checkpoint_advanced_it() -> None:
    # Restored at 5,000; the poll counted 1,200 records of partition 0; the checkpoint after holds 6,200: exactly.
    assert judge_checkpoint({(TOPIC, 0): 1200, (TOPIC, 1): 0}, RESUME, {(TOPIC, 0): 6200, (TOPIC, 1): 5000}, 7) == []


def test_twin_readers_read_more_than_a_later_checkpoint_advanced_the_partition() -> None:
    # The stock restored job: two readers of partition 2 from 5,000, 700 records each by the poll; the checkpoint
    # after holds the one it snapshots at 5,750. Partition 9 is in no checkpoint: not judged.
    read = {(TOPIC, 2): 1400, (TOPIC, 0): 10, (TOPIC, 9): 50}
    findings = judge_checkpoint(read, RESUME, {(TOPIC, 2): 5750, (TOPIC, 0): 5010}, 12)
    assert _rows(findings) == [(READ_MORE_THAN_ADVANCED, ERROR, TOPIC, 2, 650)]
    assert findings[0].detail == (
        "its readers had read 1400 records since the restore, but checkpoint 12, taken after, holds it at offset "
        "5750, 750 past the restored offset 5000: one reader cannot read more than it advanced, so at least 650 "
        "were read by a second reader"
    )


def _checkpoint(checkpoint: int, triggered: float, status: str = "COMPLETED") -> CheckpointRef:
    return CheckpointRef(checkpoint, False, f"file:/cp/chk-{checkpoint}", status, int(triggered * 1000))


def test_a_poll_is_judged_only_by_a_checkpoint_triggered_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    read_checkpoints: list[str] = []

    def positions(location: str) -> dict[tuple[str, int], int]:
        read_checkpoints.append(location)
        return {(TOPIC, 0): 5500}  # 500 past the restored offset

    monkeypatch.setattr(checkpoints_module, "restored_offsets", positions)
    watch = _Watch(WatchSettings("http://127.0.0.1:1", "j"), FlinkRestClient("http://127.0.0.1:1"), Progress(), print)
    watch.tracker.resume = dict(RESUME)
    watch.checkpoints.polls = [Poll(100.0, {(TOPIC, 0): 600})]  # 600 read by epoch second 100
    samples = (subtask_sample(0, _metrics(p0=700), TOPICS),)
    # Triggered before the poll (or too close to it for the clocks), or still in progress: proves nothing.
    history = (_checkpoint(4, 99.0), _checkpoint(5, 100.1), _checkpoint(6, 101.0, "IN_PROGRESS"))
    assert (watch.judge(samples, history), read_checkpoints) == (False, [])
    assert [p.read for p in watch.checkpoints.polls] == [{(TOPIC, 0): 600}, {(TOPIC, 0): 700}]
    # Triggered after the first poll: its 600 records against 500 advanced; the second poll waits for a later one.
    assert watch.judge(samples, (*history, _checkpoint(6, 101.0))) is True
    assert read_checkpoints == ["file:/cp/chk-6"]
    assert [(e.finding.kind, e.finding.partition, e.finding.count) for e in watch.events] == [
        (READ_MORE_THAN_ADVANCED, 0, 100)
    ]
    assert (watch.checkpoints.judged, [p.read for p in watch.checkpoints.polls]) == (
        6,
        [{(TOPIC, 0): 700}, {(TOPIC, 0): 700}],
    )


def test_savepoint_locations_compare_by_path() -> None:
    assert _same_location("file:/runs/sp-1", "/runs/sp-1/")
    assert _same_location("file:///runs/sp-1", "file:/runs/sp-1")
    assert _same_location("file://localhost/runs/sp-1", "/runs/sp-1")  # the file-URI spellings fileio reads
    assert not _same_location("file:/runs/sp-1", "/runs/sp-2")
    assert not _same_location(None, "/runs/sp-1")


class _TriggeringFlink(FlinkRestClient):
    """Flink's checkpoint trigger calls as a 1.19 JobManager answers them: trigger t1 runs, then completes as 8,
    whose statistics are served from the second time they are asked for."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:1")
        self.triggered: list[str] = []
        self.answers: list[int | None] = [None, 8, 8]
        self.details_asked = 0

    def trigger_checkpoint(self, job_id: str) -> str:
        self.triggered.append(job_id)
        return f"t{len(self.triggered)}"

    def triggered_checkpoint(self, job_id: str, request_id: str) -> int | None:
        return self.answers.pop(0)

    def checkpoint(self, job_id: str, checkpoint_id: int) -> CheckpointRef:
        self.details_asked += 1
        if self.details_asked == 1:
            raise FlinkRestError("GET", "details", 404, [f"no statistics for {checkpoint_id}"])
        return _checkpoint(checkpoint_id, 100.5)


def test_a_probe_judges_the_poll_it_followed_by_the_checkpoint_it_triggered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoints_module, "restored_offsets", lambda location: {(TOPIC, 0): 5500})
    flink = _TriggeringFlink()
    watch = _Watch(WatchSettings("http://127.0.0.1:1", "j", probe=10.0), flink, Progress(), print)
    watch.tracker.resume = dict(RESUME)
    assert watch.probe("j") is False  # nothing read yet: no trigger
    watch.mark("read")
    watch.checkpoints.polls = [Poll(100.0, {(TOPIC, 0): 600})]
    assert (watch.probe("j"), flink.triggered) == (False, ["j"])  # t1 after the poll of 600
    watch.checkpoints.polls.append(Poll(100.2, {(TOPIC, 0): 650}))
    assert (watch.probe("j"), flink.triggered) == (False, ["j"])  # t1 still running: no second trigger
    assert (watch.probe("j"), watch.checkpoints.probing) == (
        False,
        ("t1", Poll(100.0, {(TOPIC, 0): 600})),
    )  # 8's stats not yet
    # t1 took checkpoint 8 at 5,500: 500 advanced against the 600 its poll counted; an error ends the probing.
    assert watch.probe("j") is True
    assert [(e.finding.kind, e.finding.count) for e in watch.events] == [(READ_MORE_THAN_ADVANCED, 100)]
    assert (watch.checkpoints.probing, flink.triggered) == (None, ["j"])


class _ListingFlink(FlinkRestClient):
    """A JobManager listing three jobs: one finished, one restored from another savepoint, one from ours; the
    last one's checkpoint statistics are only served from the second look (it is still initialising)."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:1")
        self.looks = 0

    def jobs(self) -> list[dict[str, object]]:
        return [
            {"jid": "done", "state": "FINISHED"},
            {"jid": "other", "state": "RUNNING"},
            {"jid": "ours", "state": "CREATED"},
        ]

    def checkpoints(self, job_id: str) -> CheckpointHistory:
        restored = {"other": "file:/sp/savepoint-2", "ours": "file:/sp/savepoint-1"}[job_id]
        if job_id == "ours":
            self.looks += 1
            if self.looks == 1:
                raise FlinkRestError("GET", "checkpoints", 404, ["not initialised"])
        return CheckpointHistory.from_json({"latest": {"restored": {"id": 3, "external_path": restored}}})

    def job(self, job_id: str) -> dict[str, object]:
        return {"vertices": [{"id": "v1", "name": "Source: Read", "parallelism": 2}]}


def test_without_a_job_id_the_watch_follows_the_job_restored_from_the_savepoint() -> None:
    settings = WatchSettings("http://127.0.0.1:1", None, savepoint="/sp/savepoint-1/", wait=5.0)
    watch = _Watch(settings, _ListingFlink(), Progress(), print)
    assert watch.await_job() == ("ours", {"id": "v1", "name": "Source: Read", "parallelism": 2})
    assert watch.restored is not None
    assert watch.restored.external_path == "file:/sp/savepoint-1"


def _start(watch: _Watch) -> dict[tuple[str, int], int] | None:
    """The current restart's start offsets (read through a call: mypy would keep an earlier assertion's type)."""
    return watch.tracker.attempt_start


def test_a_restart_starts_from_the_checkpoint_flink_restored_not_a_cached_answer() -> None:
    watch = _Watch(WatchSettings("http://127.0.0.1:1", "j"), FlinkRestClient("http://127.0.0.1:1"), Progress(), print)
    watch.tracker.resume, watch.tracker.restored_id = dict(RESUME), 5  # restored from savepoint 5
    watch.tracker.last, watch.tracker.samples = {(TOPIC, 0): 900}, (SubtaskSample(0, {(TOPIC, 0): 900}, 900),)
    watch.checkpoints.newest_completed, watch.checkpoints.checkpointed = 9, {9: {(TOPIC, 0): 5900}}
    watch.tracker.restarted("it failed")
    savepoint = CheckpointRef(5, True, "file:/sp/savepoint-5", "RESTORED")
    watch.tracker.restart_point(savepoint)  # the statistics' answer from before the restart
    assert _start(watch) is None
    watch.tracker.restart_point(CheckpointRef(9, False, "file:/cp/chk-9", "RESTORED"))
    assert _start(watch) == {(TOPIC, 0): 5900}
    # Another restart before a newer checkpoint completed restores checkpoint 9 again: its offsets, not the savepoint's.
    watch.tracker.last = {(TOPIC, 0): 3}
    watch.tracker.restarted("it failed again")
    watch.tracker.restart_point(CheckpointRef(9, False, "file:/cp/chk-9", "RESTORED"))
    assert _start(watch) == {(TOPIC, 0): 5900}
    # A restart before any checkpoint completed restores the savepoint again.
    watch.checkpoints.newest_completed, watch.tracker.restored_id, watch.tracker.restored_start = 0, 5, None
    watch.tracker.last = {(TOPIC, 0): 3}
    watch.tracker.restarted("it failed again")
    watch.tracker.restart_point(savepoint)
    assert _start(watch) == RESUME


def _document(state: str, start: int, parallelism: int) -> dict[str, object]:
    """GET /jobs/:id of the watched job, its source vertex `v1` (and a sink `v2`) at `parallelism`."""
    vertices = [{"id": v, "parallelism": parallelism, "status": state} for v in ("v1", "v2")]
    return {"state": state, "start-time": start, "vertices": vertices}


def test_each_attempt_is_noted_once_it_runs_with_why_it_began() -> None:
    watch = _Watch(WatchSettings("http://127.0.0.1:1", "j"), FlinkRestClient("http://127.0.0.1:1"), Progress(), print)
    listed = {"id": "v1", "name": "Source: Read", "parallelism": 2}
    assert watch.tracker.follow(_document("INITIALIZING", 100, 2), listed) == listed  # not running yet: nothing noted
    source = watch.tracker.follow(_document("RUNNING", 100, 2), listed)
    watch.tracker.last, watch.tracker.samples = {(TOPIC, 0): 900}, (SubtaskSample(0, {(TOPIC, 0): 900}, 900),)
    # Flink restarted the job (RESTARTING seen): the next running attempt is a restart.
    watch.tracker.restarted("restarted")
    watch.tracker.follow(_document("RUNNING", 100, 2), source)
    # The adaptive scheduler rescaled it between two polls: the attempt before ends, the source's subtasks are four.
    watch.tracker.last = {(TOPIC, 0): 950}
    source = watch.tracker.follow(_document("RUNNING", 100, 4), source)
    assert (source["parallelism"], len(watch.tracker.attempts)) == (4, 2)
    # A new JobManager recovered it: initialised anew, its start time is later.
    watch.tracker.last = {(TOPIC, 0): 10}
    watch.tracker.follow(_document("RUNNING", 250, 4), source)
    watch.tracker.follow(_document("RUNNING", 250, 4), source)  # the same attempt at the next poll
    begun = [(a.number, a.cause, a.parallelism) for a in watch.tracker.begun]
    assert begun == [(0, "restored", 2), (1, "restart", 2), (2, "rescale", 4), (3, "failover", 4)]
    whys = [str(a.why) for a in watch.tracker.attempts]
    assert [why.split(" at ")[0] for why in whys] == ["restarted", "a rescale", "a failover"]
    assert whys[2].endswith(" s came between two polls: what its readers read after the last one is not counted")


def test_an_attempt_killed_while_reading_is_tallied_at_the_checkpoint_its_restart_resumed_from() -> None:
    watch = _Watch(WatchSettings("http://127.0.0.1:1", "j"), FlinkRestClient("http://127.0.0.1:1"), Progress(), print)
    watch.tracker.resume, watch.tracker.restored_id = {(TOPIC, 0): 5000}, 5
    # Twin readers idle at 5500 (1000 counted) from 100 s to 110 s, then reading more when the TaskManager died.
    watch.tracker.spans = (SteadySpan(100.0, 110.0, {(TOPIC, 0): 1000}), SteadySpan(110.2, 110.2, {(TOPIC, 0): 1400}))
    watch.tracker.last, watch.tracker.samples = {(TOPIC, 0): 1400}, (SubtaskSample(0, {(TOPIC, 0): 1400}, 1400),)
    watch.checkpoints.checkpointed = {9: {(TOPIC, 0): 5500}}
    watch.tracker.restarted("it failed")
    # Checkpoint 9 was taken at 104 s, completed at 104.5 s: the counts then were 1000, 500 of them twice.
    history = (CheckpointRef(9, False, "file:/cp/chk-9", "COMPLETED", 104_000, 104_500),)
    watch.tracker.restart_point(CheckpointRef(9, False, "file:/cp/chk-9", "RESTORED"), history)
    assert _start(watch) == {(TOPIC, 0): 5500}
    assert watch.tracker.attempts == [AttemptReads(0, {(TOPIC, 0): 5000}, {(TOPIC, 0): 1000}, {(TOPIC, 0): 5500}, True)]


@pytest.mark.parametrize(
    ("job", "on_error", "message"),
    [
        ("j", "pause", "--on-error must be one of stop, cancel, report, not 'pause'"),
        (None, "stop", "watch needs --job, or --savepoint to follow the job restored from it"),
    ],
)
def test_settings_the_watch_cannot_follow_are_refused_when_made(job: str | None, on_error: str, message: str) -> None:
    with pytest.raises(UsageError) as refused:
        WatchSettings("http://127.0.0.1:1", job, on_error=on_error)
    assert str(refused.value) == message


class _VirtualClock:
    """time.monotonic and time.sleep of a clock that only the test moves."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def test_a_failing_call_is_retried_until_the_deadline_its_attempts_time_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _VirtualClock()
    monkeypatch.setattr(rest_module, "time", clock)
    rest = JobRest(FlinkRestClient("http://127.0.0.1:1"), rest_timeout=1.0)

    attempts: list[float] = []

    def unavailable() -> None:
        attempts.append(clock.now)
        clock.now += 0.25  # each attempt takes a quarter of a second to fail
        raise FlinkRestError("GET", "/jobs/j", 503, ["busy"])

    with pytest.raises(FlinkRestError):
        rest.ask("GET /jobs/j", unavailable)
    # The backoff 0.1, 0.2 between attempts; the third fails past the 1 s deadline: no fourth (the backoff alone,
    # 0.1 + 0.2 + 0.4 + 0.3 s, would have made five attempts and ended at 2.25 s).
    assert (attempts, clock.slept, clock.now) == ([0.0, 0.35, 0.8], [0.1, 0.2], 1.05)
    assert [f.times for f in rest.faults.values()] == [2]


@pytest.mark.parametrize(("budget", "timeout"), [(0.0, 10.0), (30.0, 30.0), (300.0, 60.0)])
def test_one_attempt_waits_the_budget_for_its_answer_within_ten_and_sixty_seconds(
    budget: float, timeout: float
) -> None:
    assert request_timeout(budget) == timeout
