"""`splitaudit setup`: install into the stack home everything the stack runs, from PyPI and Maven Central.

Each component is keyed by what it was made from (a version, or a hash of the build files); a component
whose key matches its stamp is left alone, so a second run downloads nothing and works offline.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from splitaudit.errors import ExternalError
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
    built_patch_jar,
    flink_home,
    flink_plugins,
    in_checkout,
    jobs_dir,
    kafka_libs,
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
)
from splitaudit.progress import Progress
from splitaudit.stack.results import ComponentState, SetupReport

SMOKE_JOB = "splitaudit-smoke-job.jar"


@dataclass(frozen=True)
class Component:
    """One thing setup provides: a name, a key that changes when it must be rebuilt, and how to build it."""

    name: str
    version: str
    path: Path
    key: Callable[[], str]
    build: Callable[[Progress, Path], None]


def components(matrix: bool = False) -> list[Component]:
    """Everything the stack needs, in install order; `matrix` adds what the real-cluster matrix needs."""
    kafka_pom = JAVA_ROOT / "stack" / "kafka-broker" / "pom.xml"
    spark_kafka_pom = JAVA_ROOT / "stack" / "spark-kafka" / "pom.xml"
    spark_avro_pom = JAVA_ROOT / "stack" / "spark-avro" / "pom.xml"
    s3proxy_pom = JAVA_ROOT / "stack" / "s3proxy" / "pom.xml"
    flink_s3_pom = JAVA_ROOT / "stack" / "flink-s3" / "pom.xml"
    smoke = JAVA_ROOT / "smoke-job"
    portable = JAVA_ROOT / "portable"
    beam_lock = PYTHON_PIPELINE_ROOT / "requirements.lock"
    reactor = (
        JAVA_ROOT / "pom.xml",
        JAVA_ROOT / "enumerator-patch",
        JAVA_ROOT / "lineage-kit",
        JAVA_ROOT / "reference-pipeline",
        JAVA_ROOT / "users-job",
    )
    everything = [
        Component(
            "flink",
            FLINK_VERSION,
            flink_home(),
            lambda: f"flink-{FLINK_VERSION}",
            lambda p, log: _flink(p, log),
        ),
        Component(
            "kafka-broker",
            KAFKA_VERSION,
            kafka_libs(),
            lambda: _tree_hash(kafka_pom),
            lambda p, log: _kafka_broker(p, log, kafka_pom),
        ),
        # Spark's Kafka source for the audit (source offsets, a topic as the sink): pyspark does not ship it.
        Component(
            "spark-kafka",
            SPARK_KAFKA_VERSION,
            spark_kafka_jars(),
            # built against pyspark's jars/: a new pyspark re-checks which jars it already ships
            lambda: f"{_tree_hash(spark_kafka_pom)}+pyspark-{importlib.metadata.version('pyspark')}",
            lambda p, log: _spark_connector(p, log, spark_kafka_pom, spark_kafka_jars()),
        ),
        # Spark's Avro data source, for a sink Beam's AvroIO wrote: pyspark does not ship it either.
        Component(
            "spark-avro",
            SPARK_AVRO_VERSION,
            spark_avro_jars(),
            lambda: f"{_tree_hash(spark_avro_pom)}+pyspark-{importlib.metadata.version('pyspark')}",
            lambda p, log: _spark_connector(p, log, spark_avro_pom, spark_avro_jars()),
        ),
        # The object store for checkpoints and savepoints on s3://, and Flink's S3 filesystem plugin.
        Component(
            "s3proxy",
            S3PROXY_VERSION,
            s3proxy_libs(),
            lambda: _tree_hash(s3proxy_pom),
            lambda p, log: _copy_dependencies(p, log, s3proxy_pom, s3proxy_libs()),
        ),
        Component(
            "flink-s3-fs-hadoop",
            FLINK_VERSION,
            flink_plugins() / "s3-fs-hadoop",
            lambda: _tree_hash(flink_s3_pom),
            lambda p, log: _copy_dependencies(
                p, log, flink_s3_pom, flink_plugins() / "s3-fs-hadoop", "-DexcludeTransitive=true"
            ),
        ),
        Component(
            "smoke-job",
            "1",
            jobs_dir() / SMOKE_JOB,
            lambda: _tree_hash(smoke),
            lambda p, log: _maven_jar(p, log, smoke / "pom.xml", smoke / "target" / SMOKE_JOB, jobs_dir() / SMOKE_JOB),
        ),
        # The reactor of beam_pipelines/java: the reference pipeline's and the users' job's stock and patched jars,
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
        ),
        # The patch's jars as package data of splitaudit.patch (`patch-jar` reads them there; the wheel carries them).
        Component(
            "patch-classes",
            BEAM_VERSION,
            patch_classes(),
            lambda: _tree_hash(*reactor),
            lambda p, log: _copy_patch_classes(patch_classes()),
        ),
        # The Python pipeline on the portable runner: its job server and expansion service jars (a standalone
        # module of the reactor's parent, kept out of the reactor so the reference pipeline builds as fast as
        # before), and the Python SDK's own environment.
        Component(
            "beam-portable",
            BEAM_VERSION,
            portable_jars()["job-server"],
            lambda: _tree_hash(JAVA_ROOT / "pom.xml", portable),
            lambda p, log: maven(p, log, portable / "pom.xml", "package", "-DskipTests"),
        ),
        Component(
            "beam-python",
            BEAM_VERSION,
            beam_python_home() / "bin" / "python",
            lambda: _tree_hash(beam_lock),
            lambda p, log: _beam_python(p, log, beam_lock),
        ),
    ]
    if not matrix:
        return everything
    return [
        *everything,
        *(_older_flink(version) for version in OLDER_FLINK_VERSIONS),
        # The reference pipeline of every matrix release (reference-pipeline/beam-<version>/), -Pmatrix.
        Component(
            "beam-matrix",
            ",".join(MATRIX_FLINK),
            pipeline_jars(UPSTREAM_FIX_VERSION)["stock"],
            lambda: _tree_hash(*reactor),
            lambda p, log: _reactor(p, log, reactor[0], "package", "-DskipTests", "-Pmatrix"),
        ),
    ]


def _older_flink(version: str) -> Component:
    """A Flink distribution besides FLINK_VERSION, unpacked from its PyPI sdists."""
    return Component(
        f"flink-{version}",
        version,
        flink_home(version),
        lambda: f"flink-{version}",
        lambda p, log: _flink_sdists(p, log, version),
    )


def setup(progress: Progress, matrix: bool = False) -> SetupReport:
    """Install what is missing or stale; report every component (with `matrix`, the matrix's too)."""
    if not in_checkout():
        raise ExternalError(
            "`splitaudit setup` builds the stack from a checkout of splitaudit's repository (its Maven poms and the "
            "patch's diffs), and this installation is not one: clone the repository and run `make setup` there. "
            "inspect, guard, watch, audit and patch-jar need no stack."
        )
    home = stack_home()
    (home / "stamps").mkdir(parents=True, exist_ok=True)
    (home / "logs").mkdir(parents=True, exist_ok=True)
    states = []
    for component in components(matrix):
        stamp = home / "stamps" / f"{component.name}.json"
        key = component.key()
        started = time.monotonic()
        if _stamp_key(stamp) == key and component.path.exists():
            states.append(ComponentState(component.name, component.version, "present", str(component.path), 0.0))
            continue
        log = home / "logs" / f"{component.name}.log"
        log.unlink(missing_ok=True)
        with progress.step(f"install {component.name} {component.version}"):
            component.build(progress, log)
        stamp.write_text(json.dumps({"key": key}))
        states.append(
            ComponentState(
                component.name,
                component.version,
                "installed",
                str(component.path),
                time.monotonic() - started,
            )
        )
    return SetupReport(str(home), tuple(states))


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
            r"(Could not (?:resolve|find|transfer)[^\n]*|Failure to find[^\n]*|No matching distribution[^\n]*"
            r"|Could not find a version[^\n]*|ERROR: [^\n]*)",
            text,
        )
        detail = "\n  ".join(dict.fromkeys(culprits)) or "\n  ".join(text.splitlines()[-15:])
        raise ExternalError(f"{what} failed (exit {result.returncode}); full log: {log}\n  {detail}")


