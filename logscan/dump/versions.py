"""What kafka-dump-log prints differently from one Kafka release to another
(`logscan dump --kafka-version`).

The dumper's text is kafka-dump-log 4.1.1's (the Scala ``kafka.tools.DumpLogSegments``); a
:class:`Text` says where another release's differs. Each difference was found by running that
release's tool on the same files, as the tests do: on the encoder-made corpus
(tests/dump/test_kafka_versions.py) and on every fixture file (test_fixtures.py with each
cluster's own release, test_kafka_releases.py with 3.9.2's and 4.4.0's tools on the 4.1.1
clusters):

4.4 (4.4.0, the Java ``org.apache.kafka.tools.DumpLogSegments``, KAFKA-14579):
  * --transaction-log-decoder prints ``"transactionStatus":"Ongoing"``, the state's name (an id
    no state has as its number in a string, ``"9"``), where 4.1.1 printed the id;
  * a producer snapshot entry without batch metadata has no trailing space;
  * with deep iteration, a segment whose first record offset N is not 0 gets
    ``Non-consecutive offsets in F`` / ``  -1 is followed by N`` (it compares the first record
    with -1 + 1);
  * the end-of-run blocks come in java.util.HashMap's order, a file's index mismatches by
    index offset descending and its offset gaps ascending (TreeMaps; the Scala tool prepended
    them to a List), and the time index block's header is ``The following indexed offsets are
    not found in :F``;
  * a v0/v1 record line ends ``crc: N``, without the Scala tool's stray ``}``;
  * with --skip-record-metadata a record without a key is ``| payload: P``, not `` payload: P``;
  * --remote-log-metadata-decoder on a record without a value prints the JVM's
    NullPointerException text, which names ``org.apache.kafka.common.record.internal.Record``;
  * --share-group-state-decoder reads the DeliveryCompleteCount tagged field (Kafka 4.2+) and
    prints it where it is not -1;
  * --offsets-decoder reads the tagged fields 4.4.0 added to the group coordinator's records
    (AssignmentTimestamp of the consumer, share and streams groups' target assignment metadata,
    AssignmentEpochs of current member assignments, StreamsGroupMetadata's topology epochs and
    last assignment configs: logscan.format.offsets.RECORD_TYPES_4_4) and prints each where it is
    not its default (a real share group's ShareGroupTargetAssignmentMetadata, fixtures/trimmed/share-4.4).
3.9 (3.9.2, the Scala tool, before the coordinator records were printed as JSON):
  * --transaction-log-decoder prints ``TransactionLog.formatRecordKeyAndValue``'s text
    (:func:`scala_transaction_log_text`), and dies on a record 4.1.1 reports as an error;
  * a LEADER_CHANGE control record is ``controlType: LEADER_CHANGE(2)``: its DumpLogSegments
    decodes only the ABORT/COMMIT, SnapshotHeader/Footer and KRaftVersion/Voters ones;
  * --cluster-metadata-decoder reads only the record types and versions 3.9.2 has
    (METADATA_TYPES_3_9): a newer one is an ``Error at O, skipping.`` text;
  * --remote-log-metadata-decoder reads no TxnIndexEmpty (4.0's tag 0) and prints no
    ``txnIdxEmpty`` (logscan.format.remotelog.RECORDS_3_9);
  * it has no --share-group-state-decoder (`logscan dump --kafka-version 3.9` refuses it).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable, Optional

from logscan.format.errors import CorruptRecordError, DecodeError, UnknownVersion

#: The releases `logscan dump --kafka-version` prints the text of, and the one each was checked
#: against; the default is the newest.
RELEASES = {"3.9": "3.9.2", "4.1": "4.1.1", "4.4": "4.4.0"}
KAFKA_VERSIONS = tuple(RELEASES)
DEFAULT_KAFKA_VERSION = KAFKA_VERSIONS[-1]
#: The texts of keys and payloads in `logscan dump --format json`, whatever --kafka-version says:
#: a script reads one format.
JSON_TEXT = "4.1"

@dataclass(frozen=True)
class Text:
    """Where a release's kafka-dump-log text differs from 4.1.1's."""

    release: str
    #: --transaction-log-decoder: "id" (4.1.1), "name" (4.4.0) or "scala" (3.9.2).
    transaction_status: str = "id"
    #: a producer snapshot entry without batch metadata ends with a space
    snapshot_trailing_space: bool = True
    #: deep iteration counts the first record against offset -1 + 1
    gap_before_first_record: bool = False
    #: the end-of-run stderr blocks are the Java port's (report.EndOfRunReport's java_port)
    java_end_of_run: bool = False
    #: a v0/v1 record line ends ``crc: N}``
    legacy_crc_brace: bool = True
    #: a record line without metadata or key starts ``| payload:``, not `` payload:``
    payload_prefix: bool = False
    #: --cluster-metadata-decoder: the record types the release reads, id -> highest version
    #: (None: every type and version logscan decodes)
    metadata_types: Optional[dict] = None
    #: a LEADER_CHANGE control record is decoded (LeaderChange: {json})
    decodes_leader_change: bool = True
    #: --remote-log-metadata-decoder: the release reads TxnIndexEmpty (tag 0) and prints
    #: ``txnIdxEmpty`` (4.0+)
    remote_txn_idx_empty: bool = True
    #: the class of the Record whose null value() a value-less record dereferences in the
    #: remote log metadata parser (the JVM's helpful NullPointerException message names it)
    record_class: str = "org.apache.kafka.common.record.Record"
    #: --share-group-state-decoder: None where the release's kafka-dump-log has no such option
    #: (3.9.2), else the share coordinator tables it reads ("4.1": without DeliveryCompleteCount)
    share_state_types: Optional[str] = "4.4"
    #: --offsets-decoder: the group coordinator tables the release reads ("4.4": with the tagged
    #: fields 4.4.0 added, logscan.format.offsets.RECORD_TYPES_4_4; "4.1": 4.1.1's)
    offsets_types: str = "4.4"

    def transaction_parser(self, errors: list) -> Callable[[object], tuple]:
        from logscan.format.txnlog import render_txnlog_key_payload

        if self.transaction_status == "scala":
            return lambda r: scala_transaction_log_text(r.key, r.value, r.offset, errors, self.release)
        if self.transaction_status == "name":
            return lambda r: render_txnlog_key_payload(r.key, r.value, r.offset, errors, status_names=True)
        return lambda r: render_txnlog_key_payload(r.key, r.value, r.offset, errors)

    def remote_log_metadata_parser(self, errors: list, *, structured: bool = False) -> Callable[[object], tuple]:
        """--remote-log-metadata-decoder (RemoteMetadataLogMessageParser): no key, the payload
        ``RemoteLogMetadata.toString()`` (``structured``: its fields, for JSON)."""
        from logscan.format.remotelog import RECORDS, RECORDS_3_9, render_remote_log_metadata

        records = RECORDS if self.remote_txn_idx_empty else RECORDS_3_9
        npe = (f'Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
               f'"{self.record_class}.value()" is null')
        return lambda r: (None, render_remote_log_metadata(
            r.value, r.offset, errors, records=records, txn_idx_empty=self.remote_txn_idx_empty,
            null_value_text=npe, structured=structured))

    def share_state_parser(self, errors: list, *, structured: bool = False) -> Callable[[object], tuple]:
        """--share-group-state-decoder (ShareGroupStateMessageParser, a coordinator records'
        parser). ``structured`` (JSON, the same for every release): 4.4.0's tables, which
        read every field a newer broker writes."""
        from logscan.format.sharestate import RECORD_TYPES, RECORD_TYPES_4_1, render_share_state_key_payload

        types = RECORD_TYPES_4_1 if self.share_state_types == "4.1" and not structured else RECORD_TYPES
        return lambda r: render_share_state_key_payload(r.key, r.value, r.offset, errors, types=types)

    def offsets_parser(self, errors: list, *, structured: bool = False) -> Callable[[object], tuple]:
        """--offsets-decoder (a coordinator records' parser). ``structured`` (JSON, the same for
        every release): 4.4.0's tables, which read every field a newer broker writes."""
        from logscan.format.offsets import RECORD_TYPES, RECORD_TYPES_4_4, render_offsets_key_payload

        types = RECORD_TYPES_4_4 if self.offsets_types == "4.4" or structured else RECORD_TYPES
        return lambda r: render_offsets_key_payload(r.key, r.value, r.offset, errors, types=types)

    def metadata_parser(self, errors: list) -> Optional[Callable[[object], tuple]]:
        """The --cluster-metadata-decoder parser when the release reads fewer record types or
        versions than logscan (None: logscan's own)."""
        if self.metadata_types is None:
            return None
        return lambda r: (None, metadata_text(r.value, r.offset, errors, self.metadata_types))


