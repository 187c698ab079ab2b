"""In-process probes of the reliability suite: R3 (tool calls), R4 (snapshot files), R5 (paths),
and corruption. Each returns plain counts; :mod:`reliability` puts them in its report."""

from __future__ import annotations

import contextlib
import json
import random
import signal
import sqlite3
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers.openai_tools import make_invalid_tool_call, parse_tool_call
from reliability_fuzz import (
    HOSTILE_PATHS,
    regression_arguments,
    snapshot_variants,
    tool_arguments,
)
from typer.testing import CliRunner

from cortex_agents.cli import app
from cortex_agents.errors import CortexError
from cortex_agents.memory import Topological
from cortex_agents.persistence import is_postgres_url, open_saver
from cortex_agents.persistence._store import decode_event, encode_event
from cortex_agents.rewrite import RewritePolicy
from cortex_agents.runtime import Runtime, StageContext, WireBuilder
from cortex_agents.scratch import open_scratch
from cortex_agents.stages import stage_tools
from cortex_agents.substrate import ToolCallMade, event_to_dict
from cortex_agents.tools._loop import ToolPolicy, execute_call, run_tool_loop

TOOLS = ("cortex_memory_query", "memory", "propose_rewrite")
runner = CliRunner()


class CaseTimeout(Exception):
    """A case ran past its time bound."""


@contextlib.contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    """Raise :class:`CaseTimeout` in the block after ``seconds`` (main thread, SIGALRM)."""

    def expired(signum: int, frame: Any) -> None:
        raise CaseTimeout

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def cli(*args: Any) -> tuple[int, bool, str]:
    """``(exit code, raw traceback?, output)`` of one in-process CLI command.

    Raises:
        CaseTimeout: the command ran past a :func:`time_bound`.
    """
    result = runner.invoke(app, [str(a) for a in args])
    if isinstance(result.exception, CaseTimeout):
        raise result.exception
    raw = result.exception is not None and not isinstance(result.exception, SystemExit)
    detail = result.output
    if raw:
        detail += "".join(traceback.format_exception(result.exception))[-2000:]
    return result.exit_code, raw, detail


# -- R3: hostile tool calls through the real tool loop and journal ---------------------------


def openai_message(raw_calls: list[dict[str, Any]]) -> AIMessage:
    """An assistant message parsed the way ``langchain_openai`` parses a response's tool calls."""
    tool_calls, invalid = [], []
    for raw in raw_calls:
        try:
            tool_calls.append(parse_tool_call(raw, return_id=True))
        except Exception as exc:  # exactly what langchain_openai catches
            invalid.append(make_invalid_tool_call(raw, str(exc)))
    return AIMessage(
        content="",
        tool_calls=tool_calls,
        invalid_tool_calls=invalid,
        additional_kwargs={"tool_calls": raw_calls},
    )


class ScriptedModel:
    """A chat model whose first turn is the batch of tool calls, then a final answer."""

    def __init__(self, tool: str, arguments: list[str]) -> None:
        self.tool, self.arguments, self.turn = tool, arguments, 0

    def bind_tools(self, tools: Any, tool_choice: Any = None) -> ScriptedModel:
        return self

    def invoke(self, messages: Any) -> AIMessage:
        self.turn += 1
        if self.turn > 1:
            return AIMessage(content="done")
        raw = [
            {"id": f"call_{i}", "type": "function", "function": {"name": self.tool, "arguments": a}}
            for i, a in enumerate(self.arguments)
        ]
        return openai_message(raw)


BATCHES: dict[str, tuple[str, list[str]]] = {}
WRITES_ON_REJECTION: Counter[str] = Counter()


def _state(ctx: StageContext) -> tuple[Any, ...]:
    files = tuple((f.path, f.content) for f in ctx.scratch.files("/")) if ctx.scratch else ()
    session = ctx.rewrites
    graph = session.state if session is not None else None
    return (
        files,
        len(graph.nodes) if graph else 0,
        len(graph.admitted_rewrites) if graph else 0,
    )


def fuzz_stage(ctx: StageContext) -> dict[str, Any]:
    """Run the batch named by the run input through the stage's real tool loop."""
    tool, arguments = BATCHES[ctx.run_input["batch"]]
    policy = ToolPolicy(max_rounds=1, max_calls_per_turn=64)
    tools = [t for t in stage_tools(ctx, policy) if t.name == tool]
    before = [_state(ctx)]

    def journal(event: ToolCallMade) -> None:
        now = _state(ctx)
        result = event.result if isinstance(event.result, dict) else {}
        if result.get("status") == "error" and now != before[0]:
            WRITES_ON_REJECTION[tool] += 1
        before[0] = now
        ctx.record(event)

    result = run_tool_loop(
        ScriptedModel(tool, arguments),
        [SystemMessage("fuzz"), HumanMessage("fuzz")],
        tools=tools,
        context=ctx,
        policy=policy,
        journal=journal,
    )
    return {"calls": len(result.calls)}


