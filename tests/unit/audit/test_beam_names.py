"""Beam's file names read as Beam 2.62.0 writes them (DefaultFilenamePolicy and FileIO.Write.defaultNaming)."""

import pytest

from splitaudit.audit.checks.beam_names import NamingTemplate, WindowedName, instant_text
from splitaudit.errors import UsageError

DEFAULTS = NamingTemplate.beam_defaults()
START, END = 1795607420000, 1795607430000  # 2026-11-25T11:50:20.000Z, 2026-11-25T11:50:30.000Z
WINDOW = "2026-11-25T11:50:20.000Z-2026-11-25T11:50:30.000Z"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # TextIO.write().withWindowedWrites(): prefix + W-P-SSSSS-of-NNNNN + suffix
        (
            f"customers{WINDOW}-pane-0-last-00000-of-00001.json",
            WindowedName("customers", START, END, 0, True, False, 0, 1, ".json"),
        ),
        (
            f"customers{WINDOW}-pane-2-late-00003-of-00004.json.gz",
            WindowedName("customers", START, END, 2, False, True, 3, 4, ".json.gz"),
        ),
        (
            "outGlobalWindow-pane-0-last-00000-of-00001.txt",
            WindowedName("out", None, None, 0, True, False, 0, 1, ".txt"),
        ),
        # FileIO defaultNaming: prefix-start-end[-pane]-shard-of-shards + suffix (pane only when not the only one)
        (
            f"weather-{WINDOW}-00000-of-00001.parquet",
            WindowedName("weather", START, END, 0, True, False, 0, 1, ".parquet"),
        ),
        (
            f"weather-{WINDOW}-1-00001-of-00002.parquet",
            WindowedName("weather", START, END, 1, None, False, 1, 2, ".parquet"),
        ),
        (f"{WINDOW}-00000-of-00001", WindowedName("", START, END, 0, True, False, 0, 1, "")),
        # unwindowed: the global window, shard i of n
        ("output-00002-of-00005.txt", WindowedName("output", None, None, 0, True, False, 2, 5, ".txt")),
    ],
)
def test_beam_default_names(name: str, expected: WindowedName) -> None:
    assert DEFAULTS.parse(name) == expected


@pytest.mark.parametrize("name", ["part-00000-1f2e.snappy.parquet", "_SUCCESS", "weather.json", ""])
def test_other_names_say_nothing(name: str) -> None:
    assert DEFAULTS.parse(name) is None


def test_custom_template_with_epoch_millis() -> None:
    naming = NamingTemplate.custom("weather-{start}-{end}-pane{pane}-{shard}-of-{shards}.parquet")
    parsed = naming.parse("weather-1748736000000-1748736003000-pane1-00000-of-00002.parquet")
    assert parsed == WindowedName("", 1748736000000, 1748736003000, 1, None, False, 0, 2, "")
    assert naming.parse("weather-1748736000000-1748736003000-pane1-00000-of-00002.json") is None


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("w-{start}-{when}", "names {when}"),
        ("w-{pane}.json", "names neither"),
        ("w-{start}-{start}-{end}", "appears twice"),
    ],
)
def test_bad_templates_are_refused(template: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        NamingTemplate.custom(template)


def test_instants_print_as_joda_does() -> None:
    assert instant_text(START) == "2026-11-25T11:50:20.000Z"
    assert instant_text(1748736000123) == "2025-06-01T00:00:00.123Z"
    assert DEFAULTS.parse(f"x{WINDOW}-pane-0-last-00000-of-00001").window_text == (  # type: ignore[union-attr]
        "2026-11-25T11:50:20.000Z..2026-11-25T11:50:30.000Z"
    )
