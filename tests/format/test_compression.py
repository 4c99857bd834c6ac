import os
import struct
import zlib

import cramjam
import pytest

from logscan.format import compression as c
from logscan.format.errors import CompressionError, DecompressionLimitExceeded

COMPRESSIBLE = b"".join(b"record-%06d;" % i for i in range(20000))  # ~260 KB, several blocks
RANDOM = os.urandom(150_000)
CODEC_MAGICS = [(codec, magic) for codec in range(5) for magic in (0, 1, 2) if codec != 4 or magic == 2]

# Frame headers recorded from Kafka 4.1.1 (MemoryRecords.withRecords, lz4 wrappers):
# magic 0 keeps the KAFKA-3160 header checksum computed over the magic bytes too.
KAFKA_LZ4_HEADER_MAGIC0 = bytes.fromhex("04224d1860401a")
KAFKA_LZ4_HEADER_MAGIC1 = bytes.fromhex("04224d18604082")


def test_codec_table_names_as_kafka_dump_log():
    assert [c.codec_name(i) for i in range(5)] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert c.codec_name(6) == "unknown(6)"


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_ids_are_located_errors(codec):
    with pytest.raises(CompressionError) as e:
        c.decompress(codec, b"abc", magic=2, position=1234)
    assert e.value.position == 1234 and e.value.found == codec


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_needs_magic_2(magic):
    with pytest.raises(CompressionError):
        c.decompress(c.ZSTD, c.compress(c.ZSTD, b"x"), magic=magic)


@pytest.mark.parametrize("codec,magic", CODEC_MAGICS)
@pytest.mark.parametrize("data", [b"", b"a", COMPRESSIBLE, RANDOM], ids=["empty", "one", "text", "random"])
def test_round_trip(codec, magic, data):
    packed = c.compress(codec, data, magic=magic)
    assert c.decompress(codec, packed, magic=magic, max_output=len(data)) == data
    assert c.decompress(codec, memoryview(b"!" + packed + b"!")[1:-1], magic=magic) == data


@pytest.mark.parametrize("codec,magic", CODEC_MAGICS)
def test_cap_is_exact(codec, magic):
    packed = c.compress(codec, COMPRESSIBLE, magic=magic)
    assert len(c.decompress(codec, packed, magic=magic, max_output=len(COMPRESSIBLE))) == len(COMPRESSIBLE)
    with pytest.raises(DecompressionLimitExceeded) as e:
        c.decompress(codec, packed, magic=magic, max_output=len(COMPRESSIBLE) - 1, position=77)
    assert e.value.position == 77


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_bomb_stops_at_the_cap(codec):
    bomb = c.compress(codec, bytes(64 * 1024 * 1024), magic=2)
    assert len(bomb) < 4 * 1024 * 1024
    with pytest.raises(DecompressionLimitExceeded):
        c.decompress(codec, bomb, magic=2, max_output=1024 * 1024)


@pytest.mark.parametrize("codec,magic", [(1, 2), (2, 2), (3, 0), (3, 2), (4, 2)])
def test_every_prefix_is_a_compression_error_or_a_prefix(codec, magic):
    data = COMPRESSIBLE[:70000]
    packed = c.compress(codec, data, magic=magic)
    for cut in list(range(0, 40)) + list(range(40, len(packed), 97)):
        try:
            out = c.decompress(codec, packed[:cut], magic=magic)
        except CompressionError:
            continue
        # xerial snappy has no end mark: a cut at a chunk boundary is a shorter stream
        assert codec == c.SNAPPY and data.startswith(out), cut


def test_gzip_concatenated_members_and_trailing_junk():
    one, two = zlib.compress(b"a" * 10, wbits=31), zlib.compress(b"b" * 5, wbits=31)
    assert c.decompress(c.GZIP, one + two, magic=2) == b"a" * 10 + b"b" * 5
    assert c.decompress(c.GZIP, one + b"junk", magic=2) == b"a" * 10
    with pytest.raises(CompressionError):
        c.decompress(c.GZIP, b"not gzip at all", magic=2)


def test_snappy_java_framing_bytes():
    packed = c.compress(c.SNAPPY, b"hello hello hello")
    assert packed[:16].hex() == "82534e41505059000000000100000001"
    (size,) = struct.unpack_from(">i", packed, 16)
    assert len(packed) == 20 + size


