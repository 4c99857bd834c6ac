"""One fuzz target per decoder of ``logscan.format``, each stating its invariant.

A target takes arbitrary bytes and feeds them to its decoders the way logscan's readers do.
The contract under test (``logscan/format/errors.py``, /work/shared/STYLE.md): a decoder
returns a value or raises a ``DecodeError`` (``TruncatedInput``, ``CorruptRecordError``,
``CrcMismatch``, ``UnknownMagic``, ``UnknownVersion``, ``CompressionError`` and their
subclasses) whose position lies inside the input. Any other exception escapes the target
and is a bug; so is a broken invariant, raised as ``InvariantError``.

The same table drives the atheris fuzzer (``tools/fuzz/fuzz.py``), the property-based tests
(``tests/robust/test_decoder_properties.py``) and the regression inputs
(``tools/fuzz/crashes/<target>-*``).
"""

from __future__ import annotations

import struct
from typing import Callable

from logscan.format import checkpoint, compiled, compression, control, index, logfile, raft, snapshot
from logscan.format.batch import RecordBatch, decode_batch_header, iter_records
from logscan.format.errors import DecodeError
from logscan.format.legacy import decode_legacy_entry, iter_legacy_records
from logscan.format.logfile import (BufferWindows, OverlongEntry, find_entry, find_next_entry, walk_batches,
                                    walk_windows)
from logscan.format.metadata import decode_metadata_record, render_metadata_payload
from logscan.format.offsets import decode_offsets_record, render_offsets_key_payload
from logscan.format import txnlog as txnlog_format  # the target below is named txnlog
from logscan.format.txnlog import render_txnlog_key_payload

#: Decompression cap for fuzzing: small, so a bomb costs microseconds, not seconds.
FUZZ_MAX_DECOMPRESSED = 1 << 20


class InvariantError(AssertionError):
    """A decoder returned, but what it returned breaks its contract."""


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantError(message)


def _located(err: DecodeError, size: int) -> None:
    """A decode error names a byte of the input (or -1/0 for the whole input)."""
    _check(isinstance(err.position, int) and -1 <= err.position <= max(size, 0),
           f"{type(err).__name__} at position {err.position} outside an input of {size} bytes: {err}")
    _check(bool(err.message), f"{type(err).__name__} without a message")


def _split(data: bytes) -> tuple[bytes | None, bytes | None]:
    """Key and value for record-level targets: the first byte says where to cut; 0xFF makes
    the value null, 0xFE the key."""
    if not data:
        return None, None
    cut, rest = data[0], data[1:]
    if cut == 0xFF:
        return rest, None
    if cut == 0xFE:
        return None, rest
    cut = min(cut, len(rest))
    return rest[:cut], rest[cut:]


# --- targets ---------------------------------------------------------------------------------

def batch(data: bytes) -> None:
    """A v2 batch at byte 0: header, CRC, then every record (decompressed under a cap)."""
    try:
        b, next_pos = decode_batch_header(data, 0)
    except DecodeError as e:
        _located(e, len(data))
        return
    _check(next_pos == b.size_in_bytes <= len(data), f"next_pos {next_pos} for a batch of {b.size_in_bytes}")
    seen = 0
    try:
        for record in iter_records(data, b, max_decompressed=FUZZ_MAX_DECOMPRESSED):
            seen += 1
            _check(record.offset == b.base_offset + record.offset_delta, "record offset != base + delta")
    except DecodeError as e:
        _located(e, len(data))
    _check(seen <= max(b.records_count, 0), f"{seen} records from a count of {b.records_count}")


def legacy(data: bytes) -> None:
    """A v0/v1 log entry at byte 0 and, for a compressed wrapper, its inner messages."""
    try:
        entry, next_pos = decode_legacy_entry(data, 0)
    except DecodeError as e:
        _located(e, len(data))
        return
    _check(next_pos == entry.size_in_bytes <= len(data), "legacy entry runs past its input")
    try:
        for message in iter_legacy_records(entry, max_decompressed=FUZZ_MAX_DECOMPRESSED):
            _check(message.magic in (0, 1), f"inner message of magic {message.magic}")
    except DecodeError as e:
        _located(e, len(data))


