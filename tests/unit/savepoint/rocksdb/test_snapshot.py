"""Where a native snapshot's files may be: inside the snapshot's directory, and for a retained checkpoint `chk-N`
in its job's `shared/` and `taskowned/` folders, where incremental checkpoints keep the SST files they share."""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.errors import InputError
from splitaudit.savepoint.fileio import SavepointFiles


def _job(tmp_path: Path, snapshot: str) -> Path:
    (tmp_path / snapshot).mkdir()
    (tmp_path / snapshot / "_metadata").write_bytes(b"")
    for folder in ("shared", "taskowned", "elsewhere"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "000012.sst").write_bytes(b"sst")
    return tmp_path / snapshot


@pytest.mark.parametrize("folder", ["shared", "taskowned"])
def test_a_checkpoint_reads_its_jobs_shared_files(tmp_path: Path, folder: str) -> None:
    files = SavepointFiles(str(_job(tmp_path, "chk-7")))
    shared = tmp_path / folder / "000012.sst"
    assert files.read_absolute(f"file:{shared}", (0, 3), "m", 5) == (str(shared), b"sst")


def test_nothing_else_outside_the_checkpoint_is_read(tmp_path: Path) -> None:
    files = SavepointFiles(str(_job(tmp_path, "chk-7")))
    with pytest.raises(InputError, match="--allow-external-state") as raised:
        files.read_absolute(f"file:{tmp_path / 'elsewhere' / '000012.sst'}", (0, 3), "m", 5)
    assert raised.value.offset == 5
    (tmp_path / "shared" / "escape.sst").symlink_to(tmp_path / "elsewhere" / "000012.sst")
    with pytest.raises(InputError, match="--allow-external-state"):
        files.read_absolute(f"file:{tmp_path / 'shared' / 'escape.sst'}", (0, 3), "m", 5)


def test_a_savepoint_has_no_shared_folder(tmp_path: Path) -> None:
    files = SavepointFiles(str(_job(tmp_path, "savepoint-0a1b2c-0123456789ab")))
    with pytest.raises(InputError, match="--allow-external-state"):
        files.read_absolute(f"file:{tmp_path / 'shared' / '000012.sst'}", (0, 3), "m", 5)
