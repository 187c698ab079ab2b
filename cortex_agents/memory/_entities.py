"""Entity signals: a candidate whose evidence the question, or the best match, names.

A node's evidence strings (:class:`~cortex_agents.memory._extract.ExtractedFields`:
an analyst's sources, a paragraph's title) often *are* the entity it is about.
Two signals read them (``WalkSpec.named_evidence`` and ``WalkSpec.bridge``):

* **named in the query** — the question names the candidate's evidence
  ("... the author of *Brand* ..." and an analyst whose evidence is
  ``Brand (play)``): the first entity of a multi-hop question;
* **bridge** — the best-ranked candidate's body names another candidate's
  evidence (the park's paragraph names the club; the club's analyst is the
  next hop): the bridge entity of a multi-hop question, which the question
  itself never names.

**Naming.** A string's *name* is its words — maximal runs of ``\\w``,
casefolded — after a trailing parenthetical qualifier is left out
(``"Brand (play)"`` -> ``("brand",)``). A text names a string when the
string's name appears in the text's words as a contiguous run. Names shorter
than :data:`MIN_NAME_CHARS` characters (all words together) or longer than
:data:`MAX_NAME_WORDS` words name nothing (``"A"``, a sentence-long citation).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from cortex_agents.memory._columns import Column

if TYPE_CHECKING:
    from cortex_agents.memory._view import IndexView, IntArray

__all__ = [
    "MAX_NAME_WORDS",
    "MIN_NAME_CHARS",
    "EvidenceNames",
    "Name",
    "name_of",
    "named",
    "names_in",
    "words",
]

FloatArray = npt.NDArray[np.float64]

MAX_NAME_WORDS: Final = 12
MIN_NAME_CHARS: Final = 3
_WORD: Final = re.compile(r"\w+")
_QUALIFIER: Final = re.compile(r"\s*\([^()]*\)\s*$")

Name = tuple[str, ...]


def words(text: str) -> list[str]:
    """The casefolded ``\\w+`` runs of ``text``, in order."""
    return _WORD.findall(text.casefold())


def name_of(evidence: str) -> Name | None:
    """The name an evidence string stands for, or ``None`` when it names nothing."""
    found = tuple(words(_QUALIFIER.sub("", evidence)))
    if not found or len(found) > MAX_NAME_WORDS or sum(map(len, found)) < MIN_NAME_CHARS:
        return None
    return found


def names_in(text: str) -> set[Name]:
    """Every contiguous run of at most :data:`MAX_NAME_WORDS` words of ``text``."""
    found = words(text)
    return {
        tuple(found[i : i + n])
        for i in range(len(found))
        for n in range(1, min(MAX_NAME_WORDS, len(found) - i) + 1)
    }


def named(evidence: Iterable[str], runs: set[Name]) -> bool:
    """Whether any evidence string's name is among ``runs`` (see :func:`names_in`)."""
    return any((name := name_of(e)) is not None and name in runs for e in evidence)


class EvidenceNames:
    """The names of every arrived output's evidence, interned, in arrival order.

    Kept by a :class:`~cortex_agents.memory._fields.FieldsIndex` like its postings
    (caught up under the index lock, read as of a view by arrival tick, cut at a
    fork's length), so a query asks "which candidates does this text name" in
    one pass over numpy columns instead of a Python call per candidate.

    Attributes:
        done: How many arrived outputs it has read.
        ids: Name -> interned id.
        owners: The node of each evidence item, in arrival order.
        items: The interned name of each evidence item (parallel to ``owners``).
        empty: The interned names of the extractor's empty evidence (a node without output).
    """

    __slots__ = ("done", "empty", "ids", "items", "owners")

    def __init__(self, empty_evidence: Iterable[str]) -> None:
        self.done = 0
        self.ids: dict[Name, int] = {}
        self.owners = Column()
        self.items = Column()
        self.empty = [self._intern(n) for e in empty_evidence if (n := name_of(e)) is not None]

    def _intern(self, name: Name) -> int:
        found = self.ids.get(name)
        if found is None:
            found = self.ids[name] = len(self.ids)
        return found

    def catch_up(self, ready: list[int], evidence: list[tuple[str, ...]], done: int) -> None:
        """Read the evidence of the outputs ``ready[self.done:done]`` (index lock held)."""
        for i in ready[self.done : done]:
            for text in evidence[i]:
                name = name_of(text)
                if name is not None:
                    self.owners.append(i)
                    self.items.append(self._intern(name))
        self.done = done

    def fork(self, arrived: Any, ready: int, length: int) -> EvidenceNames:
        """A copy for a fork at ``length`` events (``ready`` outputs had arrived;
        ``arrived``: the parent's output ticks by ordinal)."""
        other = EvidenceNames.__new__(EvidenceNames)
        other.done = min(self.done, ready)
        other.ids = dict(self.ids)
        other.empty = list(self.empty)
        kept = self.owners.size
        if self.done > ready:
            # Items are in arrival order, so their owners' ticks ascend: those before the first
            # owner that arrived at or past the fork's length are exactly the fork's.
            kept = int(np.searchsorted(arrived[self.owners.prefix()], length))
        other.owners = self.owners.copy(kept)
        other.items = self.items.copy(kept)
        return other

    def hits(self, view: IndexView, nodes: IntArray, runs: set[Name]) -> FloatArray:
        """1.0 for each of ``nodes`` whose evidence ``runs`` name (as of ``view``), else 0.0."""
        wanted = np.zeros(len(self.ids) + 1, dtype=bool)
        for run in runs:
            found = self.ids.get(run)
            if found is not None:
                wanted[found] = True
        owners = self.owners.prefix()
        # Arrival order again (as in fork): one binary search finds the items the view has seen.
        seen = int(np.searchsorted(view.index.output_tick.data[owners], view.length))
        flagged = np.zeros(view.n, dtype=bool)
        flagged[owners[:seen][wanted[self.items.data[:seen]]]] = True
        out = flagged[nodes]
        if any(wanted[i] for i in self.empty):
            out = np.where(view.ready(nodes), out, True)
        else:
            out = out & view.ready(nodes)
        return out.astype(np.float64)
