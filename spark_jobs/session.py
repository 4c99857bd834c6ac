"""One place that builds a SparkSession with Delta: extensions, catalog, UTC, Python workers.

Delta's jars. The delta-spark Python package ships none, and the jar its pip helper asks for
(io.delta:delta-spark_4.2_2.13:4.4.1) is not published: delta-spark 4.4.1 exists as a Python
wheel only, so ``spark.jars.packages`` through ``configure_spark_with_delta_pip`` fails on
this pin. ``make delta-jars`` resolves the 4.4.0 jar (built against Spark 4.2.0, like
pyspark 4.2.0) with its dependencies into .delta/libs; :func:`delta_jars` picks the ones
pyspark does not already ship. They must be on the JVM's class path when it starts:

* run as ``python -m spark_jobs.scan`` (tests, ``logscan scan``): this module sets
  ``spark.jars`` itself before the JVM starts;
* run under ``spark-submit``: the JVM is already up, so pass them with
  ``--jars "$(python -m spark_jobs.session --jars)"``; setting spark.jars from Python then
  is too late (DATA_SOURCE_NOT_FOUND: delta) and :func:`build_session` says so.

Object stores. The scan reads and writes its URIs in Python (logscan.logdir.store: pyarrow and
delta-rs), so its Spark tasks need no Hadoop filesystem; they need the storage options, which
:func:`store_conf` hands every Python worker as $LOGSCAN_STORAGE_OPTIONS (spark.executorEnv:
redacted by Spark where it shows settings, its value naming a secret). Spark's own reads and
writes of Delta tables at ``s3a://`` or ``s3://`` (``logscan sql --engine spark``, spark-sql)
go through Hadoop's S3A: ``make s3a-jars`` fetches hadoop-aws (the Hadoop release pyspark
ships) and its AWS SDK bundle into .delta/s3a, :func:`s3a_jars` adds them, and the storage
options become ``spark.hadoop.fs.s3a.*`` settings (logscan.logdir.store.hadoop_options).

Spark Connect. ``build_session(remote=...)`` (``--remote`` of spark_jobs.scan and ``logscan scan
--output``; or $SPARK_REMOTE, or ``spark-submit --remote``'s: :func:`remote_url`) makes a Connect client
session instead: ``sc://HOST:PORT`` reaches a running Connect server, ``local[N]`` starts one
in a JVM of this process (pyspark's own: the settings here become that server's, Delta's jars
and the worker daemon too). A Connect session has no SparkContext, RDD, broadcast or JVM
handle (:func:`is_connect`): what the job needs of them goes through :func:`default_parallelism`,
spark_jobs.scan.for_tasks (spark_jobs.shared instead of a broadcast), Spark's interrupt of the
session's operations and the session's own data source registry. Against a server already
running only runtime settings take (the static ones, class paths and executor environments,
are the server's: pyspark drops them silently); the scan's own commits are delta-rs's in this
process, so the server needs no Delta jars for it, and its Python workers need this
repository's code (logscan, spark_jobs) importable and pyarrow, as a cluster's do.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import sys
import threading
import time
import warnings
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

REPO = Path(__file__).resolve().parents[1]
DELTA_LIBS = Path(os.environ.get("LOGSCAN_DELTA_LIBS", REPO / ".delta" / "libs"))
#: hadoop-aws and the AWS SDK bundle it was built with (`make s3a-jars`): Spark's s3a:// filesystem.
S3A_LIBS = Path(os.environ.get("LOGSCAN_S3A_LIBS", REPO / ".delta" / "s3a"))
#: Schemes Spark reads through Hadoop's S3A once the s3a jars are on its class path (s3:// too:
#: fs.s3.impl is set to S3A, as the URIs logscan prints use s3://).
S3A_SCHEMES = ("s3", "s3a", "s3n")

#: PySpark's daemon importing the installed pyspark (spark_jobs/worker_daemon.py): set for the
#: local sessions build_session starts whose workers run this interpreter (runs_worker_daemon);
#: a cluster's executors may not have it.
WORKER_DAEMON = "spark_jobs.worker_daemon"

#: The most bytes of rows Spark hands a Python step in one Arrow batch
#: (spark.sql.execution.arrow.maxBytesPerBatch; Spark's default is 64 MiB, and
#: maxRecordsPerBatch's 10,000 rows do not bound it when a row is a blob of up to ~1 MiB:
#: tasks.BLOB_BYTES). The blobs' writers (tasks.write_blobs) got up to 64 MiB of blobs a batch,
#: the peak of a Python worker in a scan of make bench's cores copy: 194-196 MiB RssAnon against
#: 129-133 during the decode; at 8 MiB, 148-155 (local[2], 2026-12-07). A batch of narrow rows
#: reaches 8 MiB only past ~50,000 rows, so no other step gets more batches than it did.
ARROW_BATCH_BYTES = 8 << 20

_VERSIONED = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")

BASE_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.sql.session.timeZone": "UTC",
    # Paths only, no metastore: a Hive catalog (spark-sql's choice when Hive's classes are
    # present, or a spark-defaults.conf asking for it) would leave metastore_db/, derby.log
    # and spark-warehouse/ in whatever folder the operator runs the job from.
    "spark.sql.catalogImplementation": "in-memory",
    # Both tiers of the JIT, C2 too. With the first tier only (-XX:TieredStopAtLevel=1) a warm
    # scan of make bench's 1 GB copy cost ~0.5 CPU-s per GB less (no C2 compiles of each scan's
    # generated classes), but the JVM's own work ran 3-4x slower where it is large: a 1 GiB
    # segment read in byte ranges, its batch facts shuffled and sorted for the per-replica
    # step, took 18-21 CPU-s of task threads against 4.7-5.4 (25-30 CPU-s in all against
    # 18.5-21, local[1], 2026-11-28). Large partitions are the copies Spark is for.
    # The JIT's thresholds 3x Java's (CompileThresholdScaling), both tiers kept. A warm scan still
    # compiles 700-2,800 methods (-XX:+PrintCompilation), most of them for the first time in the
    # session and fewer each scan (871, 615, 465 in three rounds of the 106 MiB copy): Spark's
    # planner (catalyst), the scheduler's and the Arrow runner's per-task code crossing the
    # thresholds as invocations add up, more of it in a scan of more tasks. Not generated code
    # made anew per query: Spark's codegen metrics count no Janino compile in a warm scan (none in
    # three of the 106 MiB copy, one class in two of the 1 GB copy). At 3x, methods run a few
    # hundred times a scan stay in the interpreter or C1: in a warm local[1] scan of make bench's
    # 1065 MiB copy the C2 threads' CPU fell from 1.73 to 0.94 s, of its tenth from 1.16 to 0.52
    # s, the other JVM threads' within the noise (medians of 9 scans each, three sessions of each
    # in turns, load 1.4-3.8; with the states' packing, tasks.STATE_RUN): mostly a fixed cost per
    # scan; at the margin (the copy minus its tenth, per GB) C2 0.59 -> 0.44 CPU-s/GB
    # (docs/spark.md has the figures). The large work is not slower: a second scan of a 1.2 GB
    # single-segment partition (byte ranges, the per-replica step's shuffle) 7.6 CPU-s against
    # 7.9. At 10x the JIT's share went (0.09) but the interpreted JVM threads grew as much (0.64
    # against 0.4 CPU-s/GB), as in docs/benchmarks.md's earlier try; C2 only
    # (-XX:-TieredCompilation) moved it into the interpreter too and doubled a cold scan's time;
    # C2's thresholds alone raised 3x, C2 0.43 (issue 30, 2026-12-07).
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC -XX:CompileThresholdScaling=3",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC -XX:CompileThresholdScaling=3",
    # Delta rebuilds a table's snapshot with 50 tasks by default: seconds of pure overhead
    # for logs of a few commits.
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
    "spark.sql.execution.arrow.maxBytesPerBatch": str(ARROW_BATCH_BYTES),
    # No optimized writes: their shuffle is a job and a stage more per table (53 -> 43 jobs a
    # scan of the 3000-replica bench copy) and moves every batches row once more. The grouped
    # steps now have a few large tasks (scan.REPLICAS_PER_TASK), so a table gets a few files
    # per scan either way.
    "spark.databricks.delta.optimizeWrite.enabled": "false",
    # No per-file column statistics (min/max/null counts of the first 32 columns, computed
    # while writing): readers of a one-shot forensic table filter on scan_id, the partition
    # column, so the statistics would skip nothing.
    "spark.databricks.delta.stats.collect": "false",
    # Generated classes kept for reuse (Spark's default keeps 100): a scan plans ~40 queries
    # (its own and Delta's), more classes than that, so with the default a scan compiled some
    # of them again and the JIT compiled their fresh copies again. Measured on the warm scan
    # of a 4 MiB copy (make bench's fixed cost of a scan), alternating sessions: 8.6-10.8 s ->
    # 6.6-8.1 s at local[2], JVM task-thread CPU halved (Janino no longer recompiles); a 1 GB
    # scan's time unchanged (2026-11-23).
    "spark.sql.codegen.cache.maxEntries": "1000",
}


def _artifact(jar_name: str) -> Optional[str]:
    m = _VERSIONED.match(jar_name)
    return m.group("artifact") if m else None


def delta_jars(libs: Path = DELTA_LIBS) -> list[str]:
    """Jars of .delta/libs whose artifact pyspark does not ship (pyspark's newer Jackson,
    Hadoop, Parquet and Scala stay the only copies on the class path)."""
    import pyspark

    shipped = {_artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = sorted(str(p) for p in Path(libs).glob("*.jar") if _artifact(p.name) not in shipped)
    if not any(Path(j).name.startswith("delta-spark_") for j in jars):
        raise FileNotFoundError(f"no delta-spark jar in {libs}: run `make delta-jars`")
    return jars


def s3a_jars(libs: Path = S3A_LIBS) -> list[str]:
    """The jars of Spark's s3a:// filesystem (hadoop-aws, the AWS SDK bundle) that pyspark does
    not ship; FileNotFoundError saying how to fetch them when they are not there."""
    import pyspark

    shipped = {_artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = sorted(str(p) for p in Path(libs).glob("*.jar") if _artifact(p.name) not in shipped)
    if not any(Path(j).name.startswith("hadoop-aws-") for j in jars):
        raise FileNotFoundError(f"no hadoop-aws jar in {libs}: run `make s3a-jars` (Spark reads s3a:// through it)")
    return jars


def _scheme(uri: str) -> str:
    return uri.partition("://")[0].lower() if "://" in uri else ""


def store_conf(uris=()) -> dict[str, str]:
    """Settings that let a session's tasks and Spark itself reach the stores of ``uris`` with
    the storage options configured now (logscan.logdir.store.configure): every Python worker
    gets them as $LOGSCAN_STORAGE_OPTIONS; for s3:// and s3a:// URIs, Hadoop's S3A gets them as
    spark.hadoop.fs.s3a.* (s3:// read by S3A too)."""
    import json

    from logscan.logdir import store

    given = store.options()
    conf = {}
    if given:
        conf[f"spark.executorEnv.{store.OPTIONS_ENV}"] = json.dumps(given, sort_keys=True)
    if any(_scheme(str(u)) in S3A_SCHEMES for u in uris):
        conf["spark.hadoop.fs.s3.impl"] = "org.apache.hadoop.fs.s3a.S3AFileSystem"
        conf.update({f"spark.hadoop.{k}": v for k, v in store.hadoop_options(given).items()})
    return conf


def _delta_loaded(spark) -> bool:
    from py4j.java_gateway import JavaClass

    return isinstance(spark._jvm.io.delta.tables.DeltaTable, JavaClass)


def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (pyspark.sql.connect): no SparkContext,
    RDD, broadcast or ``_jvm`` there."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def remote_url(remote: Optional[str] = None) -> Optional[str]:
    """The Spark Connect server asked for: ``remote`` (--remote), else $SPARK_REMOTE, else the
    ``spark.remote`` that ``spark-submit --remote`` hands its Python program (in
    $PYSPARK_REMOTE_INIT_CONF_<i>, JSON), else None (classic Spark)."""
    import json

    found = remote or os.environ.get("SPARK_REMOTE")
    for i in range(int(os.environ.get("PYSPARK_REMOTE_INIT_CONF_LEN", "0") or 0)):
        try:
            found = found or json.loads(os.environ.get(f"PYSPARK_REMOTE_INIT_CONF_{i}", "{}")).get("spark.remote")
        except (ValueError, AttributeError):
            continue
    return found or None


#: Rows of the range whose partitions default_parallelism counts under Connect: more than any
#: cluster has cores, so no partition is empty.
_PARALLELISM_PROBE_ROWS = 1 << 20


def default_parallelism(spark) -> int:
    """The cores the session's jobs spread over: the SparkContext's defaultParallelism, or,
    under Spark Connect (no SparkContext), the partitions Spark gives a range without a
    partition count (Spark's ``spark.sql.leafNodeDefaultParallelism``, which defaults to the
    same defaultParallelism), counted with one small job."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    from pyspark.sql import functions as F

    last = spark.range(_PARALLELISM_PROBE_ROWS).select(F.spark_partition_id().alias("p")).agg(F.max("p")).first()[0]
    return 1 if last is None else last + 1


#: Spark's warehouse folder, a static setting (read once as the JVM starts).
WAREHOUSE = "spark.sql.warehouse.dir"


def _scratch_warehouse() -> str:
    """A warehouse folder of this process's own, removed as it exits: with the in-memory
    catalog nothing is kept in it, but Spark still makes the folder (its default
    ./spark-warehouse, in whatever folder the operator runs from) once a statement resolves a
    table, as DESCRIBE HISTORY delta.`path` or SHOW TABLES do. ``--warehouse`` (catalog
    tables) sets it instead."""
    import atexit
    import tempfile

    folder = tempfile.mkdtemp(prefix="logscan-warehouse-")
    atexit.register(shutil.rmtree, folder, True)
    return Path(folder).as_uri()


def build_session(app_name: str = "logscan-scan", *, master: Optional[str] = None,
                  conf: Optional[dict[str, Optional[str]]] = None, stores=(), remote: Optional[str] = None):
    """A SparkSession with Delta configured; ``master`` only when not under spark-submit. A
    local session it starts itself runs its Python workers under WORKER_DAEMON when they run
    this interpreter (runs_worker_daemon; ``conf`` may set ``spark.python.daemon.module`` back
    to ``pyspark.daemon``; a None value leaves a BASE_CONF setting unset). ``stores``: the URIs
    the session reads or writes (store_conf; an s3:// or s3a:// one adds the s3a jars when the
    session starts its JVM). ``remote`` (else remote_url's): a Spark Connect client session
    instead (``sc://HOST:PORT``, or ``local[N]`` for a Connect server this process starts;
    ``master`` is then ignored)."""
    # Python workers must run this interpreter: the one with pyarrow and logscan installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    remote = remote_url(remote)
    builder = SparkSession.builder.appName(app_name)
    under_submit = _jvm_running()
    starts_jvm = not under_submit and (remote is None or not remote.startswith("sc://"))
    if remote is not None:
        builder = builder.remote(remote)
        master = remote   # a local[N] server: its workers run this interpreter as a local master's
    elif master and not under_submit:
        builder = builder.master(master)
    settings = dict(BASE_CONF)
    if not starts_jvm and remote is not None:
        # A running Connect server has the catalog it was started with: Delta's catalog, a
        # runtime setting, would ask it for classes it may not have (the scan needs none).
        del settings["spark.sql.catalog.spark_catalog"], settings["spark.sql.extensions"]
    settings.update(store_conf(stores))
    if starts_jvm:
        settings.setdefault(WAREHOUSE, _scratch_warehouse())
        jars = delta_jars()
        if any(_scheme(str(u)) in S3A_SCHEMES for u in stores):
            jars += s3a_jars()
        settings["spark.jars"] = ",".join(jars)
        if runs_worker_daemon(master):
            settings["spark.python.daemon.module"] = WORKER_DAEMON
    settings.update(conf or {})
    for key, value in settings.items():
        if value is not None:   # None: not set here (the cluster's configuration decides)
            builder = builder.config(key, value)
    before = _children() if starts_jvm else set()
    try:
        with warnings.catch_warnings(), _workers_import_this_code(remote is not None and starts_jvm):
            # A Connect session gets the builder's settings again once it is up, and pyspark
            # warns of each one that only a server's start can take (spark.jars, the static
            # SQL settings): a local[N] server took them as it started, an sc:// one has its
            # own, which is how Spark Connect is meant to work.
            warnings.filterwarnings("ignore", message=r"Failed to set spark\.", category=UserWarning)
            spark = builder.getOrCreate()
    except BaseException:
        # Ctrl-C while the JVM starts: pyspark forgets the process it launched (which ignores
        # SIGINT), and a JVM whose driver is gone before it connects waits for it forever.
        _end(_children() - before)
        raise
    if not is_connect(spark) and not _delta_loaded(spark):
        raise RuntimeError("Delta's classes are not on the JVM class path: under spark-submit pass "
                           "--jars \"$(python -m spark_jobs.session --jars)\" (run `make delta-jars` first)")
    from . import datasource

    datasource.register(spark)   # spark.read.format("logscan"): a copy's batches or records
    return spark


@contextmanager
def interrupts_end_the_job(spark) -> Iterator[None]:
    """Within: Ctrl-C ends the session's jobs (:func:`stop_interrupted`) and raises
    KeyboardInterrupt, whatever the interrupted call raised on its way out (pyspark's collect
    replaces it with a Py4JNetworkError of its own). pyspark's SIGINT handler is set aside
    meanwhile: it calls the JVM from inside the call it interrupts, and py4j's tracebacks
    follow ("reentrant call"). After a Ctrl-C nothing is logged (py4j would log each
    connection the JVM's end breaks): the process is ending."""
    interrupted = threading.Event()

    def on_sigint(signum, frame):
        interrupted.set()
        logging.disable(logging.CRITICAL)   # for good: the process is ending
        raise KeyboardInterrupt

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_sigint) if main else None
    try:
        yield
    except BaseException:
        if not interrupted.is_set():
            raise
        stop_interrupted(spark)
        previous = signal.default_int_handler   # pyspark's would call the JVM that is gone
        raise KeyboardInterrupt from None
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


def in_background(spark, fn: Callable[[], object], name: str) -> Future:
    """``fn()`` on a thread of its own (its Spark jobs run beside the caller's: the scan's steps
    that need only the tally, the streams the steps after assess read ahead), its result or
    exception in the Future. pyspark's InheritableThread: the thread's JVM side gets the
    caller's local properties (job group, pool), its Connect client the caller's tags. A
    daemon thread: after Ctrl-C the session's jobs are cancelled (interrupts_end_the_job)
    and nothing waits for it."""
    done: Future = Future()

    def work() -> None:
        try:
            done.set_result(fn())
        except BaseException as e:   # handed to whoever asks for the result
            done.set_exception(e)

    from pyspark import InheritableThread

    InheritableThread(work, session=spark, name=f"logscan {name}", daemon=True).start()
    return done


def stop_interrupted(spark) -> None:
    """After Ctrl-C: the session's jobs ended within a second or two, where spark.stop() waits
    for the cancelled tasks to wind down (it took a minute). When this process started the JVM,
    the JVM is ended (its Python workers end with it: their daemon exits when it goes); under
    spark-submit the JVM is spark-submit's own: the jobs are cancelled, and it ends when this
    process does. A second Ctrl-C meanwhile is ignored: this is what it would ask for."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        if is_connect(spark):
            _stop_connect(spark)
            return
        sc = spark.sparkContext
        server = getattr(sc, "_accumulatorServer", None)
        if server is not None:   # its handler prints an EOFError trace when the JVM's end cuts it
            server.handle_error = lambda *args: None
        proc = getattr(sc._gateway, "proc", None)
        if proc is None:
            # the interrupted call's connection is mid-answer: cancel on a thread of its own
            canceller = threading.Thread(target=_quietly, args=(sc.cancelAllJobs,), daemon=True)
            canceller.start()
            canceller.join(GRACE_S)
            return
        _end_jvm(sc, proc)
        _forget_sessions()
    finally:
        signal.signal(signal.SIGINT, previous)


def _end_jvm(sc, proc) -> None:
    """The JVM this process started (``proc``, the gateway's) ended, and the gateway closed."""
    _end([proc.pid])
    proc.wait()
    _quietly(sc._gateway.shutdown)


def _forget_sessions() -> None:
    """pyspark's singletons of a JVM that is gone cleared, so a later session starts anew."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    SparkContext._active_spark_context = None
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None


@contextmanager
def _workers_import_this_code(needed: bool) -> Iterator[None]:
    """Within, for a JVM started meanwhile (a ``local[N]`` Connect server): its Python workers
    find this repository's code first on their PYTHONPATH (Spark puts the JVM's own PYTHONPATH
    on theirs). A local classic session's workers find it as the driver did, in the folder
    they run in; a Connect server runs each session's workers in a folder of the session's
    own artifacts (spark.sql.artifact.isolation.enabled, which pyspark turns on), where an
    installed logscan, or none, would be found instead."""
    if not needed:
        yield
        return
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), before) if p)
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def _stop_connect(spark) -> None:
    """stop_interrupted of a Spark Connect session: its operations interrupted on the server
    (on a thread of its own: the interrupted call's stream may still be open), then, when
    this process started the server (``local[N]``), that server's JVM ended as a local one."""
    canceller = threading.Thread(target=_quietly, args=(spark.interruptAll,), daemon=True)
    canceller.start()
    canceller.join(GRACE_S)
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context   # only when pyspark started the server here
    proc = getattr(getattr(sc, "_gateway", None), "proc", None)
    if "SPARK_LOCAL_REMOTE" not in os.environ or proc is None:
        return
    _end_jvm(sc, proc)
    _quietly(spark.client.close)
    _forget_sessions()


def _quietly(call) -> None:
    try:
        call()
    except Exception:   # noqa: BLE001 - the JVM is going or gone: nothing left to do there
        pass


#: How long a JVM has to run its shutdown hooks (Spark deletes its scratch folders) before it
#: is killed.
GRACE_S = 1.5


def _end(pids: Iterable[int]) -> None:
    """Ends processes this one started: SIGTERM, then SIGKILL after GRACE_S."""
    pids = list(pids)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + GRACE_S
    while pids and time.monotonic() < deadline:
        pids = [pid for pid in pids if _alive(pid)]
        time.sleep(0.05)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _alive(pid: int) -> bool:
    """Whether a child of this process still runs (a zombie is reaped here)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:   # not our child (reaped already, or another's)
        return False
    return done == 0


def _children() -> set[int]:
    """The ids of this process's child processes (Linux /proc; empty elsewhere)."""
    me, out = os.getpid(), set()
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue   # ended meanwhile
        if int(fields[1]) == me:
            out.add(int(entry.parent.name))
    return out


def runs_worker_daemon(master: Optional[str]) -> bool:
    """Whether a session build_session starts runs its Python workers under WORKER_DAEMON
    (pyspark imported from the installed package, not compiled from its zip): a local one
    whose workers run this interpreter, which has spark_jobs. A worker interpreter set
    elsewhere (PYSPARK_PYTHON) might not have it, and then no worker could start."""
    if not (master and master.startswith("local")):
        return False
    worker = shutil.which(os.environ.get("PYSPARK_PYTHON", sys.executable))
    return worker is not None and os.path.abspath(worker) == os.path.abspath(sys.executable)


def _jvm_running() -> bool:
    """True under spark-submit: it starts the JVM first and tells pyspark how to reach it."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


if __name__ == "__main__":
    if sys.argv[1:] == ["--jars"]:
        print(",".join(delta_jars()))
    elif sys.argv[1:] == ["--jars", "--s3a"]:
        print(",".join(delta_jars() + s3a_jars()))
    else:
        sys.exit("usage: python -m spark_jobs.session --jars [--s3a]   (comma-separated jars for spark-submit; "
                 "--s3a adds hadoop-aws and the AWS SDK for s3a:// paths)")
