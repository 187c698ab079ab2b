"""Recording the review eval once against a live model, replaying it offline, the table.

Layout, under one folder (default ``cassettes/reviews/``)::

    <split>.json                 the model settings and the table recorded with them
    <split>/<case>.<arm>.yaml    one cassette per case and arm

:func:`record_split` runs every case through every arm live, writing each
cassette only when its run completed (a cassette already there is kept, so
an interrupted recording resumes), then replays them all, checks that the
replay reproduces what the live runs answered, and stores the table the
replay computed. :func:`replay_split` recomputes the table from the
cassettes with the network blocked; a request that no longer matches its
cassette raises :class:`StaleCassette`, naming the command that re-records it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from langgraph.checkpoint.base import BaseCheckpointSaver

from cortex_agents._demo import RecordedModel
from cortex_agents.errors import InvalidArgument, RunFailed, StaleCassette
from cortex_agents.evaluation._review_arms import ARMS, Arm, ReviewRun, run_case, run_review
from cortex_agents.evaluation._review_score import CaseScore, score_arm, score_review
from cortex_agents.evaluation._reviews import FLAW_KINDS, ReviewCase
from cortex_agents.persistence._saver import CortexSaver
from cortex_agents.runtime import Progress, RunResult
from cortex_agents.testing import record, replay

__all__ = [
    "RECORD_COMMAND",
    "Showcase",
    "StaleCassette",
    "cassette_path",
    "load_recorded",
    "record_split",
    "replay_case",
    "replay_split",
    "showcase",
    "table_of",
]

RECORD_COMMAND: Final = (
    "python tools/eval_reviews.py --record --split {split} --rerecord "
    "--base-url http://127.0.0.1:8765/v1 --model {model}"
)
_STALE: Final = "CannotOverwriteExistingCassette"
"""What vcrpy's error for an unrecorded request is called (its type and its message)."""
_HTTP_ERROR: Final = re.compile(r"Error code: \d{3}\b")
"""How a reviewer failure reads when the server answered its request with an HTTP error
(``OpenAIAPIError: Error code: 500`` from langchain-openai, ``InternalServerError: Error
code: 500`` from its floor release, which does not wrap the client's error)."""


def cassette_path(folder: Path, split: str, case: str, arm: str) -> Path:
    """Where the cassette of one case and arm lives."""
    return folder / split / f"{case}.{arm}.yaml"


def _meta_path(folder: Path, split: str) -> Path:
    return folder / f"{split}.json"


def load_recorded(folder: Path, split: str) -> dict[str, Any]:
    """The recorded settings and table of a split.

    Raises:
        StaleCassette: the split was never recorded.
    """
    path = _meta_path(folder, split)
    if not path.is_file():
        raise StaleCassette(
            f"no recording of the {split!r} split in {folder}; record it with: "
            + RECORD_COMMAND.format(split=split, model="qwen2.5-coder-1.5b")
        )
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _server_refused(run: ReviewRun) -> bool:
    """Whether the run failed only because the server answered the reviewer's request with an
    HTTP error — llama-server's 500 for a tool call whose arguments the model left unclosed:
    the model's bad output, recorded like any answer and scored as a miss (unparsed)."""
    return bool(run.failures) and all(
        stage == "reviewer" and _HTTP_ERROR.search(error) for stage, error in run.failures
    )


def _outcome(run: ReviewRun) -> dict[str, Any]:
    """What a run answered, as compared between a live run and its replay."""
    return {"review": run.review, "tool_calls": list(run.tool_calls), "usage": list(run.usage)}


def table_of(
    cases: Sequence[ReviewCase], runs: dict[tuple[str, str], ReviewRun], *, split: str, model: str
) -> dict[str, Any]:
    """The eval's table: per arm, the rates with 95% intervals, tool calls and tokens; and per
    case and arm, what the review flagged (``named``) and how it scored."""
    arms: dict[str, Any] = {}
    per_case: dict[str, dict[str, Any]] = {c.id: {} for c in cases}
    for arm in ARMS:
        scores: list[CaseScore] = []
        for case in cases:
            run = runs[(case.id, arm)]
            score = score_review(case, run.review)
            scores.append(score)
            per_case[case.id][arm] = {
                "detected": score.detected,
                "false_alarm": score.false_alarm,
                "parsed": score.parsed,
                "named": list(score.named),
                "gaps": list(score.gaps),
            }
        arm_runs = [runs[(c.id, arm)] for c in cases]
        arms[arm] = score_arm(
            scores,
            tool_calls=(len(r.tool_calls) for r in arm_runs),
            usage=(u for r in arm_runs for u in r.usage),
        ).as_json()
        arms[arm]["server_errors"] = sum(_server_refused(r) for r in arm_runs)
        arms[arm]["by_kind"] = {  # [detected, flawed] per flaw kind
            kind: [
                sum(s.detected for c, s in zip(cases, scores, strict=True) if c.flaw == kind),
                sum(c.flaw == kind for c in cases),
            ]
            for kind in FLAW_KINDS
        }
    return {"cases": len(cases), "split": split, "model": model, "arms": arms, "per_case": per_case}


