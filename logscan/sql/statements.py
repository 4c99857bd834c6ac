"""Statements out of typed or piped text, and whether each one only reads.

Both use sqlparse's tokens, so a ';' or a keyword inside a quoted string, a ``--`` comment or
a ``/* */`` comment neither ends a statement nor decides what it is.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Optional

import sqlparse
from sqlparse import tokens as T

#: What a read-only session runs: queries and the statements that only describe tables.
READ_ONLY = ("SELECT", "WITH", "VALUES", "TABLE", "SHOW", "DESCRIBE", "DESC", "EXPLAIN")
QUIT = ("\\q", "quit", "exit")


class Refused(Exception):
    """A statement that would change something (or read files), in a read-only session."""


def statements(lines: Iterable[str]) -> Iterator[str]:
    """Statements ending in ';' from a prompt's or a pipe's lines, each as written (comments
    and line breaks kept, the ';' and anything after it on its line dropped); comment-only
    pieces are skipped; ``\\q`` on a line of its own before a statement ends the input. A
    statement is yielded as soon as its ';' is read."""
    pending = ""
    for line in lines:
        if not _significant(pending) and line.strip() in QUIT:
            return
        pending += line if line.endswith("\n") else line + "\n"
        parsed = sqlparse.parse(pending)
        complete = 0
        for statement in parsed:
            if _end(statement) is None or _unterminated(statement):
                break
            complete += 1
        for statement in parsed[:complete]:
            if (text := _text(statement)):
                yield text
        if complete:
            pending = "".join(str(s) for s in parsed[complete:])
    for statement in sqlparse.parse(pending):
        if (text := _text(statement)):
            yield text


def split(text: str) -> list[str]:
    """The statements of one argument (``logscan sql "SELECT 1; SELECT 2"``)."""
    return [t for statement in sqlparse.parse(text) if (t := _text(statement))]


def _significant(text_or_statement) -> list:
    """The leaf tokens that are neither blanks nor comments."""
    statement = (sqlparse.parse(text_or_statement)[0] if isinstance(text_or_statement, str)
                 else text_or_statement) if str(text_or_statement).strip() else None
    return [] if statement is None else [t for t in statement.flatten()
                                         if not t.is_whitespace and t.ttype not in T.Comment]


def _end(statement) -> Optional[int]:
    """Character offset of the ';' that ends the statement; None while it has none."""
    significant = _significant(statement)
    if not significant or significant[-1].value != ";":
        return None
    pos = 0
    for t in statement.flatten():
        if t is significant[-1]:
            return pos
        pos += len(t.value)
    return None


def _text(statement) -> str:
    """The statement up to its ';' without surrounding blanks; '' if it holds only comments."""
    significant = _significant(statement)
    if not significant or [t.value for t in significant] == [";"]:
        return ""
    end = _end(statement)
    return str(statement)[:end].strip() if end is not None else str(statement).strip()


def _unterminated(statement) -> bool:
    """A quote still open (sqlparse makes an unmatched quote an error token): the ';' seen is
    inside a string that goes on on the next line."""
    return any(t.ttype is T.Error and t.value in ("'", '"', "`") for t in statement.flatten())


def _words(statement) -> list[str]:
    """The statement's leaf tokens, upper-cased, without blanks, comments and leading '('."""
    words = [t.normalized.upper() for t in statement.flatten()
             if not t.is_whitespace and t.ttype not in T.Comment]
    while words and words[0] == "(":
        words.pop(0)
    return words


def is_query(text: str) -> bool:
    """True for a statement that only reads: SELECT/WITH/VALUES/TABLE, SHOW, DESCRIBE, and
    EXPLAIN of one of those. sqlparse's type catches ``WITH ... INSERT``."""
    parsed = sqlparse.parse(text)
    if len(parsed) != 1:
        return False
    statement = parsed[0]
    words = _words(statement)
    if not words or words[0] not in READ_ONLY:
        return False
    if words[0] == "EXPLAIN":
        # EXPLAIN [ANALYZE | EXTENDED | FORMATTED | ...] <statement>: judge the statement
        rest = next((i for i, w in enumerate(words[1:], 1) if w in READ_ONLY or w in WRITES), None)
        if rest is None:
            return False
        tail = text[_offset_of(statement, rest):]
        return is_query(tail)
    return statement.get_type() in ("SELECT", "UNKNOWN")


#: Words that start a statement which changes something: an EXPLAIN of one is refused too.
WRITES = ("INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "DROP", "ALTER", "COPY", "ATTACH", "DETACH",
          "SET", "RESET", "PRAGMA", "INSTALL", "LOAD", "CALL", "REPLACE", "TRUNCATE", "CACHE", "ADD", "USE")


def _offset_of(statement, index: int) -> int:
    """Character offset of the index-th word of ``_words(statement)`` in the statement."""
    pos, seen, leading = 0, -1, True
    for t in statement.flatten():
        counted = not t.is_whitespace and t.ttype not in T.Comment and not (leading and t.value == "(")
        if counted:
            leading = False
            seen += 1
            if seen == index:
                return pos
        pos += len(t.value)
    return pos


def check_read_only(text: str) -> None:
    if not is_query(text):
        first = _words(sqlparse.parse(text)[0])[:1] if text.strip() else []
        what = f"a {first[0]} statement" if first else "this statement"
        raise Refused(f"{what} is not a query: logscan sql is read-only (SELECT, WITH, VALUES, SHOW, DESCRIBE, "
                      "EXPLAIN); --engine spark --allow-writes runs other statements")
