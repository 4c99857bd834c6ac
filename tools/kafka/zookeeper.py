"""A Kafka 3.9 cluster in ZooKeeper mode (issue 36 item 4): the copies operators make of
ZooKeeper-era brokers hold no ``__cluster_metadata`` (the controller's state lives in
ZooKeeper), meta.properties of version 0 (``broker.id``, no directory.id), and leaders known
only from each replica's leader-epoch-checkpoint.

ZooKeeper is started from the jars the harness already resolves for Kafka 3.9.2 (its
``zookeeper-3.8.x`` and ``zookeeper-jute`` jars in ``.kafka/3.9.2/libs``, from Maven Central):
one standalone server (``ZooKeeperServerMain``) on a free loopback port, its data under the
work dir; then three brokers with ``zookeeper.connect`` and no ``process.roles``, which need no
storage format (the broker writes meta.properties itself). No Docker. ZooKeeper mode has no
finalized features: transaction.version is 0, every marker carries the data's epoch.

The fixture lives in ``fixtures/zookeeper/<cluster>/`` (tests/scan/test_zookeeper_fixture.py
holds the scan to that release's tools on it):

    python -m tools.kafka.zookeeper build [--out fixtures/zookeeper] [--work .work/fixtures]
"""
from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

from tools.kafka.cluster import (BASE_BROKER_CONFIG, REPO, Cluster, KafkaHarnessError, _alive, _java, _signal,
                                 free_ports, wait_for)
from tools.kafka import hanging as _hanging  # noqa: F401 - registers hanging_txns
from tools.kafka.scenarios import CLUSTERS, SCENARIOS, ClusterSpec, scenario

if __name__ == "__main__":
    from tools.kafka import zookeeper as _module
    sys.exit(_module.main())

ZK_CLUSTER = "zookeeper-3.9"
ZK_VERSION = "3.9.2"
#: Kafka's KRaft-only settings of BASE_BROKER_CONFIG, which a ZooKeeper-mode broker refuses.
_KRAFT_ONLY = frozenset({"controller.quorum.voters", "process.roles", "node.id"})
ZOO_CFG = """\
tickTime=2000
dataDir={data}
clientPort={port}
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok
"""


class ZooKeeperCluster(Cluster):
    """``nodes`` ZooKeeper-mode brokers (broker ids 0..N-1) and one ZooKeeper server, under
    ``workdir`` (ZooKeeper's config and data in ``node-zookeeper/``)."""

    zookeeper_port: int | None = None
    _zookeeper: subprocess.Popen | None = None

    def server_properties(self, node_id: int) -> dict[str, str]:
        props = {
            "broker.id": str(node_id),
            "zookeeper.connect": f"127.0.0.1:{self.zookeeper_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.broker_ports[node_id]}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.broker_ports[node_id]}",
            "log.dirs": ",".join(map(str, self.node_log_dirs[node_id])),
        }
        props.update({k: v for k, v in BASE_BROKER_CONFIG.items() if k not in _KRAFT_ONLY})
        props.update({k: str(v) for k, v in self.broker_config.items()})
        return props

    def _write_configs(self) -> None:
        if self.zookeeper_port is None:
            (self.zookeeper_port,) = free_ports(1)
        super()._write_configs()

    def format(self) -> None:
        """No storage format in ZooKeeper mode: start ZooKeeper instead, before the brokers."""
        d = self.workdir / "node-zookeeper"
        (d / "data").mkdir(parents=True, exist_ok=True)
        (d / "zoo.cfg").write_text(ZOO_CFG.format(data=d / "data", port=self.zookeeper_port))
        (d / "log4j2.properties").write_text("status = error\nrootLogger.level = warn\n")
        cmd = _java("org.apache.zookeeper.server.ZooKeeperServerMain", [d / "zoo.cfg"],
                    jvm_opts=["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"],
                    log4j=d / "log4j2.properties", libs=self.libs)
        with open(d / "stdout.log", "wb") as out:
            self._zookeeper = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(self._ruok, lambda ok: ok, timeout=60, every=0.3, error=KafkaHarnessError,
                 failure=lambda _: f"ZooKeeper did not answer on 127.0.0.1:{self.zookeeper_port}; see {d}/stdout.log")

    def _ruok(self) -> bool:
        if self._zookeeper.poll() is not None:
            raise KafkaHarnessError(f"ZooKeeper exited with {self._zookeeper.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", self.zookeeper_port), timeout=2) as s:
                s.sendall(b"ruok")
                return s.recv(4) == b"imok"
        except OSError:
            return False

    def stop(self, hard: bool = False, timeout: float = 90) -> None:
        super().stop(hard, timeout)
        zk = self._zookeeper
        if zk is not None:
            _signal(zk.pid, 15)
            deadline = time.monotonic() + 30
            while _alive(zk.pid, zk) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _alive(zk.pid, zk):
                _signal(zk.pid, 9)
                zk.wait()
            self._zookeeper = None


CLUSTERS.setdefault(ZK_CLUSTER, ClusterSpec(
    transaction_version=0, kafka_version=ZK_VERSION, cluster_class=ZooKeeperCluster,
    broker_config={"transaction.partition.verification.enable": "false"}))


def _on_zookeeper(name: str) -> None:
    """Run scenario ``name`` (registered for the KRaft clusters) on this cluster too, as
    ``zookeeper_<name>``: the same function, whose notes keep the original's key."""
    scenario(f"zookeeper_{name}", clusters=(ZK_CLUSTER,))(SCENARIOS[name].fn)


#: What the ZooKeeper cluster runs: the basic transactions, one left open, one the coordinator
#: aborts on timeout, and the three genuinely hanging ones (verification off).
for _name in ("txn_basic", "txn_open", "timeout_abort", "hanging_txns"):
    _on_zookeeper(_name)


def build(out_root: Path, work_root: Path) -> dict:
    from tools.kafka.fixtures import build_cluster

    truth = build_cluster(ZK_CLUSTER, out_root, work_root)
    docs = "\n".join(f"### `{name}`\n\n{SCENARIOS[name].doc}\n" for name in truth["scenarios"])
    (out_root / "README.md").write_text(
        "# A ZooKeeper-mode cluster (Kafka 3.9.2)\n\n"
        "Built by `python -m tools.kafka.zookeeper build` (tools/kafka/zookeeper.py): three brokers in "
        "ZooKeeper mode and one ZooKeeper server from the jars of Kafka 3.9.2, no __cluster_metadata; "
        "truth/ recorded live with 3.9.2's tools and the copy made after a clean stop, as fixtures/README.md "
        f"says of the KRaft clusters. Scenarios (fixtures/README.md has them in full):\n\n{docs}")
    return truth


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.kafka.zookeeper")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", default=str(REPO / "fixtures" / "zookeeper"))
    b.add_argument("--work", default=str(REPO / ".work" / "fixtures"))
    a = ap.parse_args(argv)
    truth = build(Path(a.out), Path(a.work))
    print(json.dumps({"dumps": len(truth["dumps"]), "scenarios": truth["scenarios"], "timings": truth["timings"]}))
    return 0
