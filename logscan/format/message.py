"""One schema-driven reader for Kafka's *generated messages* (the JSON specs under
``common/message`` and ``common/metadata`` in Kafka's source).

Kafka never writes a hand-laid struct into ``__transaction_state``, ``__consumer_offsets`` or
``__cluster_metadata``: it writes messages produced by its message generator, whose byte layout
is fully determined by a field list with per-field version ranges. So we declare each message
once as a compact table (``M(...)`` of ``F(...)`` rows, transcribed from the 4.1.1 specs) and
one reader walks any of them.

Encoding rules the reader follows, as the generated ``read(Readable, short)`` does:

* non-flexible versions: string = int16 length (-1 = null), bytes = int32 length, arrays =
  int32 count (-1 = null); flexible versions (KIP-482): every length is an unsigned varint of
  N+1 (0 = null) and every struct, nested ones included, ends with a tagged-field section;
* a version range ``"0+"`` generates *no* check at all in Kafka, so a field of range ``lo-hi``
  is present when ``(lo == 0 or v >= lo) and v <= hi`` (this matters only for versions a
  lenient caller reads outside the valid range, as ``MetadataRecordSerde`` does);
* a known tag is read in place, ignoring its declared size (as Kafka does); unknown tags are
  kept raw; a repeated tag overwrites;
* an array count larger than the bytes left is refused before allocating ("Tried to allocate
  a collection of size N, but there are only M bytes remaining.").

Errors carry, besides their position, ``java_message``: the text ``getMessage()`` of the
exception Kafka's reader would throw at that point (``None`` for a Java
``BufferUnderflowException``, whose message is null). Renderers of kafka-dump-log lines
use it.

JSON: :func:`message_json` builds the tree the generated ``*JsonConverter.write(msg, version)``
builds (spec order; fields outside the version omitted; tagged fields only when different
from their default; int8 and int16 as numbers; uuid as Kafka's URL-safe unpadded base64;
bytes and records as Jackson's ``BinaryNode``, i.e. standard base64 with padding), and
:func:`to_kafka_json` prints any such tree as Jackson's compact ``JsonNode.toString()``:
``"``, ``\\`` and the C0 controls are escaped (``\\b \\t \\n \\f \\r`` short, the rest as
``\\u00XX`` with upper-case hex, unlike Python's lower case); nothing else, not ``/`` nor
non-ASCII; doubles as Java's ``Double.toString`` (``1.0E10``), non-finite ones quoted.
"""

from __future__ import annotations

import base64
import functools
import math
import re
import struct
import uuid as _uuid
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import NamedTuple

from .errors import CorruptRecordError, DecodeError, TruncatedInput, UnknownVersion
from .primitives import (FLOAT64, INT8, INT16, INT32, INT64, UINT16, encode_unsigned_varint, java_utf8,
                         read_unsigned_varint)

MAX_VERSION = 0x7FFF
ZERO_UUID = _uuid.UUID(int=0)

# --------------------------------------------------------------------------- schema tables


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range as written in a spec (``"0+"``, ``"1-3"``, ``"none"``)."""
    lo: int
    hi: int

    @classmethod
    def parse(cls, text: str | None) -> "Versions | None":
        if text is None or text == "none":
            return None
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        lo, _, hi = text.partition("-")
        return cls(int(lo), int(hi or lo))

    def __contains__(self, version: int) -> bool:
        # Kafka's generator emits no lower-bound test for a range starting at 0.
        return (self.lo == 0 or version >= self.lo) and version <= self.hi


@dataclass(frozen=True, slots=True)
class Field:
    name: str                   # spec name; JSON uses it with the first letter lower-cased
    type: str                   # "int32", "string", "[]int32", "[]SomeStruct", "SomeStruct"
    versions: Versions
    nullable: Versions | None
    tag: int | None
    tagged: Versions | None
    default: object
    fields: "tuple[Field, ...] | None"   # for struct and array-of-struct types
    # The spec name with the first letter lower-cased: the JSON key and the decoded value's
    # key. Stored, not derived per use: the reader names a field for every value it reads.
    json_name: str = dataclass_field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "json_name", self.name[:1].lower() + self.name[1:])

    @property
    def attr_name(self) -> str:
        return snake_case(self.name)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type


@dataclass(frozen=True, slots=True)
class Schema:
    """A message (``api_key`` set) or a nested struct (``api_key`` None)."""
    name: str
    valid: Versions
    flexible: Versions | None
    api_key: int | None
    fields: tuple[Field, ...]

    def field(self, json_name: str) -> Field:
        for f in self.fields:
            if f.json_name == json_name:
                return f
        raise KeyError(json_name)


def F(name: str, type: str, versions: str, *, null: str | None = None, tag: int | None = None,
      tagged: str | None = None, default: object = "<type>", fields: list | None = None) -> Field:
    """One row of a spec's field list (arguments spelled as in the JSON spec)."""
    if tag is not None and tagged is None:
        tagged = versions
    return Field(name, type, Versions.parse(versions), Versions.parse(null), tag,
                 Versions.parse(tagged), _type_default(type, default),
                 tuple(fields) if fields is not None else None)


