"""What bounds recall@3 on the real-text families: the question, a perfect reader, word overlap.

    python tools/multihop_ceiling.py                     # dev, held-out and both, mh-flat + mh-history
    python tools/multihop_ceiling.py --split heldout     # one split
    python tools/multihop_ceiling.py --family mh-flat    # one family (repeatable)
    python tools/multihop_ceiling.py --json              # last line: one JSON object
    python tools/multihop_ceiling.py --json --cases      # ... with every case's top 3 and gold census

Evidence, not product: every ranking below is the harness's ``shipped-reviewer``
(:mod:`cortex_agents.evaluation._configs`, the reviewer stage's
``cortex_memory_query`` call with only ``query_text``) over the harness's own
cases (:mod:`cortex_agents.evaluation._multihop`, from ``data/multihop/``); only
the query text changes. Per family, split and dataset it reports recall@3
(:mod:`cortex_agents.evaluation._metrics`) of:

``question``
    The question: the harness's figure.
``answers``
    The queries a perfect reader would write. MuSiQue: each step of the
    record's ``question_decomposition``, its ``#k`` replaced by step ``k``'s
    gold ``answer`` (:func:`fill_hops`), is ranked alone; the top 3 takes the
    first not-yet-taken node of step 1's ranking, then step 2's, ... and
    again from step 1 until it holds 3 (:func:`round_robin`). HotpotQA: the
    question and its gold ``answer``, joined by a space.
``steps``
    (MuSiQue) A decomposer with no reader: the same steps and round robin,
    with each ``#k`` left out instead of answered.
``appended``
    (MuSiQue) One query: the question and the gold answers of every step but
    the last (the bridge entities), joined by spaces.
``best``
    Per case, the higher of ``answers`` and ``appended`` (HotpotQA: ``answers``):
    a ceiling over both ways of using a perfect reader's answers, not a ranking.
``share`` / ``none``
    The word-overlap census: each gold paragraph (title + text, as its
    analyst carries them) shares a content word with the question, or none —
    a content word being a token of the project's lexical tokeniser
    (:func:`cortex_agents.memory._lexical.lexical_tokens`) not in
    :data:`STOPWORDS` and longer than one character. Cells are
    ``found/gold``: gold paragraphs in the question's top 3 over gold
    paragraphs of that kind, then the same with ``answers``.
``hop 1`` / ``later``
    The same ``found/gold`` (question, then ``answers``) by hop position (the
    dataset's hop order, :class:`cortex_agents.evaluation._multihop.Record`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from cortex_agents.errors import InvalidArgument
from cortex_agents.evaluation import LoadedCase, build_configs, read_cases, recall_at
from cortex_agents.evaluation._multihop import Record, build_cases, load_records
from cortex_agents.memory import lexical_tokens

ROOT: Final = Path(__file__).resolve().parents[1]
RECORDS: Final = (
    ROOT / "data" / "multihop" / "hotpotqa_train_devsplit.json",
    ROOT / "data" / "multihop" / "musique_train_devsplit.json",
)
FAMILIES: Final = ("mh-flat", "mh-history")
K: Final = 3
_STOPWORD_TEXT: Final = """
a an the and or but nor of in on at to for from by with as into onto about over under after
before between during through than then that this these those there here is are was were be
been being am do does did done has have had having it its he she him her his hers they them
their theirs we us our you your me my not no yes so if which who whom whose what when where
why how also both either neither same other another such one any all each some most more many
much can could will would shall should may might must
"""
STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())
"""Function words and question words: never content words (one-character tokens never are)."""
_HOP_REF: Final = re.compile(r"#(\d+)")
Ranker = Callable[[LoadedCase], list[str]]


def fill_hops(step: str, answers: Sequence[str] | None) -> str:
    """``step`` with each ``#k`` replaced by ``answers[k - 1]``, or removed when ``answers`` is None.

    Raises:
        InvalidArgument: a ``#k`` names no earlier answer.
    """

    def answer(match: re.Match[str]) -> str:
        if answers is None:
            return ""
        k = int(match.group(1))
        if not 1 <= k <= len(answers):
            raise InvalidArgument("question_decomposition", "`#k` must name a step", step)
        return answers[k - 1]

    return " ".join(_HOP_REF.sub(answer, step).split())


def round_robin(rankings: Sequence[Sequence[str]], k: int = K) -> list[str]:
    """The first ``k`` distinct ids taken in turn from each ranking (rank 1 of each, then 2...)."""
    out: list[str] = []
    for depth in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if depth < len(ranking) and ranking[depth] not in out:
                out.append(ranking[depth])
                if len(out) == k:
                    return out
    return out


def content_words(text: str) -> set[str]:
    """The lexical tokens of ``text`` that are not stopwords nor one character long."""
    return {t for t in lexical_tokens(text) if len(t) > 1 and t not in STOPWORDS}


def _raw_items() -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for path in RECORDS:
        for item in json.loads(path.read_text(encoding="utf-8")):
            if "_id" in item:
                out[("hotpotqa", str(item["_id"]))] = item
            else:
                out[("musique", str(item["id"]))] = item
    return out


def _queries(record: Record, raw: dict[str, Any]) -> dict[str, list[str]]:
    """Each variant's queries (one, or one per decomposition step)."""
    if record.source == "hotpotqa":
        return {"answers": [f"{record.question} {raw['answer']}"]}
    steps = [str(s["question"]) for s in raw["question_decomposition"]]
    answers = [str(s["answer"]) for s in raw["question_decomposition"]]
    return {
        "answers": [fill_hops(s, answers) for s in steps],
        "steps": [fill_hops(s, None) for s in steps],
        "appended": [" ".join([record.question, *answers[:-1]])],
    }


