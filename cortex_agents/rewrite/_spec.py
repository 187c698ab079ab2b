"""Rewrite proposals: the closed algebra's two forms over a local subgraph (DESIGN §6).

A proposal is one of

* ``expand_node(anchor, mode="replace"|"retain", spec)``
* ``append_after(anchor, spec)``

over a :class:`SubgraphSpec`: local nodes (registered stage kinds, with their
config), local edges, and explicit entry and exit sets. Its JSON form::

    {"op": "append_after", "anchor": "rewriter",
     "spec": {"nodes": [{"id": "followup", "kind": "analyst", "config": {}},
                        {"id": "recheck", "kind": "reviewer"}],
              "edges": [["followup", "recheck"]],
              "entry": ["followup"], "exit": ["recheck"]},
     "rationale": "the review found a gap in c2"}

:func:`parse_proposal` checks the *shape* only — types, bounds, local id
syntax — and raises :class:`ProposalInvalid` (code ``invalid_rewrite``)
naming the field and the rule. Everything that needs the graph (anchor,
freshness, cycles, orphans) is admission's job.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from cortex_agents.errors import ProposalInvalid

__all__ = [
    "FORMS",
    "LOCAL_ID_PATTERN",
    "MAX_CONFIG_CHARS",
    "MAX_LOCAL_EDGES",
    "MAX_LOCAL_NODES",
    "LocalNode",
    "ProposalInvalid",
    "RewriteForm",
    "RewriteProposal",
    "SubgraphSpec",
    "parse_proposal",
]

RewriteForm = Literal["append_after", "expand_retain", "expand_replace"]
"""The three forms a stage may be allowed: ``append_after`` and the two modes of ``expand_node``."""

FORMS: Final[tuple[RewriteForm, ...]] = ("append_after", "expand_retain", "expand_replace")

LOCAL_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")
"""Local node ids: no ``:`` (the separator of ``anchor:local``)."""

MAX_LOCAL_NODES: Final = 32
MAX_LOCAL_EDGES: Final = 128
MAX_CONFIG_CHARS: Final = 4000
_MAX_RATIONALE: Final = 2000
_TOP_KEYS: Final = frozenset({"op", "anchor", "mode", "spec", "rationale"})
_SPEC_KEYS: Final = frozenset({"nodes", "edges", "entry", "exit"})
_NODE_KEYS: Final = frozenset({"id", "kind", "config"})


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalNode:
    """A node of a subgraph spec.

    Attributes:
        id: Local id (``[A-Za-z0-9_.-]{1,64}``); the node becomes ``<anchor>:<id>``.
        kind: The stage kind that will run it (must be registered).
        config: JSON configuration, laid over the kind's default configuration.
    """

    id: str
    kind: str
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class SubgraphSpec:
    """The local subgraph a rewrite adds.

    Attributes:
        nodes: Its nodes, in the order given.
        edges: Local ``(source, target)`` pairs.
        entry: Local ids that take the anchor's place upstream.
        exit: Local ids that feed the anchor's former successors.
    """

    nodes: tuple[LocalNode, ...]
    edges: tuple[tuple[str, str], ...] = ()
    entry: tuple[str, ...] = ()
    exit: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RewriteProposal:
    """One rewrite, as proposed.

    Attributes:
        op: ``expand_node`` or ``append_after``.
        anchor: The node the rewrite is anchored at.
        mode: ``replace`` or ``retain`` for ``expand_node``; ``None`` for ``append_after``.
        spec: The subgraph.
        rationale: Why, in the proposer's words (recorded, never interpreted).
    """

    op: Literal["expand_node", "append_after"]
    anchor: str
    spec: SubgraphSpec
    mode: Literal["replace", "retain"] | None = None
    rationale: str | None = None

    @property
    def form(self) -> RewriteForm:
        """The form, as policies name it."""
        if self.op == "append_after":
            return "append_after"
        return "expand_replace" if self.mode == "replace" else "expand_retain"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form :func:`parse_proposal` reads."""
        out: dict[str, Any] = {"op": self.op, "anchor": self.anchor}
        if self.mode is not None:
            out["mode"] = self.mode
        spec = self.spec
        out["spec"] = {  # sequences as lists; anything else as is, for the parser to refuse
            "nodes": [
                {"id": n.id, "kind": n.kind, **({"config": n.config} if n.config else {})}
                if isinstance(n, LocalNode)
                else n
                for n in _as_list(spec.nodes)
            ],
            "edges": [_as_list(e) for e in _as_list(spec.edges)]
            if isinstance(spec.edges, list | tuple)
            else spec.edges,
            "entry": _as_list(spec.entry),
            "exit": _as_list(spec.exit),
        }
        if self.rationale is not None:
            out["rationale"] = self.rationale
        return out


def _as_list(value: Any) -> Any:
    return list(value) if isinstance(value, list | tuple) else value


