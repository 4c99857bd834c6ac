"""A broker killed with SIGKILL, copied as the crash left it, on Kafka 3.9.2 and 4.4.0 (issue 32).

The ``pending`` cluster (Kafka 4.1.1, tools.kafka.hanging ``markers_pending``) has one such
node; these clusters run the same scenario on the oldest and the newest release the fixtures
cover: ``killed-3.9`` (3.9.2, transaction.version 0, the highest its ``kafka-storage format``
accepts) and ``killed-4.4`` (4.4.0, transaction.version 2), default broker settings but the
harness's small index size (``log.index.size.max.bytes``: the killed node's topic partitions
keep their active indexes preallocated, at 4 KiB).

They live in ``fixtures/killed/<cluster>/``, not ``fixtures/<cluster>/``: the metadata log's
indexes are preallocated to 10 MiB whatever the broker config says (on the killed node, and on
4.4.0 after a clean stop too), so they are stored trimmed (tools/kafka/trimmed.py, manifest
``trimmed.json``) and every test reads the copy :func:`tools.kafka.trimmed.restore` makes
under ``.work``, never the stored files.

CLI::

    python -m tools.kafka.killed build [--out fixtures/killed] [--work .work/fixtures]
                                       [--only killed-4.4]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tools.kafka.cluster import REPO
from tools.kafka.hanging import (HANG_AGE_MS, PENDING_DONE_TOPIC, PENDING_TOPIC, create_pending_markers)
from tools.kafka.scenarios import CLUSTERS, ClusterSpec, ScenarioContext, scenario
from tools.kafka.trimmed import build_trimmed

if __name__ == "__main__":
    from tools.kafka import killed as _module
    sys.exit(_module.main())

KILLED_39_CLUSTER = "killed-3.9"
KILLED_44_CLUSTER = "killed-4.4"
KILLED_CLUSTERS = (KILLED_39_CLUSTER, KILLED_44_CLUSTER)
# 3.9.2 cannot be formatted above transaction.version 0 (tools.kafka.scenarios KAFKA_39_CLUSTER).
CLUSTERS.setdefault(KILLED_39_CLUSTER, ClusterSpec(transaction_version=0, kafka_version="3.9.2"))
CLUSTERS.setdefault(KILLED_44_CLUSTER, ClusterSpec(transaction_version=2, kafka_version="4.4.0"))


@scenario("killed_broker", clusters=KILLED_CLUSTERS)
def killed_broker(ctx: ScenarioContext) -> None:
    """``markers_pending`` (see it in fixtures/README.md) on the release of the cluster: the
    raw client's ``prepare-commit`` and ``prepare-abort`` write to ``pending``/0 (RF 3,
    ``min.insync.replicas=3``) and ``pending-done``/0; one node, neither coordinator nor
    leader, records its own describe-producers of both partitions (the notes'
    ``stopped_broker_producers``) and is killed with SIGKILL, never restarted: its log dir is
    copied as the crash left it (no ``.kafka_cleanshutdown``, no shutdown producer snapshots,
    active indexes preallocated). Then ``prepare-commit`` ends with EndTxn(commit) and
    ``prepare-abort`` is fenced by a new InitProducerId; the coordinators write PrepareCommit
    and PrepareAbort, the markers land on ``pending-done``/0 and not on ``pending``/0
    (NOT_ENOUGH_REPLICAS, retried), whose LSO stays at the first transaction's start.
    truth.json ``stopped_brokers`` names the killed node (not asked by the per-broker tools)."""
    old = int(time.time() * 1000) - HANG_AGE_MS
    ctx.note("killed_broker", commit_id="prepare-commit", abort_id="prepare-abort",
             topic=PENDING_TOPIC, done_topic=PENDING_DONE_TOPIC,
             **create_pending_markers(ctx.cluster, "prepare-commit", "prepare-abort",
                                      PENDING_TOPIC, PENDING_DONE_TOPIC, old, hard=True))


def build(out_root: Path, work_root: Path, only: list[str] | None = None) -> dict[str, dict]:
    built = build_trimmed(only or KILLED_CLUSTERS, out_root, work_root)
    write_readme(out_root)
    return built


def write_readme(out_root: Path) -> None:
    lines = []
    for name in KILLED_CLUSTERS:
        truth_json = out_root / name / "truth" / "truth.json"
        if not truth_json.exists():
            continue
        truth = json.loads(truth_json.read_text())
        manifest = json.loads((out_root / name / "trimmed.json").read_text())
        spec = CLUSTERS[name]
        trimmed = "".join(f"\n  - `{rel}`: {f['size']} bytes, stored {f['stored_size']}"
                          for rel, f in sorted(manifest["files"].items()))
        lines.append(f"- `{name}`: transaction.version={spec.transaction_version}, Kafka {truth['kafka_version']}, "
                     f"killed node {truth['stopped_brokers']}; trimmed:{trimmed or ' none'}")
    doc = " ".join((killed_broker.__doc__ or "").split())
    (out_root / "README.md").write_text(
        "# Clusters with a broker killed by SIGKILL, on Kafka 3.9.2 and 4.4.0\n\n"
        "Built by `python -m tools.kafka.killed build` (tools/kafka/killed.py). Each cluster is made as "
        "fixtures/README.md says (3 KRaft nodes, truth/ recorded live from the same release's tools, "
        "then a clean stop of the nodes still up, a plain copy, kafka-dump-log on every copied file).\n\n"
        "**Trimmed files.** A file larger than 256 KiB is stored without its zero tail: the "
        "KRaft metadata log's `.index`/`.timeindex` are preallocated to 10 MiB (LogConfig's default "
        "`segment.index.bytes`, which the metadata log's config does not take from the broker's "
        "`log.index.size.max.bytes`) on the killed node, and on Kafka 4.4.0 on every node even "
        "after a clean stop. `<cluster>/trimmed.json` lists each such file with its real size and "
        "the SHA-256 of its real bytes; `tools.kafka.trimmed.restore(fixtures/killed/<cluster>, "
        ".work/...)` copies the cluster and gives the files their zeros back (`os.truncate`), "
        "checked against the hash. Read the restored copy, never the stored one (the tests do: "
        "tests/scan/test_killed_broker.py). The dumps in truth/ were made from the real files.\n\n"
        "Clusters:\n" + "\n".join(lines) + "\n\n"
        f"### `killed_broker` (clusters: {', '.join(KILLED_CLUSTERS)})\n\n{doc}\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.kafka.killed")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", default=str(REPO / "fixtures" / "killed"))
    b.add_argument("--work", default=str(REPO / ".work" / "fixtures"))
    b.add_argument("--only", action="append", choices=KILLED_CLUSTERS)
    a = ap.parse_args(argv)
    print(json.dumps(build(Path(a.out), Path(a.work), a.only), indent=1))
    return 0
