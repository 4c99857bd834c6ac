"""Build the fixture clusters: run scenarios, record ground truth live, copy, dump every file.

    python -m tools.kafka.fixtures [--out fixtures] [--only tv2] [--scenario NAME ...]
                                   [--kafka-version 4.4.0]

For each entry of ``CLUSTERS``: start a fresh 3-node cluster of the Kafka release it names
(``--kafka-version`` runs the clusters built on another release instead), formatted at that
transaction version, run every registered scenario meant for it, record ``truth/`` from the live cluster
(tools.kafka.truth), stop the cluster cleanly (SIGTERM, so the brokers trim their preallocated
indexes and write producer snapshots and ``.kafka_cleanshutdown``), copy each node's log dir
to ``brokers/broker-<id>/`` (a plain recursive copy; the mode is recorded in truth.json) and
run kafka-dump-log of the same release (one JVM for all files) on every copied file into
``truth/dump/<same path>.txt``.
"""
from __future__ import annotations

import argparse
import importlib
import json
import shutil
import sys
import time
from pathlib import Path

from tools.kafka.cluster import LIBS, REPO, Cluster, copy_live_log_dir, run_java_tools
from tools.kafka.scenarios import CLUSTERS, SCENARIO_MODULES, SCENARIOS, ScenarioContext
from tools.kafka.truth import Recorder, _drop_slf4j_noise

# files kafka-dump-log understands, by suffix; everything else is copied but not dumped
DUMPABLE = (".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint")


def load_scenario_modules() -> None:
    for mod in SCENARIO_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:  # the module exists but is broken: that is a real error
                raise


def dump_args(rel: Path) -> list[str] | None:
    """kafka-dump-log arguments for one copied file, with the decoder its topic needs."""
    name = rel.name
    if not name.endswith(DUMPABLE):
        return None
    part_dir = rel.parent.name
    if name == "bootstrap.checkpoint":
        # KRaft's bootstrap metadata is written in the snapshot (.checkpoint) format
        return ["--deep-iteration", "--print-data-log", "--cluster-metadata-decoder"]
    if name.endswith((".log", ".checkpoint")):
        args = ["--deep-iteration", "--print-data-log"]
        if part_dir.startswith("__transaction_state-"):
            args.append("--transaction-log-decoder")
        elif part_dir.startswith("__consumer_offsets-"):
            args.append("--offsets-decoder")
        elif part_dir.startswith("__cluster_metadata-"):
            args.append("--cluster-metadata-decoder")
        elif part_dir.startswith("__remote_log_metadata-"):
            args.append("--remote-log-metadata-decoder")
        elif part_dir.startswith("__share_group_state-"):
            args.append("--share-group-state-decoder")
        return args
    return []


def dump_all(brokers_dir: Path, dump_dir: Path, libs: Path = LIBS, only: str | None = None) -> dict:
    """kafka-dump-log (of the release in ``libs``) on every dumpable copied file (with
    ``only``: on those whose partition folder starts with it); stdout, stderr and exit code
    per file."""
    files = sorted(p for p in brokers_dir.rglob("*") if p.is_file()
                   and (only is None or p.parent.name.startswith(only)))
    todo = [(f, dump_args(f.relative_to(brokers_dir))) for f in files]
    todo = [(f, a) for f, a in todo if a is not None]
    runs = run_java_tools([("kafka-dump-log", [*args, "--files", f]) for f, args in todo], libs=libs)
    result = {}
    for (f, args), cp in zip(todo, runs):
        rel = f.relative_to(brokers_dir)
        out = dump_dir / rel.parent / (rel.name + ".txt")
        out.parent.mkdir(parents=True, exist_ok=True)
        # the tool prints the absolute path it was given; store it relative to brokers/
        out.write_text(cp.stdout.replace(str(brokers_dir) + "/", ""))
        err = _drop_slf4j_noise(cp.stderr).replace(str(brokers_dir) + "/", "")
        (dump_dir / rel.parent / (rel.name + ".stderr.txt")).write_text(err)
        result[str(rel)] = {"args": args, "exit_code": cp.returncode}
    return result


