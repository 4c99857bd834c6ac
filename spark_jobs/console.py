"""A Spark session for a person at a terminal (`logscan scan --output`, `logscan sql`,
`logscan report`): Delta configured by spark_jobs.session, no web UI, and a quiet JVM.

Spark's own start-up chatter (its default log4j profile, the loopback-hostname and
native-hadoop warnings, "Setting default log level") would bury the one line that matters,
so the driver JVM starts with a log4j2 configuration that prints fatal errors only (a task's
failure is an ERROR line per attempt, with its trace: a job that fails because of it says so
in one line, scan_cli.report_failure, with the whole trace in a file); Spark's stage progress
bar is drawn only when asked (a terminal is watching stderr).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .session import BASE_CONF, build_session, is_connect

LOG4J2_ERRORS_ONLY = """\
# written by logscan (spark_jobs/console.py): Spark's log on stderr, fatal errors only
rootLogger.level = fatal
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
# A "shell" (pyspark-shell) prints "Setting default log level" unless Spark's own logger has
# a level of its own equal to the root's (org.apache.spark.internal.Logging)
logger.spark.name = org.apache.spark
logger.spark.level = fatal
"""


def _log4j2_file() -> Path:
    """The configuration as a file the JVM can read (log4j2 takes a path, not text)."""
    path = Path(tempfile.gettempdir()) / f"logscan-log4j2-errors-{os.getuid()}.properties"
    if not path.is_file() or path.read_text() != LOG4J2_ERRORS_ONLY:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, text=True)
        with os.fdopen(fd, "w") as f:
            f.write(LOG4J2_ERRORS_ONLY)
        os.replace(tmp, path)
    return path


class SetupFailed(Exception):
    """Spark with Delta cannot start here; the message says how to fix it."""


def session(app_name: str, *, master: str, progress: bool = False, conf: dict[str, str] | None = None,
            stores=(), remote: str | None = None):
    """A quiet Delta-enabled session; ``progress``: Spark's console stage bar on stderr;
    ``conf``: more settings (static ones too: the session is new); ``stores``: the URIs Spark
    itself reads; ``remote``: a Spark Connect session instead (session.build_session: a
    ``local[N]`` server started here is as quiet, an ``sc://`` one logs as its operator set
    it)."""
    base = (conf or {}).get("spark.driver.extraJavaOptions") or BASE_CONF["spark.driver.extraJavaOptions"]
    java = f"{base} -Dlog4j2.configurationFile={_log4j2_file().as_uri()}"
    try:
        spark = build_session(app_name, master=master, conf={
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "true" if progress else "false",
            **(conf or {}),
            "spark.driver.extraJavaOptions": java,   # conf's own options kept in it
        }, stores=stores, remote=remote)
    except (FileNotFoundError, RuntimeError) as e:   # no Delta jars / not on the class path
        raise SetupFailed(str(e)) from None
    if not is_connect(spark):   # a Connect session has no SparkContext: the log4j file above rules
        spark.sparkContext.setLogLevel("FATAL")
    return spark
