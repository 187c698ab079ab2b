"""Seed 003's connector per model call: in a tool loop the model reads its scratch memory as it
is now (after its own writes), at its placement on every call; bad settings fail early."""

from __future__ import annotations

from datetime import timedelta

import pytest
from langchain_core.messages import SystemMessage

from cortex_agents.errors import InvalidArgument, InvalidWire
from cortex_agents.persistence import memory_saver
from cortex_agents.runtime import Runtime, StageContext, TickingClock, WireBuilder
from cortex_agents.scratch import open_scratch
from cortex_agents.scratch._connector import MEMORY_MESSAGE_ID, connector_problems
from cortex_agents.stages import converse
from tests.support.chat import ScriptedChatModel, call, say
from tests.support.helpers import T0


def keeper(ctx: StageContext) -> dict:
    return {"said": str(converse(ctx, system="You keep notes.", user="work").message.content)}


def run(placement: str, content: str = "tree") -> ScriptedChatModel:
    chat = ScriptedChatModel(
        script={
            "You keep notes": [
                call("memory", {"command": "append", "path": "/notes/todo", "content": "c2"}, "a"),
                call("memory", {"command": "append", "path": "/notes/done", "content": "c1"}, "b"),
                say("noted"),
            ]
        }
    )
    wire = (
        WireBuilder("notes")
        .kind("k", keeper)
        .stage(
            "keeper",
            "k",
            scratch="per_thread",
            config={
                "tools": {"max_rounds": 3},
                "scratch_connector": {"placement": placement, "content": content},
            },
        )
        .build()
    )
    with open_scratch(None) as scratch:
        runtime = Runtime(
            wire,
            memory_saver(),
            clock=TickingClock(T0, timedelta(seconds=1)),
            services={"chat_model": chat},
            scratch=scratch,
        )
        assert runtime.run("t").complete
    return chat


def memory_messages(request: dict) -> list[tuple[int, str]]:
    return [
        (i, str(m.content))
        for i, m in enumerate(request["messages"])
        if isinstance(m, SystemMessage) and m.id == MEMORY_MESSAGE_ID
    ]


@pytest.mark.parametrize("placement", ["after_system", "last_message"])
def test_every_model_call_sees_the_memory_as_it_is_now_at_its_placement(placement):
    chat = run(placement)
    requests = chat.requests
    assert len(requests) == 3
    shown = []
    for request in requests:
        ((index, text),) = memory_messages(request)  # exactly one memory message per call
        expected = len(request["messages"]) - 1 if placement == "last_message" else 1
        assert index == expected
        shown.append(("todo" in text, "done" in text))
    # before any write, after the first, after the second
    assert shown == [(False, False), (True, False), (True, True)]


def test_full_content_shows_the_text_the_model_just_wrote():
    requests = run("last_message", content="full").requests
    ((_, last),) = memory_messages(requests[-1])
    assert "==> /notes/done <==\nc1" in last and "==> /notes/todo <==\nc2" in last


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"max_chars": 50}, "max_chars"),
        ({"max_chars": True}, "max_chars"),
        ({"max_chars": 10**9}, "max_chars"),
        ({"placement": "first"}, "placement"),
        ({"content": "everything"}, "content"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_connector_settings_are_checked_with_the_field_named(settings, field):
    where = "stages[0].config.scratch_connector"
    (problem,) = connector_problems(settings, where)
    assert problem.location == f"{where}.{field}"
    assert connector_problems({"max_chars": 100, "placement": "last_message"}, where) == []
    assert connector_problems(None, where) == []
    assert connector_problems("tree", where)[0].location == where


def test_a_wire_with_a_bad_connector_setting_is_refused_when_it_is_built():
    builder = (
        WireBuilder("notes")
        .kind("k", keeper)
        .stage("keeper", "k", scratch="global", config={"scratch_connector": {"max_chars": 99}})
    )
    with pytest.raises(InvalidWire) as refused:
        builder.build()
    (problem,) = refused.value.problems
    assert problem.location == "stages[0].config.scratch_connector.max_chars"
    assert "at least 100" in problem.message or ">= 100" in problem.message


def test_the_stage_reads_its_settings_through_the_same_check():
    from cortex_agents.scratch._connector import connector_from_config

    with pytest.raises(InvalidArgument, match=r"config\.scratch_connector\.max_chars"):
        connector_from_config({"max_chars": 99})
    assert connector_from_config(None).max_chars == 4000
