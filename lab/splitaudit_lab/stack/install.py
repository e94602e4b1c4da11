"""`splitaudit setup`: install into the stack home everything the stack runs, from PyPI and Maven Central.

The embedded stack (Flink, the Kafka broker, Spark's connectors, the object store and Flink's S3 plugin) is made
of the files the stack lock names (`stack.lock.json`), downloaded once into the stack home's downloads/ and
checked against the lock, in a checkout and from an installed wheel alike. The job jars, the patch and the
Python pipeline's environment are built from a checkout's sources, with Maven and uv, and only there.

Each component is keyed by what it was made from (its locked files, or a hash of the build files); a component
whose key matches its stamp is left alone, so a second run downloads nothing and works offline.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import requests

from splitaudit.errors import ExternalError, UsageError
from splitaudit.home import (
    BEAM_VERSION,
    FLINK_VERSION,
    JAVA_ROOT,
    KAFKA_VERSION,
    MATRIX_FLINK,
    OLDER_FLINK_VERSIONS,
    PATCH_VARIANTS,
    PIPELINE_JARS,
    PYTHON_PIPELINE_ROOT,
    S3PROXY_VERSION,
    SPARK_AVRO_VERSION,
    SPARK_KAFKA_VERSION,
    UPSTREAM_FIX_VERSION,
    beam_python_home,
    built_lineage_kit,
    built_patch_jar,
    built_pipeline_classes,
    downloads_dir,
    flink_home,
    flink_plugins,
    flink_test_corpus,
    in_checkout,
    jobs_dir,
    kafka_libs,
    lineage_kit_jar,
    maven_repo,
    patch_classes,
    patch_repo,
    pipeline_jars,
    portable_jars,
    pyspark_home,
    s3proxy_libs,
    spark_avro_jars,
    spark_kafka_jars,
    stack_home,
    state_processor_api,
)
from splitaudit.progress import Progress
from splitaudit_lab.stack import downloads
from splitaudit_lab.stack.job_jar import pipeline_classes_jar, write_pipeline_jars
from splitaudit_lab.stack.kafka_matrix import KAFKA_MATRIX_FLINK_VERSIONS
from splitaudit_lab.stack.lock import LockedFile, StackLock, flink_component, read_lock
from splitaudit_lab.stack.results import ComponentState, SetupReport

SMOKE_JOB = "splitaudit-smoke-job.jar"


def _installable() -> str | None:
    """Component.unavailable's default: installable in any environment."""
    return None


@dataclass(frozen=True)
class Component:
    """One thing setup provides: a name, a key that changes when it must be rebuilt, and how to build it.

    `files` are what it downloads, from the stack lock: setup fetches them into downloads/ before `build` runs.
    `needs_checkout` marks what is built from a checkout's sources, which setup from an installed wheel leaves out;
    `wheel_only` what a checkout's reactor builds instead, which setup in a checkout leaves out.
    `unavailable` says why it cannot be installed in this Python environment, or None when it can.
    """

    name: str
    version: str
    path: Path
    key: Callable[[], str]
    build: Callable[[Progress, Path], None]
    files: tuple[LockedFile, ...] = ()
    needs_checkout: bool = False
    wheel_only: bool = False
    unavailable: Callable[[], str | None] = _installable


