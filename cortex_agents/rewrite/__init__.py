"""Budgeted rewrite admission, pure (seed 002, DESIGN §6).

Stages and models only *propose*; :func:`admit` decides, against the graph,
the registered kinds, the proposer's policy and the run's remaining budget;
:func:`materialize` turns an admitted decision into substrate events. Nothing
here imports LangGraph, does I/O or reads a clock.
"""

from cortex_agents.rewrite._admission import admit, static_cost
from cortex_agents.rewrite._algebra import RewriteDiff, global_id, plan_diff
from cortex_agents.rewrite._budget import DEFAULT_BUDGET, DIMENSIONS, remaining
from cortex_agents.rewrite._materialize import materialize, pending_materialization
from cortex_agents.rewrite._policy import RewritePolicy
from cortex_agents.rewrite._spec import (
    FORMS,
    LocalNode,
    ProposalInvalid,
    RewriteForm,
    RewriteProposal,
    SubgraphSpec,
    parse_proposal,
)

__all__ = [
    "DEFAULT_BUDGET",
    "DIMENSIONS",
    "FORMS",
    "LocalNode",
    "ProposalInvalid",
    "RewriteDiff",
    "RewriteForm",
    "RewritePolicy",
    "RewriteProposal",
    "SubgraphSpec",
    "admit",
    "global_id",
    "materialize",
    "parse_proposal",
    "pending_materialization",
    "plan_diff",
    "remaining",
    "static_cost",
]
