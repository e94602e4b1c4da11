"""A Beam job's shaded jar made without Maven, entry for entry what maven-shade-plugin 3.6.0 makes of it.

An installed wheel has neither the reference pipeline's poms nor Maven, and its job jars (140 MB) are too large to
ship: they are assembled from the pipeline's own jar and its runtime dependencies by the rules of the pom's stock
shade execution (beam_pipelines/java/reference-pipeline/pom.xml), as the plugin's DefaultShader, ShadeMojo,
ServicesResourceTransformer and ManifestResourceTransformer (3.6.0) apply them:

- the project's jar first, then the dependencies in Maven's resolution order (what `mvn dependency:list
  -DincludeScope=runtime` lists: the dependency tree in pre-order); each jar's entries in its central directory's
  order;
- the first copy of a class or resource wins; the jars' directory entries are skipped, and before each file its
  parent directories are written, parents first, each once;
- the pom's filters drop `SHADE_FILTERS`, the plugin itself META-INF/INDEX.LIST and module-info.class;
- META-INF/MANIFEST.MF is the project jar's with Main-Class set, written first;
- every jar's META-INF/services files are merged, each distinct line once in the order first read, and written
  after the jars' entries.

Kept entries are copied byte for byte (`ZipWriter.copy`), so each has the content and CRC-32 Maven's has: Maven
inflates and deflates them again (and deflates an entry its jar stored, but for a nested jar), which takes ten
times as long. The directories, the manifest and the services files are written anew; Maven writes the services
files in its HashMap's order, this module in name order.
"""

from __future__ import annotations

import fnmatch
import importlib.resources
import itertools
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from splitaudit.errors import InputError
from splitaudit.home import PIPELINE_MAIN_CLASS, built_pipeline_classes, built_pipeline_jars, lineage_kit_jar
from splitaudit.patch.jar import patch_jar
from splitaudit.patch.rawzip import ZipArchive, ZipWriter, written_atomically

# The pom's <filters> for every artifact (SimpleFilter: `*` matches within one path segment, case-sensitive).
SHADE_FILTERS = (
    "META-INF/*.SF",
    "META-INF/*.DSA",
    "META-INF/*.RSA",
    "module-info.class",
    "META-INF/versions/*/module-info.class",
)
_FILTER_SEGMENTS = tuple(tuple(pattern.split("/")) for pattern in SHADE_FILTERS)
# DefaultShader.isExcludedEntry: never copied, whatever the pom says.
_ALWAYS_EXCLUDED = frozenset({"META-INF/INDEX.LIST", "module-info.class"})
_MANIFEST = "META-INF/MANIFEST.MF"
# ServicesResourceTransformer.canTransformResource: a prefix, without the slash.
_SERVICES = "META-INF/services"
# The line separators of java.util.Scanner.nextLine, which reads the services files.
_SCANNER_LINE_BREAK = re.compile("\r\n|[\n\r\u2028\u2029\u0085]")
_MANIFEST_LINE_BREAK = re.compile(b"\r\n|\n|\r")


def pipeline_classes_jar() -> Path:
    """The reference pipeline's own jar for BEAM_VERSION as package data of `splitaudit_lab.stack` (`jobs/`, filled
    from the reactor's build by `splitaudit setup` in a checkout): an installed lab assembles the demo's job jars
    from it, the lineage kit and the pipeline's dependencies from Maven Central."""
    return Path(str(importlib.resources.files("splitaudit_lab.stack"))) / "jobs" / built_pipeline_classes().name


def write_pipeline_jars(dependencies: Sequence[Path], out_dir: Path) -> dict[str, Path]:
    """Write the reference pipeline's stock and patched job jars (BEAM_VERSION) into `out_dir`, replacing earlier ones.

    `dependencies` are the pipeline's runtime dependencies from Maven Central in Maven's resolution order. The
    package's jars complete them as the pom's stock shade execution has it: the pipeline's own jar first, then the
    lineage kit, the first dependency Maven resolves after the patch artifact, which only the patched execution
    takes. The patched jar is the stock one through `patch-jar`, which gives the same entries as that execution.
    """
    jars = {variant: out_dir / jar.name for variant, jar in built_pipeline_jars().items()}
    write_job_jar([lineage_kit_jar(), *dependencies], pipeline_classes_jar(), PIPELINE_MAIN_CLASS, jars["stock"])
    patch_jar(jars["stock"], jars["patched"], force=True)
    return jars


def write_job_jar(dependencies: Sequence[Path], project_jar: Path, main_class: str, out: Path) -> int:
    """Write `out`, the shaded jar of `project_jar` and its runtime `dependencies` (in Maven's resolution order) with
    `main_class` in its manifest, and return how many entries it holds.

    The jars are read one at a time; `out` is written through a temporary file and never left half written.
    """
    project = ZipArchive.read(project_jar)
    manifest = next((entry for entry in project.layout.entries if entry.name.upper() == _MANIFEST), None)
    if manifest is None:
        raise InputError(str(project_jar), None, f"the project jar has no {_MANIFEST}")
    with written_atomically(out) as target:
        writer = ZipWriter(target)
        writer.add(_MANIFEST, _with_main_class(str(project_jar), project.content(manifest), main_class))
        # One dependency in memory at a time: read as the copying reaches it.
        services = _copy_entries(writer, itertools.chain([project], map(ZipArchive.read, dependencies)))
        for name, lines in sorted(services.items()):
            writer.add(name, "".join(f"{line}\n" for line in lines).encode())
        writer.finish()
    return writer.entries


