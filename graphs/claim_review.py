"""The parallel-claim-branches workflow: planner -> three analysts -> merge -> reviewer -> rewriter.

LLM stages on any LangChain chat model (``ChatOpenAI`` from ``OPENAI_API_KEY``
/ ``OPENAI_BASE_URL`` / ``CORTEX_MODEL`` by default). The reviewer and the
rewriter sit behind the merge node: their Markov boundary is the merged
document, not the analyst branches. Under topological memory their own query
recalls the analysts upstream (``upstream_of_kind="analyst"``), ranked by
their focus (the claim, or the review's gaps) — including a follow-up
analyst a repair appended after the merge — and the reviewer's model may
also call ``cortex_memory_query`` (preset ``reviewer``: evidence only).

The rewriter may change the rest of the run: when the review found a gap it
is offered ``propose_rewrite`` and can append a repair branch after itself —
say a follow-up analyst and a re-review — which the runtime admits or rejects
against the run's rewrite budget. Admitted nodes run in the same thread.

    cortex-agents run graphs/claim_review.py --input '{"claim": "..."}'   # live, needs a model
    cortex-agents demo                                                     # recorded, offline
"""

from __future__ import annotations

from cortex_agents.memory import Topological
from cortex_agents.rewrite import RewritePolicy
from cortex_agents.runtime import WireBuilder
from cortex_agents.stages import KINDS

# Every analyst upstream, not only those past the merge: a re-review after a repair must see
# the follow-up analyst that came after it (tools/eval_retrieval.py, re-review family).
REVIEW_MEMORY = Topological(preset="reviewer", upstream_of_kind="analyst")

# Small local models ignore tools unless told to call one (a capable model can use "auto"), and
# llama.cpp's server rejects an assistant message whose content is null: send a space instead.
REVIEWER_TOOLS = {"max_rounds": 1, "first": "cortex_memory_query", "empty_content": " "}
# Offer the model only query_text: a small model fills in every argument it is shown (the 1.5B
# recording model walked "descendants" of the reviewer, filtered to one claim part, found nothing).
# The rewriter's tool turn, when it repairs: propose, read the decision, then answer.
REWRITER_TOOLS = {"max_rounds": 1, "first": "propose_rewrite", "empty_content": " "}

builder = WireBuilder("claim_review")
for name, fn in KINDS.items():
    builder.kind(name, fn)
wire = (
    builder.stage("planner", "planner", config={"claim_refs": ["c1", "c2", "c3"]})
    .stage("analyst-a", "analyst", after=["planner"], config={"claim_ref": "c1"})
    .stage("analyst-b", "analyst", after=["planner"], config={"claim_ref": "c2"})
    .stage("analyst-c", "analyst", after=["planner"], config={"claim_ref": "c3"})
    .stage("merge", "merge", after=["analyst-a", "analyst-b", "analyst-c"])
    .stage(
        "reviewer",
        "reviewer",
        after=["merge"],
        memory=REVIEW_MEMORY,
        config={"tools": REVIEWER_TOOLS, "memory_tool_arguments": ["query_text"]},
    )
    .stage(
        "rewriter",
        "rewriter",
        after=["reviewer"],
        memory=REVIEW_MEMORY,
        config={
            "tools": REWRITER_TOOLS,
            "repair": "on_gap",
            "memory_tool_arguments": ["query_text"],
        },
        rewrite=RewritePolicy(forms=("append_after",), attempts=2),
    )
    .build()
)
