"""`logscan dump` against kafka-dump-log's recorded output on the real-broker fixtures.

For every ``fixtures/<cluster>/truth/dump/<path>.txt`` (recorded by tools/kafka/fixtures.py
from the kafka-dump-log of the cluster's own release, truth.json ``kafka_version``, with
``--files <file>`` and the arguments it lists in truth.json), `logscan dump` with the same
arguments, run from ``fixtures/<cluster>/brokers``, must print the same stdout; where
kafka-dump-log exited 0 the Kafka part of stderr must match too, and logscan must exit 0
unless it printed a finding of its own. No Java needed.

`logscan dump` prints kafka-dump-log 4.1.1's text. Where a newer release prints a line
differently, ``TEXT_CHANGES`` rewrites logscan's line the way that release prints it before
the comparison, one named rule per change, so that anything else still fails.
"""

from __future__ import annotations

import json
import os
import re
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.format.txnlog import TRANSACTION_STATES

from .kafkatool import logscan_kafka_stderr_lines

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

#: Known, justified differences: {(cluster, path relative to brokers/): reason}. Empty: every
#: recorded file matches.
KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {}


def _state_names(line: str) -> str:
    """--transaction-log-decoder: 4.4.0 prints ``"transactionStatus":"Ongoing"`` where 4.1.1
    printed the persisted id, ``"transactionStatus":1``."""
    return _TXN_STATUS.sub(lambda m: f'"transactionStatus":"{TRANSACTION_STATES[int(m[1])]}"', line)


def _snapshot_without_trailing_space(line: str) -> str:
    """Producer snapshot entries: 4.1.1 ends each ``producerId: ...`` line with a space,
    4.4.0 (the Java DumpLogSegments) does not."""
    if line.startswith("producerId: ") and line.endswith(" \n"):
        return line[:-2] + "\n"
    return line


_TXN_STATUS = re.compile(r'"transactionStatus":(\d+)')


def _java_hash(text: str) -> int:
    """java.lang.String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    for unit in struct.unpack(f"<{len(text.encode('utf-16-le')) // 2}H", text.encode("utf-16-le")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h


def _scala_hash_set_order(partitions: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The iteration order of a Scala 2.13 ``mutable.HashSet[TopicPartition]`` holding
    ``partitions``: the table (16 slots, doubled when an add reaches 3/4 of it) is walked
    slot by slot, each slot's nodes sorted by their improved hash (``h ^ (h >>> 16)`` of
    TopicPartition.hashCode, ``31 * (31 + partition) + topic.hashCode()``)."""
    size = 16
    for count in range(len(partitions)):
        if count + 1 >= size * 3 // 4:
            size *= 2

    def improved(tp):
        h = (31 * (31 + tp[1]) + _java_hash(tp[0])) & 0xFFFFFFFF
        return h ^ (h >> 16)

    return sorted(partitions, key=lambda tp: (improved(tp) & (size - 1), improved(tp)))


_TXN_KEY = re.compile(r" key: (?=\{)")


def _scala_transaction_log_text(line: str) -> str:
    """--transaction-log-decoder: 3.9.2 prints the Scala TransactionLog.formatRecordKeyAndValue
    text (``key: transaction_metadata::transactionalId=ID payload: producerId:P,producerEpoch:E,
    state=NAME,partitions=[t-p,...],txnLastUpdateTimestamp=T,txnTimeoutMs=M``, the partitions in
    the order of the mutable.HashSet the value is read into, no start timestamp) where 4.1.1
    prints the key and value as JSON."""
    m = _TXN_KEY.search(line)
    if not m or not line.startswith("| offset: "):
        return line
    decoder = json.JSONDecoder()
    key, end = decoder.raw_decode(line, m.end())
    if key.get("type") != "0":
        return line
    out = f"{line[:m.start()]} key: transaction_metadata::transactionalId={key['data']['transactionalId']}"
    rest = line[end:]
    if not rest.startswith(" payload: {"):
        return out + rest
    value, vend = decoder.raw_decode(rest, len(" payload: "))
    d = value["data"]
    parts = [(t["topic"], p) for t in d["transactionPartitions"] or () for p in t["partitionIds"]]
    listed = ",".join(f"{t}-{p}" for t, p in _scala_hash_set_order(parts))
    return (f"{out} payload: producerId:{d['producerId']},producerEpoch:{d['producerEpoch']},"
            f"state={TRANSACTION_STATES[d['transactionStatus']]},partitions=[{listed}],"
            f"txnLastUpdateTimestamp={d['transactionLastUpdateTimestampMs']},"
            f"txnTimeoutMs={d['transactionTimeoutMs']}{rest[vend:]}")


_LEADER_CHANGE = re.compile(r" LeaderChange: \{.*\}$")


def _leader_change_by_type_only(line: str) -> str:
    """A LEADER_CHANGE control record: 3.9.2's DumpLogSegments decodes only ABORT/COMMIT,
    SnapshotHeader/Footer, KRaftVersion and KRaftVoters control records and prints any other
    as ``controlType: NAME(id)``; 4.1.1 prints ``LeaderChange: {json}``."""
    return _LEADER_CHANGE.sub(" controlType: LEADER_CHANGE(2)", line)