def redump(cluster_out: Path, only: str) -> dict:
    """Record again the dumps of a built fixture's files whose partition folder starts with
    ``only`` (e.g. ``__remote_log_metadata-``), with today's :func:`dump_args` and the
    kafka-dump-log of the release that wrote them (truth.json ``kafka_version``); truth.json's
    ``dumps`` entries are replaced and ``redumped`` says what and when. For truth recorded
    before a decoder was passed: the files are the same, only the tool's arguments change."""
    from tools.kafka.cluster import libs_for

    truth_json = cluster_out / "truth" / "truth.json"
    truth = json.loads(truth_json.read_text())
    dumps = dump_all(cluster_out / "brokers", cluster_out / "truth" / "dump", libs_for(truth["kafka_version"]), only)
    truth["dumps"].update(dumps)
    truth.setdefault("redumped", {})[only] = {"files": len(dumps), "at_ms": int(time.time() * 1000)}
    truth_json.write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    return dumps


def copied_dirs(cluster: Cluster) -> dict[Path, str]:
    """Where each log dir of each node is copied, relative to the fixture: ``brokers/broker-<id>``,
    and for a JBOD node's further dirs ``brokers/broker-<id>-disk<k>`` (k = 2...)."""
    return {d: f"brokers/broker-{node}" + ("" if k == 1 else f"-disk{k}")
            for node, dirs in cluster.node_log_dirs.items() for k, d in enumerate(dirs, 1)}


