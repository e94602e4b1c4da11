"""Which chk-N the fixture generators keep after cancelling a job that checkpoints every second."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.generate_flink import retained_checkpoint


def _chk(checkpoints: Path, n: int, *, completed: bool) -> None:
    (checkpoints / f"chk-{n}").mkdir(parents=True)
    (checkpoints / f"chk-{n}" / "7ab5c329-3f29-4269-a10f-53242c9476e5").write_bytes(b"state")
    if completed:
        (checkpoints / f"chk-{n}" / "_metadata").write_bytes(b"metadata")


def test_a_checkpoint_caught_in_flight_by_the_cancel_is_passed_over(tmp_path: Path) -> None:
    # As a CI run left it: chk-19 completed, chk-20 one state file and no _metadata.
    _chk(tmp_path, 19, completed=True)
    _chk(tmp_path, 20, completed=False)
    assert retained_checkpoint(tmp_path) == (tmp_path / "chk-19", 19)


def test_the_newest_completed_checkpoint_is_kept_by_number_not_by_name(tmp_path: Path) -> None:
    _chk(tmp_path, 9, completed=True)
    _chk(tmp_path, 10, completed=True)
    assert retained_checkpoint(tmp_path) == (tmp_path / "chk-10", 10)


def test_no_completed_checkpoint_is_an_error_naming_what_was_found(tmp_path: Path) -> None:
    _chk(tmp_path, 3, completed=False)
    with pytest.raises(SystemExit, match=r"no completed checkpoint in .*, found \['chk-3'\]"):
        retained_checkpoint(tmp_path)
