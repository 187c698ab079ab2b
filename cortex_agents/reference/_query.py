"""The reference pipeline: plain Python, obviously correct, slow.

This is the definition the vectorised engine (:mod:`cortex_agents.memory._engine`)
is tested against: identical rankings and identical scores on random DAGs.
Steps (DESIGN §4):

1. enumerate candidates by BFS per direction (:func:`walk_candidates`);
2. graph axis: influence per direction, merged by max (or hop decay);
3. cut by ``max_distance``, then keep what is beyond ``past_boundary``;
4. filter by scope, kinds, excluded kinds and routing key;
5. score the three axes, combine: the semantic axis of every candidate is
   computed first (:func:`semantic_axes`: a corpus scorer such as BM25 needs
   the corpus), then raised where the query names the candidate's evidence,
   then by edge support (its neighbours' axes); the temporal axis from the
   chosen time reference;
6. sort by ``(score desc, hops asc, node_id asc)``, total and deterministic;
   with ``bridge``, raise the candidates whose evidence the first one's body
   names, and sort again; with ``feedback``, score every body against the
   first ``feedback_depth`` bodies' feedback query (BM25 over the candidates,
   :mod:`cortex_agents.memory._feedback`), raise each axis by ``feedback``
   times that, and sort again; with ``distinct_bodies``, move each repeated
   body after every first occurrence; with ``diversity="mmr"``, reorder the
   first ``mmr_depth`` (first occurrences only) by maximal marginal relevance
   (:mod:`cortex_agents.memory._diversity`);
7. apply the limit after the sort. Never stop early: the score is not
   monotone along edges, so best-first with stop-at-k is unsound (seed 001, F2).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from cortex_agents._timestamps import to_micros
from cortex_agents.errors import UnknownNode
from cortex_agents.memory._diversity import mmr_order
from cortex_agents.memory._entities import named, names_in
from cortex_agents.memory._extract import ExtractedFields
from cortex_agents.memory._feedback import FEEDBACK_SCORER, feedback_text
from cortex_agents.memory._influence import Relation, canonical_order, dag_random_walk_influence
from cortex_agents.memory._lexical import BM25, CorpusStats, lexical_tokens
from cortex_agents.memory._match import Match
from cortex_agents.memory._scorers import Blend
from cortex_agents.memory._scoring import clamp_axis, composite_score, hop_decay, temporal_axis
from cortex_agents.memory._semantic import SemanticScorer
from cortex_agents.memory._snapshot import MemorySnapshot
from cortex_agents.memory._spec import Query, WalkSpec
from cortex_agents.reference._walk import bfs_distance, relations_of, walk_candidates
from cortex_agents.substrate._records import SETTLED, NodeId

__all__ = ["beyond_boundary", "query_reference", "semantic_axes"]

_EMPTY_FIELDS = ExtractedFields(None, "", ())


def beyond_boundary(
    relation: Relation, origin: NodeId, kinds: dict[NodeId, str], boundary_kind: str
) -> set[NodeId]:
    """Nodes strictly beyond the nearest ``boundary_kind`` nodes from ``origin``.

    The boundary is the set of nodes of that kind at the smallest hop
    distance from the origin; the result is everything reachable from a
    boundary node (a boundary node itself only if another one reaches it).
    """
    distance = bfs_distance(relation, origin)
    hits = [(d, n) for n, d in distance.items() if n != origin and kinds[n] == boundary_kind]
    if not hits:
        return set()
    nearest = min(d for d, _ in hits)
    beyond: set[NodeId] = set()
    for _, node in hits:
        if distance[node] == nearest:
            beyond.update(n for n in bfs_distance(relation, node) if n != node)
    return beyond


def query_reference(
    snapshot: MemorySnapshot,
    origin: str,
    spec: WalkSpec | None = None,
    query: Query | None = None,
) -> tuple[Match, ...]:
    """Rank the memory of ``origin`` in ``snapshot``: the plain reference.

    Raises:
        UnknownNode: ``origin`` is not in the snapshot.
        CycleError: the snapshot's topology has a cycle.
    """
    spec = spec or WalkSpec()
    query = query or Query()
    if origin not in snapshot.nodes:
        raise UnknownNode(origin)
    forward, backward = relations_of(snapshot)
    canonical = canonical_order(forward)  # a cyclic snapshot is an error for every query
    relations = {
        "ancestors": (backward,),
        "descendants": (forward,),
        "bidirectional": (forward, backward),
    }[spec.direction]
    origin_id = NodeId(origin)

    hops = _candidates(snapshot, origin_id, spec, relations)
    graph = _graph_axis(hops, origin_id, spec, relations, forward, canonical)
    kept = _kept(snapshot, hops, spec, query)
    semantic = _semantic_axis(snapshot, kept, spec, query)
    matches = _ranked(snapshot, kept, graph, semantic, spec)
    if query.text and spec.bridge > 0 and matches:
        matches = _bridged(matches, spec)
    if query.text and spec.feedback > 0 and matches:
        matches = _fed_back(matches, spec, query.text)
    new = len(matches)  # how many lead the order with a body not seen before it
    if spec.distinct_bodies:
        matches, new = _distinct_first(matches)
    if spec.diversity == "mmr":  # the first new bodies only: a repeat stays after all of them
        matches = _mmr_first(matches, spec, min(spec.mmr_depth, new))
    return tuple(matches if spec.limit is None else matches[: spec.limit])


_Kept = tuple[NodeId, int, ExtractedFields, str]
"""A candidate the filters kept: its id, hops from the origin, fields and routing key."""


def _candidates(
    snapshot: MemorySnapshot, origin: NodeId, spec: WalkSpec, relations: tuple[Relation, ...]
) -> dict[NodeId, int]:
    """The walk's candidates and their hops, cut at ``max_distance`` and the past boundary."""
    hops = walk_candidates(snapshot, origin, spec.direction)
    if spec.max_distance is not None:
        hops = {n: h for n, h in hops.items() if h <= spec.max_distance}
    if spec.past_boundary is not None:
        kinds = {n: node.kind for n, node in snapshot.nodes.items()}
        beyond: set[NodeId] = set()
        for relation in relations:
            beyond |= beyond_boundary(relation, origin, kinds, spec.past_boundary)
        hops = {n: h for n, h in hops.items() if n in beyond}
    return hops


