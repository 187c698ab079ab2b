"""Semantic scorers as a named choice: the scorer registry.

A preset names its scorer (``Preset(scorer="wordllama")``), a
``Topological(scorer=...)`` stage may override it, and wire files, the CLI
(``memory query --scorer``) and the evaluation harness choose one by name.
Built in::

    jaccard          token Jaccard over casefolded \\w+ tokens (no model)
    bm25             Okapi BM25 over identifier-keeping tokens, the candidates' statistics
    bm25-view        the same over the statistics of every settled node of the snapshot
    wordllama        static word embeddings (WordLlama, weights in its wheel; a core dependency)
    minilm           all-MiniLM-L6-v2, int8 ONNX on onnxruntime (extra: cortex-agents[minilm])
    bge              bge-small-en-v1.5, int8 ONNX on onnxruntime (extra: cortex-agents[bge])
    wordllama+bm25   2 x wordllama + 1 x bm25, a weighted mean: the default (core install)
    minilm+bm25      1 x minilm + 1 x bm25 (extra: cortex-agents[minilm])
    bge+bm25         2 x bge + 1 x bm25 (extra: cortex-agents[bge])
    hybrid           the mean of wordllama and jaccard: meaning, plus exact words

**Fusion.** A hybrid is a :class:`Blend`: the weighted mean of its parts' axes,
each in [0, 1] on its own (BM25 divided by its supremum, cosine clipped at 0),
computed in the order the parts are listed — deterministic, and candidate
independent, so a node's score does not move when another candidate comes or
goes. The harness compared it with reciprocal-rank fusion (k = 10 and 60) and
with min-max normalised means on the dev split (README, "Retrieval quality"):
the plain weighted mean ranked best with either dense scorer.

A registry is a value, like :class:`~cortex_agents.memory._presets.PresetRegistry`:
:meth:`ScorerRegistry.with_scorers` returns a new one::

    scorers = BUILTIN_SCORERS.with_scorers(
        ScorerEntry(name="openai", load=lambda: langchain_scorer(OpenAIEmbeddings(...)))
    )

Models load lazily, once per registry, from a ``"module:function"`` reference,
so importing this module loads nothing; :meth:`ScorerRegistry.load` raises
:class:`~cortex_agents.errors.ScorerUnavailable` naming the scorer and how to
install it, and a wire calls it when it is validated, never mid-run.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from cortex_agents.errors import InvalidArgument, ScorerUnavailable, UnknownScorer
from cortex_agents.memory._embedding import EmbeddingCache, EmbeddingScorer
from cortex_agents.memory._lexical import BM25
from cortex_agents.memory._scoring import clamp_axis
from cortex_agents.memory._semantic import SemanticScorer, token_jaccard

__all__ = ["BUILTIN_SCORERS", "DEFAULT_SCORER", "Blend", "ScorerEntry", "ScorerRegistry"]

_NAME: Final = re.compile(r"[A-Za-z0-9_.+-]{1,64}")

DEFAULT_SCORER: Final = "wordllama+bm25"
"""The scorer of every built-in preset (chosen by the retrieval harness on its dev split)."""


class Blend:
    """A weighted mean of scorers: ``sum(w_i * clamp(s_i)) / sum(w_i)``, parts in order.

    The vectorised engine computes each part vectorised and combines them with
    the same expression, so both engines agree bit for bit.

    Args:
        parts: ``(scorer, weight)`` pairs; weights finite, >= 0, at least one > 0.
    """

    __slots__ = ("parts", "total")

    def __init__(self, parts: Iterable[tuple[SemanticScorer, float]]) -> None:
        self.parts = tuple((scorer, float(weight)) for scorer, weight in parts)
        if not self.parts:
            raise InvalidArgument("blend.parts", "must name at least one scorer", ())
        for scorer, weight in self.parts:
            if not callable(scorer):
                raise InvalidArgument("blend.parts", "must be callable scorers", scorer)
            if not weight >= 0 or weight == float("inf"):
                raise InvalidArgument("blend.parts", "weights must be finite and >= 0", weight)
        self.total = sum(weight for _, weight in self.parts)
        if self.total <= 0:
            raise InvalidArgument("blend.parts", "must have a weight > 0", self.total)

    def __call__(self, query_text: str, body_text: str) -> float:
        """The weighted mean of the parts' scores."""
        value = 0.0
        for scorer, weight in self.parts:
            value = value + weight * clamp_axis(scorer(query_text, body_text))
        return value / self.total

    def __repr__(self) -> str:
        return "Blend(" + ", ".join(f"{s!r}: {w:g}" for s, w in self.parts) + ")"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScorerEntry:
    """A named scorer: an instance, a factory, or a blend of other entries.

    Give exactly one of ``scorer``, ``load`` and ``parts``.

    Attributes:
        name: Matches ``[A-Za-z0-9_.+-]+``, at most 64 characters.
        scorer: A ready scorer.
        load: A factory returning the scorer, or ``"module:function"`` naming
            one (imported on first use, so a missing package fails at load).
        parts: Other entries' names and weights: the scorer is their :class:`Blend`.
        description: One line for humans.
        install: How to make it loadable (shown when it cannot load).
    """

    name: str
    scorer: SemanticScorer | None = None
    load: Callable[[], SemanticScorer] | str | None = None
    parts: Mapping[str, float] | None = None
    description: str = ""
    install: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise InvalidArgument(
                "scorer.name", "must match `[A-Za-z0-9_.+-]+`, at most 64 characters", self.name
            )
        given = [x for x in (self.scorer, self.load, self.parts) if x is not None]
        if len(given) != 1:
            raise InvalidArgument(
                f"scorers.{self.name}", "must give exactly one of `scorer`, `load`, `parts`", None
            )
        if self.scorer is not None and not callable(self.scorer):
            raise InvalidArgument(f"scorers.{self.name}.scorer", "must be callable", self.scorer)
        if isinstance(self.load, str) and ":" not in self.load:
            raise InvalidArgument(
                f"scorers.{self.name}.load", "must be 'module:function' or a callable", self.load
            )
        if self.load is not None and not isinstance(self.load, str) and not callable(self.load):
            raise InvalidArgument(f"scorers.{self.name}.load", "must be callable", self.load)
        if self.parts is not None:
            object.__setattr__(self, "parts", dict(self.parts))