#: The `__cluster_metadata` record types Kafka 3.9.2 reads, id -> the highest version it reads
#: (MetadataRecordType in its kafka-metadata jar, read with javap): later types, such as
#: ClearElrRecord (28, 4.0), and later versions, such as RegisterBrokerRecord v4 (4.4), are
#: errors to its kafka-dump-log.
METADATA_TYPES_3_9 = {0: 3, 1: 0, 2: 0, 3: 2, 4: 0, 5: 2, 7: 0, 8: 0, 9: 0, 10: 0, 11: 0, 12: 0, 14: 0, 15: 0,
                      17: 2, 18: 0, 19: 0, 20: 0, 21: 0, 22: 0, 23: 0, 24: 0, 25: 0, 26: 0, 27: 0}


def metadata_text(value, offset: int, errors: list, known: dict) -> str:
    """What the --cluster-metadata-decoder of a release reading only the ``known`` record
    types (id -> highest version) prints after `` payload: ``: an unknown type is
    ``Unknown metadata id T``, a newer version ``Failed to deserialize record with type T``
    (MetadataRecordSerde), anything else as logscan renders it."""
    from logscan.format.metadata import decode_metadata_record, render_metadata_payload

    try:
        rec, _ = decode_metadata_record(value, 0, len(value), lenient=True) if value is not None else (None, 0)
    except DecodeError:
        rec = None   # the frame itself: the same text in every release
    if rec is not None and rec.api_key not in known:
        errors.append(NewerRecord(f"metadata record type {rec.api_key} is newer than Kafka {RELEASES['3.9']}, whose "
                                  f"kafka-dump-log skips it", 0, expected="a record type it reads", found=rec.api_key))
        return (f"Error at {offset}, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: "
                f"Unknown metadata id {rec.api_key}")
    if rec is not None and rec.version > known[rec.api_key]:
        errors.append(NewerRecord(f"metadata record type {rec.api_key} version {rec.version} is newer than Kafka "
                                  f"{RELEASES['3.9']} reads, whose kafka-dump-log skips it", 0,
                                  expected=f"<= {known[rec.api_key]}", found=rec.version))
        return f"Error at {offset}, skipping. Failed to deserialize record with type {rec.api_key}"
    return render_metadata_payload(value, offset, errors)