def M(name: str, valid: str, flexible: str, api_key: int | None, fields: list[Field]) -> Schema:
    """One message spec: name, validVersions, flexibleVersions, apiKey and its fields."""
    return Schema(name, Versions.parse(valid), Versions.parse(flexible), api_key, tuple(fields))


_PRIMITIVE_DEFAULTS = {"int8": 0, "int16": 0, "uint16": 0, "int32": 0, "int64": 0,
                       "float64": 0.0, "bool": False, "string": "", "bytes": b"",
                       "records": None, "uuid": ZERO_UUID}


class _StructDefault:
    """Default of a struct-typed field without ``"default": "null"``: Kafka's generated
    constructor sets ``new Struct()`` (all fields at their defaults)."""

    def __repr__(self) -> str:
        return "STRUCT_DEFAULT"


STRUCT_DEFAULT = _StructDefault()


def _type_default(type: str, default: object) -> object:
    if default != "<type>":
        return default
    if type.startswith("[]"):
        return ()
    if type not in _PRIMITIVE_DEFAULTS:
        return STRUCT_DEFAULT
    return _PRIMITIVE_DEFAULTS[type]


_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@functools.lru_cache(maxsize=None)
def snake_case(name: str) -> str:
    return _WORD_BOUNDARY.sub("_", name).lower()


def _by_identity(cache: dict, key_objects: tuple, make):
    """A per-object cache keyed by identity: schemas and fields are frozen dataclasses whose
    hash walks every nested field, far dearer than the lookup it would save. The entry
    keeps its key objects alive, so an id is never reused for another object."""
    ident = tuple(map(id, key_objects))
    entry = cache.get(ident)
    if entry is None:
        entry = cache[ident] = (key_objects, make(*key_objects))
    return entry[1]


_ATTR_NAMES: dict = {}
_NESTED: dict = {}


def _attr_names(schema: Schema) -> dict[str, str]:
    """snake_case attribute name -> JSON name, once per schema: attribute access is on the
    scan's hot path (one TransactionLogValue per __transaction_state record), so the cache is
    looked up by the schema's id directly (the entry keeps the schema alive)."""
    entry = _ATTR_NAMES.get(id(schema))
    if entry is None:
        names: dict[str, str] = {}
        for f in schema.fields:
            names.setdefault(f.attr_name, f.json_name)
        entry = _ATTR_NAMES[id(schema)] = (schema, names)
    return entry[1]


# --------------------------------------------------------------------------- decoded values


class Message(Mapping):
    """A decoded message or struct: a read-only mapping JSON name -> value, in spec order,
    holding every field of the schema (defaults for fields outside ``version``, as Kafka's
    objects do). Attribute access uses snake_case (``msg.producer_id``); a spec field named
    ``Version`` (KRaft control records, ConsumerGroupRegularExpressionValue) is shadowed by
    the read version, so read it as ``msg["version"]``."""

    __slots__ = ("schema", "version", "_values", "unknown_tagged", "position")

    def __init__(self, schema: Schema, version: int, values: dict, unknown_tagged=(),
                 position: int = 0):
        self.schema = schema
        self.version = version
        self._values = values
        self.unknown_tagged = tuple(unknown_tagged)   # ((tag, raw bytes), ...)
        self.position = position

    def __getitem__(self, key: str):
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)  # copy/pickle probes, before __slots__ are set
        json_name = _attr_names(object.__getattribute__(self, "schema")).get(attr)
        if json_name is None:
            raise AttributeError(attr)
        return self._values[json_name]

    def __eq__(self, other) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return (self.schema.name, self.version, self._values, self.unknown_tagged) == (
            other.schema.name, other.version, other._values, other.unknown_tagged)

    __hash__ = None

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"{self.schema.name}[v{self.version}]({inner})"