def components(matrix: bool = False) -> list[Component]:
    """Everything the stack needs, in install order; `matrix` adds what the real-cluster matrix needs."""
    lock = read_lock()
    smoke = JAVA_ROOT / "smoke-job"
    portable = JAVA_ROOT / "portable"
    beam_lock = PYTHON_PIPELINE_ROOT / "requirements.lock"
    reactor = (
        JAVA_ROOT / "pom.xml",
        JAVA_ROOT / "enumerator-patch",
        JAVA_ROOT / "flink-jobs",
        JAVA_ROOT / "lineage-kit",
        JAVA_ROOT / "reference-pipeline",
        JAVA_ROOT / "users-job",
        # the fixture jobs the reactor compiles (keyed-state on Flink 1.19.3, all-types-flink2 on Flink 2.3.0)
        JAVA_ROOT / "fixture-jobs",
    )
    for_users = [*(built_patch_jar(*variant) for variant in PATCH_VARIANTS), built_lineage_kit()]
    everything = [
        _flink(lock, FLINK_VERSION),
        # The broker's classpath: the runtime dependencies of kafka_2.13, the distribution's libs/.
        _jars(lock, "kafka-broker", KAFKA_VERSION, kafka_libs()),
        # Spark's Kafka source for the audit (source offsets, a topic as the sink): pyspark does not ship it.
        _spark_connector(lock, "spark-kafka", SPARK_KAFKA_VERSION, spark_kafka_jars()),
        # Spark's Avro data source, for a sink Beam's AvroIO wrote: pyspark does not ship it either.
        _spark_connector(lock, "spark-avro", SPARK_AVRO_VERSION, spark_avro_jars()),
        # The object store for checkpoints and savepoints on s3://, and Flink's S3 filesystem plugin.
        _jars(lock, "s3proxy", S3PROXY_VERSION, s3proxy_libs()),
        _jars(lock, "flink-s3-fs-hadoop", FLINK_VERSION, flink_plugins() / "s3-fs-hadoop"),
        # Flink's own test data (its test jars), which the reader's tests decode: a checkout's tests only.
        _jars(lock, "flink-test-corpus", "1", flink_test_corpus(), needs_checkout=True),
        # Flink's State Processor API, which the keyed-state tests and benchmarks read the same snapshots with.
        _jars(lock, "state-processor-api", "1.19.1", state_processor_api().parent, needs_checkout=True),
        Component(
            "smoke-job",
            "1",
            jobs_dir() / SMOKE_JOB,
            lambda: _tree_hash(smoke),
            lambda p, log: _maven_jar(p, log, smoke / "pom.xml", smoke / "target" / SMOKE_JOB, jobs_dir() / SMOKE_JOB),
            needs_checkout=True,
        ),
        # The reactor of beam_pipelines/java: the reference pipeline's and the users' job's stock and patched jars,
        # the Flink-native KafkaSource, DynamicKafkaSource and FileSource jobs (flink-jobs/),
        # the patch classes of every variant, the lineage kit, and the released runner jars the patch-jar tests
        # compare against; they stay in the modules' target/. The patch artifacts and the lineage kit are deployed
        # to patch_repo() for users' Maven or Gradle builds.
        Component(
            "beam-pipeline",
            BEAM_VERSION,
            PIPELINE_JARS["patched"],
            lambda: _tree_hash(*reactor),
            lambda p, log: _reactor(
                p,
                log,
                reactor[0],
                "deploy",
                "-DskipTests",
                f"-DaltDeploymentRepository=splitaudit::file:{patch_repo()}",
            ),
            needs_checkout=True,
        ),
        # The patch's jars and the lineage kit as package data of splitaudit.patch (`patch-jar` and `lineage-kit`
        # read them there; the wheel carries them), and the reference pipeline's own jar as package data of
        # splitaudit_lab.stack (a wheel assembles the demo's job jars from it).
        Component(
            "patch-classes",
            BEAM_VERSION,
            patch_classes(),
            # the jars' names too: a folder copied before it held the lineage kit is stale
            lambda: f"{_tree_hash(*reactor)}+{','.join(jar.name for jar in for_users)}",
            lambda p, log: _copy_built_jars(patch_classes(), for_users),
            needs_checkout=True,
        ),
        Component(
            "pipeline-classes",
            BEAM_VERSION,
            pipeline_classes_jar(),
            lambda: _tree_hash(*reactor),
            lambda p, log: _copy_built_jars(pipeline_classes_jar().parent, [built_pipeline_classes()]),
            needs_checkout=True,
        ),
        # From a wheel, the demo's job jars: the reference pipeline's own jar (package data) and its dependencies
        # from Maven Central, assembled as the reactor's shade plugin assembles them, then patched by `patch-jar`.
        _demo_pipeline(lock),
        # The Python pipeline on the portable runner: its job server and expansion service jars (a standalone
        # module of the reactor's parent, kept out of the reactor so the reference pipeline builds as fast as
        # before), and the Python SDK's own environment.
        Component(
            "beam-portable",
            BEAM_VERSION,
            portable_jars()["job-server"],
            lambda: _tree_hash(JAVA_ROOT / "pom.xml", portable),
            lambda p, log: maven(p, log, portable / "pom.xml", "package", "-DskipTests"),
            needs_checkout=True,
        ),
        Component(
            "beam-python",
            BEAM_VERSION,
            beam_python_home() / "bin" / "python",
            lambda: _tree_hash(beam_lock),
            lambda p, log: _beam_python(p, log, beam_lock),
            needs_checkout=True,
        ),
    ]
    if not matrix:
        return everything
    return [
        *everything,
        # The Beam matrix's older Flink, and the KafkaSource matrix's newer ones (1.20 to 2.2).
        *(_flink(lock, version) for version in dict.fromkeys((*OLDER_FLINK_VERSIONS, *KAFKA_MATRIX_FLINK_VERSIONS))),
        # The reference pipeline of every matrix release (reference-pipeline/beam-<version>/) and the KafkaSource
        # jobs of every other connector release (flink-jobs/matrix/connector-<release>/), -Pmatrix.
        Component(
            "beam-matrix",
            ",".join(MATRIX_FLINK),
            pipeline_jars(UPSTREAM_FIX_VERSION)["stock"],
            lambda: _tree_hash(*reactor),
            lambda p, log: _reactor(p, log, reactor[0], "package", "-DskipTests", "-Pmatrix"),
            needs_checkout=True,
        ),
    ]


