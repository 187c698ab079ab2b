"""The retrieval configurations the harness compares, each a function of one case.

``shipped-reviewer`` is what a user gets without configuring anything: the
reviewer stage of the shipped claim-review wire (``graphs/claim_review.py``)
is bound to the case's snapshot, and its model's ``cortex_memory_query`` call
with only ``query_text`` runs through the tool's own code
(:func:`cortex_agents.tools.run_memory_query`): the stage's
preset, prior, weights, limit, kind filters and scorer, and the token budget
that decides how many matches the model is shown.

The others change one thing at a time against the shipped preset — its
graph prior, its edge support (``support:off``), its entity signals
(``entities:off``, ``bridge:off``), its repeated bodies (``distinct:off``),
its time reference (``time:snapshot``),
a single axis, its scorer — plus the seed's defaults
(``seed-reviewer``: weights 1.5/1/1, influence, token Jaccard, every kind),
the previous release's reviewer (``previous-reviewer``: wordllama, hop decay,
0.25/0.25/1, recency from the snapshot's time, no edge support) and the
reviewer stage's own recall (``stage-recall``, what its prompt carries).
``feedback`` is ``shipped-reviewer`` with the stage opting into the second
retrieval pass (``Topological(second_pass="feedback")``,
:mod:`cortex_agents.memory._feedback`): the same tool call, the same budget.
``diversity:mmr`` is ``shipped-reviewer`` with the stage opting into the
diversity stage (``Topological(diversity="mmr")``, the default
``mmr_lambda``, :mod:`cortex_agents.memory._diversity`), likewise.
``semantic:NAME`` ranks by one scorer alone — ``semantic:bm25`` is BM25
alone, ``semantic:wordllama`` and ``semantic:minilm`` dense cosine alone —
with the shipped filters and nothing else. Each returns node ids in rank order.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from cortex_agents.errors import ScorerUnavailable, UnknownScorer
from cortex_agents.evaluation._cases import LoadedCase
from cortex_agents.memory._handle import MemoryHandle
from cortex_agents.memory._presets import PresetRegistry
from cortex_agents.memory._spec import Query, WalkSpec, Weights
from cortex_agents.memory._strategy import MemoryStrategy, Topological

__all__ = ["Config", "build_configs", "shipped_reviewer_strategy", "unavailable_scorers"]

Ranker = Callable[[LoadedCase], list[str]]
_DEPTH: Final = 50  # how far a non-tool ranking is read (MRR looks this deep)


@dataclass(frozen=True, slots=True)
class Config:
    """A named retrieval configuration.

    Attributes:
        name: Shown in tables and the JSON.
        description: One line.
        rank: Node ids in rank order for a case.
    """

    name: str
    description: str
    rank: Ranker


def shipped_reviewer_strategy() -> tuple[MemoryStrategy, PresetRegistry]:
    """The memory strategy and presets of the shipped claim-review wire's reviewer stage."""
    # Imported here: `import cortex_agents.evaluation` then loads neither the runtime
    # nor LangGraph until a configuration is built.
    from cortex_agents.runtime._wire_file import load_wire

    wire = load_wire("graphs/claim_review.py")
    return wire.stage("reviewer").memory, wire.presets


def _tool_ranker(strategy: MemoryStrategy, presets: PresetRegistry) -> Ranker:
    from cortex_agents.tools._memory_query import MemoryQueryArgs, run_memory_query

    def rank(case: LoadedCase) -> list[str]:
        handle = MemoryHandle(case.snapshot, case.origin, presets=presets, strategy=strategy)
        # The tool reads only `.memory` from its context, so a namespace stands in
        # for a whole StageContext.
        _, artifact = run_memory_query(
            types.SimpleNamespace(memory=handle), MemoryQueryArgs(query_text=case.query)
        )
        return [m["node_id"] for m in artifact["matches"]]

    return rank


def _recall_ranker(strategy: MemoryStrategy, presets: PresetRegistry) -> Ranker:
    def rank(case: LoadedCase) -> list[str]:
        handle = MemoryHandle(case.snapshot, case.origin, presets=presets, strategy=strategy)
        return [m.node_id for m in handle.recall(text=case.query)]

    return rank


def _ranker(spec: WalkSpec, query_of: Callable[[str], Query]) -> Ranker:
    spec = dataclasses.replace(spec, limit=_DEPTH)

    def rank(case: LoadedCase) -> list[str]:
        handle = MemoryHandle(case.snapshot, case.origin)
        return [m.node_id for m in handle.query(spec, query_of(case.query))]

    return rank


def unavailable_scorers(presets: PresetRegistry | None = None) -> dict[str, str]:
    """The scorers of ``presets`` (default: the shipped wire's) that do not load here, with why."""
    if presets is None:
        _, presets = shipped_reviewer_strategy()
    out = {}
    for name in presets.scorers:
        try:
            presets.scorers.load(name)
        except (ScorerUnavailable, UnknownScorer) as exc:
            out[name] = str(exc)
    return out


def build_configs(scorers: tuple[str, ...] | None = None) -> list[Config]:
    """Every configuration, ``shipped-reviewer`` first.

    Args:
        scorers: The scorers to compare (default: every registered one that loads; see
            :func:`unavailable_scorers` for the others).

    Raises:
        ScorerUnavailable: a scorer named in ``scorers`` does not load.
        UnknownScorer: a scorer named in ``scorers`` is not registered.
    """
    strategy, presets = shipped_reviewer_strategy()
    preset_name = strategy.preset if isinstance(strategy, Topological) else "default"
    preset = presets.resolve(preset_name)
    base = dataclasses.replace(preset.spec, limit=None)

    configs = _reviewer_configs(strategy, presets, preset_name)
    configs += _ablation_configs(base, presets, preset_name)
    configs += _scorer_configs(scorers, base, presets, preset_name)
    return configs


