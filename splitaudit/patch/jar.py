"""`splitaudit patch-jar`: replace Beam's split enumerator classes in a shaded job jar with the patched ones.

The patch (beam_pipelines/java/enumerator-patch, upstream apache/beam PR #33606, plus partition discovery on
restore) replaces four classes of the classic Flink runner and adds three (two to the runner's source package,
one to KafkaIO's), built once per supported Beam release and runner artifact. A user's job jar is
recognised from its own contents, never its file name: the Beam release and runner from the
`META-INF/maven/org.apache.beam/*/pom.properties` the shade plugin keeps, and the classes by their SHA-256
against the released ones. Anything else is refused with the reason and what to do: not a jar, not Beam, no
classic Flink runner, a runner that predates FlinkSource, a release that already has the fix, a jar splitaudit
already patched (unless `--force`), a release no variant is built for, or classes that differ from the release.
"""

from __future__ import annotations

import hashlib
import re
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splitaudit.errors import ExternalError, InputError, UsageError
from splitaudit.home import patch_jar_path
from splitaudit.patch.rawzip import rewrite_entries, written_atomically
from splitaudit.patch.results import PatchReport, ReplacedEntry

SOURCE_PACKAGE = "org/apache/beam/runners/flink/translation/wrappers/streaming/io/source/"
PATCHED_CLASSES = (
    SOURCE_PACKAGE + "FlinkSource.class",
    SOURCE_PACKAGE + "FlinkSourceSplitEnumerator.class",
    SOURCE_PACKAGE + "FlinkSourceReaderBase.class",
    # Its start() calls the base's, which reports the reader's restored splits to the enumerator.
    SOURCE_PACKAGE + "unbounded/FlinkUnboundedSourceReader.class",
)
# Classes partition discovery on restore adds: Beam has none of them. The KafkaIO helper is only loaded for a
# Kafka source, so a job without KafkaIO carries it unused.
ADDED_CLASSES = (
    SOURCE_PACKAGE + "RestoredSplitsEvent.class",
    SOURCE_PACKAGE + "RestorePartitionDiscovery.class",
    "org/apache/beam/sdk/io/kafka/SplitauditKafkaPartitions.class",
)
FLINK_RUNNER_CLASS = "org/apache/beam/runners/flink/FlinkRunner.class"
ENUMERATOR_CLASS = SOURCE_PACKAGE + "FlinkSourceSplitEnumerator.class"
UNBOUNDED_READER_CLASS = SOURCE_PACKAGE + "unbounded/FlinkUnboundedSourceReader.class"
# The method name in the unbounded reader's constant pool when the reader finalizes checkpoint marks (for
# KafkaIO: commits offsets with commitOffsetsInFinalize) as Flink completes a checkpoint: re-added by apache/beam
# PR #30849 (beam#29902, #30539). Present in the released 2.56.0, 2.59.0 and 2.62.0 classes (and splitaudit's
# patched builds of them), absent from 2.54.0's: 2.52-2.55 never finalize.
FINALIZE_MARKER = b"notifyCheckpointComplete"

# The constructor the fix adds, as its JVM descriptor in the class's constant pool: present in the patched
# build and in fixed Beam releases (javap of 2.70.0, beam_pipelines/java/README.md), absent in 2.52 to 2.62.
FIXED_CONSTRUCTOR_DESCRIPTOR = (
    b"(Lorg/apache/flink/api/connector/source/SplitEnumeratorContext;Lorg/apache/beam/sdk/io/Source;"
    b"Lorg/apache/beam/sdk/options/PipelineOptions;IZ)V"
)
# The log message only splitaudit's patched enumerator has (a string constant of the class): tells a jar
# splitaudit patched from a Beam release that carries the upstream fix.
PATCH_MARKER = b"splits already initialized, not splitting again"
# A string constant of every patched enumerator variant that finds partitions added while the job was down
# (partition discovery on restore): a jar whose enumerator has it reads a grown topic's new partitions.
DISCOVERY_MARKER = b"splitaudit partition discovery on restore"
# What a user of an affected release no variant is built for can do.
REMEDY = (
    "upgrade to Beam 2.70.0 or later (it has the fix), or build the job with a supported release "
    "(beam_pipelines/java/README.md shows the dependency that adds the patch to a Maven or Gradle build)"
)

_BEAM_POM = "META-INF/maven/org.apache.beam/{artifact}/pom.properties"
_RUNNER_POM = re.compile(r"META-INF/maven/org\.apache\.beam/(beam-runners-flink-\d+\.\d+)/pom\.properties")
_FLINK_CORE_POM = "META-INF/maven/org.apache.flink/flink-core/pom.properties"


