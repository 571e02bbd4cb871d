"""The conformance kit for provider authors: an in-process ACP client and contract base classes.

    from acp_agent.testing import run_in_process, ClassificationContract
"""

from acp_agent.testing.client import CAPABLE_META, InProcessClient, MemoryByteStream, run_in_process
from acp_agent.testing.conformance import (
    ClassificationContract,
    HistoryContract,
    ProviderWireContract,
    RedactionContract,
    TitleContract,
)

__all__ = [
    "CAPABLE_META",
    "ClassificationContract",
    "HistoryContract",
    "InProcessClient",
    "MemoryByteStream",
    "ProviderWireContract",
    "RedactionContract",
    "TitleContract",
    "run_in_process",
]