def _graph_axis(
    hops: dict[NodeId, int],
    origin: NodeId,
    spec: WalkSpec,
    relations: tuple[Relation, ...],
    forward: Relation,
    canonical: list[NodeId],
) -> dict[NodeId, float]:
    """Each candidate's graph prior: its random-walk influence, or its hop decay."""
    graph: dict[NodeId, float] = {}
    if spec.prior == "influence":
        for relation in relations:  # summed in the graph's canonical order, reversed for ancestors
            order = canonical if relation is forward else canonical[::-1]
            influence = dag_random_walk_influence(relation, origin, spec.alpha, order=order)
            for candidate in hops:
                graph[candidate] = max(graph.get(candidate, 0.0), influence[candidate])
    else:
        graph = {candidate: hop_decay(h) for candidate, h in hops.items()}
    return graph


def _kept(
    snapshot: MemorySnapshot, hops: dict[NodeId, int], spec: WalkSpec, query: Query
) -> list[_Kept]:
    """The candidates that pass the scope, kind and routing-key filters, in walk order."""
    kept: list[_Kept] = []
    for node_id, distance in hops.items():
        node = snapshot.nodes[node_id]
        if spec.scope == "settled_only" and node.status != SETTLED:
            continue
        if query.kinds is not None and node.kind not in query.kinds:
            continue
        if node.kind in query.exclude_kinds:
            continue
        fields = query.extractor(node.output) or _EMPTY_FIELDS
        # A node whose extractor names no routing key is routed by its kind.
        routing_key = fields.routing_key if fields.routing_key is not None else node.kind
        if query.routing_key is not None and routing_key != query.routing_key:
            continue
        kept.append((node_id, distance, fields, routing_key))
    return kept


def _semantic_axis(
    snapshot: MemorySnapshot, kept: list[_Kept], spec: WalkSpec, query: Query
) -> list[float]:
    """Each kept candidate's semantic axis: text match, named evidence, then edge support."""
    bodies = [fields.body_text for _, _, fields, _ in kept]
    semantic = [0.0] * len(kept)
    if query.text:
        # A function, not a list: only BM25 with `corpus="view"` calls it, so the
        # other scorers never extract every settled node's body.
        def corpus() -> list[str]:  # the view's documents: every settled node's body
            return [
                (query.extractor(node.output) or _EMPTY_FIELDS).body_text
                for node in snapshot.nodes.values()
                if node.status == SETTLED
            ]

        semantic = semantic_axes(query.scorer, query.text, bodies, corpus)
        if spec.named_evidence > 0:
            runs = names_in(query.text)
            semantic = [
                min(
                    axis + spec.named_evidence * (1.0 if named(fields.evidence, runs) else 0.0), 1.0
                )
                for axis, (_, _, fields, _) in zip(semantic, kept, strict=True)
            ]
    if spec.support > 0:
        semantic = _supported(snapshot, [node_id for node_id, *_ in kept], semantic, spec.support)
    return semantic


def _ranked(
    snapshot: MemorySnapshot,
    kept: list[_Kept],
    graph: dict[NodeId, float],
    semantic: list[float],
    spec: WalkSpec,
) -> list[Match]:
    """The kept candidates scored on the three axes, best first."""
    observed = [to_micros(snapshot.nodes[node_id].observed_at) for node_id, *_ in kept]
    reference_time = to_micros(snapshot.captured_at)
    if spec.time_reference == "newest" and kept:
        # "newest": ages count from the newest kept candidate, not from the capture,
        # so a snapshot read long after the run does not age every node alike.
        reference_time = max(observed)
    matches: list[Match] = []
    for (node_id, distance, fields, routing_key), axis, seen in zip(
        kept, semantic, observed, strict=True
    ):
        node = snapshot.nodes[node_id]
        graph_axis = clamp_axis(graph[node_id])
        temporal = temporal_axis(reference_time - seen, spec.time_scale)
        matches.append(
            Match(
                node_id=node_id,
                kind=node.kind,
                status=node.status,
                hops=distance,
                score=composite_score(spec.weights, graph_axis, temporal, axis),
                graph=graph_axis,
                temporal=temporal,
                semantic=axis,
                routing_key=routing_key,
                body_text=fields.body_text,
                evidence=fields.evidence,
                output=node.output if fields.projected is None else fields.projected,
            )
        )
    matches.sort(key=lambda m: (-m.score, m.hops, m.node_id))
    return matches