class JavaDouble(float):
    """Marks a float in a JSON tree (Jackson ``DoubleNode``)."""


# --------------------------------------------------------------------------- reading


def _error(cls, message: str, pos: int, java: str | None, expected=None, found=None):
    err = cls(message, pos, expected=expected, found=found)
    err.java_message = java
    return err


def java_message(err: DecodeError) -> str:
    """``getMessage()`` of the exception Kafka would raise for ``err``, as Java's string
    concatenation prints it (``"null"`` for a message-less exception)."""
    text = getattr(err, "java_message", err.message)
    return "null" if text is None else text


#: The big-endian layout of each fixed-size scalar type of the specs.
FIXED_LAYOUTS = {"int8": INT8, "int16": INT16, "uint16": UINT16, "int32": INT32, "int64": INT64,
                 "float64": FLOAT64}


class _Reader:
    __slots__ = ("buf", "pos", "end", "lenient")

    def __init__(self, buf, pos: int, end: int, lenient: bool):
        self.buf, self.pos, self.end, self.lenient = buf, pos, end, lenient

    def fixed(self, layout: struct.Struct, what: str):
        if self.pos + layout.size > self.end:
            raise _error(TruncatedInput, f"{what} needs {layout.size} bytes, "
                         f"{max(self.end - self.pos, 0)} left", self.pos, None,
                         expected=layout.size, found=max(self.end - self.pos, 0))
        (value,) = layout.unpack_from(self.buf, self.pos)
        self.pos += layout.size
        return value

    def uvarint(self) -> int:
        pos = self.pos
        if pos < self.end:
            b = self.buf[pos]
            if b < 0x80:  # one byte: nearly every length, count and tag
                self.pos = pos + 1
                return b
        try:
            value, self.pos = read_unsigned_varint(self.buf, self.pos, self.end)
        except TruncatedInput as exc:
            exc.java_message = None
            raise
        # Java keeps it in an int: large values wrap to negative (then read as "null").
        return value - (1 << 32) if value >= 1 << 31 else value

    def raw(self, size: int, what: str) -> bytes:
        left = self.end - self.pos
        if size < 0:   # an unsigned varint past 2^31, wrapped negative as in Java
            raise _error(CorruptRecordError, f"{what} has negative size {size}", self.pos,
                         str(size), expected=">= 0", found=size)
        if size > left:
            raise _error(TruncatedInput, f"{what} needs {size} bytes, {left} left", self.pos,
                         f"Error reading byte array of {size} byte(s): only {left} byte(s) available",
                         expected=size, found=left)
        data = bytes(self.buf[self.pos:self.pos + size])
        self.pos += size
        return data

    def length(self, flexible: bool, wide: bool) -> int:
        if flexible:
            return self.uvarint() - 1
        return self.fixed(INT32 if wide else INT16, "length")


def decode_message(schema: Schema, buf, pos: int, version: int, end: int | None = None,
                   *, lenient: bool = False) -> tuple[Message, int]:
    """Decode ``schema`` at ``version`` from ``buf[pos:end]``; returns (message, next_pos).

    ``lenient`` reads versions outside ``validVersions`` the way Kafka's generated reader
    does when nothing checks them (``__cluster_metadata``); otherwise they raise
    UnknownVersion.
    """
    if not lenient and version not in schema.valid:
        raise _error(UnknownVersion, f"unknown {schema.name} version {version}", pos,
                     f"Found an unknown version {version} of {schema.name}",
                     expected=f"{schema.valid.lo}-{schema.valid.hi}", found=version)
    reader = _Reader(buf, pos, len(buf) if end is None else end, lenient)
    return _read_struct(reader, schema, version, True), reader.pos


def _nested_schema(f: Field, flexible: Versions | None, valid: Versions) -> Schema:
    """Nested structs share their message's version and flexible range."""
    return _by_identity(_NESTED, (f, flexible, valid),
                        lambda f, flexible, valid: Schema(f.element_type, valid, flexible, None, f.fields))


class _Slot(NamedTuple):
    """How one field of a schema is read at one version, worked out once (see _plan)."""
    field: Field
    name: str  # the JSON name, the key of the decoded values
    read: bool  # in the version and not tagged there: read in place
    nullable: bool
    array: bool
    type: str  # an array's element type, else the field's type
    layout: struct.Struct | None  # a fixed-size scalar (not an array) read with this layout
    default: object  # the value of a field not read; STRUCT_DEFAULT: built per message


