"""``paused_gc``: a bulk build's containers skip the young collections; a bind's do not."""

from __future__ import annotations

import gc

import pytest

from cortex_agents.memory._bulk import PROMOTE_AT, paused_gc


@pytest.fixture
def collector():
    gc.collect()
    was = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    if not was:
        gc.disable()


def _oldest(obj: object) -> bool:
    return any(o is obj for o in gc.get_objects(generation=2))


def test_a_bulk_build_leaves_its_containers_in_the_oldest_generation(collector):
    with paused_gc():
        assert not gc.isenabled()
        built = [[] for _ in range(PROMOTE_AT + 1)]
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert _oldest(built[0]) and _oldest(built[-1])  # moved there, never traversed young


def test_a_small_block_leaves_the_young_generation_alone(collector):
    with paused_gc():
        built = [[] for _ in range(1000)]
    assert gc.isenabled() and not _oldest(built[0])


def test_objects_the_application_froze_stay_frozen(collector):
    gc.freeze()
    frozen = gc.get_freeze_count()
    with paused_gc():
        built = [[] for _ in range(PROMOTE_AT + 1)]
    assert gc.get_freeze_count() == frozen and not _oldest(built[0])
