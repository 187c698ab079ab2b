"""The Pulse substrate, pure: records, the append-only event model, the fold.

Nothing here imports LangGraph, does I/O or reads a clock.
"""

from cortex_agents.substrate._events import (
    EdgeAdded,
    EdgeRemoved,
    Event,
    NodeRetired,
    NodeScheduled,
    RewriteAdmitted,
    RewriteApplied,
    RewriteBudgetSet,
    RewriteRejected,
    StageCompleted,
    StageFailed,
    StageStarted,
    ToolCallMade,
    event_from_dict,
    event_to_dict,
)
from cortex_agents.substrate._fold import fold
from cortex_agents.substrate._log import SubstrateLog, append_events
from cortex_agents.substrate._log import _unpickled as _unpickled  # pickles name it here
from cortex_agents.substrate._queries import by_tag, lineage, neighbors, recent, since
from cortex_agents.substrate._records import (
    NODE_STATUSES,
    REJECTION_CODES,
    SETTLED,
    Decision,
    EdgeRecord,
    NodeId,
    NodeRecord,
    NodeStatus,
    Observation,
    RejectionCode,
    RewriteFact,
)
from cortex_agents.substrate._state import EMPTY_STATE, GraphState

__all__ = [
    "EMPTY_STATE",
    "NODE_STATUSES",
    "REJECTION_CODES",
    "SETTLED",
    "Decision",
    "EdgeAdded",
    "EdgeRecord",
    "EdgeRemoved",
    "Event",
    "GraphState",
    "NodeId",
    "NodeRecord",
    "NodeRetired",
    "NodeScheduled",
    "NodeStatus",
    "Observation",
    "RejectionCode",
    "RewriteAdmitted",
    "RewriteApplied",
    "RewriteBudgetSet",
    "RewriteFact",
    "RewriteRejected",
    "StageCompleted",
    "StageFailed",
    "StageStarted",
    "SubstrateLog",
    "ToolCallMade",
    "append_events",
    "by_tag",
    "event_from_dict",
    "event_to_dict",
    "fold",
    "lineage",
    "neighbors",
    "recent",
    "since",
]
