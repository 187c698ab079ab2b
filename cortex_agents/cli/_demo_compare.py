"""Two reviewers side by side, and in one sentence what memory changed between them.

``cortex-agents demo --compare`` shows a held-out case of the review eval
(:mod:`cortex_agents.evaluation._reviews`): the case is chosen from the
recorded table by :func:`~cortex_agents.evaluation._review_runs.showcase` (a
stated rule, in id order), and its classic and topological arms are replayed
from the eval's cassettes (``cassettes/reviews/heldout/``, network blocked)
into the demo's database, one thread each. What it prints is read back from
the two runs; that the topological review caught the planted flaw is scored
on the replayed review by the eval's own rule
(:func:`~cortex_agents.evaluation._review_score.score_review`).

The same table and sentence show the two reviewer stages of one run of the
``claim_review_compare`` scenario (``demo --scenario claim_review_compare``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from rich.table import Table

from cortex_agents._bundled import bundled_path
from cortex_agents.cli._app import stdout
from cortex_agents.cli._demo_view import (
    calls_of,
    closing_panel,
    display,
    memory_label,
    new_thread,
    next_commands,
    print_blocks,
    recalled_by,
    review_text,
    tool_call_blocks,
    value_of,
)
from cortex_agents.cli._narrow import command_lines, print_lines, wrap
from cortex_agents.cli._run_cmd import _Printer
from cortex_agents.evaluation._review_arms import Arm, review_wire
from cortex_agents.evaluation._review_runs import (
    cassette_path,
    load_recorded,
    replay_case,
    showcase,
)
from cortex_agents.evaluation._review_score import score_review
from cortex_agents.evaluation._reviews import FLAW_MEANINGS, ReviewCase, build_review_cases
from cortex_agents.persistence._saver import CortexSaver
from cortex_agents.runtime import RunResult, Wire
from cortex_agents.substrate import NodeId

__all__ = ["SPLIT", "Side", "compare_sentence", "compare_table", "show_heldout"]

SPLIT: Final = "heldout"
_ARMS: Final[tuple[Arm, Arm]] = ("classic", "topological")
_FORCED: Final = (
    "• the planner, the analysts and the merge are the case's data, not a model's: only "
    "the reviewers call one, with the same prompts",
    "• the topological reviewer's first model turn must call cortex_memory_query, offered "
    "only query_text, one call run per turn; the classic reviewer has no tool",
)


@dataclass(frozen=True, slots=True)
class Side:
    """One reviewer of a comparison.

    Attributes:
        label: How the table and the sentence name it.
        result: The run it is a stage of.
        wire: That run's wire.
        node: The reviewer's stage id.
    """

    label: str
    result: RunResult
    wire: Wire
    node: str


def _kind(side: Side) -> str:
    node = side.result.state.nodes.get(NodeId(side.node))
    return node.kind if node is not None else ""


def _direct(side: Side) -> list[str]:
    return list(side.result.state.predecessors(side.node))


def _returned(side: Side) -> list[str]:
    """The nodes the reviewer's memory queries returned, in order, each once."""
    found = [
        str(m.get("node_id"))
        for call in calls_of(side.result, side.node)
        for m in (call.result or {}).get("matches", [])
    ]
    return list(dict.fromkeys(found))


def _gist(result: RunResult, node_id: str) -> str:
    value = value_of(result, node_id)
    text = value.get("finding") or value.get("summary") or value.get("notes") or ""
    return f"{node_id}: {display(text, 120) or '(empty)'}"


def _seen(side: Side) -> str:
    """What the reviewer could see: its inputs, what it recalled, what its queries returned."""
    result = side.result
    lines = [f"input {_gist(result, n)}" for n in _direct(side)]
    recalled = recalled_by(result, side.node)
    if not recalled:
        lines.append("recalled: nothing (no memory past its inputs)")
    lines += [f"recalled {_gist(result, n)}" for n in recalled]
    calls = calls_of(result, side.node)
    for call in calls:
        if "matches" in (call.result or {}):
            found = ", ".join(str(m.get("node_id")) for m in call.result["matches"])
            lines.append(f"{call.tool} returned {found or 'nothing'}")
    if refused := sum((c.result or {}).get("status") == "error" for c in calls):
        lines.append(f"{refused} tool call(s) refused (see above)")
    return "\n".join(lines)


def compare_table(left: Side, right: Side) -> Table:
    """Two reviewers of the same merge side by side: what each could see, what each concluded."""
    table = Table(
        title="the same merge, two reviewers", title_justify="left", show_lines=True, expand=True
    )
    table.add_column("", no_wrap=True)
    for side in (left, right):
        table.add_column(side.label, overflow="fold", ratio=1)
    table.add_row("memory", *(memory_label(s.wire, s.node, _kind(s)) for s in (left, right)))
    table.add_row("could see", _seen(left), _seen(right))
    table.add_row(
        "concluded",
        review_text(value_of(left.result, left.node)),
        review_text(value_of(right.result, right.node)),
    )
    return table


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _concluded(side: Side, case: ReviewCase | None) -> str:
    """``verdict (gaps)``; with a labelled ``case``, the branches its gaps named and whether
    that caught the planted flaw by the eval's rule (:func:`score_review`)."""
    value = value_of(side.result, side.node)
    verdict = value.get("verdict") or "no verdict"
    if case is None:
        gaps = list(dict.fromkeys(str(g) for g in value.get("gaps") or [] if str(g).strip()))
        return f"{verdict} ({'; '.join(display(g, 48) for g in gaps) if gaps else 'no gaps'})"
    score = score_review(case, value or None)
    if score.named:
        text = f"{verdict}, its gaps naming {_and(list(score.named))}"
    else:
        text = f"{verdict} with {'gaps naming no branch' if score.gaps else 'no gaps'}"
    if case.flaw is None:
        return text + (" (a false alarm)" if score.false_alarm else " (rightly: none planted)")
    outcome = "caught" if score.detected else "missed"
    clean = [a for a in score.named if a != case.flawed]
    also = f", and clean {_and(clean)} flagged" if clean else ""
    return f"{text} (by the eval's rule, the planted {case.flaw} flaw {outcome}{also})"


