"""The SIGKILLed-broker clusters of Kafka 3.9.2 and 4.4.0 (fixtures/killed, tools/kafka/killed.py)
and the clusters of fixtures/trimmed (tools/kafka/trimmedclusters.py: marker-epochs on 4.4.0,
share groups on 4.1.1 and 4.4.0), restored for reading: their metadata-log indexes are stored without the preallocated zero
tail (fixtures/killed/README.md), so a test reads the copy tools.kafka.trimmed.restore makes
under .work (made once, at import, reused while the stored fixture is unchanged), whose files
are the broker's bytes again, never fixtures/killed itself."""
from __future__ import annotations

from pathlib import Path

from tools.kafka.trimmed import restore

REPO = Path(__file__).resolve().parents[1]
STORED = REPO / "fixtures" / "killed"
STORED_TRIMMED = REPO / "fixtures" / "trimmed"
RESTORED = REPO / ".work" / "restored-fixtures"


def killed_clusters() -> list[Path]:
    """Each killed-broker cluster, restored: ``<copy>/brokers`` and ``<copy>/truth`` as in
    ``fixtures/<cluster>/``; the folder is named after the cluster (truth.json cluster_name)."""
    return [restore(p.parent.parent, RESTORED) for p in sorted(STORED.glob("*/truth/truth.json"))]


def trimmed_clusters() -> dict[str, Path]:
    """Each cluster of fixtures/trimmed, restored, by name."""
    return {p.parent.parent.name: restore(p.parent.parent, RESTORED)
            for p in sorted(STORED_TRIMMED.glob("*/truth/truth.json"))}


KILLED_CLUSTERS = killed_clusters()
TRIMMED_CLUSTERS = trimmed_clusters()
#: Every fixture cluster with a recorded truth.json, each release's: fixtures/<cluster>/ by
#: name, then the killed and the trimmed ones, restored.
FIXTURE_CLUSTERS = (sorted(p.parent.parent for p in (REPO / "fixtures").glob("*/truth/truth.json"))
                    + KILLED_CLUSTERS + list(TRIMMED_CLUSTERS.values()))
#: Each cluster's folder by name (a restored cluster's is under .work).
CLUSTER_ROOTS = {c.name: c for c in FIXTURE_CLUSTERS}


def markers_pending_notes(truth: dict) -> dict:
    """The notes of the markers_pending scenario (pending, Kafka 4.1.1), which killed-3.9 and
    killed-4.4 ran on their release as killed_broker."""
    notes = truth["scenario_notes"]
    return notes.get("markers_pending") or notes["killed_broker"]
