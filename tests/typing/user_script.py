"""A user's script over cortex-agents' public API, as an application would write it.

``tests/integration/test_typing.py`` checks it with ``mypy --strict`` (with the
package) and runs it, so the public types cannot drift from what the code does
and the script cannot rot. It touches no network: the scorers are the offline
ones (jaccard, a custom one, and wordllama, whose weights ship in its wheel).

Run it: ``python tests/typing/user_script.py`` (prints ``user script: ok``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypedDict, TypeVar

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel

from cortex_agents import (
    BUILTIN_PRESETS,
    CortexSaver,
    InvalidArgument,
    Match,
    MemoryHandle,
    MemorySnapshot,
    NodeRecord,
    Projection,
    Runtime,
    ScorerEntry,
    StageContext,
    SubstrateState,
    Topological,
    WalkSpec,
    WireBuilder,
    dump_snapshot,
    graph_memory_tools,
    load_snapshot,
    memory_saver,
    open_saver,
    stage_node,
    substrate_from_snapshot,
)
from cortex_agents.errors import Problem, UnknownScorer, WriterFenced
from cortex_agents.memory import BUILTIN_SCORERS, PresetRegistry
from cortex_agents.runtime import RunResult, Wire
from cortex_agents.snapshotfile import SnapshotDocument, validate_snapshot
from cortex_agents.substrate import NodeId, SubstrateLog, append_events

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "claim_review.json"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


E = TypeVar("E", bound=Exception)


def refused(call: Callable[[], object], expected: type[E]) -> E:
    """The error ``call`` raises, which must be an ``expected``."""
    try:
        call()
    except expected as error:
        return error
    raise AssertionError(f"expected {expected.__name__}")


# -- a wire: WireBuilder, Topological memory, Runtime on memory_saver() ------------------
def plan(ctx: StageContext) -> dict[str, Any]:
    claim: str = ctx.run_input["claim"]
    return {"claim": claim, "claim_ref": "c0"}


def analyse(ctx: StageContext) -> dict[str, Any]:
    (planned,) = ctx.inputs.values()
    return {"claim_ref": ctx.stage_id, "finding": f"{ctx.stage_id} checked {planned['claim']}"}


def review(ctx: StageContext) -> dict[str, Any]:
    recalled: tuple[Match, ...] = ctx.recall()
    return {"ranking": [m.node_id for m in recalled]}


def review_wire() -> Wire:
    return (
        WireBuilder("review")
        .kind("planner", plan)
        .kind("analyst", analyse)
        .kind("reviewer", review)
        .stage("planner", "planner")
        .stage("analyst-a", "analyst", after=["planner"])
        .stage("analyst-b", "analyst", after=["planner"])
        .stage(
            "reviewer",
            "reviewer",
            after=["analyst-a", "analyst-b"],
            memory=Topological(preset="reviewer", scorer="jaccard"),
        )
        .build()
    )


def run_wire() -> RunResult:
    result = Runtime(review_wire(), memory_saver()).run("thread-1", {"claim": "tests help"})
    assert result.complete, result.failures
    ranking: list[str] = result.outputs["reviewer"]["ranking"]
    assert ranking == ["analyst-b", "analyst-a"], ranking  # evidence only, newest first
    return result


# -- memory queries: MemoryHandle, presets, the scorer and projection registries ---------
class Finding(BaseModel):
    """The artifact an analyst writes (what a projection decodes an output as)."""

    claim_ref: str
    finding: str
    confidence: float = 0.5


def snapshot() -> MemorySnapshot:
    def done(node_id: str, kind: str, output: dict[str, Any], minute: int) -> NodeRecord:
        at = T0 + timedelta(minutes=minute)
        return NodeRecord(
            id=NodeId(node_id),
            kind=kind,
            status="completed",
            captured_at=at,
            completed_at=at,
            output=output,
        )

    nodes = [
        done("planner", "planner", {"plan": "check the claim"}, 0),
        done("analyst-a", "analyst", {"claim_ref": "c1", "finding": "trial shows gains"}, 1),
        done("analyst-b", "analyst", {"claim_ref": "c2", "finding": "selection bias"}, 2),
        NodeRecord(id=NodeId("reviewer"), kind="reviewer", status="running", captured_at=T0),
    ]
    edges: Sequence[tuple[str, str]] = [
        ("planner", "analyst-a"),
        ("planner", "analyst-b"),
        ("analyst-a", "reviewer"),
        ("analyst-b", "reviewer"),
    ]
    return MemorySnapshot.of(nodes, edges, T0 + timedelta(minutes=3))


def exact_words(query_text: str, body_text: str) -> float:
    """A user's scorer: 1 when every query word is in the body."""
    wanted = set(query_text.lower().split())
    return 1.0 if wanted and wanted <= set(body_text.lower().split()) else 0.0


