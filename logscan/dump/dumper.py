"""kafka-dump-log's modes, one method each, writing to injected streams.

The rules are those of ``kafka.tools.DumpLogSegments`` in Kafka 4.1.1 (a Scala object in
kafka_2.13): dispatch on the text after the file name's last dot, what goes to stdout
("Dumping", batches, records, entries, "Found N invalid bytes") and what goes to stderr, after
all files ("Mismatches in", time index errors, "Non-consecutive offsets in").

Where kafka-dump-log dies with a stack trace (a batch size below 14 such as a zero-filled
tail, a broken record, a bad compressed stream, an index entry pointing nowhere, a missing
file) logscan prints a located finding on stderr, keeps every good batch before and after,
and sets a non-zero exit status. Findings never go to stdout, so stdout stays comparable.
"""

from __future__ import annotations

from typing import TextIO

from logscan.format.batch import RecordBatch, decode_batch_header, iter_records
from logscan.format.compression import DecompressionBudget
from logscan.format.errors import DecodeError, DecompressionBudgetSpent
from logscan.format.logfile import (HEADER_SIZE_UP_TO_MAGIC, SkippedRegion, TruncatedTail, WindowUnmappable,
                                    ZeroFilledRegion, walk_windows)
from logscan.logdir.segment import INT64_MAX, FileShrank, Finding, dump_windows, io_finding, offset_overflow_finding

from .javaisms import java_absolute_path, java_file_name, java_file_str
from .options import INT_MAX, DumpOptions
from .report import EndOfRunReport
from .sinks import JsonSink, TextSink
from .versions import JSON_TEXT, NewerRecord, ToolDies, text_of

#: Exit statuses (documented in `logscan dump --help`).
EXIT_OK = 0
EXIT_DATA = 1   # something in the data is wrong (corrupt, truncated, CRC); never for an index
                # entry that merely disagrees with the log, which kafka-dump-log only warns about
EXIT_USAGE = 2  # bad command line (click's own status)
EXIT_IO = 3     # a file could not be read at all (missing, permission, a directory)
EXIT_PIPE = 141  # stdout closed early (128 + SIGPIPE), e.g. `logscan dump f | head`


def decode_any_batch(buf, pos: int, end: int):
    """A v2 batch or a legacy message set entry, chosen like FileLogInputStream (magic < 2)."""
    magic = buf[pos + 16]
    if magic >= 128 or magic < 2:
        from logscan.format.legacy import decode_legacy_entry
        return decode_legacy_entry(buf, pos, end)[0]
    return decode_batch_header(buf, pos, end)[0]


def iter_batch_records(buf, batch, max_decompressed: int, base: int = 0, budget=None):
    """The records of a v2 batch or a legacy entry; ``buf[0]`` is byte ``base`` of the log;
    ``budget``: the file's DecompressionBudget."""
    if batch.magic >= 2:
        return iter_records(buf, batch, max_decompressed=max_decompressed, base=base, budget=budget)
    from logscan.format.legacy import iter_legacy_records
    return iter_legacy_records(batch, max_decompressed=max_decompressed, budget=budget)


