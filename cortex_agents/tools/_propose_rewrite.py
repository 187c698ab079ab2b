"""``propose_rewrite``: a model's proposal to change the not-yet-run graph, as a LangChain tool.

The tool never changes anything itself. It hands the proposal to the stage's
:class:`~cortex_agents.runtime.RewriteSession` — the runtime's
admission controller — and answers with the decision:

* admitted: the ``rewrite_id``, the new node ids, the cost and the budget left;
* rejected: an error result with the code (``invalid_rewrite``,
  ``vocabulary_violation``, ``cycle_introduced``, ``rewrite_budget_exceeded``,
  ``policy_rejected``), the failing check and the reason, so the model can
  revise within the stage's attempts.

Its arguments are one bounded pydantic model, :class:`ProposeRewriteArgs`.
The schema the model is shown also lists, as enums, the anchors this stage
may use, the registered kinds and its allowed operations — guidance only:
the runtime checks everything again, and arguments that fail validation are
recorded as an ``invalid_rewrite`` proposal and returned as a readable error.

Conveniences for models: omit ``edges`` to chain the nodes in the order
given; omit ``entry`` / ``exit`` (or leave them empty) to use the local nodes
without local predecessors / successors. The shown schema leaves out
``mode`` when the stage may only ``append_after``.
"""

from __future__ import annotations

import copy
import json
from itertools import pairwise
from typing import Annotated, Any, Final, Literal

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.prebuilt import ToolRuntime
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cortex_agents.errors import InvalidArgument
from cortex_agents.rewrite._spec import LocalNode, RewriteProposal, SubgraphSpec
from cortex_agents.runtime._rewrites import HasRewrites, RewriteSession
from cortex_agents.substrate._records import RewriteFact
from cortex_agents.tools._results import error_content, json_safe, validation_message

__all__ = [
    "MAX_LISTED_ANCHORS",
    "PROPOSE_REWRITE_TOOL",
    "ProposeRewriteArgs",
    "RewriteEdgeArgs",
    "RewriteNodeArgs",
    "args_to_proposal",
    "decision_content",
    "make_propose_rewrite_tool",
]

PROPOSE_REWRITE_TOOL: Final = "propose_rewrite"
MAX_LISTED_ANCHORS: Final = 32
"""Above this many allowed anchors the schema lists none (the runtime still checks every one)."""

# Finite floats only: NaN and infinities are not JSON, and the decision is recorded as JSON.
ConfigValue = str | int | Annotated[float, Field(allow_inf_nan=False)] | bool


class RewriteNodeArgs(BaseModel):
    """One node of the proposed subgraph."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[
        str,
        Field(
            min_length=1,
            max_length=64,
            description="Local id, letters, digits, '_', '-' or '.'; becomes '<anchor>:<id>'.",
        ),
    ]
    kind: Annotated[str, Field(min_length=1, max_length=64, description="The stage kind to run.")]
    config: Annotated[
        dict[str, ConfigValue] | None,
        Field(
            max_length=16,
            description='Settings for the stage, e.g. {"claim_ref": "c2", "question": "..."}.',
        ),
    ] = None


class RewriteEdgeArgs(BaseModel):
    """A local edge: ``target`` consumes ``source``'s output."""

    model_config = ConfigDict(extra="forbid")

    source: Annotated[str, Field(min_length=1, max_length=64)]
    target: Annotated[str, Field(min_length=1, max_length=64)]


class ProposeRewriteArgs(BaseModel):
    """Arguments of ``propose_rewrite``: one rewrite, bounded."""

    model_config = ConfigDict(extra="forbid")

    operation: Annotated[
        Literal["append_after", "expand_node"],
        Field(
            description="append_after: add the nodes after the anchor; expand_node: expand the anchor."
        ),
    ]
    anchor: Annotated[
        str, Field(min_length=1, max_length=200, description="The node the change attaches to.")
    ]
    nodes: Annotated[
        list[RewriteNodeArgs],
        Field(min_length=1, max_length=4, description="The new nodes, in running order."),
    ]
    mode: Annotated[
        Literal["replace", "retain"] | None,
        Field(description="expand_node only: replace the anchor, or keep it and feed the nodes."),
    ] = None
    edges: Annotated[
        list[RewriteEdgeArgs] | None,
        Field(max_length=16, description="Edges between new nodes; omit to chain them in order."),
    ] = None
    entry: Annotated[
        list[str] | None,
        Field(max_length=8, description="Ids that start the new work; omit for the first nodes."),
    ] = None
    exit: Annotated[
        list[str] | None,
        Field(max_length=8, description="Ids that end the new work; omit for the last nodes."),
    ] = None
    rationale: Annotated[
        str | None, Field(max_length=500, description="Why this change is needed.")
    ] = None


def args_to_proposal(args: ProposeRewriteArgs) -> dict[str, Any]:
    """The proposal (JSON form) the arguments describe, conveniences applied."""
    ids = [n.id for n in args.nodes]
    if args.edges is None:
        edges = tuple(pairwise(ids))
    else:
        edges = tuple((e.source, e.target) for e in args.edges)
    has_pred = {t for _, t in edges}
    has_succ = {s for s, _ in edges}
    proposal = RewriteProposal(
        op=args.operation,
        anchor=args.anchor,
        mode=args.mode,
        rationale=args.rationale or None,
        spec=SubgraphSpec(
            nodes=tuple(LocalNode(id=n.id, kind=n.kind, config=n.config or {}) for n in args.nodes),
            edges=edges,
            entry=tuple(args.entry or (i for i in ids if i not in has_pred)),
            exit=tuple(args.exit or (i for i in ids if i not in has_succ)),
        ),
    )
    return proposal.to_dict()