def _bridged(matches: list[Match], spec: WalkSpec) -> list[Match]:
    """``matches`` with a gain for each one whose evidence the best match names, re-sorted."""
    top, runs = matches[0], names_in(matches[0].body_text)
    matches = [
        dataclasses.replace(
            m,
            semantic=(axis := min(m.semantic + spec.bridge, 1.0)),
            score=composite_score(spec.weights, m.graph, m.temporal, axis),
        )
        # The top match's own evidence does not bridge to itself.
        if m is not top and named(m.evidence, runs)
        else m
        for m in matches
    ]
    matches.sort(key=lambda m: (-m.score, m.hops, m.node_id))
    return matches


def _fed_back(matches: list[Match], spec: WalkSpec, query_text: str) -> list[Match]:
    """``matches`` with the feedback pass's gain (the leading bodies as more query), re-sorted."""
    leading = [m.body_text for m in matches[: spec.feedback_depth]]
    text = feedback_text(query_text, leading)
    if text:
        texts = [m.body_text for m in matches]
        axes = semantic_axes(FEEDBACK_SCORER, text, texts, lambda: texts)
        matches = [
            dataclasses.replace(
                m,
                semantic=(axis := min(m.semantic + spec.feedback * gain, 1.0)),
                score=composite_score(spec.weights, m.graph, m.temporal, axis),
            )
            for m, gain in zip(matches, axes, strict=True)
        ]
        matches.sort(key=lambda m: (-m.score, m.hops, m.node_id))
    return matches


def _distinct_first(matches: list[Match]) -> tuple[list[Match], int]:
    """``matches`` with each repeated body after every first one, otherwise in order, and how many lead."""
    bodies_seen: set[str] = set()
    first: list[Match] = []
    repeats: list[Match] = []
    for m in matches:
        # Empty bodies are never repeats: nodes with no text are not duplicates of each other.
        (repeats if m.body_text and m.body_text in bodies_seen else first).append(m)
        bodies_seen.add(m.body_text)
    return first + repeats, len(first)


def _mmr_first(matches: list[Match], spec: WalkSpec, depth: int) -> list[Match]:
    """``matches`` with the first ``depth`` reordered by maximal marginal relevance."""
    head = matches[:depth]
    picked = mmr_order([m.score for m in head], [m.body_text for m in head], spec.mmr_lambda)
    return [head[i] for i in picked] + matches[depth:]


def semantic_axes(
    scorer: SemanticScorer,
    text: str,
    bodies: Sequence[str],
    corpus: Callable[[], Sequence[str]],
) -> list[float]:
    """The semantic axis of each body, in [0, 1]: the definition the engine vectorises.

    * a :class:`~cortex_agents.memory._lexical.BM25` scorer scores against the
      statistics of its corpus: the candidates' ``bodies``, or ``corpus()``
      (every settled node's body) for ``corpus="view"``;
    * a :class:`~cortex_agents.memory._scorers.Blend` is the weighted mean of
      its parts' axes, each computed by this function (so a blend may hold BM25);
    * any other scorer is called on each body, NaN counting as 0, clamped.
    """
    if isinstance(scorer, BM25):
        tokens = [lexical_tokens(body) for body in bodies]
        documents = tokens if scorer.corpus == "candidates" else map(lexical_tokens, corpus())
        stats = CorpusStats.of(documents)
        return [clamp_axis(scorer.axis(text, t, stats)) for t in tokens]
    if isinstance(scorer, Blend):
        value = [0.0] * len(bodies)
        for part, weight in scorer.parts:
            axes = semantic_axes(part, text, bodies, corpus)
            value = [v + weight * a for v, a in zip(value, axes, strict=True)]
        # Each part's axis is clamped first, so one unbounded part cannot outweigh its weight.
        return [clamp_axis(v / scorer.total) for v in value]
    return [clamp_axis(scorer(text, body)) for body in bodies]


def _supported(
    snapshot: MemorySnapshot, candidates: list[NodeId], semantic: list[float], support: float
) -> list[float]:
    """Each axis plus ``support`` times the best axis among candidates sharing an edge with it."""
    # Support is read from the axes before this pass (`axis`, not the result),
    # so the outcome does not depend on edge order and support does not chain.
    axis = dict(zip(candidates, semantic, strict=True))
    best = dict.fromkeys(candidates, 0.0)
    for edge in snapshot.edges:
        if edge.source in axis and edge.target in axis:
            best[edge.source] = max(best[edge.source], axis[edge.target])
            best[edge.target] = max(best[edge.target], axis[edge.source])
    return [min(axis[n] + support * best[n], 1.0) for n in candidates]
