"""The options of one `logscan dump` run, with kafka-dump-log's implications resolved."""

from __future__ import annotations

from dataclasses import dataclass

from logscan.format.compression import DEFAULT_BUDGET_MIN_BYTES, DEFAULT_BUDGET_RATIO, DEFAULT_BUDGET_SECONDS

from .versions import DEFAULT_KAFKA_VERSION


INT_MAX = 2**31 - 1
#: kafka-dump-log's --max-message-size default (5 MiB).
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024

#: `logscan dump`'s smallest .log for a second process (logscan.dump.parallel): below this a
#: fork, about a millisecond, buys nothing.
PARALLEL_MIN_BYTES = 64 * 1024 * 1024

#: The bytes of a .log the dump reads at a time (the scan's too: LogWindows' window_bytes):
#: the memory a window holds, a read call per window. A batch crossing a window's end is read
#: again at the start of the next: at most one per window.
DUMP_WINDOW_BYTES = 4 * 1024 * 1024

DECODER_KINDS = ("transaction", "offsets", "metadata", "remote", "share")


@dataclass(frozen=True)
class DumpOptions:
    """What to print. Field names follow DumpLogSegmentsOptions.

    ``decoder`` is the internal-topic decoder asked for on the command line
    (``transaction``/``offsets``/``metadata``/``remote``/``share``) or None; ``auto_decoder`` lets the dumper pick
    one from a file's partition directory when ``decoder`` is None.
    """

    print_data_log: bool = False
    deep_iteration: bool = False
    decoder: str | None = None
    key_decoder: str = "org.apache.kafka.tools.api.StringDecoder"
    value_decoder: str = "org.apache.kafka.tools.api.StringDecoder"
    decoder_class_given: bool = False
    skip_record_metadata: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_bytes: int = INT_MAX
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    auto_decoder: bool = False
    max_decompressed: int = 256 * 1024 * 1024
    #: A batch-level text dump of a .log at least this large prints its second half in a
    #: forked child (logscan.dump.parallel); None: never (the library default, as a fork
    #: is the command's business, not that of a program embedding the dumper).
    parallel_min_bytes: int | None = None
    #: A .log is read this many bytes at a time (more for a larger entry or a resync
    #: candidate, damage and the resync after it too): never mapped below 8 MiB, so a file
    #: that shrinks under the dump is a finding, never a SIGBUS.
    window_bytes: int = DUMP_WINDOW_BYTES
    #: One .log's decompression budget (logscan.format.compression.DecompressionBudget):
    #: output bytes per byte of the file (at least ``budget_min_bytes``) and seconds.
    budget_ratio: int = DEFAULT_BUDGET_RATIO
    budget_min_bytes: int = DEFAULT_BUDGET_MIN_BYTES
    budget_seconds: float = DEFAULT_BUDGET_SECONDS
    #: The Kafka release whose kafka-dump-log text is printed (logscan.dump.versions).
    kafka_version: str = DEFAULT_KAFKA_VERSION

    def should_print_data_log(self, decoder: str | None) -> bool:
        """Any decoder option implies --print-data-log (DumpLogSegmentsOptions)."""
        return self.print_data_log or decoder is not None or self.decoder_class_given

    def is_deep_iteration(self, decoder: str | None) -> bool:
        return self.deep_iteration or self.should_print_data_log(decoder)
