from __future__ import annotations

import pytest

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput, decode_modified_utf8


def test_big_endian_primitives() -> None:
    inp = DataInput(bytes.fromhex("4960672d 00000006 fffffffffffffffe 01 00 ff 8000"), "f")
    assert inp.read_int() == 0x4960672D
    assert inp.read_int() == 6
    assert inp.read_long() == -2
    assert inp.read_bool() is True
    assert inp.read_bool() is False
    assert inp.read_unsigned_byte() == 255
    assert inp.read_short() == -32768
    assert inp.remaining() == 0


def test_modified_utf8_nul_and_supplementary_characters() -> None:
    # Java writes U+0000 as C0 80 and U+1F600 as a CESU-8 surrogate pair (ED A0 BD ED B8 80).
    assert decode_modified_utf8(b"a\xc0\x80b") == "a\0b"
    assert decode_modified_utf8(b"\xed\xa0\xbd\xed\xb8\x80") == "\U0001f600"
    inp = DataInput(b"\x00\x03\xe2\x82\xac", "f")
    assert inp.read_utf() == "€"


def test_ascii_fast_path_decodes_as_the_general_path() -> None:
    every_ascii_byte = bytes(range(128))
    assert decode_modified_utf8(every_ascii_byte) == every_ascii_byte.decode("utf-8") == "".join(map(chr, range(128)))
    # One non-ASCII byte anywhere takes the general path: NUL pairs and surrogate pairs after ASCII text.
    assert decode_modified_utf8(b"topic-\xc0\x80") == "topic-\0"
    assert decode_modified_utf8(b"orders-\xed\xa0\xbd\xed\xb8\x80-7") == "orders-\U0001f600-7"
    with pytest.raises(UnicodeDecodeError):
        decode_modified_utf8(b"orders-\xff")


def test_truncation_names_file_and_offset() -> None:
    inp = DataInput(b"\x00\x00\x00\x01\x00\x00", "some/_metadata", base=100)
    inp.read_int()
    with pytest.raises(InputError) as error:
        inp.read_long("checkpoint id")
    assert (error.value.path, error.value.offset) == ("some/_metadata", 104)
    assert "checkpoint id needs 8 bytes, 2 left" in error.value.message


def test_absurd_lengths_are_refused_before_allocating() -> None:
    inp = DataInput(b"\x7f\xff\xff\xff" + b"\x00" * 8, "f")
    with pytest.raises(InputError) as error:
        inp.read_length("number of things", 8)
    assert error.value.offset == 0
    assert "2147483647" in error.value.message
    with pytest.raises(InputError):
        DataInput(b"\xff\xff\xff\xff", "f").read_length_prefixed("payload")
    with pytest.raises(InputError):
        DataInput(b"\x00\x05abc", "f").read_utf()


def test_bad_boolean_and_bad_utf() -> None:
    with pytest.raises(InputError) as error:
        DataInput(b"\x02", "f").read_bool("flag")
    assert error.value.offset == 0
    with pytest.raises(InputError) as error:
        DataInput(b"\x00\x02\xff\xfe", "f").read_utf()
    assert "not modified UTF-8" in error.value.message


def test_seek_and_sub_keep_file_offsets() -> None:
    inp = DataInput(bytes(range(16)), "f", base=1000)
    inp.seek(4)
    sub = inp.sub(8, "part")
    assert inp.tell() == 12
    assert sub.read_int() == 0x04050607
    with pytest.raises(InputError) as error:
        sub.read_long()
    assert error.value.offset == 1008
    with pytest.raises(InputError):
        inp.seek(17)


def test_varints_of_one_and_more_bytes() -> None:
    inp = DataInput(b"\x05\x80\x01\xff\xff\xff\xff\x0f\x80\x80", "f", base=7)
    assert inp.read_varint("n", 5) == 5
    assert inp.read_varint("n", 5) == 128
    assert inp.read_varint("n", 5) == 0xFFFFFFFF
    with pytest.raises(InputError) as error:
        inp.read_varint("n", 5)
    assert error.value.offset == 17


def test_sub_shares_the_bytes_and_checks_its_length() -> None:
    data = bytearray(range(8))
    inp = DataInput(data, "f")
    sub = inp.sub(4, "part")
    assert sub.read_bytes(4) == bytes(range(4))
    assert inp.remaining() == 4
    with pytest.raises(InputError) as error:
        inp.sub(-1, "part")
    assert "negative length -1 for part" in error.value.message
    with pytest.raises(InputError) as error:
        inp.sub(5, "part")
    assert error.value.offset == 4


def test_sub_length_prefixed_takes_a_whole_frame_or_nothing() -> None:
    inp = DataInput(b"\x00\x00\x00\x02ab\x00\x00\x00\x05abc", "f", base=20)
    frame = inp.sub_length_prefixed("key", "key length")
    assert frame is not None
    assert (frame.read_bytes(2), frame.offset(), inp.tell()) == (b"ab", 26, 6)
    assert inp.sub_length_prefixed("key", "key length") is None  # 5 bytes declared, 3 left
    assert inp.tell() == 6
    assert DataInput(b"\x00\x00", "f").sub_length_prefixed("key", "key length") is None
    with pytest.raises(InputError) as error:
        DataInput(b"\xff\xff\xff\xfe", "f", base=3).sub_length_prefixed("key", "key length")
    assert (error.value.offset, error.value.message) == (3, "negative key length -2")


def test_sub_length_prefixed_pair_takes_two_whole_frames_or_nothing() -> None:
    inp = DataInput(b"\x00\x00\x00\x02ab\x00\x00\x00\x01c\x00\x00\x00\x01d\x00\x00\x00\x02e", "f", base=20)
    pair = inp.sub_length_prefixed_pair("key length", "value length")
    assert pair is not None
    key, value = pair
    assert (key.read_bytes(2), key.offset(), value.read_bytes(1), value.offset(), inp.tell()) == (
        b"ab",
        26,
        b"c",
        31,
        11,
    )
    assert inp.sub_length_prefixed_pair("key length", "value length") is None  # the value: 2 declared, 1 left
    assert inp.tell() == 11  # nothing consumed: the key is there for `sub_length_prefixed`
    assert DataInput(b"\x00\x00\x00\x01a\x00\x00", "f").sub_length_prefixed_pair("k", "v") is None
    with pytest.raises(InputError) as error:
        DataInput(b"\xff\xff\xff\xfe\x00\x00\x00\x00", "f", base=3).sub_length_prefixed_pair("key length", "v")
    assert (error.value.offset, error.value.message) == (3, "negative key length -2")
    with pytest.raises(InputError) as error:
        DataInput(b"\x00\x00\x00\x00\xff\xff\xff\xff", "f", base=3).sub_length_prefixed_pair("k", "value length")
    assert (error.value.offset, error.value.message) == (7, "negative value length -1")


def test_an_ascii_string_value_is_read_at_once_and_any_other_unit_by_unit() -> None:
    # StringValue: length + 1, then each UTF-16 unit as a varint (one byte below 0x80).
    inp = DataInput(b"\x04abcd", "f")
    assert inp.read_string_value() == "abc"
    assert inp.tell() == 4
    # "é" is U+00E9: the varint 0xE9 0x01; so the 2 characters take 3 bytes, and not one of them is ASCII text.
    assert DataInput(b"\x03\xe9\x01x", "f").read_string_value() == "\u00e9x"
    assert DataInput(b"\x00", "f").read_string_value() is None