def source_stage(ctx: StageContext) -> dict[str, Any]:
    return {"contract": "note", "value": {"claim_ref": "c1", "text": "evidence from the source"}}


def step_stage(ctx: StageContext) -> dict[str, Any]:
    return {"ok": True}


def fuzz_wire():
    return (
        WireBuilder("fuzz")
        .kind("source", source_stage)
        .kind("fuzz", fuzz_stage)
        .kind("step", step_stage)
        .stage("source", "source")
        .stage(
            "f0",
            "fuzz",
            after=["source"],
            memory=Topological(preset="reviewer"),
            scratch="per_thread",
            rewrite=RewritePolicy(attempts=16),
        )
        .stage("sink", "step", after=["f0"])
        .build()
    )


def _round_trips(saver: Any, log: Any) -> int:
    """Journaled tool-call events that do not survive the saver's serializer or the row codec."""
    bad = 0
    for event in log:
        if not isinstance(event, ToolCallMade):
            continue
        try:
            as_dict = event_to_dict(event)
            kind, blob = saver.serde.dumps_typed(as_dict)
            ok = saver.serde.loads_typed((kind, blob)) == as_dict
            ok = ok and decode_event(encode_event(event)) == event
        except Exception:
            ok = False
        bad += not ok
    return bad


def _run_batch(
    runtime: Runtime, thread: str, tool: str, arguments: list[str], errors: list[str]
) -> tuple[bool, Any]:
    """Run one batch as a thread of its own: ``(crashed, log)``; crash messages go to ``errors``."""
    BATCHES[thread] = (tool, arguments)
    try:
        result = runtime.run(thread, {"batch": thread})
    except CortexError as exc:  # RunFailed: the stage failed, so a call escaped the loop
        errors.append(str(exc)[:300])
        return True, runtime.result(thread).log
    except Exception as exc:  # the run itself failed (e.g. an event the saver cannot store)
        errors.append(f"{type(exc).__name__}: {exc}"[:300])
        return True, None
    failed = [n.error for n in result.state.nodes.values() if n.status == "failed"]
    errors += [str(e)[:300] for e in failed]
    return bool(failed), result.log


def _draw(tool: str, rng: random.Random, excluded: Counter[str]) -> str:
    """Hostile arguments that reach the tool loop.

    ``langchain_openai`` itself raises (before any tool loop runs) on a call
    whose arguments are valid JSON but not an object: it cannot build its
    ``AIMessage``. Those are counted in ``excluded`` and drawn again.
    """
    while True:
        text = tool_arguments(tool, rng)
        raw = {"id": "c", "type": "function", "function": {"name": tool, "arguments": text}}
        try:
            parsed = parse_tool_call(raw, return_id=True)
        except Exception:
            return text  # an invalid tool call: the loop answers it
        if isinstance(parsed, dict) and isinstance(parsed.get("args"), dict):
            return text
        excluded[tool] += 1


def r3(db: str, calls_per_tool: int, batch: int, rng: random.Random) -> dict[str, Any]:
    """R3 on one database: ``{metric: {tool: count}}``, and ``details``."""
    out: dict[str, Any] = {
        k: {} for k in ("r3_calls", "r3_crashes", "r3_writes_on_rejection", "r3_unserialisable")
    }
    WRITES_ON_REJECTION.clear()
    excluded: Counter[str] = Counter()
    errors: dict[str, list[str]] = {}
    with open_saver(db) as saver, open_scratch(db) as scratch:
        runtime = Runtime(fuzz_wire(), saver, scratch=scratch, lock_timeout=None)
        for tool in TOOLS:
            crashes = unserialisable = calls = 0
            seen: list[str] = []
            fixed = regression_arguments(tool)
            for start in range(0, calls_per_tool, batch):
                size = min(batch, calls_per_tool - start)
                arguments = fixed[start : start + size]  # the known ones first, every time
                arguments += [_draw(tool, rng, excluded) for _ in range(size - len(arguments))]
                calls += len(arguments)
                thread = f"{tool}-{start}"
                crashed, log = _run_batch(runtime, thread, tool, arguments, seen)
                if log is not None:
                    unserialisable += _round_trips(saver, log)
                if crashed:  # which calls? each again, alone
                    singles = 0
                    for i, one in enumerate(arguments):
                        alone, _ = _run_batch(runtime, f"{thread}-{i}", tool, [one], [])
                        if alone:
                            singles += 1
                            seen.append(f"crash on arguments {one[:160]!r}")
                    crashes += max(1, singles)
            out["r3_calls"][tool] = calls
            out["r3_crashes"][tool] = crashes
            out["r3_unserialisable"][tool] = unserialisable
            out["r3_writes_on_rejection"][tool] = WRITES_ON_REJECTION[tool]
            errors[tool] = list(dict.fromkeys(seen))[:4]
    out["details"] = {"langchain_rejected_arguments": dict(excluded), "crash_examples": errors}
    return out