class Dumper:
    """One run of `logscan dump` over a list of files."""

    def __init__(self, out: TextIO, err: TextIO, options: DumpOptions = DumpOptions(), *,
                 json: bool = False):
        self.json = json
        # the release whose text is printed; JSON, for scripts, keeps one text whatever the release
        self.text = text_of(JSON_TEXT if json else options.kafka_version)
        self.sink = JsonSink(out) if json else self._text_sink(out)
        self.out = out
        self.err = err
        self.opts = options
        self.status = EXIT_OK
        self.report = EndOfRunReport(err, java_port=self.text.java_end_of_run)
        self.findings = 0
        self._auto_here = False
        self._cut = False  # the .log being dumped is read to a cut (--max-bytes), not its end
        self._cut_at = 0   # where the walk of a cut .log stopped
        self._budget = None  # the decompression budget of the .log being dumped
        self._extended = False  # a FILE... argument: logscan's own reading of extra kinds
        # Causes of the "Error at offset ..., skipping." texts of the internal-topic parsers.
        self._record_errors: list[DecodeError] = []

    def _text_sink(self, out: TextIO) -> TextSink:
        return TextSink(out, snapshot_trailing_space=self.text.snapshot_trailing_space,
                        legacy_crc_brace=self.text.legacy_crc_brace, payload_prefix=self.text.payload_prefix)

    # -- bookkeeping --------------------------------------------------------------------

    def finding(self, f: Finding, status: int = EXIT_DATA) -> None:
        """Report a located problem on stderr and raise the exit status to ``status``."""
        self.findings += 1
        self.status = max(self.status, status)
        self._say(f)

    def note(self, f: Finding) -> None:
        """A located remark that is not a problem (exit status unchanged)."""
        self._say(f)

    def _say(self, f: Finding) -> None:
        self.out.flush()  # keep stdout and stderr in order on a terminal
        if self.json:
            import json

            self.err.write(json.dumps({"type": "finding", "file": f.path, "position": f.position,
                                        "length": f.length, "reason": f.reason,
                                        "message": f.message}) + "\n")
        else:
            self.err.write(f.line() + "\n")

    def run(self, paths: list[str], auto_indices=None) -> int:
        """Dump ``paths`` in order, then print the end-of-run blocks; returns the exit status.

        ``auto_indices``: positions in ``paths`` eligible for the automatic decoder (all
        when None, if ``options.auto_decoder``).
        """
        auto = range(len(paths)) if auto_indices is None else auto_indices
        try:
            for i, path in enumerate(paths):
                self._extended = i in auto
                self._auto_here = self.opts.auto_decoder and self._extended
                self.dump_file(path)
            self.out.flush()
            self.report.print()
        finally:
            self.report.close()
        return self.status

    def dump_file(self, path: str) -> None:
        shown = java_file_str(path)
        self.sink.begin_file(shown)
        name = java_file_name(path)
        suffix = name[name.rfind("."):] if "." in name else ""
        try:
            if suffix in (".log", ".checkpoint"):
                self.dump_log(path, shown)
            elif suffix == ".index":
                self.dump_index(path, shown)
            elif suffix == ".timeindex":
                self.dump_time_index(path, shown)
            elif suffix == ".snapshot":
                self.dump_producer_snapshot(path, shown)
            elif suffix == ".txnindex":
                self.dump_txn_index(path, shown)
            elif self._extended and _is_extra(path):
                from .extras import dump_extra
                dump_extra(self, path)
            else:
                # kafka-dump-log 4.1.1 dies (StringIndexOutOfBounds) on a name without a dot;
                # logscan treats it like any other unknown file.
                self.out.flush()
                self.err.write(f"Ignoring unknown file {shown}\n")
        except BrokenPipeError:
            raise  # stdout closed: the CLI ends quietly
        except FileShrank as e:  # met outside the walk's reads (an index, or the log it points into)
            self.finding(shrank_finding(e.filename or path, e.position, e.size, None, e.size))
        except OSError as e:  # missing, unreadable, a directory, an I/O error mid-file
            self.finding(io_finding(path, e), EXIT_IO)

    # -- .log and KRaft .checkpoint -----------------------------------------------------

    def _decoder_for(self, path: str) -> str | None:
        if self.opts.decoder is not None or not self._auto_here:
            return self.opts.decoder
        from .autodetect import decoder_for_path
        return decoder_for_path(path)

    def dump_log(self, path: str, shown: str) -> None:
        name = java_file_name(path)
        if name.endswith(".log"):
            base = _leading_number(name)
            if base is None:
                self.finding(Finding(path, -1, "name", f"file name {name!r} does not start with "
                                     "a base offset (kafka-dump-log fails on it)"))
            else:
                self.sink.log_start(base)
        else:
            snap = _snapshot_id(name)
            if snap is None:
                self.finding(Finding(path, -1, "name", f"{name!r} is not a KRaft snapshot name "
                                     "(<offset>-<epoch>.checkpoint); kafka-dump-log fails on it"))
            else:
                self.sink.snapshot_start(*snap)
        decoder = self._decoder_for(path)
        deep = self.opts.is_deep_iteration(decoder)
        print_data = self.opts.should_print_data_log(decoder)
        parse = None
        self._record_errors.clear()
        if print_data:
            from . import parsers
            parse = (parsers.internal_topic_parser(decoder, self._record_errors, self.text, structured=self.json)
                     if decoder
                     else parsers.decoder_parser(self.opts.key_decoder, self.opts.value_decoder))
        gaps = self.report.non_consecutive(java_absolute_path(path)) if deep else None
        last_offset = -1
        with dump_windows(path) as log:
            size = log.size
            limit = self.opts.max_bytes
            end = min(size, limit)
            # kafka-dump-log reads FileRecords.slice(0, maxBytes) of each .log: below its
            # default (Integer.MAX_VALUE) the end is a cut, and no "Found N invalid bytes" is
            # printed; a file past a limit not lowered on purpose is not read to its end.
            over_limit = size > limit >= INT_MAX
            cut = self._cut = limit < INT_MAX or over_limit
            self._cut_at = end
            source = log if end == size else _Prefix(log, end)
            if log.unread_bytes:
                self.finding(Finding(path, size, "io", f"not a regular file: only the first "
                                     f"{size} bytes were read"))
            if size == 0:
                # Normal for a freshly rolled segment; said, but not an error.
                self.note(Finding(path, -1, "empty", "empty file, no batches"))
            print_batch, v2_batch = self.sink.batch, RecordBatch
            self._budget = DecompressionBudget(size, ratio=self.opts.budget_ratio, min_bytes=self.opts.budget_min_bytes,
                                               seconds=self.opts.budget_seconds)
            window = self.opts.window_bytes
            helper = None
            parallel = self.opts.parallel_min_bytes
            if parallel is not None and end >= parallel and not (deep or cut or self.json):
                from .parallel import SecondHalf
                helper = SecondHalf.start(source, end // 2, window, self._text_sink)
            middle = end // 2 if helper else end + 1  # where this process takes the child's lines
            try:
                # One walk, or two when the child printed a stretch: the second resumes where
                # the child stopped (the walk's only state is its position).
                items = walk_windows(source, 0, window=window, cut=cut)
                while items is not None:
                    batches, items = items, None
                    for batch, win in batches:
                        if batch.__class__ is not v2_batch and isinstance(batch, DecodeError):
                            self._walk_finding(batch, path, name, end, log)
                            continue
                        if batch.position >= middle:
                            middle = end + 1
                            resume = helper.take(batch.position, self.out)
                            if resume is not None:
                                batches.close()
                                items = walk_windows(source, resume, window=window, cut=cut)
                                break
                        print_batch(batch)
                        if batch.__class__ is v2_batch and batch[1] > INT64_MAX - batch[7]:
                            self.finding(offset_overflow_finding(path, batch))
                        if not batch.crc_valid:
                            self.finding(Finding(path, batch.position, "crc",
                                                 f"batch ending at offset {batch.last_offset} fails its "
                                                 f"CRC check (stored {batch.crc})",
                                                 batch.size_in_bytes))
                        if deep:
                            last_offset = self._records(batch, win, path, parse, gaps, last_offset)
            finally:
                if helper:
                    helper.close()
            if over_limit:
                self.finding(Finding(path, self._cut_at, "max-bytes", _limit_message(size, end, limit, self._cut_at),
                                     size - self._cut_at))

    def _records(self, batch, win, path: str, parse, gaps, last_offset: int) -> int:
        """Print the records of ``batch``, read from ``win`` (the window of the log it was
        walked in); returns the last record offset seen."""
        first_free = not self.text.gap_before_first_record  # 4.4.0 checks the first against -1 + 1
        try:
            for record in iter_batch_records(win.buf, batch, self.opts.max_decompressed, win.base, self._budget):
                if last_offset == -1 and first_free:
                    last_offset = record.offset
                elif record.offset != last_offset + 1:
                    gaps.append(last_offset, record.offset)
                last_offset = record.offset
                self._record(batch, record, parse, path)
        except DecompressionBudgetSpent as e:
            # Said once per file, where it was spent; the later compressed batches are
            # printed without their records.
            if e.position == self._budget.spent_at:
                self.finding(Finding.from_error(path, e))
        except DecodeError as e:
            self.finding(Finding.from_error(path, e))
        return last_offset

    def _record(self, batch, record, parse, path: str) -> None:
        metadata = not self.opts.skip_record_metadata
        control_text = None
        is_control = batch.magic >= 2 and batch.is_control
        if is_control and metadata:
            control_text = self._control_text(batch, record)
        data = None
        if parse is not None and not is_control:
            try:
                data = parse(record)
            except DecodeError as e:
                self.finding(Finding(path, batch.position, e.reason,
                                     f"record at offset {record.offset}: {e.message}"))
                data = None
            # Kafka prints "Error at offset O, skipping." and goes on; so does the text on
            # stdout, while the cause is a located finding (record bytes carry no file
            # position, so the batch's).
            for e in self._record_errors:
                if isinstance(e, NewerRecord):   # a newer broker's record, not damage
                    self.note(Finding(path, batch.position, e.reason, f"record at offset {record.offset}: {e.message}"))
                    continue
                self.finding(Finding(path, batch.position, e.reason, f"record at offset {record.offset}: {e.message}"
                                     if isinstance(e, ToolDies) else f"record at offset {record.offset} cannot be "
                                     f"decoded ({e.message}); kafka-dump-log skips it"))
            self._record_errors.clear()
        self.sink.record(batch, record, metadata=metadata, control_text=control_text, data=data)

    def _control_text(self, batch, record) -> str:
        from logscan.format import control
        key = control.decode_control_key(record.key, batch.position)
        if key.is_transaction_marker:
            marker = control.decode_end_txn_marker(key, record.value, batch.position)
            return f" endTxnMarker: {key.name} coordinatorEpoch: {marker.coordinator_epoch}"
        from logscan.format import raft
        if key.type_id == control.LEADER_CHANGE and not self.text.decodes_leader_change:
            return f" controlType: {key.label}"
        text = raft.render_control_value(key.type_id, record.value)
        return text if text is not None else f" controlType: {key.label}"

    def _walk_finding(self, error: DecodeError, path: str, name: str, end: int, log) -> None:
        """A finding of the walk: located on stderr; the bytes that end the log (where
        FileLogInputStream stops) are also kafka-dump-log's "Found N invalid bytes"."""
        if isinstance(error, WindowUnmappable):
            now = log.current_size()
            if now < log.size:
                self.finding(shrank_finding(path, error.position, log.size, now, end))
            else:
                self.finding(Finding.from_error(path, error), EXIT_IO)
            return
        length = getattr(error, "length", 0)
        if not isinstance(error, (TruncatedTail, SkippedRegion)) or error.position + length != end:
            self.finding(Finding.from_error(path, error))
            return
        if not self._cut:
            self.sink.invalid_bytes(length, name)
        if length <= HEADER_SIZE_UP_TO_MAGIC:
            reason, what = "short", f"{length} trailing bytes, too few for a batch header"
        elif isinstance(error, ZeroFilledRegion):
            reason, what = "zero-filled", (f"{length} zero bytes to the end of the file (preallocated "
                                           "or never written); kafka-dump-log fails here")
            if self._cut and end < log.size:
                what = f"{length} zero bytes up to byte {end}, where --max-bytes stops the read"
        elif isinstance(error, TruncatedTail):
            reason, what = "truncated", f"last batch is truncated: {length} bytes left of a longer batch"
        else:
            reason, what = "unreadable", f"no valid batch in the last {length} bytes"
        if reason in ("short", "truncated") and self._cut:
            self._cut_at = error.position
            return  # the --max-bytes cut, not damage
        if error.position == 0 and reason in ("truncated", "unreadable") and length > HEADER_SIZE_UP_TO_MAGIC:
            what = (f"no valid batch in the file's {length} bytes: not a Kafka log segment, "
                    "or damaged from its first byte")
        self.finding(Finding(path, error.position, reason, what, length))

    # -- indexes, snapshots -------------------------------------------------------------

    def dump_index(self, path: str, shown: str) -> None:
        from .indexes import dump_index
        dump_index(self, path, shown)

    def dump_time_index(self, path: str, shown: str) -> None:
        from .indexes import dump_time_index
        dump_time_index(self, path, shown)

    def dump_txn_index(self, path: str, shown: str) -> None:
        from .indexes import dump_txn_index
        dump_txn_index(self, path, shown)

    def dump_producer_snapshot(self, path: str, shown: str) -> None:
        from .indexes import dump_producer_snapshot
        dump_producer_snapshot(self, path, shown)


def shrank_finding(path: str, position: int, size: int, now: int | None, end: int) -> Finding:
    """A .log that shrank while the dump read it: the bytes from ``position`` were there when
    it was opened (``size`` bytes) and are gone. The exit status is a cut file's (1)."""
    what = f"{size} bytes when opened, {now} now" if now is not None else f"{size} bytes when opened"
    return Finding(path, position, "shrank",
                   f"the file shrank while it was read ({what}: a follower truncating its active "
                   f"segment?); the {end - position} bytes from here on are not read", end - position)


class _Prefix:
    """The first ``size`` bytes of a source of windows (a --max-bytes cut)."""

    def __init__(self, source, size: int):
        self._source, self.size = source, size

    def map(self, start: int, stop: int):
        return self._source.map(start, min(stop, self.size))


def _limit_message(size: int, end: int, limit: int, stopped: int) -> str:
    default = (" (kafka-dump-log's default, Integer.MAX_VALUE: Kafka never writes a larger segment, "
               "and kafka-dump-log refuses this file)" if limit == INT_MAX else "")
    return (f"not read to its end: --max-bytes is {limit}{default}, so only the first {end} of its "
            f"{size} bytes were read and the walk stopped at byte {stopped}; the last {size - stopped} "
            f"bytes are not read: raise the limit with --max-bytes {size} to read them")


def _is_extra(path: str) -> bool:
    from .extras import is_extra
    return is_extra(path)


def _leading_number(name: str) -> int | None:
    """``name.split("\\.")(0).toLong`` (Java's Long.parseLong accepts a leading sign)."""
    head = name.split(".")[0]
    try:
        value = int(head, 10)
    except ValueError:
        return None
    if head.strip() != head or "_" in head or not -2**63 <= value < 2**63:
        return None
    return value


def _snapshot_id(name: str) -> tuple[int | None, int | None] | None:
    """(end offset, epoch) from ``%020d-%010d.checkpoint``; (None, None) for bootstrap."""
    if name == "bootstrap.checkpoint":
        return None, None
    stem = name[: -len(".checkpoint")]
    parts = stem.split("-")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])
