"""Which key group a key belongs to, as Flink assigns it (`KeyGroupRangeAssignment.assignToKeyGroup`, flink-runtime
1.8 to 2.3): `MathUtils.murmurHash(key.hashCode()) % maxParallelism`.

Only keys whose Java `hashCode()` follows from their decoded value alone are assigned here: `String`
(`s[0]*31^(n-1) + ... + s[n-1]` over its UTF-16 code units), `Long` (`(int) (v ^ (v >>> 32))`) and `Integer` (the
value); and, as a set of candidates, a `KryoSerializer`'s key decoded from one of Kryo's own registrations (`kryo`),
whose wrapper class the decoded value does not always say (an integer is an `Integer`, `Long`, `Short` or `Byte`, a
floating-point number a `Float` or `Double`). A heap key group's search for the ends of values no decoder knows
(`keyed.KeyGroupsReader._heap_search`) uses it to take only keys that may belong to the key group being read.
"""

from __future__ import annotations

import struct

from splitaudit.savepoint.typeserializers import INT, KRYO, LONG, STRING

_MASK = 0xFFFFFFFF


def _rotate_left(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def murmur_hash(code: int) -> int:
    """`org.apache.flink.util.MathUtils.murmurHash(int)`: one round of Murmur3's mixing, made non-negative."""
    code = (code * 0xCC9E2D51) & _MASK
    code = _rotate_left(code, 15)
    code = (code * 0x1B873593) & _MASK
    code = _rotate_left(code, 13)
    code = (code * 5 + 0xE6546B64) & _MASK
    code ^= 4
    code ^= code >> 16  # MathUtils.bitMix
    code = (code * 0x85EBCA6B) & _MASK
    code ^= code >> 13
    code = (code * 0xC2B2AE35) & _MASK
    code ^= code >> 16
    signed = code - (1 << 32) if code & 0x80000000 else code
    if signed >= 0:
        return signed
    return -signed if signed != -(1 << 31) else 0


def java_hash_code(key: object, serializer_class: str) -> int | None:
    """The key's Java `hashCode()` as an unsigned 32-bit int, when its serializer is String's, Long's or Integer's and
    it decoded to a value; else None."""
    if serializer_class == STRING and isinstance(key, str):
        code = 0
        utf16 = key.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(utf16), 2):
            code = (code * 31 + (utf16[i] << 8 | utf16[i + 1])) & _MASK
        return code
    if serializer_class == LONG and isinstance(key, int):
        value = key & 0xFFFFFFFFFFFFFFFF
        return (value ^ (value >> 32)) & _MASK
    if serializer_class == INT and isinstance(key, int):
        return key & _MASK
    return None


def _kryo_hash_codes(key: object) -> set[int] | None:
    """The Java `hashCode()`s a Kryo-decoded wrapper of this value may have (`Boolean`: 1231 / 1237; `Character`:
    its code; `Integer`, `Short`, `Byte`: the value; `Long`: `(int) (v ^ (v >>> 32))`; `Float`:
    `floatToIntBits`, when the value is a float's; `Double`: its bits' two halves XORed), or None."""
    if isinstance(key, bool):
        return {1231 if key else 1237}
    if isinstance(key, str) and len(key) == 1:
        return {ord(key)}
    if isinstance(key, int):
        codes = {java_hash_code(key, LONG) or 0}
        return codes | {key & _MASK} if -(1 << 31) <= key < 1 << 31 else codes
    if isinstance(key, float):
        if key != key:  # NaN: doubleToLongBits and floatToIntBits give the canonical one
            return {0x7FF80000, 0x7FC00000}
        bits = int.from_bytes(struct.pack(">d", key), "big")
        codes = {(bits ^ (bits >> 32)) & _MASK}
        try:
            single = struct.pack(">f", key)
        except OverflowError:  # beyond a float's range: a Double
            return codes
        return codes | {int.from_bytes(single, "big")} if struct.unpack(">f", single)[0] == key else codes
    return None


def key_groups_of(key: object, serializer_class: str, max_parallelism: int) -> frozenset[int] | None:
    """The key groups the key may belong to: the one `key_group_of` assigns, or, for a Kryo key, one per hash code
    its wrapper class may give (`_kryo_hash_codes`); None when no hash code is known here."""
    if serializer_class == KRYO:
        codes = _kryo_hash_codes(key)
        return None if codes is None else frozenset(murmur_hash(code) % max_parallelism for code in codes)
    group = key_group_of(key, serializer_class, max_parallelism)
    return None if group is None else frozenset({group})


def key_group_of(key: object, serializer_class: str, max_parallelism: int) -> int | None:
    """`KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism)`, or None when the key's hash code is not known
    here (`java_hash_code`)."""
    code = java_hash_code(key, serializer_class)
    return None if code is None else murmur_hash(code) % max_parallelism
