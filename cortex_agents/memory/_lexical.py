"""The lexical axis: a tokeniser that keeps identifiers, and Okapi BM25 over it.

**Tokens** (:func:`lexical_tokens`). The text is NFKC-normalised (full-width
digits, ligatures and compatibility dashes become their plain forms), then:

1. every maximal run of ``\\w`` characters, casefolded, is a token;
2. a run that mixes letters and digits (``hd23``, ``1990s``, ``b29``) also
   gives each of its letter runs and digit runs (``hd``, ``23``);
3. a numeric range — digits, a dash (``-`` or any of U+2010-U+2015, U+2212),
   digits, spaces allowed around the dash — gives ``first-second``
   (``2011–12`` -> ``2011-12``); a year range also gives its other spelling
   (``2011-12`` <-> ``2011-2012``), so either matches the other;
4. a code — an upper-case letter run of 1-5 letters, a space or a dash, digits
   (optionally one letter after them) — gives the joined form (``HD 23``,
   ``HD-23`` -> ``hd23``), which is also what ``HD23`` gives in step 1;
5. a number with thousands separators gives its digits (``1,240`` -> ``1240``),
   a decimal number gives itself (``3.5``).

So an identifier is one token *and* its parts: ``"Heinkel HD 23"`` matches
``HD 23`` exactly (through ``hd23``) and still shares ``hd`` and ``23`` with
``HD 40`` and ``23``. Tokens are a multiset: a term's frequency counts its
repeats, and a document's length is its number of tokens.

**BM25** (:class:`BM25`), Okapi, over a corpus of ``N`` documents with
average length ``avgdl``::

    idf(t)     = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))       (never negative)
    w(t, d)    = idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))
    bm25(q, d) = sum of w(t, d) over the distinct tokens t of q, in code-point order
    axis       = bm25(q, d) / sum of idf(t) * (k1 + 1) over the same t

The axis divides by the score's supremum (every term at infinite frequency),
so it lies in [0, 1] without depending on the other candidates. ``k1 = 1.2``
and ``b = 0.75`` by default (the usual values; the harness found no better).

**Which corpus.** ``corpus="candidates"`` (the default) computes ``N``, ``df``
and ``avgdl`` over the query's candidates — the nodes it ranks, after its walk
and filters — so a term is rare when it is rare among what is being compared;
``corpus="view"`` over every settled node of the snapshot (planner, merge and
reviewer texts included). Both are exact as of any view: the index keeps each
settled node's token frequencies once, in postings in arrival order
(:mod:`cortex_agents.memory._fields`); a view's document frequency is a bisect
of a posting by arrival tick, its ``N`` and total length a prefix of the
arrival order; a candidate corpus is a count over the candidates' postings.
Nothing is rebuilt per stage or per query.

Floats: both engines evaluate the same expressions in the same order (``idf``
with :func:`math.log` on Python floats, term weights elementwise in float64,
summed term by term in code-point order), so they agree to the last bit.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from cortex_agents.errors import InvalidArgument

__all__ = ["BM25", "Corpus", "CorpusStats", "lexical_tokens"]

_WORD: Final = re.compile(r"\w+")
_DASHES: Final = r"\-\u2010-\u2015\u2212"
_RANGE: Final = re.compile(rf"(?<![\w.,])(\d+)[ \t]*[{_DASHES}][ \t]*(\d+)(?![\w]|[.,]\d)")
_CODE: Final = re.compile(rf"(?<!\w)([^\W\d_]{{1,5}})[ {_DASHES}](\d+[^\W\d_]?)(?!\w)")
_THOUSANDS: Final = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\w]|[.,]\d)")
_DECIMAL: Final = re.compile(r"(?<![\w.,])\d+\.\d+(?![\w]|[.,]\d)")
_PARTS: Final = re.compile(r"[^\W\d_]+|\d+")

Corpus = Literal["candidates", "view"]
CORPORA: Final[tuple[str, ...]] = ("candidates", "view")


def lexical_tokens(text: str) -> list[str]:
    """The tokens of ``text``, repeats kept (see the module docstring for the rules)."""
    # NFKC first: full-width digits and letters, ligatures and other compatibility forms
    # become the characters the patterns below match.
    text = unicodedata.normalize("NFKC", text)
    out: list[str] = []
    for word in _WORD.findall(text):
        token = word.casefold()
        out.append(token)
        if not token.isdigit() and not token.isalpha():
            parts = _PARTS.findall(token)
            if len(parts) > 1:
                out.extend(parts)
    for first, second in _RANGE.findall(text):
        out.append(f"{first}-{second}")
        if len(first) == 4 and len(second) == 2:
            out.append(f"{first}-{first[:2]}{second}")
        elif len(first) == 4 and len(second) == 4 and first[:2] == second[:2]:
            out.append(f"{first}-{second[2:]}")
    for match in _CODE.finditer(text):
        letters, digits = match.groups()
        if letters.isupper():
            out.append((letters + digits).casefold())
    out.extend(m.replace(",", "") for m in _THOUSANDS.findall(text))
    out.extend(_DECIMAL.findall(text))
    return out


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """What BM25 needs of a corpus: its size, its total length, and document frequencies.

    Attributes:
        documents: ``N``, the number of documents.
        length: The sum of their lengths (tokens).
        df: Documents holding each term (only the query's terms need be present).
    """

    documents: int
    length: int
    df: Mapping[str, int]

    @staticmethod
    def of(documents: Iterable[Sequence[str]]) -> CorpusStats:
        """The statistics of tokenised documents (a plain count: the definition)."""
        count = 0
        length = 0
        df: Counter[str] = Counter()
        for tokens in documents:
            count += 1
            length += len(tokens)
            df.update(set(tokens))
        return CorpusStats(count, length, df)


class BM25:
    """Okapi BM25 over :func:`lexical_tokens`, as a scorer (see the module docstring).

    Args:
        k1: Term-frequency saturation, finite and >= 0.
        b: Length normalisation, in [0, 1].
        corpus: ``candidates`` (default) or ``view``: whose statistics.

    Called as ``scorer(query_text, body_text)`` outside a pipeline, the body is
    its own one-document corpus; the pipeline's engines use the corpus chosen.
    """

    __slots__ = ("b", "corpus", "k1")

    def __init__(self, *, k1: float = 1.2, b: float = 0.75, corpus: Corpus = "candidates") -> None:
        if isinstance(k1, bool) or not isinstance(k1, int | float) or not 0 <= k1 < math.inf:
            raise InvalidArgument("bm25.k1", "must be a finite number >= 0", k1)
        if isinstance(b, bool) or not isinstance(b, int | float) or not 0 <= b <= 1:
            raise InvalidArgument("bm25.b", "must be a number from 0 to 1", b)
        if corpus not in CORPORA:
            raise InvalidArgument("bm25.corpus", f"must be one of {', '.join(CORPORA)}", corpus)
        self.k1 = float(k1)
        self.b = float(b)
        self.corpus: Corpus = corpus

    @staticmethod
    def terms(query_text: str) -> list[str]:
        """The distinct tokens of a query, in code-point order (the order terms are summed in)."""
        return sorted(set(lexical_tokens(query_text)))

    @staticmethod
    def idf(documents: int, df: int) -> float:
        """``ln(1 + (N - df + 0.5) / (df + 0.5))``."""
        return math.log(1.0 + (documents - df + 0.5) / (df + 0.5))

    def weight(self, idf: float, tf: int, length: int, average: float) -> float:
        """One term's weight in one document (0 when the term is absent)."""
        norm = self.k1 * (1.0 - self.b + self.b * (length / average if average > 0 else 0.0))
        return idf * (tf * (self.k1 + 1.0)) / (tf + norm) if tf else 0.0

    def axis(self, query_text: str, tokens: Sequence[str], stats: CorpusStats) -> float:
        """The normalised BM25 of one document's ``tokens`` against a corpus's ``stats``."""
        terms = self.terms(query_text)
        if not terms or not stats.documents:
            return 0.0
        tf = Counter(tokens)
        average = stats.length / stats.documents
        score = 0.0
        bound = 0.0
        # Term by term in code-point order, as the vectorised engine sums: the two agree to
        # the last bit only if they add in the same order (see the module docstring).
        for term in terms:
            idf = self.idf(stats.documents, stats.df.get(term, 0))
            score = score + self.weight(idf, tf.get(term, 0), len(tokens), average)
            bound = bound + idf * (self.k1 + 1.0)
        return score / bound if bound > 0 else 0.0

    def __call__(self, query_text: str, body_text: str) -> float:
        """The axis with ``body_text`` as a one-document corpus (outside a pipeline)."""
        tokens = lexical_tokens(body_text)
        return self.axis(query_text, tokens, CorpusStats.of([tokens]))

    @property
    def scorer_id(self) -> str:
        """Names the parameters (for caches and the artifact)."""
        return f"bm25-k1={self.k1:g}-b={self.b:g}-{self.corpus}"

    def __repr__(self) -> str:
        return f"BM25(k1={self.k1:g}, b={self.b:g}, corpus={self.corpus!r})"