def build_cluster(name: str, out_root: Path, work_root: Path,
                  only: set[str] | None = None, kafka_version: str | None = None) -> dict:
    load_scenario_modules()
    spec = CLUSTERS[name]
    kafka_version = kafka_version or spec.kafka_version
    out = out_root / name
    if out.exists():
        shutil.rmtree(out)
    truth_dir = out / "truth"
    timings = {}
    t0 = time.monotonic()
    prepared = spec.prepare(work_root / name) if spec.prepare else {}
    cluster = (spec.cluster_class or Cluster)(work_root / name, transaction_version=spec.transaction_version,
                      broker_config={**spec.broker_config, **prepared}, kafka_version=kafka_version,
                      log_dirs_per_node=spec.log_dirs, features=spec.features)
    cluster.start()
    timings["start_s"] = round(cluster.start_seconds, 1)
    ctx = ScenarioContext(cluster)
    ran = []
    try:
        for sc in SCENARIOS.values():
            if name in sc.clusters and (not only or sc.name in only):
                t = time.monotonic()
                sc.fn(ctx)
                timings[f"scenario.{sc.name}_s"] = round(time.monotonic() - t, 1)
                ran.append(sc.name)
        t = time.monotonic()
        truth = Recorder(cluster, truth_dir).record(ctx.notes)
        timings["truth_s"] = round(time.monotonic() - t, 1)
    finally:
        t = time.monotonic()
        cluster.stop()
        timings["stop_s"] = round(time.monotonic() - t, 1)
        ctx.keep_alive.clear()
    brokers = out / "brokers"
    copied = copied_dirs(cluster)
    if ctx.live_copy is not None:  # the scenario's own copy of the running cluster
        shutil.copytree(ctx.live_copy, brokers)
    else:
        for d, rel in copied.items():
            copy_live_log_dir(d, out / rel)
    post_copy = {fn.__name__: fn(out) for fn in ctx.post_copy}
    t = time.monotonic()
    dumps = dump_all(brokers, truth_dir / "dump", cluster.libs)
    timings["dump_s"] = round(time.monotonic() - t, 1)
    timings["total_s"] = round(time.monotonic() - t0, 1)
    truth.update({
        "kafka_version": cluster.kafka_version,
        "cluster_name": name,
        "broker_config": spec.broker_config,
        "features": spec.features,
        "scenarios": ran,
        "copy": ctx.copy_mode or {"mode": "after_clean_stop", "method": "recursive copy of each node's log dir"},
        "brokers": {str(n): f"brokers/broker-{n}" for n in cluster.log_dirs},
        # every copied log dir by node (a JBOD node has several)
        "copied_log_dirs": {str(n): [copied[d] for d in dirs] for n, dirs in cluster.node_log_dirs.items()},
        "dumps": dumps,
        "post_copy": post_copy,
        "timings": timings,
    })
    (truth_dir / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    return truth


README_INTRO = """\
# Fixture clusters recorded from real Apache Kafka brokers ({versions})

Regenerate everything from scratch (fresh clusters, about {minutes} minutes, needs Java 17 and
Maven for the jars): `make fixtures` (equivalently `make kafka-jars-all` then
`.venv/bin/python -m tools.kafka.fixtures`; one cluster: `--only tv2`). Each cluster runs the
Kafka release named below, from its own jars in `.kafka/<version>/libs` (`make kafka-jars
KAFKA_VERSION=<version>`); `--kafka-version` builds the chosen clusters on another release.
This README is written by the generator from the scenarios' docstrings.

Each `fixtures/<cluster>/` comes from one 3-node KRaft cluster (combined broker+controller,
loopback, internal topics with 3 partitions and replication factor 3, every topic replicated
on all 3 nodes) formatted with the `transaction.version` named below. After the scenarios ran,
`truth/` was recorded from the LIVE cluster with Kafka's own tools from the same jars
(`truth.json` `kafka_version`):
`truth/tools/*.stdout.txt|stderr.txt` hold the raw output of `kafka-transactions
describe-producers` (every replica of every partition, `--broker-id`), `find-hanging` per broker
(`--max-transaction-timeout` 0 and 15), `list`, `describe` of each transactional id, `kafka-topics
--describe`, `kafka-log-dirs --describe` and (clusters recorded since issue 35: `offsets`)
`kafka-consumer-groups --describe --all-groups` with `--offsets` and `--state` (truth.json
`consumer_groups`); `truth/truth.json` holds the same parsed plus the
log start offset, high watermark and read_committed end offset (LSO) of every partition
(ListOffsets) and the scenarios' own notes. Then the cluster was stopped cleanly (SIGTERM) and
each node's log dir copied with a plain recursive copy to `brokers/broker-<id>/`
(`truth.json` `copy.mode`; a cluster whose nodes have several `log.dirs`, a JBOD broker, has
its further dirs copied to `brokers/broker-<id>-disk2/`..., `truth.json` `copied_log_dirs`,
and `kafka-log-dirs --describe` in `truth.json` `log_dirs` names the dir of each replica); a
node a scenario stopped earlier (`truth.json` `stopped_brokers`)
was not asked by the per-broker tools and its log dir is copied as it was left.
`truth/dump/<same path>.txt` is kafka-dump-log's stdout for every
copied segment, index, time index, txn index, producer snapshot and metadata checkpoint
(`--deep-iteration --print-data-log`, plus `--transaction-log-decoder`, `--offsets-decoder`,
`--cluster-metadata-decoder`, `--remote-log-metadata-decoder` or `--share-group-state-decoder`
for internal topics; indexes plain), `.stderr.txt` its stderr,
exit codes in `truth.json` `dumps`. Paths in dumps are relative to `brokers/`. `tiered`'s
`__remote_log_metadata` segments were dumped again with their decoder after the build
(`python -m tools.kafka.fixtures --only tiered --redump __remote_log_metadata-`, the same
release's tool; truth.json `redumped`).

Because the copy follows a clean stop, active segments' indexes are trimmed (but Kafka 4.4.0
leaves `__cluster_metadata-0`'s at their preallocated 10 MiB, zeros after the entries), every
partition has the producer snapshot written at shutdown and each log dir has
`.kafka_cleanshutdown`.
`fixtures/killed/` (tools/kafka/killed.py, its own README) holds clusters of Kafka 3.9.2 and
4.4.0 with a broker killed by SIGKILL, as `pending` has on 4.1.1. The metadata log's
`.index`/`.timeindex` are preallocated to 10 MiB whatever the broker's
`log.index.size.max.bytes` (the metadata log's LogConfig keeps LogConfig's default
`segment.index.bytes`), so there every file over 256 KiB is stored trimmed to its last non-zero
byte, `trimmed.json` giving its real size and SHA-256: read them only through
`tools.kafka.trimmed.restore`, which copies the cluster under `.work` and gives the zeros back
(`os.truncate`); tests do so through tests/killed_fixtures.py. `fixtures/trimmed/`
(tools/kafka/trimmedclusters.py, its own README) holds, stored the same way, `marker-epochs`
on Kafka 4.4.0 and share-group clusters of 4.1.1 and 4.4.0 (real `__share_group_state`).
Kafka 3.9.2 (`kafka-3.9`) runs at transaction.version 0: its levels 1 and 2 need metadata
version 4.0-IV0, which 3.9.2's `kafka-storage format` refuses, so every marker there carries
the data's epoch and `__transaction_state` values are version 0; its kafka-dump-log is the
Scala one, whose `--transaction-log-decoder` prints `transaction_metadata::transactionalId=`
text (not 4.x's JSON) and which prints LEADER_CHANGE control records as `controlType:` only.
Only the Java client negotiates KIP-890 (transaction.version 2) transactions: the
confluent-kafka (librdkafka) scenarios end their transactions the TV1 way on both clusters
(COMMIT/ABORT markers carry the data's producer epoch); `java_tv2` shows the difference.
Rebuilding changes producer ids, timestamps and cluster ids, never the offsets of a scenario.

Clusters:
{clusters}

## Scenarios (in the order they run)
"""


def write_readme(out_root: Path, timings: dict[str, dict]) -> None:
    """``timings``: the clusters just built; the others' come from their truth.json, so a
    ``--only`` rebuild keeps the full build's time."""
    versions = {name: spec.kafka_version for name, spec in CLUSTERS.items()}
    for name in CLUSTERS:
        truth_json = out_root / name / "truth" / "truth.json"
        if truth_json.exists():
            truth = json.loads(truth_json.read_text())
            versions[name] = truth.get("kafka_version", versions[name])  # what was recorded
            if name not in timings:
                timings[name] = truth.get("timings", {})
    minutes = max(1, round(sum(t.get("total_s", 0) for t in timings.values()) / 60))
    clusters = "\n".join(
        f"- `{name}`: transaction.version={spec.transaction_version}, Kafka {versions[name]}"
        + (f", broker config {spec.broker_config}" if spec.broker_config else "")
        for name, spec in CLUSTERS.items())
    listed = ", ".join(sorted(set(versions.values()), key=lambda v: tuple(map(int, v.split(".")))))
    parts = [README_INTRO.format(versions=listed, minutes=minutes, clusters=clusters)]
    for sc in SCENARIOS.values():
        parts.append(f"### `{sc.name}` (clusters: {', '.join(sc.clusters)})\n\n{sc.doc}\n")
    (out_root / "README.md").write_text("\n".join(parts))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.kafka.fixtures")
    ap.add_argument("--out", default=str(REPO / "fixtures"))
    ap.add_argument("--work", default=str(REPO / ".work" / "fixtures"))
    ap.add_argument("--only", action="append", help="cluster name (default: all)")
    ap.add_argument("--scenario", action="append")
    ap.add_argument("--kafka-version", help="the Kafka release of every cluster built "
                    "(default: each cluster's own, tools/kafka/scenarios.py CLUSTERS)")
    ap.add_argument("--redump", metavar="PREFIX", help="do not build: record again the dumps of the "
                    "--only clusters' files whose partition folder starts with PREFIX (e.g. "
                    "__remote_log_metadata-), with the release's own kafka-dump-log")
    a = ap.parse_args(argv)
    if a.redump:
        for name in a.only or []:
            print(f"{name}: {len(redump(Path(a.out) / name, a.redump))} files dumped again")
        return 0
    load_scenario_modules()
    timings = {}
    for name in a.only or sorted(CLUSTERS):
        truth = build_cluster(name, Path(a.out), Path(a.work),
                              set(a.scenario) if a.scenario else None, a.kafka_version)
        timings[name] = truth["timings"]
        print(f"{name}: {len(truth['dumps'])} files dumped, timings {truth['timings']}")
    write_readme(Path(a.out), timings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