class _Run(NamedTuple):
    """Fixed-size scalars next to each other in a version's bytes: one unpack (see _plan)."""
    names: tuple[str, ...]
    layout: struct.Struct
    slots: tuple[_Slot, ...]  # read one by one when the run does not fit: the error of the field


class _Plan(NamedTuple):
    flex: bool
    # Every field in spec order, a field not read at its default, one read at None (or
    # STRUCT_DEFAULT, built per message): copied per message, so that assigning a value
    # keeps the spec order whatever order the steps read the fields in.
    template: dict
    structs: tuple[_Slot, ...]  # fields not read whose default is a struct (STRUCT_DEFAULT)
    # The fields read in place, in byte order: a _Run, or (slot, reader) for a field read by
    # ``reader(r)``, made for its type by _reader.
    steps: tuple
    tags: dict[int, tuple[_Slot, object]]  # the tagged fields of the version by tag, (slot, reader)


_PLANS: dict[tuple[int, int], tuple[Schema, _Plan]] = {}
#: Plans kept: one per (schema, version) met, and a lenient read of damaged records can meet
#: any int16 version; past this many, plans are worked out per message and not kept.
_MAX_PLANS = 4096


def _plan(schema: Schema, version: int) -> _Plan:
    """The per-field decisions of _read_struct for ``schema`` at ``version`` (version ranges,
    tags, nullability, JSON names, layouts, a reader per type): the same for every message of
    a topic, and most of the reader's work when taken field by field (the scan reads one
    TransactionLogValue per ``__transaction_state`` record). Fixed-size scalars with nothing
    between them in the bytes are one _Run: fields not read take no bytes, so
    TransactionLogValue's producerId, producerEpoch, transactionTimeoutMs and
    transactionStatus are one unpack though tagged fields sit between them in the spec."""
    key = (id(schema), version)
    entry = _PLANS.get(key)
    if entry is not None:
        return entry[1]  # the entry keeps the schema alive, so its id is not reused
    flex = schema.flexible is not None and version in schema.flexible
    template: dict = {}
    structs: list[_Slot] = []
    steps: list = []
    run: list[_Slot] = []
    tags = {}

    def end_run():
        if run:
            layout = struct.Struct(">" + "".join(s.layout.format[1:] for s in run))
            steps.append(_Run(tuple(s.name for s in run), layout, tuple(run)))
            run.clear()

    for f in schema.fields:
        array = f.is_array
        tagged = f.tagged is not None and version in f.tagged
        slot = _Slot(f, f.json_name, version in f.versions and not tagged,
                     f.nullable is not None and version in f.nullable, array, f.element_type,
                     None if array else FIXED_LAYOUTS.get(f.type), f.default)
        template[slot.name] = None if slot.read else slot.default
        if not slot.read:
            if slot.default is STRUCT_DEFAULT:
                structs.append(slot)
        elif slot.layout is not None:
            run.append(slot)
        else:
            end_run()
            steps.append((slot, _reader(slot, version, flex, schema.flexible, schema.valid)))
        if flex and tagged and f.tag is not None:
            tags[f.tag] = (slot, _tagged_reader(slot, version, schema.flexible, schema.valid))
    end_run()
    plan = _Plan(flex, template, tuple(structs), tuple(steps), tags)
    if len(_PLANS) < _MAX_PLANS:
        _PLANS[key] = (schema, plan)
    return plan


def _short_length(buf, pos: int, end: int, flex: bool, wide: bool) -> tuple[int, int]:
    """(length or count, position after it) when it is read the short way: a one-byte
    unsigned varint (flexible), an int32 or int16 that fits; else (-1, pos), for the caller's
    full reader (nulls, long varints, truncation and its errors)."""
    if flex:
        if pos < end and buf[pos] < 0x80:
            return buf[pos] - 1, pos + 1
    elif wide:
        if pos + 4 <= end:
            return INT32.unpack_from(buf, pos)[0], pos + 4
    elif pos + 2 <= end:
        return INT16.unpack_from(buf, pos)[0], pos + 2
    return -1, pos