@dataclass(frozen=True)
class PatchTarget:
    """A Beam release and Flink runner artifact a patch variant is built for."""

    beam_version: str
    flink_runner: str
    # SHA-256 of Beam's released classes, read from org.apache.beam:<flink_runner>:<beam_version>.
    original_sha256: Mapping[str, str]

    @property
    def label(self) -> str:
        return f"Beam {self.beam_version} with {self.flink_runner}"

    @property
    def patch_jar(self) -> Path:
        return patch_jar_path(self.flink_runner, self.beam_version)


def _target(beam_version: str, flink_runner: str, *sha256: str) -> PatchTarget:
    """A target from the SHA-256 of its released classes, in the order of PATCHED_CLASSES."""
    return PatchTarget(beam_version, flink_runner, dict(zip(PATCHED_CLASSES, sha256, strict=True)))


# 2.56.0, 2.59.0 and 2.62.0 release the same FlinkSource.class; 2.59.0 and 2.62.0 the same enumerator and
# reader base too (their unbounded readers differ: compiled against different Flink releases).
_FLINK_SOURCE_2_56 = "df12943ad616f3e8b93960c676ce52c3668e6b8c01cefc8859cce574097ae30c"
_ENUMERATOR_2_59 = "7b0879b7b9abde3089de76aa8989dc512372bd7259f537622f1fab20bcb08db9"
_READER_BASE_2_59 = "ad12fc112229e67dcb581a1604e9d1510cac902d98903e20f080f2c0c108e74e"
SUPPORTED_TARGETS = (
    _target(
        "2.54.0",
        "beam-runners-flink-1.16",
        "9b9bcccee605bc842f0821f79fde79a9172024a46c701c6ea1aa14fea7f31bae",
        "633499785f97f74a149d13cdbc1546de526359c57d4bb4b163ad9707d315ecd3",
        "a22df80139aca54f8ba3ab39af89fccd9e99a84c84cd5ae07c958e9220d2b919",
        "70b09381370216443ce32b5a26a26c6df3f580ad8e1847fd3d0cbc8f97a793c0",
    ),
    _target(
        "2.56.0",
        "beam-runners-flink-1.16",
        _FLINK_SOURCE_2_56,
        "1577b8182bcef266fd84cba0cc67e28050624c09d743578b0893b9c8323b4d3c",
        "d11c5dcc26304eb2436817c475c7f655a4e4bc6ae8d697f81c69f43cd612e0e4",
        "b1fe033b0bcc1e072c82793c95534b55bab411c2984186e4cf323acbb752287c",
    ),
    _target(
        "2.59.0",
        "beam-runners-flink-1.16",
        _FLINK_SOURCE_2_56,
        _ENUMERATOR_2_59,
        _READER_BASE_2_59,
        "a11c9840c4029a85762260723625df05af0a1c78085347a1a5c9268b35643901",
    ),
    _target(
        "2.62.0",
        "beam-runners-flink-1.19",
        _FLINK_SOURCE_2_56,
        _ENUMERATOR_2_59,
        _READER_BASE_2_59,
        "f611daff922c3520329b3ab83a8396a301026af45c84fac2511658bc20f5abd1",
    ),
)


@dataclass(frozen=True)
class JarFacts:
    """What a job jar's own contents say about restoring Beam's Kafka source state: for `splitaudit guard`.

    `beam_version` is None for a jar without Beam classes (a plain Flink job), `flink_runner` None for a Beam
    jar without the classic Flink runner. `flink_source` is whether the runner has FlinkSource (Beam 2.52 on),
    the only path beam#31313 affects; `upstream_fix` a release with the fix, `splitaudit_patch` the patched
    enumerator of `patch-jar` or the Maven patch; `discovery` an enumerator that reads partitions added while
    the job was down; `finalizes_checkpoints` a FlinkSource reader that finalizes checkpoint marks when Flink
    completes a checkpoint (2.56 on; 2.52-2.55 never do, so `commitOffsetsInFinalize` commits nothing there).
    """

    path: str
    beam_version: str | None
    flink_runner: str | None
    flink_source: bool
    upstream_fix: bool
    splitaudit_patch: bool
    discovery: bool
    finalizes_checkpoints: bool = False

    @property
    def rereads_restored_splits(self) -> bool:
        """A FlinkSource without the fix: on restore every split is re-initialised and read a second time."""
        return self.flink_source and not (self.upstream_fix or self.splitaudit_patch)

    @property
    def label(self) -> str:
        if self.beam_version is None:
            return "a job jar without Beam"
        if self.flink_runner is None:
            return f"Beam {self.beam_version} without the classic Flink runner"
        build = (
            "patched by splitaudit"
            if self.splitaudit_patch
            else "with the upstream fix"
            if self.upstream_fix
            else "unpatched"
            if self.flink_source
            else "without FlinkSource"
        )
        return f"Beam {self.beam_version} with {self.flink_runner}, {build}"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "beam_version": self.beam_version,
            "flink_runner": self.flink_runner,
            "flink_source": self.flink_source,
            "upstream_fix": self.upstream_fix,
            "splitaudit_patch": self.splitaudit_patch,
            "discovery": self.discovery,
            "rereads_restored_splits": self.rereads_restored_splits,
            "finalizes_checkpoints": self.finalizes_checkpoints,
        }