def compare_sentence(left: Side, right: Side, case: ReviewCase | None = None) -> str:
    """One sentence: what ``right`` recalled (into its prompt, or through its memory queries)
    that ``left``'s direct input did not contain, and what each concluded — with a labelled
    ``case``, whether each caught its planted flaw."""
    saw = set(_direct(left)) | set(recalled_by(left.result, left.node))
    recalled = list(dict.fromkeys([*recalled_by(right.result, right.node), *_returned(right)]))
    only = [n for n in recalled if n not in saw]
    if case is not None and case.flawed in only:
        only = [f"{n} (the flawed branch)" if n == case.flawed else n for n in only]
    direct = _and(_direct(left)) if _direct(left) else "the run input"
    seen = (
        f"{right.label} recalled {_and(only)}, which {left.label}'s direct input ({direct}) "
        "did not contain,"
        if only
        else f"{right.label} recalled nothing {left.label}'s direct input ({direct}) lacked,"
    )
    if case is not None:
        planted = f"{case.flaw} flaw in {case.flawed}" if case.flaw else "a control: no flaw"
        seen = f"In held-out case {case.id} ({planted}), {seen}"
    verdicts = {value_of(s.result, s.node).get("verdict") for s in (left, right)}
    return (
        f"{seen} and concluded {_concluded(right, case)}; {left.label} concluded "
        f"{_concluded(left, case)}"
        + (" — the same verdict." if len(verdicts) == 1 else " — the verdicts differ.")
    )


def _table_line(table: dict[str, Any]) -> str:
    arms = table["arms"]
    rates = "; ".join(
        f"{arm} detection {arms[arm]['detection']:.2f}, false alarm {arms[arm]['false_alarm']:.2f}"
        for arm in _ARMS
    )
    return (
        f"One case is not a measurement: over all {table['cases']} held-out cases "
        f"({table['model']}), {rates} (docs/quality/reviews.md)."
    )


def show_heldout(saver: CortexSaver, db: str) -> None:
    """Replay the chosen held-out case's classic and topological reviewers into ``saver``,
    one new thread each, and print them side by side with what memory changed."""
    folder = bundled_path("cassettes", "reviews")
    recorded = load_recorded(folder, SPLIT)
    chosen = showcase(recorded["table"], build_review_cases(SPLIT))
    case, width = chosen.case, stdout.width
    default = f"{SPLIT}-{case.id}"
    base = new_thread(saver, default, [f"-{arm}" for arm in _ARMS])
    flaw = (
        f"{case.flaw}, in {case.flawed} ({FLAW_MEANINGS[case.flaw]})"
        if case.flaw
        else "none (a control)"
    )
    files = [cassette_path(folder, SPLIT, case.id, arm).name for arm in _ARMS]
    lines = [
        *wrap([f"held-out review case {case.id},", "chosen by rule:", chosen.rule], width),
        *wrap(["claim:", case.claim], width),
        *wrap(["planted flaw:", flaw], width),
        *wrap(["the merge both reviewers read:", repr(case.summary)], width),
        *wrap(
            [
                "LLM exchanges replayed",
                f"from cassettes/reviews/{SPLIT}/{files[0]}",
                f"and {files[1]}",
                f"(network blocked, model {recorded['model']['model']}),",
                f"into {db}",
            ],
            width,
        ),
    ]
    if base != default:
        lines += wrap(
            [
                f"threads {default}-classic and -topological in {db} already hold a run:",
                f"replaying into new threads, {base}-classic and -topological",
            ],
            width,
        )
    print_lines(stdout, lines)
    stdout.print()
    sides, threads = [], []
    for arm in _ARMS:
        threads.append(thread := f"{base}-{arm}")
        stdout.print(f"{arm} reviewer, thread {thread}:", soft_wrap=False)
        result = replay_case(
            folder, SPLIT, case, arm, saver, thread=thread, on_progress=_Printer(replayed=True)
        )
        sides.append(Side(f"the {arm} reviewer", result, review_wire(arm, case), "reviewer"))
    classic, topological = sides
    stdout.print()
    print_blocks(stdout, tool_call_blocks(topological.result, topological.wire.presets))
    print_blocks(stdout, [compare_table(classic, topological)])
    changed = [compare_sentence(classic, topological, case), _table_line(recorded["table"])]
    if not chosen.differs:
        changed.insert(
            0,
            "No held-out case's classic and topological reviews scored differently "
            "(detected, false alarm, branches named): this one is the first, in id order.",
        )
    runs = [(s.result, s.wire, t) for s, t in zip(sides, threads, strict=True)]
    print_blocks(
        stdout, [closing_panel(runs, _FORCED, changed=changed, forced_by="this comparison")]
    )
    stdout.print("[bold]Next[/bold]")
    commands = next_commands(topological.result, db=db, thread=threads[1])
    commands.append(["cortex-agents", "inspect", db, "--thread", threads[0]])
    for command in commands:
        print_lines(stdout, command_lines(command, width))