def _flink(progress: Progress, log: Path) -> None:
    """The Flink distribution from PyPI: apache-flink-libraries (the jars) + apache-flink (bin/, conf/).

    Both go into one --target prefix in ONE pip command (two --target installs collide on pyflink/), and
    with --no-deps, so PyFlink's own pin of apache-beam never enters the Python environment.
    """
    libraries = _pypi_download(progress, log, f"apache-flink-libraries=={FLINK_VERSION}", sdist=True)
    wheel = _pypi_download(progress, log, f"apache-flink=={FLINK_VERSION}", sdist=False)
    target = flink_home().parent
    shutil.rmtree(target, ignore_errors=True)
    _run(
        progress,
        log,
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(libraries), str(wheel)],
        f"install of the Flink {FLINK_VERSION} distribution into {target}",
    )
    for script in (flink_home() / "bin").glob("*.sh"):
        script.chmod(0o755)
    (flink_home() / "bin" / "flink").chmod(0o755)


def _flink_sdists(progress: Progress, log: Path, version: str) -> None:
    """An older Flink distribution (1.16) from its PyPI sdists, unpacked, never built or installed.

    PyPI has no wheel of apache-flink 1.16 for this Python, and building its sdist fails (pemja); the
    distribution itself is data in the two sdists: `deps/lib`, `deps/opt`, `deps/plugins` in
    apache-flink-libraries, `deps/bin`, `deps/conf` in apache-flink. They are laid out as FLINK_HOME the way
    the 1.19 install lays them out (`flink-<version>/pyflink/`).
    """
    home = flink_home(version)
    shutil.rmtree(home.parent, ignore_errors=True)
    home.mkdir(parents=True)
    for requirement in (f"apache-flink-libraries=={version}", f"apache-flink=={version}"):
        sdist = _pypi_download(progress, log, requirement, sdist=True)
        progress.info(f"unpacking {sdist.name}")
        with tarfile.open(sdist) as archive:
            for member in archive.getmembers():
                parts = Path(member.name).parts
                if len(parts) > 2 and parts[1] == "deps" and (member.isfile() or member.isdir()):
                    member.name = str(Path(*parts[2:]))
                    archive.extract(member, home, filter="data")
    for script in (*(home / "bin").glob("*.sh"), home / "bin" / "flink"):
        script.chmod(0o755)
    if not (home / "lib" / f"flink-dist-{version}.jar").is_file():
        raise ExternalError(f"the Flink {version} sdists held no lib/flink-dist-{version}.jar; see {log}")


