"""Confinement: no path from a file may lead the reader out of the savepoint directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from splitaudit.errors import InputError
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint_view import inspect_savepoint
from tests.unit.conftest import fixture

FILE_BACKED = "1.20.3-savepoint-native-files-snappy"


def _copy(tmp_path: Path, name: str = FILE_BACKED) -> Path:
    target = tmp_path / "sp"
    shutil.copytree(fixture(name).snapshot, target)
    return target


def _state_files(snapshot: Path) -> list[Path]:
    return sorted(p for p in snapshot.iterdir() if p.name != "_metadata")


def test_relative_handle_pointing_outside_is_refused(tmp_path: Path) -> None:
    snapshot = _copy(tmp_path)
    (tmp_path / "secret").write_bytes(b"outside")
    data = (snapshot / "_metadata").read_bytes()
    victim = _state_files(snapshot)[0].name.encode()
    escape = b"../" * 10 + b"secret"  # as long as a UUID file name, so the UTF length prefix stays valid
    assert len(escape) == len(victim)
    at = data.index(victim) - 3  # the tag byte and the u16 length come first
    (snapshot / "_metadata").write_bytes(data.replace(victim, escape))
    with pytest.raises(InputError) as error:
        inspect_savepoint(str(snapshot))
    assert error.value.path == str(snapshot / "_metadata")
    assert error.value.offset == at
    assert "'../../../../../../../../../../secret' points outside the savepoint dir" in error.value.message


def test_dotdot_relative_path_is_refused(tmp_path: Path) -> None:
    files = SavepointFiles(str(_copy(tmp_path)))
    (tmp_path / "x").write_bytes(b"x")
    with pytest.raises(InputError) as error:
        files.read_relative("../x", 1, "m", 7)
    assert (error.value.path, error.value.offset) == ("m", 7)


def test_symlink_out_of_the_directory_is_refused(tmp_path: Path) -> None:
    snapshot = _copy(tmp_path)
    victim = _state_files(snapshot)[0]
    (tmp_path / "elsewhere").write_bytes(victim.read_bytes())
    victim.unlink()
    victim.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InputError) as error:
        inspect_savepoint(str(snapshot))
    assert "outside the savepoint dir" in error.value.message


def test_absolute_paths_need_allow_external_state(tmp_path: Path) -> None:
    snapshot = _copy(tmp_path)
    outside = tmp_path / "outside-state"
    outside.write_bytes(b"abc")
    with pytest.raises(InputError) as error:
        SavepointFiles(str(snapshot)).read_absolute(f"file:{outside}", (0, 3), "m", 42)
    assert error.value.offset == 42
    assert "--allow-external-state" in error.value.message
    allowed = SavepointFiles(str(snapshot), allow_external_state=True)
    assert allowed.read_absolute(f"file:{outside}", (0, 3), "m", 42) == (str(outside), b"abc")
    inside = _state_files(snapshot)[0]
    size = inside.stat().st_size
    assert SavepointFiles(str(snapshot)).read_absolute(f"file:{inside}", (0, size), "m", 0)[1] == inside.read_bytes()


def test_missing_state_file_names_it(tmp_path: Path) -> None:
    snapshot = _copy(tmp_path)
    victim = _state_files(snapshot)[0]
    victim.unlink()
    with pytest.raises(InputError) as error:
        inspect_savepoint(str(snapshot))
    assert error.value.path == str(victim)
    assert "cannot read state file" in error.value.message


def test_not_a_savepoint(tmp_path: Path) -> None:
    with pytest.raises(InputError) as error:
        SavepointFiles(str(tmp_path / "nothing"))
    assert "no such file" in error.value.message
    (tmp_path / "other").write_bytes(b"")
    with pytest.raises(InputError):
        SavepointFiles(str(tmp_path / "other"))


def test_file_uri_reads_like_a_local_path() -> None:
    case = fixture(FILE_BACKED)
    by_uri = inspect_savepoint(case.snapshot.as_uri())
    by_path = inspect_savepoint(str(case.snapshot))
    assert by_uri.operators == by_path.operators
    assert by_uri.path == by_path.path == str(case.metadata)
