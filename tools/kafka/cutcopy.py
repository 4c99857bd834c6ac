"""A copy of a LIVE cluster cut the way an operator's copy is cut (issue 36 item 2).

The other fixture clusters are copied after a clean stop, whole. An operator copies running
brokers, and a copy gets cut: the connection drops, rsync is killed, a disk fills. This
cluster's one scenario makes such a copy while the cluster runs, by README's two steps for
every node: first the files at the top of each log dir (meta.properties and the checkpoints),
then the partition folders in rsync's order (byte order of their names), and that second step
is interrupted inside one file, as a killed ``rsync --partial`` leaves it: the file holds its
first bytes only, and nothing after it in that order was copied. Between the two steps the
cluster moves on (a transaction commits), so the checkpoints in the copy are older than the
logs. Kafka's tools are then asked on the live cluster (tools.kafka.truth), and the cluster is
stopped; the copy is the interrupted one, not a copy after the stop.

The fixture lives in ``fixtures/live-cut/<cluster>/`` (not ``fixtures/<cluster>/``): the tests
that hold every fixture cluster to Kafka's tools read a whole copy, which this is not; the
tests of this one (tests/scan/test_live_cut_copy.py) hold the scan to never advise an abort
the copy cannot justify: no plan for a transaction the live find-hanging did not list.

CLI::

    python -m tools.kafka.cutcopy build [--out fixtures/live-cut] [--work .work/fixtures]
"""
from __future__ import annotations

import argparse
import json
import shutil
import struct
import sys
import time
from pathlib import Path

from tools.kafka.cluster import REPO, Cluster, wait_for
from tools.kafka.hanging import HANG_AGE_MS, MAX_TRANSACTION_TIMEOUT_MS, wait_settled
from tools.kafka.rawclient import RawClient
from tools.kafka.scenarios import CLUSTERS, ClusterSpec, ScenarioContext, scenario

if __name__ == "__main__":
    from tools.kafka import cutcopy as _module
    sys.exit(_module.main())

CUT_CLUSTER = "cut-copy"
CLUSTERS.setdefault(CUT_CLUSTER, ClusterSpec(transaction_version=2))
CUT_TOPIC = "cut"
CUT_ID = "cut-committed"
#: The partition folder whose .log the interrupted copy holds in part (on every node).
CUT_FOLDER = f"{CUT_TOPIC}-1"
_OFFSET_AND_LENGTH = struct.Struct(">qi")  # a log entry's offset and size fields
_LOG_OVERHEAD = 12


def _top_files(log_dir: Path, dst: Path) -> list[str]:
    """README's first step: the files at the top of the log dir (not its folders)."""
    dst.mkdir(parents=True, exist_ok=True)
    copied = []
    for f in sorted(log_dir.iterdir()):
        if f.is_file():
            try:
                shutil.copy2(f, dst / f.name)
            except FileNotFoundError:  # a checkpoint's .tmp, renamed while copied
                continue
            copied.append(f.name)
    return copied


def _entries(data: bytes) -> list[tuple[int, int, int]]:
    """(position, offset, size) of each whole entry of a segment's bytes."""
    out, pos = [], 0
    while pos + _LOG_OVERHEAD <= len(data):
        offset, length = _OFFSET_AND_LENGTH.unpack_from(data, pos)
        if length <= 0 or pos + _LOG_OVERHEAD + length > len(data):
            break
        out.append((pos, offset, _LOG_OVERHEAD + length))
        pos += _LOG_OVERHEAD + length
    return out


def _folders_interrupted(log_dir: Path, dst: Path) -> dict:
    """README's second step in rsync's order, killed inside CUT_FOLDER's .log: the folders
    before it whole, its files before the .log whole, the .log's bytes up to the middle of its
    last entry (the COMMIT marker), nothing after."""
    folders = sorted(p for p in log_dir.iterdir() if p.is_dir())
    copied, skipped, cut = [], [], None
    for folder in folders:
        if cut is not None:
            skipped.append(folder.name)
            continue
        if folder.name != CUT_FOLDER:
            shutil.copytree(folder, dst / folder.name, copy_function=_copy_unless_vanished)
            copied.append(folder.name)
            continue
        (dst / folder.name).mkdir()
        for f in sorted(folder.iterdir()):
            if cut is not None:
                skipped.append(f"{folder.name}/{f.name}")
                continue
            if not f.name.endswith(".log"):
                shutil.copy2(f, dst / folder.name / f.name)
                continue
            data = f.read_bytes()
            pos, offset, size = _entries(data)[-1]
            keep = pos + size // 2
            (dst / folder.name / f.name).write_bytes(data[:keep])
            cut = {"file": f"{folder.name}/{f.name}", "size": len(data), "kept_bytes": keep,
                   "last_entry": {"position": pos, "offset": offset, "size": size}}
    return {"copied": copied, "not_copied": skipped, "cut": cut}


def _copy_unless_vanished(src: str, dst: str) -> None:
    try:
        shutil.copy2(src, dst)
    except FileNotFoundError:  # a file the broker removed while it was copied
        pass


