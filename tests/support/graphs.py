"""A small deterministic LangGraph workflow that writes the substrate, for persistence tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

from cortex_agents.substrate import (
    EdgeAdded,
    NodeScheduled,
    StageCompleted,
    StageStarted,
    SubstrateLog,
    append_events,
    event_to_dict,
)
from tests.support.helpers import T0


class ChainState(TypedDict, total=False):
    """One stage per step; ``label`` goes into outputs so forks differ from their origin."""

    substrate: Annotated[SubstrateLog, append_events]
    steps: int
    goal: int
    label: str


def stage_events(i: int, label: str = "main") -> list[dict[str, Any]]:
    """The events one step of the chain settles: schedule, link, start, complete."""
    stage = f"stage-{i:04d}"
    at = T0 + timedelta(seconds=i)
    events: list = [NodeScheduled(node_id=stage, kind="analyst", at=at)]
    if i:
        events.append(EdgeAdded(source=f"stage-{i - 1:04d}", target=stage, at=at))
    events += [
        StageStarted(node_id=stage, at=at),
        StageCompleted(
            node_id=stage, at=at + timedelta(milliseconds=500), output={"i": i, "label": label}
        ),
    ]
    return [event_to_dict(e) for e in events]


def expected_log(steps: int, labels: dict[int, str] | None = None) -> SubstrateLog:
    """The substrate after ``steps`` steps (``labels`` overrides the label of some steps)."""
    labels = labels or {}
    return SubstrateLog().appended(
        [e for i in range(steps) for e in stage_events(i, labels.get(i, "main"))]
    )


def chain_graph() -> StateGraph:
    """START -> step -> step -> ... until ``steps == goal``."""

    def step(state: ChainState) -> dict[str, Any]:
        i = state.get("steps", 0)
        return {"substrate": stage_events(i, state.get("label", "main")), "steps": i + 1}

    def route(state: ChainState) -> str:
        return END if state.get("steps", 0) >= state.get("goal", 0) else "step"

    graph = StateGraph(ChainState)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", route, ["step", END])
    return graph
