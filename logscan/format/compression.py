"""The codec table and Kafka's compression framings, with a hard cap on output size.

Kafka does not use the plain formats every library speaks:
- snappy is written by xerial snappy-java's ``SnappyOutputStream`` (its own stream framing:
  16-byte header, then [int32 BE length][raw snappy block]...), for every magic;
  ``SnappyInputStream`` falls back to one raw snappy block when the header is absent.
- lz4 is Kafka's own ``KafkaLZ4Block`` frame (a subset of LZ4 frame v1.5.1, little-endian),
  and magic-0 wrappers carry a header checksum computed over the magic bytes too (the
  historical bug KAFKA-3160); Kafka skips that check for magic 0 and verifies it otherwise.
- zstd is a plain zstd frame, legal only in magic-v2 batches.

Every decompressor stops at ``max_output`` bytes and raises DecompressionLimitExceeded rather
than allocating past it: one batch header can claim a tiny payload that inflates to gigabytes.
A file's batches share a DecompressionBudget too: a segment of many small bombs, each under
that cap (a few hundred bytes of zstd inflating to tens of MiB), would otherwise cost minutes
per MB of file; once the budget is spent, decompress raises DecompressionBudgetSpent at once.
"""

from __future__ import annotations

import struct
import time
import zlib
from typing import Callable, NamedTuple

import cramjam

from .errors import CompressionError, DecompressionBudgetSpent, DecompressionLimitExceeded

DEFAULT_MAX_OUTPUT = 256 * 1024 * 1024
#: A file's decompression budget (DecompressionBudget): output bytes per byte of the file,
#: with a floor for small files, and seconds. Real batches inflate some 2-20 times (zstd's
#: best case on repetitive text is a few hundred); a bomb, thousands of times.
DEFAULT_BUDGET_RATIO = 1000
DEFAULT_BUDGET_MIN_BYTES = 1 << 30
DEFAULT_BUDGET_SECONDS = 60.0


class DecompressionBudget:
    """What decompressing the batches of one file may cost: at most ``max(min_bytes, ratio *
    file_bytes)`` bytes of output in all and ``seconds`` of decompression time. Every
    decompress call given it is charged its output (a payload stopped at its cap, the bytes
    produced) and its time; the call that goes past the budget raises
    DecompressionBudgetSpent, and so does every later one, at once. ``clock`` is a
    monotonic clock in seconds (tests pass their own)."""

    __slots__ = ("max_output", "max_seconds", "output", "seconds", "spent_at", "_clock")

    def __init__(self, file_bytes: int, *, ratio: int = DEFAULT_BUDGET_RATIO,
                 min_bytes: int = DEFAULT_BUDGET_MIN_BYTES, seconds: float = DEFAULT_BUDGET_SECONDS,
                 clock: Callable[[], float] = time.monotonic):
        self.max_output = max(min_bytes, ratio * file_bytes)
        self.max_seconds = seconds
        self.output = 0
        self.seconds = 0.0
        self.spent_at: int | None = None  # the position of the payload that spent it
        self._clock = clock

    @property
    def spent(self) -> bool:
        return self.spent_at is not None

    def describe(self) -> str:
        return (f"{self.output} bytes inflated in {self.seconds:.1f} s; the file's budget is "
                f"{self.max_output} bytes and {self.max_seconds:g} s")

    def _error(self, position: int) -> DecompressionBudgetSpent:
        return DecompressionBudgetSpent(
            f"the file's decompression budget is spent ({self.describe()}; first spent by the payload at "
            f"byte {self.spent_at}): a file of decompression bombs? its later compressed payloads are not "
            f"decompressed", position, expected=f"<= {self.max_output} bytes, <= {self.max_seconds:g} s",
            found=f"{self.output} bytes, {self.seconds:.1f} s")


class Codec(NamedTuple):
    id: int
    name: str  # as kafka-dump-log prints it (compresscodec: ...)
    min_magic: int  # oldest message format that may carry it


# CompressionType.java; ids 5-7 are "Unknown compression type id".
CODECS = {
    0: Codec(0, "none", 0),
    1: Codec(1, "gzip", 0),
    2: Codec(2, "snappy", 0),
    3: Codec(3, "lz4", 0),
    4: Codec(4, "zstd", 2),
}
NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4


def codec_name(codec_id: int) -> str:
    """kafka-dump-log's name for a codec id; unknown ids are named, not fatal, for printing."""
    codec = CODECS.get(codec_id)
    return codec.name if codec else f"unknown({codec_id})"


