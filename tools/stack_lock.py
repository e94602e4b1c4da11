"""Write the stack lock (lab/splitaudit_lab/stack/stack.lock.json): every file `splitaudit setup` downloads.

The Flink distributions are the two sdists PyPI's index lists for each release (apache-flink-libraries, then
apache-flink): the Beam matrix's and the KafkaSource matrix's (`splitaudit_lab.stack.kafka_matrix`). The jar
components are dependency-list poms under beam_pipelines/java/stack/, resolved by Maven
(`dependency:list`, runtime scope) into the stack home's Maven repository; the lock keeps each file's path in the
repository, its coordinates, size and SHA-256. `demo-pipeline` is the reference pipeline's runtime dependencies
from Maven Central in Maven's resolution order (the order its shade plugin copies them in, which `job_jar` keeps
when a wheel assembles the demo's job jars): the reactor module resolved against the patch repository `make setup`
deployed the project's own artifacts to, which are left out (the wheel carries them). With `--check` it writes
nothing and exits 1, naming the differences, when the committed lock is not what the poms and PyPI give now.

    python tools/stack_lock.py [--check]      (`make stack-lock`)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import requests

from splitaudit.errors import ExternalError, SplitauditError
from splitaudit.home import BEAM_VERSION, FLINK_VERSION, JAVA_ROOT, OLDER_FLINK_VERSIONS, maven_repo, patch_repo
from splitaudit.progress import ConsoleProgress, Progress
from splitaudit_lab.stack.install import maven
from splitaudit_lab.stack.kafka_matrix import KAFKA_MATRIX_FLINK_VERSIONS
from splitaudit_lab.stack.lock import LOCK_FILE, LockedFile, StackLock, differences, flink_component, read_lock

# Each Maven component: its poms' folders under beam_pipelines/java/stack/, and the options of their resolution.
MAVEN_COMPONENTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "kafka-broker": (("kafka-broker",), ()),
    "spark-kafka": (("spark-kafka",), ()),
    "spark-avro": (("spark-avro",), ()),
    "s3proxy": (("s3proxy",), ()),
    # the plugin is one shaded jar: its own dependencies are inside it
    "flink-s3-fs-hadoop": (("flink-s3",), ("-DexcludeTransitive=true",)),
    # Flink's own test data (test jars), one pom per release (Maven resolves one version of an artifact per pom):
    # the jars alone, not what Flink's tests depend on
    "flink-test-corpus": (
        tuple(f"flink-test-corpus/{release}" for release in ("1.19.1", "1.20.1", "2.0.0")),
        ("-DexcludeTransitive=true",),
    ),
    # Flink's State Processor API, which the keyed-state tests and benchmarks run on the stack's Flink: the jar
    # alone (what it needs is in the distribution's lib/)
    "state-processor-api": (("state-processor-api",), ("-DexcludeTransitive=true",)),
}
# The plugin version the reactor uses (beam_pipelines/java/pom.xml), named in full so every Maven resolves the same.
DEPENDENCY_LIST = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:list"
# What the reference pipeline's shade executions leave out (the pom's artifactSet), and the project's own artifacts.
NOT_IN_DEMO_JARS = ("dev.splitaudit:", "org.apache.flink:", "org.slf4j:")
PYPI_SIMPLE = "https://pypi.org/simple"


def flink_sdists(version: str) -> tuple[LockedFile, ...]:
    """The two sdists of one Flink release, as PyPI's simple index (JSON) gives their URL, size and SHA-256.

    Releases from 2.0.1 on name them as PEP 625 asks (`apache_flink-2.0.1.tar.gz`), older ones with the project's
    own name (`apache-flink-1.20.3.tar.gz`); either is taken.
    """
    return tuple(
        _pypi_file(project, *(f"{name}-{version}.tar.gz" for name in (project, project.replace("-", "_"))))
        for project in ("apache-flink-libraries", "apache-flink")
    )


def _pypi_file(project: str, *filenames: str) -> LockedFile:
    index = f"{PYPI_SIMPLE}/{project}/"
    try:
        response = requests.get(index, headers={"Accept": "application/vnd.pypi.simple.v1+json"}, timeout=60)
        response.raise_for_status()
        files = response.json()["files"]
    except (requests.RequestException, ValueError, KeyError) as ex:
        raise ExternalError(f"PyPI's index {index} failed: {ex}") from None
    for file in files:
        if file["filename"] in filenames:
            return LockedFile(int(file["size"]), file["hashes"]["sha256"], url=file["url"])
    raise ExternalError(f"PyPI's index {index} lists no {' or '.join(filenames)}")


def maven_files(progress: Progress, component: str, work: Path) -> tuple[LockedFile, ...]:
    """The runtime dependencies a component's poms resolve to, sorted by repository path."""
    folders, options = MAVEN_COMPONENTS[component]
    repository = maven_repo()
    lines: set[str] = set()
    for number, folder in enumerate(folders):
        listing = work / f"{component}-{number}.txt"
        maven(
            progress,
            work / f"{component}-{number}.log",
            JAVA_ROOT / "stack" / folder / "pom.xml",
            DEPENDENCY_LIST,
            "-DincludeScope=runtime",
            "-DoutputAbsoluteArtifactFilename=true",
            f"-DoutputFile={listing}",
            *options,
        )
        lines.update(_artifacts(listing))
    return tuple(sorted((_locked(line, repository) for line in lines), key=lambda f: str(f.path)))


