"""Memory, pure: snapshot, influence, scoring, extractors, presets, the query engine.

Nothing here imports LangGraph, does I/O or reads a clock. Users rank with
:meth:`MemoryHandle.query` over the vectorised engine (numpy/scipy, in the
private ``_engine`` module: one public way to rank). The plain-Python
definition it is tested against,
``query_reference`` with the seed's walk, lives apart in
:mod:`cortex_agents.reference` (the test oracle); the two agree to the last bit.
"""

from cortex_agents.memory._embedding import (
    Embedder,
    EmbeddingCache,
    EmbeddingScorer,
    InMemoryEmbeddingCache,
    VectorScorer,
    body_key,
)
from cortex_agents.memory._extract import (
    ExtractedFields,
    Extractor,
    default_extractor,
    peel_envelope,
    projection_extractor,
)
from cortex_agents.memory._handle import HasMemory, MemoryHandle, RankedRequest
from cortex_agents.memory._influence import (
    DEFAULT_ALPHA,
    canonical_order,
    dag_random_walk_influence,
)
from cortex_agents.memory._lexical import BM25, lexical_tokens
from cortex_agents.memory._match import Match, Ranking
from cortex_agents.memory._presets import BUILTIN_PRESETS, Preset, PresetRegistry
from cortex_agents.memory._projections import BUILTIN_PROJECTIONS, Projection, ProjectionRegistry
from cortex_agents.memory._scorers import (
    BUILTIN_SCORERS,
    DEFAULT_SCORER,
    Blend,
    ScorerEntry,
    ScorerRegistry,
)
from cortex_agents.memory._scoring import composite_score, hop_decay, temporal_axis
from cortex_agents.memory._semantic import SemanticScorer, TokenJaccard, token_jaccard, tokenize
from cortex_agents.memory._snapshot import MemorySnapshot
from cortex_agents.memory._spec import (
    DIRECTIONS,
    PRIORS,
    SCOPES,
    TIME_REFERENCES,
    Direction,
    GraphPrior,
    Query,
    Scope,
    TimeReference,
    WalkSpec,
    Weights,
)
from cortex_agents.memory._strategy import Classic, MemoryStrategy, Topological, declared_preset

__all__ = [
    "BUILTIN_PROJECTIONS",
    "Projection",
    "ProjectionRegistry",
    "BUILTIN_PRESETS",
    "BUILTIN_SCORERS",
    "DEFAULT_ALPHA",
    "DEFAULT_SCORER",
    "DIRECTIONS",
    "PRIORS",
    "SCOPES",
    "TIME_REFERENCES",
    "BM25",
    "Blend",
    "Classic",
    "Direction",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingScorer",
    "ExtractedFields",
    "Extractor",
    "GraphPrior",
    "HasMemory",
    "InMemoryEmbeddingCache",
    "Match",
    "MemoryHandle",
    "MemorySnapshot",
    "MemoryStrategy",
    "Preset",
    "PresetRegistry",
    "Query",
    "RankedRequest",
    "Ranking",
    "Scope",
    "ScorerEntry",
    "ScorerRegistry",
    "SemanticScorer",
    "TimeReference",
    "TokenJaccard",
    "Topological",
    "VectorScorer",
    "WalkSpec",
    "Weights",
    "body_key",
    "canonical_order",
    "composite_score",
    "dag_random_walk_influence",
    "declared_preset",
    "default_extractor",
    "hop_decay",
    "lexical_tokens",
    "peel_envelope",
    "projection_extractor",
    "temporal_axis",
    "token_jaccard",
    "tokenize",
]