def query_memory() -> list[str]:
    handle = MemoryHandle(snapshot(), origin="reviewer")
    spec: WalkSpec = BUILTIN_PRESETS.spec("reviewer")
    matches = handle.query(spec, BUILTIN_PRESETS.query("reviewer", text="selection bias"))
    assert [m.node_id for m in matches] == ["analyst-b", "analyst-a"]

    # a scorer of one's own, registered by name, and a preset that uses it
    scorers = BUILTIN_SCORERS.with_scorers(ScorerEntry(name="exact", scorer=exact_words))
    assert "exact" in scorers and "exact" not in BUILTIN_SCORERS
    presets: PresetRegistry = BUILTIN_PRESETS.with_scorers(
        ScorerEntry(name="exact", scorer=exact_words)
    ).with_presets(
        replace(BUILTIN_PRESETS.resolve("reviewer"), name="exact-evidence", scorer="exact")
    )
    strict = MemoryHandle(snapshot(), origin="reviewer", presets=presets)
    found = strict.query(
        presets.spec("exact-evidence"), presets.query("exact-evidence", text="trial gains")
    )
    by_id = {m.node_id: m.semantic for m in found}
    assert by_id == {"analyst-a": 1.0, "analyst-b": 0.0}, by_id

    # a typed projection: memory reads only the slice of the artifact it names
    headline = Projection.of_fields("headline", Finding, ["finding"])
    projected = BUILTIN_PRESETS.with_projections(headline)
    sliced = MemoryHandle(snapshot(), origin="reviewer", presets=projected).query(
        projected.spec("reviewer"), projected.query("reviewer", projection="headline")
    )
    assert {m.node_id: m.output for m in sliced} == {
        "analyst-b": {"finding": "selection bias"},
        "analyst-a": {"finding": "trial shows gains"},
    }

    unknown = refused(lambda: BUILTIN_PRESETS.query("reviewer", scorer="no-such"), UnknownScorer)
    assert "no-such" in str(unknown)
    return [m.node_id for m in matches]


# -- the snapshot file: load, validate, write ----------------------------------------------
def snapshot_files(folder: Path) -> SnapshotDocument:
    document = load_snapshot(EXAMPLE)
    assert validate_snapshot(EXAMPLE.read_text(encoding="utf-8")) == []
    copy = folder / "copy.json"
    copy.write_text(dump_snapshot(document), encoding="utf-8")
    assert copy.read_bytes() == EXAMPLE.read_bytes()  # canonical: a round trip is byte-identical

    broken = EXAMPLE.read_text(encoding="utf-8").replace('"completed"', '"finished"', 1)
    problems: list[Problem] = validate_snapshot(broken)
    assert problems and all(p.location.startswith("nodes[") for p in problems), problems
    return document


# -- stage_node in one's own graph, on a plain LangGraph saver wrapped by CortexSaver ------
class ResearchState(TypedDict, total=False):
    question: str
    notes: str
    answer: str
    substrate: Annotated[SubstrateLog, append_events]


def research(state: ResearchState, ctx: StageContext) -> dict[str, Any]:
    return {"notes": f"sources on {state['question']}"}


def answer(state: ResearchState, ctx: StageContext) -> dict[str, Any]:
    recalled = [m.node_id for m in ctx.recall()]
    return {"answer": f"answered from {recalled}"}


def own_graph() -> str:
    graph = StateGraph(ResearchState)
    graph.add_node("research", stage_node(research, kind="analyst"))
    graph.add_node(
        "answer",
        stage_node(answer, kind="reviewer", after=["research"], memory=Topological()),
    )
    graph.add_edge(START, "research")
    graph.add_edge("research", "answer")
    graph.add_edge("answer", END)
    saver: CortexSaver = CortexSaver.wrap(InMemorySaver())
    app = graph.compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    out = app.invoke({"question": "caching"}, config)
    log: SubstrateLog = out["substrate"]
    assert [n.status for n in log.state.nodes.values()] == ["completed", "completed"]
    text: str = out["answer"]
    assert text == "answered from ['research']", text
    return text


# -- the memory tool in a plain ToolNode graph ---------------------------------------------
class AgentState(MessagesState, SubstrateState):
    pass


class AgentInput(TypedDict):
    """What the graph is invoked with: the substrate channel takes a list of event dicts
    (its reducer's update), while the state holds the resulting SubstrateLog."""

    messages: list[AnyMessage]
    substrate: list[dict[str, Any]]


def tool_node_graph() -> ToolMessage:
    graph = StateGraph(AgentState, input_schema=AgentInput)
    graph.add_node("tools", ToolNode(graph_memory_tools()))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    app = graph.compile(checkpointer=memory_saver())
    call = AIMessage(
        content="",
        tool_calls=[
            {
                "name": "cortex_memory_query",
                "args": {"query_text": "selection bias", "limit": 3},
                "id": "call-1",
                "type": "tool_call",
            }
        ],
    )
    config: RunnableConfig = {"configurable": {"thread_id": "agent-1"}}
    out = app.invoke({"messages": [call], "substrate": substrate_from_snapshot(EXAMPLE)}, config)
    replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(replies) == 1 and replies[0].status == "success", replies
    content = replies[0].content
    assert isinstance(content, str) and content.startswith("<memory_results "), content
    return replies[0]


def bad_input_is_named() -> InvalidArgument:
    error = refused(lambda: BUILTIN_PRESETS.spec("reviewer", limit=0), InvalidArgument)
    assert (error.field, error.rule) == ("limit", "must be an integer >= 1"), error
    return error


def lost_lock(folder: Path) -> WriterFenced:
    """A writer whose lock file is deleted under it is told so before its next stage."""
    database = folder / "runs.db"
    with open_saver(database) as saver, saver.lock("thread-9"):
        Path(f"{database}.cortex-locks").unlink()
        error = refused(lambda: saver.check_writer("thread-9"), WriterFenced)
    assert error.thread_id == "thread-9" and "was deleted" in error.reason, error
    return error


def main() -> None:
    run_wire()
    query_memory()
    with tempfile.TemporaryDirectory() as folder:
        snapshot_files(Path(folder))
        lost_lock(Path(folder))
    own_graph()
    tool_node_graph()
    bad_input_is_named()
    print("user script: ok")


if __name__ == "__main__":
    main()
