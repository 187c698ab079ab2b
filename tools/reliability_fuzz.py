"""Hostile inputs for the reliability suite: tool arguments (R3), snapshot files (R4), paths (R5).

Everything is generated from a seeded ``random.Random`` as *text*, the way it
arrives: a chat model's tool call carries its arguments as a JSON string, a
snapshot is a file. Text lets the corpus hold what ``json.dumps`` never
writes: 5,000-digit numbers, ``1e400``, lone surrogate escapes, nesting in
the thousands, duplicate keys, truncated JSON.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["HOSTILE_PATHS", "regression_arguments", "snapshot_variants", "tool_arguments"]

DEPTHS = (2, 10, 64, 100, 127, 128, 129, 200, 254, 255, 256, 500, 1000, 5000)
NUMBERS = (
    "0", "-1", "1", "7", "50", "51", "64", "65", "-0.0", "0.5", "1e308", "-1e308", "5e-324",
    "1e400", "-1e400", "NaN", "Infinity", "-Infinity", str(2**31), str(2**53 + 1),
    str(2**63 - 1), str(2**63), str(2**64), str(-(2**63) - 1), "9" * 30, "9" * 5000,
    "1." + "0" * 5000, "1" + "0" * 400 + ".5",
)  # fmt: skip
STRINGS = (
    '""', '"x"', '" "', '"reviewer"', '"default"', '"ancestors"', '"settled_only"',
    '"debug_all_statuses"', '"c1"', '"\\u0000"', '"a\\u0000b"', '"\\ud800"', '"\\udfff\\ud800"',
    '"\\ud83d\\ude00"', '"\\u202eevil"', '"\\u001b[31mred"', '"\\n\\r\\t"', '"../../etc/passwd"',
    '"%2e%2e%2f"', '"<inputs>"', '"</inputs>"', '"&amp;&lt;"', '"\\u00e9t\\u00e9"',
    '"\\uff0fetc"', '"' + "a" * 2000 + '"', '"' + "b" * 70000 + '"', '"' + "\\u00e9" * 5000 + '"',
)  # fmt: skip
MALFORMED = ("", "{", "}", "{]", '{"a": }', '{"a":1,}', "{'a': 1}", "[1, 2", "nul", '"unterminated')


def _deep(rng: random.Random, depth: int) -> str:
    if rng.random() < 0.5:
        return "[" * depth + "1" + "]" * depth
    return '{"k":' * depth + "1" + "}" * depth


def hostile_value(rng: random.Random, depth: int = 2) -> str:
    """One JSON value as text: a hostile scalar, a small container, or deep nesting."""
    roll = rng.random()
    if roll < 0.3:
        return rng.choice(NUMBERS)
    if roll < 0.6:
        return rng.choice(STRINGS)
    if roll < 0.68:
        return rng.choice(("null", "true", "false"))
    if roll < 0.8 and depth > 0:
        return (
            "[" + ", ".join(hostile_value(rng, depth - 1) for _ in range(rng.randint(0, 4))) + "]"
        )
    if roll < 0.9 and depth > 0:
        items = [
            f"{rng.choice(STRINGS)}: {hostile_value(rng, depth - 1)}"
            for _ in range(rng.randint(0, 4))
        ]
        return "{" + ", ".join(items) + "}"
    return _deep(rng, rng.choice(DEPTHS))


def _object(rng: random.Random, fields: dict[str, Callable[[], str]]) -> str:
    """An arguments object: some known fields (valid or hostile values), maybe extra or repeated keys."""
    names = [name for name in fields if rng.random() < 0.6]
    items = [f"{json.dumps(name)}: {fields[name]()}" for name in names]
    if rng.random() < 0.15:
        items.append(f"{rng.choice(STRINGS)}: {hostile_value(rng)}")  # an unknown key
    if items and rng.random() < 0.05:
        items.append(items[0])  # a repeated key
    rng.shuffle(items)
    return "{" + ", ".join(items) + "}"


def _either(rng: random.Random, valid: list[Any], hostility: float = 0.5) -> Callable[[], str]:
    def pick() -> str:
        if rng.random() < hostility:
            return hostile_value(rng)
        return json.dumps(rng.choice(valid))

    return pick


def _memory_query(rng: random.Random) -> dict[str, Callable[[], str]]:
    return {
        "preset": _either(rng, ["default", "reviewer", "analyst", "planner", "nope"]),
        "direction": _either(rng, ["ancestors", "descendants", "bidirectional", "up"]),
        "scope": _either(rng, ["settled_only", "debug_all_statuses"]),
        "routing_key": _either(rng, ["c1", "c2", "x" * 128, "x" * 129]),
        "query_text": _either(rng, ["evidence", "what did the analysts find", "y" * 1001]),
        "max_graph_distance": _either(rng, [1, 2, 64, 65, 0, -1]),
        "limit": _either(rng, [1, 5, 50, 51, 0, True]),
    }


def _memory(rng: random.Random) -> dict[str, Callable[[], str]]:
    paths = ["/notes", "/notes/a.md", "/", "/a/b/c", *HOSTILE_PATHS[:40]]
    return {
        "command": _either(
            rng,
            [
                "view",
                "create",
                "str_replace",
                "insert",
                "delete",
                "rename",
                "read",
                "list",
                "append",
                "update",
                "format",
            ],
            0.2,
        ),
        "path": _either(rng, paths, 0.3),
        "file_text": _either(rng, ["hello", "line 1\nline 2", "z" * 32001]),
        "content": _either(rng, ["more", "x" * 32001]),
        "old_str": _either(rng, ["hello", "line"]),
        "new_str": _either(rng, ["bye", ""]),
        "old": _either(rng, ["l", "hello"]),
        "new": _either(rng, ["L", ""]),
        "insert_line": _either(rng, [0, 1, 99, -1]),
        "insert_text": _either(rng, ["inserted"]),
        "view_range": _either(rng, [[1, 2], [1, -1], [0, 0], [3]]),
        "old_path": _either(rng, paths, 0.3),
        "new_path": _either(rng, paths, 0.3),
    }


def _propose(rng: random.Random) -> dict[str, Callable[[], str]]:
    def node() -> str:
        return _object(
            rng,
            {
                "id": _either(rng, ["x", "check", "a:b", "", "n" * 65]),
                "kind": _either(rng, ["step", "fuzz", "unknown"]),
                "config": _either(rng, [{}, {"claim_ref": "c2"}, {"k": [1, 2]}]),
            },
        )

    def nodes() -> str:
        if rng.random() < 0.3:
            return hostile_value(rng)
        return "[" + ", ".join(node() for _ in range(rng.randint(0, 5))) + "]"

    return {
        "operation": _either(rng, ["append_after", "expand_node", "delete_node"], 0.3),
        "anchor": _either(rng, ["f0", "source", "ghost", "f0:x"], 0.3),
        "nodes": nodes,
        "mode": _either(rng, ["replace", "retain", "sideways"]),
        "edges": _either(rng, [[{"source": "x", "target": "check"}], [], [{"source": "x"}]]),
        "entry": _either(rng, [["x"], [], ["ghost"]]),
        "exit": _either(rng, [["x"], ["check"], []]),
        "reason": _either(rng, ["a gap", "r" * 5000]),
    }


_FIELDS: dict[str, Callable[[random.Random], dict[str, Callable[[], str]]]] = {
    "cortex_memory_query": _memory_query,
    "memory": _memory,
    "propose_rewrite": _propose,
}


_FIELD_OF = {"cortex_memory_query": "query_text", "memory": "content", "propose_rewrite": "anchor"}


def regression_arguments(tool: str) -> list[str]:
    """Argument strings that broke a run before (issue 14, D2/D3, and what this suite found).

    Run first, every time, so that the short mode cannot miss them by chance.
    """
    field = json.dumps(_FIELD_OF[tool])
    values = [
        "[" * 500 + "]" * 500,  # D2: RecursionError in json_safe
        "[" * 5000 + "]" * 5000,
        '{"k":' * 255 + "1" + "}" * 255,  # D3: msgpack gives up near 255 levels
        str(2**64),  # D3: msgpack cannot pack it
        str(-(2**63) - 1),
        "9" * 5000,  # json.loads refuses to build it
        "1e400",
        "NaN",
        '"\\ud800"',
        '"\\udfff\\ud800"',
        '"a\\u0000b"',
    ]
    cases = [f"{{{field}: {value}}}" for value in values]
    cases += [
        '{"\\udfff\\ud800": 1}',  # a key no pydantic error message can print
        '{"\\ud800": "x", ' + field[:-1] + '": "y"}',
        "{" + ", ".join(f'"k{i}": {i}' for i in range(300)) + "}",
        '{"command": "append", "path": "/a", "content": "x", "command": "delete"}',
    ]
    return cases


def tool_arguments(tool: str, rng: random.Random) -> str:
    """The JSON text of one hostile ``arguments`` string for ``tool``."""
    roll = rng.random()
    if roll < 0.04:
        return rng.choice(MALFORMED)
    if roll < 0.08:
        return hostile_value(rng)  # not an object at all
    if roll < 0.12:
        return _deep(rng, rng.choice(DEPTHS))
    return _object(rng, _FIELDS[tool](rng))


# -- R5: paths ------------------------------------------------------------------------------

HOSTILE_PATHS: list[str] = [
    # traversal
    "..", "../x", "/..", "/../x", "/a/../../b", "/a/..", "/./a", "/a/./b", ".", "/.", "a/../b",
    "/a/b/../../../etc/passwd", "/..." , "/a/...", "....//x", "/.. /x", "/ ../x",
    # encodings
    "%2e%2e/x", "/%2e%2e/x", "/a%2fb", "/..%2fx", "/%00", "/a%00b", "/%252e%252e/x",
    "/a\\..\\b", "\\x", "/a\\b", "/a/b\\", "C:\\x", "C:/x", "file:///etc/passwd",
    "~/x", "/~root", "$HOME", "/$HOME/x", "/a$b", "/${x}", "/a`id`",
    # unicode look-alikes and controls
    "/\uff0e\uff0e/x", "/a\u2215b", "/a\u2044b", "/\u202ex", "/\u200bx", "/x\u200d", "/\ufeffx",
    "/caf\u00e9", "/\u0430dmin", "/\U0001f600", "/a\u0301", "/\u2024\u2024/x", "/\uff0fx",
    "/a\x00b", "/\x00", "/a\nb", "/a\rb", "/a\tb", "/a\x1bb", "/a\x7fb", "/a\x85b",
    "/a\u2028b", "/\ud800", "/x\udfff",
    # shape
    "", " ", "x", "notes/a", "/a /b", "/ a", "/a/ ", "/a.", "/.hidden", "/a..b", "/a:b", "/a*b",
    "/a?b", "/a|b", "/a<b>", '/a"b', "/a'b", "/" + "x" * 65, "/" + "/".join(["d"] * 17),
    "/" + "y" * 5000,
]  # fmt: skip


# -- R4: snapshot variants -------------------------------------------------------------------


def _text(doc: Any) -> str:
    return json.dumps(doc, ensure_ascii=False)


def _splice(doc: dict, path: list[Any], literal: str) -> str:
    """The document's text with the value at ``path`` replaced by raw JSON ``literal``."""
    marked = copy.deepcopy(doc)
    target = marked
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = "@@SPLICE@@"
    return _text(marked).replace('"@@SPLICE@@"', literal, 1)