def walk(data: bytes) -> None:
    """A whole segment: entries and findings in file order, inside the buffer, and the walk
    ends (each step moves forward)."""
    last_start, last_end = -1, 0
    for item in walk_batches(data):
        if isinstance(item, OverlongEntry):
            # the previous entry's size was not believed: the walk resumes inside it
            _check(last_start < item.resume_at < last_end, f"resume at {item.resume_at} is not "
                   f"inside the previous entry [{last_start}, {last_end})")
            last_end = item.resume_at
        if isinstance(item, DecodeError):
            _located(item, len(data))
            continue
        _check(item.position >= last_end, f"entry at {item.position} overlaps the previous one ending {last_end}")
        last_start = item.position
        _check(item.next_position <= len(data), "entry runs past the buffer")
        last_end = item.next_position


def _check_same(got: list, want: list, what: str) -> None:
    """Two walks' items are the same; if not, say where they first differ."""
    if got != want:
        first = next(i for i, (a, b) in enumerate(zip(got + [None], want + [None])) if a != b)
        raise InvariantError(f"{what} at item {first}: {got[first:first + 1]} against {want[first:first + 1]}")


def windows(data: bytes) -> None:
    """A segment read through windows (walk_windows, find_entry; the first three bytes pick
    the window size, the window alignment and a search start) gives exactly the entries,
    findings and resync positions of one walk of the whole segment."""
    if len(data) < 3:
        return
    size, granularity, at = 64 + 8 * data[0], 1 + data[1] % 64, data[2]
    data = data[3:]
    whole = [exact_key(x) for x in walk_batches(data)]
    got = [exact_key(x) for x, _ in walk_windows(BufferWindows(data, granularity), window=size)]
    _check_same(got, whole, f"windows of {size} bytes (alignment {granularity}) differ from one walk")
    start = at * len(data) // 256
    found, expected = find_entry(BufferWindows(data, granularity), start, window=size), find_next_entry(data, start, len(data))
    _check(found == expected, f"find_entry from {start} through {size}-byte windows: {found}, one search: {expected}")
    before = start + 1 + (len(data) - start) * size // 2112  # a search bounded as _entry_inside's is
    found = find_entry(BufferWindows(data, granularity), start, before=before, window=size)
    expected = find_next_entry(data, start, len(data), before=before)
    _check(found == expected, f"find_entry from {start} before {before} through {size}-byte windows: {found}, "
                              f"one search: {expected}")


def exact_key(item) -> tuple:
    """An item of a walk as a comparable key: an entry whole, a finding by every attribute."""
    if isinstance(item, DecodeError):
        return (type(item).__name__, item.position, item.message, item.expected, item.found,
                getattr(item, "length", None), getattr(item, "resume_at", None))
    if isinstance(item, logfile.WindowEnd):
        return type(item).__name__, item.position, item.needed
    return type(item).__name__, item


def records_key(buf, batch, **kw) -> list:
    """A batch's records as iter_records gives them (each as a plain tuple), then the error it
    stops at, if any (``("error", *exact_key(error))``)."""
    out = []
    try:
        for record in iter_records(buf, batch, **kw):
            out.append(tuple(record))
    except DecodeError as e:
        out.append(("error", *exact_key(e)))
    return out


def compiled_facts_key(arrays: dict, count: int) -> list[tuple]:
    """compiled.batch_facts' columns as rows, a tuple per batch (FACT_COLUMNS' order)."""
    return list(zip(*(arrays[name].to_pylist() for name, _ in compiled.FACT_COLUMNS))) if count else []