def check_codec(codec_id: int, magic: int, position: int) -> Codec:
    """The codec for ``codec_id`` or a located error (unknown id, zstd below magic 2)."""
    codec = CODECS.get(codec_id)
    if codec is None:
        raise CompressionError(f"Unknown compression type id: {codec_id}", position,
                               expected="0..4", found=codec_id)
    if magic < codec.min_magic:
        raise CompressionError(f"{codec.name} is not allowed with magic {magic}", position,
                               expected=f"magic >= {codec.min_magic}", found=magic)
    return codec


def decompress(codec_id: int, data, *, magic: int, max_output: int = DEFAULT_MAX_OUTPUT,
               position: int = 0, budget: DecompressionBudget | None = None) -> bytes:
    """Decompress one batch/wrapper payload; ``position`` is where ``data`` starts in the file.
    With a ``budget`` (the file's), the call is charged to it (see DecompressionBudget)."""
    check_codec(codec_id, magic, position)
    if codec_id == NONE:
        if len(data) > max_output:
            raise _limit(max_output, position)
        return bytes(data)
    if budget is None:
        return _DECOMPRESSORS[codec_id](memoryview(data), max_output, position, magic)
    if budget.spent:
        raise budget._error(position)
    room = budget.max_output - budget.output
    cap = min(max_output, room)
    started = budget._clock()
    try:
        out = _DECOMPRESSORS[codec_id](memoryview(data), cap, position, magic)
    except DecompressionLimitExceeded:
        budget.output += cap + 1  # what the decompressor produced before it stopped
        budget.seconds += budget._clock() - started
        if cap < max_output or budget.seconds > budget.max_seconds:
            budget.spent_at = position
            raise budget._error(position) from None
        raise
    budget.output += len(out)
    budget.seconds += budget._clock() - started
    if budget.seconds > budget.max_seconds:
        budget.spent_at = position
        raise budget._error(position)
    return out


def compress(codec_id: int, data, *, magic: int = 2) -> bytes:
    """The framing Kafka's producer/broker writes for ``codec_id`` (used by the test encoder)."""
    check_codec(codec_id, magic, 0)
    if codec_id == NONE:
        return bytes(data)
    if codec_id == GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec_id == SNAPPY:
        return snappy_java_compress(data)
    if codec_id == LZ4:
        return kafka_lz4_compress(data, broken_header_checksum=(magic == 0))
    return bytes(cramjam.zstd.compress(bytes(data)))


def _limit(max_output: int, position: int) -> DecompressionLimitExceeded:
    return DecompressionLimitExceeded(
        f"decompressed payload exceeds the {max_output}-byte cap", position,
        expected=f"<= {max_output} bytes", found=f"> {max_output} bytes")


def _join(parts: list) -> bytes:
    return parts[0] if len(parts) == 1 else b"".join(parts)


# -- gzip ------------------------------------------------------------------------------------

def _gunzip(data: memoryview, cap: int, position: int, magic: int) -> bytes:
    # GZIPInputStream reads concatenated members; bytes after a member that are not another
    # gzip header are ignored, as the JDK does.
    parts: list[bytes] = []
    total = 0
    rest = data
    while True:
        d = zlib.decompressobj(31)
        try:
            chunk = d.decompress(rest, cap - total + 1)
        except zlib.error as e:
            raise CompressionError(f"gzip: {e}", position, expected="gzip stream") from None
        total += len(chunk)
        parts.append(chunk)
        if total > cap:
            raise _limit(cap, position)
        if not d.eof:
            raise CompressionError("gzip: unexpected end of stream", position,
                                   expected="complete gzip member", found="end of data")
        rest = d.unused_data
        if rest[:2] != b"\x1f\x8b":
            return _join(parts)


# -- snappy (xerial snappy-java stream) --------------------------------------------------------

SNAPPY_JAVA_MAGIC = b"\x82SNAPPY\x00"
# SnappyCodec header: magic, int32 version, int32 compatible version (both 1).
SNAPPY_JAVA_HEADER = struct.Struct(">8sii")
SNAPPY_JAVA_CHUNK = struct.Struct(">i")
SNAPPY_JAVA_BLOCK_SIZE = 32 * 1024  # SnappyOutputStream's default block size


def _snappy_raw(block, cap: int, total: int, position: int, payload_position: int) -> bytes:
    try:
        size = cramjam.snappy.decompress_raw_len(block)
    except cramjam.DecompressionError as e:
        raise CompressionError(f"snappy: {e}", position, expected="raw snappy block") from None
    if total + size > cap:
        raise _limit(cap, payload_position)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as e:
        raise CompressionError(f"snappy: {e}", position, expected="raw snappy block") from None


