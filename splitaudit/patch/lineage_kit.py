"""`splitaudit lineage-kit`: the lineage kit's jar for a user's own Maven or Gradle build, from the package.

The kit (beam_pipelines/java/lineage-kit, dev.splitaudit:beam-kafka-lineage:0.1.0) gives a Beam KafkaIO pipeline's
sink the lineage columns the audit classifies duplicates by. A checkout's setup deploys it to the stack's patch
repository; the wheel carries the jar as package data, and `lineage-kit` writes it into a folder of the user's with
the lines that add it to a build. The jar is the whole artifact: Beam, Kafka and Flink are `provided`, so a pom adds
no dependency, and Maven installs it with a generated one. The kit's own pom is not given: it names the reactor's
parent pom, and a build resolving the kit from a repository without that parent fails ("Failed to read artifact
descriptor").
"""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path

from splitaudit.errors import ExternalError, UsageError
from splitaudit.home import lineage_kit_jar
from splitaudit.patch.results import LineageKitReport

GROUP_ID, ARTIFACT_ID, VERSION = "dev.splitaudit", "beam-kafka-lineage", "0.1.0"
# The install plugin the reactor's pom pins; Maven 3.8's default (2.4) needs more than Maven has cached.
INSTALL_PLUGIN = "org.apache.maven.plugins:maven-install-plugin:3.1.3"


def write_lineage_kit(out_dir: Path) -> LineageKitReport:
    """Write the kit's jar into `out_dir` (made if missing), never over an existing file."""
    source = lineage_kit_jar()
    if not source.is_file():
        raise ExternalError(
            f"the lineage kit's jar is missing ({source}): in a checkout, run `make setup`; an installed splitaudit "
            "carries it in its wheel, so reinstall it"
        )
    content = source.read_bytes()
    jar = (out_dir / source.name).absolute()
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        with jar.open("xb") as written:
            written.write(content)
    except FileExistsError:
        raise UsageError(f"{jar} already exists; lineage-kit never overwrites a file") from None
    install = [
        "mvn",
        f"{INSTALL_PLUGIN}:install-file",
        f"-Dfile={jar}",
        f"-DgroupId={GROUP_ID}",
        f"-DartifactId={ARTIFACT_ID}",
        f"-Dversion={VERSION}",
        "-Dpackaging=jar",
        "-DgeneratePom=true",
    ]
    return LineageKitReport(
        jar=str(jar),
        coordinates=f"{GROUP_ID}:{ARTIFACT_ID}:{VERSION}",
        size=len(content),
        sha256=hashlib.sha256(content).hexdigest(),
        maven_install=shlex.join(install),
        gradle_dependency=f'implementation(files("{jar}"))',
    )
