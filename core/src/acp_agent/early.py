"""`initialize`, answered before the event loop starts (issue 11, target 6).

An editor writes `initialize` as soon as it has spawned the agent, so by the time the agent has
imported what answering needs, the request is usually waiting on stdin. Answered there, at once,
the answer no longer waits for the event loop's own start-up (importing asyncio and starting the
loop: 40-70 ms here), which then runs while the client reads it. Only a complete, well-formed
`initialize` that needs nothing of the loop (no auth status to look up) is answered here, with the
answer `Agent.initialize` gives, encoded and scrubbed as the connection does. Anything else, and
everything read after the request, is received by the connection (`acp_agent.rpc`) before what
it reads itself, as if it had read it.
"""

from __future__ import annotations

import logging
import os
import select
import stat

from acp_agent.acp import Methods
from acp_agent.rpc import RpcError, response_frame, waiting_request
from acp_agent.scrub import FrameScrubber

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: this runs before the agent's loop, on its start path
if TYPE_CHECKING:
    from acp_agent.agent import Agent

READ_BYTES = 65536

log = logging.getLogger(__name__)


def answer_waiting_initialize(agent: Agent, stdin: int, stdout: int, max_line_bytes: int) -> bytes:
    """Answer an `initialize` already waiting on `stdin` (a pipe or socket) on `stdout` (a pipe).
    Returns what was read and not answered, for the connection to receive first."""
    try:
        if not (_is_pipe(stdout) and (_is_pipe(stdin) or _is_socket(stdin))):
            return b""
        if not select.select([stdin], [], [], 0)[0]:
            return b""  # not sent yet: the loop starts and answers it when it comes
        data = os.read(stdin, READ_BYTES)
    except (OSError, ValueError):
        return b""
    line, newline, rest = data.partition(b"\n")
    if not newline or len(line) > max_line_bytes:
        return data
    request = waiting_request(line)
    if request is None or request[1] != Methods.INITIALIZE:
        return data
    message_id, _, params = request
    try:
        reply = agent.initialize_now(params)
    except RpcError:
        return data  # the connection answers it, with the same error
    if reply is None:
        return data
    frame = FrameScrubber(agent.settings.redact)(response_frame(message_id, reply.result))
    if len(frame) > select.PIPE_BUF:
        return data  # not one atomic write: the connection writes it (`initialize` may come again)
    try:
        if not select.select([], [stdout], [], 0)[1]:
            return data  # a full pipe: no wait here, the connection writes when there is room
        os.write(stdout, frame)  # a pipe with room takes up to PIPE_BUF bytes whole, at once
    except BlockingIOError:
        return data
    except OSError:  # the client is gone: the connection finds that out as well
        reply.on_written(False)
        return rest
    reply.on_written(True)
    log.debug("answered initialize before the event loop started")
    return rest


def _is_pipe(fd: int) -> bool:
    return stat.S_ISFIFO(os.fstat(fd).st_mode)


def _is_socket(fd: int) -> bool:
    return stat.S_ISSOCK(os.fstat(fd).st_mode)
