"""Downloads of locked files: streamed to a `.part` file, never past the lock's size, hash-checked, then renamed;
reused when already there; and the summary setup shows before it downloads."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from splitaudit.errors import ExternalError
from splitaudit_lab.stack import downloads
from splitaudit_lab.stack.lock import LockedFile
from tests.unit.stack.conftest import FileServer

CONTENT = b"PK\x03\x04 a jar file " * 125_000  # 2,000,000 bytes: two chunks


@pytest.fixture
def session() -> Iterator[requests.Session]:
    with requests.Session() as opened:
        yield opened


def _locked_url(server: FileServer, name: str, content: bytes = CONTENT) -> LockedFile:
    (server.root / name).write_bytes(content)
    return LockedFile(len(content), hashlib.sha256(content).hexdigest(), url=f"{server.url}/{name}")


def test_a_file_is_downloaded_checked_and_then_reused_without_the_network(
    file_server: FileServer, tmp_path: Path, session: requests.Session
) -> None:
    folder = tmp_path / "downloads"
    locked = _locked_url(file_server, "flink-dist.tar.gz")

    assert downloads.fetch(locked, folder, session) == len(CONTENT)
    assert (folder / "flink-dist.tar.gz").read_bytes() == CONTENT
    assert [p.name for p in folder.iterdir()] == ["flink-dist.tar.gz"]

    (file_server.root / "flink-dist.tar.gz").unlink()  # the server has nothing any more
    assert downloads.fetch(locked, folder, session) == 0


def test_a_maven_file_comes_from_the_configured_repository_into_its_repository_path(
    file_server: FileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session: requests.Session
) -> None:
    path = "org/apache/kafka/kafka-clients/3.9.2/kafka-clients-3.9.2.jar"
    (file_server.root / path).parent.mkdir(parents=True)
    (file_server.root / path).write_bytes(CONTENT)
    locked = LockedFile(
        len(CONTENT), hashlib.sha256(CONTENT).hexdigest(), maven="org.apache.kafka:kafka-clients:3.9.2", path=path
    )
    assert downloads.source_url(locked) == f"https://repo.maven.apache.org/maven2/{path}"
    monkeypatch.setenv("SPLITAUDIT_MAVEN_REPOSITORY", f"{file_server.url}/")

    assert downloads.fetch(locked, tmp_path, session) == len(CONTENT)
    assert (tmp_path / "maven" / path).read_bytes() == CONTENT


def test_a_file_longer_than_the_lock_says_is_refused_and_nothing_is_left(
    file_server: FileServer, tmp_path: Path, session: requests.Session
) -> None:
    locked = _locked_url(file_server, "big.jar")
    shorter = LockedFile(locked.size - 1, locked.sha256, url=locked.url)

    with pytest.raises(ExternalError, match=r"big\.jar refused: it is longer than the 1999999 bytes the stack lock"):
        downloads.fetch(shorter, tmp_path / "downloads", session)
    assert list((tmp_path / "downloads").iterdir()) == []


def test_a_file_with_another_hash_is_refused_and_its_part_removed(
    file_server: FileServer, tmp_path: Path, session: requests.Session
) -> None:
    locked = _locked_url(file_server, "tampered.jar")
    other = LockedFile(locked.size, "0" * 64, url=locked.url)

    with pytest.raises(ExternalError) as refused:
        downloads.fetch(other, tmp_path / "downloads", session)
    assert str(refused.value) == (
        f"download of {locked.url} refused: its SHA-256 is {locked.sha256}, the stack lock says {'0' * 64}"
    )
    assert list((tmp_path / "downloads").iterdir()) == []


def test_a_file_present_with_another_hash_is_downloaded_again(
    file_server: FileServer, tmp_path: Path, session: requests.Session
) -> None:
    locked = _locked_url(file_server, "flink.tar.gz")
    (tmp_path / "flink.tar.gz").write_bytes(bytes(len(CONTENT)))  # the right size, not the right bytes

    assert downloads.fetch(locked, tmp_path, session) == len(CONTENT)
    assert (tmp_path / "flink.tar.gz").read_bytes() == CONTENT


def test_a_missing_file_names_the_url_and_the_status(
    file_server: FileServer, tmp_path: Path, session: requests.Session
) -> None:
    absent = LockedFile(10, "0" * 64, url=f"{file_server.url}/absent.jar")

    with pytest.raises(ExternalError, match=rf"^download of {absent.url} failed: HTTP 404 File not found$"):
        downloads.fetch(absent, tmp_path / "downloads", session)
    assert list((tmp_path / "downloads").iterdir()) == []


def test_an_unreachable_server_is_an_error_naming_the_url(tmp_path: Path, session: requests.Session) -> None:
    unreachable = LockedFile(10, "0" * 64, url="http://127.0.0.1:9/nothing.jar")  # the discard port: refused

    with pytest.raises(ExternalError, match=r"^download of http://127\.0\.0\.1:9/nothing\.jar failed: "):
        downloads.fetch(unreachable, tmp_path, session)


def _maven(name: str, size: int) -> LockedFile:
    return LockedFile(size, "0" * 64, maven=f"g:{name}:1", path=f"g/{name}/1/{name}-1.jar")


def test_the_plan_counts_what_is_missing_once_and_says_how_large(tmp_path: Path) -> None:
    shared, kafka, s3proxy = _maven("slf4j-api", 3 * 2**20), _maven("kafka", 2**20), _maven("s3proxy", 2**19)
    present = _maven("present", 100)
    (tmp_path / present.download_path).parent.mkdir(parents=True)
    (tmp_path / present.download_path).write_bytes(bytes(100))

    planned = downloads.plan(
        [("kafka-broker", (shared, kafka, present)), ("s3proxy", (shared, s3proxy)), ("done", (present,))], tmp_path
    )

    assert planned == (
        downloads.PlannedDownload("kafka-broker", 2, 4 * 2**20),
        downloads.PlannedDownload("s3proxy", 1, 2**19),
    )
    assert downloads.describe(planned, tmp_path) == [
        f"downloading into {tmp_path}:",
        "kafka-broker: 2 files, 4.0 MiB",
        "s3proxy: 1 file, 0.5 MiB",
        "in all: 3 files, 4.5 MiB",
    ]
    assert downloads.describe((), tmp_path) == []
