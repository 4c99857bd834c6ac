"""Ground truth recorded from a LIVE cluster with Kafka's own tools and client APIs.

Everything here is what Kafka says, stored twice: the raw tool stdout/stderr/exit code under
``truth/tools/`` and a parsed form in ``truth.json`` (what tests read). Parsing is deliberately
dumb: TransactionsCommand prints tab-terminated, space-padded table cells (header row first),
so a row is ``[cell.strip() for cell in line.split("\\t")][:-1]``.
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import OffsetSpec

from tools.kafka.cluster import Cluster


def parse_table(stdout: str) -> list[dict[str, str]]:
    """Rows of a TransactionsCommand table as dicts keyed by its header cells."""
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    if not lines:
        return []
    header = [c.strip() for c in lines[0].split("\t") if c.strip()]
    rows = []
    for ln in lines[1:]:
        cells = [c.strip() for c in ln.split("\t")]
        rows.append(dict(zip(header, cells)))
    return rows


def parse_columns(stdout: str, first: str = "GROUP") -> list[dict[str, str]]:
    """Rows of a ConsumerGroupCommand table (``kafka-consumer-groups --describe``): cells are
    left-aligned under their header cell (``%-Ns`` formats), one header per group, blank lines
    and sentences between; a header cell may hold a space (``COORDINATOR (ID)``), so cells are
    cut at the header's column starts, never split on spaces."""
    rows: list[dict[str, str]] = []
    starts: list[tuple[str, int]] = []
    for line in stdout.splitlines():
        if line.startswith(first + " "):
            names = re.findall(r"\S+(?: \(\S+\))?", line)
            starts, pos = [], 0
            for n in names:
                pos = line.index(n, pos)
                starts.append((n, pos))
                pos += len(n)
            continue
        if not starts or not line.strip() or line[:starts[1][1]].strip() == "" or " has no " in line:
            continue
        cells = {}
        for i, (n, s) in enumerate(starts):
            end = starts[i + 1][1] if i + 1 < len(starts) else len(line)
            cells[n] = line[s:end].strip()
        rows.append(cells)
    return rows


LOG_END_OFFSET = re.compile(
    r"^kafka\.log:type=Log,name=LogEndOffset,topic=(?P<topic>.+),partition=(?P<partition>\d+)"
    r":Value=(?P<value>-?\d+)$", re.M)


def parse_log_end_offsets(stdout: str) -> dict[tuple[str, int], int]:
    """Per-replica log end offsets from JmxTool ``--report-format properties``: no client API
    returns a replica's LEO (ListOffsets gives the high watermark), the broker metric does."""
    return {(m["topic"], int(m["partition"])): int(m["value"])
            for m in LOG_END_OFFSET.finditer(stdout)}


