"""`python -m avalon_agents.cli ...`: the `avalon` command."""

from avalon_agents.cli import main

main()
