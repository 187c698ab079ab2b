"""Body texts interned by the fields index: dense ids in order of first arrival, one string each.

The first batch of bodies is interned by hash in numpy; two different texts
with one hash must still get two ids (the batch falls back to a dict), and
bodies arriving later are interned by the lookup made from the first batch.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np

from cortex_agents.memory import ExtractedFields, MemorySnapshot
from cortex_agents.memory._fields import fields_of
from cortex_agents.substrate import NodeScheduled, StageCompleted, StageStarted, SubstrateLog
from tests.support.helpers import T0, snapshot


class Colliding(str):
    """A text whose hash is the same as every other's (the collision the check must catch)."""

    __slots__ = ()

    def __hash__(self) -> int:
        return 7


def by_text(output: object) -> ExtractedFields | None:
    """Reads an output ``{"text": t, "collide": bool}`` as its body (a colliding str if asked)."""
    if not isinstance(output, dict):
        return None
    text = output["text"]
    return ExtractedFields(None, Colliding(text) if output.get("collide") else text)


def expected_ids(bodies: list[str]) -> list[int]:
    """Dense ids in order of first arrival; -1 for an empty body."""
    ids: dict[str, int] = {}
    return [-1 if not b else ids.setdefault(b, len(ids)) for b in bodies]


def body_ids(snap: MemorySnapshot, extractor) -> tuple[list[int], list[str]]:
    view = snap.index
    order = [view.position(f"n{i:03d}") for i in range(view.n)]
    fields = fields_of(view, extractor)
    return fields.body_ids(np.asarray(order)).tolist(), [fields.body(i) for i in order]


def test_repeated_and_empty_bodies_get_dense_ids_and_share_one_string():
    bodies = ["b a", "", "c", "b a", "c", "", "d", "b a"]
    outputs = {f"n{i:03d}": {"text": "".join(list(b))} for i, b in enumerate(bodies)}  # new strs
    snap = snapshot(list(outputs), [], outputs=outputs)
    ids, texts = body_ids(snap, by_text)
    assert ids == expected_ids(bodies) == [0, -1, 1, 0, 1, -1, 2, 0]
    assert texts == bodies
    assert texts[0] is texts[3] is texts[7] and texts[2] is texts[4]


def test_different_texts_with_one_hash_get_different_ids():
    bodies = ["alpha", "beta", "alpha", "gamma", "beta"]
    outputs = {f"n{i:03d}": {"text": b, "collide": True} for i, b in enumerate(bodies)}
    snap = snapshot(list(outputs), [], outputs=outputs)
    ids, texts = body_ids(snap, by_text)
    assert ids == [0, 1, 0, 2, 1]
    assert texts == bodies


def test_bodies_arriving_after_the_first_batch_reuse_and_extend_its_ids():
    bodies = ["x y", "z", "", "x y", "w", "z", "v", ""]
    events: list = []
    for i, body in enumerate(bodies):
        node_id, at = f"n{i:03d}", T0 + timedelta(seconds=i)
        events += [
            NodeScheduled(node_id=node_id, kind="work", at=at),
            StageStarted(node_id=node_id, at=at),
            StageCompleted(node_id=node_id, at=at, output={"text": body}),
        ]
    half = len(events) // 2
    log = SubstrateLog(events[:half])
    fields_of(MemorySnapshot.from_log(log, T0).index, by_text)  # the first batch: interned by hash
    log = log.appended(events[half:])  # the later ones: by the lookup
    ids, texts = body_ids(MemorySnapshot.from_log(log, T0), by_text)
    assert ids == expected_ids(bodies) == [0, 1, -1, 0, 2, 1, 3, -1]
    assert texts == bodies


def test_distinct_bodies_with_one_empty_body_number_the_others_densely():
    bodies = ["first", "second", "", "third"]
    outputs = {f"n{i:03d}": {"text": b} for i, b in enumerate(bodies)}
    snap = snapshot(list(outputs), [], outputs=outputs)
    ids, texts = body_ids(snap, by_text)
    assert ids == [0, 1, -1, 2]
    assert texts == bodies
    assert fields_of(snap.index, by_text).fields.body_texts == ["first", "second", "third"]