def _case_row(
    case: LoadedCase, record: Record, raw: dict[str, Any], rank: Ranker
) -> dict[str, Any]:
    """One case's top 3 per variant and its gold paragraphs' census."""
    tops = {"question": rank(case)[:K]}
    for name, queries in _queries(record, raw).items():
        rankings = [rank(dataclasses.replace(case, query=q)) for q in queries]
        tops[name] = round_robin(rankings)
    asked = content_words(record.question)
    gold = []
    for hop, node in zip(range(len(record.hops)), case.relevant, strict=True):
        paragraph = record.paragraphs[record.hops[hop]]
        shared = sorted(asked & content_words(f"{paragraph.title} {paragraph.text}"))
        found = {name: node in top for name, top in tops.items()}
        gold.append({"node": node, "hop": hop + 1, "shared": shared, "found": found})
    recall = {name: recall_at(top, case.relevant, K) for name, top in tops.items()}
    recall["best"] = max(recall[v] for v in ("answers", "appended") if v in recall)
    return {"recall": recall, "tops": tops, "gold": gold}


def _cell(found: int, total: int) -> dict[str, float | int | None]:
    return {"found": found, "gold": total, "rate": found / total if total else None}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean recall@3 per variant and the census of a group of case rows."""
    variants = [v for v in rows[0]["recall"] if all(v in r["recall"] for r in rows)]
    out: dict[str, Any] = {"cases": len(rows)}
    for v in variants:
        out[v] = sum(r["recall"][v] for r in rows) / len(rows)
    golds = [g for r in rows for g in r["gold"]]
    variants = [v for v in variants if all(v in g["found"] for g in golds)]
    for label, chosen in (
        ("share", [g for g in golds if g["shared"]]),
        ("none", [g for g in golds if not g["shared"]]),
        ("hop 1", [g for g in golds if g["hop"] == 1]),
        ("later", [g for g in golds if g["hop"] > 1]),
    ):
        out[label] = {v: _cell(sum(g["found"][v] for g in chosen), len(chosen)) for v in variants}
    return out


def measure(split: str, families: Sequence[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Summaries keyed ``family -> split -> dataset``, and every case row (with its labels)."""
    records = []
    for path in RECORDS:
        found, _ = load_records(path)
        records += found
    by_id: dict[tuple[str, str], Record] = {(r.source, r.record_id): r for r in records}
    raw = _raw_items()
    built = build_cases(records, split=split, families=families)  # type: ignore[arg-type]
    loaded = read_cases([c.to_json() for c in built])
    rank = next(c.rank for c in build_configs(scorers=()) if c.name == "shipped-reviewer")
    rows = []
    for case_json, case in zip(built, loaded, strict=True):
        record_id = case_json.name.split("/", 2)[2]
        key = (case_json.source, record_id)
        row = _case_row(case, by_id[key], raw[key], rank)
        labels = {"family": case_json.family, "split": case_json.split, "name": case_json.name}
        rows.append({**labels, "source": case_json.source, "question": case.query, **row})
    splits = ["dev", "heldout", "all"] if split == "all" else [split]
    summary: dict[str, Any] = {}
    for family in families:
        for s in splits:
            for dataset in ("hotpotqa", "musique", "both"):
                chosen = [
                    r for r in rows if r["family"] == family
                    and s in ("all", r["split"]) and dataset in ("both", r["source"])
                ]  # fmt: skip
                summary.setdefault(family, {}).setdefault(s, {})[dataset] = summarise(chosen)
    return summary, rows


def _fraction(cell: dict[str, float | int | None]) -> str:
    return f"{cell['found']}/{cell['gold']}"


def table(summary: dict[str, Any]) -> str:
    """The summary as a Markdown table."""
    lines = [
        "| family | split | dataset | cases | question | answers | steps | appended | best "
        "| share: question / answers | none: question / answers "
        "| hop 1: question / answers | later: question / answers |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for family, splits in summary.items():
        for split, datasets in splits.items():
            for dataset, s in datasets.items():
                cells = [f"{s[v]:.2f}" if v in s else "–" for v in
                         ("question", "answers", "steps", "appended", "best")]  # fmt: skip
                census = [
                    f"{_fraction(s[g]['question'])} / {_fraction(s[g]['answers'])}"
                    for g in ("share", "none")
                ]
                hops = [
                    f"{_fraction(s[g]['question'])} / {_fraction(s[g]['answers'])}"
                    for g in ("hop 1", "later")
                ]
                row = [family, split, dataset, str(s["cases"]), *cells, *census, *hops]
                lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the measurement and print the table (and the JSON object with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("dev", "heldout", "all"), default="all")
    parser.add_argument("--family", action="append", dest="families",
                        choices=("mh-flat", "mh-chain", "mh-repair", "mh-history"),
                        help=f"repeatable (default: {', '.join(FAMILIES)})")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    parser.add_argument("--cases", action="store_true", help="with --json: every case's row too")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    summary, rows = measure(args.split, tuple(args.families or FAMILIES))
    seconds = time.perf_counter() - started
    load = os.getloadavg()
    print(table(summary))
    print(f"\n{len(rows)} cases in {seconds:.0f} s, load average {load[0]:.2f} {load[1]:.2f}")
    if args.json:
        result: dict[str, Any] = {"split": args.split, "summary": summary,
                                  "seconds": round(seconds, 1), "loadavg": list(load)}  # fmt: skip
        if args.cases:
            result["cases"] = rows
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