def _reader(slot: _Slot, version: int, flex: bool, flexible, valid):
    """``reader(r)``: reads ``slot``'s field at ``r.pos``, the same value and the same errors
    as _read_field. Strings, arrays of fixed-size scalars and (arrays of) structs, nearly all
    of a coordinator record's fields past its scalars, have a short way for well-formed bytes
    (no null, no long varint, room enough) decided once here; anything else is _read_field's."""
    f = slot.field

    def full(r):
        return _read_field(r, slot, version, flex, flexible, valid)

    element = FIXED_LAYOUTS.get(slot.type)
    if slot.array and element is not None:
        code, size = element.format[1:], element.size

        def read_scalars(r):
            buf, end = r.buf, r.end
            count, pos = _short_length(buf, r.pos, end, flex, True)
            if count >= 0 and pos + count * size <= end:
                r.pos = pos + count * size
                return struct.unpack_from(f">{count}{code}", buf, pos)
            return full(r)
        return read_scalars
    if not slot.array and slot.type == "string":
        def read_string(r):
            buf, end = r.buf, r.end
            size, pos = _short_length(buf, r.pos, end, flex, False)
            if 0 <= size <= 0x7FFF and pos + size <= end:
                r.pos = pos + size
                return java_utf8(bytes(buf[pos:pos + size]))
            return full(r)
        return read_string
    if f.fields is not None and (slot.array or not slot.nullable):
        nested = _nested_schema(f, flexible, valid)
        if not slot.array:
            return lambda r: _read_struct(r, nested, version, False)

        def read_structs(r):
            count, pos = _short_length(r.buf, r.pos, r.end, flex, True)
            if 0 <= count <= r.end - pos:
                r.pos = pos
                return tuple([_read_struct(r, nested, version, False) for _ in range(count)])
            return full(r)
        return read_structs
    return full


def _tagged_reader(slot: _Slot, version: int, flexible, valid):
    """``reader(r)`` of a tagged field, read in place of its tag."""
    if slot.layout is not None:
        layout, name = slot.layout, slot.name
        return lambda r: r.fixed(layout, name)
    return lambda r: _read_field(r, slot, version, True, flexible, valid, True)


def _read_struct(r: _Reader, schema: Schema, version: int, top: bool) -> Message:
    start = r.pos
    flexible, valid = schema.flexible, schema.valid
    if not top and version > valid.hi:
        raise _error(UnknownVersion, f"cannot read version {version} of {schema.name}", r.pos,
                     f"Can't read version {version} of {schema.name}",
                     expected=valid.hi, found=version)
    entry = _PLANS.get((id(schema), version))  # _plan's lookup, inline: a struct per call
    flex, template, structs, steps, tags = entry[1] if entry is not None else _plan(schema, version)
    values = template.copy()
    for slot in structs:
        values[slot.name] = _default_value(slot.field, version, flexible, valid)
    buf, end = r.buf, r.end
    for step in steps:
        if type(step) is _Run:
            layout = step.layout
            if r.pos + layout.size <= end:
                values.update(zip(step.names, layout.unpack_from(buf, r.pos)))
                r.pos += layout.size
            else:  # short: field by field, for the error of the field that does not fit
                for slot in step.slots:
                    values[slot.name] = _read_field(r, slot, version, flex, flexible, valid)
        else:  # (slot, reader)
            values[step[0].name] = step[1](r)
    unknown = []
    if flex:
        for _ in range(r.uvarint()):
            tag = r.uvarint()
            size = r.uvarint()
            known = tags.get(tag)
            if known is None:
                unknown.append((tag, r.raw(size, f"unknown tagged field {tag}")))
            else:
                values[known[0].name] = known[1](r)
    return Message(schema, version, values, unknown, start)


def _default_value(f: Field, version: int, flexible, valid):
    if f.default is not STRUCT_DEFAULT:
        return f.default
    schema = _nested_schema(f, flexible, valid)
    return Message(schema, version, {g.json_name: _default_value(g, version, flexible, valid)
                                     for g in schema.fields})


def is_empty_struct(msg: Message) -> bool:
    """True when ``msg`` equals a freshly constructed struct (Kafka's ``equals(new X())``)."""
    if msg.unknown_tagged:
        return False
    for f in msg.schema.fields:
        value = msg[f.json_name]
        if f.default is STRUCT_DEFAULT:
            if value is None or not is_empty_struct(value):
                return False
        elif _differs(value, f.default):
            return False
    return True