def reference_facts_key(buf, batches: list, base: int = 0) -> list[tuple]:
    """The reference's facts of v2 ``batches`` read from ``buf`` (a window of the log from byte
    ``base``), as compiled_facts_key gives the compiled rows: each header's fields and what
    logscan.scan.replica.batch_fact makes of the batch."""
    rows = []
    for b in batches:
        f, _ = reference_fact(buf, b, base)
        type_id = {"ABORT": control.ABORT, "COMMIT": control.COMMIT, None: -1}.get(f.control_type, f.control_type)
        rows.append((b.position, b.base_offset, f.last_offset, b.partition_leader_epoch, b.attributes,
                     b.base_timestamp, f.max_timestamp, f.producer_id, f.producer_epoch, f.base_sequence,
                     f.last_sequence, f.records_count, f.size_in_bytes, type_id, f.coordinator_epoch,
                     f.marker_timestamp))
    return rows


def reference_fact(buf, batch: RecordBatch, base: int = 0) -> tuple:
    """logscan.scan.replica.batch_fact of ``batch`` in pure Python, the reference, and the
    findings it made."""
    from logscan.scan.replica import batch_fact

    findings: list = []
    with compiled.pure_python():
        return batch_fact(buf, batch, "", findings, base), findings


def _check_facts(data: bytes, end: int, base: int, start: int = 0) -> None:
    """The compiled facts of the run from ``start`` (compiled.facts_v2: in bulk, as columns, and
    as BatchFact objects; asked with a ``few`` between, the one or the other by its rows) are
    the reference's facts of the Python walk's first entries from there, each a whole v2
    batch with a valid CRC, and the run stops where they end."""
    from logscan.state.facts import BatchFact

    arrays, count, stop = compiled.batch_facts(data, start, end, base, 1 << 62)
    with compiled.pure_python():
        walk = walk_batches(data, start, end, base=base)
        entries = [item for item, _ in zip(walk, range(count))]
        walk.close()
    _check(all(type(b) is RecordBatch and b.crc_valid for b in entries) and len(entries) == count,
           f"the compiled facts from {start} cover {count} batches, the walk's first entries are {entries[:count]}")
    _check(stop == (entries[-1].position - base + entries[-1].size_in_bytes if entries else start),
           f"the compiled facts from {start} stop at {stop}")
    _check_same(compiled_facts_key(arrays, count), reference_facts_key(data, entries, base),
                f"the compiled facts from {start} differ from the reference's")
    reference = [reference_fact(data, b, base)[0] for b in entries]
    for few in (1 << 62, count + 1, max(count, 1)):
        facts, n, at, _ = compiled.facts_v2(data, start, end, base, 1 << 62, few, BatchFact)
        _check((n, at) == (count, stop), f"the compiled facts from {start} (few {few}) stop at {at} after {n} "
                                         f"batches, the columns at {stop} after {count}")
        if n < few:
            _check(type(facts) is list, f"the compiled facts of {n} batches (few {few}) are not objects")
            _check_same(facts, reference, f"the compiled fact objects from {start} differ from the reference's")
        else:
            _check(type(facts) is tuple, f"the compiled facts of {n} batches (few {few}) are not columns")


def native(data: bytes) -> None:
    """The compiled common steps (``logscan._native``) against pure Python: the walk's entries
    and findings in the same order, field for field, each v2 batch's records (or the error
    they stop at) from the compiled record step and the Python loop, each v2 batch's fact
    (batch_fact through compiled.fact_v2, and its findings) and header columns
    (rows.header_values through compiled.header_v2) against the reference's, and the
    compiled facts (compiled.facts_v2, as columns and as objects) of the run of batches from the
    start and from each entry the walk found against the reference's. The first byte picks the
    walk's options: no CRC checks, no resync, a cut, a window of a longer log (``more``, at a
    shifted ``base``), and how many bytes short of the end the walk stops."""
    from logscan.scan.replica import batch_fact
    from logscan.scan.rows import header_values

    if len(data) < 1 or compiled.walk_v2 is None:
        return
    flags, data = data[0], data[1:]
    options = dict(verify_crc=not flags & 1, resync=not flags & 2, cut=bool(flags & 4),
                   more=bool(flags & 8), base=(flags & 8) * 1000)
    end = max(len(data) - (flags >> 4) * 7, 0)
    items = list(walk_batches(data, 0, end, **options))
    got = [exact_key(x) for x in items]
    with compiled.pure_python():
        python = [exact_key(x) for x in walk_batches(data, 0, end, **options)]
    _check_same(got, python, f"the compiled walk ({options}, end {end}) differs from the Python walk")
    for item in items:
        if type(item) is RecordBatch:
            kw = dict(base=options["base"], max_decompressed=FUZZ_MAX_DECOMPRESSED)
            got = records_key(data, item, **kw)
            with compiled.pure_python():
                python = records_key(data, item, **kw)
            _check_same(got, python, f"the compiled record step differs from the Python loop in the batch at "
                                     f"{item.position}")
            findings: list = []
            got = [batch_fact(data, item, "", findings, options["base"]), findings]
            _check_same(got, list(reference_fact(data, item, options["base"])),
                        f"the compiled fact (fact_v2) differs from the reference's of the batch at {item.position}")
            got = header_values(item)
            with compiled.pure_python():
                _check(got == header_values(item), f"the compiled header columns (header_v2) of the batch at "
                                                   f"{item.position} differ from the reference's: {got}")
    # From the start, and from each entry the walk found (after damage, a resync, a legacy
    # entry): every run's start a scan may reach.
    for start in sorted({0, *(getattr(item, "position", 0) - options["base"] for item in items[:16])}):
        if 0 <= start <= end:
            _check_facts(data, end, options["base"], start)