def _unsnappy(data: memoryview, cap: int, position: int, magic: int) -> bytes:
    if bytes(data[:8]) != SNAPPY_JAVA_MAGIC or len(data) < SNAPPY_JAVA_HEADER.size:
        # SnappyInputStream.readHeader: no stream header -> the whole input is one raw block.
        return _snappy_raw(data, cap, 0, position, position)
    parts: list[bytes] = []
    total = 0
    pos = 0
    end = len(data)
    while pos < end:
        if bytes(data[pos:pos + 8]) == SNAPPY_JAVA_MAGIC:
            # snappy-java accepts concatenated streams: a header may follow any chunk.
            pos += SNAPPY_JAVA_HEADER.size
            continue
        if pos + 4 > end:
            raise CompressionError("snappy: truncated chunk length", position + pos,
                                   expected=4, found=end - pos)
        (size,) = SNAPPY_JAVA_CHUNK.unpack_from(data, pos)
        pos += 4
        if size < 0 or pos + size > end:
            raise CompressionError("snappy: chunk length runs past the payload", position + pos - 4,
                                   expected=f"<= {end - pos}", found=size)
        chunk = _snappy_raw(data[pos:pos + size], cap, total, position + pos, position)
        total += len(chunk)
        parts.append(chunk)
        pos += size
    return _join(parts) if parts else b""


def snappy_java_compress(data) -> bytes:
    out = [SNAPPY_JAVA_HEADER.pack(SNAPPY_JAVA_MAGIC, 1, 1)]
    mv = memoryview(data)
    for i in range(0, len(mv), SNAPPY_JAVA_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(mv[i:i + SNAPPY_JAVA_BLOCK_SIZE]))
        out.append(SNAPPY_JAVA_CHUNK.pack(len(block)))
        out.append(block)
    return b"".join(out)


# -- lz4 (KafkaLZ4BlockInputStream) ------------------------------------------------------------