def _flink(lock: StackLock, version: str) -> Component:
    """A Flink distribution, unpacked from the PyPI sdists the lock names for it."""
    name = flink_component(version)
    files = lock.files(name)
    return Component(
        name,
        version,
        flink_home(version),
        lambda: lock.key(name),
        lambda p, log: _flink_sdists(p, version, files),
        files,
    )


def _demo_pipeline(lock: StackLock) -> Component:
    """The reference pipeline's stock and patched job jars in the stack home's jobs/ (`pipeline_jars()` of a wheel),
    from the files the lock names for `demo-pipeline` and the package's jars; the key changes with either."""
    files = lock.files("demo-pipeline")

    def key() -> str:
        package = hashlib.sha256(pipeline_classes_jar().read_bytes() + lineage_kit_jar().read_bytes()).hexdigest()
        return f"{lock.key('demo-pipeline')}+{package}"

    def build(progress: Progress, log: Path) -> None:
        write_pipeline_jars([downloads.local_path(file, downloads_dir()) for file in files], jobs_dir())

    def unavailable() -> str | None:
        missing = [jar.name for jar in (pipeline_classes_jar(), lineage_kit_jar()) if not jar.is_file()]
        if missing:
            return f"this installation carries no {' or '.join(missing)} (a wheel built before `make setup`)"
        return None

    return Component(
        "demo-pipeline",
        BEAM_VERSION,
        pipeline_jars()["patched"],
        key,
        build,
        files,
        wheel_only=True,
        unavailable=unavailable,
    )


def _jars(lock: StackLock, name: str, version: str, target: Path, needs_checkout: bool = False) -> Component:
    """A folder of jars (a classpath, a Flink plugin, test data): the files the lock names for `name`."""
    files = lock.files(name)
    return Component(
        name,
        version,
        target,
        lambda: lock.key(name),
        lambda p, log: _copy_jars(files, target),
        files,
        needs_checkout=needs_checkout,
    )


def _spark_connector(lock: StackLock, name: str, version: str, target: Path) -> Component:
    """A Spark connector (Kafka, Avro) and what it needs beyond pyspark's jars/: the files the lock names for
    `name`; not installable without pyspark."""
    files = lock.files(name)
    return Component(
        name,
        version,
        target,
        # checked against pyspark's jars/: a new pyspark re-checks which jars it already ships
        lambda: f"{lock.key(name)}+pyspark-{importlib.metadata.version('pyspark')}",
        lambda p, log: _install_spark_connector(name, files, target),
        files,
        unavailable=_without_pyspark,
    )


