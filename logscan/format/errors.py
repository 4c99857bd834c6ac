"""The three outcomes of a decode: a value, TruncatedInput, or a located DecodeError.

Any other exception escaping a decoder is a bug (the fuzzer treats it as one).
"""

from __future__ import annotations


class DecodeError(Exception):
    """A located decoding failure: where, what was expected, what was found.

    ``position`` is the absolute byte position in the buffer the decoder was given (for a
    file, the byte position in the file). Subclasses say what kind of failure it is.
    """

    reason = "corrupt"

    def __init__(self, message: str, position: int, expected: object = None, found: object = None):
        super().__init__(message)
        self.message = message
        self.position = position
        self.expected = expected
        self.found = found

    def __str__(self) -> str:
        return f"{self.message} at byte {self.position}"

    def located(self, origin: str) -> str:
        """One line naming the origin (a file path) and the byte position."""
        return f"{origin}: byte {self.position}: {self.message}"


class TruncatedInput(DecodeError):
    """The buffer ends before the structure does: the tail is short, not wrong."""

    reason = "truncated"


class CorruptRecordError(DecodeError):
    """Bytes are present but violate the format (bad length, bad varint, count mismatch)."""

    reason = "corrupt"


class CrcMismatch(DecodeError):
    """Stored and computed checksums differ."""

    reason = "crc"


class UnknownMagic(DecodeError):
    """A batch or message magic byte this decoder does not know."""

    reason = "magic"


class UnknownVersion(DecodeError):
    """A schema/record version this decoder does not know."""

    reason = "version"


class CompressionError(DecodeError):
    """A compressed payload could not be decompressed (bad stream, unknown codec)."""

    reason = "compression"


class DecompressionLimitExceeded(CompressionError):
    """Decompressed output would exceed the configured cap (a decompression bomb)."""

    reason = "bomb"


class DecompressionBudgetSpent(DecompressionLimitExceeded):
    """One file's decompression budget (DecompressionBudget: output bytes per byte of the
    file, seconds) is spent: a file of many small bombs, each under the per-batch cap."""

    reason = "bomb-budget"
