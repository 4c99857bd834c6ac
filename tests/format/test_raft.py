"""KRaft control record values and the text kafka-dump-log prints for them."""

from __future__ import annotations

import struct

import pytest

from logscan.format.errors import TruncatedInput
from logscan.format.message import encode_message
from logscan.format.raft import (CONTROL_VALUES, LEADER_CHANGE, LEADER_CHANGE_MESSAGE,
                                 decode_control_value, render_control_value)
from tests.format.test_message import kafka_dump_lines, needs_kafka, sample_values

# LeaderChangeMessage read at v0: Version 0, LeaderId 1, Voters [1,2], GrantingVoters [1]
LEADER_CHANGE_V0 = bytes.fromhex("0000" "00000001" "03" "0000000100" "0000000200"
                                 "02" "0000000100" "00")


def test_leader_change_literal():
    msg, end = decode_control_value(LEADER_CHANGE, LEADER_CHANGE_V0)
    assert end == len(LEADER_CHANGE_V0)
    assert msg.leader_id == 1 and [v.voter_id for v in msg.voters] == [1, 2]
    assert render_control_value(LEADER_CHANGE, LEADER_CHANGE_V0) == (
        ' LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1},{"voterId":2}],'
        '"grantingVoters":[{"voterId":1}]}')


def test_version_field_drives_the_printed_json():
    v1 = b"\x00\x01" + LEADER_CHANGE_V0[2:]
    assert '"voters":[{"voterId":1,"voterDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA"}' in \
        render_control_value(LEADER_CHANGE, v1)


def test_prefixes_junk_and_other_types():
    for cut in range(len(LEADER_CHANGE_V0)):
        with pytest.raises(TruncatedInput):
            decode_control_value(LEADER_CHANGE, LEADER_CHANGE_V0[:cut])
    msg, end = decode_control_value(LEADER_CHANGE, b"\xaa" + LEADER_CHANGE_V0 + b"\xbb", 1)
    assert end == 1 + len(LEADER_CHANGE_V0) and msg.position == 1
    assert render_control_value(1, b"") is None


@pytest.mark.kafka
@needs_kafka
def test_control_lines_match_kafka_dump_log(tmp_path):
    recs = []
    for ctype, (schema, _) in sorted(CONTROL_VALUES.items()):
        for field_version in (0, 1, 3):
            values = sample_values(schema.fields, 1, ctype)
            values["version"] = field_version
            recs.append((struct.pack(">hh", 0, ctype), encode_message(schema, 0, values)))
    recs.append((struct.pack(">hh", 0, LEADER_CHANGE), LEADER_CHANGE_V0))
    lines = kafka_dump_lines(tmp_path, recs, "--cluster-metadata-decoder", control=True)
    assert len(lines) == len(recs)
    for offset, ((key, value), line) in enumerate(zip(recs, lines)):
        ctype = struct.unpack_from(">h", key, 2)[0]
        assert line == (f"| offset: {offset} CreateTime: 1000 keySize: 4 valueSize: {len(value)}"
                        f" sequence: -1 headerKeys: []" + render_control_value(ctype, value))
