"""A node's output held as its compact JSON, decoded on every read.

A completed node's output is held for the rest of the run by its record in
the materialized state and by the branch's memory index (one shared held
form, see :meth:`~cortex_agents.memory._index.MemoryIndex.extend`). As Python
objects a short output costs several times its JSON: a dict table, a string
object per value, a float object per number — ~295 bytes per stage in the
live benchmark (``{"finding": "...", "claim_ref": "c3"}``), against 86 bytes
for its UTF-8 JSON as one ``bytes`` object. Outputs are written once and read
seldom (a successor's inputs, a memory match, an export), so
:func:`hold` keeps that JSON and :func:`release` decodes it on each read:
~1 µs for such an output, about what the copy of a stage's inputs cost before
(and a decoded value is new, so it needs no copy).

**Exact, or not packed.** Only a value the trip rebuilds exactly is held as
JSON: dicts (of exactly ``dict``) with string keys, lists, strings, integers,
finite floats, booleans and ``None``, of exactly those types, nested at most
:data:`MAX_PACKED_DEPTH` levels. ``1``, ``1.0`` and
``True`` stay apart, ``-0.0`` stays negative, keys keep their order. Anything
else — a tuple, a set, a datetime, NaN, a dict subclass, a string with a lone
surrogate — is held as itself, so a read returns exactly what was stored
(such values only reach a fold that bypassed the storage checks: a stage's
output is plain JSON by the time it is recorded).

The held form is ``bytes`` for JSON, else the value itself; an output that
*is* ``bytes`` (never storable, but a fold does not check outputs) is wrapped
so that it cannot be taken for JSON.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any, Final

from cortex_agents.errors import InvalidOutput

__all__ = ["MAX_PACKED_DEPTH", "hold", "release", "released_copy"]

MAX_PACKED_DEPTH: Final = 128
"""Deepest nesting held as JSON (what a stored output may hold,
:data:`~cortex_agents.substrate._events.MAX_DEPTH`); deeper values are held as themselves,
so json's recursive decoder never meets a depth it could not read back."""
_SCALARS: Final = (str, int, bool, type(None))


def _refuse(value: Any) -> Any:
    # json's encoder asks its `default` for a TypeError; InvalidOutput is one (never reached:
    # values are walked first)
    raise InvalidOutput(f"a {type(value).__name__} has no JSON form")


def _encoder() -> Any:
    """``value -> JSON text``: json's C encoder made once (``JSONEncoder.encode`` makes one per
    call, ~1 µs of a short output's 1.5), with the arguments ``JSONEncoder`` itself passes it
    (the same from 3.11 to 3.13); json's Python encoder where the C one is missing."""
    portable = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
    make = getattr(json.encoder, "c_make_encoder", None)  # (undocumented: not in typeshed)
    if make is None:  # pragma: no cover  (CPython has it)
        return portable
    try:
        chunks = make(
            None, _refuse, json.encoder.encode_basestring, None, ":", ",", False, False, False
        )

        def fast(value: Any) -> str:
            return "".join(chunks(value, 0))

        probe = {"k": [1, 1.5, -0.0, "é\n", True, None], "": {}}
        if fast(probe) == portable(probe):
            return fast
    except Exception:  # pragma: no cover  (a CPython whose internal signature changed)
        pass
    return portable  # pragma: no cover


_encode: Final = _encoder()
# json.loads adds ~0.5 µs of argument checks to a short output's read; `scan_once` (set by
# JSONDecoder.__init__, not in typeshed) parses one value from an index
_scan: Final = getattr(json.JSONDecoder(), "scan_once", None) or (
    lambda text, _index: (json.loads(text), len(text))  # pragma: no cover  (CPython has it)
)


class _Verbatim:
    """An output that is itself ``bytes``, held so it is not read as JSON."""

    __slots__ = ("value",)

    def __init__(self, value: bytes) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _Verbatim)
            and type(self.value) is type(other.value)
            and (self.value == other.value)
        )

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return repr(self.value)


def hold(value: Any) -> Any:
    """The form a record holds ``value`` in: its compact UTF-8 JSON when the trip is exact,
    else the value itself (see the module docstring)."""
    if value is None:
        return None
    if type(value) is bytes:
        return _Verbatim(value)
    if not _exact_json(value):
        return value
    try:
        return _encode(value).encode("utf-8")
    except (UnicodeEncodeError, ValueError):  # a lone surrogate; an int past str()'s digit limit
        return value


def release(held: Any) -> Any:
    """The value :func:`hold` made ``held`` of (a new value each call when it was packed)."""
    kind = type(held)
    if kind is bytes:
        return _scan(held.decode("utf-8"), 0)[0]  # (str first: json's bytes path is slower)
    if kind is _Verbatim:
        return held.value
    return held


def released_copy(held: Any) -> Any:
    """Like :func:`release`, but never a value anyone else holds (a value kept as itself is deep-copied)."""
    if type(held) is bytes:
        return _scan(held.decode("utf-8"), 0)[0]
    return copy.deepcopy(release(held))


def _exact_json(value: Any) -> bool:
    """Whether ``value`` is made of exactly the types JSON reads back (iterative, depth-bounded:
    a value nested in itself is refused, not walked forever)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict:
            if depth >= MAX_PACKED_DEPTH:
                return False
            for key, child in item.items():
                if type(key) is not str:
                    return False
                if type(child) in _SCALARS:
                    continue  # (the common leaf, without a trip through the stack)
                stack.append((child, depth + 1))
        elif kind is list:
            if depth >= MAX_PACKED_DEPTH:
                return False
            stack.extend((child, depth + 1) for child in item)
        elif kind is float:
            if not math.isfinite(item):
                return False
        elif kind not in _SCALARS:
            return False
    return True
