"""What Beam's file names say: the window, pane and shard of each file a windowed file sink wrote.

A Beam file sink's only ledger is its file names (and the files' times): each names the window it holds, the
pane (firing) of that window and its shard of the pane. Beam builds them with one of two default templates,
read here exactly as beam-sdks-java-core 2.62.0 writes them:

- TextIO, AvroIO and the other `FileBasedSink`s (`DefaultFilenamePolicy`, windowed writes): prefix, then the
  template `W-P-SSSSS-of-NNNNN`, then the suffix and the compression's suffix. `W` is
  `<start>-<end>` of an `IntervalWindow` (joda `Instant.toString()`: `2026-11-25T11:50:20.000Z`) or
  `GlobalWindow`; `P` is `pane-<index>`, then `-late` for a late pane and `-last` for the window's last pane:
  `customers2026-11-25T11:50:20.000Z-2026-11-25T11:50:30.000Z-pane-0-last-00000-of-00001.json`.
- `FileIO.Write.defaultNaming(prefix, suffix)` (FileIO, and ParquetIO through it): prefix, `-<start>-<end>`
  unless the window is the global one, `-<pane index>` unless the pane is the window's only firing (first and
  last), `-<shard>-of-<shards>` (at least five digits each), then the suffix and the compression's suffix:
  `weather-2026-11-25T11:50:20.000Z-2026-11-25T11:50:30.000Z-00000-of-00001.parquet`.

A custom `FileNaming` is described by `--sink-naming TEMPLATE` (`NamingTemplate.custom`). Nothing here touches a
file: names in, what they say out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from splitaudit.errors import UsageError

# joda's Instant.toString(): ISO 8601 in UTC with milliseconds (a custom template may also give epoch millis).
_INSTANT = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z"
_SHARDS = r"(?P<shard>\d{5,})-of-(?P<shards>\d{5,})"

_TEXTIO = re.compile(
    rf"(?P<prefix>.*?)(?:(?P<start>{_INSTANT})-(?P<end>{_INSTANT})|GlobalWindow)"
    rf"-pane-(?P<pane>\d+)(?P<late>-late)?(?P<last>-last)?-{_SHARDS}(?P<suffix>.*)",
    re.DOTALL,
)
_FILEIO = re.compile(
    rf"(?P<prefix>.*?)-?(?:(?P<start>{_INSTANT})-(?P<end>{_INSTANT})-)?(?:(?P<pane>\d{{1,4}})-)?{_SHARDS}"
    r"(?P<suffix>.*)",
    re.DOTALL,
)

# The fields a custom template may name, and what each matches.
_PLACEHOLDERS = {
    "start": rf"(?P<start>{_INSTANT}|\d+)",
    "end": rf"(?P<end>{_INSTANT}|\d+)",
    "pane": r"(?P<pane>\d+)",
    "shard": r"(?P<shard>\d+)",
    "shards": r"(?P<shards>\d+)",
    "*": r".*?",
}


@dataclass(frozen=True)
class WindowedName:
    """What one file name says. Times are epoch milliseconds; a global window has neither start nor end."""

    prefix: str
    window_start: int | None
    window_end: int | None
    pane: int  # the pane's index: 0 for FileIO's only firing
    pane_last: bool | None  # TextIO says whether the pane is the window's last; FileIO only when it is the only one
    late: bool
    shard: int
    shards: int
    suffix: str  # the sink's suffix with its compression's (`.json.gz`)

    @property
    def window(self) -> tuple[int, int] | None:
        if self.window_start is None or self.window_end is None:
            return None
        return self.window_start, self.window_end

    @property
    def window_text(self) -> str:
        """The window as Beam writes it (`2026-11-25T11:50:20.000Z..2026-11-25T11:50:30.000Z`), or `global`."""
        window = self.window
        return "global" if window is None else f"{instant_text(window[0])}..{instant_text(window[1])}"


@dataclass(frozen=True)
class NamingTemplate:
    """How a sink's file names are read: Beam's two defaults (tried in turn) or one custom template."""

    described: str
    patterns: tuple[tuple[str, re.Pattern[str]], ...]

    @classmethod
    def beam_defaults(cls) -> NamingTemplate:
        return cls("Beam's default names (TextIO's W-P-SSSSS-of-NNNNN, FileIO's defaultNaming)", _DEFAULTS)

    @classmethod
    def custom(cls, template: str) -> NamingTemplate:
        """A `--sink-naming` template: the file name with `{start}`, `{end}` (ISO instants or epoch millis),
        `{pane}`, `{shard}`, `{shards}` and `{*}` (anything) in place of what varies, e.g.
        `weather-{start}-{end}-pane{pane}-{shard}-of-{shards}.parquet`. It must name `{shard}` and `{shards}`
        or `{start}` and `{end}`; a name it does not match is not in the ledger."""
        parts = re.split(r"\{([^{}]*)\}", template)
        pattern = []
        for index, part in enumerate(parts):
            if index % 2 == 0:
                pattern.append(re.escape(part))
            elif part in _PLACEHOLDERS:
                if part != "*" and f"(?P<{part}>" in "".join(pattern):
                    raise UsageError(f"{{{part}}} appears twice in the --sink-naming template {template!r}")
                pattern.append(_PLACEHOLDERS[part])
            else:
                known = ", ".join(f"{{{name}}}" for name in _PLACEHOLDERS)
                raise UsageError(f"the --sink-naming template {template!r} names {{{part}}}; it may name {known}")
        named = {part for index, part in enumerate(parts) if index % 2}
        if not ({"shard", "shards"} <= named or {"start", "end"} <= named):
            raise UsageError(
                f"the --sink-naming template {template!r} names neither {{shard}} and {{shards}} nor {{start}} and "
                "{end}: it would say nothing of a file"
            )
        return cls(f"--sink-naming {template}", (("custom", re.compile("".join(pattern), re.DOTALL)),))

    def parse(self, name: str) -> WindowedName | None:
        """What `name` (a file name, no directory) says, or None when no template of this naming matches it."""
        for kind, pattern in self.patterns:
            match = pattern.fullmatch(name)
            if match is not None:
                return _named(kind, match)
        return None


_DEFAULTS = (("textio", _TEXTIO), ("fileio", _FILEIO))


def _named(kind: str, match: re.Match[str]) -> WindowedName:
    fields = match.groupdict()
    pane = fields.get("pane")
    if kind == "textio":
        last: bool | None = fields["last"] is not None
    elif kind == "fileio":
        last = True if pane is None else None  # no pane index: the window's only firing
    else:
        last = None
    return WindowedName(
        prefix=fields.get("prefix") or "",
        window_start=_instant(fields.get("start")),
        window_end=_instant(fields.get("end")),
        pane=int(pane) if pane is not None else 0,
        pane_last=last,
        late=fields.get("late") is not None,
        shard=int(fields["shard"]) if fields.get("shard") is not None else 0,
        shards=int(fields["shards"]) if fields.get("shards") is not None else 1,
        suffix=fields.get("suffix") or "",
    )


def _instant(text: str | None) -> int | None:
    """Epoch milliseconds of an ISO instant (`…Z`) or of epoch-millisecond digits."""
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    moment = datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    fraction = text[20:-1] if len(text) > 20 else ""
    return int(moment.timestamp()) * 1000 + int((fraction + "000")[:3])


def instant_text(millis: int) -> str:
    """Epoch milliseconds as joda's `Instant.toString()` writes them: `2026-11-25T11:50:20.000Z`."""
    moment = datetime.fromtimestamp(millis // 1000, tz=UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{millis % 1000:03d}Z"
