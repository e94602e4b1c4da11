"""The KafkaSource matrix: each flink-connector-kafka release the Flink-native jobs (beam_pipelines/java/flink-jobs)
are built against, and the Flink release whose session cluster runs them (docs/flink-kafka-jobs.md).

The stack's own pair (connector 3.3.0-1.19 on FLINK_VERSION) is built by every `splitaudit setup` into
flink-jobs/target/; the others by `setup --matrix` (the reactor's `matrix` profile, one module per release under
flink-jobs/matrix/), each on the Flink distribution setup --matrix installs from the stack lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from splitaudit.home import FLINK_VERSION, JAVA_ROOT

DATASTREAM_JOB = "flink-kafka-lineage-job.jar"
SQL_JOB = "flink-kafka-sql-lineage-job.jar"  # the same as a SQL job: the Table API's kafka connector, no uids
DYNAMIC_JOB = "flink-dynamic-kafka-lineage-job.jar"  # the DataStream job with DynamicKafkaSource, one cluster


@dataclass(frozen=True)
class ConnectorRelease:
    """One flink-connector-kafka release (`3.4.0-1.20`: the connector's version, then the Flink it is built for)
    and the Flink release of the PyPI distribution its jobs run on."""

    connector: str
    flink: str

    @property
    def target(self) -> Path:
        """Where the reactor leaves this release's job jars."""
        if self.flink == FLINK_VERSION:
            return JAVA_ROOT / "flink-jobs" / "target"
        return JAVA_ROOT / "flink-jobs" / "matrix" / f"connector-{self.connector}" / "target"

    @property
    def datastream_job(self) -> Path:
        """The DataStream job (`KafkaLineageJob`, uids `kafka-source` and `lineage-sink`)."""
        return self.target / DATASTREAM_JOB

    @property
    def sql_job(self) -> Path:
        """The SQL job (`KafkaSqlLineageJob`, no uids)."""
        return self.target / SQL_JOB

    @property
    def dynamic_job(self) -> Path:
        """The DynamicKafkaSource job (`DynamicKafkaLineageJob`, uid `dynamic-kafka-source`)."""
        return self.target / DYNAMIC_JOB

    @property
    def label(self) -> str:
        return f"flink-{self.flink}+kafka-{self.connector}"


KAFKA_SOURCE_MATRIX = (
    ConnectorRelease("3.3.0-1.19", FLINK_VERSION),
    ConnectorRelease("3.4.0-1.20", "1.20.3"),
    ConnectorRelease("4.0.1-2.0", "2.0.1"),
    ConnectorRelease("5.0.0-2.1", "2.1.1"),
    ConnectorRelease("5.0.0-2.2", "2.2.1"),
)
# The releases besides the stack's own pair (3.3.0-1.19 on FLINK_VERSION), and the Flink distributions `setup
# --matrix` installs for them.
OTHER_RELEASES = tuple(release for release in KAFKA_SOURCE_MATRIX if release.flink != FLINK_VERSION)
KAFKA_MATRIX_FLINK_VERSIONS = tuple(release.flink for release in OTHER_RELEASES)
