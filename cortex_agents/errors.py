"""The one exception tree of cortex-agents.

Every error the library raises on purpose derives from :class:`CortexError`.
Leaves also subclass the nearest builtin, so ``except ValueError`` keeps
working for callers who do not know this tree::

    CortexError
    ├── InvalidArgument(ValueError)      a value broke a documented rule (.field, .rule, .value)
    ├── UnknownPreset(LookupError)       a preset name the registry does not hold (.name, .known)
    ├── UnknownScorer(LookupError)       a scorer name the registry does not hold (.name, .known)
    ├── ScorerUnavailable(RuntimeError)  a registered scorer cannot load (.name, .reason, .install)
    ├── UnknownProjection(LookupError)   a projection name the registry does not hold (.name, .known)
    ├── UnknownNode(LookupError)         a node id the snapshot does not hold (.node_id)
    │   └── UnknownThread                a thread with no checkpoint in the database (.thread_id, .checkpoint_id)
    ├── CycleError(ValueError)           a relation that must be acyclic is not (.cycle)
    ├── InvalidSnapshot(ValueError)      a snapshot file or value broke the format (.problems)
    ├── InvalidEvent(ValueError)         an event that cannot follow the events before it (.index)
    ├── ThreadBusy(RuntimeError)         another writer is advancing the thread (.thread_id)
    ├── WriterFenced(RuntimeError)       a writer lost the thread's lock; it wrote nothing after (.thread_id, .reason)
    ├── InvalidWire(ValueError)          a wire (workflow) breaks a rule (.problems)
    ├── RunFailed(RuntimeError)          a stage failed and the wire says to stop (.failures)
    ├── InvalidOutput(TypeError)         a stage's output cannot be stored as JSON (.reason)
    ├── ModelUnavailable(RuntimeError)   an LLM stage ran without a chat model configured
    ├── ProposalInvalid(ValueError)      a rewrite proposal's shape breaks a rule (.check, .message)
    ├── RewriteUnavailable(RuntimeError) a stage without rewrite capability tried to propose (.stage_id)
    ├── StorageError(RuntimeError)       storage refused an operation (.code: integrity, schema_too_new, ...)
    ├── UnsupportedCheckpointer(TypeError) a saver that cannot store the substrate (.checkpointer, .channel)
    ├── MissingExtra(ImportError)        an optional feature whose extra is not installed (.extra, .install)
    ├── NetworkBlocked(ConnectionError)  a connection attempted while replaying recordings
    ├── StaleCassette(RuntimeError)      an eval cassette is missing or no longer matches its requests
    │   └── MissingCassette(FileNotFoundError) no cassette file where one is replayed (.path)
    ├── UnknownCase(KeyError)            a review-eval case id or branch the set does not hold (.field, .rule)
    ├── ScratchMemoryError               a scratch-memory operation was refused (.code, .path)
    │   ├── InvalidMemoryPath(ValueError)      the path breaks a path rule (.rule)
    │   ├── MemoryNotFound(LookupError)        no file or directory at the path
    │   ├── MemoryIsADirectory(ValueError)     a file operation on a directory
    │   └── MemoryNotADirectory(ValueError)    a path goes through an existing file
    │
    │   internal signals: caught where they are raised, never seen by callers
    ├── Rejection                        a rewrite proposal failed an admission check (.code, .check)
    ├── ToolUnavailable                  a graph-bound tool found no substrate to bind in the state
    └── CassetteDiscarded                thrown into a cassette whose test failed: nothing is saved

Each error carries a stable ``code`` string, so tool results and CLI output
can name the failure without parsing the message.

Every exception class cortex-agents defines is defined here, internal signals
included (``tests/unit/test_error_tree.py`` walks the package to check), so an
``except CortexError`` around library code sees only this tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "CassetteDiscarded",
    "CortexError",
    "CycleError",
    "InvalidArgument",
    "InvalidEvent",
    "InvalidMemoryPath",
    "InvalidOutput",
    "InvalidSnapshot",
    "InvalidWire",
    "MemoryIsADirectory",
    "MemoryNotADirectory",
    "MemoryNotFound",
    "MissingCassette",
    "MissingExtra",
    "ModelUnavailable",
    "NetworkBlocked",
    "Problem",
    "ProposalInvalid",
    "Rejection",
    "RejectionCode",
    "RewriteUnavailable",
    "RunFailed",
    "ScorerUnavailable",
    "ScratchMemoryError",
    "StaleCassette",
    "StorageError",
    "ThreadBusy",
    "ToolUnavailable",
    "UnknownCase",
    "UnknownNode",
    "UnknownPreset",
    "UnknownProjection",
    "UnknownScorer",
    "UnknownThread",
    "UnsupportedCheckpointer",
    "WriterFenced",
]


RejectionCode = Literal[
    "invalid_rewrite",
    "vocabulary_violation",
    "cycle_introduced",
    "rewrite_budget_exceeded",
    "policy_rejected",
]
"""Why admission rejected a rewrite proposal: the ``code`` of a :class:`Rejection` and of a
rejected :class:`~cortex_agents.substrate.RewriteFact` (re-exported there)."""


class CortexError(Exception):
    """Root of every error cortex-agents raises on purpose."""

    code: str = "cortex_error"


class InvalidArgument(CortexError, ValueError):
    """A value broke a documented rule.

    Attributes:
        field: The name of the offending field or flag, e.g. ``"limit"``.
        rule: What is allowed, e.g. ``"must be an integer >= 1"``.
        value: The rejected value.
    """

    code = "invalid_argument"

    def __init__(self, field: str, rule: str, value: Any = None) -> None:
        self.field = field
        self.rule = rule
        self.value = value
        super().__init__(f"`{field}` {rule} (got {value!r})")


class UnknownPreset(CortexError, LookupError):
    """A memory preset name that the registry does not hold.

    Attributes:
        name: The requested name.
        known: The names the registry does hold, sorted.
    """

    code = "unknown_preset"

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        self.known = tuple(known)
        super().__init__(
            f"unknown preset {name!r}; known presets: {', '.join(map(repr, self.known))}"
        )

    def __str__(self) -> str:  # LookupError would otherwise repr() the message
        return str(self.args[0])


class UnknownScorer(CortexError, LookupError):
    """A semantic scorer name that the scorer registry does not hold.

    Attributes:
        name: The requested name.
        known: The names the registry does hold, sorted.
    """

    code = "unknown_scorer"

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        self.known = tuple(known)
        super().__init__(
            f"unknown scorer {name!r}; known scorers: {', '.join(map(repr, self.known))}"
        )

    def __str__(self) -> str:
        return str(self.args[0])


class UnknownProjection(CortexError, LookupError):
    """A typed projection name that the projection registry does not hold.

    Attributes:
        name: The requested name.
        known: The names the registry does hold, sorted.
    """

    code = "unknown_projection"

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        self.known = tuple(known)
        super().__init__(
            f"unknown projection {name!r}; known projections: "
            f"{', '.join(map(repr, self.known)) or 'none'}"
        )

    def __str__(self) -> str:
        return str(self.args[0])


class ScorerUnavailable(CortexError, RuntimeError):
    """A registered semantic scorer cannot be loaded (a package is missing, a file is corrupt).

    Attributes:
        name: The scorer's registered name.
        reason: What went wrong while loading it.
        install: How to make it loadable, e.g. ``pip install 'cortex-agents[minilm]'``.
    """

    code = "scorer_unavailable"

    def __init__(self, name: str, reason: str, install: str = "") -> None:
        self.name = name
        self.reason = reason
        self.install = install
        hint = f"; install it with: {install}" if install else ""
        super().__init__(f"scorer {name!r} cannot be loaded: {reason}{hint}")


class UnknownNode(CortexError, LookupError):
    """A node id that the snapshot or substrate does not hold.

    Attributes:
        node_id: The requested id.
    """

    code = "unknown_node"

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        super().__init__(f"unknown node {node_id!r}")

    def __str__(self) -> str:
        return str(self.args[0])


class UnknownThread(UnknownNode):
    """A thread (run) that has no checkpoint in the database.

    Attributes:
        thread_id: The requested thread (also ``node_id``, as for every unknown id).
        checkpoint_id: The requested checkpoint, or ``None`` for the thread's latest.
    """

    code = "unknown_thread"

    def __init__(self, thread_id: str, checkpoint_id: str | None = None) -> None:
        # UnknownNode sets `node_id`; its message is then replaced so it says thread.
        UnknownNode.__init__(self, thread_id)
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id
        if checkpoint_id is None:
            self.args = (f"no thread {thread_id!r} in this database",)
        else:
            self.args = (
                f"no checkpoint {checkpoint_id!r} of thread {thread_id!r} in this database",
            )


class CycleError(CortexError, ValueError):
    """A relation that must be a DAG contains a cycle.

    Attributes:
        cycle: Node ids along one cycle, first id repeated at the end.
    """

    code = "cycle"

    def __init__(self, cycle: Sequence[str]) -> None:
        self.cycle = tuple(cycle)
        super().__init__("graph has a cycle: " + " -> ".join(self.cycle))


@dataclass(frozen=True, slots=True)
class Problem:
    """One defect found while validating a snapshot.

    Attributes:
        location: Where it is, e.g. ``"nodes[3].captured_at"`` or ``"line 4 column 9"``.
        message: What is wrong and what is allowed.
    """

    location: str
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


class InvalidSnapshot(CortexError, ValueError):
    """A snapshot (file or value) breaks the format; every defect is listed.

    Attributes:
        problems: Each defect with its location, in document order.
    """

    code = "invalid_snapshot"

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        count = len(self.problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"invalid snapshot ({count} problem{'s' * (count != 1)}):\n{lines}")


class InvalidEvent(CortexError, ValueError):
    """An event that cannot follow the events folded before it.

    Attributes:
        index: Position of the event in the sequence being folded.
        reason: Which rule it broke.
    """

    code = "invalid_event"

    def __init__(self, index: int, reason: str) -> None:
        self.index = index
        self.reason = reason
        super().__init__(f"event #{index}: {reason}")


class ThreadBusy(CortexError, RuntimeError):
    """Another writer is advancing the thread; one writer per thread at a time.

    Attributes:
        thread_id: The contended thread.
        waited: Seconds spent waiting before giving up.
    """

    code = "thread_busy"

    def __init__(self, thread_id: str, waited: float) -> None:
        self.thread_id = thread_id
        self.waited = waited
        super().__init__(
            f"thread {thread_id!r} is being advanced by another writer "
            f"(gave up after {waited:.1f} s); retry later or wait longer"
        )


class WriterFenced(CortexError, RuntimeError):
    """A writer lost its thread: its lock went away, or another writer took the thread since.

    Raised by the commit that found another writer's epoch (it wrote nothing)
    and by the runtime before a stage body when the lock is gone: the writer
    stops. What it committed before another writer took over stays; stages it
    had in flight run again when the thread is resumed.

    Attributes:
        thread_id: The thread.
        reason: What happened, e.g. ``"its lock file ... was deleted"``.
    """

    code = "writer_fenced"

    def __init__(self, thread_id: str, reason: str) -> None:
        self.thread_id = thread_id
        self.reason = reason
        super().__init__(
            f"writer of thread {thread_id!r} stopped: {reason}; nothing was written after "
            "another writer could take the thread (resume it to finish)"
        )


class InvalidWire(CortexError, ValueError):
    """A wire (workflow declaration) breaks a rule; nothing ran.

    Attributes:
        problems: Each defect with its location (``stages[2].kind``, ``edges[0]``, ...).
    """

    code = "invalid_wire"

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        count = len(self.problems)
        super().__init__(f"invalid wire ({count} problem{'s' * (count != 1)}):\n{lines}")


class RunFailed(CortexError, RuntimeError):
    """Stages failed and the wire stops on failure; the substrate records each failure.

    Attributes:
        thread_id: The run.
        failures: ``(stage id, error message)`` of each failed stage.
    """

    code = "run_failed"

    def __init__(self, thread_id: str, failures: Sequence[tuple[str, str]]) -> None:
        self.thread_id = thread_id
        self.failures = tuple(failures)
        detail = "; ".join(f"{stage!r}: {error}" for stage, error in self.failures)
        super().__init__(f"run {thread_id!r} stopped: stage failed — {detail}")


class InvalidOutput(CortexError, TypeError):
    """A stage returned an output that cannot be stored as JSON in every backend.

    A ``TypeError`` because the output's type is at fault (an object JSON has
    no form for, an integer beyond 64 bits, a lone surrogate, nesting too deep).

    Attributes:
        reason: What in the output cannot be stored.
    """

    code = "invalid_output"

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"stage output is not JSON-serialisable: {reason}")


class ModelUnavailable(CortexError, RuntimeError):
    """An LLM stage ran without a chat model configured."""

    code = "model_unavailable"


class ProposalInvalid(CortexError, ValueError):
    """A rewrite proposal is malformed; admission rejects it as ``invalid_rewrite``.

    Attributes:
        check: The failing check, as a field path (``spec.nodes[1].id``).
        message: The rule, in words.
    """

    code = "invalid_rewrite"

    def __init__(self, check: str, message: str) -> None:
        self.check = check
        self.message = message
        super().__init__(f"{check}: {message}")


class RewriteUnavailable(CortexError, RuntimeError):
    """A stage whose wire declaration gives it no rewrite capability tried to propose one.

    Attributes:
        stage_id: The stage.
    """

    code = "rewrite_unavailable"

    def __init__(self, stage_id: str) -> None:
        self.stage_id = stage_id
        super().__init__(
            f"stage {stage_id!r} cannot propose rewrites: declare it with "
            "rewrite=RewritePolicy(...) in its wire (only stages run by a Runtime can)"
        )


class StorageError(CortexError, RuntimeError):
    """Storage refused an operation; the transaction was rolled back.

    Attributes:
        code: ``integrity`` (a row broke a database constraint),
            ``schema_too_new`` (the database was migrated by a newer version),
            ``unsupported_url`` (not a SQLite path or a ``postgresql://`` URL),
            ``unreachable`` (cannot connect or open the database),
            ``not_found`` (no database at that path),
            ``not_a_database`` (the file is not SQLite, or not a cortex-agents database),
            ``busy`` (another process held setup or the write lock too long),
            ``corrupt`` (a stored item is not what cortex-agents wrote, or the
            file fails SQLite's integrity check),
            ``foreign_database`` (another application's database; adopt it explicitly),
            ``open_transaction`` (a shared connection has another user's open transaction),
            ``disk_full``, ``io_error``, ``read_only``, ``invalid_data`` (a value
            the database cannot store), ``database_error`` (any other driver error).
            A driver error is chained as ``__cause__``.
    """

    def __init__(self, code: str, message: str) -> None:
        # Per instance, shadowing the class's `code`: one class for many storage failures.
        self.code = code
        super().__init__(message)


class UnsupportedCheckpointer(CortexError, TypeError):
    """A graph that records a substrate is checkpointed by a saver that cannot store it.

    LangGraph's own savers re-serialise a changing channel in full at every
    checkpoint, and their serializer cannot store a
    :class:`~cortex_agents.substrate.SubstrateLog`; wrap the saver with
    ``CortexSaver.wrap(saver)``, which stores each checkpoint's new events as rows.

    Attributes:
        checkpointer: The saver's class name.
        channel: The state key of the substrate.
    """

    code = "unsupported_checkpointer"

    def __init__(self, checkpointer: str, channel: str, detail: str = "") -> None:
        self.checkpointer = checkpointer
        self.channel = channel
        super().__init__(
            f"the graph's checkpointer {checkpointer} cannot store the substrate channel "
            f"{channel!r}{detail}: wrap it with CortexSaver.wrap(saver) "
            "(from cortex_agents.persistence), e.g. "
            "graph.compile(checkpointer=CortexSaver.wrap(InMemorySaver())): it stores each "
            "checkpoint's new events as rows instead of the whole log at every step. Under "
            "LangGraph Server, set langgraph.json's checkpointer.path to a context manager "
            "yielding one (cortex_agents.server:checkpointer)"
        )


class MissingExtra(CortexError, ImportError):
    """An optional feature was used without the extra that installs its packages.

    Attributes:
        extra: The extra's name, e.g. ``"postgres"``.
        feature: What needed it, e.g. ``"a postgresql:// database"``.
        install: The command that installs it.
    """

    code = "missing_extra"

    def __init__(self, extra: str, feature: str, missing: str = "") -> None:
        self.extra = extra
        self.feature = feature
        self.install = f"pip install 'cortex-agents[{extra}]'"
        because = f" ({missing} is not installed)" if missing else ""
        super().__init__(
            f"{feature} needs the [{extra}] extra{because}: install it with: {self.install}"
        )


class NetworkBlocked(CortexError, ConnectionError):
    """Code tried to open a network connection while the network is blocked.

    Raised inside :func:`cortex_agents.testing.network_blocked` (recorded
    exchanges are being replayed; nothing may reach a host).
    """

    code = "network_blocked"


class ScratchMemoryError(CortexError):
    """A scratch-memory operation was refused; nothing was changed.

    Attributes:
        code: Stable machine-readable reason (``invalid_path``, ``not_found``, ...).
        path: The path as the caller gave it.
    """

    code = "scratch_error"

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0])


class InvalidMemoryPath(ScratchMemoryError, ValueError):
    """The path breaks a path rule.

    Attributes:
        rule: The rule it breaks, e.g. ``"segments must match `[A-Za-z0-9_ -]+`"``.
    """

    code = "invalid_path"

    def __init__(self, path: str, rule: str) -> None:
        self.rule = rule
        super().__init__(path, f"invalid path {path!r}: {rule}")


class MemoryNotFound(ScratchMemoryError, LookupError):
    """No file or directory at the path."""

    code = "not_found"

    def __init__(self, path: str) -> None:
        super().__init__(path, f"no such file or directory: {path!r}")


class MemoryIsADirectory(ScratchMemoryError, ValueError):
    """A file operation addressed a directory."""

    code = "is_a_directory"

    def __init__(self, path: str) -> None:
        super().__init__(path, f"{path!r} is a directory")


class MemoryNotADirectory(ScratchMemoryError, ValueError):
    """A path goes through a component that is a file."""

    code = "not_a_directory"

    def __init__(self, path: str, file: str) -> None:
        self.file = file
        super().__init__(path, f"{file!r} is a file, so {path!r} cannot be under it")


class StaleCassette(CortexError, RuntimeError):
    """A review-eval cassette is missing or no longer matches the requests the eval makes.

    The message names the command that records it again
    (:mod:`cortex_agents.evaluation._review_runs`).
    """

    code = "stale_cassette"


class MissingCassette(StaleCassette, FileNotFoundError):
    """A cassette was to be replayed from a file that does not exist.

    Also a ``FileNotFoundError``, as it was before it joined this tree.

    Attributes:
        path: The cassette file that is missing.
    """

    code = "missing_cassette"

    def __init__(self, path: str, hint: str = "record it first") -> None:
        self.path = path
        super().__init__(f"no cassette at {path}; {hint}")

    def __str__(self) -> str:  # OSError would otherwise format (errno, strerror)
        return str(self.args[0])


class UnknownCase(CortexError, KeyError):
    """A review-eval case id, or a branch of a case, that the eval set does not hold.

    Also a ``KeyError``, as it was before it joined this tree.

    Attributes:
        field: What was looked up, e.g. ``"case_id"``.
        value: The requested key.
        rule: Which keys exist, in words.
    """

    code = "unknown_case"

    def __init__(self, field: str, value: str, rule: str) -> None:
        self.field = field
        self.value = value
        self.rule = rule
        super().__init__(f"`{field}` {value!r} is not in the review set: {rule}")

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class Rejection(CortexError):
    """A rewrite proposal failed an admission check (internal: admission turns it into a
    rejected :class:`~cortex_agents.substrate.RewriteFact`, never lets it out).

    Attributes:
        code: The rejection code the fact records.
        check: The failing check, as a path (``topology.anchor``, ``budget.nodes``).
        message: The rule it broke, in words.
    """

    code: RejectionCode

    def __init__(self, code: RejectionCode, check: str, message: str) -> None:
        self.code = code
        self.check = check
        self.message = message
        super().__init__(f"{check}: {message}")


class ToolUnavailable(CortexError):
    """A graph-bound tool ran in a graph whose state has no substrate to bind (internal:
    the tool returns it to the model as an ``unavailable`` error result)."""

    code = "unavailable"


class CassetteDiscarded(CortexError):
    """Thrown into a cassette's context when its test failed, so nothing is saved (internal
    to the ``vcr`` marker)."""

    code = "cassette_discarded"
