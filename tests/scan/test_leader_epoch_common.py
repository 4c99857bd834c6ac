"""The leader-epoch-checkpoint of the common form is read at once
(checkpoint._common_leader_epoch_checkpoint): the same Checkpoint as the frame's line reader
gives, and any other file (or a refused one) is left to that reader, which locates what it
refuses, on generated files near the common form."""

from __future__ import annotations

import random

import pytest

from logscan.format import checkpoint as C


def _read(reader, data):
    try:
        return reader(data)
    except C.CheckpointError as e:
        return ("error", str(e), e.position, e.line)


def _file(rng: random.Random) -> bytes:
    n = rng.randrange(0, 6)
    lines = ["0", str(n)]
    for _ in range(n):
        epoch = rng.choice([0, 1, rng.randrange(1 << 31), (1 << 31) - 1, 1 << 31, 99999999999])
        offset = rng.choice([0, rng.randrange(1 << 63), -1, (1 << 63) - 1, 1 << 63, -(1 << 63)])
        lines.append(f"{epoch} {offset}")
    text = "\n".join(lines) + rng.choice(["\n", "", "\n\n"])
    for _ in range(rng.choice([0, 0, 0, 1, 2])):   # a damaged byte: a space, \r, a sign, a letter, a zero
        at = rng.randrange(len(text) + 1)
        text = text[:at] + rng.choice([" ", "\r", "+", "-", "x", "0", "\n", "\t", "é"]) + text[at:]
    return text.encode("utf-8")


@pytest.mark.parametrize("seed", range(20))
def test_generated_leader_epoch_files_read_as_the_frame_reads_them(seed):
    rng = random.Random(seed)
    read_at_once = 0
    for _ in range(200):
        data = _file(rng)
        assert _read(C.parse_leader_epoch_checkpoint, data) == _read(C._parse_leader_epoch_frame, data), data
        read_at_once += C._common_leader_epoch_checkpoint(data) is not None
    assert read_at_once >= 5   # (the common form is among them)


def test_the_common_form_is_read_at_once_and_others_are_left_to_the_frame():
    got = C._common_leader_epoch_checkpoint(b"0\n2\n0 0\n3 120\n")
    assert got == C.Checkpoint(0, 2, (C.LeaderEpochEntry(3, 4, 0, 0), C.LeaderEpochEntry(4, 8, 3, 120)))
    assert got == C._parse_leader_epoch_frame(b"0\n2\n0 0\n3 120\n")
    for other in (b"0\n1\n+1 5\n", b"0\n1\n1  5\n", b"0\r\n1\r\n1 5\r\n", b"0\n2\n1 5\n", b"1\n0\n",
                  b"0\n1\n2147483648 5\n", b"0\n1\n1 9223372036854775808\n"):
        assert C._common_leader_epoch_checkpoint(other) is None, other
    assert C._common_leader_epoch_checkpoint(b"") is None and C.parse_leader_epoch_checkpoint(b"") == C.Checkpoint(None, None, ())
