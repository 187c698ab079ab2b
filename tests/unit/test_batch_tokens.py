"""Batch reading equals reading one output at a time: tokens, term frequencies, fields.

The memory index tokenises and extracts a batch of outputs at once
(:mod:`cortex_agents.memory._batch_tokens`, :func:`read_outputs`); what it
keeps must be exactly what the one-body functions give, whatever the text:
ASCII or not, separators, the batch separator's own character, numbers,
ranges and codes at the edges of a body.
"""

from __future__ import annotations

from collections import Counter, UserDict
from types import MappingProxyType

from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_agents.memory import default_extractor, lexical_tokens, tokenize
from cortex_agents.memory._batch_tokens import term_counts, token_sets
from cortex_agents.memory._extract import read_outputs

# pieces that exercise every rule of both tokenisers and the batch's ASCII path
PIECES = [
    "HD 23",
    "HD-23",
    "hd23",
    "2011-12",
    "2011 – 2012",
    "1990s",
    "b29",
    "1,240",
    "3.5",
    "1.2.3",
    "x_y",
    "_",
    "ﬁne",
    "Straße",
    "١٢",
    "\u2212",
    "\x00",
    "\x1c",
    "\t",
    "\n",
    " ",
    "-",
    ".",
    ",",
    "(",
    "é",
    "ǅ",
    "AB",
    "7",
    "z",
]
texts = st.lists(st.sampled_from(PIECES), max_size=8).map("".join) | st.text(max_size=12)
ascii_texts = st.lists(st.sampled_from([p for p in PIECES if p.isascii() and p != "\x00"])).map(
    "".join
)
batches = st.lists(texts | ascii_texts, max_size=7)


@settings(max_examples=400, deadline=None)
@given(batches)
def test_a_batch_gives_each_body_the_tokens_tokenize_gives_it(bodies):
    found = token_sets(bodies)
    got: list[set[str]] = [set() for _ in bodies]
    for token, body in zip(found.token.tolist(), found.body.tolist(), strict=True):
        assert found.tokens[token] not in got[body]  # each pair once
        got[body].add(found.tokens[token])
    assert got == [set(tokenize(body)) for body in bodies]
    assert found.counts.tolist() == [len(tokenize(body)) for body in bodies]
    pairs = list(zip(found.token.tolist(), found.body.tolist(), strict=True))
    assert pairs == sorted(pairs)  # by token, each token's bodies in batch order


@settings(max_examples=400, deadline=None)
@given(batches)
def test_a_batch_gives_each_body_the_term_frequencies_lexical_tokens_gives_it(bodies):
    found = term_counts(bodies)
    got: list[Counter[str]] = [Counter() for _ in bodies]
    for term, body, freq in zip(
        found.term.tolist(), found.body.tolist(), found.freq.tolist(), strict=True
    ):
        got[body][found.terms[term]] += freq
    expected = [Counter(lexical_tokens(body)) for body in bodies]
    assert got == expected
    assert found.lengths.tolist() == [len(lexical_tokens(body)) for body in bodies]
    assert found.terms == sorted(found.terms)
    pairs = list(zip(found.body.tolist(), found.term.tolist(), strict=True))
    assert pairs == sorted(set(pairs))  # by body, then term in code-point order; once each


def test_numbers_at_the_edges_of_bodies_stay_in_their_body():
    bodies = ["before 2011", "-12 after", "HD", "23", "1,240", "3.5", "HD 23 and 2011-12", "B 29a"]
    found = term_counts(bodies)
    got = [
        {
            found.terms[t]
            for t, b in zip(found.term.tolist(), found.body.tolist(), strict=True)
            if b == i
        }
        for i in range(len(bodies))
    ]
    assert got == [set(lexical_tokens(body)) for body in bodies]
    assert "2011-12" in got[-2] and "hd23" in got[-2] and "2011-12" not in got[0]
    assert "b29a" in got[-1]


class Key(str):
    """A string subclass: the general path must read it as a string."""


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(
            st.sampled_from(["slot", "claim_ref", "claimRef", "routing_key", "evidence", "a", "b"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=10,
)
envelopes = json_values.map(lambda v: {"contract": "c", "value": v}) | json_values.map(
    lambda v: {"values": [{"contract": "c", "value": v}]}
)
other_shapes = json_values.map(lambda v: MappingProxyType({"value": v, "contract": "c"})) | (
    json_values.map(lambda v: UserDict({"slot": Key("k"), "body": v}))
    | json_values.map(lambda v: {"contract": "c", "value": {"slot": Key("s"), "a": [Key("t"), v]}})
)
outputs = st.lists(json_values | envelopes | other_shapes, max_size=6)


@settings(max_examples=300, deadline=None)
@given(outputs)
def test_reading_a_batch_of_outputs_equals_the_default_extractor_one_by_one(batch):
    read = read_outputs(default_extractor, batch)
    for i, output in enumerate(batch):
        fields = default_extractor(output)
        key = fields.routing_key if fields else None
        assert read.routing_keys[i] == key
        assert type(read.routing_keys[i]) is type(key)
        assert read.bodies[i] == (fields.body_text if fields else "")
        assert read.evidence[i] == (tuple(fields.evidence) if fields else ())
        assert read.projected[i] is None
