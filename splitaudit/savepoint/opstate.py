"""The operator-state backend stream behind a tag-4/17 handle (`DefaultOperatorStateBackendSnapshotStrategy`).

Layout (splitaudit/savepoint/FORMAT.md, "Operator-state stream"): `OperatorBackendSerializationProxy`
(version 5 in 1.17, 6 from 1.18: a `bool usingStateCompression` follows the version), the
`StateMetaInfoSnapshot` section (meta-info version 6/7, `savepoint/metainfo.py`), then the
list elements that `PartitionableListState.write` put at the absolute offsets `_metadata` records. With
compression on, everything after the meta section is xerial Snappy *framed* (`SnappyFramedOutputStream`,
64 KiB blocks) and each offset is the start of a chunk (1.18 opens a new framed stream per state, 1.19+ one
for all; both are read the same way).
"""

from __future__ import annotations

from dataclasses import dataclass

from splitaudit.primitives.datainput import DataInput
from splitaudit.primitives.snappy import snappy_framed
from splitaudit.savepoint.metainfo import StateMetaInfoSnapshot, read_state_meta_info

PROXY_VERSIONS = (5, 6)


@dataclass(frozen=True)
class OperatorBackendHeader:
    """`OperatorBackendSerializationProxy`: version, compression flag and the meta-info it could read.

    `meta_complete` is False when a serializer snapshot with a body this reader does not know stopped the
    walk through the meta-info section; the elements are still readable, their offsets come from `_metadata`.
    """

    version: int
    compressed: bool
    states: tuple[StateMetaInfoSnapshot, ...]
    meta_complete: bool


class OperatorStateStream:
    """One subtask's operator-state stream: its header, and each list element's bytes by offset."""

    def __init__(self, stream: DataInput, element_offsets: tuple[int, ...]) -> None:
        self.stream = stream
        # Elements end where the next element of any state starts, or at the end of the stream.
        self._ends = sorted(set(element_offsets) | {len(stream)})
        self.header = _read_header(stream)

    def element_region(self, offset: int) -> DataInput:
        """The bytes from `offset` to the next element (decompressed when the stream is compressed)."""
        if not 0 <= offset < len(self.stream):
            raise self.stream.error(f"state element offset {offset} lies outside the {len(self.stream)}-byte stream")
        end = next(e for e in self._ends if e > offset)
        self.stream.seek(offset)
        region = self.stream.sub(end - offset, "state element")
        if not self.header.compressed:
            return region
        return DataInput(snappy_framed(region), f"{self.stream.path} (Snappy, element at {self.stream.base + offset})")

    def byte_array_element(self, offset: int) -> DataInput:
        """A `BytePrimitiveArraySerializer` element (`int len, byte[len]`), as `SourceReaderState` stores."""
        region = self.element_region(offset)
        return region.sub(region.read_length("byte array element length"), "byte array element")


def _read_header(stream: DataInput) -> OperatorBackendHeader:
    at = stream.tell()
    version = stream.read_int("operator state proxy version")
    if version not in PROXY_VERSIONS:
        raise stream.error(
            f"operator state stream version {version} is not supported (5 = Flink 1.17, 6 = 1.18 to 2.3)", at
        )
    compressed = stream.read_bool("compression flag") if version >= 6 else False
    states: list[StateMetaInfoSnapshot] = []
    complete = True
    for what in ("operator", "broadcast"):
        count_at = stream.tell()
        count = stream.read_short(f"number of {what} states")
        if count < 0:
            raise stream.error(f"negative number of {what} states {count}", count_at)
        for _ in range(count):
            state, complete = read_state_meta_info(stream)
            states.append(state)
            if not complete:
                return OperatorBackendHeader(version, compressed, tuple(states), False)
    return OperatorBackendHeader(version, compressed, tuple(states), True)