def test_snappy_raw_block_is_accepted_like_snappy_input_stream():
    raw = bytes(cramjam.snappy.compress_raw(COMPRESSIBLE))
    assert c.decompress(c.SNAPPY, raw, magic=2) == COMPRESSIBLE


def test_snappy_concatenated_streams():
    data = c.compress(c.SNAPPY, b"first;") + c.compress(c.SNAPPY, b"second")
    assert c.decompress(c.SNAPPY, data, magic=1) == b"first;second"


def test_snappy_bad_chunk_length_is_located():
    packed = bytearray(c.compress(c.SNAPPY, b"abc" * 100))
    struct.pack_into(">i", packed, 16, 10_000)
    with pytest.raises(CompressionError) as e:
        c.decompress(c.SNAPPY, bytes(packed), magic=2, position=1000)
    assert e.value.position == 1016


def test_lz4_header_checksums_match_kafka():
    assert c.compress(c.LZ4, b"x", magic=0)[:7] == KAFKA_LZ4_HEADER_MAGIC0
    assert c.compress(c.LZ4, b"x", magic=1)[:7] == KAFKA_LZ4_HEADER_MAGIC1
    assert c.compress(c.LZ4, b"x", magic=2)[:7] == KAFKA_LZ4_HEADER_MAGIC1


def test_lz4_header_checksum_skipped_for_magic_0_only():
    broken = c.compress(c.LZ4, COMPRESSIBLE, magic=0)
    assert c.decompress(c.LZ4, broken, magic=0) == COMPRESSIBLE
    wrong = broken[:6] + b"\x00" + broken[7:]
    assert c.decompress(c.LZ4, wrong, magic=0) == COMPRESSIBLE
    for magic in (1, 2):
        with pytest.raises(CompressionError, match="descriptor corrupted") as e:
            c.decompress(c.LZ4, broken, magic=magic, position=10)
        assert e.value.position == 16


def test_lz4_frame_validation():
    good = c.compress(c.LZ4, b"abc" * 1000, magic=2)
    with pytest.raises(CompressionError, match="invalid magic"):
        c.decompress(c.LZ4, b"\x00" + good[1:], magic=2)
    with pytest.raises(CompressionError, match="FLG"):
        c.decompress(c.LZ4, good[:4] + b"\x40" + good[5:], magic=0)  # dependent blocks
    with pytest.raises(CompressionError, match="BD"):
        c.decompress(c.LZ4, good[:5] + b"\x30" + good[6:], magic=0)  # block size code 3
    oversized = good[:7] + struct.pack("<I", 70000) + good[11:]
    with pytest.raises(CompressionError, match="exceeded max"):
        c.decompress(c.LZ4, oversized, magic=2)


def test_lz4_stored_block_and_block_checksum():
    header = struct.pack("<IBB", c.LZ4_MAGIC, 0x70, 0x40)  # block checksum flag set
    header += bytes([(c.xxhash32(header[4:]) >> 8) & 0xFF])
    block = b"stored-bytes"
    frame = header + struct.pack("<I", len(block) | 0x80000000) + block
    good = frame + struct.pack("<I", c.xxhash32(block)) + b"\x00\x00\x00\x00"
    assert c.decompress(c.LZ4, good, magic=2) == block
    bad = frame + struct.pack("<I", c.xxhash32(block) ^ 1) + b"\x00\x00\x00\x00"
    with pytest.raises(CompressionError, match="Block checksum"):
        c.decompress(c.LZ4, bad, magic=2)


def test_lz4_corrupt_block_is_not_a_bomb():
    block = b"\x10a\x00\x05\x10b"  # literal 'a', then a match 1280 bytes back: impossible
    frame = KAFKA_LZ4_HEADER_MAGIC1 + struct.pack("<I", len(block)) + block + b"\x00\x00\x00\x00"
    with pytest.raises(CompressionError, match="corrupt block") as e:
        c.decompress(c.LZ4, frame, magic=2, max_output=3)
    assert not isinstance(e.value, DecompressionLimitExceeded)


def test_xxhash32_reference_vectors():
    assert c.xxhash32(b"") == 0x02CC5D05
    assert c.xxhash32(b"a") == 0x550D7456
    assert c.xxhash32(b"abc") == 0x32D153FF
    assert c.xxhash32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_zstd_corrupt_is_compression_error():
    with pytest.raises(CompressionError) as e:
        c.decompress(c.ZSTD, b"\x28\xb5\x2f\xfd garbage", magic=2)
    assert not isinstance(e.value, DecompressionLimitExceeded)