#: Control types a history's control batches take (history_from_bytes): markers, an emptied
#: batch (None) and types the replay refuses.
_HISTORY_CONTROL = ("COMMIT", "ABORT", None, "LEADER_CHANGE", "UNREADABLE")


def history_from_bytes(data: bytes) -> list:
    """A replica's batches (BatchFacts, offset order) spelled by ``data``, three bytes a batch:
    the producer (one of three, or none), the kind (transactional or not, data or one of
    _HISTORY_CONTROL), how the producer's epoch and the marker's coordinator epoch move (mostly
    up or not at all, sometimes down), the records. Every unusual case of the replay is a byte
    away from a common one."""
    from logscan.state.facts import BatchFact

    epochs, coordinators, offset, out = {}, {}, 0, []
    for i in range(0, len(data) - 2, 3):
        a, b, c = data[i:i + 3]
        pid = (-1, 10, 11, 12)[a & 3]
        kind = (a >> 2) & 7
        epoch = epochs[pid] = epochs.get(pid, b & 3) + (0, 0, 0, 1, 1, 2, -1, 0)[b >> 5]
        coordinator = coordinators[pid] = coordinators.get(pid, 0) + (0, 0, 1, -1)[c >> 6]
        count = 1 + (c & 7)
        control = kind >= 3
        control_type = _HISTORY_CONTROL[kind - 3] if control else None
        marker = control_type in ("COMMIT", "ABORT")
        last = offset + (0 if control else count - 1)
        out.append(BatchFact(offset, last, pid, epoch if pid >= 0 else -1, -1 if control else offset % 100,
                             -1 if control else offset % 100 + count - 1, 1000 + offset, kind != 0 and pid >= 0,
                             control, 0 if control and control_type is None else 1 if control else count,
                             61 + count, control_type, coordinator if marker else -1,
                             900 + offset if marker else -1))
        offset = last + 1 + (b & 1)
    return out


def random_history(rng, n: int) -> list:
    """history_from_bytes of ``n`` random batches."""
    return history_from_bytes(rng.randbytes(3 * n))


def seeded_manager(seed, floor=None):
    """A ProducerStateManager with high-watermark floor ``floor``, seeded (seed is not None)
    with snapshot entries drawn from ``seed``: producers 10-12 with epochs, coordinator epochs,
    kept batches and open transactions of all kinds."""
    import random

    from logscan.state.producer_state import BatchMetadata, ProducerStateEntry, ProducerStateManager

    psm = ProducerStateManager(floor)
    if seed is None:
        return psm
    rng = random.Random(seed)
    entries = []
    for pid in rng.sample([10, 11, 12], rng.randrange(4)):
        entry = ProducerStateEntry(pid, rng.randrange(-1, 4), rng.randrange(-1, 3), rng.randrange(500),
                                   rng.choice([None, rng.randrange(10)]))
        for _ in range(rng.randrange(7)):
            entry.batches.append(BatchMetadata(rng.randrange(50), rng.randrange(50), 0, rng.randrange(500)))
        entries.append(entry)
    psm.seed(entries, 0)
    return psm


