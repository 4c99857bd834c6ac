"""The scan's per-batch facts and header columns: compiled.fact_v2 and compiled.header_v2
(batch_fact's and header_values' common steps where the module is built) held to the
references (the same functions in pure Python) over every attribute bit, codec id, sequence
edge and byte of a marker's record, and the windowed reads (``base``) held to reads of the
whole buffer."""

import itertools
from pathlib import Path

import pytest

from logscan.format import compiled, compression
from logscan.format.batch import (INT32_MAX, NO_SEQUENCE, RECORD_BATCH_OVERHEAD, RecordBatch, decode_batch_header,
                                   first_record, iter_records)
from logscan.format.errors import DecodeError
from logscan.format.logfile import walk_batches
from logscan.scan.replica import ReplicaRead, batch_fact, read_segment
from logscan.scan.rows import header_values
from logscan.state.facts import BatchFact
from logscan.testing.encoder import Rec, encode_batch, end_txn_marker_batch
from tools.fuzz.targets import reference_fact

RECORDS = [Rec(b"value-%d" % i, key=b"k%d" % i, timestamp=1_700_000_000_000 + i) for i in range(3)]


@pytest.fixture
def header_v2():
    if compiled.header_v2 is None:
        pytest.skip("logscan._native's header_v2 is not in use (LOGSCAN_PURE_PYTHON, or a build before it)")
    return compiled.header_v2


@pytest.fixture
def fact_v2():
    if compiled.fact_v2 is None:
        pytest.skip("logscan._native's fact_v2 is not in use (LOGSCAN_PURE_PYTHON, or a build before it)")
    return compiled.fact_v2


def compiled_fact(buf, batch, base=0) -> tuple:
    """batch_fact as the scan runs it (through fact_v2), and its findings."""
    findings: list = []
    return batch_fact(buf, batch, "", findings, base), findings


def reference_header(batch) -> tuple:
    """header_values in pure Python, the reference."""
    with compiled.pure_python():
        return header_values(batch)


SEQUENCES = [NO_SEQUENCE, 0, 7, INT32_MAX - 2, INT32_MAX, -7, -(2**31)]


@pytest.mark.parametrize("base_sequence", SEQUENCES)
@pytest.mark.parametrize("last_offset_delta", [0, 2, 5, INT32_MAX, -3])
def test_compiled_fact_sequences_are_the_references(fact_v2, base_sequence, last_offset_delta):
    raw = encode_batch(RECORDS, producer_id=11, producer_epoch=2, base_sequence=base_sequence,
                       last_offset_delta=last_offset_delta, base_offset=1000)
    batch, _ = decode_batch_header(raw, 0, verify_crc=False)
    assert fact_v2(raw, batch, 0, BatchFact) is not None  # the compiled step's own
    assert compiled_fact(raw, batch) == reference_fact(raw, batch)
    assert type(batch_fact(raw, batch, "f", [])) is BatchFact


@pytest.mark.parametrize("attributes", range(0x80))
def test_facts_and_flags_for_every_attribute_bit(attributes):
    # Every codec id (unknown ones included), timestamp type, transactional, control and
    # delete-horizon bit; the header is decoded without CRC so a bad combination still reads.
    raw = encode_batch(RECORDS, producer_id=11, producer_epoch=2, base_sequence=4, partition_leader_epoch=9,
                       extra_attributes=attributes)
    batch, _ = decode_batch_header(raw, 0, verify_crc=False)
    got = compiled_fact(raw, batch)
    assert (got[0].is_transactional, got[0].is_control) == (bool(attributes & 0x10), bool(attributes & 0x20))
    if compiled.fact_v2 is not None:
        assert got == reference_fact(raw, batch)


@pytest.mark.parametrize("commit", [True, False])
def test_marker_fact_from_a_window_matches_the_whole_buffer(commit):
    lead = encode_batch(RECORDS, transactional=True, producer_id=5, producer_epoch=1, base_sequence=0)
    marker = end_txn_marker_batch(commit=commit, coordinator_epoch=13, producer_id=5, producer_epoch=1,
                                  base_offset=3, timestamp=1_700_000_000_500)
    log = lead + marker
    whole, _ = decode_batch_header(log, len(lead))
    expected = reference_fact(log, whole)
    assert expected[0].control_type == ("COMMIT" if commit else "ABORT") and expected[0].coordinator_epoch == 13
    # The same batch seen through a window that starts at byte ``base`` of the log, by the
    # compiled step (where built) and the reference.
    for base in (1, len(lead) - 5, len(lead)):
        window = memoryview(log)[base:]
        assert compiled_fact(window, whole, base) == reference_fact(window, whole, base) == expected


