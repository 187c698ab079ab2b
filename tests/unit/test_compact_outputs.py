"""Node outputs held as their compact JSON: smaller, shared with the memory index, read back exactly."""

from __future__ import annotations

import dataclasses
import math
import sys
from collections import OrderedDict
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_agents.memory import MemorySnapshot, default_extractor
from cortex_agents.memory._fields import fields_of
from cortex_agents.substrate import (
    NodeRecord,
    NodeScheduled,
    StageCompleted,
    StageStarted,
    SubstrateLog,
)
from cortex_agents.substrate._compact import MAX_PACKED_DEPTH, hold, release
from cortex_agents.substrate._events import MAX_DEPTH
from tests.support.helpers import T0, at

VALUES = settings(max_examples=300, deadline=None)


def exactly(a: object, b: object, *, zones: bool = True) -> bool:
    """The same value of the same types all the way down (``1``, ``1.0``, ``True`` apart;
    ``-0.0`` apart from ``0.0``; NaN equal to NaN; dict keys in the same order; times in
    the same time zone object unless ``zones`` is false: a deep copy copies it)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if list(x) != list(y) or not all(type(k) is type(j) for k, j in zip(x, y, strict=True)):
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list | tuple):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, set | frozenset):
            if x != y:
                return False
        elif isinstance(x, float):
            if math.isnan(x):
                if not math.isnan(y):
                    return False
            elif x != y or math.copysign(1.0, x) != math.copysign(1.0, y):
                return False
        elif isinstance(x, datetime):
            if x != y or x.tzinfo != y.tzinfo or (zones and x.tzinfo is not y.tzinfo):
                return False
        elif x != y:
            return False
    return True


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1.0, -0.0, 0.0, 1e16, 5e-324, 2**63 * 1.0]),
    st.text(max_size=8),
    st.sampled_from(["\ud800", "a\udfffb", "café", "東京", "\x00", '"\\']),  # lone surrogates too
    st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=2))])),
    st.binary(max_size=4),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=5), inner, max_size=4),
        st.dictionaries(st.integers(-3, 3), inner, max_size=2),  # keys JSON would turn to strings
        st.dictionaries(st.text(max_size=3), inner, max_size=2).map(OrderedDict),
        st.frozensets(st.integers(-5, 5), max_size=3),
    ),
    max_leaves=12,
)


@VALUES
@given(values)
def test_every_output_reads_back_exactly_as_it_was_given(value):
    record = NodeRecord(id="a", kind="k", captured_at=T0, output=value)
    assert exactly(record.output, value)
    assert exactly(record.output_copy(), value, zones=False)
    if isinstance(value, dict | list) and type(record.held_output) is bytes:
        assert record.output is not record.output  # decoded anew on every read


plain_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)
plain_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        plain_text,
        st.floats(allow_nan=False, allow_infinity=False),
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(plain_text, inner, max_size=4),
    max_leaves=20,
)


@VALUES
@given(plain_json)
def test_plain_json_is_held_as_its_utf8_text(value):
    held = hold(value)
    assert held is None if value is None else type(held) is bytes
    assert exactly(release(held), value)


def test_what_json_would_not_rebuild_is_held_as_the_object_itself():
    kept = [
        (1, 2),
        {"when": datetime(2026, 1, 1, tzinfo=UTC)},
        {"x": float("nan")},
        [float("inf")],
        {1: "one"},
        OrderedDict(a=1),
        {"tags": {"a", "b"}},
        {"s": "\ud800"},
        10**5000,  # past str()'s digit limit
    ]
    for value in kept:
        assert hold(value) is value
    raw = b'{"a":1}'  # bytes is not JSON, and must not be read as packed JSON either
    assert release(hold(raw)) is raw and hold(raw) == hold(b'{"a":1}') != hold(b"{}")


def test_json_types_stay_apart_through_the_trip():
    value = {"int": 1, "float": 1.0, "bool": True, "neg_zero": -0.0, "big": 2**63, "none": None}
    back = release(hold(value))
    assert [type(v) for v in back.values()] == [int, float, bool, float, int, type(None)]
    assert math.copysign(1.0, back["neg_zero"]) == -1.0 and list(back) == list(value)
    # records follow JSON: outputs of different JSON types are different outputs
    one = NodeRecord(id="a", kind="k", captured_at=T0, output={"x": 1})
    assert one == NodeRecord(id="a", kind="k", captured_at=T0, output={"x": 1})
    assert one != NodeRecord(id="a", kind="k", captured_at=T0, output={"x": 1.0})


def test_nesting_beyond_the_stored_bound_is_held_as_itself():
    assert MAX_PACKED_DEPTH == MAX_DEPTH  # what a stored output may hold, packed
    deep: object = "leaf"
    for _ in range(MAX_DEPTH):
        deep = [deep]
    assert type(hold(deep)) is bytes and exactly(release(hold(deep)), deep)
    deeper = [deep]
    assert hold(deeper) is deeper
    loop: list[object] = []
    loop.append(loop)
    assert hold(loop) is loop  # nested in itself: refused by the depth bound, not walked forever


def test_a_copy_of_the_output_is_never_shared():
    packed = NodeRecord(id="a", kind="k", captured_at=T0, output={"xs": [1, 2]})
    first = packed.output_copy()
    first["xs"].append(3)
    assert packed.output == {"xs": [1, 2]} and packed.output_copy() == {"xs": [1, 2]}
    kept = NodeRecord(id="b", kind="k", captured_at=T0, output={"xs": (1, 2)})  # a tuple: as itself
    copied = kept.output_copy()
    assert copied == {"xs": (1, 2)} and copied is not kept.output


def deep_size(value: object) -> int:
    """Bytes of ``value`` and what it holds, keys left out (interned: shared by every output)."""
    seen: set[int] = set()
    stack, total = [value], 0
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return total


def settled_log(outputs: list[object]) -> SubstrateLog:
    events: list[object] = []
    for i, output in enumerate(outputs):
        events += [
            NodeScheduled(node_id=f"n{i}", kind="work", at=at(i)),
            StageStarted(node_id=f"n{i}", at=at(i)),
            StageCompleted(node_id=f"n{i}", at=at(i), output=output),
        ]
    return SubstrateLog(events)


def test_the_fold_holds_a_short_output_in_under_a_third_of_its_objects_bytes():
    output = {"finding": "dose focus gain remote", "claim_ref": "c4"}  # bench_live's shape
    state = settled_log([output]).state
    held = state.nodes["n0"].held_output
    assert type(held) is bytes and 3 * sys.getsizeof(held) < deep_size(output)
    assert state.nodes["n0"].output == output


def test_the_memory_index_holds_the_records_own_held_outputs_not_copies():
    outputs = [{"finding": f"dose effect {i}"} for i in range(5)] + [{"tags": ("a", "b")}]
    log = settled_log(outputs)
    view = MemorySnapshot.from_log(log, at(60)).index  # the branch's index, extended
    index, state = view.index, log.state
    for i in range(len(outputs)):
        held = state.nodes[f"n{i}"].held_output
        assert index.outputs[index.pos[f"n{i}"]] is held
    assert type(index.outputs[0]) is bytes and index.outputs[5] is state.nodes["n5"].held_output
    # and memory reads them as the outputs they are
    fields = fields_of(view, default_extractor)
    assert [fields.body(index.pos[f"n{i}"]) for i in range(5)] == [
        default_extractor(o).body_text for o in outputs[:5]
    ]


def test_a_snapshot_index_holds_the_records_held_outputs():
    records = [
        NodeRecord(
            id=f"n{i}",
            kind="work",
            status="completed",
            captured_at=at(i),
            completed_at=at(i),
            output={"finding": f"risk {i}"},
        )
        for i in range(3)
    ]
    snapshot = MemorySnapshot.of(records, [], at(10))
    index = snapshot.index.index
    assert all(index.outputs[i] is records[i].held_output for i in range(3))
    assert fields_of(snapshot.index, default_extractor).body(2) == "risk 2"


def test_dataclasses_replace_keeps_or_changes_the_output():
    record = NodeRecord(id="a", kind="k", captured_at=T0, output={"x": [1, 2.5]})
    settled = dataclasses.replace(record, status="completed")
    assert settled.output == {"x": [1, 2.5]} and settled.held_output is record.held_output
    changed = dataclasses.replace(record, output=(1, 2))
    assert changed.output == (1, 2) and record.output == {"x": [1, 2.5]}
    assert NodeRecord(id="b", kind="k", captured_at=T0).output is None