def decision_content(fact: RewriteFact, session: RewriteSession) -> tuple[str, bool]:
    """What the model reads of a decision, and whether it is an error result."""
    common = {
        "budget_remaining": session.budget_remaining,
        "attempts_left": session.attempts_left,
    }
    if fact.decision == "admitted":
        body = {
            "decision": "admitted",
            "rewrite_id": fact.rewrite_id,
            "new_nodes": [n["id"] for n in fact.diff.get("nodes", ())],
            "cost": dict(fact.cost),
            **common,
            "note": "the new nodes run in this workflow after the current stage",
        }
        return json.dumps(body, ensure_ascii=False), False
    body = json.loads(error_content(fact.code or "rejected", fact.reason or ""))
    body.update({"decision": "rejected", "check": fact.check, **common})
    return json.dumps(body, ensure_ascii=False), True


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with ``$ref``s to ``$defs`` inlined (some servers' grammars do not follow refs)."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return walk(copy.deepcopy(defs[ref.removeprefix("#/$defs/")]))
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    inlined: dict[str, Any] = walk(schema)  # a dict walks to a dict
    return inlined


_SHOWN_ID: Final = "^[A-Za-z][A-Za-z0-9_.-]{0,63}$"


def _shown_schema(anchors: list[str], kinds: list[str], operations: list[str]) -> dict[str, Any]:
    schema = _inline(ProposeRewriteArgs.model_json_schema())
    props = schema["properties"]
    if len(anchors) <= MAX_LISTED_ANCHORS:
        props["anchor"]["enum"] = anchors
    props["operation"]["enum"] = operations
    props["nodes"]["items"]["properties"]["kind"]["enum"] = kinds
    # Shown ids start with a letter (the runtime also takes a digit or '.' first) and have no
    # room for "<": a grammar-constrained small model otherwise writes ids like "}, {" or "."
    # and the chat template's stop text inside a string (recorded with gemma3 on llama.cpp).
    props["nodes"]["items"]["properties"]["id"]["pattern"] = _SHOWN_ID
    for name in ("entry", "exit", "edges"):
        for variant in props.get(name, {}).get("anyOf", []):
            items = variant.get("items", {})
            for field in (items, *items.get("properties", {}).values()):
                if field.get("type") == "string":
                    field["pattern"] = _SHOWN_ID
    if "expand_node" not in operations:
        del props["mode"]  # meaningless for append_after: do not invite a value
    schema.pop("title", None)
    schema.pop("description", None)
    return schema


def make_propose_rewrite_tool(context: HasRewrites) -> BaseTool:
    """The ``propose_rewrite`` tool of a rewrite-capable stage (``context.rewrites`` set).

    The schema shown to the model is computed from the stage's session: the
    anchors it may use (itself, then its pending descendants), the registered
    kinds and the operations its policy allows.

    Raises:
        InvalidArgument: ``context.rewrites`` is ``None`` (the stage is not rewrite-capable).
    """
    session = context.rewrites
    if session is None:
        raise InvalidArgument(
            "context.rewrites", "must be a rewrite session: the stage is not rewrite-capable", None
        )
    forms = session.policy.forms
    operations = [
        op
        for op, present in (
            ("append_after", "append_after" in forms),
            ("expand_node", any(f.startswith("expand_") for f in forms)),
        )
        if present
    ]

    def propose_rewrite(runtime: ToolRuntime[Any, Any], **kwargs: Any) -> str:
        context = getattr(runtime, "context", None)
        active = context.rewrites if isinstance(context, HasRewrites) else None
        if active is None:  # the catalog gate makes this unreachable; refuse anyway
            raise ToolException(
                error_content("rewrite_unavailable", "this stage cannot propose rewrites")
            )
        call_id = getattr(runtime, "tool_call_id", None)
        try:
            args = ProposeRewriteArgs.model_validate(kwargs)
        except ValidationError as exc:
            loc = exc.errors()[0]["loc"]
            check = ("arguments" + "".join(f".{part}" for part in loc))[:200]
            # what the model sent is recorded as the proposal: bounded and storable (json_safe)
            proposal = json_safe(kwargs)
            fact = active.reject_malformed(
                proposal, check, validation_message(exc), call_id=call_id
            )
        else:
            fact = active.propose(args_to_proposal(args), call_id=call_id)
        content, rejected = decision_content(fact, active)
        if rejected:
            raise ToolException(content)  # an error result: the model should revise
        return content

    anchors = session.anchors()
    listed = (
        ", ".join(anchors)
        if len(anchors) <= MAX_LISTED_ANCHORS
        else f"{anchors[0]} or any pending node below it"
    )
    description = (
        "Propose a change to the part of this workflow that has not run yet: add stages after a node "
        "(append_after) or expand a node (expand_node). The runtime admits or rejects it against a "
        f"fixed budget and answers with its decision. Anchors you may use: {listed}. "
        f"You have {session.policy.attempts} proposals."
    )
    return StructuredTool.from_function(
        func=propose_rewrite,
        name=PROPOSE_REWRITE_TOOL,
        description=description,
        args_schema=_shown_schema(anchors, sorted(session.vocabulary), operations),
        handle_tool_error=True,
    )