def _read_field(r: _Reader, slot: _Slot, version: int, flex: bool, flexible, valid,
               tagged: bool = False):
    start = r.pos
    f, nullable = slot.field, slot.nullable
    if nullable and f.fields is not None and not slot.array:
        # A nullable struct is preceded by a presence marker: int8 (-1 = null), or an
        # unsigned varint (<= 0 = null) when it sits in a tagged field.
        present = r.uvarint() > 0 if tagged else r.fixed(INT8, slot.name) >= 0
        if not present:
            return None
    if slot.array:
        count = r.length(flex, True)
        if count < 0:
            return _null(start, f, nullable)
        left = r.end - r.pos
        if count > left:
            raise _error(TruncatedInput, f"{slot.name}: {count} elements, {left} bytes left",
                         r.pos, f"Tried to allocate a collection of size {count}, but there are"
                         f" only {left} bytes remaining.", expected=f"<= {left}", found=count)
        return tuple(_read_one(r, f, slot.type, version, flex, flexible, valid, nullable)
                     for _ in range(count))
    return _read_one(r, f, slot.type, version, flex, flexible, valid, nullable)


def _read_one(r: _Reader, f: Field, type: str, version: int, flex: bool, flexible, valid,
              nullable: bool):
    layout = FIXED_LAYOUTS.get(type)
    if layout is not None:
        return r.fixed(layout, f.json_name)
    if type == "bool":
        return r.fixed(INT8, f.json_name) != 0
    if type == "uuid":
        hi = r.fixed(INT64, f.json_name)
        lo = r.fixed(INT64, f.json_name)
        return _uuid.UUID(int=((hi & (2**64 - 1)) << 64) | (lo & (2**64 - 1)))
    start = r.pos
    if type == "string":
        size = r.length(flex, False)
        if size < 0:
            return _null(start, f, nullable)
        if size > 0x7FFF:
            raise _error(CorruptRecordError, f"string {f.json_name} too long", r.pos,
                         f"string field {f.json_name} had invalid length {size}",
                         expected="<= 32767", found=size)
        return java_utf8(r.raw(size, f.json_name))
    if type in ("bytes", "records"):
        size = r.length(flex, True)
        if size < 0:
            return None if type == "records" else _null(start, f, nullable)
        return r.raw(size, f.json_name)
    if f.fields is not None:
        return _read_struct(r, _nested_schema(f, flexible, valid), version, False)
    raise _error(CorruptRecordError, f"unsupported type {type}", r.pos, None)


def _null(pos: int, f: Field, nullable: bool):
    if not nullable:
        raise _error(CorruptRecordError, f"non-nullable field {f.json_name} is null", pos,
                     f"non-nullable field {f.json_name} was serialized as null",
                     expected="not null", found=None)
    return None


# --------------------------------------------------------------------------- writing (tests)


def encode_message(schema: Schema, version: int, values: Mapping | None = None,
                   unknown_tagged=()) -> bytes:
    """Encode a message body (no version prefix) the way Kafka's generated ``write`` does;
    missing fields take their default. Used by tests and the test encoder."""
    out = bytearray()
    _write_struct(out, schema.fields, version, schema.flexible, values or {}, unknown_tagged)
    return bytes(out)


def _write_struct(out, fields, version, flexible, values, unknown_tagged=()):
    flex = flexible is not None and version in flexible
    tagged = []
    for f in fields:
        value = values.get(f.json_name, f.default)
        if f.tagged is not None and version in f.tagged:
            if _differs(value, f.default):
                body = bytearray()
                _write_field(body, f, version, flex, flexible, value, True)
                tagged.append((f.tag, bytes(body)))
        elif version in f.versions:
            _write_field(out, f, version, flex, flexible, value)
    if flex:
        tagged.extend(unknown_tagged)
        tagged.sort(key=lambda t: t[0])
        out += encode_unsigned_varint(len(tagged))
        for tag, body in tagged:
            out += encode_unsigned_varint(tag) + encode_unsigned_varint(len(body)) + body


def _write_length(out, n: int, flex: bool, wide: bool):
    if flex:
        out += encode_unsigned_varint(n + 1)
    else:
        out += (INT32 if wide else INT16).pack(n)


def _write_field(out, f, version, flex, flexible, value, tagged=False):
    if value is STRUCT_DEFAULT:
        value = {}
    if f.fields is not None and not f.is_array and f.nullable is not None \
            and version in f.nullable:
        if value is None:
            out += encode_unsigned_varint(0) if tagged else INT8.pack(-1)
            return
        out += encode_unsigned_varint(1) if tagged else INT8.pack(1)
    if f.is_array:
        if value is None:
            _write_length(out, -1, flex, True)
            return
        _write_length(out, len(value), flex, True)
        for item in value:
            _write_one(out, f, f.element_type, version, flex, flexible, item)
    else:
        _write_one(out, f, f.type, version, flex, flexible, value)