class Recorder:
    """Runs tools against ``cluster`` and keeps each run's raw output under ``out/tools``.

    All tool runs of one phase share a JVM (Cluster.run_tools); the order of jobs is the
    order of the runs.
    """

    def __init__(self, cluster: Cluster, out: Path):
        self.cluster = cluster
        self.out = Path(out)
        self.tools_dir = self.out / "tools"
        self.tools_dir.mkdir(parents=True, exist_ok=True)

    def tools(self, jobs: dict[str, tuple]) -> dict[str, dict]:
        """Run ``{name: (tool, *args)}``; keep stdout/stderr as tools/<name>.stdout|stderr.txt."""
        runs = self.cluster.run_tools([(job[0], job[1:]) for job in jobs.values()])
        result = {}
        for (name, job), cp in zip(jobs.items(), runs):
            # names contain dots (topic-partition, broker-N): append suffixes, never replace
            (self.tools_dir / f"{name}.stdout.txt").write_text(cp.stdout)
            (self.tools_dir / f"{name}.stderr.txt").write_text(_drop_slf4j_noise(cp.stderr))
            result[name] = {"file": f"tools/{name}.stdout.txt", "exit_code": cp.returncode,
                            "args": [str(a) for a in job], "stdout": cp.stdout}
        return result

    def record(self, notes: dict) -> dict:
        # A node a scenario stopped on purpose cannot answer: asking it would only time out
        # (describe-producers --broker-id, find-hanging --broker-id, JMX, log-dirs), so it is
        # left out and named in ``stopped_brokers``; its replicas are still in the copy.
        live = [b for b, up in sorted(self.cluster.running().items()) if up]
        stopped = sorted(set(range(self.cluster.nodes)) - set(live))
        admin = self.cluster.admin()
        md = admin.list_topics(timeout=10)
        partitions = []
        for t in sorted(md.topics):
            if t == "__cluster_metadata":
                continue
            for p in sorted(md.topics[t].partitions):
                pm = md.topics[t].partitions[p]
                partitions.append({"topic": t, "partition": p, "leader": pm.leader,
                                   "replicas": list(pm.replicas), "isr": list(pm.isrs)})
        recorded_at_ms = int(time.time() * 1000)
        offsets = self._offsets(admin, partitions)
        jobs = {}
        for pa in partitions:
            for b in (r for r in pa["replicas"] if r in live):
                jobs[f"describe-producers.{pa['topic']}-{pa['partition']}.broker-{b}"] = (
                    "kafka-transactions", "describe-producers", "--topic", pa["topic"],
                    "--partition", pa["partition"], "--broker-id", b)
        for b in live:
            for minutes in (0, 15):
                jobs[f"find-hanging.broker-{b}.max-timeout-{minutes}"] = (
                    "kafka-transactions", "find-hanging", "--broker-id", b,
                    "--max-transaction-timeout", minutes)
        for b in live:
            jobs[f"jmx-log-end-offset.broker-{b}"] = (
                "kafka-jmx", "--jmx-url", self.cluster.jmx_url(b), "--one-time", "true",
                "--report-format", "properties",
                "--object-name", "kafka.log:type=Log,name=LogEndOffset,*")
        jobs["list"] = ("kafka-transactions", "list")
        jobs["topics-describe"] = ("kafka-topics", "--describe", "--exclude-internal")
        jobs["topics-describe-internal"] = ("kafka-topics", "--describe", "--topic",
                                            "__consumer_offsets|__transaction_state")
        jobs["log-dirs"] = ("kafka-log-dirs", "--describe", "--broker-list",
                            ",".join(map(str, live)))
        # every group's committed offsets as its coordinator serves them (OffsetFetch without
        # requireStable: pending transactional commits are not shown) and its state
        jobs["consumer-groups-offsets"] = ("kafka-consumer-groups", "--describe", "--all-groups",
                                           "--offsets")
        jobs["consumer-groups-state"] = ("kafka-consumer-groups", "--describe", "--all-groups",
                                         "--state")
        runs = self.tools(jobs)
        txn_list = parse_table(runs["list"]["stdout"])
        described = self.tools({f"describe.{r['TransactionalId']}": (
            "kafka-transactions", "describe", "--transactional-id", r["TransactionalId"])
            for r in txn_list})

        leo = {b: parse_log_end_offsets(runs[f"jmx-log-end-offset.broker-{b}"]["stdout"])
               for b in live}
        for pa in partitions:
            key = f"{pa['topic']}-{pa['partition']}"
            pa.update(offsets[key])
            pa["log_end_offsets"] = {str(b): leo[b].get((pa["topic"], pa["partition"]))
                                     for b in pa["replicas"] if b in live}
            pa["producers"] = {}
            for b in (r for r in pa["replicas"] if r in live):
                run = runs[f"describe-producers.{key}.broker-{b}"]
                pa["producers"][str(b)] = {"file": run["file"], "exit_code": run["exit_code"],
                                          "rows": parse_table(run["stdout"])}
        log_dirs = runs["log-dirs"]["stdout"].splitlines()
        truth = {
            "recorded_at_ms": recorded_at_ms,
            "transaction_version": self.cluster.transaction_version,
            "cluster_id": self.cluster.cluster_id,
            "stopped_brokers": stopped,
            "partitions": partitions,
            "find_hanging": {k.split(".", 1)[1]: {"file": r["file"], "exit_code": r["exit_code"],
                                                  "args": r["args"][1:],
                                                  "rows": parse_table(r["stdout"])}
                             for k, r in runs.items() if k.startswith("find-hanging.")},
            "transactions": {"file": runs["list"]["file"], "rows": txn_list},
            "describe": {k.split(".", 1)[1]: {"file": r["file"], "exit_code": r["exit_code"],
                                              "rows": parse_table(r["stdout"])}
                         for k, r in described.items()},
            "topics_describe": {k: runs[k]["file"] for k in ("topics-describe",
                                                             "topics-describe-internal")},
            "log_dirs": json.loads(log_dirs[-1]) if log_dirs and log_dirs[-1].startswith("{") else None,
            "consumer_groups": {k.split("-")[-1]: {"file": runs[k]["file"], "exit_code": runs[k]["exit_code"],
                                                   "args": runs[k]["args"][1:],
                                                   "rows": parse_columns(runs[k]["stdout"])}
                                for k in ("consumer-groups-offsets", "consumer-groups-state")},
            "scenario_notes": notes,
        }
        return truth

    def _offsets(self, admin, partitions) -> dict:
        """Earliest, high watermark (latest, read_uncommitted) and LSO (latest, read_committed)."""
        tps = [TopicPartition(p["topic"], p["partition"]) for p in partitions]
        result = {f"{p['topic']}-{p['partition']}": {} for p in partitions}
        for label, spec, iso in (("log_start_offset", OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED),
                                 ("high_watermark", OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED),
                                 ("last_stable_offset", OffsetSpec.latest(), IsolationLevel.READ_COMMITTED)):
            futs = admin.list_offsets({tp: spec for tp in tps}, isolation_level=iso, request_timeout=30)
            for tp, fut in futs.items():
                result[f"{tp.topic}-{tp.partition}"][label] = fut.result().offset
        return result


def _drop_slf4j_noise(stderr: str) -> str:
    # the jar set binds no SLF4J provider at the moment; its 3-line warning is not tool output
    return "".join(ln for ln in stderr.splitlines(keepends=True) if not ln.startswith("SLF4J: "))
