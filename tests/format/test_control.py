import pytest

from logscan.format import control
from logscan.format.control import (
    ControlRecordKey, EndTxnMarker, decode_control_key, decode_end_txn_marker,
)
from logscan.format.errors import CorruptRecordError


@pytest.mark.parametrize("type_id,name", [
    (0, "ABORT"), (1, "COMMIT"), (2, "LEADER_CHANGE"), (3, "SNAPSHOT_HEADER"),
    (4, "SNAPSHOT_FOOTER"), (5, "KRAFT_VERSION"), (6, "KRAFT_VOTERS"),
])
def test_known_types(type_id, name):
    key = decode_control_key(bytes([0, 0, 0, type_id]))
    assert key == ControlRecordKey(0, type_id)
    assert key.name == name and key.label == f"{name}({type_id})"
    assert key.is_transaction_marker == (type_id < 2)


@pytest.mark.parametrize("type_id", [7, 99, -1, 32767])
def test_unknown_type_is_reported_not_fatal(type_id):
    key = decode_control_key(control.CONTROL_KEY.pack(0, type_id))
    assert key.name == "UNKNOWN" and key.label == f"UNKNOWN({type_id})"
    assert not key.is_transaction_marker


def test_newer_key_version_parses_as_v0_and_extra_bytes_are_ignored():
    assert decode_control_key(b"\x00\x03\x00\x01\xff\xff") == ControlRecordKey(3, 1)


@pytest.mark.parametrize("raw", [None, b"", b"\x00", b"\x00\x00\x00"])
def test_short_key_is_corrupt(raw):
    with pytest.raises(CorruptRecordError) as e:
        decode_control_key(raw, position=500)
    assert e.value.position == 500


def test_negative_key_version_is_corrupt():
    with pytest.raises(CorruptRecordError, match="May indicate data corruption"):
        decode_control_key(b"\xff\xff\x00\x01")


def test_end_txn_marker_value():
    key = decode_control_key(b"\x00\x00\x00\x01")
    assert decode_end_txn_marker(key, bytes.fromhex("000000000005")) == EndTxnMarker(0, 5)
    # a newer version is parsed as v0; trailing bytes are ignored
    assert decode_end_txn_marker(key, bytes.fromhex("0001ffffffff" + "abcd")) == EndTxnMarker(1, -1)


@pytest.mark.parametrize("value", [None, b"", b"\x00\x00\x00\x00\x00"])
def test_short_marker_value_is_corrupt(value):
    with pytest.raises(CorruptRecordError):
        decode_end_txn_marker(ControlRecordKey(0, 0), value, position=9)


def test_negative_marker_version_is_corrupt():
    with pytest.raises(CorruptRecordError, match="end transaction marker: -2"):
        decode_end_txn_marker(ControlRecordKey(0, 0), bytes.fromhex("fffe00000001"))


@pytest.mark.parametrize("type_id", [2, 3, 7])
def test_marker_value_only_for_abort_and_commit(type_id):
    with pytest.raises(CorruptRecordError):
        decode_end_txn_marker(ControlRecordKey(0, type_id), bytes(6))


def test_encoders_round_trip():
    assert control.encode_control_key(control.COMMIT) == b"\x00\x00\x00\x01"
    assert control.encode_end_txn_marker(5) == bytes.fromhex("000000000005")
