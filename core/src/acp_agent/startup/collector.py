"""The garbage collector while the agent imports.

Start-up builds tens of thousands of objects that live as long as the process: modules, classes,
functions, the plugins' specs. The collector, run every 700 allocations, would examine them again
and again (mostly before `initialize` could be answered) and find next to nothing to free. The
command line stops it until the imports are done and the agent starts to serve; then what
start-up built is frozen out of every later pass and collection resumes as usual. No request is
served while it is stopped, so what it would have freed stays bounded.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the command line calls this before any import
if TYPE_CHECKING:
    from collections.abc import Callable


def defer_collection() -> Callable[[], None]:
    """Stop collecting; returns what starts the collector again (idempotent) with every object
    alive by then frozen out of its passes. A collector someone turned off stays off."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    settled = False

    def settle() -> None:
        nonlocal settled
        if settled:
            return
        settled = True
        gc.freeze()
        if enabled:
            gc.enable()

    return settle
