"""Files kafka-dump-log does not read but a log dir holds: checkpoints and properties.

kafka-dump-log prints "Ignoring unknown file" for them (and 4.1.1 crashes on names without a
dot, such as ``leader-epoch-checkpoint``). `logscan dump FILE...` prints them in the same
"name: value" style; with kafka-dump-log's ``--files`` spelling they are ignored as Kafka
ignores them, so that output stays identical.
"""

from __future__ import annotations

from logscan.format import checkpoint
from logscan.format.errors import DecodeError
from logscan.logdir.naming import OFFSET_CHECKPOINT_KINDS, Kind, classify
from logscan.logdir.segment import Finding, open_segment

EXTRA_KINDS = OFFSET_CHECKPOINT_KINDS | {Kind.LEADER_EPOCH_CHECKPOINT, Kind.PARTITION_METADATA,
                                         Kind.META_PROPERTIES}


def is_extra(path: str) -> bool:
    return classify(path).kind in EXTRA_KINDS


def dump_extra(d, path: str) -> None:
    """One line per entry, after a header line with the file's version and entry count."""
    kind = classify(path).kind
    with open_segment(path) as f:
        data = bytes(f.buf)  # these files are a few KiB; the parsers take bytes
    try:
        if kind in OFFSET_CHECKPOINT_KINDS:
            cp = checkpoint.parse_offset_checkpoint(data)
            d.sink.extra("checkpoint", f"version: {cp.version} entries: {cp.count}",
                         {"version": cp.version, "entries": cp.count})
            for e in cp.entries:
                d.sink.extra("checkpoint_entry",
                             f"topic: {e.topic} partition: {e.partition} offset: {e.offset}",
                             {"topic": e.topic, "partition": e.partition, "offset": e.offset})
        elif kind is Kind.LEADER_EPOCH_CHECKPOINT:
            cp = checkpoint.parse_leader_epoch_checkpoint(data)
            d.sink.extra("checkpoint", f"version: {cp.version} entries: {cp.count}",
                         {"version": cp.version, "entries": cp.count})
            for e in cp.entries:
                d.sink.extra("leader_epoch_entry", f"epoch: {e.epoch} startOffset: {e.start_offset}",
                             {"epoch": e.epoch, "start_offset": e.start_offset})
        elif kind is Kind.PARTITION_METADATA:
            pm = checkpoint.parse_partition_metadata(data)
            d.sink.extra("partition_metadata", f"version: {pm.version} topicId: {pm.topic_id}",
                         {"version": pm.version, "topic_id": pm.topic_id})
        elif kind is Kind.META_PROPERTIES:
            mp = checkpoint.parse_meta_properties(data)
            d.sink.extra("meta_properties",
                         f"version: {mp.version} nodeId: {mp.node_id} clusterId: {mp.cluster_id} "
                         f"directoryId: {mp.directory_id}",
                         {"version": mp.version, "node_id": mp.node_id,
                          "cluster_id": mp.cluster_id, "directory_id": mp.directory_id})
    except DecodeError as e:
        d.finding(Finding.from_error(path, e))
