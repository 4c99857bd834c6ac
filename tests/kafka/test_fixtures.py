"""Fast checks (no JVM, no cluster) that the committed fixture clusters and their recorded
ground truth agree with each other. Every number compared here was recorded from Kafka."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.kafka.conftest import FIXTURES, fixture_clusters, load_truth
from tests.killed_fixtures import KILLED_CLUSTERS
from tests.killed_fixtures import STORED as KILLED_STORED
from tests.killed_fixtures import STORED_TRIMMED, TRIMMED_CLUSTERS
from tools.kafka.fixtures import DUMPABLE, dump_args

# a fixture copy must stay small enough to commit (the issue asks for a few MB in all): what
# git stores, each file zlib-compressed as in its object database
MAX_FIXTURES_BYTES = 8 * 1024 * 1024
# Kafka 4.4.0 leaves __cluster_metadata's active .index/.timeindex at their preallocated
# 10 MiB after a clean stop (4.1.1 trims them): real files, kept as the broker left them,
# a few KB each in git. Any other file this large would be real bloat.
PREALLOCATED_INDEX_BYTES = 10 * 1024 * 1024


def _copied_files(cluster_dir: Path) -> list[Path]:
    brokers = cluster_dir / "brokers"
    return sorted(p.relative_to(brokers) for p in brokers.rglob("*") if p.is_file())


def _dump(cluster_dir: Path, rel: str) -> str:
    return (cluster_dir / "truth" / "dump" / f"{rel}.txt").read_text()


def _needs(truth: dict, *scenarios: str) -> None:
    """Fixture clusters run different scenario sets; check only what this one ran."""
    missing = [s for s in scenarios if s not in truth["scenarios"]]
    if missing:
        pytest.skip(f"{truth['cluster_name']} did not run {missing}")


def _partition(truth: dict, topic: str, partition: int) -> dict:
    return next(p for p in truth["partitions"]
                if p["topic"] == topic and p["partition"] == partition)


def _log_dir(cluster_dir: Path, broker, part_dir: str) -> str:
    """The copied log dir of ``broker`` holding ``part_dir``, relative to brokers/: broker-<id>,
    or for a JBOD node (truth.json copied_log_dirs) broker-<id>-disk<k> when it is there."""
    dirs = [f"broker-{broker}", *sorted(d.name for d in (cluster_dir / "brokers").glob(f"broker-{broker}-disk*"))]
    held = [d for d in dirs if (cluster_dir / "brokers" / d / part_dir).is_dir()]
    return held[0] if held else dirs[0]


def _segments(cluster_dir: Path, broker: str, part_dir: str, suffix: str) -> list[Path]:
    return sorted((cluster_dir / "brokers" / _log_dir(cluster_dir, broker, part_dir) / part_dir).glob(f"*{suffix}"))


def test_both_transaction_versions_are_committed():
    versions = {load_truth(c)["transaction_version"]: c.name for c in fixture_clusters()}
    assert {1, 2} <= set(versions), versions


def test_fixtures_are_small():
    import zlib
    files = [p for p in FIXTURES.rglob("*") if p.is_file()]
    stored = sum(len(zlib.compress(p.read_bytes())) for p in files)
    assert stored < MAX_FIXTURES_BYTES, stored
    for p in files:
        if p.stat().st_size > 1024 * 1024:
            data = p.read_bytes()
            entries = data.rstrip(b"\0")
            assert p.suffix in (".index", ".timeindex") and len(data) <= PREALLOCATED_INDEX_BYTES, p
            assert len(entries) < 64 * 1024, p  # the entries, then the zero-filled preallocation


def test_every_dumpable_copied_file_has_a_dump_and_nothing_else_does(fixture_cluster):
    cluster_dir, truth = fixture_cluster
    dumpable = {str(r) for r in _copied_files(cluster_dir) if dump_args(r) is not None}
    assert dumpable and dumpable == set(truth["dumps"])
    dumps = {str(p.relative_to(cluster_dir / "truth" / "dump"))[:-len(".txt")]
             for p in (cluster_dir / "truth" / "dump").rglob("*.txt")
             if not p.name.endswith(".stderr.txt")}
    assert dumps == dumpable
    notes = truth.get("scenario_notes") or {}
    crashed = {f"broker-{n}/" for n in truth.get("stopped_brokers") or ()
               if "SIGKILL" in (notes.get("markers_pending", {}).get("stop"), notes.get("killed_broker", {}).get("stop"))}
    for rel, run in truth["dumps"].items():
        if run["exit_code"] != 0:
            # Only on a broker killed with SIGKILL: the active segment's index, still
            # preallocated (zeros), of an empty log: its entry 0 points at no batch and
            # DumpLogSegments.dumpIndex (4.1.1's, 3.9.2's and 4.4.0's) dies (NoSuchElementException) before printing it.
            err = (cluster_dir / "truth" / "dump" / f"{rel}.stderr.txt").read_text()
            log = cluster_dir / "brokers" / (rel[:-len(".index")] + ".log")
            assert rel.startswith(tuple(crashed)) and rel.endswith(".index"), rel
            assert log.stat().st_size == 0 and "NoSuchElementException" in err, rel
        assert _dump(cluster_dir, rel).startswith(f"Dumping {rel}\n"), rel
        assert (cluster_dir / "truth" / "dump" / f"{rel}.stderr.txt").exists()


def test_segment_files_of_every_partition_are_dumped(fixture_cluster):
    cluster_dir, truth = fixture_cluster
    logs = [r for r in _copied_files(cluster_dir) if r.suffix == ".log"]
    assert logs
    for r in logs:
        assert str(r) in truth["dumps"]
        assert r.name.endswith(DUMPABLE)


def test_every_replica_of_every_partition_was_copied(fixture_cluster):
    cluster_dir, truth = fixture_cluster
    assert truth["copy"]["mode"] in ("after_clean_stop", "live")
    stopped = set(truth.get("stopped_brokers") or ())  # the pending cluster stops one node
    for p in truth["partitions"]:
        # the ISR is every replica but the stopped nodes, and a stopped node's folder is copied too
        assert sorted(p["isr"]) == sorted(set(p["replicas"]) - stopped), p
        for b in p["replicas"]:
            # in one of the node's copied log dirs (several for a JBOD node), exactly one
            dirs = truth.get("copied_log_dirs", {}).get(str(b), [f"brokers/broker-{b}"])
            found = [cluster_dir / d / f"{p['topic']}-{p['partition']}" for d in dirs]
            assert [(d / "partition.metadata").exists() for d in found].count(True) == 1, found


def test_offsets_are_ordered(fixture_cluster):
    _, truth = fixture_cluster
    for p in truth["partitions"]:
        assert 0 <= p["log_start_offset"] <= p["last_stable_offset"] <= p["high_watermark"], p
        # a quiescent cluster with a full ISR: every replica's LEO is the high watermark
        assert set(p["log_end_offsets"].values()) == {p["high_watermark"]}, p


def test_clean_stop_recovery_points_are_the_recorded_log_end_offsets(fixture_cluster):
    """After a clean shutdown the broker flushes everything: recovery-point-offset-checkpoint
    (in the copy) must equal the LEO the live broker reported over JMX."""
    cluster_dir, truth = fixture_cluster
    assert truth["copy"]["mode"] == "after_clean_stop"
    for p in truth["partitions"]:
        for b, leo in p["log_end_offsets"].items():
            part_dir = f"{p['topic']}-{p['partition']}"
            ckpt = cluster_dir / "brokers" / _log_dir(cluster_dir, b, part_dir) / "recovery-point-offset-checkpoint"
            lines = ckpt.read_text().splitlines()[2:]
            points = {(t, int(n)): int(o) for t, n, o in (ln.split() for ln in lines)}
            assert points[(p["topic"], p["partition"])] == leo, (p["topic"], p["partition"], b)


def test_open_transaction_pins_the_lso_at_its_first_offset(fixture_cluster):
    """Kafka's rule: LSO = the smallest CurrentTransactionStartOffset of the partition's
    producers (describe-producers), else the high watermark; on every replica."""
    _, truth = fixture_cluster
    for p in truth["partitions"]:
        for broker, run in p["producers"].items():
            assert run["exit_code"] == 0
            starts = [int(r["CurrentTransactionStartOffset"]) for r in run["rows"]
                      if r["CurrentTransactionStartOffset"] != "None"]
            expected = min(starts) if starts else p["high_watermark"]
            assert p["last_stable_offset"] == expected, (p["topic"], p["partition"], broker)


def test_still_open_transaction_is_ongoing_and_not_hanging(fixture_cluster):
    _, truth = fixture_cluster
    _needs(truth, "txn_open")
    notes = truth["scenario_notes"]["txn_open"]
    tid = notes["transactional_id"]
    (desc,) = truth["describe"][tid]["rows"]
    assert desc["TransactionState"] == "Ongoing"
    assert set(desc["TopicPartitions"].split(",")) == {f"{t}-{p}" for t, p in notes["open_on"]}
    for t, part in notes["open_on"]:
        p = _partition(truth, t, part)
        assert p["last_stable_offset"] < p["high_watermark"]
        open_pids = {r["ProducerId"] for rows in p["producers"].values() for r in rows["rows"]
                     if r["CurrentTransactionStartOffset"] != "None"}
        assert open_pids == {desc["ProducerId"]}
    # the coordinator knows the transaction, so find-hanging does not report it
    for run in truth["find_hanging"].values():
        assert run["exit_code"] == 0
        assert not [r for r in run["rows"] if [r["Topic"], int(r["Partition"])] in notes["open_on"]
                    and r["ProducerId"] == desc["ProducerId"]]


def test_aborted_partitions_carry_txnindex_entries(fixture_cluster):
    cluster_dir, truth = fixture_cluster
    _needs(truth, "txn_basic")
    notes = truth["scenario_notes"]["txn_basic"]
    pid = next(r["ProducerId"] for r in truth["transactions"]["rows"]
               if r["TransactionalId"] == notes["transactional_id"])
    for t, part in notes["aborted"]:
        for b in _partition(truth, t, part)["replicas"]:
            idx = _segments(cluster_dir, b, f"{t}-{part}", ".txnindex")
            text = "".join(_dump(cluster_dir, f"{_log_dir(cluster_dir, b, f'{t}-{part}')}/{t}-{part}/{f.name}")
                           for f in idx)
            assert f"producerId: {pid} " in text, (t, part, b)
    committed_only = {tuple(x) for x in notes["committed"]} - {tuple(x) for x in notes["aborted"]}
    for t, part in committed_only:
        for b in _partition(truth, t, part)["replicas"]:
            assert not _segments(cluster_dir, b, f"{t}-{part}", ".txnindex")


def test_send_offsets_put_a_transactional_batch_and_marker_in_consumer_offsets(fixture_cluster):
    cluster_dir, truth = fixture_cluster
    _needs(truth, "txn_basic")
    group = truth["scenario_notes"]["txn_basic"]["group_id"]
    texts = {str(r): _dump(cluster_dir, str(r)) for r in _copied_files(cluster_dir)
             if r.parts[1].startswith("__consumer_offsets-") and r.suffix == ".log"}
    hits = [rel for rel, text in texts.items() if f'"group":"{group}"' in text or group in text]
    assert hits
    for rel in hits:
        text = texts[rel]
        assert "isTransactional: true isControl: false" in text
        assert "endTxnMarker: COMMIT" in text


def test_coordinator_timeout_abort_and_fencing(fixture_cluster):
    cluster_dir, truth = fixture_cluster
    _needs(truth, "timeout_abort", "fenced")
    notes = truth["scenario_notes"]
    assert notes["timeout_abort"]["coordinator_state"] == "CompleteAbort"
    assert notes["fenced"]["zombie_commit_error"] == "_FENCED"
    for name in ("timeout_abort", "fenced"):
        topic = notes[name]["topic"]
        text = _dump(cluster_dir, f"broker-0/{topic}-0/00000000000000000000.log")
        data_epochs = [int(e) for e in re.findall(
            r"producerEpoch: (\d+) .*isControl: false", text)]
        abort_epochs = [int(e) for e in re.findall(
            r"producerEpoch: (\d+) .*isControl: true.*\n\| .*endTxnMarker: ABORT", text)]
        assert data_epochs and abort_epochs, name
        # the coordinator aborts with a bumped epoch (timeout, or the new producer's init)
        assert min(abort_epochs) > min(data_epochs), name


def test_every_codec_is_on_disk(fixture_cluster):
    cluster_dir, truth = fixture_cluster
    _needs(truth, "codecs")
    text = _dump(cluster_dir, "broker-0/codecs-0/00000000000000000000.log")
    codecs = set(re.findall(r"compresscodec: (\w+)", text))
    assert codecs == {"none", "gzip", "snappy", "lz4", "zstd"}


def test_transaction_straddles_segments(fixture_cluster):
    cluster_dir, truth = fixture_cluster
    _needs(truth, "segment_roll")
    for b in _partition(truth, "straddle", 0)["replicas"]:
        assert len(_segments(cluster_dir, b, "straddle-0", ".log")) > 2
        straddling = []
        for idx in _segments(cluster_dir, b, "straddle-0", ".txnindex"):
            base = int(idx.name.split(".")[0])
            for first in re.findall(r"firstOffset: (\d+)",
                                    _dump(cluster_dir, f"broker-{b}/straddle-0/{idx.name}")):
                straddling.append(int(first) < base)
        assert any(straddling), b


def test_compacted_topic_was_cleaned(fixture_cluster):
    cluster_dir, truth = fixture_cluster
    _needs(truth, "compacted")
    for b in _partition(truth, "compacted", 0)["replicas"]:
        ckpt = (cluster_dir / "brokers" / f"broker-{b}" / "cleaner-offset-checkpoint").read_text()
        assert re.search(r"^compacted 0 \d+$", ckpt, re.M), b
        # the cleaner's replaced segments wait for their async delete (file.delete.delay.ms)
        assert _segments(cluster_dir, b, "compacted-0", ".log.deleted"), b
    assert truth["scenario_notes"]["compacted"]["cleaner_checkpoint"]


def test_compacted_tv2_leaves_the_producer_only_an_emptied_marker(fixture_cluster):
    """What the compacted_tv2 scenario claims, read from kafka-dump-log of the same release:
    on every replica the TV2 producer's only batch left is a control batch with no record
    (count 0), yet describe-producers reports the epoch, coordinator epoch and timestamp the
    cleaner removed, and the newest producer snapshot holds them."""
    cluster_dir, truth = fixture_cluster
    _needs(truth, "compacted_tv2")
    topic = truth["scenario_notes"]["compacted_tv2"]["topic"]
    part = _partition(truth, topic, 0)
    for b in part["replicas"]:
        ckpt = (cluster_dir / "brokers" / f"broker-{b}" / "cleaner-offset-checkpoint").read_text()
        assert re.search(rf"^{topic} 0 \d+$", ckpt, re.M), b
        batches = [_fields(line) for log in _segments(cluster_dir, b, f"{topic}-0", ".log")
                   for line in _dump(cluster_dir, f"broker-{b}/{topic}-0/{log.name}").splitlines()
                   if line.startswith("baseOffset: ")]
        txn = [x for x in batches if x["isTransactional"] == "true"]
        assert [(x["isControl"], x["count"]) for x in txn] == [("true", "0")], b
        [row] = [r for r in part["producers"][str(b)]["rows"] if r["ProducerId"] == txn[0]["producerId"]]
        assert (row["ProducerEpoch"], row["LastTimestamp"]) == (txn[0]["producerEpoch"], txn[0]["CreateTime"]), b
        assert row["LatestCoordinatorEpoch"] != "-1", b
        newest = _segments(cluster_dir, b, f"{topic}-0", ".snapshot")[-1]
        held = _dump(cluster_dir, f"broker-{b}/{topic}-0/{newest.name}")
        assert (f"producerId: {row['ProducerId']} producerEpoch: {row['ProducerEpoch']} "
                f"coordinatorEpoch: {row['LatestCoordinatorEpoch']} ") in held, b


_FIELD = re.compile(r"(\w+): (\S+)")


def _fields(line: str) -> dict[str, str]:
    return dict(_FIELD.findall(line))


def test_readme_documents_every_recorded_scenario():
    readme = (FIXTURES / "README.md").read_text()
    assert "make fixtures" in readme
    for c in fixture_clusters():
        truth = load_truth(c)
        # the killed-broker clusters (restored copies) are described in fixtures/killed/README.md,
        # fixtures/trimmed's in its own
        stored = (KILLED_STORED if c in KILLED_CLUSTERS
                  else STORED_TRIMMED if c in TRIMMED_CLUSTERS.values() else FIXTURES)
        readme = stored.joinpath("README.md").read_text()
        assert f"`{c.name}`: transaction.version={truth['transaction_version']}" in readme
        for name in truth["scenarios"]:
            assert f"### `{name}`" in readme, name


def test_librdkafka_markers_keep_the_data_epoch_on_both_transaction_versions(fixture_cluster):
    """librdkafka does not negotiate KIP-890 part 2: even on a TV2 cluster its COMMIT markers
    carry the producer epoch of the data (a TV2 client's markers carry epoch + 1)."""
    cluster_dir, truth = fixture_cluster
    _needs(truth, "txn_basic")
    text = _dump(cluster_dir, "broker-0/txn-a-0/00000000000000000000.log")
    batches = re.findall(r"producerEpoch: (\d+) .*isControl: (true|false)", text)
    assert {e for e, _ in batches} == {"0"} and {c for _, c in batches} == {"true", "false"}
