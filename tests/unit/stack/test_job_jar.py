"""The shaded job jar without Maven, on small jars made here: maven-shade-plugin 3.6.0's rules one by one (the
reference pipeline's real jar against Maven's is tests/integration/test_job_jar.py)."""

from __future__ import annotations

import zipfile
from collections.abc import Collection
from pathlib import Path

import pytest

from splitaudit.errors import InputError
from splitaudit_lab.stack.job_jar import write_job_jar

MANIFEST = b"Manifest-Version: 1.0\r\nCreated-By: Maven JAR Plugin 3.4.2\r\nBuild-Jdk-Spec: 17\r\n\r\n"


def _jar(path: Path, entries: dict[str, bytes], stored: Collection[str] = ()) -> Path:
    """A jar of `entries` in their order, deflated but for the names in `stored`."""
    with zipfile.ZipFile(path, "w") as jar:
        for name, content in entries.items():
            method = zipfile.ZIP_STORED if name in stored else zipfile.ZIP_DEFLATED
            jar.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), content, compress_type=method)
    return path


def _entries(jar_path: Path) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(jar_path) as jar:
        assert jar.testzip() is None
        return [(info.filename, jar.read(info)) for info in jar.infolist()]


def test_the_first_copy_wins_and_each_directory_comes_once_before_its_first_file(tmp_path: Path) -> None:
    project = _jar(
        tmp_path / "project.jar",
        {"META-INF/MANIFEST.MF": MANIFEST, "META-INF/": b"", "a/": b"", "a/b/Main.class": b"main", "a/x.txt": b"p"},
    )
    first = _jar(
        tmp_path / "first.jar",
        {
            "META-INF/MANIFEST.MF": b"Manifest-Version: 1.0\r\nMain-Class: other.Main\r\n\r\n",
            "a/b/Main.class": b"first's main",
            "a/x.txt": b"first's x",
            "c/d/e/F.class": b"F",
            "c/d/g.txt": b"g",
        },
    )
    second = _jar(tmp_path / "second.jar", {"c/d/e/F.class": b"second F", "c/d/g.txt": b"second g", "h.txt": b"h"})
    out = tmp_path / "job.jar"
    assert write_job_jar([first, second], project, "a.b.Main", out) == 12
    entries = _entries(out)
    assert [name for name, _ in entries] == [
        "META-INF/MANIFEST.MF",
        "META-INF/",
        "a/",
        "a/b/",
        "a/b/Main.class",
        "a/x.txt",
        "c/",
        "c/d/",
        "c/d/e/",
        "c/d/e/F.class",
        "c/d/g.txt",
        "h.txt",
    ]
    assert dict(entries) == {
        "META-INF/MANIFEST.MF": MANIFEST.removesuffix(b"\r\n") + b"Main-Class: a.b.Main\r\n\r\n",
        "META-INF/": b"",
        "a/": b"",
        "a/b/": b"",
        "a/b/Main.class": b"main",
        "a/x.txt": b"p",
        "c/": b"",
        "c/d/": b"",
        "c/d/e/": b"",
        "c/d/e/F.class": b"F",
        "c/d/g.txt": b"g",
        "h.txt": b"h",
    }


def test_the_poms_filters_and_the_plugins_own_exclusions_drop_exactly_their_entries(tmp_path: Path) -> None:
    project = _jar(tmp_path / "project.jar", {"META-INF/MANIFEST.MF": MANIFEST})
    names = (
        "META-INF/SIGNER.SF",
        "META-INF/SIGNER.DSA",
        "META-INF/SIGNER.RSA",
        "META-INF/SIGNER.EC",  # no filter names it
        "META-INF/sub/X.SF",  # `*` stays within one folder
        "META-INF/x.sf",  # the patterns are case-sensitive
        "module-info.class",
        "META-INF/versions/9/module-info.class",
        "META-INF/versions/9/a/B.class",
        "a/module-info.class",
        "META-INF/INDEX.LIST",
    )
    dependency = _jar(tmp_path / "dependency.jar", {name: name.encode() for name in names})
    out = tmp_path / "job.jar"
    write_job_jar([dependency], project, "Main", out)
    assert [name for name, _ in _entries(out)] == [
        "META-INF/MANIFEST.MF",
        "META-INF/",
        "META-INF/SIGNER.EC",
        "META-INF/sub/",
        "META-INF/sub/X.SF",
        "META-INF/x.sf",
        "META-INF/versions/",
        "META-INF/versions/9/",
        "META-INF/versions/9/a/",
        "META-INF/versions/9/a/B.class",
        "a/",
        "a/module-info.class",
    ]


