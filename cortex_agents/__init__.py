"""cortex-agents: graph memory for LangGraph agents.

The public surface, grouped. Subpackages state their own public names;
everything else is private.

Every public name but the errors is imported from its module on first use
(``cortex_agents.X``, ``from cortex_agents import X``), so ``import
cortex_agents`` loads neither numpy, scipy and pydantic (memory, snapshot
files) nor LangGraph, LangChain and tiktoken (the agent-facing factories).
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
    InvalidWire,
    MemoryIsADirectory,
    MemoryNotADirectory,
    MemoryNotFound,
    MissingExtra,
    Problem,
    ProposalInvalid,
    RewriteUnavailable,
    RunFailed,
    ScorerUnavailable,
    ScratchMemoryError,
    StorageError,
    ThreadBusy,
    UnknownNode,
    UnknownPreset,
    UnknownProjection,
    UnknownScorer,
    UnsupportedCheckpointer,
    WriterFenced,
)

if TYPE_CHECKING:
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
    from cortex_agents.persistence import (
        memory_saver,
        open_saver,
    )
    from cortex_agents.rewrite import (
        LocalNode,
        RewritePolicy,
        RewriteProposal,
        SubgraphSpec,
        admit,
    )
    from cortex_agents.runtime import (
        stage_node,
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
    from cortex_agents.tools import (
        GraphBinding,
        SubstrateState,
        graph_memory_tools,
        make_memory_query_tool,
        substrate_from_snapshot,
    )

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "BUILTIN_PRESETS": "cortex_agents.memory",
    "BUILTIN_SCORERS": "cortex_agents.memory",
    "Classic": "cortex_agents.memory",
    "EmbeddingScorer": "cortex_agents.memory",
    "ExtractedFields": "cortex_agents.memory",
    "Match": "cortex_agents.memory",
    "MemoryHandle": "cortex_agents.memory",
    "MemorySnapshot": "cortex_agents.memory",
    "MemoryStrategy": "cortex_agents.memory",
    "Preset": "cortex_agents.memory",
    "PresetRegistry": "cortex_agents.memory",
    "Projection": "cortex_agents.memory",
    "ProjectionRegistry": "cortex_agents.memory",
    "Query": "cortex_agents.memory",
    "ScorerEntry": "cortex_agents.memory",
    "ScorerRegistry": "cortex_agents.memory",
    "SemanticScorer": "cortex_agents.memory",
    "Topological": "cortex_agents.memory",
    "WalkSpec": "cortex_agents.memory",
    "Weights": "cortex_agents.memory",
    "dag_random_walk_influence": "cortex_agents.memory",
    "default_extractor": "cortex_agents.memory",
    "projection_extractor": "cortex_agents.memory",
    "query_reference": "cortex_agents.memory",
    "query_vectorised": "cortex_agents.memory",
    "token_jaccard": "cortex_agents.memory",
    "walk_candidates": "cortex_agents.memory",
    "LocalNode": "cortex_agents.rewrite",
    "RewritePolicy": "cortex_agents.rewrite",
    "RewriteProposal": "cortex_agents.rewrite",
    "SubgraphSpec": "cortex_agents.rewrite",
    "admit": "cortex_agents.rewrite",
    "SnapshotDocument": "cortex_agents.snapshot_file",
    "dump_snapshot": "cortex_agents.snapshot_file",
    "load_snapshot": "cortex_agents.snapshot_file",
    "parse_snapshot": "cortex_agents.snapshot_file",
    "validate_snapshot": "cortex_agents.snapshot_file",
    "write_snapshot": "cortex_agents.snapshot_file",
    "EdgeRecord": "cortex_agents.substrate",
    "Event": "cortex_agents.substrate",
    "GraphState": "cortex_agents.substrate",
    "NodeRecord": "cortex_agents.substrate",
    "Observation": "cortex_agents.substrate",
    "RewriteFact": "cortex_agents.substrate",
    "fold": "cortex_agents.substrate",
    "GraphBinding": "cortex_agents.tools",
    "SubstrateState": "cortex_agents.tools",
    "graph_memory_tools": "cortex_agents.tools",
    "make_memory_query_tool": "cortex_agents.tools",
    "substrate_from_snapshot": "cortex_agents.tools",
    "stage_node": "cortex_agents.runtime",
    "memory_saver": "cortex_agents.persistence",
    "open_saver": "cortex_agents.persistence",
}
"""Every public name but the errors and ``__version__``, and the module that defines it."""


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cortex_agents' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    # errors
    "CortexError",
    "CycleError",
    "InvalidArgument",
    "InvalidEvent",
    "InvalidMemoryPath",
    "InvalidSnapshot",
    "InvalidWire",
    "MemoryIsADirectory",
    "MemoryNotADirectory",
    "MemoryNotFound",
    "MissingExtra",
    "Problem",
    "ProposalInvalid",
    "RewriteUnavailable",
    "RunFailed",
    "ScratchMemoryError",
    "StorageError",
    "ThreadBusy",
    "UnknownNode",
    "ScorerUnavailable",
    "UnknownPreset",
    "UnknownProjection",
    "UnknownScorer",
    "UnsupportedCheckpointer",
    "WriterFenced",
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
