"""A read-only value for a job's tasks, loaded once per Python worker process, without a broadcast.

On classic Spark the scan hands its tasks the coordinator's index as a broadcast variable
(spark_jobs.scan.for_tasks): a reused Python worker loads it once and keeps it for its later
tasks. Spark Connect has no SparkContext, so no broadcast: a value the client puts in a task's
closure travels in the plan and is unpickled again by every task, which on the 30,000-replica
copy's 23,501 transactional ids costs ~0.4 s a task.

:class:`Shared` keeps the broadcast's economy with nothing but pickling. In the client it holds
the value and its pickled bytes (``payload``), made once, and a key naming them; pickled into a
closure it is just (key, payload). Unpickled in a Python worker it is a handle: the first
``.value`` asked for in that process unpickles the payload and keeps the value in this module,
under the key; every later task of the process (Spark reuses its Python workers) finds it there.
The payload's bytes still travel with every task (a plain copy of them, no object built), so
the value should be what a broadcast would hold: megabytes, not gigabytes. For an index of
23,501 transactional ids (a 3.2 MB closure), the unpickling a task does took 0.44 s a task as a
plain closure value, and 0.30 s for a worker's first task, 0.08 ms for each later one, as a
Shared (2026-12-06, docs/spark.md).

A process keeps the values of the last :data:`KEPT` keys it was asked for (a Connect server's
workers serve one scan after another), each scan's value under a key of its own.

This module must be imported by reference on the workers (as logscan is), never pickled by
value (cloudpickle.register_pickle_by_value): its cache is what lives on between tasks.
"""

from __future__ import annotations

import pickle
import threading
import uuid
from collections import OrderedDict
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: Values a process keeps, the most recently used first out last.
KEPT = 4

_values: "OrderedDict[str, Any]" = OrderedDict()
_lock = threading.Lock()
#: Payloads unpickled in this process (tests count them).
loads = 0


class Shared(Generic[T]):
    """``Shared(value)``: ``.value`` is ``value`` in this process and, unpickled once per
    process, in every Python worker the object is pickled to. ``destroy()`` forgets it here
    (the broadcast's call, so either can be handed to the same code)."""

    __slots__ = ("key", "_payload", "_value")

    def __init__(self, value: T, *, key: str | None = None) -> None:
        self.key = key or uuid.uuid4().hex
        self._payload: bytes | None = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        self._value = value

    @property
    def value(self) -> T:
        if self._value is _UNLOADED:
            if self._payload is None:
                raise ValueError(f"shared value {self.key} was destroyed")
            self._value = _load(self.key, self._payload)
        return self._value

    def destroy(self) -> None:
        self._value, self._payload = _UNLOADED, None
        with _lock:
            _values.pop(self.key, None)

    def __reduce__(self):
        if self._payload is None:
            raise ValueError(f"shared value {self.key} was destroyed: it cannot go to tasks")
        return _handle, (self.key, self._payload)

    def __repr__(self) -> str:
        return f"Shared({self.key}, {len(self._payload or b'')} bytes)"


_UNLOADED = object()


def _handle(key: str, payload: bytes) -> Shared:
    """What unpickling gives: a handle, its value not loaded (cheap: every task does this)."""
    handle = Shared.__new__(Shared)
    handle.key, handle._payload, handle._value = key, payload, _UNLOADED
    return handle


def _load(key: str, payload: bytes) -> Any:
    """The value under ``key`` in this process: unpickled from ``payload`` the first time."""
    global loads
    with _lock:
        if key in _values:
            _values.move_to_end(key)
            return _values[key]
        value = pickle.loads(payload)
        loads += 1
        _values[key] = value
        while len(_values) > KEPT:
            _values.popitem(last=False)
        return value
