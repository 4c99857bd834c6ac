"""The IO side of logscan: walking a copied log dir, classifying its files and turning
decoder errors into located findings. ``naming`` is pure (names only, no file system)."""

from .naming import (FileKind, InternalTopicDecoder, Kind, PartitionDir, base_offset_from_name,
                     classify, decoder_for_partition_dir, internal_topic_decoder,
                     parse_partition_dir)

__all__ = ["FileKind", "InternalTopicDecoder", "Kind", "PartitionDir", "base_offset_from_name",
           "classify", "decoder_for_partition_dir", "internal_topic_decoder",
           "parse_partition_dir"]
