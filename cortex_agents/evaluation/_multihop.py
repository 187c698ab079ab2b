"""Real-text retrieval cases: multi-hop questions (HotpotQA, MuSiQue) run as claim reviews.

A record of either dataset becomes workflow runs in the harness's case format
(:mod:`cortex_agents.evaluation._cases`): one analyst per paragraph (finding =
the paragraph text, evidence = its title), shaped and timed as the real stages
record them (:mod:`cortex_agents.stages`), the question as the reviewer's
query, the dataset's gold paragraphs as the relevant nodes. Pure and
deterministic: the same records always give the same cases, byte for byte.

**Record formats** (detected per record, a file may mix them; a JSON list or
JSON lines):

* HotpotQA (distractor format): ``_id``, ``question``, ``type``
  (``bridge``/``comparison``), ``context`` (``[title, [sentence, ...]]``
  paragraphs), ``supporting_facts`` (``[title, sentence index]``).
* MuSiQue: ``id``, ``question``, ``paragraphs`` (``{idx, title,
  paragraph_text, is_supporting}``), ``question_decomposition`` (the hops in
  order, each with ``paragraph_support_idx``; a hop's question names the hops
  it uses as ``#1``, ``#2``...), ``answerable``.

**Hops and their dependencies.** MuSiQue: hop ``j`` depends on every hop its
question names (``#k``), else on none; a gold paragraph no hop names is an
independent hop after them. HotpotQA comparison: two independent hops.
HotpotQA bridge: two hops, the second depending on the first; the first is
the paragraph whose text names the other's title (the bridge entity), else
the one whose title the question names, else the first supporting fact's.

**Families** (each case's ``family`` label):

``mh-flat``
    One round: planner -> one analyst per paragraph (all siblings) -> merge
    -> the reviewer (the origin, running).
``mh-chain``
    As flat, but an analyst of a dependent hop runs after the analysts of the
    hops it depends on (its input is their finding), and the merge runs after
    the analysts nothing else follows: earlier hops are further from the
    reviewer, and older.
``mh-repair``
    A first round without the late hops (the hops that depend on another; for
    a record without dependencies, its last gold paragraph) ends with a review
    noting a gap and a rewriter; a repair rewrite appended after it
    (``append_after``, as the shipped ``claim_review_repair`` scenario does)
    follow-up analysts for the late hops, chained as they depend on each other,
    then a re-review (the origin).
``mh-history``
    One to three earlier rounds of the same question (days earlier, each
    after the previous round's rewriter; every gold paragraph and a sample of
    the others, the same texts) precede a flat current round. Relevant: the
    current round's gold analysts only.

**Robustness.** A supporting-fact title that is no paragraph's title is left
out (with a note); duplicate titles resolve to the first paragraph with that
title long enough for the cited sentence (HotpotQA) or by ``idx``
(MuSiQue); a record with no usable gold paragraph, an unanswerable MuSiQue
record, or one in neither format is skipped with its location and reason.

**Splits.** :func:`assign_splits` halves each source's records by a hash of
their ids: ``dev`` (tune on it) and ``heldout`` (report it). A file of other
records is held out as a whole with ``split="all"``.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal

from cortex_agents._timestamps import format_timestamp
from cortex_agents.errors import InvalidArgument

__all__ = [
    "MULTIHOP_FAMILIES",
    "MultihopCase",
    "Paragraph",
    "Record",
    "Skipped",
    "build_cases",
    "load_records",
    "assign_splits",
    "parse_records",
]

MULTIHOP_FAMILIES: Final = ("mh-flat", "mh-chain", "mh-repair", "mh-history")
Source = Literal["hotpotqa", "musique"]
_EPOCH: Final = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
_HOP_REF: Final = re.compile(r"#(\d+)")


@dataclass(frozen=True, slots=True)
class Paragraph:
    """One paragraph of a record: its title and its text."""

    title: str
    text: str


@dataclass(frozen=True, slots=True)
class Record:
    """A multi-hop question with its paragraphs and gold hops.

    Attributes:
        source: ``hotpotqa`` or ``musique``.
        record_id: The dataset's id.
        question: The question (the reviewer's query).
        kind: ``bridge``/``comparison`` (HotpotQA) or the id's prefix (``2hop``...).
        paragraphs: Every paragraph, in the record's order.
        hops: Gold paragraph positions, in hop order.
        depends: For each hop, the earlier hops (indices into ``hops``) it uses.
        notes: What the parser left out of the record, and why.
    """

    source: Source
    record_id: str
    question: str
    kind: str
    paragraphs: tuple[Paragraph, ...]
    hops: tuple[int, ...]
    depends: tuple[tuple[int, ...], ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Skipped:
    """A record the parser could not use: where it was and why."""

    where: str
    reason: str


@dataclass(frozen=True, slots=True)
class MultihopCase:
    """One labelled case built from a record (the case-file object plus labels)."""

    snapshot: dict[str, Any]
    origin: str
    query: str
    relevant: tuple[str, ...]
    family: str
    split: str
    name: str
    source: str
    kind: str

    def to_json(self) -> dict[str, Any]:
        """The case-file object (``snapshot``, ``origin``, ``query``, ``relevant``) plus labels."""
        return {
            "snapshot": self.snapshot,
            "origin": self.origin,
            "query": self.query,
            "relevant": list(self.relevant),
            "family": self.family,
            "split": self.split,
            "name": self.name,
            "source": self.source,
            "type": self.kind,
        }


# -- parsing -------------------------------------------------------------------------------
def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _hotpot(item: dict[str, Any], where: str) -> Record | Skipped:
    context = item.get("context")
    facts = item.get("supporting_facts")
    if not isinstance(context, list) or not isinstance(facts, list):
        return Skipped(where, "HotpotQA record needs `context` and `supporting_facts` lists")
    paragraphs: list[Paragraph] = []
    sentences: list[int] = []
    for entry in context:
        if not isinstance(entry, list | tuple) or len(entry) != 2:
            continue
        title, body = entry
        parts = [s for s in body if isinstance(s, str)] if isinstance(body, list) else []
        # Joined with "": HotpotQA's sentences carry their own leading spaces.
        paragraphs.append(Paragraph(_text(title), "".join(parts).strip()))
        sentences.append(len(parts))
    notes: list[str] = []
    gold: list[int] = []
    for fact in facts:
        if not isinstance(fact, list | tuple) or len(fact) != 2:
            notes.append(f"supporting fact {fact!r} is not [title, sentence]")
            continue
        title, sentence = fact
        same = [i for i, p in enumerate(paragraphs) if p.title == title]
        if not same:
            notes.append(f"supporting fact title {title!r} names no paragraph")
            continue
        fits = [i for i in same if isinstance(sentence, int) and 0 <= sentence < sentences[i]]
        chosen = (fits or same)[0]
        if chosen not in gold:
            gold.append(chosen)
    if not gold:
        return Skipped(where, "no supporting fact names a paragraph of its context")
    kind = _text(item.get("type")) or "bridge"
    depends: list[tuple[int, ...]]
    if kind == "bridge" and len(gold) == 2:
        gold = _bridge_order(_text(item.get("question")), paragraphs, gold)
        depends = [(), (0,)]
    else:
        depends = [() for _ in gold]
    return Record(
        "hotpotqa",
        str(item.get("_id", where)),
        _text(item.get("question")).strip(),
        kind,
        tuple(paragraphs),
        tuple(gold),
        tuple(depends),
        tuple(notes),
    )


def _bare(title: str) -> str:
    """A title without its parenthetical qualifier, casefolded: ``"Brand (play)"`` -> ``"brand"``."""
    return re.sub(r"\s*\([^)]*\)\s*$", "", title).strip().casefold()


def _bridge_order(question: str, paragraphs: list[Paragraph], gold: list[int]) -> list[int]:
    """Hop order of a bridge question's two gold paragraphs (see the module docstring)."""
    a, b = gold
    ta, tb = _bare(paragraphs[a].title), _bare(paragraphs[b].title)
    a_names_b = bool(tb) and tb in paragraphs[a].text.casefold()
    b_names_a = bool(ta) and ta in paragraphs[b].text.casefold()
    if a_names_b != b_names_a:
        return [a, b] if a_names_b else [b, a]
    q = question.casefold()
    in_a, in_b = bool(ta) and ta in q, bool(tb) and tb in q
    if in_a != in_b:
        return [a, b] if in_a else [b, a]
    return [a, b]


def _musique(item: dict[str, Any], where: str) -> Record | Skipped:
    if item.get("answerable") is False:
        return Skipped(
            where, "unanswerable MuSiQue record: its supporting paragraphs do not answer"
        )
    raw = item.get("paragraphs")
    steps = item.get("question_decomposition")
    if not isinstance(raw, list) or not isinstance(steps, list):
        return Skipped(
            where, "MuSiQue record needs `paragraphs` and `question_decomposition` lists"
        )
    paragraphs: list[Paragraph] = []
    by_idx: dict[Any, int] = {}
    supporting: list[int] = []
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        position = len(paragraphs)
        paragraphs.append(
            Paragraph(_text(entry.get("title")), _text(entry.get("paragraph_text")).strip())
        )
        by_idx.setdefault(entry.get("idx", position), position)
        if entry.get("is_supporting") is True:
            supporting.append(position)
    notes: list[str] = []
    hops: list[int] = []
    step_hop: dict[int, int] = {}  # decomposition step (1-based) -> hop index
    depends: list[tuple[int, ...]] = []
    for number, step in enumerate(steps, 1):
        if not isinstance(step, dict):
            notes.append(f"decomposition step {number} is not an object")
            continue
        found = by_idx.get(step.get("paragraph_support_idx"))
        if found is None:
            notes.append(f"decomposition step {number} names no paragraph")
            continue
        uses = sorted(
            {step_hop[k] for k in map(int, _HOP_REF.findall(_text(step.get("question"))))
             if k in step_hop and step_hop[k] != step_hop.get(number)}
        )  # fmt: skip
        if found in hops:  # two steps on one paragraph: one hop
            step_hop[number] = hops.index(found)
            continue
        step_hop[number] = len(hops)
        hops.append(found)
        depends.append(tuple(uses))
    for position in supporting:
        if position not in hops:
            notes.append(f"supporting paragraph {position} is in no decomposition step")
            hops.append(position)
            depends.append(())
    if not hops:
        return Skipped(where, "no gold paragraph (no supporting flag, no decomposition step)")
    record_id = str(item.get("id", where))
    return Record(
        "musique",
        record_id,
        _text(item.get("question")).strip(),
        # MuSiQue ids are `<kind>__<ids>` (`2hop__482757_12019`).
        record_id.split("__")[0] or "musique",
        tuple(paragraphs),
        tuple(hops),
        tuple(depends),
        tuple(notes),
    )


def parse_records(
    items: Iterable[Any], origin: str = "records"
) -> tuple[list[Record], list[Skipped]]:
    """Records of either format among ``items``, and the ones skipped (with where and why).

    Args:
        items: Parsed JSON objects, one per record.
        origin: How locations are named (``FILE[3]``).
    """
    records: list[Record] = []
    skipped: list[Skipped] = []
    for i, item in enumerate(items):
        where = f"{origin}[{i}]"
        if not isinstance(item, dict):
            skipped.append(Skipped(where, f"is a {type(item).__name__}, not a record object"))
            continue
        if "context" in item and "supporting_facts" in item:
            parsed = _hotpot(item, where)
        elif "paragraphs" in item and "question_decomposition" in item:
            parsed = _musique(item, where)
        else:
            parsed = Skipped(
                where,
                "is neither HotpotQA (context, supporting_facts) nor MuSiQue "
                "(paragraphs, question_decomposition)",
            )
        if isinstance(parsed, Record) and not parsed.question:
            parsed = Skipped(where, "has no question")
        (records if isinstance(parsed, Record) else skipped).append(parsed)  # type: ignore[arg-type]
    return records, skipped


def load_records(path: str | Path) -> tuple[list[Record], list[Skipped]]:
    """Read a record file (a JSON list, or JSON lines) and parse it.

    Raises:
        InvalidArgument: the file cannot be read or is neither JSON nor JSON lines.
    """
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidArgument(
            "--multihop", f"cannot be read: {exc.strerror or exc}", name
        ) from None
    try:
        data = json.loads(text)
        items = data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        items = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidArgument(
                    "--multihop",
                    f"is neither JSON nor JSON lines: line {number} column {exc.colno}",
                    name,
                ) from None
    return parse_records(items, Path(path).name)


def _digest(record: Record) -> bytes:
    return hashlib.sha256(f"{record.source}:{record.record_id}".encode()).digest()


def assign_splits(records: Sequence[Record]) -> dict[tuple[str, str], Literal["dev", "heldout"]]:
    """``(source, record id) -> split``: per source, records sorted by SHA-256 of
    ``source:id``, the first half (rounded up) ``dev``, the rest ``heldout``.

    Halves per source keep both datasets in both splits in equal shares; the
    hash, not the file's order, decides which half a record falls in.
    """
    out: dict[tuple[str, str], Literal["dev", "heldout"]] = {}
    for source in sorted({r.source for r in records}):
        ranked = sorted(
            {(r.source, r.record_id): r for r in records if r.source == source}.values(),
            key=lambda r: (_digest(r), r.record_id),
        )
        half = (len(ranked) + 1) // 2
        for i, record in enumerate(ranked):
            out[(record.source, record.record_id)] = "dev" if i < half else "heldout"
    return out


# -- building ------------------------------------------------------------------------------
class _Run:
    """Nodes and edges of one snapshot, with a clock that only moves forward."""

    def __init__(self, start: datetime) -> None:
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[dict[str, str]] = []
        self.latest = start

    def add(
        self,
        node_id: str,
        kind: str,
        output: dict[str, Any] | None,
        after: Sequence[str],
        start: datetime,
        minutes: float,
    ) -> datetime:
        """Add a node captured at ``start``; settled ``minutes`` later unless ``output`` is None."""
        end = start + timedelta(minutes=minutes)
        self.nodes.append(
            {
                "id": node_id,
                "kind": kind,
                "status": "completed" if output is not None else "running",
                "captured_at": format_timestamp(start),
                "completed_at": format_timestamp(end) if output is not None else None,
                "output": output,
                "tags": [],
            }
        )
        self.edges.extend({"source": s, "target": node_id} for s in after)
        self.latest = max(self.latest, end)
        return end

    def document(self, run_id: str) -> dict[str, Any]:
        """The snapshot file's JSON, referenced at the latest time the run reached."""
        return {
            "schema_version": "1",
            "run_id": run_id,
            "entry_time": format_timestamp(self.latest),
            "nodes": self.nodes,
            "edges": self.edges,
            "rewrites": [],
        }


def _envelope(contract: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"contract": contract, "value": {**value, "parsed": True}}


def _analysis(ref: str, paragraph: Paragraph) -> dict[str, Any]:
    evidence = [paragraph.title] if paragraph.title else []
    return _envelope(
        "analysis", {"claim_ref": ref, "finding": paragraph.text, "evidence": evidence}
    )


def _first_sentence(text: str) -> str:
    head = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    return head if head.endswith((".", "!", "?")) else head + "."


def _round(
    run: _Run,
    rng: random.Random,
    record: Record,
    tag: str,
    members: Sequence[int],
    refs: dict[int, str],
    after: Sequence[str],
    start: datetime,
    depends: dict[int, tuple[int, ...]],
) -> tuple[dict[int, str], str, datetime]:
    """A planner, analysts of ``members`` (paragraph positions) and a merge.

    ``depends`` maps a paragraph to the paragraphs whose analysts it runs after
    (else after the planner). Returns the analyst id per paragraph, the merge
    id and when the merge settled.
    """
    question = record.question
    branches = [
        {"claim_ref": refs[p], "question": f"What does the record {record.paragraphs[p].title!r} "
         "say that bears on the question?"}
        for p in members
    ]  # fmt: skip
    planner = f"{tag}planner"
    now = run.add(
        planner, "planner", _envelope("plan", {"claim": question, "branches": branches}),
        after, start, rng.uniform(1, 3),
    )  # fmt: skip
    ids = {p: f"{tag}analyst-{refs[p]}" for p in members}
    done: dict[int, datetime] = {}
    pending = list(members)
    while pending:  # dependencies first; each analyst starts when its inputs settled
        for p in pending:
            needs = depends.get(p, ())
            if all(n in done for n in needs):
                begin = max([now, *(done[n] for n in needs)])
                done[p] = run.add(
                    ids[p], "analyst", _analysis(refs[p], record.paragraphs[p]),
                    [ids[n] for n in needs] or [planner], begin, rng.uniform(2, 25),
                )  # fmt: skip
                pending.remove(p)
                # Rescan from the start after each placement: analysts are added in
                # members' order as far as the dependencies allow.
                break
        else:  # pragma: no cover - dependencies are acyclic by construction
            raise AssertionError("cyclic hop dependencies")
    followed = {n for p in members for n in depends.get(p, ())}
    ends = [p for p in members if p not in followed]
    claims = [{"claim_ref": refs[p], "finding": record.paragraphs[p].text} for p in sorted(
        members, key=lambda p: refs[p])]  # fmt: skip
    summary = " ".join(_first_sentence(c["finding"]) for c in claims if c["finding"])
    merge = f"{tag}merge"
    merged_at = run.add(
        merge, "merge", _envelope("merged", {"summary": summary, "claims": claims}),
        [ids[p] for p in ends], max(done[p] for p in ends), rng.uniform(1, 3),
    )  # fmt: skip
    return ids, merge, merged_at


def _review(
    run: _Run,
    rng: random.Random,
    record: Record,
    tag: str,
    merge: str,
    cited: Sequence[str],
    start: datetime,
    *,
    gap: bool,
) -> tuple[str, datetime]:
    """A settled review of a round (a gap, or sound) and the rewriter's report after it."""
    question = record.question
    if gap:
        note = f"No finding yet settles the question: {question}"
        review = {"verdict": "gap", "gaps": [note], "notes": f"Gap: {note}", "cited": list(cited)}
        report = {"report": f"Open question after this round: {question}", "addressed": [note]}
    else:
        review = {"verdict": "sound", "gaps": [], "notes": "The findings answer the question.",
                  "cited": list(cited)}  # fmt: skip
        report = {"report": f"The findings answer the question: {question}", "addressed": []}
    reviewer, rewriter = f"{tag}reviewer", f"{tag}rewriter"
    now = run.add(
        reviewer, "reviewer", _envelope("review", review), [merge], start, rng.uniform(1, 4)
    )
    now = run.add(
        rewriter, "rewriter", _envelope("report", report), [reviewer], now, rng.uniform(1, 4)
    )
    return rewriter, now


def _hop_depends(record: Record) -> dict[int, tuple[int, ...]]:
    """Paragraph -> the paragraphs of the hops it depends on."""
    return {
        record.hops[j]: tuple(record.hops[k] for k in record.depends[j])
        for j in range(len(record.hops))
        if record.depends[j]
    }


def _case(record: Record, family: str, split: str) -> MultihopCase:
    # SHA-256, not hash(): str hashes are salted per process, and the cases
    # must be byte-identical between runs.
    seed = int.from_bytes(
        hashlib.sha256(f"{record.source}:{record.record_id}:{family}".encode()).digest()[:8], "big"
    )
    rng = random.Random(seed)
    order = list(range(len(record.paragraphs)))
    rng.shuffle(order)  # claim refs in a seeded order: node ids say nothing about gold
    # Zero-padded refs, so sorting refs as strings (the merge's claims) is numeric order.
    width = len(str(len(order)))
    refs = {p: f"p{i + 1:0{width}d}" for i, p in enumerate(order)}
    everything = list(range(len(record.paragraphs)))
    start = _EPOCH + timedelta(days=rng.randrange(0, 300), minutes=rng.randrange(0, 600))
    run = _Run(start)
    hops = list(record.hops)
    if family == "mh-flat":
        ids, merge, now = _round(run, rng, record, "", everything, refs, [], start, {})
        origin = "reviewer"
        run.add(origin, "reviewer", None, [merge], now, 0.5)
        relevant = [ids[p] for p in hops]
    elif family == "mh-chain":
        ids, merge, now = _round(
            run, rng, record, "", everything, refs, [], start, _hop_depends(record)
        )
        origin = "reviewer"
        run.add(origin, "reviewer", None, [merge], now, 0.5)
        relevant = [ids[p] for p in hops]
    elif family == "mh-repair":
        origin, relevant = _repair_rounds(run, rng, record, everything, refs, start)
    elif family == "mh-history":
        origin, relevant = _history_rounds(run, rng, record, everything, refs, start)
    else:
        raise InvalidArgument("family", f"must be one of {', '.join(MULTIHOP_FAMILIES)}", family)
    return MultihopCase(
        snapshot=run.document(f"{record.source}-{record.record_id}-{family}"),
        origin=origin,
        query=record.question,
        relevant=tuple(dict.fromkeys(relevant)),
        family=family,
        split=split,
        name=f"{family}/{record.source}/{record.record_id}",
        source=record.source,
        kind=record.kind,
    )


def _repair_rounds(
    run: _Run,
    rng: random.Random,
    record: Record,
    everything: list[int],
    refs: dict[int, str],
    start: datetime,
) -> tuple[str, list[str]]:
    """``mh-repair``: a round without the late hops, a review, the late hops as follow-ups."""
    hops = list(record.hops)
    late = [record.hops[j] for j in range(len(hops)) if record.depends[j]]
    if not late:  # no hop depends on another: the last comes late, so there is a repair to see
        late = [hops[-1]] if len(hops) > 1 else []
    first = [p for p in everything if p not in late]
    ids, merge, now = _round(run, rng, record, "", first, refs, [], start, {})
    rewriter, now = _review(run, rng, record, "", merge, sorted(ids.values()), now, gap=True)
    depends = _hop_depends(record)
    done: dict[int, tuple[str, datetime]] = {}
    for p in late:  # hop order: a late hop's late dependencies come before it
        needs = [n for n in depends.get(p, ()) if n in late]
        begin = max([now, *(done[n][1] for n in needs)])
        node = f"rewriter:followup-{refs[p]}"
        end = run.add(
            node, "analyst", _analysis(refs[p], record.paragraphs[p]),
            [done[n][0] for n in needs] or [rewriter], begin, rng.uniform(3, 20),
        )  # fmt: skip
        done[p] = (node, end)
    followed = {n for p in late for n in depends.get(p, ()) if n in late}
    ends = [done[p][0] for p in late if p not in followed] or [rewriter]
    origin = "rewriter:re-review"
    now = max([now, *(end for _, end in done.values())])
    run.add(origin, "reviewer", None, ends, now, 0.5)
    return origin, [ids[p] if p in ids else done[p][0] for p in hops]


def _history_rounds(
    run: _Run,
    rng: random.Random,
    record: Record,
    everything: list[int],
    refs: dict[int, str],
    start: datetime,
) -> tuple[str, list[str]]:
    """``mh-history``: one to three earlier reviewed rounds, then the round the reviewer reads."""
    hops = list(record.hops)
    after: list[str] = []
    now = start
    gold = set(hops)
    for r in range(rng.choice((1, 2, 3))):
        others = [p for p in everything if p not in gold]
        kept = sorted(gold | set(rng.sample(others, rng.randint(len(others) // 2, len(others)))))
        ids, merge, now = _round(run, rng, record, f"r{r + 1}.", kept, refs, after, now, {})
        rewriter, now = _review(
            run, rng, record, f"r{r + 1}.", merge, sorted(ids.values()), now,
            gap=rng.random() < 0.6,
        )  # fmt: skip
        after = [rewriter]
        now += timedelta(days=rng.uniform(1, 20))
    ids, merge, now = _round(run, rng, record, "", everything, refs, after, now, {})
    origin = "reviewer"
    run.add(origin, "reviewer", None, [merge], now, 0.5)
    return origin, [ids[p] for p in hops]


def build_cases(
    records: Iterable[Record],
    *,
    split: Literal["dev", "heldout", "all"] = "all",
    families: Sequence[str] = MULTIHOP_FAMILIES,
) -> list[MultihopCase]:
    """The cases of ``records`` (those of ``split``), one per record and family, in record order.

    ``relevant`` lists the gold analysts in hop order.

    Raises:
        InvalidArgument: an unknown family.
    """
    for family in families:
        if family not in MULTIHOP_FAMILIES:
            raise InvalidArgument(
                "families", f"must be among {', '.join(MULTIHOP_FAMILIES)}", family
            )
    chosen = list(records)
    splits = assign_splits(chosen)
    cases = []
    for record in chosen:
        record_split = splits[(record.source, record.record_id)]
        if split != "all" and record_split != split:
            continue
        for family in families:
            cases.append(_case(record, family, record_split))
    return cases
