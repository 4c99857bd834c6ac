"""Text from a copy, made safe for a person's terminal (imported by the decoders' findings:
nothing heavy here)."""

from __future__ import annotations


def printable(text: str) -> str:
    """``text`` safe to write to a terminal: every character Python does not call printable
    (controls such as newline and ESC, format characters such as the bidi overrides, line and
    paragraph separators) as its backslash escape. A copy's folder and file names are
    anybody's bytes: written raw, a newline forges a line of the report and an ESC sequence
    drives the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
