"""`splitaudit patch-jar` on the real shaded jars of the Maven build, and its refusals on real jars."""

from __future__ import annotations

import hashlib
import json
import subprocess
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from splitaudit.cli import main
from splitaudit.patch.jar import (
    ADDED_CLASSES,
    DISCOVERY_MARKER,
    PATCH_MARKER,
    PATCHED_CLASSES,
    REMEDY,
    SUPPORTED_TARGETS,
    PatchTarget,
)
from splitaudit.patch.rawzip import rewrite_entries

ENUMERATOR = "org.apache.beam.runners.flink.translation.wrappers.streaming.io.source.FlinkSourceSplitEnumerator"


def _patch(*args: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(main, ["--json", "patch-jar", *args])
    return result.exit_code, json.loads(result.output)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _local_records(jar: Path) -> dict[str, bytes]:
    """Each entry's raw local record (header, compressed data, descriptor), sliced by header offsets."""
    data = jar.read_bytes()
    with zipfile.ZipFile(jar) as archive:
        infos = archive.infolist()
        central_offset = archive.start_dir
    offsets = sorted(info.header_offset for info in infos)
    ends = dict(zip(offsets, [*offsets[1:], central_offset], strict=True))
    return {info.filename: data[info.header_offset : ends[info.header_offset]] for info in infos}


@pytest.fixture(scope="module")
def patched_by_tool(stock_jar: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    out = tmp_path_factory.mktemp("patch") / "job-patched.jar"
    code, report = _patch(str(stock_jar), "--out", str(out))
    assert code == 0, report
    return out, report


def test_replaces_exactly_four_classes_and_adds_discoverys_three(
    stock_jar: Path, patched_jar: Path, patched_by_tool: tuple[Path, dict[str, object]]
) -> None:
    out, report = patched_by_tool
    assert report["beam_version"] == "2.62.0"
    assert report["flink_runner"] == "beam-runners-flink-1.19"
    assert report["bundled_flink"] is None
    assert report["entries_total"] == 62576
    assert report["entries_kept"] == 62572
    assert report["added"] == list(ADDED_CLASSES)
    replaced = report["replaced"]
    assert isinstance(replaced, list)
    assert [entry["name"] for entry in replaced] == list(PATCHED_CLASSES)
    target = next(t for t in SUPPORTED_TARGETS if t.beam_version == "2.62.0")
    assert [entry["original_sha256"] for entry in replaced] == list(target.original_sha256.values())
    with zipfile.ZipFile(out) as tool, zipfile.ZipFile(patched_jar) as maven, zipfile.ZipFile(stock_jar) as stock:
        assert tool.testzip() is None
        for name in PATCHED_CLASSES:
            assert tool.read(name) == maven.read(name)
            assert tool.read(name) != stock.read(name)
        # Same contents as the jar Maven shaded with the patch, entry for entry (Maven's order differs).
        assert {i.filename: i.CRC for i in tool.infolist()} == {i.filename: i.CRC for i in maven.infolist()}
        assert [i.filename for i in tool.infolist()] == [i.filename for i in stock.infolist()] + list(ADDED_CLASSES)
        for name in ADDED_CLASSES:
            assert tool.read(name) == maven.read(name)
        assert DISCOVERY_MARKER in tool.read(PATCHED_CLASSES[1])


def test_every_other_entry_is_byte_identical(stock_jar: Path, patched_by_tool: tuple[Path, dict[str, object]]) -> None:
    out, _ = patched_by_tool
    before, after = _local_records(stock_jar), _local_records(out)
    assert list(after) == list(before) + list(ADDED_CLASSES)
    changed = [name for name in before if before[name] != after[name]]
    assert changed == list(PATCHED_CLASSES)
    with zipfile.ZipFile(stock_jar) as stock, zipfile.ZipFile(out) as tool:
        for old, new in zip(stock.infolist(), tool.infolist()[: -len(ADDED_CLASSES)], strict=True):
            assert (old.compress_type, old.date_time, old.extra, old.external_attr) == (
                new.compress_type,
                new.date_time,
                new.extra,
                new.external_attr,
            )


def test_the_jvm_sees_the_fixed_enumerator(patched_by_tool: tuple[Path, dict[str, object]]) -> None:
    out, _ = patched_by_tool
    javap = subprocess.run(
        ["javap", "-p", "-cp", str(out), ENUMERATOR], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    constructors = [line.strip() for line in javap.splitlines() if f"{ENUMERATOR}(" in line]
    assert len(constructors) == 2
    assert constructors[1].endswith("org.apache.beam.sdk.options.PipelineOptions, int, boolean);")


def test_input_is_never_modified_and_output_not_overwritten_without_force(stock_jar: Path, tmp_path: Path) -> None:
    digest, mtime = _sha256(stock_jar), stock_jar.stat().st_mtime_ns
    out = tmp_path / "out.jar"
    out.write_bytes(b"precious")
    code, document = _patch(str(stock_jar), "--out", str(out))
    assert code == 2
    assert document["error"] == {
        "type": "UsageError",
        "message": f"{out} already exists; pass --force to overwrite it",
    }
    assert out.read_bytes() == b"precious"
    code, _ = _patch(str(stock_jar), "--out", str(out), "--force")
    assert code == 0
    assert zipfile.ZipFile(out).testzip() is None
    code, document = _patch(str(stock_jar), "--out", str(stock_jar), "--force")
    assert code == 2
    assert "is the input jar itself" in str(document["error"])
    assert (_sha256(stock_jar), stock_jar.stat().st_mtime_ns) == (digest, mtime)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jar"]  # no temporary file left behind


def _refusal(jar: Path, tmp_path: Path) -> str:
    out = tmp_path / "refused.jar"
    code, document = _patch(str(jar), "--out", str(out))
    assert code == 2, document
    assert not out.exists()
    error = document["error"]
    assert isinstance(error, dict)
    assert error["type"] == "InputError"
    assert error["path"] == str(jar)
    return str(error["message"])


def test_refuses_a_file_that_is_not_a_jar(tmp_path: Path) -> None:
    readme = Path(__file__).resolve().parents[3] / "README.md"
    assert _refusal(readme, tmp_path) == f"{readme}: not a jar (zip) file: File is not a zip file"


def test_refuses_a_jar_without_beam(maven_artifact: Path, tmp_path: Path) -> None:
    kafka = maven_artifact / "org/apache/kafka/kafka-clients/3.9.1/kafka-clients-3.9.1.jar"
    assert _refusal(kafka, tmp_path) == f"{kafka}: not a Beam jar: it holds no org/apache/beam/ classes"


def test_refuses_a_beam_jar_without_the_classic_flink_runner(maven_artifact: Path, tmp_path: Path) -> None:
    kafka_io = maven_artifact / "org/apache/beam/beam-sdks-java-io-kafka/2.62.0/beam-sdks-java-io-kafka-2.62.0.jar"
    assert _refusal(kafka_io, tmp_path) == (
        f"{kafka_io}: a Beam jar without the classic Flink runner (org/apache/beam/runners/flink/FlinkRunner.class)"
    )


def test_refuses_a_released_runner_that_has_the_fix(released_runners: Path, tmp_path: Path) -> None:
    fixed = released_runners / "beam-runners-flink-1.19-2.70.0.jar"
    assert _refusal(fixed, tmp_path) == (
        f"{fixed}: Beam 2.70.0 with beam-runners-flink-1.19 already has the upstream fix for beam#31313 "
        "(FlinkSourceSplitEnumerator takes splitsInitialized): nothing to patch"
    )


def test_refuses_a_jar_it_already_patched_unless_forced(patched_jar: Path, tmp_path: Path) -> None:
    assert _refusal(patched_jar, tmp_path) == (
        f"{patched_jar}: Beam 2.62.0 with beam-runners-flink-1.19 is already patched by splitaudit (its "
        "FlinkSourceSplitEnumerator is the patched one); pass --force to put this build's patched classes in again"
    )
    out = tmp_path / "again.jar"
    code, report = _patch(str(patched_jar), "--out", str(out), "--force")
    assert code == 0, report
    with zipfile.ZipFile(out) as again, zipfile.ZipFile(patched_jar) as before:
        assert {i.filename: i.CRC for i in again.infolist()} == {i.filename: i.CRC for i in before.infolist()}


@pytest.mark.parametrize("target", SUPPORTED_TARGETS, ids=lambda t: f"{t.flink_runner}-{t.beam_version}")
def test_patches_every_supported_release_with_its_own_variant(
    target: PatchTarget, released_runners: Path, tmp_path: Path
) -> None:
    """A released runner jar of each supported release (its classes and pom.properties, as a shaded job jar
    keeps them) gets exactly the four replaced and three added classes of the variant built for that release."""
    released = released_runners / f"{target.flink_runner}-{target.beam_version}.jar"
    out = tmp_path / "patched.jar"
    code, report = _patch(str(released), "--out", str(out))
    assert code == 0, report
    assert (report["beam_version"], report["flink_runner"]) == (target.beam_version, target.flink_runner)
    assert report["patch_classes_from"] == str(target.patch_jar)
    with (
        zipfile.ZipFile(out) as result,
        zipfile.ZipFile(target.patch_jar) as variant,
        zipfile.ZipFile(released) as original,
    ):
        for name in PATCHED_CLASSES:
            assert hashlib.sha256(original.read(name)).hexdigest() == target.original_sha256[name]
            assert result.read(name) == variant.read(name)
        for name in ADDED_CLASSES:
            assert result.read(name) == variant.read(name)
        assert PATCH_MARKER in result.read(PATCHED_CLASSES[1])
        assert DISCOVERY_MARKER in result.read(PATCHED_CLASSES[1])
        assert [i.filename for i in result.infolist()] == [i.filename for i in original.infolist()] + list(
            ADDED_CLASSES
        )
    # The result is patched now: a second run refuses it.
    assert "is already patched by splitaudit" in _refusal(out, tmp_path)


def test_refuses_an_affected_release_no_variant_is_built_for(released_runners: Path, tmp_path: Path) -> None:
    # Beam 2.60.0 is affected but cannot be fetched here: a real 2.59.0 runner jar claiming to be 2.60.0.
    released = released_runners / "beam-runners-flink-1.16-2.59.0.jar"
    pom = "META-INF/maven/org.apache.beam/beam-runners-flink-1.16/pom.properties"
    with zipfile.ZipFile(released) as original:
        claimed = original.read(pom).replace(b"version=2.59.0", b"version=2.60.0")
    assert b"version=2.60.0" in claimed
    other = tmp_path / "runner-2.60.0.jar"
    with other.open("wb") as target:
        rewrite_entries(released, target, {pom: claimed})
    assert _refusal(other, tmp_path) == (
        f"{other}: Beam 2.60.0 with beam-runners-flink-1.16: no patch variant is built for this release (supported: "
        "Beam 2.54.0 with beam-runners-flink-1.16, Beam 2.56.0 with beam-runners-flink-1.16, Beam 2.59.0 with "
        f"beam-runners-flink-1.16, Beam 2.62.0 with beam-runners-flink-1.19); {REMEDY}"
    )


def test_refuses_classes_that_are_not_the_released_ones(stock_jar: Path, tmp_path: Path) -> None:
    # A jar whose FlinkSource.class is some other real class of the same jar: not what the patch replaces.
    with zipfile.ZipFile(stock_jar) as stock:
        other_class = stock.read(PATCHED_CLASSES[0].replace("FlinkSource.class", "FlinkSourceSplit.class"))
    tampered = tmp_path / "tampered.jar"
    with tampered.open("wb") as target:
        rewrite_entries(stock_jar, target, {PATCHED_CLASSES[0]: other_class})
    message = _refusal(tampered, tmp_path)
    assert message.startswith(f"{tampered}: {PATCHED_CLASSES[0]} is not Beam 2.62.0 with beam-runners-flink-1.19's")
    assert message.endswith("refusing to replace a class the patch was not made from")


def test_console_output_names_what_was_replaced(stock_jar: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jar"
    result = CliRunner().invoke(main, ["patch-jar", str(stock_jar), "--out", str(out)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Beam 2.62.0 with beam-runners-flink-1.19" in result.output
    assert "replaced 4 of 62576 entries" in result.output
    assert "│ FlinkSource " in result.output
    assert "│ FlinkSourceSplitEnumerator " in result.output
    assert "│ FlinkSourceReaderBase " in result.output
    assert "SplitauditKafkaPartitions" in result.output
    assert "every other entry copied byte for byte" in result.output
