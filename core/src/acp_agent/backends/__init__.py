"""Backends: the provider contract, plugins, the runtime's home, processes and their deadlines."""
