"""Extractors: from a node's raw output to the fields memory ranks and filters on.

An extractor is any callable ``output -> ExtractedFields | None``. It sees the
output only; when it finds no routing key the pipeline uses the node's kind,
and ``None`` means "nothing to extract" (empty body, routing key = kind).

:func:`default_extractor` peels the wire envelope in both shapes::

    {"contract": C, "value": V}                          -> V
    {"values": [{"contract": C, "value": V}, ...]}       -> the first V

then takes the routing key from the first non-empty string among ``slot``,
``claim_ref``, ``claimRef``, ``routing_key``, and joins every non-empty string
leaf, in document order, with single spaces as the body text.

:func:`projection_extractor` decodes the output as a declared pydantic model
and projects a slice of it (seed 001, F7).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ValidationError

__all__ = [
    "ROUTING_KEY_FIELDS",
    "ExtractedFields",
    "Extractor",
    "ReadFields",
    "default_extractor",
    "fields_of",
    "peel_envelope",
    "projection_extractor",
    "read_outputs",
]

ROUTING_KEY_FIELDS: Final = ("slot", "claim_ref", "claimRef", "routing_key")

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class ExtractedFields:
    """What memory reads of a node's output.

    Attributes:
        routing_key: The key a query's ``routing_key`` must equal; ``None``
            lets the pipeline fall back to the node's kind.
        body_text: The text the semantic scorer compares with the query text.
        evidence: Supporting strings (the ``evidence`` field of the output).
    """

    routing_key: str | None
    body_text: str
    evidence: tuple[str, ...] = ()
    projected: Any = None
    """The slice a typed projection read (``None``: no projection; matches carry the raw output)."""


Extractor = Callable[[Any], ExtractedFields | None]

_NOT_DECODED: Final = ExtractedFields(None, "", (), MappingProxyType({}))
_EMPTY: Final = ExtractedFields(None, "", ())


def _is_envelope(value: Any) -> bool:
    return isinstance(value, Mapping) and "contract" in value and "value" in value


def peel_envelope(output: Any) -> Any:
    """Unwrap a single value envelope or the first entry of a value set."""
    if _is_envelope(output):
        return output["value"]
    if isinstance(output, Mapping):
        values = output.get("values")
        if isinstance(values, list) and values and _is_envelope(values[0]):
            return values[0]["value"]
    return output


def _string_leaves(value: Any, into: list[str] | None = None) -> list[str]:
    """Every non-empty string leaf of ``value``, in document order (appended to ``into``).

    A list filled by recursion, not a generator: extraction runs once per
    node when an index is built, and nested generators cost several times more.
    """
    leaves = [] if into is None else into
    kind = type(value)
    if kind is str:
        if value:
            leaves.append(value)
    elif kind is dict:  # the common cases, without the ABC checks below
        for item in value.values():
            _string_leaves(item, leaves)
    elif kind is list:
        for item in value:
            _string_leaves(item, leaves)
    elif value is None:
        pass
    elif isinstance(value, str):
        if value:
            leaves.append(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            _string_leaves(item, leaves)
    elif isinstance(value, list | tuple):
        for item in value:
            _string_leaves(item, leaves)
    return leaves


def fields_of(value: Any) -> ExtractedFields:
    """Routing key, body text and evidence of an already-peeled value."""
    routing_key = None
    evidence: tuple[str, ...] = ()
    if isinstance(value, Mapping):
        for name in ROUTING_KEY_FIELDS:
            candidate = value.get(name)
            if isinstance(candidate, str) and candidate:
                routing_key = candidate
                break
        evidence = tuple(_string_leaves(value.get("evidence")))
    return ExtractedFields(routing_key, " ".join(_string_leaves(value)), evidence)


def default_extractor(output: Any) -> ExtractedFields | None:
    """Peel the envelope, then read routing key, body text and evidence."""
    if output is None:
        return None
    return fields_of(peel_envelope(output))


class ReadFields:
    """What an extractor reads of a batch of outputs, as columns (one entry per output).

    Attributes:
        routing_keys: The routing key of each (``None``: the pipeline falls back to the kind).
        bodies: The body text of each.
        evidence: The evidence strings of each.
        projected: The projected slice of each (``None``: no projection).
    """

    __slots__ = ("bodies", "evidence", "projected", "routing_keys")

    def __init__(self) -> None:
        self.routing_keys: list[str | None] = []
        self.bodies: list[str] = []
        self.evidence: list[tuple[str, ...]] = []
        self.projected: list[Any] = []


def read_outputs(extractor: Extractor, outputs: Sequence[Any]) -> ReadFields:
    """What ``extractor`` reads of each output (an extractor's ``None``: empty fields).

    For :func:`default_extractor` the same fields are read without building an
    :class:`ExtractedFields` per output, and with the dict and list checks
    inline — an index built from a whole run reads every output here, and
    those calls were a third of its cost. Any other shape (a ``Mapping`` that
    is not a dict, a string subclass) takes the general functions, so what is
    read never differs from ``default_extractor(output)``.
    """
    read = ReadFields()
    keys, bodies, evidence, projected = (
        read.routing_keys,
        read.bodies,
        read.evidence,
        read.projected,
    )
    if extractor is not default_extractor:
        for output in outputs:
            fields = extractor(output) or _EMPTY
            keys.append(fields.routing_key)
            bodies.append(fields.body_text)
            evidence.append(tuple(fields.evidence))
            projected.append(fields.projected)
        return read
    for output in outputs:
        value = output
        if type(output) is dict:
            if "contract" in output and "value" in output:
                value = output["value"]
            elif "values" in output:
                value = peel_envelope(output)
        elif output is not None:
            value = peel_envelope(output)
        if type(value) is not dict:
            fields = fields_of(value) if output is not None else _EMPTY
            keys.append(fields.routing_key)
            bodies.append(fields.body_text)
            evidence.append(fields.evidence)
            projected.append(None)
            continue
        key = None
        for name in ROUTING_KEY_FIELDS:
            candidate = value.get(name)
            if isinstance(candidate, str) and candidate:
                key = candidate
                break
        keys.append(key)
        leaves: list[str] = []
        for item in value.values():  # (one level inline: most leaves are strings)
            if type(item) is str:
                if item:
                    leaves.append(item)
            else:
                _string_leaves(item, leaves)
        bodies.append(" ".join(leaves))
        found = value.get("evidence")
        evidence.append(() if found is None else tuple(_string_leaves(found)))
        projected.append(None)
    return read


def projection_extractor(
    model: type[M],
    projection: Callable[[M], Any] = lambda artifact: artifact,
) -> Extractor:
    """An extractor that decodes the peeled output as ``model`` and projects a slice.

    Args:
        model: The declared artifact type of the node's output.
        projection: Maps the decoded artifact to its slice. The slice may be
            an :class:`ExtractedFields` (used as is), a pydantic model, a
            mapping or a string (read with the default field rules).

    Returns:
        An extractor whose fields carry the slice as ``projected`` (a match
        then holds the slice, never the full artifact — seed 001, F7). An
        output that does not decode as ``model`` gives an empty body and an
        empty slice, so nodes of other types show nothing of their payload.
    """

    def extract(output: Any) -> ExtractedFields | None:
        if output is None:
            return None
        try:
            artifact = model.model_validate(peel_envelope(output))
        except ValidationError:
            return _NOT_DECODED
        sliced = projection(artifact)
        if isinstance(sliced, ExtractedFields):
            if sliced.projected is not None:
                return sliced
            shown = {"routing_key": sliced.routing_key, "body_text": sliced.body_text}
            return ExtractedFields(sliced.routing_key, sliced.body_text, sliced.evidence, shown)
        if isinstance(sliced, BaseModel):
            sliced = sliced.model_dump(mode="json")
        fields = fields_of(sliced)
        return ExtractedFields(fields.routing_key, fields.body_text, fields.evidence, sliced)

    extract.__qualname__ = f"projection_extractor({model.__name__})"
    return extract
