"""Graph memory for an agent you already have: the tools, and the state key they read.

::

    from langchain.agents import AgentState, create_agent
    from cortex_agents import SubstrateState, graph_memory_tools, memory_saver

    class State(AgentState, SubstrateState): ...

    agent = create_agent(model, graph_memory_tools(), state_schema=State,
                         checkpointer=memory_saver())

The same tools go into ``create_react_agent`` (``langgraph.prebuilt``) or a
hand-built ``ToolNode`` + ``tools_condition`` graph. The substrate they query
is the state's ``substrate`` key: the stages your graph records with
:func:`~cortex_agents.runtime.stage_node`, a run you load
(``{"substrate": document_events(load_snapshot(path))}`` as input), and the
agent's own turns, which each call records (see
:mod:`cortex_agents.tools._binding`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from langchain_core.tools import BaseTool
from typing_extensions import TypedDict  # the flavour LangGraph and LangChain state schemas use

from cortex_agents.memory._presets import BUILTIN_PRESETS, PresetRegistry
from cortex_agents.substrate._events import event_to_dict
from cortex_agents.substrate._log import SubstrateLog, append_events
from cortex_agents.tools._binding import GraphBinding, bind_to_graph
from cortex_agents.tools._memory_query import DEFAULT_TOKEN_BUDGET, make_memory_query_tool
from cortex_agents.tools._scratch_tool import make_memory_tool

__all__ = ["SubstrateState", "graph_memory_tools", "substrate_from_snapshot"]


class SubstrateState(TypedDict, total=False):
    """A graph state key holding the substrate; inherit it in your state schema.

    ``class State(AgentState, SubstrateState): ...`` gives an agent's state a
    ``substrate`` channel whose reducer appends events (an update is a list
    of events or event dicts). Compile the graph with a
    :class:`~cortex_agents.persistence.CortexSaver` (``memory_saver()``,
    ``open_saver(path)``), which stores the substrate as rows.
    """

    substrate: Annotated[SubstrateLog, append_events]


def graph_memory_tools(
    presets: PresetRegistry = BUILTIN_PRESETS,
    *,
    budget: int = DEFAULT_TOKEN_BUDGET,
    scratch: bool = False,
    binding: GraphBinding | None = None,
) -> list[BaseTool]:
    """The cortex tools for an agent outside a wire: ``cortex_memory_query``, and ``memory``.

    Args:
        presets: The presets the model may name (listed in the tool's schema).
        budget: Tokens of rendered results per call.
        scratch: Also give the agent the scratch ``memory`` tool; its files
            live in the store the graph is compiled with (``store=...``), one
            memory per agent name.
        binding: How the tools find the substrate and record the calling turn
            (state keys, agent name and kind, links, preset, scratch scope, clock).

    Raises:
        InvalidArgument: ``budget`` is out of range.
    """
    binding = binding if binding is not None else GraphBinding()
    tools: list[BaseTool] = [make_memory_query_tool(presets, budget=budget, graph=binding)]
    if scratch:
        tools.append(bind_to_graph(make_memory_tool(), binding, presets=presets))
    return tools


def substrate_from_snapshot(path: str | Path) -> list[dict[str, Any]]:
    """The events of a snapshot file as a substrate update: JSON dicts, e.g. for an agent's input.

    ``agent.invoke({"messages": [...], "substrate": substrate_from_snapshot("run.json")})``
    starts a thread whose substrate is that recorded run, so the agent's
    memory queries rank its settled work.

    Raises:
        InvalidSnapshot: the file is not a valid snapshot.
    """
    from cortex_agents.persistence._transfer import document_events
    from cortex_agents.snapshotfile import load_snapshot

    return [event_to_dict(e) for e in document_events(load_snapshot(path))]
