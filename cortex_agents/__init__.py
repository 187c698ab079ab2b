"""cortex-agents: graph memory for LangGraph agents.

The public surface, grouped by job (about thirty names). Everything else is
importable from the subpackage that defines it — ``cortex_agents.memory``,
``cortex_agents.runtime``, ``cortex_agents.persistence``, ``cortex_agents.errors``
(every error), ``cortex_agents.substrate``, ``cortex_agents.rewrite``,
``cortex_agents.tools``, ``cortex_agents.snapshotfile`` — whose ``__all__``
states its public names.

Every public name but the root error is imported from its module on first use
(``cortex_agents.X``, ``from cortex_agents import X``), so ``import
cortex_agents`` loads neither numpy, scipy and pydantic (memory, snapshot
files) nor LangGraph, LangChain and tiktoken (the agent-facing factories).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Eager: errors.py imports only the standard library, so the tree costs nothing to load.
from cortex_agents.errors import CortexError, InvalidArgument

# For type checkers and editors only: at run time the names come from __getattr__.
if TYPE_CHECKING:
    from cortex_agents.memory import (
        BUILTIN_PRESETS,
        Classic,
        Match,
        MemoryHandle,
        MemorySnapshot,
        Preset,
        Projection,
        ScorerEntry,
        Topological,
        WalkSpec,
    )
    from cortex_agents.persistence import (
        CortexSaver,
        aopen_saver,
        memory_saver,
        open_saver,
    )
    from cortex_agents.rewrite import RewritePolicy
    from cortex_agents.runtime import (
        Runtime,
        StageContext,
        WireBuilder,
        load_wire,
        stage_node,
    )
    from cortex_agents.snapshotfile import dump_snapshot, load_snapshot
    from cortex_agents.substrate import GraphState, NodeRecord
    from cortex_agents.tools import (
        SubstrateState,
        graph_memory_tools,
        substrate_from_snapshot,
    )

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "Runtime": "cortex_agents.runtime",
    "WireBuilder": "cortex_agents.runtime",
    "StageContext": "cortex_agents.runtime",
    "load_wire": "cortex_agents.runtime",
    "stage_node": "cortex_agents.runtime",
    "CortexSaver": "cortex_agents.persistence",
    "open_saver": "cortex_agents.persistence",
    "aopen_saver": "cortex_agents.persistence",
    "memory_saver": "cortex_agents.persistence",
    "SubstrateState": "cortex_agents.tools",
    "graph_memory_tools": "cortex_agents.tools",
    "substrate_from_snapshot": "cortex_agents.tools",
    "MemoryHandle": "cortex_agents.memory",
    "MemorySnapshot": "cortex_agents.memory",
    "Match": "cortex_agents.memory",
    "Topological": "cortex_agents.memory",
    "Classic": "cortex_agents.memory",
    "Preset": "cortex_agents.memory",
    "BUILTIN_PRESETS": "cortex_agents.memory",
    "WalkSpec": "cortex_agents.memory",
    "ScorerEntry": "cortex_agents.memory",
    "Projection": "cortex_agents.memory",
    "RewritePolicy": "cortex_agents.rewrite",
    "GraphState": "cortex_agents.substrate",
    "NodeRecord": "cortex_agents.substrate",
    "load_snapshot": "cortex_agents.snapshotfile",
    "dump_snapshot": "cortex_agents.snapshotfile",
}
"""Every public name but the errors and ``__version__``, and the module that defines it."""


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cortex_agents' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    # Cached in the module's namespace: the next access finds it and skips __getattr__.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    # run a workflow: a wire of stages, run by a Runtime (or stages in your own graph)
    "Runtime",
    "WireBuilder",
    "StageContext",
    "load_wire",
    "stage_node",
    # persistence: one saver per lifetime — a process (memory_saver), a `with`
    # block (open_saver / aopen_saver), or a LangGraph saver you own (CortexSaver.wrap)
    "CortexSaver",
    "memory_saver",
    "open_saver",
    "aopen_saver",
    # graph memory in any LangGraph agent
    "SubstrateState",
    "graph_memory_tools",
    "substrate_from_snapshot",
    # memory: strategies, presets and the one way to rank (MemoryHandle.query)
    "MemoryHandle",
    "MemorySnapshot",
    "Match",
    "Topological",
    "Classic",
    "Preset",
    "BUILTIN_PRESETS",
    "WalkSpec",
    "ScorerEntry",
    "Projection",
    # rewrites
    "RewritePolicy",
    # the substrate and its file
    "GraphState",
    "NodeRecord",
    "load_snapshot",
    "dump_snapshot",
    # errors (every other one is in cortex_agents.errors)
    "CortexError",
    "InvalidArgument",
    "__version__",
]
