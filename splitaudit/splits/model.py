"""What every split decoder returns: a frozen dataclass with a `type` (the JSON contract's name) and JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol


class DecodedState(Protocol):
    """A decoded reader split or enumerator checkpoint of one source family."""

    type: ClassVar[str]

    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class UnknownState:
    """Bytes no decoder recognised: kept whole, shown as hex, never a crash."""

    type: ClassVar[str] = "unknown"
    raw: bytes

    def to_json(self) -> dict[str, Any]:
        return {"hex": self.raw.hex()}
