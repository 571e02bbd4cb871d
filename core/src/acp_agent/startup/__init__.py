"""Start-up: what exists only so that the agent answers sooner (imported by the command line)."""