def replay_state(psm) -> tuple:
    """All a ProducerStateManager holds after a replay, comparable: its producers in order
    (every field, the kept batches), completed transactions, anomalies, map end offset and
    the producers a batch changed."""
    return ([(pid, e.producer_epoch, e.coordinator_epoch, e.last_timestamp, e.current_txn_first_offset,
              list(e.batches)) for pid, e in psm.producers.items()],
            psm.completed, psm.anomalies, psm.map_end_offset, psm._replayed)


def spans_state(facts: list, tables, seed=None, start: int = 0, floor=None) -> tuple:
    """A Replay (seeded at ``start`` with seeded_manager(seed)'s entries) fed ``facts`` a row at a
    time (``tables`` None) or ``tables`` (fact tables) in bulk: the spans it closed, in order,
    the spans still open, and its producers (replay_state)."""
    from logscan.state.spans import Replay

    closed = []
    entries = None if seed is None else (list(seeded_manager(seed).producers.values()), start)
    r = Replay(entries, closed.append, high_watermark_floor=floor)
    if tables is None:
        for fact in facts:
            r.feed(fact)
    else:
        for table in tables:
            r.feed_table(table)
    return closed, r.open_spans, replay_state(r.producers)


def replay(data: bytes) -> None:
    """The replay over a fact table in bulk (ProducerStateManager.append_table, and with the
    spans, Replay.feed_table) against append() and feed() row by row (the reference), for the
    history the bytes spell (history_from_bytes): the first byte picks the seed state, the
    high-watermark floor, where the table is cut in two and where a seeded replay starts."""
    from logscan.scan.replica import facts_to_table

    if len(data) < 1:
        return
    flags, facts = data[0], history_from_bytes(data[1:])
    seed, floor = (flags & 3 or None), (None, 0, 7, 40)[(flags >> 2) & 3]
    cut = min(len(facts), flags >> 4)
    reference, bulk = seeded_manager(seed, floor), seeded_manager(seed, floor)
    for fact in facts:
        reference.append(fact)
    for part in (facts[:cut], facts[cut:]):
        bulk.append_table(facts_to_table(part, [0] * len(part)))
    _check(replay_state(bulk) == replay_state(reference),
           f"the bulk replay differs from append(): {replay_state(bulk)} against {replay_state(reference)}")
    tables = [facts_to_table(part, [0] * len(part)) for part in (facts[:cut], facts[cut:])]
    start = (flags >> 2) & 7
    _check(spans_state(facts, tables, seed, start, floor) == spans_state(facts, None, seed, start, floor),
           "the bulk replay's spans (Replay.feed_table) differ from feed()'s")


def control_record(data: bytes) -> None:
    """A control record's key, and its value as an end-transaction marker or KRaft record."""
    key, value = _split(data)
    try:
        k = control.decode_control_key(key)
    except DecodeError as e:
        _located(e, len(data))
        return
    try:
        if k.is_transaction_marker:
            control.decode_end_txn_marker(k, value)
        else:
            raft.render_control_value(k.type_id, value)
    except DecodeError as e:
        _located(e, len(data))


def txnlog(data: bytes) -> None:
    """A __transaction_state record: typed view (the compiled step for the common layout,
    compiled.txn_entry_v2, when it takes the record, gives the generic reader's entry, and
    takes no record that reader refuses) and kafka-dump-log's text."""
    key, value = _split(data)
    native = compiled.txn_entry_v2
    fast = (native(key, value, txnlog_format.TransactionLogEntry, txnlog_format._TAGGED_DEFAULTS,
                   txnlog_format._TAGGED) if native is not None else None)
    try:
        entry = txnlog_format.read_generic(key, value)
        _check(entry.is_tombstone == (value is None), "tombstone iff the value is null")
        _check(fast is None or fast == entry, "the compiled step gives the generic reader's entry")
    except DecodeError as e:
        _check(fast is None, "the compiled step takes no record the generic reader refuses")
        _located(e, len(data))
    _render(render_txnlog_key_payload, key, value)


