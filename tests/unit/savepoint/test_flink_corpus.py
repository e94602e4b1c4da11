"""Flink's own migration ITCase savepoints and checkpoints (`flink-tests-<v>-tests.jar`, `flink_test_corpus()`),
extracted to a temp dir at test time: every `_metadata` of the jar is enumerated here, so a new one is counted."""

from __future__ import annotations

import zipfile
from collections import Counter
from pathlib import Path

import pytest

from splitaudit.home import flink_test_corpus
from splitaudit.savepoint.metadata import read_metadata

pytestmark = pytest.mark.needs_build  # the jars `make setup` downloads (stack component flink-test-corpus)

VERSIONS = ("1.19.1", "1.20.1", "2.0.0")


def _extract(version: str, target: Path) -> list[Path]:
    """Every directory of the jar holding a `_metadata`, extracted under `target` (never into the repo)."""
    jar = flink_test_corpus() / f"flink-tests-{version}-tests.jar"
    with zipfile.ZipFile(jar) as archive:
        names = archive.namelist()
        tops = {name.rsplit("/", 1)[0] for name in names if name.endswith("/_metadata")}
        archive.extractall(target, [n for n in names if n.rsplit("/", 1)[0] in tops or n.split("/")[0] in tops])
    return sorted(target / top for top in tops)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_metadata_file_reads(version: str, tmp_path: Path) -> None:
    """Every `_metadata` of the jar parses, version 2 (Flink 1.8-1.10, `MetadataV2Serializer`) included."""
    versions: Counter[int] = Counter()
    for directory in _extract(version, tmp_path):
        metadata_path = directory / "_metadata"
        metadata = read_metadata(metadata_path.read_bytes(), str(metadata_path))
        versions[metadata.version] += 1
        if metadata.version == 2:
            assert metadata.properties is None
            assert all(s.input_channel_handles == 0 for op in metadata.operators for s in op.subtask_states)
    # Version 2: the 1.8, 1.9 and 1.10 savepoints of the four ITCases (heap and RocksDB for the Java two, the
    # jobmanager backend for the Scala two): 18; the 1.x jars add operatorstate/{complexKeyed,nonKeyed}-flink1.{8,9,10}.
    assert versions[2] == (18 if version == "2.0.0" else 24)