def _write_one(out, f, type, version, flex, flexible, value):
    layout = FIXED_LAYOUTS.get(type)
    if layout is not None:
        out += layout.pack(value)
    elif type == "bool":
        out += INT8.pack(1 if value else 0)
    elif type == "uuid":
        out += (value or ZERO_UUID).bytes
    elif type in ("string", "bytes", "records"):
        if value is None:
            _write_length(out, -1, flex, type != "string")
            return
        data = value.encode("utf-8") if type == "string" else bytes(value)
        _write_length(out, len(data), flex, type != "string")
        out += data
    else:
        items = value if isinstance(value, Mapping) else {}
        _write_struct(out, f.fields, version, flexible, items,
                      getattr(value, "unknown_tagged", ()))


def _differs(value, default) -> bool:
    if default is STRUCT_DEFAULT:
        return value is None or not isinstance(value, Message) or not is_empty_struct(value)
    if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)):
        return tuple(value) != tuple(default)
    return value != default


# --------------------------------------------------------------------------- JSON


def message_json(msg: Message, version: int | None = None) -> dict:
    """The JSON tree Kafka's ``<Name>JsonConverter.write(msg, version)`` builds; ``version``
    defaults to the version ``msg`` was read at and is passed down to nested structs."""
    if version is None:
        version = msg.version
    node: dict = {}
    for f in msg.schema.fields:
        value = msg[f.json_name]
        if f.tagged is not None and version in f.tagged:
            if _differs(value, f.default):
                node[f.json_name] = _json_value(f, value, version)
        elif version in f.versions:
            node[f.json_name] = _json_value(f, value, version)
    return node


def _json_value(f: Field, value, version: int):
    if value is None:
        return None
    if f.is_array:
        return [_json_scalar(f.element_type, v, version) for v in value]
    return _json_scalar(f.type, value, version)


def _json_scalar(type: str, value, version: int):
    if isinstance(value, Message):
        return message_json(value, version)
    if type == "uuid":
        return kafka_uuid(value)
    if type == "float64":
        return JavaDouble(value)
    return value


