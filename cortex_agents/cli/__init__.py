"""The ``cortex-agents`` command line (typer + rich).

Every command reports bad input as one line on stderr and a non-zero exit
code: 1 for invalid data (a snapshot, an origin, a flag's value), 2 for
usage errors (an unknown flag or choice). No traceback for either.
"""

from cortex_agents.cli import db_cmds, demo_cmd, graph_cmd, memory_cmd, run_cmd, validate_cmd  # noqa: F401  (registers)
from cortex_agents.cli.app import app, main

__all__ = ["app", "main"]
