"""A real Spark standalone cluster on loopback, from pyspark's own jars: a master and workers,
each a separate JVM started with pyspark's ``spark-class``, for the tests.

``standalone_cluster(workers=2)`` starts ``org.apache.spark.deploy.master.Master`` and the
workers (``org.apache.spark.deploy.worker.Worker spark://127.0.0.1:P``), every port a free
loopback one picked here and passed explicitly, each process with its own folder (the worker's
``--work-dir``, where its executors run, and its own ``SPARK_LOCAL_DIRS``), waits until the
master's status page lists every worker ALIVE, and yields a :class:`Cluster` (the master URL,
the folders, the logs). On exit every process group is stopped (SIGTERM, then SIGKILL).

Nothing but the code is shared on purpose: the workers run this repository's interpreter
(PYSPARK_PYTHON, as a cluster's nodes share an image); what a job reads and writes is wherever
its URIs say, and each JVM's scratch space is its own folder. Nothing leaves loopback: each
JVM binds 127.0.0.1 (SPARK_LOCAL_IP and --host), the web UIs too.

CLI (runs until Ctrl-C, printing the master URL)::

    python -m tools.spark.cluster [--workers 2] [--cores 1] [--memory 1g]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from tools.kafka.cluster import free_ports, wait_for

HOST = "127.0.0.1"
#: Seconds the master has to list every worker ALIVE (a JVM starts in ~3 s on an idle machine;
#: a loaded two-core one is far slower).
STARTUP_TIMEOUT = 300.0
#: Seconds between SIGTERM and SIGKILL.
STOP_GRACE = 20.0


class ClusterError(RuntimeError):
    """The cluster did not start: the message names the log files."""


@dataclass
class Cluster:
    """A running standalone cluster: ``master`` (spark://host:port) and its processes."""
    master: str
    master_ui: str
    workdir: Path
    workers: list[Path]                       # each worker's --work-dir
    logs: list[Path]
    processes: list[subprocess.Popen] = field(repr=False, default_factory=list)

    def status(self) -> dict:
        """The master's status page as JSON (workers, applications)."""
        with urllib.request.urlopen(f"{self.master_ui}/json/", timeout=10) as answer:
            return json.loads(answer.read().decode())

    def alive_workers(self) -> int:
        return sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")

    def executor_folders(self) -> list[Path]:
        """The folders the workers ran executors in (work-dir/app-id/executor-id)."""
        return sorted(p for w in self.workers for p in w.glob("app-*/*") if p.is_dir())


def spark_home() -> Path:
    """pyspark's installation: its bin/spark-class and jars/ are a Spark distribution's."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _environment(local_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_GATEWAY"))}
    env.update({"SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": HOST, "SPARK_LOCAL_DIRS": str(local_dir),
                "SPARK_LOG_DIR": str(local_dir), "SPARK_NO_DAEMONIZE": "1",
                "PYSPARK_PYTHON": env.get("PYSPARK_PYTHON", sys.executable)})
    return env


def _start(args: list[str], folder: Path, log: Path, env_extra: Optional[dict[str, str]] = None) -> subprocess.Popen:
    folder.mkdir(parents=True, exist_ok=True)
    env = {**_environment(folder), **(env_extra or {})}
    with open(log, "wb") as out:
        return subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdout=out,
                                stderr=subprocess.STDOUT, cwd=folder, env=env, start_new_session=True)


def stop(process: subprocess.Popen, grace: float = STOP_GRACE) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        process.wait()


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text.splitlines()[-lines:] if line.strip())


@contextmanager
def standalone_cluster(*, workers: int = 2, cores: int = 1, memory: str = "1g",
                       workdir: Optional[Path] = None, env: Optional[dict[str, str]] = None) -> Iterator[Cluster]:
    """A master and ``workers`` workers (``cores`` and ``memory`` each) as separate JVMs on
    loopback; ``env``: more environment for the workers (their executors inherit it)."""
    owned = workdir is None
    root = Path(tempfile.mkdtemp(prefix="logscan-spark-cluster-")) if owned else Path(workdir)
    port, ui, *worker_ports = free_ports(2 + 2 * workers)
    master = f"spark://{HOST}:{port}"
    logs: list[Path] = [root / "master.log"]
    with ExitStack() as stack:
        procs: list[subprocess.Popen] = []

        def stop_all() -> None:
            for p in reversed(procs):
                stop(p)
        stack.callback(stop_all)
        procs.append(_start(["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
                             "--webui-port", str(ui)], root / "master", logs[0]))
        folders = []
        for i in range(workers):
            folder = root / f"worker-{i}"
            folders.append(folder / "work")
            logs.append(root / f"worker-{i}.log")
            (folder / "work").mkdir(parents=True, exist_ok=True)
            procs.append(_start(["org.apache.spark.deploy.worker.Worker", master, "--host", HOST,
                                 "--port", str(worker_ports[2 * i]), "--webui-port", str(worker_ports[2 * i + 1]),
                                 "--cores", str(cores), "--memory", memory, "--work-dir", str(folder / "work")],
                                folder, logs[-1], env))
        cluster = Cluster(master, f"http://{HOST}:{ui}", root, folders, logs, procs)

        def failure(_last) -> str:
            dead = [str(log) for p, log in zip(procs, logs) if p.poll() is not None]
            return (f"the Spark master {master} did not list {workers} ALIVE workers within {STARTUP_TIMEOUT:.0f} s"
                    + (f"; exited: {', '.join(dead)}" if dead else "") + f"; master log: {_tail(logs[0])}")

        def probe() -> int:
            if any(p.poll() is not None for p in procs):
                raise ClusterError(failure(None))
            return cluster.alive_workers()

        wait_for(probe, lambda n: n >= workers, timeout=STARTUP_TIMEOUT, every=0.5, failure=failure,
                 retry=(OSError, urllib.error.URLError, ValueError), error=ClusterError)
        try:
            yield cluster
        finally:
            stop_all()
            if owned:
                shutil.rmtree(root, ignore_errors=True)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.spark.cluster", description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cores", type=int, default=1)
    p.add_argument("--memory", default="1g")
    args = p.parse_args(argv)
    with standalone_cluster(workers=args.workers, cores=args.cores, memory=args.memory) as cluster:
        print(f"master {cluster.master} (status {cluster.master_ui}), workers in {cluster.workdir}; Ctrl-C stops it",
              flush=True)
        try:
            while all(p.poll() is None for p in cluster.processes):
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
