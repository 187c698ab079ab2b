"""The LangChain tools a model calls, and how a call is answered and journaled.

- :mod:`~cortex_agents.tools._memory_query`: ``cortex_memory_query``, ranked recall of settled work.
- :mod:`~cortex_agents.tools._propose_rewrite`: ``propose_rewrite``, a model's rewrite proposal.
- :mod:`~cortex_agents.tools._scratch_tool`: ``memory``, a stage's scratch memory (the store
  itself is :mod:`cortex_agents.scratch`).
- :mod:`~cortex_agents.tools._agent`: the tools for an agent outside a wire
  (``create_agent``, ``create_react_agent``, ``ToolNode``) and the state key they read.
- :mod:`~cortex_agents.tools._binding`: how a tool binds a stage from a plain graph's state.
- :mod:`~cortex_agents.tools._loop`: the bounded, catalog-enforced tool loop of an LLM stage.
- :mod:`~cortex_agents.tools._journal` and :mod:`~cortex_agents.tools._results`: what a call
  answers and what the substrate keeps of it, bounded.
"""

from cortex_agents.tools._agent import SubstrateState, graph_memory_tools, substrate_from_snapshot
from cortex_agents.tools._binding import GraphBinding, GraphBoundTool, bind_to_graph
from cortex_agents.tools._loop import ToolCall, ToolLoopResult, ToolPolicy, run_tool_loop
from cortex_agents.tools._memory_query import (
    DEFAULT_TOKEN_BUDGET,
    MAX_RESULTS,
    MEMORY_QUERY_TOOL,
    MemoryQueryArgs,
    make_memory_query_tool,
    run_memory_query,
)
from cortex_agents.tools._propose_rewrite import PROPOSE_REWRITE_TOOL, make_propose_rewrite_tool
from cortex_agents.tools._results import MAX_JOURNAL_BYTES, json_safe
from cortex_agents.tools._scratch_tool import MEMORY_TOOL_NAME, make_memory_tool

__all__ = [
    # for an agent outside a wire
    "GraphBinding",
    "GraphBoundTool",
    "SubstrateState",
    "bind_to_graph",
    "graph_memory_tools",
    "substrate_from_snapshot",
    # the memory query tool
    "DEFAULT_TOKEN_BUDGET",
    "MAX_RESULTS",
    "MEMORY_QUERY_TOOL",
    "MemoryQueryArgs",
    "make_memory_query_tool",
    "run_memory_query",
    # the rewrite tool
    "PROPOSE_REWRITE_TOOL",
    "make_propose_rewrite_tool",
    # the scratch memory tool
    "MEMORY_TOOL_NAME",
    "make_memory_tool",
    # the tool loop of an LLM stage
    "ToolCall",
    "ToolLoopResult",
    "ToolPolicy",
    "run_tool_loop",
    # journaled values
    "MAX_JOURNAL_BYTES",
    "json_safe",
]
