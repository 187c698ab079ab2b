"""What memory buys: one claim review, two reviewers of the same merge, classic and topological.

planner -> three analysts -> merge -> reviewer-classic  (classic: the merged document only)
                                   -> reviewer-topological (topological: the merge, the analyst
                                      branches behind it, and cortex_memory_query)

Both reviewers read the same merge node produced by the same analysts, so
what differs between their reviews is what each could see: the classic one
stops at its Markov boundary (its direct input, the merge); the topological
one also recalls the analysts upstream of it, ranked against the claim by the
``reviewer`` preset, and its model calls ``cortex_memory_query`` once.

    cortex-agents demo --scenario claim_review_compare                       # recorded, offline
    cortex-agents run graphs/claim_review_compare.py --input '{"claim": "..."}'   # live
"""

from __future__ import annotations

from cortex_agents.memory import Classic, Topological
from cortex_agents.runtime import WireBuilder
from cortex_agents.stages import KINDS

REVIEW_MEMORY = Topological(preset="reviewer", upstream_of_kind="analyst")
# As in claim_review.py: force the memory query first (small local models ignore tools otherwise),
# and send a space for the empty content of a tool-call-only message (llama.cpp rejects null).
REVIEWER_TOOLS = {"max_rounds": 1, "first": "cortex_memory_query", "empty_content": " "}
# Offer the model only query_text: a small model fills in every argument it is shown (the 1.5B
# recording model walked "descendants" of the reviewer, filtered to one claim part, found nothing).

builder = WireBuilder("claim_review_compare")
for name, fn in KINDS.items():
    builder.kind(name, fn)
wire = (
    builder.stage("planner", "planner", config={"claim_refs": ["c1", "c2", "c3"]})
    .stage("analyst-a", "analyst", after=["planner"], config={"claim_ref": "c1"})
    .stage("analyst-b", "analyst", after=["planner"], config={"claim_ref": "c2"})
    .stage("analyst-c", "analyst", after=["planner"], config={"claim_ref": "c3"})
    .stage("merge", "merge", after=["analyst-a", "analyst-b", "analyst-c"])
    .stage("reviewer-classic", "reviewer", after=["merge"], memory=Classic())
    .stage(
        "reviewer-topological",
        "reviewer",
        after=["merge"],
        memory=REVIEW_MEMORY,
        config={"tools": REVIEWER_TOOLS, "memory_tool_arguments": ["query_text"]},
    )
    .build()
)
