"""`logscan dump`: kafka-dump-log's output, from logscan's decoders.

``Dumper(out, err, DumpOptions(...), json=False).run(paths) -> exit status``; see dumper.py
for the modes and the deliberate differences from kafka-dump-log.
"""

from .dumper import EXIT_DATA, EXIT_IO, EXIT_OK, EXIT_PIPE, EXIT_USAGE, Dumper
from .options import DumpOptions

__all__ = ["Dumper", "DumpOptions", "EXIT_OK", "EXIT_DATA", "EXIT_USAGE", "EXIT_IO", "EXIT_PIPE"]