def _checkpointed(log_dir: Path, name: str, topic: str, partition: int) -> int | None:
    lines = (log_dir / name).read_text().splitlines()[2:]
    for line in lines:
        t, p, offset = line.split()
        if (t, int(p)) == (topic, partition):
            return int(offset)
    return None


@scenario("live_cut_copy", clusters=(CUT_CLUSTER,))
def live_cut_copy(ctx: ScenarioContext) -> None:
    """Topic ``cut`` (3 partitions, RF 3): the raw client's ``cut-committed`` (AddPartitionsToTxn
    for all three, CreateTime one hour back) writes one transactional batch to each partition.
    With the transaction open, every node's log dir is copied by README's first step (the files
    at the top: the checkpoints name each partition's high watermark at the data's end, waited
    for). Then the transaction commits (COMMIT markers on all three, replicated), and the second
    step copies every node's partition folders in rsync's order, killed inside ``cut-1``'s
    ``.log``: it holds the data and the first half of the COMMIT marker's batch, the files after
    it (time index, leader-epoch-checkpoint, partition.metadata) and every folder after it
    (``cut-2``) are not in the copy, the folders before it (the coordinator partitions, ``cut-0``)
    are whole. The copy's checkpoints are older than its logs. truth.json ``copy`` says so
    (mode ``live_cut``, per node what was copied and where the cut is); Kafka's tools were asked
    after the commit, so find-hanging lists nothing: a scan of the copy must plan no abort."""
    cluster = ctx.cluster
    ctx.create_topic(CUT_TOPIC, 3)
    old = int(time.time() * 1000) - HANG_AGE_MS
    copy = cluster.workdir / "live-copy"
    if copy.exists():
        shutil.rmtree(copy)
    with RawClient(cluster.bootstrap) as client:
        producer = client.init_producer_id(CUT_ID, MAX_TRANSACTION_TIMEOUT_MS)
        client.add_partitions_to_txn(CUT_ID, producer, [(CUT_TOPIC, p) for p in range(3)])
        data = [client.produce_transactional(CUT_ID, producer, CUT_TOPIC, p, [b"cut-%d-0" % p, b"cut-%d-1" % p], old)
                for p in range(3)]
        data_end = {p: b.base_offset + b.record_count for p, b in enumerate(data)}
        # step 1 once every node has checkpointed the data's high watermark: older than the logs
        for node, log_dir in cluster.log_dirs.items():
            wait_for(lambda: [_checkpointed(log_dir, "replication-offset-checkpoint", CUT_TOPIC, p)
                              for p in range(3)],
                     lambda hws: hws == [data_end[p] for p in range(3)], timeout=30, every=0.2,
                     failure=lambda hws: f"node {node}'s checkpointed high watermarks {hws}")
        top = {node: _top_files(log_dir, copy / f"broker-{node}") for node, log_dir in cluster.log_dirs.items()}
        checkpoints = {node: {name: {p: _checkpointed(copy / f"broker-{node}", name, CUT_TOPIC, p) for p in range(3)}
                              for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint")}
                       for node in cluster.log_dirs}
        client.end_txn(CUT_ID, producer, committed=True)
    settled = {p: wait_settled(cluster, CUT_TOPIC, p) for p in range(3)}
    # step 2, interrupted at the same place on every node (the connection to all of them dropped)
    folders = {node: _folders_interrupted(log_dir, copy / f"broker-{node}") for node, log_dir in cluster.log_dirs.items()}
    ctx.live_copy = copy
    ctx.copy_mode = {"mode": "live_cut",
                     "method": "README's two steps on the running cluster: the files at the top of each log dir, "
                               "then its partition folders in rsync's order, killed inside "
                               f"{CUT_FOLDER}'s .log on every node"}
    ctx.note("live_cut_copy", topic=CUT_TOPIC, transactional_id=CUT_ID, producer_id=producer.producer_id,
             producer_epoch=producer.producer_epoch, data_end=data_end, last_timestamp_ms=old,
             end_offsets_after_commit=settled, top_files=top, checkpoints_at_step_1=checkpoints,
             step_2=folders)


def build(out_root: Path, work_root: Path) -> dict:
    from tools.kafka.fixtures import build_cluster

    truth = build_cluster(CUT_CLUSTER, out_root, work_root)
    doc = " ".join((live_cut_copy.__doc__ or "").split())
    (out_root / "README.md").write_text(
        "# A live cluster's copy, cut as an operator's copy is cut\n\n"
        "Built by `python -m tools.kafka.cutcopy build` (tools/kafka/cutcopy.py says why it is apart from "
        "`fixtures/<cluster>/`). The cluster is made as fixtures/README.md says (Kafka "
        f"{truth['kafka_version']}, 3 KRaft nodes, transaction.version 2, truth/ recorded live), but its "
        "copy was made while it ran:\n\n"
        f"### `live_cut_copy` (cluster: `{CUT_CLUSTER}`)\n\n{doc}\n")
    return truth


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.kafka.cutcopy")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", default=str(REPO / "fixtures" / "live-cut"))
    b.add_argument("--work", default=str(REPO / ".work" / "fixtures"))
    a = ap.parse_args(argv)
    truth = build(Path(a.out), Path(a.work))
    print(json.dumps({"dumps": len(truth["dumps"]), "timings": truth["timings"]}))
    return 0