TEXTS = {
    "3.9": Text("3.9.2", transaction_status="scala", decodes_leader_change=False, metadata_types=METADATA_TYPES_3_9,
                remote_txn_idx_empty=False, share_state_types=None, offsets_types="4.1"),
    "4.1": Text("4.1.1", share_state_types="4.1", offsets_types="4.1"),
    "4.4": Text("4.4.0", transaction_status="name", snapshot_trailing_space=False, gap_before_first_record=True,
                java_end_of_run=True, legacy_crc_brace=False, payload_prefix=True,
                record_class="org.apache.kafka.common.record.internal.Record"),
}


def text_of(version: str) -> Text:
    """The Text of a --kafka-version value (KAFKA_VERSIONS); ValueError names the choices."""
    try:
        return TEXTS[version]
    except KeyError:
        raise ValueError(f"unknown Kafka version {version!r}: one of {', '.join(KAFKA_VERSIONS)}") from None


class ToolDies(CorruptRecordError):
    """A record the release's kafka-dump-log dies on (an exception ends the tool): the dump
    prints the record's line without key or payload and reports this as a finding."""


class NewerRecord(UnknownVersion):
    """A record of a type or version newer than the release reads (a remark, not damage: the
    file is a newer broker's)."""


_VERSION = struct.Struct(">h")


