"""Pin the public surface: a name never appears or disappears by accident."""

import importlib

import pytest

import cortex_agents

EXPECTED = {
    "cortex_agents": {
        # run a workflow
        "Runtime",
        "WireBuilder",
        "StageContext",
        "load_wire",
        "stage_node",
        # persistence, one saver per lifetime
        "CortexSaver",
        "memory_saver",
        "open_saver",
        "aopen_saver",
        # graph memory in any agent
        "SubstrateState",
        "graph_memory_tools",
        "substrate_from_snapshot",
        # memory
        "MemoryHandle",
        "MemorySnapshot",
        "Match",
        "Topological",
        "Classic",
        "Preset",
        "BUILTIN_PRESETS",
        "WalkSpec",
        "ScorerEntry",
        "Projection",
        # rewrites, substrate, snapshot files, errors
        "RewritePolicy",
        "GraphState",
        "NodeRecord",
        "load_snapshot",
        "dump_snapshot",
        "CortexError",
        "InvalidArgument",
        "__version__",
    },
    "cortex_agents.memory": {
        "BUILTIN_PRESETS",
        "BUILTIN_PROJECTIONS",
        "Projection",
        "ProjectionRegistry",
        "BUILTIN_SCORERS",
        "DEFAULT_ALPHA",
        "DEFAULT_SCORER",
        "DIRECTIONS",
        "PRIORS",
        "SCOPES",
        "TIME_REFERENCES",
        "BM25",
        "Blend",
        "Classic",
        "Direction",
        "Embedder",
        "EmbeddingCache",
        "EmbeddingScorer",
        "ExtractedFields",
        "Extractor",
        "GraphPrior",
        "HasMemory",
        "InMemoryEmbeddingCache",
        "Match",
        "MemoryHandle",
        "MemorySnapshot",
        "MemoryStrategy",
        "Preset",
        "PresetRegistry",
        "Query",
        "RankedRequest",
        "Ranking",
        "Scope",
        "ScorerEntry",
        "ScorerRegistry",
        "SemanticScorer",
        "TimeReference",
        "TokenJaccard",
        "Topological",
        "VectorScorer",
        "WalkSpec",
        "Weights",
        "body_key",
        "canonical_order",
        "composite_score",
        "dag_random_walk_influence",
        "declared_preset",
        "default_extractor",
        "hop_decay",
        "lexical_tokens",
        "peel_envelope",
        "projection_extractor",
        "temporal_axis",
        "token_jaccard",
        "tokenize",
    },
    "cortex_agents.evaluation": {
        "FAMILIES",
        "MULTIHOP_FAMILIES",
        "build_cases",
        "load_records",
        "SPLITS",
        "Case",
        "Config",
        "LoadedCase",
        "build_configs",
        "evaluate",
        "generate_cases",
        "html_chart",
        "load_cases",
        "ndcg_at",
        "read_cases",
        "recall_at",
        "reciprocal_rank",
        "score_ranking",
    },
    "cortex_agents.embeddings": {
        "BgeSmallEmbedder",
        "bge_scorer",
        "LangChainEmbedder",
        "MiniLMEmbedder",
        "StoreEmbeddingCache",
        "WordLlamaEmbedder",
        "langchain_scorer",
        "minilm_scorer",
        "wordllama_scorer",
    },
    "cortex_agents.substrate": {
        "EMPTY_STATE",
        "NODE_STATUSES",
        "REJECTION_CODES",
        "SETTLED",
        "Decision",
        "EdgeAdded",
        "EdgeRecord",
        "EdgeRemoved",
        "Event",
        "GraphState",
        "NodeId",
        "NodeRecord",
        "NodeRetired",
        "NodeScheduled",
        "NodeStatus",
        "Observation",
        "RejectionCode",
        "RewriteAdmitted",
        "RewriteApplied",
        "RewriteBudgetSet",
        "RewriteFact",
        "RewriteRejected",
        "StageCompleted",
        "StageFailed",
        "StageStarted",
        "SubstrateLog",
        "append_events",
        "by_tag",
        "lineage",
        "neighbors",
        "recent",
        "since",
        "ToolCallMade",
        "event_from_dict",
        "event_to_dict",
        "fold",
    },
    "cortex_agents.persistence": {
        "DEFAULT_CHANNEL",
        "CortexSaver",
        "Cursor",
        "FileLocks",
        "ImportReport",
        "InMemorySubstrateStore",
        "Lease",
        "PostgresLocks",
        "PostgresSubstrateStore",
        "ProcessLocks",
        "QuarantinedRow",
        "AsyncSaverContext",
        "SaverContext",
        "SqliteSubstrateStore",
        "SubstrateStore",
        "SubstrateView",
        "ThreadLocks",
        "ThreadReport",
        "ThreadSummary",
        "UnknownThread",
        "aopen_saver",
        "check_writable",
        "describe_thread",
        "document_events",
        "export_document",
        "import_document",
        "import_salvage",
        "is_postgres_url",
        "list_threads",
        "memory_saver",
        "open_saver",
        "require_database",
        "require_substrate_saver",
        "open_view",
        "quarantined_rows",
        "sqlite_connect",
        "thread_config",
        "thread_log",
        "validate_thread",
    },
    "cortex_agents.runtime": {
        "Clock",
        "LogicalClock",
        "Progress",
        "RewriteBudget",
        "RewriteSession",
        "RunResult",
        "RunState",
        "Runtime",
        "StageContext",
        "StageKind",
        "StageSpec",
        "TickingClock",
        "Wire",
        "WireBuilder",
        "build_graph",
        "load_wire",
        "stage_node",
        "utc_clock",
    },
    "cortex_agents.stages": {
        "CHAT_MODEL",
        "KINDS",
        "STRUCTURED_OUTPUT",
        "Analysis",
        "AnswerFormat",
        "Branch",
        "Merged",
        "ModelUnavailable",
        "Plan",
        "Report",
        "Review",
        "analyst",
        "chat_model_from_env",
        "converse",
        "load_prompt",
        "merge",
        "parse_output",
        "planner",
        "prompt_for",
        "render",
        "reviewer",
        "rewriter",
        "stage_tools",
        "structured_form",
    },
    "cortex_agents.rewrite": {
        "DEFAULT_BUDGET",
        "DIMENSIONS",
        "FORMS",
        "LocalNode",
        "ProposalInvalid",
        "RewriteDiff",
        "RewriteForm",
        "RewritePolicy",
        "RewriteProposal",
        "SubgraphSpec",
        "admit",
        "global_id",
        "materialize",
        "parse_proposal",
        "pending_materialization",
        "plan_diff",
        "remaining",
        "static_cost",
    },
    "cortex_agents.tools": {
        "DEFAULT_TOKEN_BUDGET",
        "GraphBinding",
        "GraphBoundTool",
        "MAX_JOURNAL_BYTES",
        "MAX_RESULTS",
        "MEMORY_QUERY_TOOL",
        "MEMORY_TOOL_NAME",
        "MemoryQueryArgs",
        "PROPOSE_REWRITE_TOOL",
        "SubstrateState",
        "ToolCall",
        "ToolLoopResult",
        "ToolPolicy",
        "bind_to_graph",
        "graph_memory_tools",
        "json_safe",
        "make_memory_query_tool",
        "make_memory_tool",
        "make_propose_rewrite_tool",
        "run_memory_query",
        "run_tool_loop",
        "substrate_from_snapshot",
    },
    "cortex_agents.snapshotfile": {
        "SCHEMA_VERSION",
        "SnapshotDocument",
        "Salvage",
        "LeftOut",
        "validate_snapshot",
        "parse_snapshot",
        "load_snapshot",
        "salvage_snapshot",
        "load_snapshot_forensic",
        "dump_snapshot",
        "checked_dump",
        "write_snapshot",
        "SnapshotLimits",
        "DEFAULT_LIMITS",
        "check_identifier",
        "document_events",
        "event_count",
        "SQLITE_HEADER",
    },
    "cortex_agents.server": {
        "DB_ENV",
        "DEFAULT_DB",
        "checkpointer",
        "claim_review",
        "fanout_demo",
        "served_database",
        "server_graph",
    },
    "cortex_agents.reference": {
        "beyond_boundary",
        "bfs_distance",
        "direction_relations",
        "query_reference",
        "relations_of",
        "semantic_axes",
        "walk_candidates",
    },
    "cortex_agents.testing": {
        "MATCH_ON",
        "RECORD_MODES",
        "NetworkBlocked",
        "cassette_config",
        "cassette_vcr",
        "network_blocked",
        "query_reference",
        "record",
        "replay",
        "use_cassette",
    },
}


