"""cortex-agents: graph memory for LangGraph agents.

The public surface, grouped. Subpackages state their own public names;
everything else is private.
"""

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
    ScratchMemoryError,
    UnknownNode,
    UnknownPreset,
)
from cortex_agents.memory import (
    BUILTIN_PRESETS,
    Classic,
    ExtractedFields,
    Match,
    MemoryHandle,
    MemorySnapshot,
    MemoryStrategy,
    Preset,
    PresetRegistry,
    Query,
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

__version__ = "0.1.0"

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
    "ScratchMemoryError",
    "UnknownNode",
    "UnknownPreset",
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
    # snapshot files
    "SnapshotDocument",
    "dump_snapshot",
    "load_snapshot",
    "parse_snapshot",
    "validate_snapshot",
    "write_snapshot",
    "__version__",
]