def _mapping(value: Any, where: str, keys: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ProposalInvalid(
            where or "proposal", f"must be an object (got {type(value).__name__})"
        )
    if unknown := sorted(str(k) for k in set(value) - keys):
        raise ProposalInvalid(
            f"{where}.{unknown[0]}" if where else unknown[0],
            f"is not a field; allowed: {sorted(keys)}",
        )
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ProposalInvalid(where, f"must be a non-empty string (got {value!r})")
    return value


def _local_id(value: Any, where: str) -> str:
    text = _string(value, where)
    # Checked before the pattern (which also excludes it) to name the reason:
    # `:` is the separator of `anchor:local`.
    if ":" in text:
        raise ProposalInvalid(where, f"local ids may not contain `:` (got {text!r})")
    if not LOCAL_ID_PATTERN.fullmatch(text):
        raise ProposalInvalid(where, f"must match `{LOCAL_ID_PATTERN.pattern}` (got {text!r})")
    return text


def _list(value: Any, where: str, limit: int) -> Sequence[Any]:
    if not isinstance(value, list | tuple):
        raise ProposalInvalid(where, f"must be a list (got {type(value).__name__})")
    if len(value) > limit:
        raise ProposalInvalid(where, f"may hold at most {limit} items (got {len(value)})")
    return value


def _config(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ProposalInvalid(where, "must be an object with string keys")
    try:
        # allow_nan=False: NaN and Infinity are not JSON, and the config is recorded
        # in the log; the round trip below also turns tuples into lists, so the
        # recorded config equals the one a replay reads back.
        text = json.dumps(dict(value), allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ProposalInvalid(where, f"must be JSON ({exc})") from None
    if len(text) > MAX_CONFIG_CHARS:
        raise ProposalInvalid(where, f"must be at most {MAX_CONFIG_CHARS} characters of JSON")
    config: dict[str, Any] = json.loads(text)  # a JSON object: dumped from a str-keyed mapping
    return config


def _edge(value: Any, where: str) -> tuple[str, str]:
    if isinstance(value, Mapping):
        pair = [value.get("source"), value.get("target")]
        if set(value) - {"source", "target"}:
            raise ProposalInvalid(where, "an edge is [source, target] or {source, target}")
    elif isinstance(value, list | tuple) and len(value) == 2:
        pair = list(value)
    else:
        raise ProposalInvalid(
            where, f"an edge is [source, target] or {{source, target}} (got {value!r})"
        )
    return _local_id(pair[0], f"{where}.source"), _local_id(pair[1], f"{where}.target")


def _ids(value: Any, where: str) -> tuple[str, ...]:
    return tuple(
        _local_id(v, f"{where}[{i}]") for i, v in enumerate(_list(value, where, MAX_LOCAL_NODES))
    )


def parse_proposal(raw: Any) -> RewriteProposal:
    """A proposal from its JSON form or a :class:`RewriteProposal`.

    A ``RewriteProposal`` built in code (a stage function's) is checked by
    the same rules as JSON: it is turned into its JSON form and parsed again,
    so no shape rule can be skipped by constructing the object directly.

    Raises:
        ProposalInvalid: the shape breaks a rule (the field and the rule are named).
    """
    if isinstance(raw, RewriteProposal):
        try:
            # A dataclass does not check its field types: a wrong one fails here, and is
            # reported as a shape error like any bad JSON.
            raw = raw.to_dict()
        except (TypeError, ValueError, AttributeError) as exc:
            raise ProposalInvalid(
                "proposal",
                f"a RewriteProposal whose fields do not have their declared types ({exc})",
            ) from None
    data = _mapping(raw, "", _TOP_KEYS)
    op = data.get("op")
    if op not in ("expand_node", "append_after"):
        raise ProposalInvalid(
            "op", f"must be `expand_node` or `append_after` (the closed algebra; got {op!r})"
        )
    mode = data.get("mode")
    if op == "expand_node" and mode not in ("replace", "retain"):
        raise ProposalInvalid(
            "mode", f"expand_node needs mode `replace` or `retain` (got {mode!r})"
        )
    if op == "append_after" and mode is not None:
        raise ProposalInvalid("mode", f"applies to expand_node only (got {mode!r})")
    anchor = _string(data.get("anchor"), "anchor")
    rationale = data.get("rationale")
    if rationale is not None and (
        not isinstance(rationale, str) or len(rationale) > _MAX_RATIONALE
    ):
        raise ProposalInvalid(
            "rationale", f"must be a string of at most {_MAX_RATIONALE} characters"
        )
    spec = _mapping(data.get("spec"), "spec", _SPEC_KEYS)
    raw_nodes = _list(spec.get("nodes"), "spec.nodes", MAX_LOCAL_NODES)
    if not raw_nodes:
        raise ProposalInvalid("spec.nodes", "must hold at least one node")
    nodes: list[LocalNode] = []
    seen: set[str] = set()
    for i, item in enumerate(raw_nodes):
        where = f"spec.nodes[{i}]"
        node = _mapping(item, where, _NODE_KEYS)
        local = _local_id(node.get("id"), f"{where}.id")
        if local in seen:
            raise ProposalInvalid(f"{where}.id", f"duplicate local id {local!r}")
        seen.add(local)
        nodes.append(
            LocalNode(
                id=local,
                kind=_string(node.get("kind"), f"{where}.kind"),
                config=_config(node.get("config"), f"{where}.config"),
            )
        )
    edges = tuple(
        _edge(e, f"spec.edges[{i}]")
        for i, e in enumerate(_list(spec.get("edges", []), "spec.edges", MAX_LOCAL_EDGES))
    )
    return RewriteProposal(
        op=op,
        anchor=anchor,
        mode=mode,
        rationale=rationale,
        spec=SubgraphSpec(
            nodes=tuple(nodes),
            edges=edges,
            entry=_ids(spec.get("entry", []), "spec.entry"),
            exit=_ids(spec.get("exit", []), "spec.exit"),
        ),
    )