@pytest.mark.parametrize("module_name", sorted(EXPECTED))
def test_public_names_are_pinned(module_name):
    module = importlib.import_module(module_name)
    assert set(module.__all__) == EXPECTED[module_name]
    for name in module.__all__:
        assert hasattr(module, name), name


def test_pure_core_imports_nothing_from_langgraph_or_io_modules():
    import subprocess
    import sys

    code = (
        "import sys, cortex_agents.memory, cortex_agents.substrate, cortex_agents.rewrite,"
        " cortex_agents.reference;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'langgraph', 'langchain_core', 'sqlite3', 'psycopg', 'httpx', 'typer', 'rich'});"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    assert cortex_agents.__version__


def test_pure_core_reads_no_clock_no_environment_no_files():
    from pathlib import Path

    root = Path(cortex_agents.__file__).parent
    forbidden = ("datetime.now", "time.time(", "time.monotonic", "os.environ", "open(", "random.")
    for package in ("memory", "substrate", "rewrite", "reference"):
        for path in sorted((root / package).glob("*.py")):
            text = path.read_text(encoding="utf-8")
            for needle in forbidden:
                assert needle not in text, f"{path.name} uses {needle}"


def test_importing_the_package_loads_no_langgraph_langchain_or_tiktoken():
    import subprocess
    import sys

    code = (
        "import sys, cortex_agents;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'langgraph', 'langchain_core', 'langchain', 'tiktoken', 'langsmith',"
        " 'numpy', 'scipy', 'pydantic', 'pydantic_core', 'immutables', 'yaml'});"
        "print(','.join(bad)); cortex_agents.graph_memory_tools;"
        "print('langgraph' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["", "True"]  # loaded on first use, not at import


def test_every_public_name_imports_from_the_lazy_package_and_dir_lists_it():
    import subprocess
    import sys

    code = (
        "import cortex_agents\n"
        "names = sorted(cortex_agents.__all__)\n"
        "assert set(names) <= set(dir(cortex_agents)), set(names) - set(dir(cortex_agents))\n"
        "for name in names:\n"
        "    exec(f'from cortex_agents import {name} as value')\n"
        "from cortex_agents import *  # noqa\n"
        "import cortex_agents.memory as memory, cortex_agents.substrate as substrate\n"
        "assert cortex_agents.MemorySnapshot is memory.MemorySnapshot\n"
        "assert cortex_agents.NodeRecord is substrate.NodeRecord\n"
        "try:\n"
        "    cortex_agents.no_such_name\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
        "print(len(names))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    refused, count = out.stdout.strip().splitlines()
    assert refused == "module 'cortex_agents' has no attribute 'no_such_name'"
    assert int(count) == len(EXPECTED["cortex_agents"])


# Names the top level exported before it was cut to about thirty (issue 25), each
# still public where it is defined: one import path each, none lost.
FORMERLY_TOP_LEVEL = {
    "cortex_agents.errors": [
        "CycleError",
        "InvalidEvent",
        "InvalidMemoryPath",
        "InvalidSnapshot",
        "InvalidWire",
        "MemoryIsADirectory",
        "MemoryNotADirectory",
        "MemoryNotFound",
        "MissingExtra",
        "Problem",
        "ProposalInvalid",
        "RewriteUnavailable",
        "RunFailed",
        "ScorerUnavailable",
        "ScratchMemoryError",
        "StorageError",
        "ThreadBusy",
        "UnknownNode",
        "UnknownPreset",
        "UnknownProjection",
        "UnknownScorer",
        "UnsupportedCheckpointer",
        "WriterFenced",
    ],
    "cortex_agents.substrate": ["EdgeRecord", "Event", "Observation", "RewriteFact", "fold"],
    "cortex_agents.memory": [
        "BUILTIN_SCORERS",
        "EmbeddingScorer",
        "ExtractedFields",
        "MemoryStrategy",
        "PresetRegistry",
        "ProjectionRegistry",
        "Query",
        "ScorerRegistry",
        "SemanticScorer",
        "Weights",
        "dag_random_walk_influence",
        "default_extractor",
        "projection_extractor",
        "token_jaccard",
    ],
    "cortex_agents.reference": ["query_reference", "walk_candidates"],
    "cortex_agents.rewrite": ["LocalNode", "RewriteProposal", "SubgraphSpec", "admit"],
    "cortex_agents.snapshotfile": [
        "SnapshotDocument",
        "parse_snapshot",
        "validate_snapshot",
        "write_snapshot",
    ],
    "cortex_agents.tools": ["GraphBinding", "make_memory_query_tool"],
}


def test_the_top_level_is_small_and_names_what_the_readme_puts_beside_it():
    from cortex_agents import CortexSaver, Runtime, WireBuilder
    from cortex_agents.persistence import CortexSaver as saver_class
    from cortex_agents.runtime import Runtime as runtime_class
    from cortex_agents.runtime import WireBuilder as builder_class

    assert (Runtime, WireBuilder, CortexSaver) == (runtime_class, builder_class, saver_class)
    assert len(cortex_agents.__all__) <= 35


@pytest.mark.parametrize("module_name", sorted(FORMERLY_TOP_LEVEL))
def test_names_dropped_from_the_top_level_stay_public_in_their_module(module_name):
    module = importlib.import_module(module_name)
    for name in FORMERLY_TOP_LEVEL[module_name]:
        assert name in module.__all__ and hasattr(module, name), name
        assert name not in cortex_agents.__all__, name


def test_the_reference_pipeline_is_apart_from_memory_and_testing_reaches_it_on_first_use():
    import subprocess
    import sys

    code = (
        "import sys, cortex_agents.testing as testing;"
        "print('cortex_agents.reference' in sys.modules, 'numpy' in sys.modules);"
        "import cortex_agents.memory as memory, cortex_agents.reference as reference;"
        "print(hasattr(memory, 'query_reference'), 'query_reference' in dir(testing));"
        "print(testing.query_reference is reference.query_reference)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False", "True", "True"]
