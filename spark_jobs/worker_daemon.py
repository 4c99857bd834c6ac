"""PySpark's daemon (``pyspark.daemon``), with pyspark imported from the installed package.

Spark starts its Python workers with ``$SPARK_HOME/python/lib/pyspark.zip``, the py4j zip and
the spark-core jar first on PYTHONPATH. With pip's pyspark, SPARK_HOME is the installed
package itself, so those archives hold the same pyspark as the package beside them, but as
source only: the daemon compiles every pyspark module it imports from the zip's source, each
forked worker compiles ``pyspark.worker`` and what its first task imports again (the zip has no
``.pyc`` and cannot take one), and a worker's first task re-reads the directories of all three
archives (``importlib.invalidate_caches``; the jar lists 5,854 files). ``import pyspark.daemon``
and ``pyspark.worker`` in a fresh interpreter: 0.9 to 1.3 s from the zip, 0.2 to 0.3 s from
the package. Over a session's first scan of make bench's 4 MiB copy (local[2], three sessions
each way, alternating; 2026-11-24) the Python workers' CPU was 1.5 to 1.8 s with this module
against 3.2 to 4.0 s without; that scan's wall time moved within its noise (15.8 to 21.3 s
against 17.0 to 19.8 s): the JVM's start-up work dominates it. Warm scans start no workers.

``python -m spark_jobs.worker_daemon`` drops those archives from ``sys.path`` when they are the
installed package's own (``<pyspark>/python/lib/*.zip`` and ``<pyspark>/jars/*.jar``, so the
same version), then runs ``pyspark.daemon`` as Spark would: its workers inherit the path and
import the package's compiled modules. With any other SPARK_HOME (a Spark distribution
whose pyspark may differ from an installed one) the path is left as it is. Used through
``spark.python.daemon.module`` for the local sessions spark_jobs.session starts itself whose
workers run the driver's interpreter (session.runs_worker_daemon); a cluster's executors, or
another worker interpreter, may not have this module, so those are left to Spark's own daemon. Nothing is printed:
the daemon tells the JVM its port on stdout.
"""

from __future__ import annotations

import os
import runpy
import sys
from typing import Optional


def installed_pyspark(path: list[str]) -> Optional[str]:
    """The folder of the pyspark package found on ``path`` outside any archive, or None."""
    for entry in path:
        if entry.endswith((".zip", ".jar", ".egg")):
            continue
        init = os.path.join(entry or os.getcwd(), "pyspark", "__init__.py")
        if os.path.isfile(init):
            return os.path.dirname(os.path.realpath(init))
    return None


def without_own_archives(path: list[str], package: str) -> list[str]:
    """``path`` less the archives that ship inside the pyspark package at ``package``."""
    own = {os.path.join(package, "python", "lib"), os.path.join(package, "jars")}
    return [p for p in path
            if not (p.endswith((".zip", ".jar")) and os.path.dirname(os.path.realpath(p)) in own)]


def main() -> None:
    package = installed_pyspark(sys.path)
    if package is not None:
        sys.path[:] = without_own_archives(sys.path, package)
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
