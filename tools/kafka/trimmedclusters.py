"""Fixture clusters stored trimmed in ``fixtures/trimmed/<cluster>/`` (issue 32).

Kafka 4.4.0 leaves the KRaft metadata log's ``.index``/``.timeindex`` at their preallocated
10 MiB even after a clean stop (tools/kafka/trimmed.py says why), so a 4.4.0 cluster is stored
as fixtures/killed's are: every file over 256 KiB without its zero tail, ``trimmed.json``
giving its real size and SHA-256, read only through :func:`tools.kafka.trimmed.restore`
(tests: tests/killed_fixtures.py ``TRIMMED_CLUSTERS``). A cluster that needs no trimming
(4.1.1) gets an empty manifest and is read the same way.

Clusters:

* ``marker-epochs-4.4``: tools.kafka.epochs' ``tv2_lost_marker`` and ``tv2_refused_marker``
  on Kafka 4.4.0 (``marker-epochs`` is the same on 4.1.1, in fixtures/), and
  ``tv2_equal_marker`` (a marker equal to the partition's producer epoch).
* ``marker-equal-4.1``: ``tv2_equal_marker`` alone on Kafka 4.1.1 (``marker-epochs``' spec), what
  4.1.1 does with the marker 4.4.0 refuses.
* ``share-4.1``, ``share-4.4``: tools.kafka.share's ``share_group`` (real ``__share_group_state``).
* ``offsets-4.4``, ``offsets-3.9``: tools.kafka.groups' ``committed_offsets`` on Kafka 4.4.0 and
  3.9.2 (at transaction.version 0, the highest 3.9.2 formats; ``offsets`` is the same on 4.1.1,
  in fixtures/): committed offsets and the groups a hang holds back.
* ``two-phase-4.4``: tools.kafka.twophase's ``two_phase_participant`` (Kafka 4.4.0, 2PC
  allowed): a prepared two-phase-commit transaction left Ongoing with Int.MaxValue's timeout.

They are not built by ``make fixtures`` (this module is not in SCENARIO_MODULES, so the
plain builder never writes them untrimmed into fixtures/)::

    python -m tools.kafka.trimmedclusters build [--out fixtures/trimmed] [--work .work/fixtures]
                                                [--only share-4.4]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from tools.kafka import epochs, groups, share, twophase
from tools.kafka.cluster import REPO
from tools.kafka.scenarios import CLUSTERS, SCENARIOS, ClusterSpec, scenario
from tools.kafka.trimmed import build_trimmed

if __name__ == "__main__":
    from tools.kafka import trimmedclusters as _module
    sys.exit(_module.main())

EPOCHS_44_CLUSTER = "marker-epochs-4.4"
CLUSTERS.setdefault(EPOCHS_44_CLUSTER, dataclasses.replace(CLUSTERS[epochs.EPOCHS_CLUSTER], kafka_version="4.4.0"))
for _name in ("tv2_lost_marker", "tv2_refused_marker"):
    if EPOCHS_44_CLUSTER not in SCENARIOS[_name].clusters:
        SCENARIOS[_name] = dataclasses.replace(SCENARIOS[_name],
                                               clusters=SCENARIOS[_name].clusters + (EPOCHS_44_CLUSTER,))
# a marker equal to the producer's epoch, on 4.4.0 (whose TV2 check refuses it) and 4.1.1 (in a
# cluster of its own: fixtures/marker-epochs stays as recorded)
EQUAL_41_CLUSTER = "marker-equal-4.1"
CLUSTERS.setdefault(EQUAL_41_CLUSTER, CLUSTERS[epochs.EPOCHS_CLUSTER])
if "tv2_equal_marker" not in SCENARIOS:
    scenario("tv2_equal_marker", clusters=(EPOCHS_44_CLUSTER, EQUAL_41_CLUSTER))(epochs.tv2_equal_marker)
OFFSETS_44_CLUSTER, OFFSETS_39_CLUSTER = "offsets-4.4", "offsets-3.9"
CLUSTERS.setdefault(OFFSETS_44_CLUSTER, dataclasses.replace(CLUSTERS[groups.OFFSETS_CLUSTER], kafka_version="4.4.0"))
CLUSTERS.setdefault(OFFSETS_39_CLUSTER, dataclasses.replace(CLUSTERS[groups.OFFSETS_CLUSTER], kafka_version="3.9.2",
                                                            transaction_version=0))
for _name in (OFFSETS_44_CLUSTER, OFFSETS_39_CLUSTER):
    if _name not in SCENARIOS["committed_offsets"].clusters:
        SCENARIOS["committed_offsets"] = dataclasses.replace(
            SCENARIOS["committed_offsets"], clusters=SCENARIOS["committed_offsets"].clusters + (_name,))
TRIMMED_CLUSTERS = (EPOCHS_44_CLUSTER, EQUAL_41_CLUSTER, *share.SHARE_CLUSTERS, OFFSETS_44_CLUSTER, OFFSETS_39_CLUSTER,
                    twophase.TWO_PHASE_CLUSTER)
OUT = REPO / "fixtures" / "trimmed"


def build(out_root: Path, work_root: Path, only: list[str] | None = None) -> dict[str, dict]:
    built = build_trimmed(only or TRIMMED_CLUSTERS, out_root, work_root)
    write_readme(out_root)
    return built


def write_readme(out_root: Path) -> None:
    lines = []
    for name in TRIMMED_CLUSTERS:
        truth_json = out_root / name / "truth" / "truth.json"
        if not truth_json.exists():
            continue
        truth = json.loads(truth_json.read_text())
        manifest = json.loads((out_root / name / "trimmed.json").read_text())
        spec: ClusterSpec = CLUSTERS[name]
        trimmed = "".join(f"\n  - `{rel}`: {f['size']} bytes, stored {f['stored_size']}"
                          for rel, f in sorted(manifest["files"].items()))
        extra = "".join(f", {k}" for k in (
            f"features {spec.features}" if spec.features else "",
            f"broker config {spec.broker_config}" if spec.broker_config else "") if k)
        lines.append(f"- `{name}`: transaction.version={spec.transaction_version}, Kafka {truth['kafka_version']}"
                     f"{extra}; scenarios {', '.join(truth['scenarios'])}; trimmed:{trimmed or ' none'}")
    scenarios = "\n".join(f"### `{sc.name}` (clusters: {', '.join(c for c in sc.clusters if c in TRIMMED_CLUSTERS)})"
                          f"\n\n{sc.doc}\n" for sc in SCENARIOS.values()
                          if any(c in TRIMMED_CLUSTERS for c in sc.clusters))
    (out_root / "README.md").write_text(
        "# Fixture clusters stored trimmed (Kafka 4.1.1 and 4.4.0)\n\n"
        "Built by `python -m tools.kafka.trimmedclusters build` (tools/kafka/trimmedclusters.py). Each "
        "cluster is made as fixtures/README.md says (3 KRaft nodes, truth/ recorded live from the same "
        "release's tools, a clean stop, a plain copy, kafka-dump-log of the same release on every copied "
        "file, with `--share-group-state-decoder` for `__share_group_state` segments).\n\n"
        "**Trimmed files.** As in fixtures/killed (its README): a file larger than 256 KiB is stored "
        "without its zero tail (Kafka 4.4.0 leaves the metadata log's `.index`/`.timeindex` at their "
        "preallocated 10 MiB after a clean stop); `<cluster>/trimmed.json` gives each one's real size "
        "and SHA-256. Read the copy `tools.kafka.trimmed.restore` makes under `.work`, never the stored "
        "files (tests: tests/killed_fixtures.py `TRIMMED_CLUSTERS`). The dumps in truth/ were made from "
        "the real files.\n\n"
        "**Share groups.** Kafka 4.4.0 finalizes `share.version` 2 at a plain format; on 4.1.1 share "
        "groups are a preview, off unless formatted with `--feature share.version=1` (ShareVersion SV_1; "
        "tools/kafka/share.py).\n\n"
        "Clusters:\n" + "\n".join(lines) + "\n\n## Scenarios\n\n" + scenarios)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.kafka.trimmedclusters")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", default=str(OUT))
    b.add_argument("--work", default=str(REPO / ".work" / "fixtures"))
    b.add_argument("--only", action="append", choices=TRIMMED_CLUSTERS)
    a = ap.parse_args(argv)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    for name, info in build(Path(a.out), Path(a.work), a.only).items():
        print(f"{name}: {info['dumps']} files dumped, trimmed {info['trimmed']}, timings {info['timings']}")
    return 0
