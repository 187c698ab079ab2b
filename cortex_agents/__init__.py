"""cortex-agents: graph memory for LangGraph agents.

The public surface, grouped. Subpackages state their own public names;
everything else is private.

The agent-facing factories (the tools, ``stage_node``, ``memory_saver``) are
imported on first use, so ``import cortex_agents`` does not load LangGraph,
LangChain or tiktoken.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from cortex_agents.errors import (
    CortexError,
    CycleError,
    InvalidArgument,
    InvalidEvent,
    InvalidMemoryPath,
    InvalidSnapshot,
    MemoryIsADirectory,
    MemoryNotADirectory,
    MemoryNotFound,
    Problem,
    ProposalInvalid,
    RewriteUnavailable,
    ScorerUnavailable,
    ScratchMemoryError,
    StorageError,
    ThreadBusy,
    UnknownNode,
    UnknownPreset,
    UnknownProjection,
    UnknownScorer,
)
from cortex_agents.memory import (
    BUILTIN_PRESETS,
    BUILTIN_SCORERS,
    Classic,
    EmbeddingScorer,
    ExtractedFields,
    Match,
    MemoryHandle,
    MemorySnapshot,
    MemoryStrategy,
    Preset,
    PresetRegistry,
    Projection,
    ProjectionRegistry,
    Query,
    ScorerEntry,
    ScorerRegistry,
    SemanticScorer,
    Topological,
    WalkSpec,
    Weights,
    dag_random_walk_influence,
    default_extractor,
    projection_extractor,
    query_reference,
    query_vectorised,
    token_jaccard,
    walk_candidates,
)
from cortex_agents.rewrite import (
    LocalNode,
    RewritePolicy,
    RewriteProposal,
    SubgraphSpec,
    admit,
)
from cortex_agents.snapshot_file import (
    SnapshotDocument,
    dump_snapshot,
    load_snapshot,
    parse_snapshot,
    validate_snapshot,
    write_snapshot,
)
from cortex_agents.substrate import (
    EdgeRecord,
    Event,
    GraphState,
    NodeRecord,
    Observation,
    RewriteFact,
    fold,
)

if TYPE_CHECKING:
    from cortex_agents.persistence import memory_saver, open_saver
    from cortex_agents.runtime import stage_node
    from cortex_agents.tools import (
        GraphBinding,
        SubstrateState,
        graph_memory_tools,
        make_memory_query_tool,
        substrate_from_snapshot,
    )

__version__ = "0.1.0"

_LAZY = {
    "GraphBinding": "cortex_agents.tools",
    "SubstrateState": "cortex_agents.tools",
    "graph_memory_tools": "cortex_agents.tools",
    "make_memory_query_tool": "cortex_agents.tools",
    "substrate_from_snapshot": "cortex_agents.tools",
    "stage_node": "cortex_agents.runtime",
    "memory_saver": "cortex_agents.persistence",
    "open_saver": "cortex_agents.persistence",
}


def __getattr__(name: str) -> Any:
    """The agent-facing factories, imported on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cortex_agents' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    # errors
    "CortexError",
    "CycleError",
    "InvalidArgument",
    "InvalidEvent",
    "InvalidMemoryPath",
    "InvalidSnapshot",
    "MemoryIsADirectory",
    "MemoryNotADirectory",
    "MemoryNotFound",
    "Problem",
    "ProposalInvalid",
    "RewriteUnavailable",
    "ScratchMemoryError",
    "StorageError",
    "ThreadBusy",
    "UnknownNode",
    "ScorerUnavailable",
    "UnknownPreset",
    "UnknownProjection",
    "UnknownScorer",
    # substrate
    "EdgeRecord",
    "Event",
    "GraphState",
    "NodeRecord",
    "Observation",
    "RewriteFact",
    "fold",
    # memory
    "BUILTIN_PRESETS",
    "BUILTIN_SCORERS",
    "EmbeddingScorer",
    "Projection",
    "ProjectionRegistry",
    "ScorerEntry",
    "ScorerRegistry",
    "Classic",
    "ExtractedFields",
    "Match",
    "MemoryHandle",
    "MemorySnapshot",
    "MemoryStrategy",
    "Preset",
    "PresetRegistry",
    "Query",
    "SemanticScorer",
    "Topological",
    "WalkSpec",
    "Weights",
    "dag_random_walk_influence",
    "default_extractor",
    "projection_extractor",
    "query_reference",
    "query_vectorised",
    "token_jaccard",
    "walk_candidates",
    # rewrites
    "LocalNode",
    "RewritePolicy",
    "RewriteProposal",
    "SubgraphSpec",
    "admit",
    # snapshot files
    "SnapshotDocument",
    "dump_snapshot",
    "load_snapshot",
    "parse_snapshot",
    "validate_snapshot",
    "write_snapshot",
    # agents: graph memory in any LangGraph graph (imported on first use)
    "GraphBinding",
    "SubstrateState",
    "graph_memory_tools",
    "make_memory_query_tool",
    "memory_saver",
    "open_saver",
    "stage_node",
    "substrate_from_snapshot",
    "__version__",
]
