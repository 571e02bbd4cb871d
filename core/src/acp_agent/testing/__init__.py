"""The conformance kit for provider authors: an in-process ACP client and contract base classes.

    from acp_agent.testing import run_in_process, ClassificationContract

`played_spec(name, turns)` builds a provider that plays neutral steps (what a provider's fold made
of native events); `play(name, steps, capable=...)` runs one such turn through a real agent.
"""

from acp_agent.testing.client import CAPABLE_META, InProcessClient, MemoryByteStream, run_in_process
from acp_agent.testing.conformance import (
    ClassificationContract,
    HistoryContract,
    KitBackend,
    ProviderWireContract,
    RedactionContract,
    RuntimeContract,
    TitleContract,
    Turn,
    kit_environ,
    play,
    played_spec,
)

__all__ = [
    "CAPABLE_META",
    "ClassificationContract",
    "HistoryContract",
    "InProcessClient",
    "KitBackend",
    "MemoryByteStream",
    "ProviderWireContract",
    "RedactionContract",
    "RuntimeContract",
    "TitleContract",
    "Turn",
    "kit_environ",
    "play",
    "played_spec",
    "run_in_process",
]