def _shipped_query(
    presets: PresetRegistry, preset_name: str, scorer: str | None = None
) -> Callable[[str], Query]:
    return lambda text: presets.query(preset_name, text=text, scorer=scorer)


def _alone(base: WalkSpec, **weights: float) -> WalkSpec:  # one axis alone: no other signal either
    return dataclasses.replace(
        base,
        weights=Weights(**weights),
        support=0.0,
        named_evidence=0.0,
        bridge=0.0,
        distinct_bodies=False,
    )


def _reviewer_configs(
    strategy: MemoryStrategy, presets: PresetRegistry, preset_name: str
) -> list[Config]:
    """The shipped reviewer (its tool, its second pass, its recall) and the rankers it replaced."""
    jaccard = presets.scorers.load("jaccard")
    configs = [
        Config(
            "shipped-reviewer",
            f"reviewer stage's tool call with only query_text (preset {preset_name!r})",
            _tool_ranker(strategy, presets),
        ),
        Config(
            "feedback",
            "shipped-reviewer with the opt-in second pass: Topological(second_pass='feedback')",
            _tool_ranker(
                dataclasses.replace(strategy, second_pass="feedback")
                if isinstance(strategy, Topological)
                else Topological(second_pass="feedback"),
                presets,
            ),
        ),
        Config(
            "diversity:mmr",
            "shipped-reviewer with the opt-in diversity stage: Topological(diversity='mmr')",
            _tool_ranker(
                dataclasses.replace(strategy, diversity="mmr")
                if isinstance(strategy, Topological)
                else Topological(diversity="mmr"),
                presets,
            ),
        ),
        Config(
            "stage-recall",
            "the reviewer stage's own recall, with its focus as text",
            _recall_ranker(strategy, presets),
        ),
        Config(
            "seed-reviewer",
            "seed defaults: weights 1.5/1/1, influence, token Jaccard, every kind",
            _ranker(WalkSpec(weights=Weights(graph=1.5)), lambda t: Query(text=t, scorer=jaccard)),
        ),
        Config(
            "baseline:hop_decay",
            "seed weights 1.5/1/1 with the hop-decay prior, token Jaccard",
            _ranker(
                WalkSpec(weights=Weights(graph=1.5), prior="hop_decay"),
                lambda t: Query(text=t, scorer=jaccard),
            ),
        ),
    ]
    configs.append(
        Config(
            "previous-reviewer",
            "the previous default: wordllama, hop decay, 0.25/0.25/1, snapshot time, no support",
            _ranker(
                WalkSpec(
                    prior="hop_decay",
                    weights=Weights(graph=0.25, temporal=0.25, semantic=1.0),
                ),
                lambda t: presets.query(preset_name, text=t, scorer="wordllama"),
            ),
        )
    )
    return configs


def _ablation_configs(base: WalkSpec, presets: PresetRegistry, preset_name: str) -> list[Config]:
    """The shipped preset with one signal off or changed, and each axis alone."""
    shipped_query = functools.partial(_shipped_query, presets, preset_name)
    configs: list[Config] = []
    configs.append(
        Config(
            "support:off",
            "shipped preset without edge support",
            _ranker(dataclasses.replace(base, support=0.0), shipped_query()),
        )
    )
    configs.append(
        Config(
            "entities:off",
            "shipped preset without the entity signals (evidence named by the query, bridge)",
            _ranker(dataclasses.replace(base, named_evidence=0.0, bridge=0.0), shipped_query()),
        )
    )
    configs.append(
        Config(
            "bridge:off",
            "shipped preset without the bridge signal",
            _ranker(dataclasses.replace(base, bridge=0.0), shipped_query()),
        )
    )
    configs.append(
        Config(
            "distinct:off",
            "shipped preset ranking repeated bodies where they score",
            _ranker(dataclasses.replace(base, distinct_bodies=False), shipped_query()),
        )
    )
    configs.append(
        Config(
            "time:snapshot",
            "shipped preset with recency measured from the snapshot's time",
            _ranker(dataclasses.replace(base, time_reference="snapshot"), shipped_query()),
        )
    )
    for prior in ("influence", "hop_decay"):
        configs.append(
            Config(
                f"prior:{prior}",
                f"shipped preset with the {prior} prior",
                _ranker(dataclasses.replace(base, prior=prior), shipped_query()),
            )
        )
    for axis in ("graph", "temporal", "semantic"):
        weights = {"graph": 0.0, "temporal": 0.0, "semantic": 0.0, axis: 1.0}
        configs.append(
            Config(
                f"axis:{axis}",
                f"the {axis} axis alone (shipped prior, scorer, filters)",
                _ranker(_alone(base, **weights), shipped_query()),
            )
        )
    return configs


def _scorer_configs(
    scorers: tuple[str, ...] | None, base: WalkSpec, presets: PresetRegistry, preset_name: str
) -> list[Config]:
    """Each scorer in the shipped preset, and alone on the semantic axis."""
    shipped_query = functools.partial(_shipped_query, presets, preset_name)
    configs: list[Config] = []
    names = scorers if scorers is not None else tuple(presets.scorers)
    skipped = unavailable_scorers(presets) if scorers is None else {}
    for name in names:
        if name in skipped:
            continue
        presets.scorers.load(name)  # a scorer asked for by name must load
        configs.append(
            Config(
                f"scorer:{name}",
                f"shipped preset with the {name} scorer",
                _ranker(base, shipped_query(name)),
            )
        )
        configs.append(
            Config(
                f"semantic:{name}",
                f"the {name} scorer alone (semantic axis only)",
                _ranker(_alone(base, graph=0, temporal=0, semantic=1), shipped_query(name)),
            )
        )
    return configs