def read_jar_facts(jar_path: Path) -> JarFacts:
    """Recognise a job jar's Beam release, Flink runner and enumerator build from its contents (never its name)."""
    if not jar_path.is_file():
        raise InputError(str(jar_path), None, "no such file")
    where = str(jar_path)
    try:
        with zipfile.ZipFile(jar_path) as jar:
            names = set(jar.namelist())
            if not any(name.startswith("org/apache/beam/") for name in names):
                return JarFacts(where, None, None, False, False, False, False)
            if FLINK_RUNNER_CLASS not in names:
                return JarFacts(where, _beam_core_version(jar, names), None, False, False, False, False)
            beam_version, flink_runner = _release(where, jar, names)
            if ENUMERATOR_CLASS not in names:
                return JarFacts(where, beam_version, flink_runner, False, False, False, False)
            enumerator = jar.read(ENUMERATOR_CLASS)
            reader = jar.read(UNBOUNDED_READER_CLASS) if UNBOUNDED_READER_CLASS in names else b""
    except zipfile.BadZipFile as ex:
        raise InputError(where, None, f"not a jar (zip) file: {ex}") from ex
    patched = PATCH_MARKER in enumerator
    fixed = FIXED_CONSTRUCTOR_DESCRIPTOR in enumerator and not patched
    discovery, finalizes = DISCOVERY_MARKER in enumerator, FINALIZE_MARKER in reader
    return JarFacts(where, beam_version, flink_runner, True, fixed, patched, discovery, finalizes)


def patch_jar(in_jar: Path, out_jar: Path, force: bool) -> PatchReport:
    """Write `out_jar`: `in_jar` with the patched classes in place of Beam's; `in_jar` is never modified."""
    if not in_jar.is_file():
        raise InputError(str(in_jar), None, "no such file")
    if out_jar.resolve() == in_jar.resolve():
        raise UsageError(f"--out {out_jar} is the input jar itself; patch-jar never modifies its input")
    if out_jar.exists() and not force:
        raise UsageError(f"{out_jar} already exists; pass --force to overwrite it")
    try:
        with zipfile.ZipFile(in_jar) as jar:
            target, bundled_flink, names, originals = _check_jar(str(in_jar), jar, force)
    except zipfile.BadZipFile as ex:
        raise InputError(str(in_jar), None, f"not a jar (zip) file: {ex}") from ex
    patched = _patched_classes(target)
    # A jar patched before (--force) holds the added classes already: they are replaced like the others.
    present = set(names)
    replacements = {name: content for name, content in patched.items() if name in PATCHED_CLASSES or name in present}
    additions = {name: content for name, content in patched.items() if name not in replacements}
    with written_atomically(out_jar) as out:
        rewrite_entries(in_jar, out, replacements, additions)
    replaced = tuple(
        ReplacedEntry(
            name=name,
            original_sha256=hashlib.sha256(originals[name]).hexdigest(),
            original_size=len(originals[name]),
            patched_sha256=hashlib.sha256(patched[name]).hexdigest(),
            patched_size=len(patched[name]),
        )
        for name in PATCHED_CLASSES
    )
    return PatchReport(
        in_jar=str(in_jar),
        out_jar=str(out_jar),
        beam_version=target.beam_version,
        flink_runner=target.flink_runner,
        bundled_flink=bundled_flink,
        patch_classes_from=str(target.patch_jar),
        entries_total=len(names),
        replaced=replaced,
        added=tuple(additions),
    )