@contextmanager
def _replaying(folder: Path, split: str, case: str, arm: str, model: str) -> Iterator[None]:
    """Replay one case and arm's cassette (network blocked) around the block; a request the
    cassette does not hold raises :class:`StaleCassette` naming the command that re-records."""
    path = cassette_path(folder, split, case, arm)
    again = RECORD_COMMAND.format(split=split, model=model)
    if not path.is_file():
        raise StaleCassette(f"no cassette {path}; record it with: {again}")
    try:
        with replay(path):
            yield
    except Exception as error:  # vcrpy's refusal, raised as is or as the run's failure
        if _STALE in type(error).__name__ or _STALE in str(error):
            raise StaleCassette(
                f"{path} no longer matches the eval's requests (a prompt, the case set or "
                f"the memory ranking changed); re-record with: {again}"
            ) from None
        raise


def _check_failures(
    failures: Sequence[tuple[str, str]], refused: bool, path: Path, again: str
) -> None:
    """Raise :class:`StaleCassette` for a replay that failed other than by the server's refusal
    (the stage caught the cassette's mismatch, or something else broke)."""
    if failures and not refused:
        stale = any(_STALE in error for _, error in failures)
        reason = "no longer matches the eval's requests" if stale else f"failed {list(failures)}"
        raise StaleCassette(f"{path}: the replay {reason}; re-record with: {again}")


@dataclass(frozen=True, slots=True)
class Showcase:
    """The held-out case ``cortex-agents demo --compare`` shows, and why that one.

    Attributes:
        case: The case.
        rule: Which rule chose it, in words.
        differs: Whether its classic and topological reviews scored differently.
    """

    case: ReviewCase
    rule: str
    differs: bool


def _scored(per_case: dict[str, Any], case: str, arm: str) -> tuple[Any, ...]:
    row = per_case[case][arm]
    return (row["detected"], row["false_alarm"], row["parsed"], tuple(row["named"]))


def showcase(table: dict[str, Any], cases: Sequence[ReviewCase]) -> Showcase:
    """The first of ``cases`` (in the order given: id order for :func:`build_review_cases`)
    where the topological reviewer detected the planted flaw and the classic one did not;
    failing that, the first whose two reviews scored differently (detected, false alarm,
    parsed, the branches named); failing that, the first case, marked as not differing.

    Raises:
        InvalidArgument: ``cases`` is empty or ``table`` does not score one of them.
    """
    if not cases:
        raise InvalidArgument("cases", "must not be empty", [])
    per_case = table.get("per_case") or {}
    missing = [c.id for c in cases if c.id not in per_case]
    if missing:
        raise InvalidArgument("table", "must score every case (per_case)", missing)
    split = "held-out" if cases[0].split == "heldout" else cases[0].split
    for case in cases:
        rows = per_case[case.id]
        if rows["topological"]["detected"] and not rows["classic"]["detected"]:
            rule = (
                f"the first {split} case, in id order, where the topological reviewer "
                "caught the planted flaw and the classic one did not"
            )
            return Showcase(case, rule, True)
    for case in cases:
        if _scored(per_case, case.id, "classic") != _scored(per_case, case.id, "topological"):
            rule = (
                f"no {split} case has the topological reviewer catching a flaw the classic "
                "one missed: the first, in id order, where their reviews scored differently"
            )
            return Showcase(case, rule, True)
    rule = (
        f"no {split} case's classic and topological reviews scored differently "
        "(detected, false alarm, branches named): the first case, in id order"
    )
    return Showcase(cases[0], rule, False)


def _replay_one(
    folder: Path, split: str, case: ReviewCase, arm: Arm, settings: RecordedModel
) -> ReviewRun:
    with _replaying(folder, split, case.id, arm, settings.model):
        run = run_review(case, arm, settings)
    again = RECORD_COMMAND.format(split=split, model=settings.model)
    _check_failures(
        run.failures, _server_refused(run), cassette_path(folder, split, case.id, arm), again
    )
    return run


