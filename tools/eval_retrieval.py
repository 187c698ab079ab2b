"""Retrieval quality, measured: recall@3, nDCG@5 and MRR per configuration.

    python tools/eval_retrieval.py                      # every family, dev split
    python tools/eval_retrieval.py --split heldout      # the held-out split (report these)
    python tools/eval_retrieval.py --set multihop       # only the real-text (multi-hop) families
    python tools/eval_retrieval.py --cases FILE.json    # any labelled set in the case format
    python tools/eval_retrieval.py --multihop FILE.json --split all   # cases built from any
                                                        # HotpotQA / MuSiQue record file
    python tools/eval_retrieval.py --json               # last line: {"cases": N, "configs": {...}, ...}
    python tools/eval_retrieval.py --chart recall.html  # recall@3 by config and family
    python tools/eval_retrieval.py --write-cases all.json --split all   # the chosen cases as a file

Two built-in sets: ``synthetic`` (generated claim reviews,
:mod:`cortex_agents.evaluation._devset`) and ``multihop`` (HotpotQA and MuSiQue
questions run as claim reviews, built from the records in ``data/multihop/``
by :mod:`cortex_agents.evaluation._multihop`); ``--split`` picks the same split
of both. ``--multihop FILE`` (repeatable) builds the multi-hop families from
other record files instead.

A case file is a JSON list of ``{"snapshot", "origin", "query", "relevant"}``
objects (see :mod:`cortex_agents.evaluation._cases`). ``shipped-reviewer`` is
what a reviewer stage's ``cortex_memory_query`` call with only ``query_text``
returns with the shipped defaults (see :mod:`cortex_agents.evaluation._configs`).
Metrics are defined in :mod:`cortex_agents.evaluation._metrics`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cortex_agents.errors import CortexError
from cortex_agents.evaluation import (
    build_cases,
    generate_cases,
    load_cases,
    load_records,
    read_cases,
)
from cortex_agents.evaluation._configs import build_configs, unavailable_scorers
from cortex_agents.evaluation._report import METRICS, evaluate, html_chart

ROOT = Path(__file__).resolve().parents[1]
MULTIHOP_RECORDS = (
    ROOT / "data" / "multihop" / "hotpotqa_train_devsplit.json",
    ROOT / "data" / "multihop" / "musique_train_devsplit.json",
)


def case_objects(
    split: str, set_name: str, multihop: list[Path] | None = None
) -> tuple[list[dict], str]:
    """The case-file objects of the chosen set and split, and a description of them.

    Records the multi-hop parser skipped are named on stderr.
    """
    objects: list[dict] = []
    parts = []
    if multihop:
        set_name = "multihop"
    if set_name in ("synthetic", "all"):
        objects += [c.to_json() for c in generate_cases(split)]  # type: ignore[arg-type]
        parts.append("synthetic")
    if set_name in ("multihop", "all"):
        records = []
        for path in multihop or MULTIHOP_RECORDS:
            found, skipped = load_records(path)
            records += found
            for item in skipped:
                print(f"skipped record {item.where}: {item.reason}", file=sys.stderr)
        objects += [c.to_json() for c in build_cases(records, split=split)]  # type: ignore[arg-type]
        names = ", ".join(Path(p).name for p in multihop) if multihop else "data/multihop"
        parts.append(f"multihop ({names})")
    return objects, f"{' + '.join(parts)}, {split} split"


def _table(result: dict, title: str) -> Table:
    families = list(result["families"])
    table = Table(title=title, title_justify="left")
    table.add_column("config", no_wrap=True)
    for metric in METRICS:
        table.add_column(metric, justify="right")
    for family in families:
        table.add_column(f"r@3 {family} ({result['families'][family]['cases']})", justify="right")
    shipped = result["configs"].get("shipped-reviewer", {}).get("recall@3")
    for name, scores in result["configs"].items():
        style = "bold" if name == "shipped-reviewer" else None
        cells = [f"{scores[m]:.3f}" for m in METRICS]
        cells += [f"{result['families'][f]['configs'][name]['recall@3']:.3f}" for f in families]
        table.add_row(name, *cells, style=style)
    if shipped is not None:
        table.caption = "recall@3 = |relevant ∩ top 3| / min(|relevant|, 3); bold: shipped defaults"
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, help="a case file (default: the project's dev set)")
    parser.add_argument("--split", choices=("dev", "heldout", "all"), default="dev",
                        help="which split of the built-in sets (ignored with --cases)")  # fmt: skip
    parser.add_argument("--set", choices=("synthetic", "multihop", "all"), default="all",
                        dest="set_name", help="which built-in set (default: both)")  # fmt: skip
    parser.add_argument("--multihop", type=Path, action="append",
                        help="build the multi-hop families from this HotpotQA or MuSiQue record "
                        "file (repeatable; JSON list or JSON lines)")  # fmt: skip
    parser.add_argument("--scorer", action="append", dest="scorers",
                        help="compare only these scorers (repeatable; default: every one that loads)")  # fmt: skip
    parser.add_argument("--config", action="append", dest="only",
                        help="run only these configurations (repeatable)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    parser.add_argument("--chart", type=Path, help="write an HTML chart of recall@3 here")
    parser.add_argument(
        "--write-cases", "--write-devset", type=Path, dest="write_cases",
        help="write the chosen set and split as a case file and exit",
    )  # fmt: skip
    args = parser.parse_args(argv)
    console = Console(stderr=args.json, width=170)

    try:
        if args.write_cases:
            objects, source = case_objects(args.split, args.set_name, args.multihop)
            read_cases(objects)  # what is written must load
            args.write_cases.write_text(json.dumps(objects, ensure_ascii=False), encoding="utf-8")
            console.print(f"wrote {len(objects)} cases ({source}) to {args.write_cases}")
            return 0
        if args.cases:
            cases = load_cases(args.cases)
            source = str(args.cases)
        else:
            objects, source = case_objects(args.split, args.set_name, args.multihop)
            cases = read_cases(objects)
        configs = build_configs(tuple(args.scorers) if args.scorers else None)
    except CortexError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    skipped = {} if args.scorers else unavailable_scorers()
    for name, reason in skipped.items():
        print(f"skipped scorer:{name} and semantic:{name}: {reason}", file=sys.stderr)
    if args.only:
        configs = [c for c in configs if c.name in args.only]
    with Progress(
        TextColumn("[progress.description]{task.description}"), BarColumn(),
        MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True,
    ) as progress:  # fmt: skip
        task = progress.add_task(f"{len(configs)} configs", total=len(cases))
        result = evaluate(cases, configs, advance=lambda: progress.advance(task))
    result["source"] = source
    result["skipped_scorers"] = skipped
    title = f"retrieval on {source}: {len(cases)} cases"
    console.print(_table(result, title))
    if args.chart:
        args.chart.write_text(html_chart(result, title), encoding="utf-8")
        console.print(f"chart: {args.chart}")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