def scala_transaction_log_text(key, value, offset: int, errors: list, release: str = "3.9.2"
                               ) -> tuple[Optional[str], Optional[str]]:
    """What kafka-dump-log 3.9.2 prints after ``key: `` / `` payload: `` for a
    `__transaction_state` record (TransactionLog.formatRecordKeyAndValue):
    ``transaction_metadata::transactionalId=ID`` and ``producerId:P,producerEpoch:E,state=NAME,
    partitions=[t-p,...],txnLastUpdateTimestamp=T,txnTimeoutMs=M`` (``<DELETE>`` for a
    tombstone), ``unknown::version=V`` for a key of another version, no payload. The
    partitions are those of the mutable.HashSet TransactionMetadata holds, in its order, none
    for the Empty state (the value's are not read then). Where 3.9.2 throws (a short or
    corrupt record, an unknown value version or state id, null partitions outside Empty) the
    text is (None, None) and a ToolDies goes to ``errors``."""
    from logscan.format.txnlog import TRANSACTION_STATES, decode_txnlog_entry

    def dies(why: str) -> tuple[None, None]:
        errors.append(ToolDies(f"kafka-dump-log {release} stops at offset {offset} with an exception "
                               f"({why}); logscan goes on", -1))
        return None, None

    if key is None:
        return dies("the record has no key")
    if len(key) < 2:
        return dies("the key is too short for its version")
    version = _VERSION.unpack_from(key)[0]
    if version != 0:
        return f"unknown::version={version}", None
    try:
        entry = decode_txnlog_entry(key, value)
    except DecodeError as e:
        return dies(e.message)
    shown = f"transaction_metadata::transactionalId={entry.transactional_id}"
    if entry.is_tombstone:
        return shown, "<DELETE>"
    state = TRANSACTION_STATES.get(entry.state_id)
    if state is None:
        return dies(f"transaction state id {entry.state_id} is unknown")
    if state == "Empty":
        partitions = []
    elif entry.partitions is None:
        return dies("the transaction partitions are null")
    else:
        partitions = scala_hash_set_order(list(dict.fromkeys(entry.partitions)))
    listed = ",".join(f"{topic}-{partition}" for topic, partition in partitions)
    return shown, (f"producerId:{entry.producer_id},producerEpoch:{entry.producer_epoch},state={state},"
                   f"partitions=[{listed}],txnLastUpdateTimestamp={entry.last_update_timestamp_ms},"
                   f"txnTimeoutMs={entry.transaction_timeout_ms}")


def scala_hash_set_order(partitions: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The iteration order of a Scala 2.13 ``mutable.HashSet[TopicPartition]`` holding
    ``partitions`` (distinct): the table (16 slots, doubled when an add reaches 3/4 of it) is
    walked slot by slot, each slot's nodes sorted by their improved hash (``h ^ (h >>> 16)`` of
    TopicPartition.hashCode, ``31 * (31 + partition) + topic.hashCode()``)."""
    from .javaisms import java_string_hash

    size = 16
    for count in range(len(partitions)):
        if count + 1 >= size * 3 // 4:
            size *= 2

    def improved(tp: tuple[str, int]) -> int:   # as a signed Int, which a slot's nodes are sorted by
        h = (31 * (31 + tp[1]) + java_string_hash(tp[0])) & 0xFFFFFFFF
        v = h ^ (h >> 16)
        return v - (1 << 32) if v & 0x80000000 else v

    return sorted(partitions, key=lambda tp: (improved(tp) & (size - 1), improved(tp)))
