"""``python -m cortex_agents`` runs the command line."""

from cortex_agents.cli import main

main()
