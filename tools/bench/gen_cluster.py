"""`make bench-data`: a large synthetic copy of a cluster's log dirs, for the scan benchmarks.

    python -m tools.bench.gen_cluster --out DIR --size-mb 1024 [--brokers 3] [--partitions 1000]
        [--replication 3] [--segment-mb 64] [--hanging 4] [--seed 1]
        [--batch-kib K | --batch-bytes B] [--codecs none,lz4,...] [--reuse]

What a busy cluster's copy looks like: one folder per broker (a ZooKeeper-mode meta.properties),
topics of 10 partitions replicated on --replication brokers (the same bytes on every replica,
as followers copy the leader's batches), segments rolled at --segment-mb, and in each
partition a mix of idempotent and transactional producers writing batches of 1 KiB to 1 MiB on
disk, compressed with the producer's codec (none, gzip, snappy, lz4 or zstd), transactions of
one to five batches ended by COMMIT (most) or ABORT markers. ``__transaction_state`` (3
partitions) holds each transactional id's latest state, as the coordinator loads it after
compaction. Checkpoint files say where each partition's high watermark and log start are.

Planted on purpose, and listed in ``manifest.json`` with what a correct scan must find:
- ``--hanging`` hanging transactions, alternating the two commonest causes: a transactional
  batch from a producer id the coordinator has no record of, and a transaction the coordinator
  completed while this partition never got its marker (KIP-664's two find-hanging cases);
- a few transactions still open because they are young (coordinator Ongoing, partition
  included): open, not hanging.

Data batches are written from a few templates per codec and size, restamped (offset, producer
id, epoch, sequence, timestamps) with a fresh CRC: the generator runs at disk speed, and the
bytes are what logscan's test encoder writes (checked against kafka-dump-log in the tests).
The output is deterministic for a given seed and options.

For the benchmarks' controlled inputs: ``--batch-kib`` writes every data batch at one on-disk
size instead of the 1 KiB-1 MiB mix (``--batch-bytes``: a size below 1 KiB, such as the 200-400 B
batches of producers sending a few records at a time), ``--codecs`` narrows the producers' codecs (``none``
for batches whose bytes are all header and records), and ``--reuse`` keeps an output whose
manifest records the same options instead of writing it again.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import struct
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from crc32c import crc32c

from logscan.format import compression
from logscan.format.batch import TRANSACTIONAL_FLAG_MASK
from logscan.format.checkpoint import uuid_to_kafka_string
from logscan.format.message import encode_message
from logscan.format.txnlog import (TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE,
                                   transactional_id_partition)
from logscan.testing.encoder import Rec, encode_batch, end_txn_marker_batch, with_base_offset

MIB = 1024 * 1024
TXN_STATE_TOPIC = "__transaction_state"
TXN_STATE_PARTITIONS = 3
TOPIC_PARTITIONS = 10
T0 = 1_767_225_600_000          # 2026-01-01T00:00:00Z
SPAN_MS = 6 * 3600 * 1000        # each partition's data spreads over six hours
COORDINATOR_EPOCH = 4
LEADER_EPOCH = 2
TIMEOUT_MS = 60_000

# On-disk batch sizes and how often producers write them (most batches are small).
#: The sizes --batch-bytes takes: the 200-400 B batches real clusters hold many of (issue 37).
SMALL_BATCH_BYTES = [256, 512]
SIZE_CLASSES = [(1024, 25), (4096, 25), (16 * 1024, 25), (64 * 1024, 15), (256 * 1024, 7), (MIB, 3)]
CODEC_MIX = [(compression.NONE, 40), (compression.LZ4, 20), (compression.ZSTD, 20),
             (compression.SNAPPY, 10), (compression.GZIP, 10)]

# v2 header fields the restamp rewrites (byte positions from the batch layout).
_Q = struct.Struct(">q")
_I = struct.Struct(">i")
_H = struct.Struct(">h")
_U = struct.Struct(">I")
POS_BASE_OFFSET, POS_LEADER_EPOCH, POS_CRC, POS_ATTRIBUTES = 0, 12, 17, 21
POS_LAST_DELTA, POS_BASE_TS, POS_MAX_TS, POS_PID, POS_EPOCH, POS_SEQ = 23, 27, 35, 43, 51, 53
CRC_FROM = 21


@dataclass(frozen=True)
class Template:
    data: bytes
    records: int
    span_ms: int   # max timestamp - base timestamp


def _values(rng: random.Random, n: int) -> list[bytes]:
    # Log-line-like values: compress 2-4x, as real payloads do.
    words = [b"order", b"user", b"event", b"status", b"ok", b"retry", b"eu-west-1", b"checkout",
             b"cart", b"payment", b"id", b"ts", b"amount", b"currency", b"EUR"]
    return [b" ".join(rng.choice(words) for _ in range(10)) + b" %08x" % rng.getrandbits(32)
            for _ in range(n)]


def build_templates(seed: int, size_classes=SIZE_CLASSES, codec_mix=CODEC_MIX, *,
                    exact: bool = False) -> dict[tuple[int, int], Template]:
    """(codec, size class) -> a batch of about that many bytes on disk (with ``exact``,
    uncompressed batches too are grown to 90-100% of the class)."""
    rng = random.Random(seed)
    out = {}
    for codec, _ in codec_mix:
        for size, _ in size_classes:
            n = max(1, size // 110)
            for _ in range(8):   # grow compressed batches towards the on-disk size class
                values = _values(rng, n)
                recs = [Rec(v, key=b"k-%06d" % i, timestamp=T0 + i) for i, v in enumerate(values)]
                data = encode_batch(recs, codec=codec, producer_id=1, producer_epoch=0, base_sequence=0,
                                    partition_leader_epoch=LEADER_EPOCH)
                if exact and codec == compression.NONE:
                    if size * 0.9 <= len(data) <= size or n == 1:
                        break
                    n = max(1, int(n * size * 0.95 / len(data)))
                    continue
                if len(data) >= size * 0.8 or codec == compression.NONE:
                    break
                n = int(n * min(8.0, size / len(data)))
            out[(codec, size)] = Template(data, n, n - 1)
    return out


def restamp(t: Template, *, base_offset: int, producer_id: int, producer_epoch: int, base_sequence: int,
            base_timestamp: int, transactional: bool) -> bytes:
    buf = bytearray(t.data)
    _Q.pack_into(buf, POS_BASE_OFFSET, base_offset)
    attributes = _H.unpack_from(buf, POS_ATTRIBUTES)[0]
    if transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    _H.pack_into(buf, POS_ATTRIBUTES, attributes)
    _Q.pack_into(buf, POS_BASE_TS, base_timestamp)
    _Q.pack_into(buf, POS_MAX_TS, base_timestamp + t.span_ms)
    _Q.pack_into(buf, POS_PID, producer_id)
    _H.pack_into(buf, POS_EPOCH, producer_epoch)
    _I.pack_into(buf, POS_SEQ, base_sequence)
    _U.pack_into(buf, POS_CRC, crc32c(memoryview(buf)[CRC_FROM:]))
    return bytes(buf)


def _pick(rng: random.Random, weighted) -> int:
    return rng.choices([v for v, _ in weighted], weights=[w for _, w in weighted])[0]


@dataclass
class Producer:
    producer_id: int
    epoch: int
    codec: int
    transactional_id: str | None
    sequences: dict = field(default_factory=dict)      # partition key -> next sequence
    open_at: dict = field(default_factory=dict)        # partition key -> (first offset, batches left)
    last_state: tuple | None = None                    # (state id, partitions, start ts, update ts)


@dataclass
class PartitionPlan:
    topic: str
    partition: int
    replicas: list[int]
    budget: int


class SegmentWriter:
    """Writes one partition's log, rolling segments like Kafka (a segment is full when the
    next batch would pass the roll size), into the first replica's folder."""

    def __init__(self, folder: Path, roll_bytes: int):
        self.folder = folder
        self.roll = roll_bytes
        self.out = None
        self.size = 0
        self.files: list[Path] = []
        self.offset = 0
        self.bytes = 0

    def append(self, batch: bytes, records: int) -> int:
        if self.out is None or (self.size and self.size + len(batch) > self.roll):
            self._open()
        self.out.write(batch)
        self.size += len(batch)
        self.bytes += len(batch)
        first = self.offset
        self.offset += records
        return first

    def _open(self) -> None:
        if self.out is not None:
            self.out.close()
        path = self.folder / f"{self.offset:020d}.log"
        self.files.append(path)
        self.out = open(path, "wb", buffering=4 * MIB)
        self.size = 0

    def close(self) -> None:
        if self.out is None:
            self._open()   # an empty partition still has its (empty) active segment
        self.out.close()