def test_windowed_records_equal_the_whole_buffer_and_errors_stay_located_in_the_log():
    for codec in (compression.NONE, compression.GZIP, compression.ZSTD):
        log = encode_batch(RECORDS) + encode_batch(RECORDS, base_offset=3, codec=codec)
        second, _ = decode_batch_header(log, len(encode_batch(RECORDS)))
        base = second.position - 17
        assert (list(iter_records(memoryview(log)[base:], second, base=base))
                == list(iter_records(log, second)))
    # A record count larger than the records: Kafka's premature EOF, located in the log.
    lead = encode_batch(RECORDS)
    bad = encode_batch(RECORDS, base_offset=3, records_count=5)
    log = lead + bad
    batch, _ = decode_batch_header(log, len(lead))
    with pytest.raises(DecodeError) as whole:
        list(iter_records(log, batch))
    with pytest.raises(DecodeError) as windowed:
        list(iter_records(memoryview(log)[len(lead) - 9:], batch, base=len(lead) - 9))
    assert windowed.value.position == whole.value.position >= len(lead)
    assert str(windowed.value) == str(whole.value)


def test_read_segment_counts_match_its_facts(tmp_path):
    """The walk keeps its counts in locals; ``out`` must still say what the facts say."""
    batches = [encode_batch(RECORDS, base_offset=3 * i, producer_id=1, producer_epoch=0, base_sequence=3 * i,
                            max_timestamp=ts) for i, ts in enumerate([50, 20, 90, 10])]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(batches))
    read = read_segment(str(path), 0, is_txn_log=False)
    assert read.batches == len(read.facts) == 4
    assert read.max_timestamp == 90 and read.first_offset == 0
    out, seen = ReplicaRead(), []
    read_segment(str(path), 0, is_txn_log=False, out=out,
                 on_fact=lambda fact, _: seen.append((out.batches, out.max_timestamp)))
    assert seen == [(1, 50), (2, 50), (3, 90), (4, 90)]  # current at each fact


def test_compiled_header_values_are_the_references(header_v2):
    """compiled.header_v2 gives the reference's header columns for every value of the
    attributes' low byte (each codec id, unknown ones included, timestamp type, delete
    horizon), with and without a valid CRC; a wrong call is refused."""
    raw = encode_batch(RECORDS, partition_leader_epoch=9, base_timestamp=1_700_000_000_000)
    batch, _ = decode_batch_header(raw, 0)
    for attributes, crc_valid in itertools.product(range(0x100), (True, False)):
        header = batch._replace(attributes=attributes, crc_valid=crc_valid)
        assert header_values(header) == reference_header(header), attributes
    assert reference_header(batch._replace(attributes=0x4B))[2:7] == ("lz4", "LogAppendTime", 9, 1_700_000_000_000,
                                                                     1_700_000_000_000)
    with pytest.raises(ValueError):
        header_v2(batch[:-1], (), ())


def _first_by_iteration(buf, batch, base=0):
    try:
        return next(iter_records(buf, batch, base=base), None)
    except DecodeError as e:
        return type(e), e.position, str(e)


def _first(buf, batch, base=0):
    try:
        return first_record(buf, batch, base=base)
    except DecodeError as e:
        return type(e), e.position, str(e)


def _marker_variants():
    marker = end_txn_marker_batch(commit=True, coordinator_epoch=4, producer_id=9, producer_epoch=1, timestamp=77)
    yield "marker", marker
    for codec in (compression.GZIP, compression.LZ4, compression.ZSTD):
        yield f"codec {codec}", encode_batch(RECORDS, control=True, codec=codec)
    yield "count past the records", encode_batch(RECORDS[:1], control=True, records_count=3)
    yield "records past the count", encode_batch(RECORDS, control=True, records_count=1)
    yield "no records", encode_batch([], control=True)
    yield "negative count", encode_batch(RECORDS, control=True, records_count=-2)
    yield "truncated", marker + b"<cut>"  # the read's buffer ends 3 bytes into the batch
    body = bytearray(marker)
    body[61] = 0x7F  # the first record's length varint: past the batch's end
    yield "bad record length", bytes(body)


@pytest.mark.parametrize("name,raw", list(_marker_variants()), ids=[n for n, _ in _marker_variants()])
def test_first_record_is_the_first_of_the_iteration(name, raw):
    """first_record reads what next(iter_records(...)) reads, the same record or the same
    located error, and no further: bytes after the first record are Kafka's concern only
    when it iterates on."""
    lead = encode_batch(RECORDS)
    log = lead + raw
    batch, _ = decode_batch_header(log.removesuffix(b"<cut>"), len(lead), verify_crc=False)
    if log.endswith(b"<cut>"):
        log = log[:-8]
    assert _first(log, batch) == _first_by_iteration(log, batch)
    base = len(lead) - 7
    assert _first(memoryview(log)[base:], batch, base) == _first_by_iteration(log, batch)


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"