def _copy_entries(writer: ZipWriter, archives: Iterable[ZipArchive]) -> dict[str, list[str]]:
    """Copy every jar's entries that the shading keeps (DefaultShader.shadeJarEntry); return the merged lines of the
    services files, by name."""
    # DefaultShader's `resources`: the resources and directories (without their slash) written so far, and each
    # jar's manifest (ahead of everything else, for the manifest written first).
    resources: set[str] = set()
    classes: set[str] = set()  # a second entry of a written class's name fails in JarOutputStream, and is dropped
    services: dict[str, dict[str, None]] = {}
    for archive in archives:
        manifest_seen = False
        for entry in archive.layout.entries:
            name = entry.name
            if not manifest_seen and name.upper() == _MANIFEST:
                manifest_seen = True
                resources.add(name)
            if name.endswith("/") or name in _ALWAYS_EXCLUDED or _filtered(name):
                continue
            parent, slash, _ = name.rpartition("/")
            if slash and parent not in resources:
                _add_directory(writer, resources, parent)
            if name.endswith(".class"):
                if name not in classes:
                    writer.copy(archive, entry)
                    classes.add(name)
            elif name.startswith(_SERVICES):
                services.setdefault(name, {}).update(dict.fromkeys(_service_lines(archive.content(entry))))
            elif name not in resources:
                writer.copy(archive, entry)
                resources.add(name)
    return {name: list(lines) for name, lines in services.items()}


def _filtered(name: str) -> bool:
    """Whether one of the pom's filters drops the entry `name`."""
    segments = name.split("/")
    return any(
        len(segments) == len(pattern) and all(map(fnmatch.fnmatchcase, segments, pattern))
        for pattern in _FILTER_SEGMENTS
    )


def _add_directory(writer: ZipWriter, resources: set[str], name: str) -> None:
    """Write the directory entry `name/`, after its parents that are not written yet (DefaultShader.addDirectory)."""
    parent = name.rpartition("/")[0]
    if parent and parent not in resources:
        _add_directory(writer, resources, parent)
    writer.add(f"{name}/", b"")
    resources.add(name)


def _service_lines(content: bytes) -> list[str]:
    """A services file's lines as java.util.Scanner reads them: none after a final line break, none in an empty
    file."""
    lines = _SCANNER_LINE_BREAK.split(content.decode("utf-8", errors="replace"))
    return lines[:-1] if lines[-1] == "" else lines


def _with_main_class(where: str, manifest: bytes, main_class: str) -> bytes:
    """The manifest `manifest` with Main-Class set, as java.util.jar.Manifest (JDK 17) reads and writes it.

    Main attributes keep their order (a LinkedHashMap; a name set twice keeps its first place and spelling, and
    takes the last value), the *-Version header goes first and unfolded, every other line is folded at 72 bytes.
    A manifest with per-entry sections is refused: Manifest writes those in a HashMap's order.
    """
    headers: list[bytes] = []
    lines = iter(_MANIFEST_LINE_BREAK.split(manifest))
    for line in lines:
        if not line:
            break
        if line.startswith(b" ") and headers:
            headers[-1] += line[1:]
        else:
            headers.append(line)
    if any(lines):
        raise InputError(where, None, f"{_MANIFEST} has per-entry sections, which are not supported")
    attributes: dict[str, tuple[str, str]] = {}  # by lower-case name: (name as first spelt, value)
    for header in headers:
        name, separator, value = header.decode("utf-8", errors="replace").partition(": ")
        if not separator:
            raise InputError(where, None, f"{_MANIFEST}: invalid header {header!r}")
        attributes[name.lower()] = (attributes.get(name.lower(), (name, ""))[0], value)
    attributes["main-class"] = (attributes.get("main-class", ("Main-Class", ""))[0], main_class)
    version_name = "Manifest-Version" if "manifest-version" in attributes else "Signature-Version"
    written = bytearray()
    # Attributes.writeMain: without a *-Version header it writes no attribute at all.
    if version_name.lower() in attributes:
        written += f"{version_name}: {attributes[version_name.lower()][1]}\r\n".encode()
        for lower, (name, value) in attributes.items():
            if lower != version_name.lower():
                written += _folded(f"{name}: {value}".encode())
    return bytes(written + b"\r\n")


def _folded(line: bytes) -> bytes:
    """One manifest line as Manifest.println72 writes it: 72 bytes, then lines of a space and 71 bytes."""
    chunks = [line[:72], *(line[start : start + 71] for start in range(72, len(line), 71))]
    return b"\r\n ".join(chunks) + b"\r\n"
