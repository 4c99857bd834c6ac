"""spark_jobs.worker_daemon: the local sessions' Python workers import the installed pyspark,
not its source zip."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from spark_jobs.session import DELTA_LIBS, WORKER_DAEMON, build_session, runs_worker_daemon
from spark_jobs.worker_daemon import installed_pyspark, without_own_archives
from tests.spark import local_session


def _package(site: Path) -> Path:
    package = site / "pyspark"
    (package / "python" / "lib").mkdir(parents=True)
    (package / "jars").mkdir()
    (package / "__init__.py").write_text("")
    return package


def test_finds_the_package_outside_archives(tmp_path):
    package = _package(tmp_path / "site")
    zipped = str(package / "python" / "lib" / "pyspark.zip")
    assert installed_pyspark([zipped, str(tmp_path / "empty"), str(tmp_path / "site")]) == str(package)
    assert installed_pyspark([zipped, str(tmp_path / "empty")]) is None


def test_drops_only_the_package_own_archives(tmp_path):
    package = _package(tmp_path / "site")
    own = [str(package / "python" / "lib" / "pyspark.zip"), str(package / "python" / "lib" / "py4j-0.10.9.9-src.zip"),
           str(package / "jars" / "spark-core_2.13-4.2.0.jar")]
    others = [str(tmp_path / "dist" / "python" / "lib" / "pyspark.zip"), str(tmp_path / "user.jar"),
              "/usr/lib/python311.zip", str(tmp_path / "site"), ""]
    path = [*own, *others]
    assert without_own_archives(path, str(package)) == others
    # Spark's own distribution as SPARK_HOME: its zip is not the installed package's, so it stays.
    other_package = _package(tmp_path / "other-site")
    assert without_own_archives(path, str(other_package)) == path


def _worker_imports(session) -> tuple[str, list[str]]:
    def probe(_):
        import sys

        import pyspark.worker
        yield pyspark.worker.__file__, [p for p in sys.path if p.endswith((".zip", ".jar"))]

    return session.sparkContext.parallelize([0], 1).mapPartitions(probe).collect()[0]


@pytest.mark.spark
@pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")), reason="Delta jars missing: run `make delta-jars`")
def test_local_workers_import_the_installed_package():
    import pyspark

    package = os.path.dirname(os.path.realpath(pyspark.__file__))
    with local_session("logscan-worker-daemon", 1) as session:
        assert session.conf.get("spark.python.daemon.module") == WORKER_DAEMON
        worker_file, archives = _worker_imports(session)
        assert os.path.dirname(os.path.realpath(worker_file)) == package
        assert not [a for a in archives if os.path.realpath(a).startswith(package + os.sep)]
    # Spark's own daemon, asked for: the workers import pyspark from its zip (what the
    # module above avoids; also shows the probe can tell the two apart).
    session = build_session("logscan-worker-daemon", master="local[1]", conf={
        "spark.ui.enabled": "false", "spark.python.daemon.module": "pyspark.daemon"})
    try:
        worker_file, archives = _worker_imports(session)
        assert ".zip" + os.sep in worker_file
        assert any(a.endswith("pyspark.zip") for a in archives)
    finally:
        session.stop()


def test_only_local_sessions_of_this_interpreter_run_it(monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    assert runs_worker_daemon("local[2]") and runs_worker_daemon("local")
    assert not runs_worker_daemon("spark://master:7077") and not runs_worker_daemon(None)
    monkeypatch.delenv("PYSPARK_PYTHON")
    assert runs_worker_daemon("local[*]")
    # Workers of another interpreter may not have spark_jobs: Spark's own daemon then.
    monkeypatch.setenv("PYSPARK_PYTHON", "/usr/bin/false")
    assert not runs_worker_daemon("local[2]")
    monkeypatch.setenv("PYSPARK_PYTHON", "no-such-python-here")
    assert not runs_worker_daemon("local[2]")
