"""Results of `splitaudit patch-jar` and `splitaudit lineage-kit`, rendered by an Output."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ReplacedEntry:
    """One jar entry patch-jar replaced: the class before (Beam's) and after (the patched build's)."""

    name: str
    original_sha256: str
    original_size: int
    patched_sha256: str
    patched_size: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "original_sha256": self.original_sha256,
            "original_size": self.original_size,
            "patched_sha256": self.patched_sha256,
            "patched_size": self.patched_size,
        }


@dataclass(frozen=True)
class PatchReport:
    """What patch-jar found in the input jar and what it wrote."""

    in_jar: str
    out_jar: str
    beam_version: str
    flink_runner: str  # the runner artifact, e.g. beam-runners-flink-1.19
    bundled_flink: str | None  # flink-core's version if the jar bundles Flink, else None
    patch_classes_from: str
    entries_total: int
    replaced: tuple[ReplacedEntry, ...]
    # Classes the patch adds to the jar (partition discovery on restore), by entry name.
    added: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "in_jar": self.in_jar,
            "out_jar": self.out_jar,
            "beam_version": self.beam_version,
            "flink_runner": self.flink_runner,
            "bundled_flink": self.bundled_flink,
            "patch_classes_from": self.patch_classes_from,
            "entries_total": self.entries_total,
            "replaced": [entry.to_json() for entry in self.replaced],
            "added": list(self.added),
            "entries_kept": self.entries_total - len(self.replaced),
        }


@dataclass(frozen=True)
class LineageKitReport:
    """The lineage kit's jar `lineage-kit` wrote, and the lines that add it to a user's Maven or Gradle build."""

    jar: str
    coordinates: str  # groupId:artifactId:version
    size: int
    sha256: str
    maven_install: str  # installs the jar into the local Maven repository, with a generated pom
    gradle_dependency: str

    def to_json(self) -> dict[str, Any]:
        return {
            "jar": self.jar,
            "coordinates": self.coordinates,
            "size": self.size,
            "sha256": self.sha256,
            "maven_install": self.maven_install,
            "gradle_dependency": self.gradle_dependency,
        }