def txn_state_record(tid: str, p: Producer, state: int, parts, start_ts: int, update_ts: int) -> Rec:
    key = struct.pack(">h", 0) + encode_message(TRANSACTION_LOG_KEY, 0, {"transactionalId": tid})
    by_topic: dict[str, list[int]] = {}
    for topic, partition in parts:
        by_topic.setdefault(topic, []).append(partition)
    value = struct.pack(">h", 1) + encode_message(TRANSACTION_LOG_VALUE, 1, {
        "producerId": p.producer_id, "producerEpoch": p.epoch, "transactionTimeoutMs": TIMEOUT_MS,
        "transactionStatus": state,
        "transactionPartitions": [{"topic": t, "partitionIds": ids} for t, ids in sorted(by_topic.items())],
        "transactionLastUpdateTimestampMs": update_ts, "transactionStartTimestampMs": start_ts,
        "clientTransactionVersion": 2})
    return Rec(value, key=key, timestamp=update_ts)


class Generator:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        exact = batch_bytes(args)
        self.size_classes = [(exact, 1)] if exact else SIZE_CLASSES
        self.codec_mix = [(c, w) for c, w in CODEC_MIX if compression.codec_name(c) in args.codecs]
        # Planted batches are uncompressed, unless the codecs asked for exclude that.
        self.plain = compression.NONE if compression.NONE in dict(self.codec_mix) else self.codec_mix[0][0]
        self.templates = build_templates(args.seed, self.size_classes, self.codec_mix, exact=bool(exact))
        self.next_pid = 1000
        self.manifest = {"options": manifest_options(args),
                         "hanging": [], "young_open": [], "partitions": {}}
        self.totals = {"bytes": 0, "log_files": 0, "batches": 0, "records": 0, "transactions": 0,
                       "markers": 0}
        self.hw: dict[int, dict[tuple[str, int], int]] = {}
        self.txn_producers: list[Producer] = []

    def new_producer(self, transactional: bool) -> Producer:
        pid = self.next_pid
        self.next_pid += 1
        tid = f"bench-txn-{pid}" if transactional else None
        p = Producer(pid, self.rng.randrange(0, 5), _pick(self.rng, self.codec_mix), tid)
        if transactional:
            self.txn_producers.append(p)
        return p

    def plans(self) -> list[PartitionPlan]:
        a = self.args
        rf = min(a.replication, a.brokers)
        per_replica = a.size_mb * MIB // (a.partitions * rf)
        out = []
        for i in range(a.partitions):
            topic, partition = f"bench-{i // TOPIC_PARTITIONS:03d}", i % TOPIC_PARTITIONS
            leader = i % a.brokers
            replicas = [1 + (leader + k) % a.brokers for k in range(rf)]
            out.append(PartitionPlan(topic, partition, replicas, per_replica))
        return out

    def run(self) -> dict:
        a = self.args
        out = Path(a.out)
        if out.exists():
            shutil.rmtree(out)
        cluster_id = uuid_to_kafka_string(uuid.UUID(int=self.rng.getrandbits(128)).bytes)
        for b in range(1, a.brokers + 1):
            d = out / f"broker-{b}"
            d.mkdir(parents=True)
            # A ZooKeeper-mode broker's meta.properties (version 0): the copy holds no
            # __cluster_metadata, which a KRaft node's copy must (log_dirs.without_metadata).
            (d / "meta.properties").write_text(f"#\nbroker.id={b}\nversion=0\ncluster.id={cluster_id}\n")
            self.hw[b] = {}
        plans = self.plans()
        hanging_at = set(self.rng.sample(range(len(plans)), min(a.hanging, len(plans))))
        young_at = set(self.rng.sample(range(len(plans)), min(max(1, a.hanging // 2), len(plans))))
        topic_ids: dict[str, str] = {}
        for i, plan in enumerate(plans):
            tid = topic_ids.setdefault(plan.topic, uuid_to_kafka_string(uuid.UUID(int=self.rng.getrandbits(128)).bytes))
            self.write_partition(out, plan, tid, hang=i in hanging_at, young=i in young_at)
        self.write_txn_state(out)
        for b, hws in self.hw.items():
            d = out / f"broker-{b}"
            for name, values in (("replication-offset-checkpoint", hws),
                                 ("recovery-point-offset-checkpoint", hws),
                                 ("log-start-offset-checkpoint", {k: 0 for k in hws})):
                lines = [f"{t} {p} {o}" for (t, p), o in sorted(values.items())]
                (d / name).write_text("0\n%d\n%s\n" % (len(lines), "\n".join(lines)))
            (d / ".kafka_cleanshutdown").write_text("")
        self.manifest["totals"] = self.totals
        (out / "manifest.json").write_text(json.dumps(self.manifest, indent=1, sort_keys=True) + "\n")
        return self.manifest

    def write_partition(self, out: Path, plan: PartitionPlan, topic_id: str, *, hang: bool, young: bool) -> None:
        rng = self.rng
        key = (plan.topic, plan.partition)
        first = out / f"broker-{plan.replicas[0]}" / f"{plan.topic}-{plan.partition}"
        first.mkdir()
        w = SegmentWriter(first, int(self.args.segment_mb * MIB))
        producers = [self.new_producer(transactional=rng.random() < 0.6) for _ in range(rng.randint(2, 6))]
        sizes = [(s, wgt) for s, wgt in self.size_classes if s <= max(1024, plan.budget // 4)] or self.size_classes
        est_batches = max(1, plan.budget // (sum(s * wgt for s, wgt in sizes) // sum(wgt for _, wgt in sizes)))
        step = max(1, SPAN_MS // (est_batches + 4))
        ts = T0
        end_ts = T0 + SPAN_MS
        open_spans = []
        if hang:
            open_spans.append(self.plant_hanging(w, plan, ts))
            ts += step
        while w.bytes < plan.budget:
            p = rng.choice(producers)
            t = self.templates[(p.codec, _pick(rng, sizes))]
            transactional = p.transactional_id is not None
            seq = p.sequences.get(key, 0)
            base = restamp(t, base_offset=w.offset, producer_id=p.producer_id, producer_epoch=p.epoch,
                           base_sequence=seq, base_timestamp=ts, transactional=transactional)
            p.sequences[key] = (seq + t.records) % (1 << 31)
            offset = w.append(base, t.records)
            self.totals["batches"] += 1
            self.totals["records"] += t.records
            ts = min(ts + step, end_ts - 1000)   # estimates overshoot: never past the span's end
            if not transactional:
                continue
            if key not in p.open_at:
                p.open_at[key] = (offset, rng.randint(1, 5), ts)
            start, left, started = p.open_at[key]
            if left > 1:
                p.open_at[key] = (start, left - 1, started)
                continue
            del p.open_at[key]
            self.end_txn(w, p, plan, commit=rng.random() < 0.9, ts=ts, start_ts=started)
            ts = min(ts + 1, end_ts - 1000)
        # Close what is still open, but one young transaction may stay open (not hanging).
        for p in producers:
            if key in p.open_at:
                start, _, started = p.open_at.pop(key)
                if young and not any(o["partition"] == plan.partition and o["topic"] == plan.topic
                                     for o in self.manifest["young_open"]):
                    seq = p.sequences.get(key, 0)
                    t = self.templates[(p.codec, self.size_classes[0][0])]
                    w.append(restamp(t, base_offset=w.offset, producer_id=p.producer_id,
                                     producer_epoch=p.epoch, base_sequence=seq, base_timestamp=end_ts,
                                     transactional=True), t.records)
                    self.totals["batches"] += 1
                    p.sequences[key] = seq + t.records
                    p.last_state = (1, [key], started, end_ts)   # Ongoing, this partition
                    self.manifest["young_open"].append({"topic": plan.topic, "partition": plan.partition,
                                                        "producer_id": p.producer_id, "start_offset": start})
                    open_spans.append(start)
                    continue
                self.end_txn(w, p, plan, commit=True, ts=max(ts, end_ts - 1), start_ts=started)
        w.close()
        leo = w.offset
        self.totals["bytes"] += w.bytes * len(plan.replicas)
        self.totals["log_files"] += len(w.files) * len(plan.replicas)
        lso = min(open_spans, default=leo)
        self.manifest["partitions"][f"{plan.topic}-{plan.partition}"] = {
            "log_end_offset": leo, "last_stable_offset": lso, "replicas": plan.replicas,
            "segments": len(w.files), "bytes": w.bytes}
        (first / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}\n")
        (first / "leader-epoch-checkpoint").write_text(f"0\n1\n{LEADER_EPOCH} 0\n")
        for b in plan.replicas[1:]:
            shutil.copytree(first, out / f"broker-{b}" / first.name)
        for b in plan.replicas:
            self.hw[b][(plan.topic, plan.partition)] = leo

    def end_txn(self, w: SegmentWriter, p: Producer, plan: PartitionPlan, *, commit: bool, ts: int,
                start_ts: int) -> None:
        marker = end_txn_marker_batch(commit=commit, coordinator_epoch=COORDINATOR_EPOCH,
                                      producer_id=p.producer_id, producer_epoch=p.epoch, timestamp=ts,
                                      partition_leader_epoch=LEADER_EPOCH)
        w.append(with_base_offset(marker, w.offset), 1)
        self.totals["transactions"] += 1
        self.totals["markers"] += 1
        p.last_state = (4 if commit else 5, [(plan.topic, plan.partition)], start_ts, ts)

    def plant_hanging(self, w: SegmentWriter, plan: PartitionPlan, ts: int) -> int:
        """One transactional batch that no marker will ever end."""
        n = len(self.manifest["hanging"])
        p = self.new_producer(transactional=n % 2 == 1)
        t = self.templates[(self.plain, self.size_classes[0][0])]
        start = w.append(restamp(t, base_offset=w.offset, producer_id=p.producer_id, producer_epoch=p.epoch,
                                 base_sequence=0, base_timestamp=ts, transactional=True), t.records)
        self.totals["batches"] += 1
        if p.transactional_id is None:
            reason = "no_coordinator_record"
        else:
            # The coordinator completed the transaction; this partition's marker was lost.
            reason = "coordinator_moved_on"
            p.last_state = (4, [(plan.topic, plan.partition)], ts, ts + 500)
        self.manifest["hanging"].append({
            "topic": plan.topic, "partition": plan.partition, "producer_id": p.producer_id,
            "producer_epoch": p.epoch, "start_offset": start, "reason": reason,
            "last_timestamp": ts + t.span_ms})
        return start

    def write_txn_state(self, out: Path) -> None:
        by_partition: dict[int, list[Rec]] = {i: [] for i in range(TXN_STATE_PARTITIONS)}
        for p in self.txn_producers:
            if p.last_state is None:
                continue
            state, parts, start_ts, update_ts = p.last_state
            by_partition[transactional_id_partition(p.transactional_id, TXN_STATE_PARTITIONS)].append(
                txn_state_record(p.transactional_id, p, state, parts, start_ts, update_ts))
        rf = min(self.args.replication, self.args.brokers)
        for partition, recs in by_partition.items():
            replicas = [1 + (partition + k) % self.args.brokers for k in range(rf)]
            folder = out / f"broker-{replicas[0]}" / f"{TXN_STATE_TOPIC}-{partition}"
            folder.mkdir()
            w = SegmentWriter(folder, int(self.args.segment_mb * MIB))
            for i in range(0, len(recs), 50):
                chunk = recs[i:i + 50]
                w.append(encode_batch(chunk, base_offset=w.offset, partition_leader_epoch=LEADER_EPOCH),
                         len(chunk))
            w.close()
            (folder / "leader-epoch-checkpoint").write_text(f"0\n1\n{LEADER_EPOCH} 0\n")
            for b in replicas:
                if b != replicas[0]:
                    shutil.copytree(folder, out / f"broker-{b}" / folder.name)
                self.hw[b][(TXN_STATE_TOPIC, partition)] = w.offset
            self.totals["bytes"] += w.bytes * len(replicas)
            self.totals["log_files"] += len(w.files) * len(replicas)


def batch_bytes(args: argparse.Namespace) -> int:
    """The one on-disk size of every data batch (0: the 1 KiB-1 MiB mix)."""
    return args.batch_bytes or (args.batch_kib or 0) * 1024


def manifest_options(args: argparse.Namespace) -> dict:
    """The options that decide the output's bytes, as the manifest records them (an option
    left unset is left out, so a copy written before it existed is still current)."""
    return {k: v for k, v in vars(args).items() if k not in ("out", "reuse") and not (k == "batch_bytes" and v is None)}


def is_current(out: Path, args: argparse.Namespace) -> bool:
    """True when ``out`` already holds a complete copy written with these options (the
    manifest is written last, so its presence means the copy is whole)."""
    try:
        manifest = json.loads((Path(out) / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return manifest.get("options") == json.loads(json.dumps(manifest_options(args)))


def _codecs(text: str) -> list[str]:
    names = sorted({n.strip().lower() for n in text.split(",") if n.strip()})
    known = {compression.codec_name(c) for c, _ in CODEC_MIX}
    if not names or set(names) - known:
        raise argparse.ArgumentTypeError(f"codecs: a comma-separated subset of {', '.join(sorted(known))}")
    return names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench.gen_cluster", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--size-mb", type=int, default=1024, help="total .log bytes over all replicas")
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--replication", type=int, default=3)
    ap.add_argument("--segment-mb", type=float, default=64, help="segment roll size (log.segment.bytes)")
    ap.add_argument("--hanging", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    sizes = ap.add_mutually_exclusive_group()
    sizes.add_argument("--batch-kib", type=int, choices=[s // 1024 for s, _ in SIZE_CLASSES],
                       help="every data batch of this on-disk size (default: the 1 KiB-1 MiB mix)")
    sizes.add_argument("--batch-bytes", type=int, choices=SMALL_BATCH_BYTES,
                       help="every data batch of this on-disk size, below 1 KiB")
    ap.add_argument("--codecs", type=_codecs, default=_codecs("none,gzip,snappy,lz4,zstd"),
                    help="producers' codecs, comma-separated (default: all five)")
    ap.add_argument("--reuse", action="store_true",
                    help="leave --out alone if its manifest records the same options")
    args = ap.parse_args(argv)
    if args.reuse and is_current(Path(args.out), args):
        print(f"{args.out}: up to date", file=sys.stderr)
        return 0
    started = time.perf_counter()
    manifest = Generator(args).run()
    t = manifest["totals"]
    print(f"wrote {args.out}: {t['bytes'] / MIB:.0f} MiB in {t['log_files']} segment files, "
          f"{args.partitions} partitions x {min(args.replication, args.brokers)} replicas on {args.brokers} brokers, "
          f"{t['batches']} data batches per replica set, {t['transactions']} transactions, "
          f"{len(manifest['hanging'])} hanging, {len(manifest['young_open'])} young open "
          f"({time.perf_counter() - started:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