def offsets(data: bytes) -> None:
    """A __consumer_offsets record: decoded and as kafka-dump-log's text."""
    key, value = _split(data)
    try:
        decode_offsets_record(key, value)
    except DecodeError as e:
        _located(e, len(data))
    _render(render_offsets_key_payload, key, value)


def _render(render: Callable, key, value) -> None:
    """kafka-dump-log's text for a coordinator record never fails, except for a missing key
    (Kafka's tool aborts there)."""
    try:
        key_text, payload = render(key, value, 7)
    except DecodeError:
        _check(key is None, "rendering failed for a record with a key")
        return
    _check(isinstance(key_text, str), "no key text")


def metadata(data: bytes) -> None:
    """A __cluster_metadata record value (frame version, api key, version, message)."""
    try:
        decode_metadata_record(data)
    except DecodeError as e:
        _located(e, len(data))
    text = render_metadata_payload(data, 7)
    _check(isinstance(text, str), "render_metadata_payload returned no text")


def producer_snapshot(data: bytes) -> None:
    """A whole .snapshot file; a decoded one accounts for every byte."""
    try:
        snap = snapshot.decode_producer_snapshot(data)
    except snapshot.SnapshotCrcMismatch as e:
        snap = e.snapshot
    except DecodeError as e:
        _located(e, len(data))
        return
    _check(snapshot.ENTRIES_OFFSET + snapshot.ENTRY_SIZE * len(snap.entries) == len(data),
           "snapshot entries do not account for the file")


def indexes(data: bytes) -> None:
    """The same bytes as an .index, a .timeindex and a .txnindex, with their sanity checks."""
    base = struct.unpack(">q", data[:8])[0] if len(data) >= 8 else 0
    for _ in index.iter_offset_index(data, base):
        pass
    for _ in index.iter_time_index(data, base):
        pass
    index.offset_index_sanity_findings(data, base)
    index.time_index_sanity_findings(data, base)
    index.txn_index_sanity_findings(data, base)
    try:
        for _ in index.iter_aborted_txns(data):
            pass
    except DecodeError as e:
        _located(e, len(data))


def checkpoints(data: bytes) -> None:
    """The same bytes as every text file of a log dir (checkpoints, partition.metadata,
    meta.properties, .kafka_cleanshutdown)."""
    for parse in (checkpoint.parse_offset_checkpoint, checkpoint.parse_leader_epoch_checkpoint,
                  checkpoint.parse_partition_metadata, checkpoint.parse_meta_properties,
                  checkpoint.parse_clean_shutdown):
        try:
            parse(data)
        except DecodeError as e:
            _located(e, len(data))


def decompress(data: bytes) -> None:
    """A compressed payload: the first byte picks codec and magic; output never past the cap."""
    if not data:
        return
    codec, magic = data[0] & 0x07, (data[0] >> 3) % 3
    try:
        out = compression.decompress(codec, data[1:], magic=magic, max_output=FUZZ_MAX_DECOMPRESSED)
    except DecodeError as e:
        _located(e, len(data))
        return
    _check(len(out) <= FUZZ_MAX_DECOMPRESSED, f"{len(out)} bytes out past the cap")


TARGETS: dict[str, Callable[[bytes], None]] = {
    "batch": batch,
    "legacy": legacy,
    "walk": walk,
    "windows": windows,
    "native": native,
    "replay": replay,
    "control": control_record,
    "txnlog": txnlog,
    "offsets": offsets,
    "metadata": metadata,
    "snapshot": producer_snapshot,
    "index": indexes,
    "checkpoint": checkpoints,
    "compression": decompress,
}
NAMES = sorted(TARGETS)


def run_all(data: bytes) -> None:
    """Every target at once, for one fuzzer over all decoders: the first byte picks one."""
    if not data:
        return
    TARGETS[NAMES[data[0] % len(NAMES)]](data[1:])
