"""The options of one `logscan dump` run, with kafka-dump-log's implications resolved."""

from __future__ import annotations

from dataclasses import dataclass

INT_MAX = 2**31 - 1
#: kafka-dump-log's --max-message-size default (5 MiB).
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024

#: `logscan dump`'s smallest .log for a second process (logscan.dump.parallel): below this a
#: fork, about a millisecond, buys nothing.
PARALLEL_MIN_BYTES = 64 * 1024 * 1024

DECODER_KINDS = ("transaction", "offsets", "metadata")


@dataclass(frozen=True)
class DumpOptions:
    """What to print. Field names follow DumpLogSegmentsOptions.

    ``decoder`` is the internal-topic decoder asked for on the command line
    (``transaction``/``offsets``/``metadata``) or None; ``auto_decoder`` lets the dumper pick
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

    def should_print_data_log(self, decoder: str | None) -> bool:
        """Any decoder option implies --print-data-log (DumpLogSegmentsOptions)."""
        return self.print_data_log or decoder is not None or self.decoder_class_given

    def is_deep_iteration(self, decoder: str | None) -> bool:
        return self.deep_iteration or self.should_print_data_log(decoder)
