"""Hostile files around a real savepoint: every one is a clean exit 2 naming the file, in bounded time and memory,
and nothing in a file makes splitaudit resolve a name, open a connection or start a JVM.

Each case starts from a copy of a real fixture; only the file named in the test is replaced (by a FIFO, a symlink
to a device, a sparse file) or one `writeUTF` string in `_metadata` is rewritten (tests/savepoint_mutations.py).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest
from click.testing import CliRunner

from splitaudit.cli import main
from splitaudit.errors import InputError
from splitaudit.savepoint import fileio
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint_view import inspect_savepoint, read_keyed_state
from tests.savepoint_mutations import mutated_copy
from tests.unit.conftest import FIXTURES, flink_fixtures

FILES = next(f for f in flink_fixtures("flink") if f.name == "1.19.3-savepoint-native-files-snappy")
MERGED = next(f for f in flink_fixtures("flink-file-merging") if f.name == "2.3.0-checkpoint-file-merging")
# A heap checkpoint whose keyed state is in files (fixtures/keyed/, made by fixtures/generate_keyed.py).
KEYED_FILES = FIXTURES / "keyed" / "1.19.3-heap-checkpoint-files" / "chk-4"


def _inspect(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, ["--json", "inspect", *args])
    return result.exit_code, json.loads(result.output)


def _copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FILES.snapshot, tmp_path / "savepoint"))


def _state_file(snapshot: Path) -> Path:
    """The first state file the reader opens for the savepoint (one that holds source split state)."""
    opened: list[str] = []
    real = SavepointFiles._read

    def recording(self: SavepointFiles, fs: Any, path: str, *rest: Any, **options: Any) -> bytes:
        opened.append(path)
        return real(self, fs, path, *rest, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SavepointFiles, "_read", recording)
        inspect_savepoint(str(snapshot))
    return Path(next(path for path in opened if not path.endswith("/_metadata")))


def test_a_fifo_in_place_of_metadata_is_refused_without_opening_it(tmp_path: Path) -> None:
    snapshot = _copy(tmp_path)
    (snapshot / "_metadata").unlink()
    os.mkfifo(snapshot / "_metadata")  # opening it for reading would block until a writer comes: none does
    code, document = _inspect(str(snapshot))
    assert code == 2
    assert document["error"]["message"] == f"{snapshot}/_metadata: file is a FIFO, not a regular file"


def test_a_fifo_in_place_of_a_state_file_is_refused_naming_it(tmp_path: Path) -> None:
    snapshot = _copy(tmp_path)
    victim = _state_file(snapshot)
    victim.unlink()
    os.mkfifo(victim)
    code, document = _inspect(str(snapshot))
    assert code == 2
    message = document["error"]["message"]
    assert message.startswith(f"{victim}: state file is a FIFO, not a regular file (referenced at byte ")
    assert message.endswith(f" of {snapshot}/_metadata)")


def test_metadata_linked_to_a_device_is_refused(tmp_path: Path) -> None:
    snapshot = _copy(tmp_path)
    (snapshot / "_metadata").unlink()
    (snapshot / "_metadata").symlink_to("/dev/zero")
    code, document = _inspect(str(snapshot))
    assert code == 2
    assert document["error"]["message"] == f"{snapshot}/_metadata: file is a character device, not a regular file"


def test_a_sparse_8_gib_state_file_is_refused_by_its_handle_size(tmp_path: Path) -> None:
    snapshot = _copy(tmp_path)
    victim = _state_file(snapshot)
    declared = victim.stat().st_size
    with victim.open("r+b") as grown:
        grown.truncate(8 << 30)  # sparse: takes no disk, but a whole read would take 8 GiB of memory
    code, document = _inspect(str(snapshot), "--max-file-size", "16G")
    assert code == 2
    assert document["error"]["message"].startswith(
        f"{victim}: state file is {8 << 30} bytes, its state handle says {declared} (referenced at byte "
    )


def test_files_larger_than_the_ceiling_are_refused(tmp_path: Path) -> None:
    snapshot = _copy(tmp_path)
    size = (snapshot / "_metadata").stat().st_size
    code, document = _inspect(str(snapshot), "--max-file-size", str(size - 1))
    assert code == 2
    assert document["error"]["message"] == (
        f"{snapshot}/_metadata: file of {size} bytes is larger than --max-file-size {size - 1}"
    )
    assert _inspect(str(snapshot), "--max-file-size", str(size))[0] == 0


@pytest.mark.parametrize("read", ["inspect", "read_keyed_state"])
def test_the_ceiling_applies_to_keyed_state_read_by_byte_range(read: str) -> None:
    # Keyed state is read a key group at a time, by byte range: the file's size is bounded all the same. The
    # ceiling lies between `_metadata` (and the operator-state file) and the smallest keyed-state file.
    snapshot = KEYED_FILES
    metadata_size = (snapshot / "_metadata").stat().st_size
    keyed_files = {str(p): p.stat().st_size for p in snapshot.iterdir() if p.stat().st_size > metadata_size}
    ceiling = min(keyed_files.values()) - 1
    if read == "inspect":  # inspect reads the keyed-state headers, looking for Beam's splittable-DoFn state
        code, document = _inspect(str(snapshot), "--max-file-size", str(ceiling))
        assert code == 2
        error = document["error"]
        path, message = error["path"], error["message"]
    else:
        with pytest.raises(InputError) as raised:
            list(read_keyed_state(str(snapshot), max_file_size=ceiling))
        assert raised.value.exit_code == 2
        path, message = raised.value.path, str(raised.value)
    assert path in keyed_files
    assert message.startswith(
        f"{path}: state file of {keyed_files[path]} bytes is larger than --max-file-size {ceiling} (referenced at "
    )
    assert message.endswith(f" of {snapshot}/_metadata)")
    assert _inspect(str(snapshot), "--max-file-size", str(max(keyed_files.values())))[0] == 0


def test_metadata_that_is_a_directory_is_called_a_directory(tmp_path: Path) -> None:
    snapshot = _copy(tmp_path)
    (snapshot / "_metadata").unlink()
    (snapshot / "_metadata").mkdir()
    code, document = _inspect(str(snapshot))
    assert code == 2
    assert document["error"]["message"] == f"{snapshot}/_metadata: file is a directory, not a regular file"


def test_a_missing_directory_and_a_path_with_a_newline_keep_to_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no\nsuch"
    result = CliRunner().invoke(main, ["inspect", str(missing)])
    assert result.exit_code == 2
    assert result.output == f"error: {tmp_path}/no\\nsuch: no such file or directory\n"


@pytest.mark.parametrize("scheme", ["s3://bucket", "hdfs://namenode:8020", "gs://bucket", "http://127.0.0.1:9"])
def test_a_uri_in_a_state_handle_is_refused_before_anything_resolves_it(
    scheme: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file-merging checkpoint names its segment files by absolute file: URI (outside the fixture folder):
    # every such path becomes a URI of the same length on another filesystem.
    originals = _file_uris(MERGED.snapshot / "_metadata")
    rewritten = {uri: scheme + "/" + uri[len(scheme) + 1 :] for uri in originals}
    snapshot = mutated_copy(MERGED.snapshot, tmp_path / "chk", rewritten)

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"splitaudit tried to reach the network or a filesystem: {args}")

    resolve = fileio.filesystem_of

    def local_only(location: str) -> tuple[pafs.FileSystem | None, str]:
        if "://" in location:
            forbidden(location)
        return resolve(location)

    monkeypatch.setattr(socket, "getaddrinfo", forbidden)
    monkeypatch.setattr(socket.socket, "connect", forbidden)
    monkeypatch.setattr(fileio, "filesystem_of", local_only)
    code, document = _inspect(str(snapshot))
    assert code == 2, document
    assert document["error"]["path"] == f"{snapshot}/_metadata"
    assert isinstance(document["error"]["offset"], int)
    message = document["error"]["message"]
    assert f"state file '{scheme}/" in message
    assert message.endswith("lies outside the savepoint directory; pass --allow-external-state to read it")


def _file_uris(metadata: Path) -> set[str]:
    """Every `writeUTF` string of a real `_metadata` that is an absolute `file:` path."""
    data = metadata.read_bytes()
    found = set()
    start = data.find(b"file:/")
    while start != -1:
        length = int.from_bytes(data[start - 2 : start], "big")  # writeUTF's length prefix
        found.add(data[start : start + length].decode())
        start = data.find(b"file:/", start + 1)
    return found