#: {kafka_version: rewrites of logscan's (4.1.1) stdout lines into that release's text}.
TEXT_CHANGES = {"4.4.0": (_state_names, _snapshot_without_trailing_space),
                "3.9.2": (_scala_transaction_log_text, _leader_change_by_type_only)}

_FIRST_OFFSET_GAP = re.compile(r"^  -1 is followed by \d+$")
_NOT_FOUND_IN = re.compile(r"^The following indexed offsets are not found in :.*$")


def _without_first_offset_gaps(lines: list[str]) -> list[str]:
    """4.4.0's "-1 is followed by N" lines dropped, and a block header left without lines."""
    kept = [line for line in lines if not _FIRST_OFFSET_GAP.match(line)]
    return [line for i, line in enumerate(kept)
            if not (line.startswith("Non-consecutive offsets in ")
                    and (i + 1 == len(kept) or not kept[i + 1].startswith("  ")))]


def _not_found_in_the_log(lines: list[str]) -> list[str]:
    return [_NOT_FOUND_IN.sub("The following indexed offsets are not found in the log.", line)
            for line in lines]


#: {kafka_version: rewrites of that release's stderr lines into 4.1.1's}, for the Kafka part of
#: stderr; test_kafka_4_4 checks on the 4.1.1 clusters' files that the list is complete.
STDERR_TO_4_1_1 = {"4.4.0": (_without_first_offset_gaps, _not_found_in_the_log)}


def _default_args(rel: str) -> list[str]:
    """tools/kafka/fixtures.py dump_args, for truth recorded before truth.json existed."""
    name = os.path.basename(rel)
    part_dir = os.path.basename(os.path.dirname(rel))
    if name == "bootstrap.checkpoint":
        return ["--deep-iteration", "--print-data-log", "--cluster-metadata-decoder"]
    if name.endswith((".log", ".checkpoint")):
        args = ["--deep-iteration", "--print-data-log"]
        for prefix, opt in (("__transaction_state-", "--transaction-log-decoder"),
                            ("__consumer_offsets-", "--offsets-decoder"),
                            ("__cluster_metadata-", "--cluster-metadata-decoder")):
            if part_dir.startswith(prefix):
                args.append(opt)
        return args
    return []


def _cases():
    cases = []
    for cluster in sorted(p for p in FIXTURES.glob("*") if (p / "truth" / "dump").is_dir()):
        truth_json = cluster / "truth" / "truth.json"
        truth = json.loads(truth_json.read_text()) if truth_json.exists() else {}
        dumps = truth.get("dumps", {})
        version = truth.get("kafka_version", "4.1.1")
        dump_dir = cluster / "truth" / "dump"
        for txt in sorted(dump_dir.rglob("*.txt")):
            if txt.name.endswith(".stderr.txt"):
                continue
            rel = str(txt.relative_to(dump_dir))[: -len(".txt")]
            if not (cluster / "brokers" / rel).is_file():
                continue
            meta = dumps.get(rel, {})
            cases.append(pytest.param(cluster, rel, meta.get("args", _default_args(rel)),
                                      meta.get("exit_code", 0), version, id=f"{cluster.name}/{rel}"))
    return cases


CASES = _cases()


@pytest.mark.skipif(not CASES, reason="no recorded fixtures under fixtures/*/truth/dump")
@pytest.mark.parametrize("cluster,rel,args,exit_code,version", CASES)
def test_matches_recorded_kafka_dump_log(cluster, rel, args, exit_code, version, monkeypatch):
    if (cluster.name, rel) in KNOWN_DIFFERENCES:
        pytest.skip(KNOWN_DIFFERENCES[(cluster.name, rel)])
    monkeypatch.chdir(cluster / "brokers")
    result = CliRunner().invoke(main, ["dump", *args, "--files", rel])
    # Both as bytes decoded without newline translation: a CR in a payload must match too.
    truth = (cluster / "truth" / "dump" / f"{rel}.txt").read_bytes().decode("utf-8")
    ours = result.stdout_bytes.decode("utf-8", "replace").splitlines(True)
    for rewrite in TEXT_CHANGES.get(version, ()):
        ours = [rewrite(line) for line in ours]
    assert ours == truth.splitlines(True)
    if exit_code == 0:
        err_file = cluster / "truth" / "dump" / f"{rel}.stderr.txt"
        recorded = err_file.read_text().splitlines() if err_file.exists() else []
        recorded = [_relative(line) for line in recorded if line.strip()]
        for rule in STDERR_TO_4_1_1.get(version, ()):
            recorded = rule(recorded)
        ours = [_relative(line) for line in logscan_kafka_stderr_lines(result.stderr_bytes)]
        assert ours == recorded
        # kafka-dump-log's exit code, also where it only warns (index entries that
        # disagree with the log): real broker files hold no damage
        assert result.exit_code == 0, result.stderr_bytes.decode("utf-8", "replace")


_BROKER_PATH = re.compile(r"[^\s:]*?/(broker-\d+/)")  # not the ':' of "Found ... in :F"


def _relative(line: str) -> str:
    """Absolute paths (Kafka's end-of-run blocks print File.getAbsolutePath) cut to the part
    from ``broker-N/``: the recorder ran from elsewhere and rewrote them only partly."""
    return _BROKER_PATH.sub(r"\1", line)
