"""Sessions and turns: what a session is, how a prompt runs, where a backend's events go."""