def _import(reference: str) -> Callable[[], SemanticScorer]:
    module_name, _, attr = reference.partition(":")
    module = importlib.import_module(module_name)
    factory: Callable[[], SemanticScorer] = getattr(module, attr)  # what the entry names
    return factory


class ScorerRegistry(Mapping[str, ScorerEntry]):
    """An immutable name -> :class:`ScorerEntry` mapping that loads scorers on demand.

    Args:
        entries: The scorers it holds.
        cache: When set, every embedding scorer it loads keeps its body
            vectors there (see :meth:`with_embedding_cache`).
    """

    __slots__ = ("_cache", "_entries", "_loaded", "_lock")

    def __init__(
        self, entries: Iterable[ScorerEntry] = (), *, cache: EmbeddingCache | None = None
    ) -> None:
        table: dict[str, ScorerEntry] = {}
        for entry in entries:
            if not isinstance(entry, ScorerEntry):
                raise InvalidArgument("scorers", "must be ScorerEntry values", entry)
            if entry.name in table:
                raise InvalidArgument("scorer.name", "must be unique in a registry", entry.name)
            table[entry.name] = entry
        self._entries = table
        self._cache = cache
        self._loaded: dict[str, SemanticScorer] = {}
        self._lock = threading.RLock()

    def __getitem__(self, name: str) -> ScorerEntry:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"ScorerRegistry({sorted(self._entries)})"

    @property
    def cache(self) -> EmbeddingCache | None:
        """Where loaded embedding scorers keep body vectors (``None``: each its own memory)."""
        return self._cache

    def entry(self, name: str) -> ScorerEntry:
        """The entry called ``name``.

        Raises:
            UnknownScorer: no such scorer; the error lists the known names.
        """
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise UnknownScorer(str(name), sorted(self._entries)) from None

    def load(self, name: str) -> SemanticScorer:
        """The scorer called ``name``, loaded once per registry.

        Raises:
            UnknownScorer: no such scorer.
            ScorerUnavailable: it cannot be loaded (missing package, corrupt
                file); the error names the scorer and how to install it.
        """
        with self._lock:
            loaded = self._loaded.get(name)
            if loaded is None:
                loaded = self._load(self.entry(name), ())
                self._loaded[name] = loaded
            return loaded

    def _load(self, entry: ScorerEntry, seen: tuple[str, ...]) -> SemanticScorer:
        if entry.name in seen:
            raise ScorerUnavailable(entry.name, f"blend cycle {' -> '.join((*seen, entry.name))}")
        if entry.parts is not None:
            parts = []
            for part, weight in entry.parts.items():
                if part in self._loaded:
                    parts.append((self._loaded[part], weight))
                    continue
                try:
                    part_entry = self.entry(part)
                except UnknownScorer as exc:
                    raise ScorerUnavailable(entry.name, f"blend part: {exc}") from None
                loaded = self._load(part_entry, (*seen, entry.name))
                self._loaded.setdefault(part, loaded)  # `hybrid` and `wordllama` share vectors
                parts.append((self._loaded[part], weight))
            try:
                return Blend(parts)
            except InvalidArgument as exc:
                raise ScorerUnavailable(entry.name, str(exc)) from None
        if entry.scorer is not None:
            scorer = entry.scorer
        else:
            try:
                factory = _import(entry.load) if isinstance(entry.load, str) else entry.load
                # not None: an entry gives exactly one of scorer, load, parts
                scorer = factory()  # type: ignore[misc]
            except ScorerUnavailable as exc:
                if exc.name == entry.name:
                    raise
                # an embedder names itself (`wordllama`): the error names the entry that failed
                raise ScorerUnavailable(
                    entry.name, exc.reason, entry.install or exc.install
                ) from None
            except Exception as exc:  # import error, missing or corrupt model file, ...
                raise ScorerUnavailable(
                    entry.name, f"{type(exc).__name__}: {exc}", entry.install
                ) from None
            if not callable(scorer):
                raise ScorerUnavailable(entry.name, f"its loader returned {scorer!r}")
        if self._cache is not None and isinstance(scorer, EmbeddingScorer):
            scorer = scorer.with_cache(self._cache)
        return scorer

    def with_scorers(self, *entries: ScorerEntry, replace_existing: bool = False) -> ScorerRegistry:
        """A new registry with ``entries`` added.

        Raises:
            InvalidArgument: a name already exists and ``replace_existing`` is false.
        """
        table = dict(self._entries)
        for entry in entries:
            if entry.name in table and not replace_existing:
                raise InvalidArgument(
                    "scorer.name", "already exists (pass replace_existing=True)", entry.name
                )
            table[entry.name] = entry
        return ScorerRegistry(table.values(), cache=self._cache)

    def with_embedding_cache(self, cache: EmbeddingCache) -> ScorerRegistry:
        """A new registry whose embedding scorers keep body vectors in ``cache``."""
        return ScorerRegistry(self._entries.values(), cache=cache)