def demo_pipeline_files(progress: Progress, work: Path) -> tuple[LockedFile, ...]:
    """The reference pipeline's runtime dependencies from Maven Central, in Maven's resolution order."""
    settings = work / "patch-repo-settings.xml"
    settings.write_text(
        "<settings><profiles><profile><id>splitaudit</id><repositories><repository><id>splitaudit</id>"
        f"<url>{patch_repo().as_uri()}</url></repository></repositories></profile></profiles>"
        "<activeProfiles><activeProfile>splitaudit</activeProfile></activeProfiles></settings>"
    )
    listing = work / "demo-pipeline.txt"
    maven(
        progress,
        work / "demo-pipeline.log",
        JAVA_ROOT / "pom.xml",
        DEPENDENCY_LIST,
        "-s",
        str(settings),
        "-pl",
        f"reference-pipeline/beam-{BEAM_VERSION}",
        "-DincludeScope=runtime",
        "-DoutputAbsoluteArtifactFilename=true",
        f"-DoutputFile={listing}",
    )
    repository = maven_repo()
    lines = [line for line in _artifacts(listing) if not line.startswith(NOT_IN_DEMO_JARS)]
    return tuple(_locked(line, repository) for line in lines)


def _artifacts(listing: Path) -> list[str]:
    """The artifact lines of a `dependency:list` output file: `group:artifact:type[:classifier]:version:scope:/path`
    (`-- module …` after it, from plugin 3.x, dropped)."""
    lines = [line.strip().split(" -- ")[0] for line in listing.read_text().splitlines()]
    return [line for line in lines if ":/" in line]


def _locked(line: str, repository: Path) -> LockedFile:
    coordinates, _, path = line.partition(":/")
    file = Path("/" + path)
    group, artifact, _type, *rest = coordinates.split(":")
    # `…:version:scope`, or `…:classifier:version:scope` (a test jar's `tests`)
    classifier, version = (rest[0], rest[1]) if len(rest) == 3 else (None, rest[0])
    maven_coordinates = ":".join(part for part in (group, artifact, version, classifier) if part is not None)
    digest = hashlib.sha256(file.read_bytes()).hexdigest()
    return LockedFile(
        file.stat().st_size, digest, maven=maven_coordinates, path=file.relative_to(repository).as_posix()
    )


def resolve(progress: Progress) -> StackLock:
    """The lock as the poms and PyPI give it now, components in setup's install order."""
    components: dict[str, tuple[LockedFile, ...]] = {}
    for version in dict.fromkeys((FLINK_VERSION, *OLDER_FLINK_VERSIONS, *KAFKA_MATRIX_FLINK_VERSIONS)):
        with progress.step(f"PyPI: the sdists of Flink {version}"):
            components[flink_component(version)] = flink_sdists(version)
    with tempfile.TemporaryDirectory(prefix="stack-lock-") as work:
        for component in MAVEN_COMPONENTS:
            with progress.step(f"Maven: {component}"):
                components[component] = maven_files(progress, component, Path(work))
        with progress.step(f"Maven: demo-pipeline (the reference pipeline of Beam {BEAM_VERSION})"):
            components["demo-pipeline"] = demo_pipeline_files(progress, Path(work))
    return StackLock(components)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare with the committed lock; write nothing")
    parser.add_argument("--lock", type=Path, default=LOCK_FILE, help="the lock file (default: %(default)s)")
    args = parser.parse_args(argv)
    progress = ConsoleProgress()
    try:
        resolved = resolve(progress)
        if args.check:
            stale = differences(read_lock(args.lock), resolved)
            if stale:
                print(f"{args.lock} is stale; run `make stack-lock`:", *stale, sep="\n  ", file=sys.stderr)
                return 1
            print(f"{args.lock} is what the poms and PyPI give", file=sys.stderr)
            return 0
        args.lock.write_text(json_text(resolved))
    except SplitauditError as ex:
        print(ex, file=sys.stderr)
        return ex.exit_code
    print(f"wrote {args.lock}", file=sys.stderr)
    return 0


def json_text(lock: StackLock) -> str:
    """The lock as it is committed: indented JSON with a newline at the end."""
    return json.dumps(lock.to_json(), indent=2) + "\n"


if __name__ == "__main__":
    sys.exit(main())