def replay_case(
    folder: Path,
    split: str,
    case: ReviewCase,
    arm: Arm,
    saver: BaseCheckpointSaver[Any] | CortexSaver,
    *,
    thread: str,
    on_progress: Callable[[Progress], None] | None = None,
) -> RunResult:
    """Replay one case and arm from its cassette (network blocked) into ``saver`` on ``thread``:
    the whole run, as ``cortex-agents demo --compare`` shows and stores it. A reviewer the
    server refused (:func:`_server_refused`) is a run with that failure, not an error.

    Raises:
        StaleCassette: the split was never recorded, or the cassette is missing or no
            longer matches.
    """
    settings = RecordedModel(**load_recorded(folder, split)["model"])
    with _replaying(folder, split, case.id, arm, settings.model):
        result = run_case(case, arm, settings, saver=saver, thread=thread, on_progress=on_progress)
    refused = _server_refused(ReviewRun(case.id, arm, None, failures=result.failures))
    _check_failures(
        result.failures,
        refused,
        cassette_path(folder, split, case.id, arm),
        RECORD_COMMAND.format(split=split, model=settings.model),
    )
    return result


def replay_split(
    folder: Path,
    split: str,
    cases: Sequence[ReviewCase],
    *,
    arms: Iterable[Arm] = ARMS,
    on_run: Callable[[ReviewRun], None] | None = None,
) -> tuple[dict[str, Any], dict[tuple[str, str], ReviewRun]]:
    """Replay a split's cassettes (network blocked): its table and every run.

    Raises:
        StaleCassette: a cassette is missing or no longer matches.
    """
    meta = load_recorded(folder, split)
    settings = RecordedModel(**meta["model"])
    runs: dict[tuple[str, str], ReviewRun] = {}
    for case in cases:
        for arm in arms:
            runs[(case.id, arm)] = run = _replay_one(folder, split, case, arm, settings)
            if on_run is not None:
                on_run(run)
    return table_of(cases, runs, split=split, model=settings.model), runs


def record_split(
    folder: Path,
    split: str,
    cases: Sequence[ReviewCase],
    settings: RecordedModel,
    *,
    api_key: str = "sk-local",
    rerecord: bool = False,
    check: Callable[[Path], None] | None = None,
    on_run: Callable[[ReviewRun], None] | None = None,
) -> dict[str, Any]:
    """Record every case and arm of a split live, then store the table its replay computes.

    Arms run one after the other, every case of an arm together: consecutive
    requests then share their longest prefix (system prompt, tool schema),
    which a llama.cpp server does not evaluate again. ``check`` is called on each new
    cassette (e.g. that its tool results reached the model's prompt) and may
    raise to reject it.

    Raises:
        InvalidArgument: the split's existing cassettes were recorded with other
            settings (pass ``rerecord``).
        StaleCassette: a replay does not reproduce its live run.
    """
    meta_path = _meta_path(folder, split)
    if meta_path.is_file() and not rerecord:
        recorded = json.loads(meta_path.read_text(encoding="utf-8"))["model"]
        # as settings, so a field added since (at its default) still matches
        if RecordedModel(**recorded) != settings:
            raise InvalidArgument(
                "settings",
                f"differ from the recording's {recorded}; pass --rerecord",
                asdict(settings),
            )
    folder.mkdir(parents=True, exist_ok=True)
    # Written before the first cassette: an interrupted recording leaves the
    # settings its cassettes were made with, which a resumed one is checked against.
    meta_path.write_text(
        json.dumps({"model": asdict(settings), "table": None}, indent=2) + "\n", encoding="utf-8"
    )
    live: dict[tuple[str, str], dict[str, Any]] = {}
    for arm in ARMS:
        for case in cases:
            path = cassette_path(folder, split, case.id, arm)
            if path.is_file() and not rerecord:
                continue
            with record(path):
                run = run_review(case, arm, settings, api_key)
                if run.failures and not _server_refused(run):  # keeps the cassette unwritten
                    raise RunFailed(f"{case.id}/{arm}", run.failures)
            if check is not None:
                try:
                    check(path)
                except BaseException:
                    path.unlink(missing_ok=True)
                    raise
            live[(case.id, arm)] = _outcome(run)
            if on_run is not None:
                on_run(run)
    table, runs = replay_split(folder, split, cases)
    for key, outcome in live.items():
        if _outcome(runs[key]) != outcome:
            raise StaleCassette(f"{key}: the replay answered {_outcome(runs[key])}, live {outcome}")
    meta = {"model": asdict(settings), "table": table}
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return table