def _check_jar(
    where: str, jar: zipfile.ZipFile, force: bool
) -> tuple[PatchTarget, str | None, list[str], dict[str, bytes]]:
    """Find the patch target a job jar matches, or refuse it with the reason; also its entry names."""
    names = jar.namelist()
    name_set = set(names)
    if not any(name.startswith("org/apache/beam/") for name in names):
        raise InputError(where, None, "not a Beam jar: it holds no org/apache/beam/ classes")
    if FLINK_RUNNER_CLASS not in name_set:
        raise InputError(where, None, f"a Beam jar without the classic Flink runner ({FLINK_RUNNER_CLASS})")
    beam_version, flink_runner = _release(where, jar, name_set)
    bundled_flink = _pom_version(jar, _FLINK_CORE_POM) if _FLINK_CORE_POM in name_set else None
    label = f"Beam {beam_version} with {flink_runner}"
    if not all(name in name_set for name in PATCHED_CLASSES):
        raise InputError(
            where,
            None,
            f"{label} has no FlinkSource (Beam before 2.52): not affected by beam#31313, nothing to patch",
        )
    originals = {name: jar.read(name) for name in PATCHED_CLASSES}
    already_patched = PATCH_MARKER in originals[ENUMERATOR_CLASS]
    if already_patched and not force:
        raise InputError(
            where,
            None,
            f"{label} is already patched by splitaudit (its FlinkSourceSplitEnumerator is the patched one); "
            "pass --force to put this build's patched classes in again",
        )
    if FIXED_CONSTRUCTOR_DESCRIPTOR in originals[ENUMERATOR_CLASS] and not already_patched:
        raise InputError(
            where,
            None,
            f"{label} already has the upstream fix for beam#31313 (FlinkSourceSplitEnumerator takes "
            "splitsInitialized): nothing to patch",
        )
    target = next(
        (t for t in SUPPORTED_TARGETS if (t.beam_version, t.flink_runner) == (beam_version, flink_runner)),
        None,
    )
    if target is None:
        supported = ", ".join(t.label for t in SUPPORTED_TARGETS)
        raise InputError(
            where, None, f"{label}: no patch variant is built for this release (supported: {supported}); {REMEDY}"
        )
    for name, expected in target.original_sha256.items():
        actual = hashlib.sha256(originals[name]).hexdigest()
        if actual != expected and not already_patched:
            raise InputError(
                where,
                None,
                f"{name} is not {label}'s released class (sha256 {actual}, expected {expected}); "
                "refusing to replace a class the patch was not made from",
            )
    return target, bundled_flink, names, originals


def _release(where: str, jar: zipfile.ZipFile, names: set[str]) -> tuple[str, str]:
    """The Beam release and classic Flink runner artifact a jar bundles, from the shade plugin's pom.properties."""
    runners = sorted({m.group(1) for m in map(_RUNNER_POM.fullmatch, names) if m})
    if len(runners) != 1:
        raise InputError(
            where,
            None,
            "cannot tell which Flink runner the jar bundles: expected one META-INF/maven/org.apache.beam/"
            f"beam-runners-flink-<flink>/pom.properties, found {runners or 'none'}",
        )
    flink_runner = runners[0]
    runner_version = _pom_version(jar, _BEAM_POM.format(artifact=flink_runner))
    beam_version = _beam_core_version(jar, names) or runner_version
    if beam_version != runner_version:
        raise InputError(where, None, f"mixed Beam versions: core {beam_version}, {flink_runner} {runner_version}")
    return beam_version, flink_runner


def _beam_core_version(jar: zipfile.ZipFile, names: set[str]) -> str | None:
    """The Beam release beam-sdks-java-core's pom.properties names, when the jar keeps it."""
    core_pom = _BEAM_POM.format(artifact="beam-sdks-java-core")
    return _pom_version(jar, core_pom) if core_pom in names else None


def _pom_version(jar: zipfile.ZipFile, name: str) -> str:
    """The `version` property of a Maven pom.properties entry."""
    for line in jar.read(name).decode("utf-8", "replace").splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() == "version":
            return value.strip()
    raise InputError(jar.filename or "", None, f"{name} has no version property")


def _patched_classes(target: PatchTarget) -> dict[str, bytes]:
    """The patched build's classes for `target`, checked to be the fixed ones."""
    if not target.patch_jar.is_file():
        raise ExternalError(
            f"the patched classes are missing ({target.patch_jar}): in a checkout, run `make setup`; an installed "
            "splitaudit carries them in its wheel, so reinstall it"
        )
    with zipfile.ZipFile(target.patch_jar) as patch:
        missing = sorted(set(PATCHED_CLASSES + ADDED_CLASSES) - set(patch.namelist()))
        if missing:
            raise ExternalError(f"{target.patch_jar} lacks {', '.join(missing)}: in a checkout, run `make setup` again")
        classes = {name: patch.read(name) for name in PATCHED_CLASSES + ADDED_CLASSES}
    if (
        FIXED_CONSTRUCTOR_DESCRIPTOR not in classes[ENUMERATOR_CLASS]
        or DISCOVERY_MARKER not in classes[ENUMERATOR_CLASS]
    ):
        raise ExternalError(f"{target.patch_jar} does not hold the patched FlinkSourceSplitEnumerator")
    return classes