def setup(progress: Progress, matrix: bool = False) -> SetupReport:
    """Install what is missing or stale; report every component (with `matrix`, the matrix's too).

    In a checkout that is everything; from an installed wheel, the embedded stack alone (what needs no checkout).
    Before downloading, the progress says how many files and bytes each component will download.
    """
    checkout = in_checkout()
    if matrix and not checkout:
        raise UsageError(
            "`splitaudit setup --matrix` builds the reference pipeline of every matrix release with Maven from a "
            "checkout of splitaudit's repository, and this installation is not one: clone the repository and run "
            "`make matrix` there. Without --matrix, setup installs the embedded stack from here."
        )
    home = stack_home()
    (home / "stamps").mkdir(parents=True, exist_ok=True)
    (home / "logs").mkdir(parents=True, exist_ok=True)
    # a checkout builds what a wheel assembles; a wheel cannot build what needs a checkout
    wanted = [c for c in components(matrix) if not (c.wheel_only if checkout else c.needs_checkout)]
    states: dict[str, ComponentState] = {}
    stale: list[tuple[Component, str]] = []
    for component in wanted:
        reason = component.unavailable()
        if reason is not None:
            states[component.name] = _state(component, "skipped", reason=reason)
            continue
        key = component.key()
        if _stamp_key(home / "stamps" / f"{component.name}.json") == key and component.path.exists():
            states[component.name] = _state(component, "present")
        else:
            stale.append((component, key))
    folder = downloads_dir()
    for line in downloads.describe(downloads.plan(((c.name, c.files) for c, _ in stale), folder), folder):
        progress.info(line)
    with requests.Session() as session:
        for component, key in stale:
            started = time.monotonic()
            log = home / "logs" / f"{component.name}.log"
            log.unlink(missing_ok=True)
            with progress.step(f"install {component.name} {component.version}"):
                downloaded = sum(downloads.fetch(file, folder, session) for file in component.files)
                component.build(progress, log)
            (home / "stamps" / f"{component.name}.json").write_text(json.dumps({"key": key}))
            states[component.name] = _state(component, "installed", time.monotonic() - started, downloaded)
    return SetupReport(str(home), tuple(states[component.name] for component in wanted))


def _state(
    component: Component, state: str, seconds: float = 0.0, downloaded: int = 0, reason: str | None = None
) -> ComponentState:
    return ComponentState(component.name, component.version, state, str(component.path), seconds, downloaded, reason)


def _stamp_key(stamp: Path) -> str | None:
    try:
        return str(json.loads(stamp.read_text())["key"])
    except (FileNotFoundError, ValueError, KeyError):
        return None


def _tree_hash(*paths: Path) -> str:
    """A hash of a build's inputs: every file under each path (or the file itself), except build output."""
    digest = hashlib.sha256()
    for path in paths:
        files = (
            [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and "target" not in p.parts)
        )
        for file in files:
            digest.update(str(file.relative_to(path.parent)).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()


def _run(progress: Progress, log: Path, argv: list[str], what: str) -> None:
    """Run a download/build command with its output in `log`; on failure name the artifact and the log."""
    progress.info(" ".join(argv))
    with log.open("a") as out:
        result = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False)
    if result.returncode != 0:
        text = log.read_text(errors="replace")
        culprits = re.findall(
            r"(Could not (?:resolve|find|transfer)[^\n]*|Failure to find[^\n]*|ERROR: [^\n]*)",
            text,
        )
        detail = "\n  ".join(dict.fromkeys(culprits)) or "\n  ".join(text.splitlines()[-15:])
        raise ExternalError(f"{what} failed (exit {result.returncode}); full log: {log}\n  {detail}")


def _flink_sdists(progress: Progress, version: str, sdists: tuple[LockedFile, ...]) -> None:
    """A Flink distribution from its two PyPI sdists, unpacked, never built or installed.

    The distribution itself is data in the sdists: `deps/lib`, `deps/opt`, `deps/plugins` in
    apache-flink-libraries, `deps/bin`, `deps/conf` in apache-flink. They are laid out as FLINK_HOME the way pip
    would install them (`flink-<version>/pyflink/`). No pip: PyPI has no wheel of apache-flink 1.16 for this
    Python, building its sdist fails (pemja), and PyFlink's own pin of apache-beam never enters any environment.
    """
    home = flink_home(version)
    shutil.rmtree(home.parent, ignore_errors=True)
    home.mkdir(parents=True)
    for sdist in sdists:
        progress.info(f"unpacking {sdist.name}")
        with tarfile.open(downloads.local_path(sdist, downloads_dir())) as archive:
            for member in archive.getmembers():
                parts = Path(member.name).parts
                if len(parts) > 2 and parts[1] == "deps" and (member.isfile() or member.isdir()):
                    member.name = str(Path(*parts[2:]))
                    archive.extract(member, home, filter="data")
    for script in (*(home / "bin").glob("*.sh"), home / "bin" / "flink"):
        script.chmod(0o755)
    if not (home / "lib" / f"flink-dist-{version}.jar").is_file():
        names = " and ".join(sdist.name for sdist in sdists)
        raise ExternalError(f"the Flink {version} sdists ({names}) held no lib/flink-dist-{version}.jar")