def snapshot_variants(
    base_text: str, rng: random.Random, count: int
) -> Iterator[tuple[str, bytes, bool | None]]:
    """``count`` malformed variants of a valid snapshot: ``(name, file bytes, expect_invalid)``.

    ``expect_invalid`` is ``True`` when the mutation certainly breaks the file,
    ``None`` when it may not (a removed optional field, a changed string).
    """
    base = json.loads(base_text)
    nodes, edges = base["nodes"], base["edges"]
    ids = [n["id"] for n in nodes]
    fields = ("id", "kind", "status", "captured_at", "completed_at", "output", "tags", "attempts")

    def pick_node() -> int:
        return rng.randrange(len(nodes))

    def mutate(fn: Callable[[dict], Any]) -> dict:
        doc = copy.deepcopy(base)
        fn(doc)
        return doc

    operators: list[Callable[[], tuple[str, bytes, bool | None]]] = []

    def op(fn: Callable[[], tuple[str, bytes, bool | None]]) -> None:
        operators.append(fn)

    op(
        lambda: (
            "hostile value",
            _splice(base, ["nodes", pick_node(), "output"], hostile_value(rng, 3)).encode(),
            None,
        )
    )
    op(
        lambda: (
            "hostile number",
            _splice(base, ["nodes", pick_node(), "attempts"], rng.choice(NUMBERS)).encode(),
            None,
        )
    )
    op(
        lambda: (
            "deep output",
            _splice(
                base, ["nodes", pick_node(), "output"], _deep(rng, rng.choice(DEPTHS[5:]))
            ).encode(),
            None,
        )
    )
    op(
        lambda: (
            "hostile id",
            _splice(base, ["nodes", pick_node(), "id"], rng.choice(STRINGS)).encode(),
            None,
        )
    )
    op(
        lambda: (
            "hostile kind",
            _splice(base, ["nodes", pick_node(), "kind"], rng.choice(STRINGS + NUMBERS)).encode(),
            None,
        )
    )
    op(
        lambda: (
            "hostile timestamp",
            _splice(
                base,
                ["nodes", pick_node(), rng.choice(("captured_at", "completed_at"))],
                json.dumps(rng.choice(TIMESTAMPS)),
            ).encode(),
            None,
        )
    )
    op(
        lambda: (
            "hostile entry_time",
            _splice(base, ["entry_time"], json.dumps(rng.choice(TIMESTAMPS))).encode(),
            None,
        )
    )
    op(
        lambda: (
            "hostile tag",
            _splice(base, ["nodes", pick_node(), "tags"], "[" + rng.choice(STRINGS) + "]").encode(),
            None,
        )
    )
    op(
        lambda: (
            "hostile run_id",
            _splice(base, ["run_id"], rng.choice(STRINGS + NUMBERS)).encode(),
            None,
        )
    )
    op(
        lambda: (
            "attempts",
            _text(
                mutate(
                    lambda d: d["nodes"][pick_node()].__setitem__(
                        "attempts", rng.choice([0, 2, 1000, 1001, 100_000, 10**9, -1, True, 1.5])
                    )
                )
            ).encode(),
            None,
        )
    )
    op(
        lambda: (
            "status",
            _text(
                mutate(
                    lambda d: d["nodes"][pick_node()].__setitem__(
                        "status",
                        rng.choice(["pending", "running", "failed", "retired", "done", "", None]),
                    )
                )
            ).encode(),
            None,
        )
    )
    op(
        lambda: (
            "drop field",
            _text(mutate(lambda d: d["nodes"][pick_node()].pop(rng.choice(fields), None))).encode(),
            None,
        )
    )
    op(
        lambda: (
            "drop top field",
            _text(
                mutate(
                    lambda d: d.pop(
                        rng.choice(
                            ["schema_version", "entry_time", "nodes", "edges", "run_id", "rewrites"]
                        ),
                        None,
                    )
                )
            ).encode(),
            None,
        )
    )
    op(
        lambda: (
            "unknown field",
            _text(mutate(lambda d: d["nodes"][pick_node()].__setitem__("colour", "red"))).encode(),
            True,
        )
    )
    op(
        lambda: (
            "schema version",
            _text(
                mutate(
                    lambda d: d.__setitem__("schema_version", rng.choice(["2", 1, "", None, "1.0"]))
                )
            ).encode(),
            True,
        )
    )
    op(
        lambda: (
            "duplicate node",
            _text(
                mutate(lambda d: d["nodes"].append(copy.deepcopy(d["nodes"][pick_node()])))
            ).encode(),
            True,
        )
    )
    op(
        lambda: (
            "dangling edge",
            _text(
                mutate(lambda d: d["edges"].append({"source": rng.choice(ids), "target": "ghost"}))
            ).encode(),
            True,
        )
    )
    op(
        lambda: (
            "self loop",
            _text(
                mutate(lambda d: d["edges"].append({"source": (x := rng.choice(ids)), "target": x}))
            ).encode(),
            True,
        )
    )
    op(
        lambda: (
            "reversed edge",
            _text(
                mutate(
                    lambda d: d["edges"].append(
                        {"source": (e := rng.choice(edges))["target"], "target": e["source"]}
                    )
                )
            ).encode(),
            True,
        )
    )
    op(
        lambda: (
            "duplicate edge",
            _text(mutate(lambda d: d["edges"].append(copy.deepcopy(rng.choice(edges))))).encode(),
            True,
        )
    )
    op(
        lambda: (
            "edge shape",
            _text(
                mutate(
                    lambda d: d["edges"].__setitem__(
                        rng.randrange(len(edges)),
                        rng.choice(
                            [
                                {"source": ids[0]},
                                [ids[0], ids[1]],
                                "x",
                                None,
                                {"source": 1, "target": 2},
                            ]
                        ),
                    )
                )
            ).encode(),
            True,
        )
    )
    op(
        lambda: (
            "empty graph",
            _text(
                mutate(lambda d: (d.__setitem__("nodes", []), d.__setitem__("edges", [])))
            ).encode(),
            True,
        )
    )
    op(
        lambda: (
            "rewrite",
            _text(mutate(lambda d: d.__setitem__("rewrites", [rng.choice(REWRITES)]))).encode(),
            None,
        )
    )
    op(
        lambda: (
            "budget",
            _text(
                mutate(
                    lambda d: d.__setitem__(
                        "rewrite_budget",
                        rng.choice(
                            [{"nodes": -1}, {"nodes": 1.5}, ["x"], {"nodes": 2**64}, {"nodes": 3}]
                        ),
                    )
                )
            ).encode(),
            None,
        )
    )
    op(lambda: ("truncated", base_text.encode()[: rng.randrange(1, len(base_text))], True))
    op(lambda: ("flipped byte", _flip(base_text.encode(), rng), None))
    op(lambda: ("NaN", base_text.replace('"attempts": 1', '"attempts": NaN', 1).encode(), True))
    op(
        lambda: (
            "duplicate key",
            base_text.replace('"kind": "planner"', '"kind": "planner", "kind": "x"', 1).encode(),
            True,
        )
    )
    op(lambda: ("BOM", b"\xef\xbb\xbf" + base_text.encode(), True))
    op(
        lambda: (
            "latin-1",
            base_text.replace("Remote", "R\u00e9mote").encode("latin-1", "replace"),
            True,
        )
    )
    op(lambda: ("not an object", rng.choice(["[]", "1", '"x"', "null", "[" * 3000]).encode(), True))
    op(lambda: ("nesting", ("[" * rng.choice(DEPTHS[8:]) + "]" * 3).encode(), True))

    for i in range(count):
        name, data, expect = operators[i % len(operators)]()
        yield f"{i:04d} {name}", data, expect


