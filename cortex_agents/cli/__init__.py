"""The ``cortex-agents`` command line (typer + rich).

Every command reports bad input as one line on stderr and a non-zero exit
code: 1 for invalid data (a snapshot, an origin, a flag's value), 2 for
usage errors (an unknown flag or choice). No traceback for either.

Commands are imported when they run (see :mod:`cortex_agents.cli._app`), so
``cortex-agents --help`` starts without LangGraph or the memory engine.
"""

from cortex_agents.cli._app import app, main

__all__ = ["app", "main"]