def _copy_jars(jars: tuple[LockedFile, ...], target: Path) -> None:
    """The downloaded `jars` into a fresh `target`, each hard-linked (copied across filesystems)."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for jar in jars:
        source = downloads.local_path(jar, downloads_dir())
        try:
            os.link(source, target / jar.name)
        except OSError:
            shutil.copyfile(source, target / jar.name)


def _beam_python(progress: Progress, log: Path, lock: Path) -> None:
    """The Python SDK's environment from its lock file, with uv (installed next to this interpreter)."""
    home = beam_python_home()
    uv = Path(sys.executable).parent / "uv"
    if not uv.exists():
        raise ExternalError(f"uv not found next to {sys.executable}; run `make setup`")
    if not (home / "bin" / "python").exists():
        _run(progress, log, [str(uv), "venv", "--python", sys.executable, str(home)], "the Beam SDK environment")
    python = str(home / "bin" / "python")
    _run(progress, log, [str(uv), "pip", "install", "--python", python, "-r", str(lock)], f"apache-beam {BEAM_VERSION}")


def maven(progress: Progress, log: Path, pom: Path, *goals: str) -> None:
    """Run Maven on one pom, batch mode, with the stack home's own local repository."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ExternalError("Maven (`mvn`) is not on PATH; install it (Debian: apt-get install maven)")
    _run(
        progress,
        log,
        [mvn, "-B", "-f", str(pom), f"-Dmaven.repo.local={maven_repo()}", *goals],
        f"maven {' '.join(goals[:1])} of {pom.relative_to(JAVA_ROOT.parents[1])}",
    )


def _copy_built_jars(folder: Path, built: list[Path]) -> None:
    """Copy jars the reactor built into `folder`, replacing what it held."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for jar in built:
        if not jar.is_file():
            raise ExternalError(f"the reactor did not build {jar}")
        shutil.copy2(jar, folder / jar.name)


def _reactor(progress: Progress, log: Path, pom: Path, *goals: str) -> None:
    """Maven on the reactor of beam_pipelines/java, whose enumerator patch applies its diffs to Beam's sources with
    the `patch` program."""
    if shutil.which("patch") is None:
        raise ExternalError(
            "`patch` is not on PATH; the enumerator patch's build applies its diffs with it "
            "(Debian: apt-get install patch)"
        )
    maven(progress, log, pom, *goals)


def _without_pyspark() -> str | None:
    """Why Spark's connectors cannot be installed here (pyspark is not), or None."""
    try:
        pyspark_home()
    except FileNotFoundError:
        return (
            "Spark's connectors go beside pyspark's own jars, and pyspark is not installed: "
            "splitaudit's extra [spark] installs it (pip install 'splitaudit[spark]'); then run setup again"
        )
    return None


def _install_spark_connector(name: str, jars: tuple[LockedFile, ...], target: Path) -> None:
    """A Spark connector's locked jars into a fresh `target`, none of them one pyspark already ships.

    Its pom excludes what pyspark already ships; a jar that still duplicates one of pyspark's (same artifact,
    any version) would put two copies of a class on the classpath, so it fails setup, naming the jars.
    """
    _copy_jars(jars, target)
    provided = {_artifact(jar.name): jar.name for jar in _pyspark_jars().glob("*.jar")}
    twice = [
        f"{jar.name} (pyspark has {provided[_artifact(jar.name)]})"
        for jar in sorted(target.glob("*.jar"))
        if _artifact(jar.name) in provided
    ]
    if twice:
        shutil.rmtree(target)
        raise ExternalError(
            f"the stack lock's {name} holds jars pyspark already ships; exclude them in "
            f"beam_pipelines/java/stack/{name}/pom.xml and run `make stack-lock`: {', '.join(twice)}"
        )


def _pyspark_jars() -> Path:
    """pyspark's own jars/ folder, found without importing pyspark."""
    try:
        return pyspark_home() / "jars"
    except FileNotFoundError as ex:
        raise ExternalError(str(ex)) from None


def _artifact(jar: str) -> str:
    """A jar file's artifact name without its version: `kafka-clients-3.9.2.jar` -> `kafka-clients`."""
    return re.split(r"-\d", jar.removesuffix(".jar"), maxsplit=1)[0]


def _maven_jar(progress: Progress, log: Path, pom: Path, built: Path, installed: Path) -> None:
    """Build a jar with Maven and copy it into the stack home."""
    maven(progress, log, pom, "package", "-DskipTests")
    installed.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(built, installed)