_MINILM_INSTALL: Final = "pip install 'cortex-agents[minilm]'"
_BGE_INSTALL: Final = "pip install 'cortex-agents[bge]'"

BUILTIN_SCORERS: Final = ScorerRegistry(
    [
        ScorerEntry(
            name="jaccard",
            scorer=token_jaccard,
            description="token Jaccard over casefolded \\w+ tokens",
        ),
        ScorerEntry(
            name="bm25",
            scorer=BM25(),
            description="Okapi BM25 (k1 1.2, b 0.75) over identifier-keeping tokens, "
            "statistics of the candidates",
        ),
        ScorerEntry(
            name="bm25-view",
            scorer=BM25(corpus="view"),
            description="Okapi BM25 with the statistics of every settled node of the snapshot",
        ),
        ScorerEntry(
            name="wordllama",
            load="cortex_agents.embeddings:wordllama_scorer",
            description="static word embeddings (WordLlama l2_supercat, 256 dims)",
            install="pip install wordllama",
        ),
        ScorerEntry(
            name="minilm",
            load="cortex_agents.embeddings:minilm_scorer",
            description="all-MiniLM-L6-v2 int8 on onnxruntime, 384 dims",
            install=_MINILM_INSTALL,
        ),
        ScorerEntry(
            name="bge",
            load="cortex_agents.embeddings:bge_scorer",
            description="bge-small-en-v1.5 int8 on onnxruntime, 384 dims",
            install=_BGE_INSTALL,
        ),
        ScorerEntry(
            name="wordllama+bm25",
            parts={"wordllama": 2.0, "bm25": 1.0},
            description="weighted mean: 2 x wordllama, 1 x bm25 (the default)",
            install="pip install wordllama",
        ),
        ScorerEntry(
            name="minilm+bm25",
            parts={"minilm": 1.0, "bm25": 1.0},
            description="mean of minilm and bm25",
            install=_MINILM_INSTALL,
        ),
        ScorerEntry(
            name="bge+bm25",
            parts={"bge": 2.0, "bm25": 1.0},
            description="weighted mean: 2 x bge, 1 x bm25",
            install=_BGE_INSTALL,
        ),
        ScorerEntry(
            name="hybrid",
            parts={"wordllama": 1.0, "jaccard": 1.0},
            description="mean of wordllama and jaccard",
            install="pip install wordllama",
        ),
    ]
)
"""The built-in scorers."""
