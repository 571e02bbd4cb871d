"""`initialize`, answered before the event loop starts.

An editor writes `initialize` as soon as it has spawned the agent, so by the time the agent has
imported what answering needs, the request is usually waiting on stdin. Answered there, at once,
the answer no longer waits for the event loop's own start-up (importing asyncio and starting the
loop), which then runs while the client reads it. Only a complete, well-formed
`initialize` that needs nothing of the loop (no auth status to look up) is answered here, with the
answer `Agent.initialize` gives, encoded and scrubbed as the connection does. Anything else, and
everything read after the request, is received by the connection (`acp_agent.wire.rpc`) before what
it reads itself, as if it had read it.
"""

from __future__ import annotations

import logging
import os
import select
import time

from acp_agent.failures.scrub import FrameScrubber
from acp_agent.wire.acp import MethodNames
from acp_agent.wire.rpc import RpcError, response_frame, waiting_request
from acp_agent.wire.stdio import pollable

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: this runs before the agent's loop, on its start path
if TYPE_CHECKING:
    from acp_agent.agent import Agent

READ_BYTES = 65536
MAX_FRAME_BYTES = 2048
"""The largest answer written here (it is ~700 bytes). Once select finds it writable, a pipe takes
up to PIPE_BUF (4096) bytes in one write and a Unix socket at least 3/4 of its smallest buffer
(4608 bytes): the answer goes out whole, or not at all."""
WRITE_DEADLINE_S = 10.0
"""How long the rest of a partly written answer may wait for room (a socket's full buffer)."""

log = logging.getLogger(__name__)


def answer_waiting_initialize(agent: Agent, stdin: int, stdout: int, max_line_bytes: int) -> bytes:
    """Answer an `initialize` already waiting on `stdin` on `stdout`, each read and written
    through the event loop later (`acp_agent.wire.stdio.pollable`: a pipe, or a socket as Node's
    `child_process` gives; not a terminal on stdin). Returns what was read and not answered, for
    the connection to receive first."""
    try:
        if os.isatty(stdin) or not (pollable(stdin) and pollable(stdout)):
            return b""  # a terminal's end of input (Ctrl-D) is read once: it stays the connection's
        if not select.select([stdin], [], [], 0)[0]:
            return b""  # not sent yet: the loop starts and answers it when it comes
        data = os.read(stdin, READ_BYTES)
    except (OSError, ValueError):
        return b""
    line, newline, rest = data.partition(b"\n")
    if not newline or len(line) > max_line_bytes:
        return data
    request = waiting_request(line)
    if request is None or request[1] != MethodNames.INITIALIZE:
        return data
    message_id, _, params = request
    try:
        reply = agent.initialize_now(params)
    except RpcError:
        return data  # the connection answers it, with the same error
    if reply is None:
        return data
    frame = FrameScrubber(agent.settings.redact)(response_frame(message_id, reply.result))
    if len(frame) > MAX_FRAME_BYTES:
        return data  # maybe not one whole write: the connection writes it (`initialize` may come again)
    try:
        if not select.select([], [stdout], [], 0)[1]:
            return data  # full: no wait here, the connection writes when there is room
        written = os.write(stdout, frame)
    except BlockingIOError:
        return data
    except OSError:  # the client is gone: the connection finds that out as well
        reply.on_written(False)
        return rest
    if written < len(frame) and not _write_rest(stdout, memoryview(frame)[written:]):
        reply.on_written(False)
        return rest
    reply.on_written(True)
    log.debug("answered initialize before the event loop started")
    return rest


def _write_rest(stdout: int, rest: memoryview) -> bool:
    """The rest of a frame a write took only part of (not seen: see `MAX_FRAME_BYTES`), before
    anything else; False if the client stopped reading (then the connection finds it gone)."""
    deadline = time.monotonic() + WRITE_DEADLINE_S
    try:
        while rest:
            if not select.select([], [stdout], [], max(deadline - time.monotonic(), 0))[1]:
                log.error("the client stopped reading in the middle of the initialize answer")
                return False
            try:
                rest = rest[os.write(stdout, rest):]
            except BlockingIOError:
                continue
    except OSError:
        return False
    return True
