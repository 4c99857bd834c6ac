"""Key/payload text of a record, as kafka-dump-log's MessageParsers produce it.

kafka-dump-log picks one parser for the whole run: the offsets, transaction-log or
cluster-metadata decoder when asked, else ``--key-decoder-class``/``--value-decoder-class``
(default ``org.apache.kafka.tools.api.StringDecoder``: ``new String(bytes, UTF_8)``, which
replaces each malformed sequence with one U+FFFD by Java's rule: format.primitives.java_utf8;
Python's ``errors="replace"`` writes three for an encoded surrogate).

A parser is ``parse(record) -> (key | None, payload | None)``. The internal-topic parsers
come from ``logscan.format`` (txnlog, offsets, metadata); they never raise for bad record
bytes, because Kafka's own parsers turn those into ``Error at offset ..., skipping.`` text;
the DecodeError behind such a text is appended to the ``errors`` list the parser was made
with, so the dump can report it (file, byte, reason) while printing Kafka's text.
"""

from __future__ import annotations

import struct
from typing import Callable

from logscan.format.errors import CorruptRecordError
from logscan.format.primitives import java_utf8

Parser = Callable[[object], tuple]

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")


def _string(data: bytes) -> str:
    return java_utf8(bytes(data))


def _hex(data: bytes) -> str:
    return bytes(data).hex()


def _java_int(data: bytes) -> str:
    # IntegerDecoder: ByteBuffer.wrap(bytes).getInt(); fewer than 4 bytes underflows.
    if len(data) < 4:
        raise CorruptRecordError(f"IntegerDecoder needs 4 bytes, record has {len(data)}", -1)
    return str(_INT.unpack_from(data)[0])


def _java_long(data: bytes) -> str:
    if len(data) < 8:
        raise CorruptRecordError(f"LongDecoder needs 8 bytes, record has {len(data)}", -1)
    return str(_LONG.unpack_from(data)[0])


#: --key-decoder-class / --value-decoder-class values we implement (Kafka class names and
#: logscan's short names). DefaultDecoder returns byte[] whose toString is an identity hash
#: ("[B@1b6d3586"), useless and unreproducible, so it is not offered.
BYTE_DECODERS: dict[str, Callable[[bytes], str]] = {
    "org.apache.kafka.tools.api.StringDecoder": _string,
    "org.apache.kafka.tools.api.IntegerDecoder": _java_int,
    "org.apache.kafka.tools.api.LongDecoder": _java_long,
    "text": _string,
    "string": _string,
    "hex": _hex,
    "int": _java_int,
    "long": _java_long,
}


def decoder_parser(key_decoder: str, value_decoder: str) -> Parser:
    """DecoderMessageParser: each side decoded independently; null stays absent."""
    kd = BYTE_DECODERS[key_decoder]
    vd = BYTE_DECODERS[value_decoder]

    def parse(record):
        key = None if record.key is None else kd(record.key)
        payload = None if record.value is None else vd(record.value)
        return key, payload

    return parse


def internal_topic_parser(kind: str, errors: list, text=None, *, structured: bool = False) -> Parser:
    """The parser for ``kind`` in {"transaction", "offsets", "metadata", "remote", "share"}; the cause
    of each ``Error at ...`` text it renders is appended to ``errors``. ``text``: the release's
    logscan.dump.versions.Text (None: 4.1.1's), which says how the transaction log is printed.
    ``structured``: for --format json, a payload the JSON shows as an object where logscan has
    one (the remote log metadata's RemoteLogMetadata object) instead of Kafka's text.

    Imported lazily: these decoders are large and a plain dump does not need them.
    """
    if kind in ("remote", "share"):
        from .versions import text_of
        text = text or text_of("4.1")
        if kind == "share":
            return text.share_state_parser(errors, structured=structured)
        return text.remote_log_metadata_parser(errors, structured=structured)
    if kind == "transaction" and text is not None:
        return text.transaction_parser(errors)
    if kind == "metadata" and text is not None and text.metadata_parser(errors) is not None:
        return text.metadata_parser(errors)
    if kind == "transaction":
        from logscan.format.txnlog import render_txnlog_key_payload
        return lambda r: render_txnlog_key_payload(r.key, r.value, r.offset, errors)
    if kind == "offsets" and (text is not None or structured):
        from .versions import text_of
        return (text or text_of("4.1")).offsets_parser(errors, structured=structured)
    if kind == "offsets":
        from logscan.format.offsets import render_offsets_key_payload
        return lambda r: render_offsets_key_payload(r.key, r.value, r.offset, errors)
    if kind == "metadata":
        from logscan.format.metadata import render_metadata_payload
        # ClusterMetadataLogMessageParser: no key part, ever.
        return lambda r: (None, render_metadata_payload(r.value, r.offset, errors))
    raise ValueError(f"unknown internal topic decoder {kind!r}")