# -- R5: hostile paths through the memory tool -------------------------------------------------


def r5(db: str) -> dict[str, int]:
    """Every hostile path, through the ``memory`` tool's writing commands: how many got through."""
    from cortex_agents.tools import make_memory_tool

    tool = make_memory_tool()
    escapes = 0
    escaped: list[str] = []
    with open_scratch(db) as backend:
        memory = backend.bind("probe", scope="per_thread", thread_id="r5")
        other = backend.bind("other", scope="per_thread", thread_id="r5")
        other.append("/keep", "untouched")

        class Context:
            scratch = memory
            stage_id = "probe"

        for i, path in enumerate(HOSTILE_PATHS):
            accepted = False
            for args in (
                {"command": "create", "path": path, "file_text": "x"},
                {"command": "append", "path": path, "content": "x"},
                {"command": "rename", "old_path": "/seed", "new_path": path},
            ):
                if args["command"] == "rename":
                    memory.append("/seed", "s")
                call = {"name": "memory", "id": f"p{i}", "args": args, "type": "tool_call"}
                try:
                    _, record = execute_call(call, {"memory": tool}, Context())
                except Exception:
                    accepted = True  # a crash is no clean refusal either
                    continue
                accepted |= record.status == "success"
            escapes += accepted
            if accepted:
                escaped.append(path)
        files = [f.path for f in memory.files("/")]
        if [f.content for f in other.files("/")] != ["untouched"]:
            escapes += 1
            escaped.append("another node's memory changed")
    return {
        "r5_paths": len(HOSTILE_PATHS),
        "r5_escapes": escapes,
        "escaped": escaped[:10],
        "stored_paths": sorted(set(files) - {"/seed"})[:10],
    }


# -- R4: malformed snapshot files ------------------------------------------------------------


def _rows(db: str) -> tuple[Any, ...]:
    with open_saver(db) as saver:
        return tuple(sorted(saver.store.counts().items())), len(list(saver.inner.list(None)))


def r4(db: str, workdir: Path, base: Path, count: int, bound: float, rng: random.Random) -> dict:
    """Malformed variants through validate, strict import and forensic import."""
    stats = Counter()
    examples: dict[str, list[str]] = {
        "accepted_invalid": [],
        "crashes": [],
        "hangs": [],
        "partial": [],
    }
    assert cli("import", base, db, "--thread", "base")[0] == 0
    for i, (name, data, expect_invalid) in enumerate(
        snapshot_variants(base.read_text(), rng, count)
    ):
        path = workdir / f"variant-{i}.json"
        path.write_bytes(data)
        stats["variants"] += 1
        outcome: dict[str, Any] = {}
        for step, args in (
            ("validate", ("validate", path)),
            ("strict", ("import", path, db, "--thread", f"s{i}")),
            ("forensic", ("import", path, db, "--thread", f"f{i}", "--forensic")),
        ):
            before = _rows(db) if step == "strict" else None
            started = time.monotonic()
            try:
                with time_bound(bound):
                    code, raw, detail = cli(*args)
            except CaseTimeout:
                stats["hangs"] += 1
                examples["hangs"].append(f"{name} {step}")
                code, raw, detail = 99, False, "timeout"
            if time.monotonic() - started > bound and code != 99:
                stats["hangs"] += 1
                examples["hangs"].append(f"{name} {step}")
            if raw or code not in (0, 1, 99):
                stats["crashes"] += 1
                examples["crashes"].append(f"{name} {step}: {detail[-300:]}")
            outcome[step] = code
            if step == "strict" and code != 0 and before is not None and _rows(db) != before:
                stats["partial_writes"] += 1
                examples["partial"].append(name)
        if not is_postgres_url(db):  # a refused import into a new file must leave no file
            new = workdir / f"new-{i}.db"
            code, raw, _ = cli("import", path, new, "--thread", "t")
            created = [p.name for p in workdir.iterdir() if p.name.startswith(new.name)]
            if code != 0 and created:
                stats["partial_writes"] += 1
                examples["partial"].append(f"{name}: a refused import left {created}")
            for leftover in workdir.glob(f"{new.name}*"):
                leftover.unlink()
        valid = outcome["validate"] == 0
        wrong = (
            (valid and expect_invalid)
            or (valid != (outcome["strict"] == 0))
            or (valid and cli("validate", db, "--thread", f"s{i}")[0] != 0)
        )
        if wrong:
            stats["accepted_invalid"] += 1
            examples["accepted_invalid"].append(f"{name}: {outcome}")
        path.unlink()
    return {
        "r4_variants": stats["variants"],
        "r4_accepted_invalid": stats["accepted_invalid"],
        "r4_crashes": stats["crashes"],
        "r4_hangs": stats["hangs"],
        "r4_partial_writes": stats["partial_writes"],
        "examples": {k: v[:5] for k, v in examples.items() if v},
    }