@pytest.mark.parametrize("log_append_time", [None, 1_700_000_009_000])
@pytest.mark.parametrize("commit", [True, False])
def test_every_byte_of_a_marker_record_changed_gives_the_decoders_fact(fact_v2, commit, log_append_time):
    """fact_v2 takes only what the record decoder reads the same way: each byte of the
    marker's record set to each value gives the fact (or the UNREADABLE one, and the findings)
    the reference gives."""
    marker = end_txn_marker_batch(commit=commit, coordinator_epoch=13, producer_id=5, producer_epoch=1,
                                  base_offset=40, timestamp=1_700_000_000_500, log_append_time=log_append_time)
    at = RECORD_BATCH_OVERHEAD  # the record, after the batch's header
    batch, _ = decode_batch_header(marker, 0)
    fact = fact_v2(marker, batch, 0, BatchFact)  # the broker's layout is taken
    assert (fact.control_type, fact.coordinator_epoch) == ("COMMIT" if commit else "ABORT", 13)
    taken = 0
    for i in range(at, len(marker)):
        for value in range(256):
            raw = bytearray(marker)
            raw[i] = value
            batch, _ = decode_batch_header(bytes(raw), 0, verify_crc=False)
            assert compiled_fact(raw, batch) == reference_fact(raw, batch), (i - at, value)
            taken += fact_v2(raw, batch, 0, BatchFact) is not None
    # The one-byte deltas, the epoch's bytes and the versions' non-negative values are taken.
    assert taken > 256 * 4


def test_marker_records_of_another_layout_go_to_the_decoder(fact_v2):
    marker = end_txn_marker_batch(commit=True, coordinator_epoch=3, producer_id=5, producer_epoch=1, timestamp=10)
    batch, _ = decode_batch_header(marker, 0)
    # The buffer ends inside the record, or the batch's bytes start one byte later.
    assert fact_v2(marker[:-1], batch, 0, BatchFact) is None
    assert fact_v2(marker[1:], batch, 0, BatchFact) is None
    assert fact_v2(b"\x00" + marker, batch, 0, BatchFact) is None
    for codec in (compression.GZIP, compression.ZSTD):
        raw = encode_batch([Rec(b"\x00\x00\x00\x00\x00\x03", b"\x00\x00\x00\x01", (), 10)],
                           control=True, transactional=True, codec=codec)
        batch, _ = decode_batch_header(raw, 0)
        assert fact_v2(raw, batch, 0, BatchFact) is None
        fact, findings = compiled_fact(raw, batch)
        assert (fact, findings) == reference_fact(raw, batch)
        assert (fact.control_type, fact.coordinator_epoch) == ("COMMIT", 3)
    # A timestamp delta of two bytes, a header, a longer value: the decoder's reading.
    for rec in (Rec(b"\x00\x00\x00\x00\x00\x03", b"\x00\x00\x00\x01", (), 10 + 300),
                Rec(b"\x00\x00\x00\x00\x00\x03", b"\x00\x00\x00\x01", (("h", b"v"),), 10),
                Rec(b"\x00\x01\x00\x00\x00\x03\x00", b"\x00\x00\x00\x01", (), 10)):
        raw = encode_batch([rec], control=True, transactional=True, base_timestamp=10)
        batch, _ = decode_batch_header(raw, 0)
        assert fact_v2(raw, batch, 0, BatchFact) is None
        fact, findings = compiled_fact(raw, batch)
        assert (fact, findings) == reference_fact(raw, batch) and fact.control_type == "COMMIT"


def test_the_compiled_step_refuses_what_it_cannot_read(fact_v2):
    raw = encode_batch(RECORDS)
    batch, _ = decode_batch_header(raw, 0)
    with pytest.raises(TypeError):
        fact_v2(raw, batch, 0, dict)
    with pytest.raises(ValueError):
        fact_v2(raw, batch[:-1], 0, BatchFact)
    # A last offset past 64 bits, a field that is not an int64: the reference's (Python's
    # ints), not a wrapped value or an error.
    for big in (batch._replace(base_offset=2**63 - 1), batch._replace(max_timestamp=2**64)):
        assert fact_v2(raw, big, 0, BatchFact) is None
        assert compiled_fact(raw, big) == reference_fact(raw, big)
    # A marker whose bytes are not where the buffer is, or in a buffer the step does not read.
    marker = end_txn_marker_batch(commit=True, coordinator_epoch=3, producer_id=5, producer_epoch=1, timestamp=10)
    batch, _ = decode_batch_header(marker, 0)
    for buf, base in ((marker, -(2**63)), (marker, 2**62), (memoryview(marker * 2)[::2], 0)):
        assert fact_v2(buf, batch, base, BatchFact) is None


def test_a_real_brokers_batches_are_read_by_the_compiled_step(fact_v2):
    """Every v2 batch in the fixture clusters (written by Kafka 4.1.1 brokers, TV1 and TV2
    markers, KRaft control records): the fact equals the reference's, and the brokers' data
    and COMMIT/ABORT batches are all read by the compiled step."""
    markers = refused = 0
    for path in sorted(FIXTURES.glob("*/brokers/*/*/*.log")):
        raw = path.read_bytes()
        for batch in walk_batches(raw):
            if type(batch) is not RecordBatch or not batch.crc_valid:
                continue
            got = compiled_fact(raw, batch)
            assert got == reference_fact(raw, batch), (path, batch.position)
            if got[0].control_type in ("COMMIT", "ABORT", None):
                markers += got[0].control_type is not None
                refused += fact_v2(raw, batch, 0, BatchFact) is None
    assert markers > 50 and refused == 0