LZ4_MAGIC = 0x184D2204
LZ4_FRAME_HEADER = struct.Struct("<IBB")  # magic (LE), FLG, BD
LZ4_BLOCK_SIZE = struct.Struct("<i")
LZ4_INCOMPRESSIBLE = 0x80000000
LZ4_FLG_DEFAULT = 0x60  # version 01, block independence
LZ4_BD_64KB = 0x40  # Kafka always writes block max size code 4 (64 KiB)

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF
_U32LE = struct.Struct("<I")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxhash32(data, seed: int = 0) -> int:
    """XXH32 in pure Python: used for the LZ4 frame header (2-10 bytes) and, rarely, blocks."""
    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while i + 16 <= n:
            for k in range(4):
                lane = _U32LE.unpack_from(data, i + 4 * k)[0]
                v[k] = (_rotl((v[k] + lane * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        h = (_rotl((h + _U32LE.unpack_from(data, i)[0] * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def _lz4_decoded_length(block) -> int | None:
    """Length an LZ4 block would decode to, without decoding it (None if malformed).

    Only used on the error path, to tell a block that overflows the cap from a corrupt one.
    """
    i, n, out = 0, len(block), 0
    while i < n:
        token = block[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            while i < n and block[i] == 255:
                lit += 255
                i += 1
            if i >= n:
                return None
            lit += block[i]
            i += 1
        i += lit
        out += lit
        if i == n:
            return out
        if i + 2 > n:
            return None
        offset = block[i] | block[i + 1] << 8
        i += 2
        if offset == 0 or offset > out:
            return None
        match = token & 15
        if match == 15:
            while i < n and block[i] == 255:
                match += 255
                i += 1
            if i >= n:
                return None
            match += block[i]
            i += 1
        out += match + 4
    return None


def _unlz4(data: memoryview, cap: int, position: int, magic: int) -> bytes:
    end = len(data)
    if end < 6:
        raise CompressionError("lz4: Stream ended prematurely", position, expected=6, found=end)
    frame_magic, flg, bd = LZ4_FRAME_HEADER.unpack_from(data, 0)
    if frame_magic != LZ4_MAGIC:
        raise CompressionError("lz4: Stream unsupported (invalid magic bytes)", position,
                               expected=hex(LZ4_MAGIC), found=hex(frame_magic))
    if flg & 0x03 or not flg & 0x20 or flg >> 6 != 1:
        raise CompressionError("lz4: unsupported FLG (reserved bits, dependent blocks or version)",
                               position + 4, expected=hex(LZ4_FLG_DEFAULT), found=hex(flg))
    if bd & 0x8F or not 4 <= (bd >> 4) & 7 <= 7:
        raise CompressionError("lz4: invalid BD byte", position + 5, expected="0x40..0x70", found=hex(bd))
    max_block = 1 << (2 * ((bd >> 4) & 7) + 8)
    pos = 6 + (8 if flg & 0x08 else 0)  # the content size is skipped, as Kafka does
    if pos + 1 > end:
        raise CompressionError("lz4: Stream ended prematurely", position, expected=pos + 1, found=end)
    # KAFKA-3160: magic-0 writers hashed the 4 magic bytes too; Kafka does not check it for v0.
    if magic != 0:
        expected_hc = (xxhash32(data[4:pos]) >> 8) & 0xFF
        if data[pos] != expected_hc:
            raise CompressionError("lz4: Stream frame descriptor corrupted", position + pos,
                                   expected=expected_hc, found=data[pos])
    pos += 1
    block_checksum = bool(flg & 0x10)
    scratch = memoryview(bytearray(min(max_block, cap) or 1))
    parts: list[bytes] = []
    total = 0
    while True:
        if pos + 4 > end:
            raise CompressionError("lz4: Stream ended prematurely", position + pos,
                                   expected="block size or end mark", found=end - pos)
        (raw,) = _U32LE.unpack_from(data, pos)
        size = raw & ~LZ4_INCOMPRESSIBLE
        if size == 0:
            # End mark; the content checksum, if flagged, is read but not verified (Kafka TODO).
            return _join(parts) if parts else b""
        if size > max_block:
            raise CompressionError(f"lz4: Block size {size} exceeded max: {max_block}", position + pos,
                                   expected=f"<= {max_block}", found=size)
        pos += 4
        if pos + size + (4 if block_checksum else 0) > end:
            raise CompressionError("lz4: Stream ended prematurely", position + pos,
                                   expected=size, found=end - pos)
        block = data[pos:pos + size]
        if raw & LZ4_INCOMPRESSIBLE:
            if total + size > cap:
                raise _limit(cap, position)
            parts.append(bytes(block))
            total += size
        else:
            room = min(max_block, cap - total)
            try:
                n = cramjam.lz4.decompress_block_into(block, scratch[:room], output_len=room)
            except cramjam.DecompressionError:
                decoded = _lz4_decoded_length(block)
                if decoded is not None and decoded > room and decoded <= max_block:
                    raise _limit(cap, position) from None
                raise CompressionError("lz4: corrupt block", position + pos,
                                       expected="valid LZ4 block") from None
            parts.append(bytes(scratch[:n]))
            total += n
        pos += size
        if block_checksum:
            (stored,) = _U32LE.unpack_from(data, pos)
            if stored != xxhash32(block):
                raise CompressionError("lz4: Block checksum mismatch", position + pos,
                                       expected=xxhash32(block), found=stored)
            pos += 4


def kafka_lz4_compress(data, *, broken_header_checksum: bool = False) -> bytes:
    """KafkaLZ4BlockOutputStream: 64 KiB blocks, no checksums, incompressible blocks stored."""
    header = LZ4_FRAME_HEADER.pack(LZ4_MAGIC, LZ4_FLG_DEFAULT, LZ4_BD_64KB)
    hc = (xxhash32(header if broken_header_checksum else header[4:]) >> 8) & 0xFF
    out = [header, bytes([hc])]
    mv = memoryview(data)
    for i in range(0, len(mv), 1 << 16):
        block = mv[i:i + (1 << 16)]
        packed = bytes(cramjam.lz4.compress_block(block, store_size=False))
        if len(packed) >= len(block):
            out += [_U32LE.pack(len(block) | LZ4_INCOMPRESSIBLE), bytes(block)]
        else:
            out += [_U32LE.pack(len(packed)), packed]
    out.append(b"\x00\x00\x00\x00")
    return b"".join(out)


# -- zstd -------------------------------------------------------------------------------------

def _unzstd(data: memoryview, cap: int, position: int, magic: int) -> bytes:
    # zstd-jni writes streaming frames without a content size, so grow an output buffer
    # geometrically up to cap + 1; "failed to write whole buffer" means it did not fit.
    size = min(cap + 1, max(len(data) * 4, 64 * 1024))
    while True:
        out = bytearray(size)
        try:
            n = cramjam.zstd.decompress_into(data, out)
        except cramjam.DecompressionError as e:
            if "whole buffer" not in str(e):
                raise CompressionError(f"zstd: {e}", position, expected="zstd frame") from None
            if size > cap:
                raise _limit(cap, position) from None
            size = min(cap + 1, size * 2)
            continue
        if n > cap:
            raise _limit(cap, position)
        del out[n:]
        return bytes(out)


_DECOMPRESSORS = {GZIP: _gunzip, SNAPPY: _unsnappy, LZ4: _unlz4, ZSTD: _unzstd}
