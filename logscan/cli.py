"""The `logscan` command line (click). Thin: parse options, call the library, render."""

from __future__ import annotations

import io
import os
import shlex
import sys

import click

from logscan.dump import EXIT_PIPE, DumpOptions, Dumper
from logscan.dump.options import DEFAULT_MAX_MESSAGE_SIZE, INT_MAX, PARALLEL_MIN_BYTES
from logscan.dump.versions import DEFAULT_KAFKA_VERSION, KAFKA_VERSIONS, RELEASES, text_of
from logscan.dump.parsers import BYTE_DECODERS
from logscan.defaults import DEFAULT_BOOTSTRAP, DEFAULT_MAX_TRANSACTION_TIMEOUT_MS

STRING_DECODER = "org.apache.kafka.tools.api.StringDecoder"


#: Exit status after Ctrl-C (SIGINT), as shells give a process the signal ends: 128 + 2.
EXIT_INTERRUPTED = 130


class _Logscan(click.Group):
    """The command group, with Ctrl-C as a status of its own: click prints "Aborted!" and exits
    1, which every command documents as "damage found" (or a failed statement)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("\nlogscan: interrupted (Ctrl-C); nothing it would have printed after this is valid",
                       err=True)
            ctx.exit(EXIT_INTERRUPTED)


@click.group(cls=_Logscan, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="logscan")
def main() -> None:
    """Offline forensic analyzer for Apache Kafka log dirs and transactions.

    \b
      logscan scan COPY/                             what hangs, from copied log dirs
      logscan plan COPY/ --bootstrap-server b1:9092  the kafka-transactions abort commands
      logscan dump 00000000000000000000.log          kafka-dump-log's output, offline
      logscan scan COPY/ --output tables/            the Spark job: Delta tables
      logscan sql --tables tables/ "SELECT ..."      SQL over those tables
      logscan report --tables tables/ --out r.html   an HTML page of them
      logscan diff --tables tables/ SCAN_A SCAN_B    what changed between two scans

    \b
    Exit status, every command:
      0    done, nothing wrong found
      1    damaged data found (dump, scan) or a failed SQL statement (sql)
      2    bad command line, or a missing set-up or input (no tables, no Delta jars)
      3    a file could not be read (dump)
      4    hanging transactions found (scan), abort plans printed (plan)
      5    the Spark job failed, no answer (scan --output): one line names the cause
      130  interrupted (Ctrl-C)
      141  stdout closed early (dump ... | head)

    `logscan COMMAND --help` shows each command's options, examples and exit status.
    """


DUMP_HELP = """Print the contents of Kafka log files, like kafka-dump-log.sh (Kafka 3.9, 4.1, 4.4).

