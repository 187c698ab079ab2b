"""The snapshot file (DESIGN §8): the JSON that ``export`` writes and ``import`` reads.

The package is named for what it holds, a *file format*, and not
``snapshot``: :class:`cortex_agents.memory.MemorySnapshot` (``memory/snapshot.py``)
is something else, the settled view a stage binds at entry. A snapshot file
describes a run's graph; :meth:`SnapshotDocument.to_memory_snapshot` turns one
into the other. Its modules are private; every public name is imported from
here, and only from here.

::

    {
      "schema_version": "1",
      "run_id": "example",
      "entry_time": "2026-01-01T00:10:00Z",
      "nodes": [{"id": "planner", "kind": "planner", "status": "completed",
                 "captured_at": "...", "completed_at": "...", "output": {...}, "tags": []}],
      "edges": [{"source": "planner", "target": "analyst-a"}],
      "rewrites": []
    }

Reading is strict and reports *every* problem with its location (a JSON path
like ``nodes[3].captured_at``, or a line and column for malformed JSON):
bounds (:class:`SnapshotLimits`), unknown schema version, wrong types, unknown
fields, duplicate keys, bad or naive timestamps, states a run cannot produce,
duplicate node ids, dangling or duplicate edges, cycles, rewrites by unknown
proposers. ``validate``, strict import and forensic import read through the
same code, so they accept exactly the same files. Forensic reading keeps the
valid rows and returns every other row, with why it was left out.

Writing is canonical: nodes in canonical topological order, edges by their
endpoints' positions, fixed key order, two-space indent, UTF-8, one trailing
newline. Parsing then dumping a canonical file reproduces it byte for byte.

Inside, imports point one way: ``_limits`` and ``_integrity`` (checks) <
``_document`` (the values) < ``_events`` (a document as events) < ``_reader``
< ``_file`` (validate, parse, load, dump, write).
"""

from cortex_agents.snapshotfile._document import (
    SCHEMA_VERSION,
    SQLITE_HEADER,
    LeftOut,
    Salvage,
    SnapshotDocument,
)
from cortex_agents.snapshotfile._events import document_events, event_count
from cortex_agents.snapshotfile._file import (
    checked_dump,
    dump_snapshot,
    load_snapshot,
    load_snapshot_forensic,
    parse_snapshot,
    salvage_snapshot,
    validate_snapshot,
    write_snapshot,
)
from cortex_agents.snapshotfile._limits import DEFAULT_LIMITS, SnapshotLimits, check_identifier

__all__ = [
    # the file's values
    "SCHEMA_VERSION",
    "SnapshotDocument",
    "Salvage",
    "LeftOut",
    # reading: every problem located (validate), all or nothing (parse, load),
    # or the valid rows and why the others were left out (salvage, forensic load)
    "validate_snapshot",
    "parse_snapshot",
    "load_snapshot",
    "salvage_snapshot",
    "load_snapshot_forensic",
    # writing, canonical; checked_dump and write_snapshot refuse what import would
    "dump_snapshot",
    "checked_dump",
    "write_snapshot",
    # bounds on a file and its identifiers
    "SnapshotLimits",
    "DEFAULT_LIMITS",
    "check_identifier",
    # a document as the events import writes
    "document_events",
    "event_count",
    # the first bytes of a SQLite file, told apart from a snapshot file
    "SQLITE_HEADER",
]