def kafka_uuid(value: _uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n",
                  "\f": "\\f", "\r": "\\r"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _escape(match: re.Match) -> str:
    ch = match.group()
    return _SHORT_ESCAPES.get(ch) or "\\u%04X" % ord(ch)


def jackson_string(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def java_double(value: float) -> str:
    """Java's ``Double.toString`` (digits from Python's shortest repr)."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    digits, exp = _shortest_digits(abs(value))
    if 1e-3 <= abs(value) < 1e7:
        point = exp + 1                      # digits before the decimal point
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole = digits[:point].ljust(point, "0")
        frac = digits[point:] or "0"
        return f"{sign}{whole}.{frac}"
    frac = digits[1:] or "0"
    return f"{sign}{digits[0]}.{frac}E{exp}"


def _shortest_digits(value: float) -> tuple[str, int]:
    text = repr(value)
    m = re.fullmatch(r"(\d+)(?:\.(\d*))?(?:e([+-]?\d+))?", text)
    whole, frac, e = m.group(1), m.group(2) or "", int(m.group(3) or 0)
    digits = (whole + frac).lstrip("0")
    lead_zeros = len(whole + frac) - len((whole + frac).lstrip("0"))
    exp10 = len(whole) - 1 + e - lead_zeros
    return digits.rstrip("0") or "0", exp10


def to_kafka_json(value) -> str:
    """Jackson's compact ``toString()`` of a JSON tree (or of a decoded Message)."""
    if isinstance(value, Message):
        value = message_json(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, JavaDouble) or isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return '"' + ("NaN" if math.isnan(value) else
                          ("Infinity" if value > 0 else "-Infinity")) + '"'
        return java_double(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return jackson_string(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return '"' + base64.b64encode(bytes(value)).decode("ascii") + '"'
    if isinstance(value, Mapping):
        return "{" + ",".join(jackson_string(k) + ":" + to_kafka_json(v)
                              for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(to_kafka_json(v) for v in value) + "]"
    raise TypeError(f"not a JSON tree value: {type(value).__name__}")


# --------------------------------------------------------------------------- coordinator records


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """A record of a coordinator topic (``CoordinatorRecordSerde``): the key is ``int16
    record type`` + key message, the value ``int16 version`` + value message, or a
    tombstone (``value`` None)."""
    record_type: int
    key: Message
    value: Message | None

    @property
    def value_version(self) -> int | None:
        return None if self.value is None else self.value.version


def decode_coordinator_record(types: Mapping, key, value) -> CoordinatorRecord:
    """Decode a coordinator key/value pair with ``types``: record type -> (key schema,
    value schema). Raises UnknownVersion for unknown record types and value versions.

    Kafka reads the key message *at version = record type* (its keys have one version
    and no version checks), so the key body is read at version 0 here.
    """
    if key is None:
        raise _error(CorruptRecordError, "coordinator record without a key", 0,
                     "message had a missing key", expected="key", found=None)
    if len(key) < 2:
        raise _error(TruncatedInput, "key version needs 2 bytes", 0,
                     "Could not read version from key's buffer.", expected=2, found=len(key))
    (record_type,) = INT16.unpack_from(key, 0)
    if record_type not in types:
        err = _error(UnknownVersion, f"unknown record type {record_type}", 0,
                     f"Found an unknown record type {record_type}", found=record_type)
        err.unknown_type = record_type
        raise err
    key_schema, value_schema = types[record_type]
    try:
        key_msg, _ = decode_message(key_schema, key, 2, 0)
    except DecodeError as exc:
        exc.java_message = (f"Could not read record with version {record_type} from key's "
                            f"buffer due to: {java_message(exc)}.")
        raise
    if value is None:
        return CoordinatorRecord(record_type, key_msg, None)
    if len(value) < 2:
        raise _error(TruncatedInput, "value version needs 2 bytes", 0,
                     "Could not read version from value's buffer.", expected=2, found=len(value))
    (version,) = INT16.unpack_from(value, 0)
    if not value_schema.valid.lo <= version <= value_schema.valid.hi:
        raise _error(UnknownVersion, f"unknown {value_schema.name} version {version}", 0,
                     f"Found an unknown record version {version} for {record_type} type",
                     expected=f"{value_schema.valid.lo}-{value_schema.valid.hi}", found=version)
    try:
        value_msg, _ = decode_message(value_schema, value, 2, version)
    except DecodeError as exc:
        exc.java_message = (f"Could not read record with version {version} from value's "
                            f"buffer due to: {java_message(exc)}.")
        raise
    return CoordinatorRecord(record_type, key_msg, value_msg)


def render_coordinator_record(types: Mapping, key, value, offset: int,
                              value_json=message_json, errors: list | None = None
                              ) -> tuple[str | None, str | None]:
    """What kafka-dump-log 4.1.1 prints after ``key: `` and `` payload: `` for a coordinator
    topic (``CoordinatorRecordMessageParser``); None means the part is not printed.

    * ``{"type":"<record type>","data":{key json}}`` / ``{"version":"<v>","data":{...}}``,
      both numbers as JSON *strings*; ``<DELETE>`` for a tombstone;
    * unknown record type: key ``Unknown record type T at offset O, skipping.``, no payload;
    * any other failure: key ``Error at offset O, skipping. <message>``, no payload.

    A record without a key makes Kafka's tool abort; we raise CorruptRecordError.
    Kafka's text hides the cause; when ``errors`` is a list, the DecodeError behind an
    ``Error at``/``Unknown record type`` text is appended to it (the dump reports it).
    """
    if key is None:
        raise _error(CorruptRecordError, f"Failed to decode message at offset {offset} using "
                     "the specified decoder (message had a missing key)", 0, None)
    try:
        rec = decode_coordinator_record(types, key, value)
    except DecodeError as exc:
        if errors is not None:
            errors.append(exc)
        unknown = getattr(exc, "unknown_type", None)
        if unknown is not None:
            return f"Unknown record type {unknown} at offset {offset}, skipping.", None
        return f"Error at offset {offset}, skipping. {java_message(exc)}", None
    key_text = '{"type":%s,"data":%s}' % (jackson_string(str(rec.key.schema.api_key)),
                                          to_kafka_json(message_json(rec.key)))
    if rec.value is None:
        return key_text, "<DELETE>"
    return key_text, '{"version":%s,"data":%s}' % (jackson_string(str(rec.value.version)),
                                                   to_kafka_json(value_json(rec.value)))