def _pypi_download(progress: Progress, log: Path, requirement: str, *, sdist: bool) -> Path:
    """One file from PyPI (its sdist, or the wheel for this interpreter) into .stack/downloads, once."""
    downloads = stack_home() / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    name, version = requirement.split("==")
    pattern = f"{name}-{version}.tar.gz" if sdist else f"{name.replace('-', '_')}-{version}-*.whl"
    found = next(downloads.glob(pattern), None)
    if found is None:
        kind = ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", *kind, "-d", str(downloads), requirement]
        _run(progress, log, argv, f"download of {requirement} from PyPI")
        found = next(downloads.glob(pattern), None)
    if found is None:
        raise ExternalError(f"pip downloaded {requirement} but no {pattern} is in {downloads}")
    return found


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


def _copy_patch_classes(folder: Path) -> None:
    """Copy the jar of every patch variant the reactor built into `folder`, replacing what it held."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for flink_runner, beam_version in PATCH_VARIANTS:
        built = built_patch_jar(flink_runner, beam_version)
        if not built.is_file():
            raise ExternalError(f"the reactor did not build {built}")
        shutil.copy2(built, folder / built.name)


def _reactor(progress: Progress, log: Path, pom: Path, *goals: str) -> None:
    """Maven on the reactor of beam_pipelines/java, whose enumerator patch applies its diffs to Beam's sources with
    the `patch` program."""
    if shutil.which("patch") is None:
        raise ExternalError(
            "`patch` is not on PATH; the enumerator patch's build applies its diffs with it "
            "(Debian: apt-get install patch)"
        )
    maven(progress, log, pom, *goals)


def _kafka_broker(progress: Progress, log: Path, pom: Path) -> None:
    """The broker's classpath: the runtime dependencies of kafka_2.13, copied into a fresh libs/ folder."""
    _copy_dependencies(progress, log, pom, kafka_libs())


def _spark_connector(progress: Progress, log: Path, pom: Path, target: Path) -> None:
    """A Spark connector (Kafka, Avro) and what it needs beyond pyspark's jars/, copied into a fresh `target`.

    The pom excludes what pyspark already ships; a jar that still duplicates one of pyspark's (same artifact,
    any version) would put two copies of a class on the classpath, so it fails setup, naming the jars.
    """
    _copy_dependencies(progress, log, pom, target)
    provided = {_artifact(jar.name): jar.name for jar in _pyspark_jars().glob("*.jar")}
    twice = [
        f"{jar.name} (pyspark has {provided[_artifact(jar.name)]})"
        for jar in sorted(target.glob("*.jar"))
        if _artifact(jar.name) in provided
    ]
    if twice:
        shutil.rmtree(target)
        raise ExternalError(f"{pom}: copies jars pyspark already ships; exclude them: {', '.join(twice)}")


def _pyspark_jars() -> Path:
    """pyspark's own jars/ folder, found without importing pyspark."""
    try:
        return pyspark_home() / "jars"
    except FileNotFoundError as ex:
        raise ExternalError(str(ex)) from None


def _artifact(jar: str) -> str:
    """A jar file's artifact name without its version: `kafka-clients-3.9.2.jar` -> `kafka-clients`."""
    return re.split(r"-\d", jar.removesuffix(".jar"), maxsplit=1)[0]


def _copy_dependencies(progress: Progress, log: Path, pom: Path, target: Path, *options: str) -> None:
    """The runtime dependencies a dependency-list pom names, copied into `target`, emptied first."""
    shutil.rmtree(target, ignore_errors=True)
    maven(
        progress,
        log,
        pom,
        "dependency:copy-dependencies",
        f"-DoutputDirectory={target}",
        "-DincludeScope=runtime",
        *options,
    )


def _maven_jar(progress: Progress, log: Path, pom: Path, built: Path, installed: Path) -> None:
    """Build a jar with Maven and copy it into the stack home."""
    maven(progress, log, pom, "package", "-DskipTests")
    installed.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(built, installed)
