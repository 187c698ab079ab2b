"""The runtime: wires compiled to LangGraph graphs, the stage wrapper, the frontier scheduler."""

from cortex_agents.runtime._clock import Clock, LogicalClock, TickingClock, utc_clock
from cortex_agents.runtime._context import StageContext
from cortex_agents.runtime._embed import stage_node
from cortex_agents.runtime._graph import RunState, build_graph
from cortex_agents.runtime._rewrites import RewriteSession
from cortex_agents.runtime._run import Progress, RunResult, Runtime
from cortex_agents.runtime._wire import RewriteBudget, StageKind, StageSpec, Wire, WireBuilder
from cortex_agents.runtime._wire_file import load_wire

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
