"""A Spark Connect server on loopback, from pyspark's own jars, as a JVM of its own: for the tests.

``connect_server(cores=2)`` runs pyspark's ``spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer`` (the class Spark's
``sbin/start-connect-server.sh`` starts; pip's pyspark ships its jar,
``jars/spark-connect_2.13-*.jar``, but not the script) on a ``local[cores]`` Spark, its gRPC
port a free loopback one picked here, waits until the port answers, and yields a
:class:`ConnectServer` (``url``: ``sc://127.0.0.1:P`` for ``--remote``). On exit the server's
process group is stopped (SIGTERM, then SIGKILL).

Its Python workers run this repository's interpreter (PYSPARK_PYTHON) with this checkout on
their PYTHONPATH, as a Connect cluster's workers have the job's code installed; nothing else
is shared with a client: the server runs in a folder of its own, with its own scratch space.
``delta=True`` adds Delta's jars (`make delta-jars`) and its SQL extension, for clients that
read the tables through Spark (the scan itself commits with delta-rs and needs none).

CLI (runs until Ctrl-C, printing the URL)::

    python -m tools.spark.connect [--cores 2] [--delta]
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from tools.kafka.cluster import free_ports, wait_for
from tools.spark.cluster import HOST, STARTUP_TIMEOUT, _tail, spark_home, stop

REPO = Path(__file__).resolve().parents[2]
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ConnectServerError(RuntimeError):
    """The server did not start: the message names its log."""


@dataclass
class ConnectServer:
    """A running Connect server: ``url`` (sc://host:port) and its process."""
    url: str
    port: int
    workdir: Path
    log: Path
    process: subprocess.Popen = field(repr=False)


def _answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex((HOST, port)) == 0


@contextmanager
def connect_server(*, cores: int = 2, delta: bool = False, workdir: Optional[Path] = None,
                   conf: Optional[dict[str, str]] = None) -> Iterator[ConnectServer]:
    """A Spark Connect server on ``local[cores]``, bound to loopback; ``conf``: more settings."""
    owned = workdir is None
    root = Path(tempfile.mkdtemp(prefix="logscan-spark-connect-")) if owned else Path(workdir)
    root.mkdir(parents=True, exist_ok=True)
    (port,) = free_ports(1)
    settings = {
        "spark.connect.grpc.binding.address": HOST, "spark.connect.grpc.binding.port": str(port),
        "spark.driver.host": HOST, "spark.driver.bindAddress": HOST, "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC", "spark.local.dir": str(root / "scratch"),
        **(conf or {}),
    }
    args = [str(spark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--name", "logscan-connect",
            "--master", f"local[{cores}]"]
    if delta:
        from spark_jobs.session import delta_jars

        args += ["--jars", ",".join(delta_jars())]
        settings.update({"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                         "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"})
    for key, value in settings.items():
        args += ["--conf", f"{key}={value}"]
    args.append("spark-internal")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_GATEWAY"))}
    env.update({"SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": HOST,
                "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
                "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)})
    log = root / "connect-server.log"
    (root / "scratch").mkdir(exist_ok=True)
    with open(log, "wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=root, env=env,
                                   start_new_session=True)
    try:
        def probe() -> bool:
            if process.poll() is not None:
                raise ConnectServerError(f"the Spark Connect server exited ({process.returncode}): {_tail(log)}")
            return _answers(port)

        wait_for(probe, bool, timeout=STARTUP_TIMEOUT, every=0.5, retry=(OSError,), error=ConnectServerError,
                 failure=lambda _: f"the Spark Connect server did not answer on {HOST}:{port} within "
                                   f"{STARTUP_TIMEOUT:.0f} s; its log: {_tail(log)}")
        yield ConnectServer(f"sc://{HOST}:{port}", port, root, log, process)
    finally:
        stop(process)
        if owned:
            shutil.rmtree(root, ignore_errors=True)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.spark.connect", description=__doc__.split("\n")[0])
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--delta", action="store_true", help="Delta's jars and SQL extension too")
    args = p.parse_args(argv)
    with connect_server(cores=args.cores, delta=args.delta) as server:
        print(f"Spark Connect server at {server.url} (log {server.log}); Ctrl-C stops it", flush=True)
        try:
            while server.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
