"""Which internal-topic decoder a file needs, from its partition directory's name.

kafka-dump-log decodes ``__transaction_state``/``__consumer_offsets``/``__cluster_metadata``/
``__remote_log_metadata``/``__share_group_state`` records only when told (``--transaction-log-decoder`` ...). `logscan dump FILE...` picks the
decoder from the directory (``__transaction_state-7/00000000000000000000.log``) unless
``--no-auto-decoder`` is given; with kafka-dump-log's own ``--files a,b`` spelling nothing is
guessed, so the same command line prints the same text.
"""

from __future__ import annotations

import os

from logscan.logdir.naming import InternalTopicDecoder, decoder_for_partition_dir

#: naming's decoder -> DumpOptions.decoder kind (the decoders logscan implements).
KINDS = {
    InternalTopicDecoder.TRANSACTION_LOG: "transaction",
    InternalTopicDecoder.OFFSETS: "offsets",
    InternalTopicDecoder.CLUSTER_METADATA: "metadata",
    InternalTopicDecoder.REMOTE_LOG_METADATA: "remote",
    InternalTopicDecoder.SHARE_GROUP_STATE: "share",
}


def decoder_for_path(path: str) -> str | None:
    """The decoder kind for a file inside an internal topic's partition dir, else None."""
    if os.path.basename(path) == "bootstrap.checkpoint":
        return "metadata"  # KRaft bootstrap records, in the log dir's root
    from logscan.logdir.store import is_uri

    folder = path.rsplit("/", 1)[0] if is_uri(path) else os.path.dirname(os.path.abspath(path))
    parent = os.path.basename(folder)
    return KINDS.get(decoder_for_partition_dir(parent))
