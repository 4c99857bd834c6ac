"""`logscan dump` against kafka-dump-log's recorded output on the real-broker fixtures.

For every ``fixtures/<cluster>/truth/dump/<path>.txt`` (recorded by tools/kafka/fixtures.py
from the kafka-dump-log of the cluster's own release, truth.json ``kafka_version``, with
``--files <file>`` and the arguments it lists in truth.json), `logscan dump` with the same
arguments, run from ``fixtures/<cluster>/brokers``, must print the same stdout; where
kafka-dump-log exited 0 the Kafka part of stderr must match too, and logscan must exit 0
unless it printed a finding of its own. No Java needed.

Each cluster's files are dumped with ``--kafka-version`` of its release: the recorded text is
that release's own, with nothing rewritten (logscan.dump.versions says what differs).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.dump.versions import RELEASES

from tests.killed_fixtures import KILLED_CLUSTERS, TRIMMED_CLUSTERS

from .kafkatool import logscan_kafka_stderr_lines

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

#: Known, justified differences: {(cluster, path relative to brokers/): reason}. Empty: every
#: recorded file matches.
KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {}
#: truth.json's kafka_version -> the --kafka-version printing its text.
VERSION_OF = {release: version for version, release in RELEASES.items()}


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
                            ("__cluster_metadata-", "--cluster-metadata-decoder"),
                            ("__remote_log_metadata-", "--remote-log-metadata-decoder"),
                            ("__share_group_state-", "--share-group-state-decoder")):
            if part_dir.startswith(prefix):
                args.append(opt)
        return args
    return []


def _cases():
    cases = []
    # the SIGKILLed-broker clusters of 3.9.2 and 4.4.0 and fixtures/trimmed's clusters from
    # their restored copies (their stored metadata-log indexes lack the zero tail
    # kafka-dump-log read)
    for cluster in (sorted(p for p in FIXTURES.glob("*") if (p / "truth" / "dump").is_dir()) + KILLED_CLUSTERS
                    + list(TRIMMED_CLUSTERS.values())):
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
    result = CliRunner().invoke(main, ["dump", "--kafka-version", VERSION_OF[version], *args, "--files", rel])
    # Both as bytes decoded without newline translation: a CR in a payload must match too.
    truth = (cluster / "truth" / "dump" / f"{rel}.txt").read_bytes().decode("utf-8")
    ours = result.stdout_bytes.decode("utf-8", "replace").splitlines(True)
    if exit_code != 0:
        # kafka-dump-log died on this file (a crashed broker's preallocated index of an empty
        # log): logscan prints what it printed, says where and why, goes on, and exits 1
        assert ours[:len(truth.splitlines(True))] == truth.splitlines(True)
        assert result.exit_code == 1 and "logscan: " in result.stderr, result.stderr
        return
    assert ours == truth.splitlines(True)
    if exit_code == 0:
        err_file = cluster / "truth" / "dump" / f"{rel}.stderr.txt"
        recorded = err_file.read_text().splitlines() if err_file.exists() else []
        recorded = [_relative(line) for line in recorded if line.strip()]
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
