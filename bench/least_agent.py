"""The least a Python ACP agent on the design's stack can do: a bench subject, not an agent.

bench_vs_reference.py runs it beside acp-agent ("least codex agent", "least claude agent") to
show, in the same run, how much of issue 11's budgets (targets 1, 2, 3, 5 and 6) the stack itself
takes before an agent does any work of its own. It does only what serving one session over ACP
cannot do without, each step as early and as cheaply as the design allows:

- the backend is spawned on the first line and its handshake written at once (as
  `acp_agent.startup.prestart` does), so it boots while Python imports: `codex app-server` and its
  `initialize`, or the Claude CLI (the argv acp-agent runs) and its `initialize` control request;
- `initialize` is answered once what it needs at the least is imported (`anyio, attrs, cattrs,
  pluggy, json`; no types built, no plugins discovered), before asyncio is loaded (as
  `acp_agent.startup.early` does);
- then asyncio and anyio's loop. `session/new` waits for the handshake's answer (Codex: then
  `thread/start`); a prompt is the backend's turn, and every text delta becomes one
  `agent_message_chunk` (the frames of one read written with one write; the Claude CLI's output,
  a line per write, read 1 ms after the previous read as acp-agent reads it); EOF on stdin closes
  the backend's stdin and waits for it to exit.

No validation, no failure handling, no scrubbing, no cancellation, one session: what acp-agent
takes beyond this subject is its own work; what this subject takes is out of any agent's reach.

With `--thread-at-spawn`, the Codex subject also writes `initialized` and `thread/start` (with
its own working directory, which the benchmark makes session/new's) at spawn, so that `session/new`
only waits for the thread: a guess no agent can make in general (session/new brings the directory,
the MCP servers and the settings), measured to show that even it does not reach target 2 here.

    python least_agent.py codex [--thread-at-spawn] CODEX_BINARY
    python least_agent.py claude CLI_ARGV...
"""

import os
import sys

provider, argv = sys.argv[1], sys.argv[2:]
thread_at_spawn = argv[0] == "--thread-at-spawn"  # Codex: thread/start written with initialize
argv = argv[thread_at_spawn:]
to_backend_r, to_backend = os.pipe()
from_backend, from_backend_w = os.pipe()
backend = os.posix_spawn(argv[0], argv + (["app-server"] if provider == "codex" else []), os.environ,
                         setsid=True, file_actions=[(os.POSIX_SPAWN_DUP2, to_backend_r, 0),
                                                    (os.POSIX_SPAWN_DUP2, from_backend_w, 1),
                                                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])
os.close(to_backend_r)
os.close(from_backend_w)
if provider == "codex":
    os.write(to_backend, b'{"id":0,"method":"initialize","params":{"clientInfo":{"name":"least","version":"1"},'
                         b'"capabilities":{"experimentalApi":true}}}\n')
    if thread_at_spawn:  # a guess: session/new's cwd is this process's (it is in the benchmark)
        import json

        os.write(to_backend, b'{"method":"initialized"}\n' + json.dumps(
            {"id": 1, "method": "thread/start", "params": {"cwd": os.getcwd()}}).encode() + b"\n")
else:
    os.write(to_backend, b'{"type":"control_request","request_id":"req_0","request":{"subtype":"initialize",'
                         b'"hooks":null}}\n')

import json  # noqa: E402

import anyio  # noqa: E402  (with attrs, cattrs, pluggy: what answering initialize needs at the least)
import attrs  # noqa: E402, F401
import cattrs  # noqa: E402, F401
import pluggy  # noqa: E402, F401


def frame(message: dict) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")) + "\n").encode()


def send(message: dict) -> None:
    os.write(to_backend, (json.dumps(message) + "\n").encode())


pending = b""
while b"\n" not in pending:  # the client's initialize (editors write it as soon as they spawn)
    data = os.read(0, 65536)
    if not data:
        sys.exit(0)
    pending += data
line, _, pending = pending.partition(b"\n")
os.write(1, frame({"id": json.loads(line)["id"], "result": {"protocolVersion": 1}}))

import asyncio  # noqa: E402, F401


async def batches(fd: int, first: bytes = b"", gather_s: float = 0.0):
    """The complete lines of each read from a descriptor, read as the loop finds it readable
    (`gather_s`: a pause after each read, as acp-agent makes for the Claude CLI's output, which
    comes a line per write)."""
    os.set_blocking(fd, False)
    buffer = first
    while True:
        *complete, buffer = buffer.split(b"\n")
        if complete:
            yield complete
            if gather_s:
                await anyio.sleep(gather_s)
        await anyio.wait_readable(fd)
        data = os.read(fd, 65536)
        if not data:
            return
        buffer += data


def delta_of(message: dict) -> str | None:
    """A streamed text delta of the backend's answer, else None."""
    if provider == "codex":
        return message["params"]["delta"] if message.get("method") == "item/agentMessage/delta" else None
    delta = (message.get("event") or {}).get("delta") or {}
    return delta["text"] if message.get("type") == "stream_event" and delta.get("type") == "text_delta" else None


def turn_ended(message: dict) -> bool:
    return message.get("method") == "turn/completed" if provider == "codex" else message.get("type") == "result"


async def main() -> None:
    greeted = anyio.Event()
    started = anyio.Event()
    state: dict = {"session": next((arg.partition("=")[2] for arg in argv if arg.startswith("--session-id=")), "")}

    async def relay() -> None:
        async for lines in batches(from_backend, gather_s=0.001 if provider == "claude" else 0.0):
            out = []
            for line in lines:
                message = json.loads(line)
                if message.get("id") == 0 or message.get("type") == "control_response":
                    greeted.set()
                elif message.get("id") == 1 and "method" not in message:  # Codex: thread/start
                    state["session"] = message["result"]["thread"]["id"]
                    started.set()
                elif "prompt" in state and (delta := delta_of(message)) is not None:
                    out.append(frame({"method": "session/update", "params": {"sessionId": state["session"], "update": {
                        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": delta}}}}))
                elif "prompt" in state and turn_ended(message):
                    out.append(frame({"id": state.pop("prompt"), "result": {"stopReason": "end_turn"}}))
            if out:
                os.write(1, b"".join(out))

    async with anyio.create_task_group() as group:
        group.start_soon(relay)
        async for lines in batches(0, pending):
            for line in lines:
                message = json.loads(line)
                if message.get("method") == "session/new":
                    await greeted.wait()
                    if provider == "codex" and not thread_at_spawn:
                        send({"method": "initialized"})
                        send({"id": 1, "method": "thread/start", "params": {"cwd": message["params"]["cwd"]}})
                    if provider == "codex":
                        await started.wait()
                    os.write(1, frame({"id": message["id"], "result": {"sessionId": state["session"]}}))
                elif message.get("method") == "session/prompt":
                    state["prompt"] = message["id"]
                    text = "".join(block.get("text", "") for block in message["params"]["prompt"])
                    if provider == "codex":
                        send({"id": 2, "method": "turn/start",
                              "params": {"threadId": state["session"], "input": [{"type": "text", "text": text}]}})
                    else:
                        send({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]},
                              "parent_tool_use_id": None, "session_id": state["session"]})
        os.close(to_backend)  # EOF: the backend exits once its input closes
        await anyio.wait_readable(os.pidfd_open(backend))
        os.waitpid(backend, 0)
        group.cancel_scope.cancel()


anyio.run(main)
