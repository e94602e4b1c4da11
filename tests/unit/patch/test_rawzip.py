"""rawzip on archives real writers produced: Python's zipfile (ZIP64 end records) and the JDK's jar tool."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from splitaudit.patch.rawzip import rewrite_entries


@pytest.mark.needs_build  # the JDK's jar tool
def test_zip64_archive_keeps_every_entry_and_stays_readable_by_the_jdk(tmp_path: Path) -> None:
    # 70,000 entries: more than the 65,535 a plain end record can count, so zipfile writes ZIP64 end records.
    source = tmp_path / "many.zip"
    with zipfile.ZipFile(source, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for index in range(70_000):
            archive.writestr(f"d/{index:05d}.txt", f"entry {index}\n" * 3)
    target = tmp_path / "rewritten.zip"
    with target.open("wb") as out:
        rewrite_entries(source, out, {"d/12345.txt": b"replaced\n"})
    with zipfile.ZipFile(source) as before, zipfile.ZipFile(target) as after:
        assert after.testzip() is None
        assert [i.filename for i in after.infolist()] == [i.filename for i in before.infolist()]
        assert after.read("d/12345.txt") == b"replaced\n"
        assert after.read("d/69999.txt") == b"entry 69999\n" * 3
        assert after.getinfo("d/12345.txt").compress_type == zipfile.ZIP_DEFLATED
    listing = subprocess.run(["jar", "tf", str(target)], capture_output=True, text=True, check=True, timeout=120)
    assert len(listing.stdout.splitlines()) == 70_000


@pytest.mark.needs_build  # the JDK's jar tool
def test_stored_entries_stay_stored(tmp_path: Path) -> None:
    source = tmp_path / "stored.jar"
    here = str(Path(__file__).parent)
    jar = ["jar", "--create", "--no-compress", "--file", str(source), "-C", here, "__init__.py"]
    subprocess.run(jar, check=True, timeout=60)
    target = tmp_path / "rewritten.jar"
    with target.open("wb") as out:
        rewrite_entries(source, out, {"__init__.py": b"# replaced\n"})
    with zipfile.ZipFile(target) as after:
        assert after.testzip() is None
        assert after.getinfo("__init__.py").compress_type == zipfile.ZIP_STORED
        assert after.read("__init__.py") == b"# replaced\n"
        assert after.read("META-INF/MANIFEST.MF") == zipfile.ZipFile(source).read("META-INF/MANIFEST.MF")


@pytest.mark.needs_build  # the JDK's jar tool
def test_added_entries_follow_the_kept_ones_and_the_jdk_reads_them(tmp_path: Path) -> None:
    source = tmp_path / "small.jar"
    here = str(Path(__file__).parent)
    subprocess.run(["jar", "--create", "--file", str(source), "-C", here, "__init__.py"], check=True, timeout=60)
    target = tmp_path / "grown.jar"
    with target.open("wb") as out:
        rewrite_entries(source, out, {}, {"a/b/New.class": b"\xca\xfe\xba\xbe" * 100, "c.txt": b"c\n"})
    with zipfile.ZipFile(source) as before, zipfile.ZipFile(target) as after:
        assert after.testzip() is None
        assert [i.filename for i in after.infolist()] == [i.filename for i in before.infolist()] + [
            "a/b/New.class",
            "c.txt",
        ]
        assert after.read("a/b/New.class") == b"\xca\xfe\xba\xbe" * 100
        assert after.getinfo("c.txt").date_time == (1980, 1, 1, 0, 0, 0)
    listing = subprocess.run(["jar", "tf", str(target)], capture_output=True, text=True, check=True, timeout=60)
    assert listing.stdout.splitlines()[-2:] == ["a/b/New.class", "c.txt"]


def test_an_added_entry_the_archive_holds_already_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "one.zip"
    with zipfile.ZipFile(source, "w") as archive:
        archive.writestr("x.txt", "x")
    with pytest.raises(Exception, match=r"entries to add are present already: \['x.txt'\]"):
        rewrite_entries(source, (tmp_path / "out.zip").open("wb"), {}, {"x.txt": b"y"})
