"""Scratch memory wired into stages: only declared stages get the tool and the connector."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cortex_agents.errors import InvalidArgument, InvalidWire
from cortex_agents.persistence import memory_saver, open_saver
from cortex_agents.runtime import Runtime, StageContext, TickingClock, WireBuilder
from cortex_agents.scratch import open_scratch
from cortex_agents.stages import converse
from cortex_agents.substrate import ToolCallMade
from tests.support.chat import ScriptedChatModel, call, say
from tests.support.helpers import T0

MEMORY_MESSAGE = "cortex-scratch-memory"


def talk(ctx: StageContext) -> dict:
    result = converse(ctx, system=f"You are {ctx.stage_id}.", user="work")
    return {"said": str(result.message.content)}


def wire(scope: str = "per_thread"):
    return (
        WireBuilder("notes")
        .kind("k", talk)
        .stage("keeper", "k", scratch=scope, config={"tools": {"first": "memory"}})
        .stage("plain", "k", after=["keeper"])
        .build()
    )


def chat() -> ScriptedChatModel:
    return ScriptedChatModel(
        script={
            "You are keeper": [
                call("memory", {"command": "append", "path": "/notes/todo", "content": "check c2"}),
                say("noted"),
            ],
            "You are plain": [
                call("memory", {"command": "read", "path": "/notes/todo"}, "forged"),
                say("done"),
            ],
        }
    )


def run(runtime: Runtime, thread: str):
    return runtime.run(thread)


def make(backend, model, scope="per_thread", saver=None) -> Runtime:
    clock = TickingClock(T0, timedelta(seconds=1))
    return Runtime(
        wire(scope),
        saver or memory_saver(),
        clock=clock,
        services={"chat_model": model},
        scratch=backend,
    )


def test_only_the_declared_stage_gets_the_tool_and_the_connector():
    model = chat()
    with open_scratch(None) as backend:
        result = make(backend, model).run("t1")
        assert result.complete
        keeper = [r for r in model.requests if r["system"].startswith("You are keeper")]
        plain = [r for r in model.requests if r["system"].startswith("You are plain")]
        assert [t["function"]["name"] for t in keeper[0]["tools"]] == ["memory"]
        assert any(m.id == MEMORY_MESSAGE for m in keeper[0]["messages"])  # the connector ran
        assert all("tools" not in r for r in plain)
        assert not any(m.id == MEMORY_MESSAGE for m in plain[0]["messages"])
        assert (
            backend.bind("keeper", scope="per_thread", thread_id="t1").read("/notes/todo")
            == "check c2"
        )
        # the forged call from the stage without scratch memory ran nothing
        refused = [e for e in result.log if isinstance(e, ToolCallMade) and e.node_id == "plain"]
        assert refused[0].result["status"] == "error"
        assert "not available in this stage" in refused[0].result["content"]


def test_per_thread_memory_is_per_thread_and_global_memory_is_shared(tmp_path):
    db = tmp_path / "run.db"
    with open_saver(db) as saver, open_scratch(db) as backend:
        per_thread = make(backend, chat(), "per_thread", saver)
        per_thread.run("t1")
        second = chat()
        make(backend, second, "per_thread", saver).run("t2")
        fresh = next(r for r in second.requests if r["system"].startswith("You are keeper"))
        memory_text = next(m.content for m in fresh["messages"] if m.id == MEMORY_MESSAGE)
        assert (
            "check c2" not in memory_text and "todo" not in memory_text
        )  # t2 did not see t1's notes
    with open_saver(tmp_path / "g.db") as saver, open_scratch(tmp_path / "g.db") as backend:
        make(backend, chat(), "global", saver).run("g1")
        later = chat()
        make(backend, later, "global", saver).run("g2")
        seen = next(r for r in later.requests if r["system"].startswith("You are keeper"))
        assert "todo" in next(m.content for m in seen["messages"] if m.id == MEMORY_MESSAGE)


def test_a_wire_with_scratch_stages_needs_a_backend():
    with pytest.raises(InvalidArgument, match="scratch"):
        Runtime(wire(), memory_saver())


def test_wire_files_declare_scratch(tmp_path):
    from cortex_agents.runtime import load_wire

    (tmp_path / "k.py").write_text("def talk(ctx):\n    return {}\n")
    (tmp_path / "w.toml").write_text(
        'name = "w"\n[kinds]\nk = "k.py:talk"\n[[stages]]\nid = "a"\nkind = "k"\nscratch = "global"\n'
    )
    assert load_wire(tmp_path / "w.toml").stage("a").scratch == "global"
    (tmp_path / "bad.toml").write_text(
        'name = "w"\n[kinds]\nk = "k.py:talk"\n[[stages]]\nid = "a"\nkind = "k"\nscratch = "forever"\n'
    )
    with pytest.raises(InvalidWire, match=r"stages\[0\]\.scratch"):
        load_wire(tmp_path / "bad.toml")


def test_a_stage_allowed_no_tool_round_sees_its_memory_but_no_mention_of_the_tool():
    silent = (
        WireBuilder("notes")
        .kind("k", talk)
        .stage("keeper", "k", scratch="global", config={"tools": {"max_rounds": 0}})
        .build()
    )
    model = ScriptedChatModel(script={"You are keeper": [say("ok")]})
    with open_scratch(None) as backend:
        backend.bind("keeper", scope="global", thread_id=None).append("/plan", "step one")
        runtime = Runtime(
            silent,
            memory_saver(),
            clock=TickingClock(T0, timedelta(seconds=1)),
            services={"chat_model": model},
            scratch=backend,
        )
        assert runtime.run("t1").complete
    (request,) = model.requests
    assert "tools" not in request
    (shown,) = [m for m in request["messages"] if m.id == MEMORY_MESSAGE]
    assert "plan" in shown.content and "`memory`" not in shown.content
