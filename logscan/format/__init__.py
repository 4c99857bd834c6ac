"""Pure, sans-IO decoders for everything a Kafka log dir holds.

Every decoder takes a buffer (bytes, memoryview, mmap, Arrow buffer) and a position and
returns a value and the next position. Nothing here opens files, prints or logs.
"""