TIMESTAMPS = (
    "2026-01-01T00:00:00Z\x00", "9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00",
    "2026-01-01T00:00:00", "2026-13-01T00:00:00Z", "yesterday", "", "2026-01-01T00:00:00.1234567Z",
    "\uff12\uff10\uff12\uff16-01-01T00:00:00Z", "2026-01-01T00:00:00+01:00", "20260101T000000Z",
    "2025-12-31T00:00:00Z",
)  # fmt: skip
REWRITES = (
    {"rewrite_id": 1, "proposer": "reviewer", "proposal": {}, "decision": "admitted"},
    {"rewrite_id": 2, "proposer": "reviewer", "proposal": {"op": "x"}, "decision": "admitted"},
    {"rewrite_id": None, "proposer": "reviewer", "proposal": {"op": "x"}, "decision": "rejected"},
    {"rewrite_id": None, "proposer": "ghost", "proposal": {"op": "x"}, "decision": "rejected", "code": "invalid_rewrite"},
    {"rewrite_id": 1, "proposer": "reviewer", "proposal": {"op": "x"}, "decision": "admitted", "diff": {"nodes": ["x"]}},
    {"rewrite_id": 1, "proposer": "reviewer", "proposal": {"op": "x"}, "decision": "admitted", "diff": {"nodes": [{"id": "ghost"}]}},
    {"rewrite_id": 10**30, "proposer": "reviewer", "proposal": {"op": "x"}, "decision": "admitted"},
    {"rewrite_id": None, "proposer": "reviewer", "proposal": {"op": "x"}, "decision": "rejected", "code": "policy_rejected"},
)  # fmt: skip


def _flip(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)
