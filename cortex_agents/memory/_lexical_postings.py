"""BM25's statistics, kept incrementally: token frequencies of every output, in arrival order.

One :class:`LexicalPostings` belongs to a :class:`~cortex_agents.memory._fields.FieldsIndex`
(one extractor of one memory index). It reads each output's body once, when it
catches up (lazily, the first time a BM25 query needs it, then only what
arrived since), and appends:

* per term, the node's ordinal and the term's frequency to that term's
  posting — postings are in arrival order, so the part of a posting a view
  sees is a prefix, found by a bisect on the owners' arrival ticks;
* per term, a running count of the owners that are *corpus documents*
  (settled nodes: in a run, every node whose output arrived; in a snapshot
  made by hand, the completed ones), so a view's document frequency is the
  count at its prefix's end, O(1);
* per node, its length (tokens); and in arrival order the running number and
  total length of corpus documents, so a view's ``N`` and ``avgdl`` are a
  lookup at the number of outputs that arrived before it.

Nothing is ever rewritten: a view reads prefixes, and a fork copies its
prefixes (:meth:`LexicalPostings.fork`). :meth:`LexicalPostings.axis` computes
the BM25 axis of a view's candidates with either corpus
(:mod:`cortex_agents.memory._lexical`), in the reference's float order.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from cortex_agents.memory._batch_tokens import TermCounts, term_counts
from cortex_agents.memory._columns import NEVER, Column
from cortex_agents.memory._lexical import BM25, CorpusStats, lexical_tokens

if TYPE_CHECKING:
    from cortex_agents.memory._index_columns import IndexColumns
    from cortex_agents.memory._view import IndexView, IntArray

__all__ = ["LexicalPostings"]

FloatArray = npt.NDArray[np.float64]


class LexicalPostings:
    """Token frequencies of one extractor's bodies, by arrival (changed under the index lock).

    Attributes:
        done: How many arrived outputs it has read (a prefix of ``index.ready``).
        vocabulary: Term -> its posting's number.
        owners: Per term, the ordinals of the nodes holding it, in arrival order.
        freqs: Per term, the term's frequency in each owner (parallel to ``owners``).
        documents: Per term, corpus documents among the first ``j + 1`` owners.
        lengths: Per node ordinal, its body's length in tokens (0 until read).
        arrived_documents: ``[k]``: corpus documents among the first ``k`` arrivals.
        arrived_length: ``[k]``: their total length.
        empty: The term frequencies of the extractor's empty body (a node without output).
    """

    __slots__ = (
        "arrived_documents",
        "arrived_length",
        "documents",
        "done",
        "empty",
        "freqs",
        "lengths",
        "owners",
        "vocabulary",
    )

    def __init__(self, empty_body: str) -> None:
        self.done = 0
        self.vocabulary: dict[str, int] = {}
        self.owners: list[Column] = []
        self.freqs: list[Column] = []
        self.documents: list[Column] = []
        self.lengths = Column()
        self.arrived_documents = Column()
        self.arrived_documents.append(0)
        self.arrived_length = Column()
        self.arrived_length.append(0)
        self.empty = Counter(lexical_tokens(empty_body))

    def catch_up(self, index: IndexColumns, bodies: list[str], done: int) -> None:
        """Read the bodies of the first ``done`` outputs that arrived, those not read yet.

        ``bodies`` (by ordinal) and ``done`` are the owning fields' (index lock
        held). They are passed rather than the fields object, as
        :meth:`~cortex_agents.memory._entities.EvidenceNames.catch_up` takes
        its evidence: the fields hold these postings, so this module does not
        import them (issue 25).
        """
        self.lengths.pad(len(bodies), 0)
        if self.done == done:
            return
        arrived = index.ready[self.done : done]
        at = np.asarray(arrived, dtype=np.int64)
        found = term_counts([bodies[i] for i in arrived])
        self.lengths.data[at] = found.lengths
        # a corpus document settles with its output (a run) or before it (a hand-made
        # snapshot, everything at tick 0); an output of a node that never settled is not one
        member = (index.settled_tick.data[at] != NEVER).astype(np.int64)
        k = self.arrived_documents.size
        self.arrived_documents.extend(self.arrived_documents.data[k - 1] + np.cumsum(member))
        self.arrived_length.extend(
            self.arrived_length.data[k - 1] + np.cumsum(member * found.lengths)
        )
        if len(found.term):
            self._post(found, at, member)
        self.done = done

    def _post(self, found: TermCounts, at: IntArray, member: IntArray) -> None:
        """Append a batch's (node, frequency) pairs to their terms' postings, in arrival order.

        New terms take the next posting numbers in the order one body at a time
        would give them (body by body, each body's terms in code-point order:
        the order of ``found``'s pairs), and each posting's running count of
        corpus documents continues from its last value.
        """
        by_term = np.argsort(found.term, kind="stable")  # each term's pairs in arrival order
        terms = found.term[by_term]
        starts = np.flatnonzero(np.concatenate(([True], terms[1:] != terms[:-1])))
        ends = [*starts[1:].tolist(), len(terms)]
        vocabulary = self.vocabulary
        slots = np.empty(len(found.terms), dtype=np.int64)
        for j in terms[starts[np.argsort(by_term[starts])]].tolist():  # by first pair
            term = found.terms[j]
            slot = vocabulary.get(term)
            if slot is None:
                slot = vocabulary[term] = len(self.owners)
                self.owners.append(Column(capacity=4))
                self.freqs.append(Column(capacity=4))
                self.documents.append(Column(capacity=4))
            slots[j] = slot
        owners = at[found.body[by_term]]
        freqs = found.freq[by_term]
        members = np.cumsum(member[found.body[by_term]])
        for j, begin, end in zip(terms[starts].tolist(), starts.tolist(), ends, strict=True):
            slot = int(slots[j])
            documents = self.documents[slot]
            count = int(documents.data[documents.size - 1]) if documents.size else 0
            before = int(members[begin - 1]) if begin else 0
            self.owners[slot].extend(owners[begin:end])
            self.freqs[slot].extend(freqs[begin:end])
            documents.extend(count - before + members[begin:end])

    def fork(self, parent: IndexColumns, n: int, ready: int, length: int) -> LexicalPostings:
        """A copy for the fork of ``parent`` at ``length`` events (``n`` nodes, ``ready`` outputs)."""
        other = LexicalPostings.__new__(LexicalPostings)
        other.done = min(self.done, ready)
        other.vocabulary = dict(self.vocabulary)
        other.empty = self.empty
        other.lengths = self.lengths.copy(min(n, self.lengths.size))
        other.arrived_documents = self.arrived_documents.copy(other.done + 1)
        other.arrived_length = self.arrived_length.copy(other.done + 1)
        arrived = parent.output_tick.data
        other.owners, other.freqs, other.documents = [], [], []
        for owners, freqs, documents in zip(self.owners, self.freqs, self.documents, strict=True):
            kept = owners.size
            if self.done > ready:  # each posting in arrival order: cut at the fork's length
                kept = int(np.searchsorted(arrived[owners.prefix()], length))
            other.owners.append(owners.copy(kept))
            other.freqs.append(freqs.copy(kept))
            other.documents.append(documents.copy(kept))
        return other

    def _seen(self, view: IndexView, slot: int) -> int:
        """How many entries of posting ``slot`` arrived before ``view``."""
        owners = self.owners[slot].prefix()
        return int(np.searchsorted(view.index.output_tick.data[owners], view.length))

    def stats(self, view: IndexView) -> CorpusStats:
        """The view's corpus statistics, every term (O(vocabulary); for checks, not queries)."""
        arrivals = int(np.searchsorted(view.index.ready_tick.prefix(), view.length))
        df = {}
        for term, slot in self.vocabulary.items():
            seen = self._seen(view, slot)
            count = int(self.documents[slot].data[seen - 1]) if seen else 0
            if count:
                df[term] = count
        return CorpusStats(
            int(self.arrived_documents.data[arrivals]), int(self.arrived_length.data[arrivals]), df
        )

    def frequencies(self, view: IndexView) -> dict[int, Counter[str]]:
        """Term frequencies of each node whose output arrived before ``view`` (for checks)."""
        out: dict[int, Counter[str]] = {}
        for term, slot in self.vocabulary.items():
            seen = self._seen(view, slot)
            for owner, tf in zip(
                self.owners[slot].data[:seen].tolist(),
                self.freqs[slot].data[:seen].tolist(),
                strict=True,
            ):
                out.setdefault(owner, Counter())[term] = tf
        return out

    def axis(self, scorer: BM25, text: str, view: IndexView, nodes: IntArray) -> FloatArray:
        """The BM25 axis of ``nodes`` as of ``view`` (the caller holds the index lock)."""
        terms = scorer.terms(text)
        k = len(nodes)
        if not terms or not k:
            return np.zeros(k, dtype=np.float64)
        index = view.index
        ready = view.ready(nodes)
        empty_length = sum(self.empty.values())
        lengths = np.where(ready, self.lengths.data[nodes], empty_length)
        if scorer.corpus == "view":
            arrivals = int(np.searchsorted(index.ready_tick.prefix(), view.length))
            documents = int(self.arrived_documents.data[arrivals])
            total = int(self.arrived_length.data[arrivals])
        else:
            documents, total = k, int(lengths.sum())
        if not documents:
            return np.zeros(k, dtype=np.float64)
        average = total / documents
        place = np.full(view.n, -1, dtype=np.int64)
        place[nodes] = np.arange(k)
        waiting = ~ready
        # the reference's expression, elementwise: k1 * (1 - b + b * (length / average))
        ratio = lengths / average if average > 0 else np.zeros(k, dtype=np.float64)
        norm = scorer.k1 * (1.0 - scorer.b + scorer.b * ratio)
        score = np.zeros(k, dtype=np.float64)
        bound = 0.0
        for term in terms:
            tf = np.zeros(k, dtype=np.float64)
            slot = self.vocabulary.get(term)
            seen = 0
            if slot is not None:
                seen = self._seen(view, slot)
                at = place[self.owners[slot].data[:seen]]
                hit = at >= 0
                tf[at[hit]] = self.freqs[slot].data[:seen][hit]
            tf[waiting] = self.empty.get(term, 0)
            if scorer.corpus == "view":
                df = int(self.documents[slot].data[seen - 1]) if slot is not None and seen else 0
            else:
                df = int(np.count_nonzero(tf))
            idf = scorer.idf(documents, df)
            with np.errstate(divide="ignore", invalid="ignore"):
                weight = idf * (tf * (scorer.k1 + 1.0)) / (tf + norm)
            score = score + np.where(tf > 0, weight, 0.0)
            bound = bound + idf * (scorer.k1 + 1.0)
        if bound <= 0:
            return np.zeros(k, dtype=np.float64)
        axis: FloatArray = score / bound
        return axis
