"""The runtime: wires compiled to LangGraph graphs, the stage wrapper, the frontier scheduler."""

from cortex_agents.runtime.clock import Clock, LogicalClock, TickingClock, utc_clock
from cortex_agents.runtime.context import StageContext
from cortex_agents.runtime.embed import stage_node
from cortex_agents.runtime.graph import RunState, build_graph
from cortex_agents.runtime.rewrites import RewriteSession
from cortex_agents.runtime.run import Progress, RunResult, Runtime
from cortex_agents.runtime.wire import RewriteBudget, StageKind, StageSpec, Wire, WireBuilder
from cortex_agents.runtime.wire_file import load_wire

__all__ = [
    "Clock",
    "LogicalClock",
    "Progress",
    "RewriteBudget",
    "RewriteSession",
    "RunResult",
    "RunState",
    "Runtime",
    "StageContext",
    "StageKind",
    "StageSpec",
    "TickingClock",
    "Wire",
    "WireBuilder",
    "build_graph",
    "load_wire",
    "stage_node",
    "utc_clock",
]