# -- corruption --------------------------------------------------------------------------------


def _sql(db: str, *statements: str) -> None:
    if is_postgres_url(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)
        return
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA foreign_keys=OFF")
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _page(db: str, table: str, how: str) -> None:
    _sql(db)  # checkpoint the WAL into the file
    conn = sqlite3.connect(db)
    page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(Path(db).read_bytes())
    start = (page - 1) * size
    if how == "garbage":
        data[start : start + size] = random.Random(page).randbytes(size)
    else:
        for offset in range(0, 64, 3):
            data[start + offset] ^= 0xFF
    Path(db).write_bytes(bytes(data))


ROW_CORRUPTIONS = {
    "event body not JSON": ("UPDATE cortex_events SET body = '{' WHERE seq = 3",),
    "event of an unknown type": ("UPDATE cortex_events SET body = '{\"type\":\"nope\"}' WHERE seq = 4",),
    "event with a bad time": (
        "UPDATE cortex_events SET body = replace(body, '\"at\":\"2026', '\"at\":\"x026') WHERE seq = 5",
    ),
    "event that does not fold": (
        "UPDATE cortex_events SET body = (SELECT body FROM cortex_events WHERE seq = 1) WHERE seq = 2",
    ),
    "missing event rows": ("DELETE FROM cortex_events WHERE seq > 20",),
    "missing branch rows": ("DELETE FROM cortex_edges", "DELETE FROM cortex_nodes", "DELETE FROM cortex_events", "DELETE FROM cortex_branches"),
    "schema from the future": ("INSERT INTO cortex_migrations (version, name) VALUES (99, 'future')",),
    "events table dropped": ("DROP TABLE cortex_edges", "DROP TABLE cortex_nodes", "DROP TABLE cortex_events"),
    "checkpoints emptied": ("DELETE FROM checkpoints",),
}  # fmt: skip
PAGE_CORRUPTIONS = {
    "garbage events page": ("cortex_events", "garbage"),
    "garbage checkpoints page": ("checkpoints", "garbage"),
    "garbage branches page": ("cortex_branches", "garbage"),
    "flipped bytes in the nodes page": ("cortex_nodes", "flip"),
    "flipped bytes in the migrations page": ("cortex_migrations", "flip"),
}
COMMANDS = (
    ("inspect", "{db}"),
    ("inspect", "{db}", "--thread", "t"),
    ("export", "{db}", "--thread", "t", "-o", "{out}"),
    ("graph", "{db}", "--thread", "t", "-o", "{out}"),
    ("memory", "query", "{db}", "--thread", "t", "--origin", "reviewer"),
    ("validate", "{db}", "--thread", "t"),
    ("run", "{wire}", "--db", "{db}", "--thread", "t2"),
    ("run", "{wire}", "--db", "{db}", "--thread", "t2", "--skip-integrity-check"),
    ("import", "{example}", "{db}", "--thread", "t3"),
    ("import", "{example}", "{db}", "--thread", "t4", "--skip-integrity-check"),
)


def corruption(fresh_db: Any, workdir: Path, example: Path, wire: Path, backend: str) -> dict:
    """Damage a database in every way listed; run every command on it; count raw tracebacks."""
    cases = tracebacks = 0
    seen: list[str] = []
    kinds = dict.fromkeys(ROW_CORRUPTIONS, "rows")
    if backend == "sqlite":
        kinds |= dict.fromkeys(PAGE_CORRUPTIONS, "page")
        kinds["truncated file"] = "truncate"
    for name, how in kinds.items():
        with fresh_db() as db:
            assert cli("import", example, db, "--thread", "t")[0] == 0
            if how == "rows":
                _sql(db, *ROW_CORRUPTIONS[name])
            elif how == "page":
                _page(db, *PAGE_CORRUPTIONS[name])
            else:
                _sql(db)
                Path(db).write_bytes(Path(db).read_bytes()[: Path(db).stat().st_size // 2])
            for command in COMMANDS:
                args = [
                    p.format(db=db, out=workdir / "out.json", wire=wire, example=example)
                    for p in command
                ]
                code, raw, detail = cli(*args)
                cases += 1
                if raw or code not in (0, 1):
                    tracebacks += 1
                    seen.append(f"{name}: {' '.join(command[:2])}: {detail[-400:]}")
    return {"corruption_cases": cases, "corruption_tracebacks": tracebacks, "examples": seen[:5]}


def dump_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