def test_services_files_merge_each_line_once_in_the_order_first_read_after_every_other_entry(tmp_path: Path) -> None:
    project = _jar(
        tmp_path / "project.jar",
        {"META-INF/MANIFEST.MF": MANIFEST, "META-INF/services/com.S": b"impl.A\n# a comment\n", "p/P.class": b"P"},
    )
    first = _jar(
        tmp_path / "first.jar",
        {
            # CRLF, an empty line, no line break at the end, a form feed inside a line (not a line break to Scanner)
            "META-INF/services/com.S": b"impl.B\r\nimpl.A\r\n\r\nimpl.C\x0cstill C",
            "META-INF/services/com.R": b"r.One\n",
            "q/Q.class": b"Q",
        },
    )
    second = _jar(
        tmp_path / "second.jar",
        {"META-INF/services/com.S": b"impl.D\rimpl.B\xe2\x80\xa8impl.E\n", "META-INF/services/com.Empty": b""},
    )
    out = tmp_path / "job.jar"
    assert write_job_jar([first, second], project, "Main", out) == 10
    entries = _entries(out)
    assert [name for name, _ in entries] == [
        "META-INF/MANIFEST.MF",
        "META-INF/",
        "META-INF/services/",
        "p/",
        "p/P.class",
        "q/",
        "q/Q.class",
        "META-INF/services/com.Empty",  # kept, empty, as ServicesResourceTransformer keeps it
        "META-INF/services/com.R",
        "META-INF/services/com.S",
    ]
    assert dict(entries)["META-INF/services/com.Empty"] == b""
    assert (
        dict(entries)["META-INF/services/com.S"]
        == b"impl.A\n# a comment\nimpl.B\n\nimpl.C\x0cstill C\nimpl.D\nimpl.E\n"
    )
    assert dict(entries)["META-INF/services/com.R"] == b"r.One\n"


def test_the_manifest_is_the_projects_with_main_class_set_as_javas_manifest_writes_it(tmp_path: Path) -> None:
    project = _jar(
        tmp_path / "project.jar",
        {
            "META-INF/MANIFEST.MF": (
                b"Created-By: Maven JAR Pl\r\n ugin 3.4.2\r\nmain-class: old.Main\r\nManifest-Version: 1.0\r\n"
                b"Build-Jdk-Spec: 17\r\n\r\n"
            )
        },
    )
    main_class = "dev.splitaudit.pipeline." + "A" * 60
    out = tmp_path / "job.jar"
    write_job_jar([], project, main_class, out)
    # Manifest-Version first; main-class keeps its place and spelling; 96 bytes fold after 72.
    assert dict(_entries(out))["META-INF/MANIFEST.MF"] == (
        b"Manifest-Version: 1.0\r\n"
        b"Created-By: Maven JAR Plugin 3.4.2\r\n"
        b"main-class: dev.splitaudit.pipeline.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n"
        b" AAAAAAAAAAAAAAAAAAAAAAAA\r\n"
        b"Build-Jdk-Spec: 17\r\n"
        b"\r\n"
    )


def test_kept_entries_are_copied_byte_for_byte(tmp_path: Path) -> None:
    project = _jar(tmp_path / "project.jar", {"META-INF/MANIFEST.MF": MANIFEST})
    content = bytes(range(256)) * 64
    dependency = _jar(
        tmp_path / "dependency.jar", {"s/Stored.class": content, "d/Deflated.class": content}, {"s/Stored.class"}
    )
    out = tmp_path / "job.jar"
    write_job_jar([dependency], project, "Main", out)
    with zipfile.ZipFile(dependency) as source, zipfile.ZipFile(out) as job:
        for name in ("s/Stored.class", "d/Deflated.class"):
            copied, original = job.getinfo(name), source.getinfo(name)
            assert (copied.compress_type, copied.compress_size, copied.CRC) == (
                original.compress_type,
                original.compress_size,
                original.CRC,
            )
            assert job.read(name) == content


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"a/A.class": b"A"}, "the project jar has no META-INF/MANIFEST.MF"),
        (
            {"META-INF/MANIFEST.MF": b"Manifest-Version: 1.0\r\n\r\nName: a/A.class\r\nSealed: true\r\n\r\n"},
            "META-INF/MANIFEST.MF has per-entry sections, which are not supported",
        ),
    ],
    ids=["no manifest", "per-entry sections"],
)
def test_a_project_jar_without_a_plain_manifest_is_refused_and_nothing_is_written(
    tmp_path: Path, entries: dict[str, bytes], message: str
) -> None:
    project = _jar(tmp_path / "project.jar", entries)
    with pytest.raises(InputError, match=message):
        write_job_jar([], project, "Main", tmp_path / "out" / "job.jar")
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
