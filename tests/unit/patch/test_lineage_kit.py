"""`lineage-kit` writes the kit's jar from the package into a user's folder, never over a file, and prints the
lines that add it to a Maven or a Gradle build."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from splitaudit.cli import main
from splitaudit.patch import lineage_kit

JAR = "beam-kafka-lineage-0.1.0.jar"


@pytest.fixture
def kit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """A stand-in for the package's jar (the real one is a build's output), with its content."""
    content = b"PK\x05\x06" + bytes(18)  # an empty zip
    (tmp_path / "package").mkdir()
    (tmp_path / "package" / JAR).write_bytes(content)
    monkeypatch.setattr(lineage_kit, "lineage_kit_jar", lambda: tmp_path / "package" / JAR)
    return content


def test_writes_the_jar_and_the_lines_for_maven_and_gradle(kit: bytes, tmp_path: Path) -> None:
    out = tmp_path / "my build" / "libs"
    result = CliRunner().invoke(main, ["--json", "lineage-kit", "--out", str(out)])
    assert result.exit_code == 0, result.output
    jar = out / JAR
    assert jar.read_bytes() == kit
    assert json.loads(result.output) == {
        "jar": str(jar),
        "coordinates": "dev.splitaudit:beam-kafka-lineage:0.1.0",
        "size": 22,
        "sha256": hashlib.sha256(kit).hexdigest(),
        "maven_install": (
            "mvn org.apache.maven.plugins:maven-install-plugin:3.1.3:install-file "
            f"'-Dfile={jar}' -DgroupId=dev.splitaudit -DartifactId=beam-kafka-lineage -Dversion=0.1.0 "
            "-Dpackaging=jar -DgeneratePom=true"
        ),
        "gradle_dependency": f'implementation(files("{jar}"))',
    }


def test_the_console_shows_the_same_lines(kit: bytes, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["lineage-kit", "--out", str(tmp_path / "libs")], terminal_width=400)
    assert result.exit_code == 0, result.output
    jar, digest = tmp_path / "libs" / JAR, hashlib.sha256(kit).hexdigest()
    assert result.output.splitlines() == [
        f"wrote {jar} (dev.splitaudit:beam-kafka-lineage:0.1.0, 22 bytes, sha256 {digest[:12]})",
        "Maven: install it, then depend on dev.splitaudit:beam-kafka-lineage:0.1.0:",
        f"  mvn org.apache.maven.plugins:maven-install-plugin:3.1.3:install-file -Dfile={jar} -DgroupId=dev.splitaudit "
        "-DartifactId=beam-kafka-lineage -Dversion=0.1.0 -Dpackaging=jar -DgeneratePom=true",
        "Gradle:",
        f'  implementation(files("{jar}"))',
    ]


def test_an_existing_jar_is_never_overwritten(kit: bytes, tmp_path: Path) -> None:
    (tmp_path / "libs").mkdir()
    (tmp_path / "libs" / JAR).write_bytes(b"the user's own")
    result = CliRunner().invoke(main, ["--json", "lineage-kit", "--out", str(tmp_path / "libs")])
    assert result.exit_code == 2
    assert json.loads(result.output)["error"]["message"] == (
        f"{tmp_path / 'libs' / JAR} already exists; lineage-kit never overwrites a file"
    )
    assert (tmp_path / "libs" / JAR).read_bytes() == b"the user's own"


def test_a_package_without_the_jar_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lineage_kit, "lineage_kit_jar", lambda: tmp_path / "package" / JAR)
    result = CliRunner().invoke(main, ["--json", "lineage-kit", "--out", str(tmp_path / "libs")])
    assert result.exit_code == 3
    assert json.loads(result.output)["error"]["message"] == (
        f"the lineage kit's jar is missing ({tmp_path / 'package' / JAR}): in a checkout, run `make setup`; an "
        "installed splitaudit carries it in its wheel, so reinstall it"
    )
    assert not (tmp_path / "libs").exists()