\b
  logscan dump 00000000000000000000.log                 batches
  logscan dump --deep-iteration --print-data-log x.log  records with key/payload
  logscan dump --files a.log,a.index,a.timeindex         kafka-dump-log's own spelling
  logscan dump __transaction_state-3/*.log              decoded automatically
  logscan dump --format json x.log | jq .               one JSON object per line

\b
Files are dispatched by the text after the last dot, as kafka-dump-log does: .log and
KRaft .checkpoint (log dump), .index, .timeindex, .txnindex, .snapshot (producer
state); anything else prints "Ignoring unknown file" on stderr. The text on stdout is
line for line what kafka-dump-log of the --kafka-version release (default 4.4.0) prints for
the same files and options, and so are its stderr blocks: 4.4.0 names the transactionStatus
("Ongoing" where 4.1.1 printed 1), 3.9.2 prints the transaction log in its older
transaction_metadata:: text and stops at a record it cannot read, where logscan goes on
(docs/scan.md lists every difference); __cluster_metadata records are decoded up to 4.4.0's
versions, tiered storage's __remote_log_metadata records as Kafka's RemoteLogMetadata objects
print themselves (--format json: the object's fields), __share_group_state records as 4.1.1's
or 4.4.0's coordinator records (3.9.2 has no --share-group-state-decoder).

\b
Automatic decoder: for files given as arguments (FILE...), a file inside a
__transaction_state-N, __consumer_offsets-N, __cluster_metadata-0, __remote_log_metadata-N
or __share_group_state-N directory is dumped as if --transaction-log-decoder,
--offsets-decoder, --cluster-metadata-decoder, --remote-log-metadata-decoder or
--share-group-state-decoder had been given (which, as in kafka-dump-log, implies
--print-data-log). --no-auto-decoder turns this off. Files given with --files are never
auto-decoded, so a kafka-dump-log command line gives kafka-dump-log's output.

\b
Deliberate differences from kafka-dump-log (stdout is unchanged where Kafka succeeds):
  * damage is reported on stderr as "logscan: FILE: byte N: reason", one line each;
  * where kafka-dump-log dies with a stack trace (batch size < 14 e.g. a zero-filled
    tail, a corrupt record, a bad compressed stream, a decompression bomb, an index
    entry pointing at no batch, a missing .log) logscan reports it, skips to the next
    valid batch (printing its real file position) and goes on;
  * a zero-filled tail is also counted in "Found N invalid bytes at the end of F";
  * a name without a dot is ignored instead of crashing; a missing .index for a
    .timeindex is not created;
  * FILE... arguments also read what kafka-dump-log ignores: the offset checkpoints
    (recovery-point-, replication-, log-start-, cleaner-offset-checkpoint),
    leader-epoch-checkpoint, partition.metadata and meta.properties.

\b
Exit status:
  0    everything read and valid; also when .index/.timeindex entries disagree with the
       log, which kafka-dump-log (4.1.1 and 4.4.0) only warns about and exits 0: its
       warning blocks ("Mismatches in", time index ones) are printed on stderr as Kafka
       prints them, with a "logscan: FILE: file: N index entries disagree" line per file
  1    something in the data is wrong (corrupt/truncated batch, CRC mismatch, trailing
       bytes, corrupt snapshot, an index entry pointing at no batch, a failed
       --index-sanity-check, a .log that shrank while read, a .log larger than
       --max-bytes' default), always with a "logscan: FILE: ..." line on stderr
  2    bad command line
  3    a file could not be read (missing, permission denied, a directory)
  141  stdout was closed early (e.g. piped into head)
"""


class _PathOrUri(click.ParamType):
    """An INPUT: a URI (``s3://bucket/copy``, ``file:///abs``: logscan.logdir.store) as given,
    else a local folder that must exist. Always a str: a Path would make ``s3://x`` ``s3:/x``."""

    name = "path_or_uri"
    _folder = click.Path(exists=True, file_okay=False)

    def convert(self, value, param, ctx):
        from logscan.logdir.store import is_uri

        return value if is_uri(value) else self._folder.convert(value, param, ctx)


_PATH_OR_URI = _PathOrUri()


def _storage_options(ctx, param, values) -> dict:
    """--storage-option key=value, repeated: given to the stores of the URIs read."""
    from logscan.logdir import store

    try:
        options = store.parse_storage_options(values)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    store.configure(options)
    return options


_storage_option = click.option(
    "--storage-option", "storage_options", multiple=True, metavar="KEY=VALUE", callback=_storage_options,
    expose_value=False, is_eager=True,
    help="For s3://, gs://, abfs://, hdfs:// inputs: a keyword argument of pyarrow's filesystem (repeatable; "
         "e.g. endpoint_override=host:9000, scheme=http, region=..., access_key=..., secret_key=...). "
         "Credentials otherwise come from the environment, instance profile or config files.")


def _check_stores(paths) -> None:
    """A URI whose store cannot be made (unknown scheme, an option its filesystem does not
    take) is a usage error, before anything is read."""
    from logscan.logdir import store

    for p in paths:
        if store.is_uri(p):
            try:
                store.store_of(p)
            except OSError as e:
                raise click.UsageError(f"{p}: {e}") from None


def _budget_options(fn):
    """The per-file decompression budget (logscan.format.compression.DecompressionBudget) of
    `dump`, `scan` and `plan`: where it is spent, one bomb-budget finding, and the later
    compressed batches of that file are not decompressed."""
    from logscan.format.compression import DEFAULT_BUDGET_MIN_BYTES, DEFAULT_BUDGET_RATIO, DEFAULT_BUDGET_SECONDS

    fn = click.option("--max-decompress-seconds", type=click.FloatRange(0, min_open=True),
                      default=DEFAULT_BUDGET_SECONDS, show_default=True, metavar="S",
                      help="Decompression time allowed per file (a .log): a file of many small bombs "
                           "stops costing time here.")(fn)
    fn = click.option("--min-decompressed-budget", type=click.IntRange(0), default=DEFAULT_BUDGET_MIN_BYTES,
                      show_default=True, metavar="BYTES",
                      help="Decompressed bytes allowed per file whatever its size.")(fn)
    return click.option("--max-decompressed-ratio", type=click.IntRange(1), default=DEFAULT_BUDGET_RATIO,
                        show_default=True, metavar="N",
                        help="Decompressed bytes allowed per file (a .log): N times its size, or "
                             "--min-decompressed-budget if more. Past it: one bomb-budget finding, and the "
                             "file's later compressed batches are not decompressed.")(fn)


def _set_budget(ratio: int, min_bytes: int, seconds: float) -> None:
    """The scan's segments get their budget from the environment (logscan.scan.replica.BUDGET_ENV),
    so the Spark job's workers, which inherit it, apply the same one."""
    from logscan.scan.replica import BUDGET_ENV

    os.environ[BUDGET_ENV] = f"{ratio}:{min_bytes}:{seconds!r}"


@main.command("dump", help=DUMP_HELP, context_settings={"max_content_width": 100})
@click.argument("paths", metavar="[FILE]...", nargs=-1, type=click.Path(readable=False))
@click.option("--files", "files_opt", multiple=True, metavar="f1,f2,...",
              help="Comma separated files to dump (kafka-dump-log's spelling; no auto decoder).")
@click.option("--print-data-log", is_flag=True,
              help="Print record keys and payloads (implies --deep-iteration).")
@click.option("--deep-iteration", is_flag=True, help="Print every record, not just batches.")
@click.option("--transaction-log-decoder", is_flag=True,
              help="Decode records as __transaction_state entries.")
@click.option("--offsets-decoder", is_flag=True,
              help="Decode records as __consumer_offsets entries.")
@click.option("--cluster-metadata-decoder", is_flag=True,
              help="Decode records as KRaft __cluster_metadata records.")
@click.option("--remote-log-metadata-decoder", is_flag=True,
              help="Decode records as tiered storage's __remote_log_metadata records.")
@click.option("--share-group-state-decoder", is_flag=True,
              help="Decode records as the share coordinator's __share_group_state records (Kafka 4.1+).")
@click.option("--key-decoder-class", default=None, is_flag=False, flag_value=STRING_DECODER,
              metavar="NAME", help="Key decoder: text (StringDecoder, default), hex, int, long, "
              "or Kafka's org.apache.kafka.tools.api.{String,Integer,Long}Decoder. "
              "Implies --print-data-log.")
@click.option("--value-decoder-class", default=None, is_flag=False, flag_value=STRING_DECODER,
              metavar="NAME", help="Payload decoder, same names as --key-decoder-class.")
@click.option("--skip-record-metadata", is_flag=True,
              help="Do not print per-record metadata (nor control records' details).")
@click.option("--verify-index-only", is_flag=True,
              help="Check .index/.timeindex entries against the log; print only mismatches.")
@click.option("--index-sanity-check", is_flag=True,
              help="Run the broker's startup sanity check on indexes only.")
@click.option("--max-bytes", type=click.IntRange(0, 2**63 - 1), default=INT_MAX, show_default=True,
              help="Only read the first N bytes of each .log (kafka-dump-log's meaning; its default, the "
                   "largest segment Kafka writes). A larger .log is read to N and said so; logscan takes N "
                   "past 2147483647 to read it all.")
@click.option("--max-message-size", type=click.IntRange(0, INT_MAX),
              default=DEFAULT_MAX_MESSAGE_SIZE, show_default=True,
              help="Bytes read at an index entry's position when verifying a .index.")
@click.option("--max-decompressed-bytes", type=click.IntRange(1), default=256 * 1024 * 1024,
              show_default=True, help="Cap on one batch's decompressed size (bomb guard).")
@_budget_options
@click.option("--auto-decoder/--no-auto-decoder", default=True, show_default=True,
              help="Pick the decoder from an internal topic's directory (FILE... only).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="text: kafka-dump-log's lines; json: one object per line (findings on "
              "stderr as JSON objects too).")
@click.option("--no-progress", is_flag=True,
              help="No progress bar on stderr (drawn only when stderr is a terminal and stdout is not).")
@click.option("--kafka-version", type=click.Choice(KAFKA_VERSIONS), default=DEFAULT_KAFKA_VERSION,
              show_default=True, help="Print the text of this Kafka release's kafka-dump-log (" +
              ", ".join(f"{v}: {r}" for v, r in RELEASES.items()) + "): how --transaction-log-decoder shows "
              "a transaction's state, a producer snapshot's lines, LEADER_CHANGE records, the end-of-run "
              "blocks. --format json is the same for every version (4.1.1's key and payload texts; "
              "__share_group_state's read with 4.4.0's fields).")
@_storage_option
def dump(paths, files_opt, print_data_log, deep_iteration, transaction_log_decoder,
         offsets_decoder, cluster_metadata_decoder, remote_log_metadata_decoder, share_group_state_decoder,
         key_decoder_class, value_decoder_class,
         skip_record_metadata, verify_index_only, index_sanity_check, max_bytes,
         max_message_size, max_decompressed_bytes, max_decompressed_ratio, min_decompressed_budget,
         max_decompress_seconds, auto_decoder, fmt, no_progress, kafka_version) -> None:
    if share_group_state_decoder and text_of(kafka_version).share_state_types is None:
        raise click.UsageError(f"--share-group-state-decoder: the kafka-dump-log of Kafka {RELEASES[kafka_version]} "
                               "has no such option (share groups came with 4.1)")
    from_files = [f for opt in files_opt for f in opt.split(",")]
    if not paths and not from_files:
        raise click.UsageError("no files given: pass FILE... or --files f1,f2")
    _check_stores(from_files + list(paths))
    for name in (key_decoder_class, value_decoder_class):
        if name is not None and name not in BYTE_DECODERS:
            raise click.UsageError(f"unknown decoder {name!r}; use one of: "
                                   + ", ".join(sorted(BYTE_DECODERS)))
    # DumpLogSegmentsOptions.messageParser: offsets wins over transaction over metadata over
    # remote log metadata over share group state.
    decoder = ("offsets" if offsets_decoder else "transaction" if transaction_log_decoder
               else "metadata" if cluster_metadata_decoder
               else "remote" if remote_log_metadata_decoder
               else "share" if share_group_state_decoder else None)
    base = dict(
        print_data_log=print_data_log, deep_iteration=deep_iteration, decoder=decoder,
        key_decoder=key_decoder_class or STRING_DECODER,
        value_decoder=value_decoder_class or STRING_DECODER,
        decoder_class_given=key_decoder_class is not None or value_decoder_class is not None,
        skip_record_metadata=skip_record_metadata, verify_index_only=verify_index_only,
        index_sanity_check=index_sanity_check, max_bytes=max_bytes,
        max_message_size=max_message_size, max_decompressed=max_decompressed_bytes, kafka_version=kafka_version,
        budget_ratio=max_decompressed_ratio, budget_min_bytes=min_decompressed_budget,
        budget_seconds=max_decompress_seconds)
    options = DumpOptions(**base, auto_decoder=auto_decoder, parallel_min_bytes=PARALLEL_MIN_BYTES)
    # kafka-dump-log's --files first (as given), then FILE...; only FILE... is auto-decoded.
    sys.exit(_run(options, from_files + list(paths), range(len(from_files), len(from_files) + len(paths)),
                  json=fmt == "json", no_progress=no_progress))


def _run(options: DumpOptions, files: list[str], auto_indices, *, json: bool, no_progress: bool = True) -> int:
    """Run the dumper with a buffered UTF-8 stdout; a closed pipe ends quietly with 141.
    A progress bar (bytes, files, rate) is drawn on stderr only for a person watching it."""
    from logscan import progress

    show = progress.wanted(no_progress, output_on_stdout=True)
    out = io.TextIOWrapper(_stdout_bytes(), encoding="utf-8", errors="replace",
                           newline="\n", line_buffering=False, write_through=False)
    try:
        with progress.files_bar("dump", files, enabled=show) as bar:
            dumper = Dumper(out, bar.err, options, json=json)  # stderr, above the bar if drawn
            if show:
                dumper.dump_file = progress.per_file(dumper.dump_file, bar)
            status = dumper.run(files, auto_indices)
        out.flush()
        return status
    except BrokenPipeError:
        # Python flushes stdout at exit; point it at /dev/null so that flush cannot fail too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE
    finally:
        try:
            out.detach()
        except (ValueError, BrokenPipeError, OSError):
            pass


def _stdout_bytes():
    """stdout as a binary stream with a 1 MiB buffer, so a dump of a segment (a line per
    batch) reaches the pipe in large writes; stdout's own buffer when it has no file
    descriptor (a test runner capturing it)."""
    sys.stdout.flush()
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):
        return sys.stdout.buffer
    return io.BufferedWriter(io.FileIO(fd, "w", closefd=False), buffer_size=1 << 20)


SCAN_HELP = """Scan copied Kafka log dirs: producer state, open transactions, LSO, hanging ones.

\b
  logscan scan fixtures/hanging/brokers
  logscan scan /forensics/broker-*  --as-of 2026-11-22T03:00:00Z
  logscan scan COPY --max-transaction-timeout-ms 60000 --format json
  logscan scan COPY --per-replica        a row per replica, not per partition
  logscan scan COPY --output tables/     the Spark job: Delta tables for `logscan sql`
  logscan scan COPY --output tables/ --executor local    the same tables, no Spark
  logscan scan COPY --database logscan --warehouse wh/   the Spark job: catalog tables logscan.<table>

\b
Each INPUT is a Kafka log dir (it has meta.properties) or a folder holding one log dir
per broker. Every replica is rebuilt the way the broker rebuilds it (producer snapshots
seed a log whose head is gone), the LSO is computed from the replication-offset
checkpoint, and every open transaction older than the maximum transaction timeout at the
--as-of time (default: the newest timestamp in the copy) is judged against the
coordinators' __transaction_state records, as kafka-transactions find-hanging would.

\b
The text has a row per partition (its leader's numbers, whether its replicas agree) and
per open transaction (its verdict once, with the replicas that judge it alike), names
each lagging follower (a replica whose log ends before its leader's) and, when something
hangs, the `logscan plan` command to run next; --per-replica has a row per replica. It
fits the terminal's width ($COLUMNS, else 100 columns when not a terminal).

\b
With --output DIR the same scan runs as the Spark job (spark_jobs/scan.py, on a local
Spark with Delta's jars from `make delta-jars`) and writes its Delta tables to DIR/<table>,
then prints a summary; query them with `logscan sql --tables DIR`. Every table but batches
(a row per batch of the copy, by far the largest) is written unless --tables says
otherwise: --tables all adds batches. --executor local writes the same tables, rows and
schemas from this process instead (the single-process scan, its memory bounded; delta-rs
commits, no JVM): for one machine, where Spark's start-up and per-task costs are pure
overhead. Either way each table is one Delta commit replacing the scan's rows. --database NAME
(or --table-prefix CATALOG.SCHEMA.) instead of --output writes them with the Spark job as
catalog tables NAME.<table> (saveAsTable; --warehouse DIR: a local catalog for the local Spark;
--staging DIR: where the tasks stage their Parquet); `logscan sql --engine spark --database
NAME` reads them.

\b
A progress bar (bytes, files, rate) is drawn on stderr when it is a terminal; --no-progress
turns it off, and piped or redirected output never has one.

\b
Exit status (also with --output): 0 nothing hanging, 1 damage found in the files,
2 bad command line or missing set-up (e.g. Delta's jars), 4 hanging transactions found,
5 (--output) the Spark job failed: no answer, one line names the cause and the log file
holding its whole trace (--executor local: writing the tables failed, one line names the
cause), 130 interrupted (Ctrl-C).
"""

def _as_of_ms(text: str | None) -> int | None:
    from logscan.scan.pipeline import parse_as_of

    try:
        return parse_as_of(text)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="'--as-of'") from None


def _scan_options(fn):
    """The options `scan` and `plan` share: what to read and when 'now' is."""
    for option in reversed([
        click.argument("inputs", metavar="INPUT...", nargs=-1, required=True, type=_PATH_OR_URI),
        _storage_option,
        click.option("--as-of", "as_of", metavar="ISO|MS", default=None,
                     help="Reference time for transaction ages (default: newest timestamp in the copy)."),
        click.option("--max-transaction-timeout-ms", type=click.IntRange(0),
                     default=DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
                     show_default=True,
                     help="transaction.max.timeout.ms of the cluster; older open transactions are candidates."),
        click.option("--max-prepare-ms", type=click.IntRange(0), default=None, metavar="MS",
                     help="A coordinator's PrepareCommit/PrepareAbort record older than this is "
                          "coordinator_stuck_preparing (its markers may never land; never a partition abort), not "
                          "markers_pending [default: --max-transaction-timeout-ms]."),
        click.option("--include-superseded", is_flag=True,
                     help="Also read -delete/-future/-stray dirs and .deleted/.cleaned/.swap files."),
        click.option("--follow-links", is_flag=True,
                     help="Follow symbolic links that lead out of the INPUT folders (by default such a link "
                          "is a 'link' finding and is not read; links within the copy are followed)."),
        click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
                     show_default=True, help="json: one object per candidate (or plan), for scripts."),
        click.option("--no-progress", is_flag=True,
                     help="No progress bar on stderr (drawn only when stderr is a terminal)."),
        _budget_options,
    ]):
        fn = option(fn)
    return fn


def _bootstrap(ctx, param, value: str | None) -> str | None:
    """--bootstrap-server goes into commands a person pastes: host:port entries only."""
    from logscan.state.plans import check_bootstrap

    try:
        return None if value is None else check_bootstrap(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def _local_scan(inputs, as_of, max_transaction_timeout_ms, include_superseded, follow_links, no_progress,
                **options):
    from logscan import progress
    from logscan.logdir.tree import NoLogDirs
    from logscan.scan.local import SUMMARY_TABLES

    _check_stores(inputs)
    roots = list(inputs)  # str: local paths or URIs (logscan.logdir.store)
    try:
        # no table is kept: the summary and the plans take their rows as they are made (a
        # summary.SummarySink given as ``sink``), so memory does not grow with the copy
        return progress.scan(roots, enabled=progress.wanted(no_progress), as_of_ms=_as_of_ms(as_of),
                             max_transaction_timeout_ms=max_transaction_timeout_ms,
                             include_superseded=include_superseded, follow_links=follow_links,
                             keep=() if "sink" in options else SUMMARY_TABLES, **options)
    except NoLogDirs as e:   # a wrong INPUT is never "0 replicas, nothing hanging"
        raise click.UsageError(str(e)) from None


@main.command("scan", help=SCAN_HELP, context_settings={"max_content_width": 100})
@_scan_options
@click.option("--output", metavar="DIR", default=None,
              help="Write the scan's Delta tables to DIR (a folder, or a URI: s3://, gs://, abfs://, hdfs://, "
              "file://, with --storage-option): the Spark job on a local Spark with Delta, "
              "or this process with --executor local.")
@click.option("--executor", type=click.Choice(["spark", "local"]), default=None,
              help="With --output: who runs the scan and writes the tables: spark (the Spark job on a local "
              "Spark) or local (this process: no JVM, the same tables) [default: spark].")
@click.option("--master", default="local[*]", show_default=True, help="Spark master, with --output.")
@click.option("--remote", default=None, metavar="sc://HOST:PORT|local[N]",
              help="With --output: run the Spark job as a Spark Connect client, of the server at sc://HOST:PORT "
              "or of one started here on local[N] (instead of --master).")
@click.option("--scan-id", default=None, metavar="ID",
              help="With --output: the id tagging every row (default: derived from the inputs; "
              "re-running replaces that scan's rows).")
@click.option("--bootstrap-server", default=None, metavar="HOST:PORT", callback=_bootstrap,
              help=f"With --output: put into the abort_plans commands [default: {DEFAULT_BOOTSTRAP}].")
@click.option("--tables", "tables", default=None, metavar="all|NAME,...",
              help="With --output: the tables to write, 'all' or a comma list of names [default: every table "
              "but batches, a row per batch of the copy]; files, corruptions, partition_state, "
              "hanging_candidates, affected_groups and partition_impact (the summary's) are always written.")
@click.option("--per-replica", is_flag=True,
              help="Text: a row per replica (every broker's numbers and verdicts) instead of a row per partition "
              "(its leader's numbers) and per transaction (its verdict once).")
@click.option("--database", metavar="NAME", default=None,
              help="Instead of --output: the Spark job writes catalog tables NAME.<table> (saveAsTable).")
@click.option("--table-prefix", metavar="CATALOG.SCHEMA.", default=None,
              help="Instead of --output: catalog tables CATALOG.SCHEMA.<table>.")
@click.option("--warehouse", metavar="DIR", default=None,
              help="With --database: a local folder holding the local Spark's catalog and its tables.")
@click.option("--staging", metavar="DIR", default=None,
              help="With --database: where the tasks stage their Parquet (default: under the warehouse).")
def scan_command(inputs, as_of, max_transaction_timeout_ms, max_prepare_ms, include_superseded, follow_links, fmt,
                 no_progress, max_decompressed_ratio, min_decompressed_budget, max_decompress_seconds, output,
                 master, remote, scan_id, bootstrap_server, tables, per_replica, executor, database,
                 table_prefix, warehouse, staging) -> None:
    _set_budget(max_decompressed_ratio, min_decompressed_budget, max_decompress_seconds)
    prefix = _scan_catalog(output, executor, database, table_prefix, warehouse, staging)
    if prefix is not None:
        from spark_jobs.scan_cli import scan_to_tables

        with _spark_errors():
            sys.exit(scan_to_tables(inputs, None, as_of_ms=_as_of_ms(as_of),
                                    max_transaction_timeout_ms=max_transaction_timeout_ms,
                                    max_prepare_ms=max_prepare_ms,
                                    include_superseded=include_superseded, follow_links=follow_links,
                                    scan_id=scan_id, bootstrap=bootstrap_server or DEFAULT_BOOTSTRAP, master=master,
                                    json=fmt == "json", no_progress=no_progress, tables=tables,
                                    per_replica=per_replica, remote=remote, prefix=prefix, warehouse=warehouse,
                                    staging=staging))
    if output is not None:
        from spark_jobs.scan_cli import scan_to_tables

        _check_stores([*inputs, output])   # a URI's store: made now, so a bad option is a usage error
        if executor == "local" and remote is not None:
            raise click.UsageError("--remote is for the Spark job: not with --executor local")
        if executor == "local":
            _local_tables(inputs, output, as_of=as_of, max_transaction_timeout_ms=max_transaction_timeout_ms,
                          max_prepare_ms=max_prepare_ms, include_superseded=include_superseded, follow_links=follow_links, scan_id=scan_id,
                          bootstrap=bootstrap_server or DEFAULT_BOOTSTRAP, json=fmt == "json",
                          no_progress=no_progress, tables=tables, per_replica=per_replica)

        with _spark_errors():
            sys.exit(scan_to_tables(inputs, output, as_of_ms=_as_of_ms(as_of),
                                    max_transaction_timeout_ms=max_transaction_timeout_ms,
                                    max_prepare_ms=max_prepare_ms,
                                    include_superseded=include_superseded, follow_links=follow_links,
                                    scan_id=scan_id,
                                    bootstrap=bootstrap_server or DEFAULT_BOOTSTRAP, master=master,
                                    json=fmt == "json", no_progress=no_progress, tables=tables,
                                    per_replica=per_replica, remote=remote))
    if (scan_id is not None or bootstrap_server is not None or tables is not None or executor is not None
            or remote is not None):
        raise click.UsageError("--scan-id, --bootstrap-server, --tables, --executor and --remote are for the Delta "
                               "tables: "
                               "give them "
                               "with --output DIR (for abort commands without Spark: logscan plan)")
    import json as jsonlib

    from logscan.scan import summary

    from logscan.scan.spool import SpoolFolder

    with SpoolFolder(None) as folder:
        sink = summary.SummarySink(folder, candidates=fmt == "json")
        result = _local_scan(inputs, as_of, max_transaction_timeout_ms, include_superseded, follow_links,
                             no_progress, max_prepare_ms=max_prepare_ms, sink=sink)
        sink.close()
        fig = sink.figures(result.as_of_ms)
        if fmt == "json":
            for c in sink.candidates():
                print(jsonlib.dumps(summary.json_candidate(c)))
        else:
            summary.write_figures(fig, sys.stdout, max_transaction_timeout_ms=max_transaction_timeout_ms,
                                  inputs=inputs, per_replica=per_replica)
    sys.exit(summary.exit_status(fig))


def _scan_catalog(output, executor, database, table_prefix, warehouse, staging):
    """The catalog tables' prefix `logscan scan` is asked for (spark_jobs.catalog.table_prefix),
    None for none; a usage error for a request that mixes them with --output or the local executor."""
    if not (database or table_prefix):
        if warehouse is not None or staging is not None:
            raise click.UsageError("--warehouse and --staging are for catalog tables: give --database NAME "
                                   "or --table-prefix")
        return None
    if output is not None:
        raise click.UsageError("give --output DIR or --database/--table-prefix, not both")
    if executor == "local":
        raise click.UsageError("catalog tables (--database, --table-prefix) are written by the Spark job, "
                               "not --executor local")
    from spark_jobs import catalog

    try:
        catalog.check_warehouse(warehouse)
        return catalog.table_prefix(database, table_prefix)
    except ValueError as e:
        raise click.UsageError(str(e)) from None


def _local_tables(inputs, output, *, as_of, scan_id, tables, **options) -> None:
    """--output DIR --executor local: the request checked as for the Spark job (spark_jobs.scan_cli),
    then logscan.scan.delta writes the tables in this process."""
    from logscan.scan.delta import scan_to_tables
    from logscan.scan.tables import default_scan_id
    from spark_jobs.scan_cli import check_request

    roots = list(inputs)   # str: local paths or URIs (logscan.logdir.store)
    with _spark_errors():
        names = check_request(roots, output, scan_id, tables)
    sys.exit(scan_to_tables(inputs, output, scan_id=scan_id or default_scan_id(roots), tables=names,
                            as_of_ms=_as_of_ms(as_of), **options))


PLAN_HELP = """Print the kafka-transactions abort command for each hanging transaction.

\b
  logscan plan COPY/ --bootstrap-server broker1:9092
  logscan plan COPY/ --format json

\b
The scan is the one `logscan scan` runs. Each plan names the partition, producer id,
epoch and start offset, the --start-offset command and the explicit form for older
brokers, what the broker will check, what the abort will do to read_committed consumers
and to a compacted log, and a risk level. No plan is made for a transaction the
coordinator is still completing (PrepareCommit/PrepareAbort) or one the coordinator says
is live, and none where the copy cannot tell.

\b
Exit status: 0 no plans, 4 plans printed.
"""


@main.command("plan", help=PLAN_HELP, context_settings={"max_content_width": 100})
@_scan_options
@click.option("--bootstrap-server", default=DEFAULT_BOOTSTRAP, show_default=True, callback=_bootstrap,
              help="Put into the commands (logscan itself never connects to anything).")
def plan_command(inputs, as_of, max_transaction_timeout_ms, max_prepare_ms, include_superseded, follow_links, fmt,
                 no_progress, max_decompressed_ratio, min_decompressed_budget, max_decompress_seconds,
                 bootstrap_server) -> None:
    _set_budget(max_decompressed_ratio, min_decompressed_budget, max_decompress_seconds)
    from logscan.scan.spool import SpoolFolder
    from logscan.scan.summary import EXIT_HANGING, SummarySink

    with SpoolFolder(None) as folder:
        sink = SummarySink(folder, plans=True)
        _local_scan(inputs, as_of, max_transaction_timeout_ms, include_superseded, follow_links, no_progress,
                    bootstrap=bootstrap_server, max_prepare_ms=max_prepare_ms, sink=sink)
        sink.close()
        planned = _print_plans(sink.plans(), fmt)
    for topic, partition, producer_id, start_offset in sink.withheld:
        # plans.plan_abort refuses a topic name Kafka would refuse: the listing's finding says why
        print(f"logscan: no abort planned for producer {producer_id} open since offset {start_offset} in "
              f"partition {partition} of {topic!r}: not a legal Kafka topic name (logscan scan shows the "
              f"finding)", file=sys.stderr)
    sys.exit(EXIT_HANGING if planned else 0)


def _print_plans(plans, fmt: str) -> int:
    """Prints each abort plan (a row of abort_plans) for a person or as JSON; how many there were."""
    import json as jsonlib

    printed = 0
    for plan in plans:
        printed += 1
        if fmt == "json":
            print(jsonlib.dumps(plan))
            continue
        print(f"# {plan['topic']}-{plan['partition']}: producer {plan['producer_id']} epoch {plan['producer_epoch']}, "
              f"open since offset {plan['start_offset']} ({plan['reason']}, risk {plan['risk']})")
        print(plan["command"])
        # The --start-offset form looks the transaction up in the leader's describe-producers and
        # refuses one the leader has closed; this form does not (AbortTransactionCommand).
        print(f"# older brokers (no leader lookup: make the first check below before it): "
              f"{plan['command_explicit']}")
        print(f"# risk: {plan['risk_detail']}")
        for line in plan["preconditions"]:
            print(f"# check: {line}")
        for line in plan["effects"]:
            print(f"# effect: {line}")
        print()
    return printed


class SetupError(click.ClickException):
    """Spark cannot start here (Delta's jars missing, ...): the one-line fix, exit status 2."""

    exit_code = 2


class _spark_errors:
    """The Spark commands' request and set-up errors as one line each (no Java stack trace)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, error, tb) -> None:
        from logscan.sql.delta import TablesError
        from spark_jobs.console import SetupFailed
        from spark_jobs.scan_cli import BadRequest

        from logscan.sql.delta import TablesUnreadable
        from spark_jobs.scan_cli import OutputUnreachable

        if isinstance(error, OutputUnreachable):   # no answer: the scan's exit status for a failed write
            from logscan.scan.summary import EXIT_FAILED

            click.echo(f"logscan scan: {error}", err=True)
            sys.exit(EXIT_FAILED)
        if isinstance(error, TablesUnreadable):   # the store refused: exit 3, as an unreadable file
            click.echo(f"logscan: {error}", err=True)
            sys.exit(3)
        if isinstance(error, (BadRequest, TablesError)):
            raise click.UsageError(str(error)) from None
        if isinstance(error, SetupFailed):   # e.g. no Delta jars: `make delta-jars`
            raise SetupError(str(error)) from None


SQL_HELP = """Query a scan's Delta tables with SQL, read-only, in about a second (no JVM).

\b
  logscan sql "SELECT * FROM hanging_candidates WHERE hanging" --tables DIR
  logscan sql "SELECT topic, partition, lso_lag FROM partition_state ORDER BY lso_lag DESC" \\
      --tables DIR --format csv
  logscan sql "DESCRIBE partition_state" --tables DIR      each column's comment
  logscan sql --tables DIR                     a prompt: statements end with ';', \\q quits
  logscan sql --tables DIR < queries.sql       piped statements, comments allowed
  logscan sql --engine spark --tables DIR "SELECT percentile(duration_ms, 0.99) FROM txn_spans"
  logscan sql --engine spark --database NAME --warehouse WH "SELECT * FROM abort_plans"

\b
Every table folder under DIR (the --output of `logscan scan` or spark_jobs/scan.py) is a
view of the same name, at its newest Delta version: files, batches, corruptions, txn_log,
coordinator_state, producer_state, txn_spans, partition_state, hanging_candidates, and the
others the scan wrote. Each row carries scan_id and as_of; several scans into one DIR are
told apart by scan_id. --database NAME (or --table-prefix CATALOG.SCHEMA.) reads the catalog
tables a scan wrote with the same option instead, each a view of its short name: with
--engine spark through the session's catalog (--warehouse DIR: the local catalog the scan's
--warehouse made); with the embedded engine where --warehouse DIR keeps them
(DIR/<name>.db/<table>), without a JVM.

\b
Engines: embedded (default) is DuckDB over delta-rs, in this process: DuckDB's SQL dialect,
with SHOW TABLES and DESCRIBE <table> answered as Spark does. --engine spark starts a local
Spark with Delta (5-8 s) for Spark SQL's own dialect and functions.

\b
Read-only: only queries run (SELECT, WITH, VALUES, SHOW, DESCRIBE, EXPLAIN); INSERT, DELETE,
UPDATE, MERGE, CREATE, DROP, COPY, ATTACH, SET, PRAGMA, INSTALL, LOAD, CALL and the like are
refused, and a query cannot read or write other files. --allow-writes (with --engine spark
only: Delta's writes go through Spark) runs any statement.

\b
Exit status: 0 ok, 1 a statement failed or was refused (one line on stderr each), 2 bad command
line, no tables in DIR or (--engine spark) Delta's jars missing (`make delta-jars`), 130
interrupted (Ctrl-C).
"""



@main.command("sql", help=SQL_HELP, context_settings={"max_content_width": 100})
@click.argument("query", required=False)
@click.option("--tables", "tables_dir", metavar="DIR", default=None,
              help="Folder or URI (s3://, gs://, abfs://, file://) of the Delta tables.")
@click.option("--database", metavar="NAME", default=None,
              help="Instead of --tables: the catalog tables NAME.<table> (--engine spark).")
@click.option("--table-prefix", metavar="CATALOG.SCHEMA.", default=None,
              help="Instead of --tables: the catalog tables CATALOG.SCHEMA.<table> (--engine spark).")
@click.option("--warehouse", metavar="DIR", default=None,
              help="With --database: the local catalog a scan's --warehouse DIR made.")
@_storage_option
@click.option("--format", "fmt", type=click.Choice(["text", "json", "csv"]), default="text", show_default=True)
@click.option("--limit", type=click.IntRange(1), default=1000, show_default=True,
              help="Most rows printed per statement.")
@click.option("--engine", type=click.Choice(["embedded", "spark"]), default="embedded", show_default=True,
              help="embedded: DuckDB over delta-rs, no JVM; spark: Spark SQL on a local Spark.")
@click.option("--allow-writes", is_flag=True,
              help="Run statements other than queries (INSERT, MERGE, ...); needs --engine spark.")
@click.option("--master", default="local[*]", show_default=True, help="Spark master (--engine spark).")
def sql_command(query, tables_dir, database, table_prefix, warehouse, fmt, limit, engine, allow_writes,
                master) -> None:
    from pathlib import Path

    from logscan.sql.statements import split

    if allow_writes and engine != "spark":
        raise click.UsageError("--allow-writes needs --engine spark: the embedded engine only reads, "
                               "Delta's writes go through Spark")
    todo = None if query is None else split(query)
    if todo == []:
        raise click.UsageError("QUERY holds no statement (only blanks or comments)")
    prefix = _catalog_prefix(tables_dir, database, table_prefix, warehouse)
    if prefix is not None and engine == "spark":
        _catalog_sql(todo, prefix, warehouse, fmt, limit, allow_writes, master)
    if prefix is not None:
        from logscan.sql.embedded import EmbeddedEngine

        runner = EmbeddedEngine(_embedded_catalog(prefix, warehouse))
        _run_statements(runner, todo, lambda: _warn_unfinished(runner.paths), allow_writes, fmt, limit)
    from logscan.logdir.store import is_uri

    if engine == "spark" and is_uri(tables_dir) and tables_dir.partition("://")[0].lower() not in ("s3", "s3a"):
        raise click.UsageError("--engine spark reads local and s3:// (s3a://) --tables only; other URIs' tables "
                               "are read by the embedded engine (the default)")
    _check_stores([tables_dir])
    with _spark_errors():
        if engine == "spark":
            from spark_jobs.sql import SparkEngine

            runner = SparkEngine(tables_dir if is_uri(tables_dir) else Path(tables_dir), master=master,
                                 allow_writes=allow_writes)
        else:
            from logscan.sql.embedded import EmbeddedEngine

            runner = EmbeddedEngine(tables_dir)
    _run_statements(runner, todo, lambda: _warn_unfinished(tables_dir), allow_writes, fmt, limit)


def _run_statements(runner, todo, warn, allow_writes, fmt, limit) -> None:
    """Runs ``todo`` (None: a prompt or piped statements) with ``runner`` after ``warn()`` (the
    unfinished scans), prints each result; exits 1 when any failed, 0 else."""
    from logscan.render import render_rows
    from logscan.sql import QueryError
    from logscan.sql.statements import Refused, check_read_only, statements

    failed = False
    try:
        with _spark_errors():   # a store that refuses a table as it is opened: one sentence, exit 3
            warn()
            if todo is None and sys.stdin.isatty():   # a prompt; piped statements run without a word
                print(f"tables: {', '.join(runner.names)}; end statements with ';', \\q to quit", file=sys.stderr)
                todo = statements(_prompt_lines())
            elif todo is None:
                todo = statements(sys.stdin)
            for statement in todo:
                try:
                    if not allow_writes:
                        check_read_only(statement)
                    result = runner.run(statement, limit=limit)
                except (Refused, QueryError) as e:
                    print(f"error: {e}", file=sys.stderr)
                    failed = True
                    continue
                render_rows(result.columns, result.rows, fmt, sys.stdout)
                if result.truncated:
                    print(f"(first {limit} rows shown; --limit to see more)", file=sys.stderr)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    finally:
        runner.close()
    sys.exit(1 if failed else 0)


def _catalog_prefix(tables_dir, database, table_prefix, warehouse):
    """The catalog tables' prefix asked for (spark_jobs.catalog.table_prefix), None for --tables;
    a usage error for a request that mixes them."""
    if tables_dir is not None and (database or table_prefix):
        raise click.UsageError("give --tables DIR or --database/--table-prefix, not both")
    if tables_dir is None and not (database or table_prefix):
        raise click.UsageError("give --tables DIR (a scan's --output) or --database NAME (a scan's --database)")
    if tables_dir is not None:
        if warehouse is not None:
            raise click.UsageError("--warehouse is for catalog tables (--database or --table-prefix)")
        return None
    from spark_jobs import catalog

    try:
        catalog.check_warehouse(warehouse)
        return catalog.table_prefix(database, table_prefix)
    except ValueError as e:
        raise click.UsageError(str(e)) from None


def _embedded_catalog(prefix, warehouse) -> dict:
    """The catalog tables ``prefix<table>`` as the embedded readers (no JVM) find them: in the
    local catalog of --warehouse DIR, at DIR/<database>.db/<table> (logscan.sql.delta.
    warehouse_tables); a usage error, one line naming --engine spark, where only the catalog
    knows where they are."""
    from logscan.sql.delta import TablesError, warehouse_tables

    if warehouse is None or prefix.count(".") != 1:
        raise click.UsageError(f"the catalog tables {prefix}<table>: without a JVM logscan finds them only in the "
                               "local catalog of a scan's --warehouse DIR (give it); for a cluster's catalog give "
                               "--engine spark")
    try:
        return warehouse_tables(prefix[:-1], warehouse)
    except TablesError as e:
        raise click.UsageError(str(e)) from None


def _catalog_locations(prefix, warehouse, engine, master) -> tuple[dict, str, list[str]]:
    """What `logscan report` and `logscan diff` read for catalog tables (name -> folder or URI):
    the embedded engine's (_embedded_catalog), or with --engine spark where the session's
    catalog keeps each table (spark_jobs.catalog.table_locations; the rows are then read in
    this process, as a folder's); with the words naming them and the `logscan sql` arguments
    that read them without a JVM."""
    where = f"the catalog tables {prefix}<table>" + (f" of {warehouse}" if warehouse else "")
    if engine != "spark":
        return _embedded_catalog(prefix, warehouse), where, ["--database", prefix[:-1], "--warehouse", warehouse]
    paths = _spark_catalog_locations(prefix, warehouse, master)
    parents = {str(p).rstrip("/").rsplit("/", 1)[0] for p in paths.values()}
    sql_args = ["--tables", parents.pop()] if len(parents) == 1 else \
        ["--engine", "spark", "--table-prefix", prefix] + (["--warehouse", warehouse] if warehouse else [])
    return paths, where, sql_args


def _spark_catalog_locations(prefix, warehouse, master) -> dict:
    with _spark_errors():
        from logscan.sql.delta import TablesError
        from spark_jobs import catalog
        from spark_jobs.sql import SparkEngine

        try:
            runner = SparkEngine(master=master, prefix=prefix, warehouse=warehouse)
        except (catalog.CatalogRefused, TablesError) as e:
            raise click.UsageError(str(e)) from None
        try:
            return catalog.table_locations(runner.spark, {n: f"{prefix}{n}" for n in runner.names})
        finally:
            runner.close()


def _catalog_options(command):
    """--database, --table-prefix, --warehouse, --engine and --master of `report` and `diff`."""
    for option in reversed([
            click.option("--database", metavar="NAME", default=None,
                         help="Instead of --tables: the catalog tables NAME.<table> a scan's --database wrote."),
            click.option("--table-prefix", metavar="CATALOG.SCHEMA.", default=None,
                         help="Instead of --tables: the catalog tables CATALOG.SCHEMA.<table> (--engine spark)."),
            click.option("--warehouse", metavar="DIR", default=None,
                         help="With --database: the local catalog a scan's --warehouse DIR made (read without a JVM)."),
            click.option("--engine", type=click.Choice(["embedded", "spark"]), default="embedded", show_default=True,
                         help="With --database: spark asks a local Spark's catalog where the tables are."),
            click.option("--master", default="local[1]", show_default=True, help="Spark master (--engine spark).")]):
        command = option(command)
    return command


def _catalog_sql(todo, prefix, warehouse, fmt, limit, allow_writes, master) -> None:
    """`logscan sql --engine spark --database NAME`: the statements over the catalog tables (exits)."""
    with _spark_errors():
        from spark_jobs.catalog import CatalogRefused
        from spark_jobs.sql import SparkEngine

        try:
            runner = SparkEngine(master=master, allow_writes=allow_writes, prefix=prefix, warehouse=warehouse)
        except CatalogRefused as e:
            raise click.UsageError(str(e)) from None
    _run_statements(runner, todo, lambda: _say_unfinished(runner.unfinished), allow_writes, fmt, limit)


def _warn_unfinished(tables_dir) -> None:
    """A line on stderr for each scan a killed or failed Spark job left in part (it has no row in
    the scans table): its rows answer queries, but the other tables may lack them.
    ``tables_dir``: a folder or URI, or its tables (name -> folder)."""
    from logscan.sql.delta import delta_tables, unfinished_scans

    _say_unfinished(unfinished_scans(tables_dir if isinstance(tables_dir, dict) else delta_tables(tables_dir)))


def _say_unfinished(unfinished: dict) -> None:
    from logscan.text import printable

    for scan_id, holding in unfinished.items():
        print(printable(f"warning: scan {scan_id!r} did not finish (killed or failed while its tables were written): "
                        f"{', '.join(holding)} hold it, the others may not; run it again to make it whole"),
              file=sys.stderr)


REPORT_HELP = """Write an HTML report of a scan's Delta tables (one file, no network needed), or Markdown.

\b
  logscan scan COPY --output tables/ --bootstrap-server broker1:9092
  logscan report --tables tables/ --out /tmp/incident.html
  logscan report --tables tables/ --format md --out -   Markdown on stdout, for a ticket
  logscan report --tables tables/ --scan-id demo        another scan written into tables/
  logscan report --database NAME --warehouse WH         a scan's catalog tables (--database)

\b
The page shows the scan id, as-of time and input, the hanging transactions with their
reasons, the lagging followers, LSO lag per partition, per-partition timelines of transaction
spans (open ones in red, the as-of time dashed), the abort plans of the scan's abort_plans
table (the commands `logscan plan` prints, each with a copy button, and one button copying
them all; the scan's --bootstrap-server is in them) and the corruptions found. Where it draws
only part (the 40 partitions with the largest LSO lag, the first 300 rows), it says so and
gives the `logscan sql` command listing all. It reads well from 800 pixels wide up. It reads the newest scan in DIR unless --scan-id
names another. Open the file in any browser: it fetches nothing. The tables are read in this
process (delta-rs and DuckDB, as `logscan sql` does): no Spark, no JVM. Catalog tables
(a scan's --database NAME) are read where a local catalog's --warehouse DIR keeps them; for
another catalog, --engine spark asks a local Spark's catalog where they are first.

\b
--format md writes the same in Markdown (pipe tables, each abort command in a fenced block),
for pasting into a ticket; text from the copy is escaped so that it shows as itself.

\b
Exit status: 0 written, 2 bad command line, or no tables (or no such scan) in DIR.
"""


@main.command("report", help=REPORT_HELP, context_settings={"max_content_width": 100})
@click.option("--tables", "tables_dir", metavar="DIR", default=None,
              help="Folder or URI (s3://, gs://, abfs://, file://) of the Delta tables.")
@_catalog_options
@_storage_option
@click.option("--format", "fmt", type=click.Choice(["html", "md"]), default="html", show_default=True,
              help="html: one page for a browser; md: Markdown for a ticket.")
@click.option("--out", "out_path", metavar="FILE", default=None,
              help="Where to write it, '-' for stdout [default: logscan-report.html, or .md with --format md].")
@click.option("--scan-id", default=None, help="Scan to report (default: the newest in DIR).")
def report_command(tables_dir, database, table_prefix, warehouse, engine, master, fmt, out_path, scan_id) -> None:
    from pathlib import Path

    from logscan.report import render
    from logscan.report.data import NoScan, load
    from logscan.report.markdown import render_markdown
    from logscan.sql.delta import TablesError

    prefix = _catalog_prefix(tables_dir, database, table_prefix, warehouse)
    out_path = out_path or f"logscan-report.{fmt}"
    if out_path != "-":
        _check_writable(Path(out_path))   # before the tables are read (or Spark asked where), not after
    where = sql_args = None
    if prefix is not None:
        tables_dir, where, sql_args = _catalog_locations(prefix, warehouse, engine, master)
    _check_stores(list(tables_dir.values()) if prefix is not None else [tables_dir])
    try:
        with _spark_errors():   # a store that refuses: one sentence, exit 3
            data = load(tables_dir, scan_id, where=where, sql_args=sql_args)
    except (TablesError, NoScan) as e:
        raise click.UsageError(str(e)) from None
    document = render_markdown(data) if fmt == "md" else render(data)
    if out_path == "-":
        sys.stdout.write(document)
        return
    try:
        Path(out_path).write_text(document, encoding="utf-8")
    except OSError as e:
        raise click.UsageError(f"--out {shlex.quote(out_path)}: cannot write it: {e.strerror or e}") from None
    print(f"wrote {out_path}: scan {data['scan_id']}, {len(data['candidates'])} candidates, "
          f"{len(data['partitions'])} partitions drawn")


def _check_writable(path) -> None:
    """A usage error (exit 2, one line) when ``path`` cannot be written: its folder missing or
    not a folder, or the path a folder."""
    folder = path.parent
    if path.is_dir():
        raise click.UsageError(f"--out {shlex.quote(str(path))} is a folder: give a file name in it")
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist (create it first)"
        raise click.UsageError(f"--out {shlex.quote(str(path))}: its folder {shlex.quote(str(folder))} {what}")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise click.UsageError(f"--out {shlex.quote(str(path))}: not writable by this user")


DIFF_HELP = """What changed between two scans of the same cluster written into one tables DIR.

\b
  logscan scan COPY-monday --output tables/ --scan-id monday
  logscan scan COPY-tuesday --output tables/ --scan-id tuesday
  logscan diff --tables tables/ monday tuesday
  logscan diff --tables tables/ monday tuesday --format md > ticket.md
  logscan diff --database NAME --warehouse WH monday tuesday     catalog tables (--database)

\b
SCAN_A is the earlier state, SCAN_B the later (scan ids: `logscan sql --tables DIR
"SELECT DISTINCT scan_id, as_of FROM partition_state"` lists them). Transactions that hang in
either scan, one per partition, producer id and start offset:
  new            hanging in B, not in A
  still hanging  hanging in both (its idle time in each)
  resolved       hanging in A; in B its COMMIT/ABORT marker is there, or B judges it not hanging
  undetermined   hanging in A; B cannot tell, no longer lists it, or lacks the partition
and per partition (its leader's replica, else the one furthest ahead) the high watermark, LSO
and LSO lag in each scan and how far the LSO and the high watermark moved: a partition whose
LSO stayed put while its high watermark moved on is named as stuck. The text and Markdown
list the changed partitions and those with an LSO lag (the first 100); --format json lists
every partition.

\b
Exit status: 0 nothing hangs in SCAN_B, 4 transactions hang in SCAN_B (new or still), 2 bad
command line, no tables, an unknown or unfinished scan id.
"""


@main.command("diff", help=DIFF_HELP, context_settings={"max_content_width": 100})
@click.argument("scan_a")
@click.argument("scan_b")
@click.option("--tables", "tables_dir", metavar="DIR", default=None,
              help="Folder or URI (s3://, gs://, abfs://, file://) of the Delta tables holding both scans.")
@_catalog_options
@_storage_option
@click.option("--format", "fmt", type=click.Choice(["text", "md", "json"]), default="text", show_default=True)
def diff_command(scan_a, scan_b, tables_dir, database, table_prefix, warehouse, engine, master, fmt) -> None:
    from logscan.report import diff
    from logscan.scan.summary import EXIT_HANGING
    from logscan.sql.delta import TablesError

    prefix = _catalog_prefix(tables_dir, database, table_prefix, warehouse)
    where = None
    if prefix is not None:
        tables_dir, where, _ = _catalog_locations(prefix, warehouse, engine, master)
    _check_stores(list(tables_dir.values()) if prefix is not None else [tables_dir])
    try:
        with _spark_errors():   # a store that refuses: one sentence, exit 3
            result = diff.load(tables_dir, scan_a, scan_b, where=where)
    except (TablesError, diff.DiffError) as e:
        raise click.UsageError(str(e)) from None
    render = {"text": diff.render_text, "md": diff.render_markdown, "json": diff.as_json}[fmt]
    print(render(result).rstrip("\n"))
    sys.exit(EXIT_HANGING if result.hanging_in_b else 0)


def _prompt_lines():
    import readline  # noqa: F401  (line editing and history for input())

    while True:
        try:
            yield input("logscan> ")
        except EOFError:
            return


if __name__ == "__main__":  # python -m logscan.cli
    main()
