"""End-to-end harness: `acp-agent` as a subprocess, driven by the `agent-client-protocol` SDK client.

Every frame either side writes is observed; every frame the agent writes is validated against the
SDK's schema models (strictly: the model must read it back unchanged, so a field the schema
would salvage or drop counts as a problem).
"""

from __future__ import annotations

import inspect
import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Literal

import acp
import pydantic
from acp import schema
from acp.connection import StreamDirection, StreamEvent
from pydantic import TypeAdapter

CAPABLE_META: dict[str, Any] = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure"]}}}

RESPONSE_MODELS: dict[str, type[Any]] = {
    "initialize": schema.InitializeResponse,
    "authenticate": schema.AuthenticateResponse,
    "session/new": schema.NewSessionResponse,
    "session/load": schema.LoadSessionResponse,
    "session/list": schema.ListSessionsResponse,
    "session/resume": schema.ResumeSessionResponse,
    "session/close": schema.CloseSessionResponse,
    "session/prompt": schema.PromptResponse,
    "session/set_mode": schema.SetSessionModeResponse,
    "session/set_config_option": schema.SetSessionConfigOptionResponse,
}


class SteeringResponse(pydantic.BaseModel):
    """The `_session/steering` answer, as claude-agent-acp's `SteerResponse` (and codex-acp) define it."""

    model_config = pydantic.ConfigDict(extra="forbid")
    outcome: Literal["injected", "startedNewTurn", "promptRequired"]
    reason: Literal["noRunningTurn"] | None = None


class AsyncTaskStopResponse(pydantic.BaseModel):
    """The `_session/async_task/stop` answer, as claude-agent-acp's `stopAsyncTask` returns it."""

    model_config = pydantic.ConfigDict(extra="forbid")
    stopped: bool


RESPONSE_MODELS["_session/steering"] = SteeringResponse
RESPONSE_MODELS["_session/async_task/stop"] = AsyncTaskStopResponse
if hasattr(schema, "LogoutResponse"):
    RESPONSE_MODELS["logout"] = schema.LogoutResponse
if hasattr(schema, "ForkSessionResponse"):  # unstable in ACP, but validated like the rest
    RESPONSE_MODELS["session/fork"] = schema.ForkSessionResponse
if hasattr(schema, "DeleteSessionResponse"):
    RESPONSE_MODELS["session/delete"] = schema.DeleteSessionResponse
for _method, _model in (("providers/list", "ListProvidersResponse"), ("providers/set", "SetProviderResponse"),
                       ("providers/disable", "DisableProviderResponse")):  # unstable: gateways
    if hasattr(schema, _model):
        RESPONSE_MODELS[_method] = getattr(schema, _model)


SCHEMA_ONLY_METHODS = {"auth/status", "auth/status_update", "session/set_title"}
"""Unstable methods the `agent-client-protocol` models do not know yet: their frames are checked
against the JSON schema of `@agentclientprotocol/sdk` (tests/acp_schema.py) alone."""
SCHEMA_ONLY_UPDATES = {"notice", "compaction_update", "compaction_summary_chunk", "subagent_update"}
"""Session updates the models do not know yet: checked against the JSON schema alone."""
UNSTABLE_UPDATES = frozenset({"subagent_update", "plan_update"})
"""Session updates only the unstable schema has: sent only to a client that declared the unstable
capability (`clientCapabilities.plan`, `.subagents`), checked against that schema alone."""
AIR_UPDATES = {"subagent_spawned", "subagent_state_update", "async_task_spawned", "async_task_progress",
               "async_task_state_update"}
"""AIR's own session updates (its draft of child sessions, its background tasks): no published
schema, checked here."""
ASYNC_TASK_FIELDS = {
    "async_task_spawned": ({"asyncTaskId", "name", "taskType", "description", "showInTranscript", "canStop"},
                           {"outputFilePath", "toolCallId"}),
    "async_task_progress": ({"asyncTaskId"}, {"description", "summary", "lastToolName", "usage", "outputFilePath",
                                              "toolCallId"}),
    "async_task_state_update": ({"asyncTaskId", "state"}, {"summary", "outputFilePath", "toolCallId"}),
}
"""AIR's `asyncTasks` updates as claude-agent-acp sends them (dist/async-tasks.js): required and
optional fields besides `sessionUpdate`."""
AIR_TASK_STATES = {"running", "paused", "completed", "failed", "stopped"}
SCHEMA_ONLY_FIELDS: dict[str, tuple[str, ...]] = {
    "initialize": ("agentCapabilities.auth.status", "agentCapabilities.sessionCapabilities.title")}
"""Unstable fields the models do not know yet; a frame that has them is checked against the JSON
schema as well."""


AIR_AUTH_KINDS = {"none", "api_key", "account", "gateway", "external"}


def air_auth_status_problems(params: Any) -> list[str]:
    """The reference adapters' `_auth/status_update {authStatus: {kind, label, detail?, account?}}`
    (claude-agent-acp dist/auth-status.js): no published schema, so its shape is checked here."""
    status = params.get("authStatus") if isinstance(params, dict) else None
    if not isinstance(status, dict) or set(params) != {"authStatus"}:
        return [f"_auth/status_update params: {params!r}"]
    if status.get("kind") not in AIR_AUTH_KINDS or not isinstance(status.get("label"), str):
        return [f"_auth/status_update authStatus: {status!r}"]
    if not set(status) <= {"kind", "label", "detail", "account"} or not isinstance(status.get("detail", ""), str):
        return [f"_auth/status_update authStatus: {status!r}"]
    return []


AIR_SUBAGENT_STATES = {"completed", "failed", "cancelled", "disconnected"}


def air_update_problems(params: Any) -> list[str]:
    """AIR's `subagent_spawned {subagentSessionId, name, task, prompt?, capabilities}` and
    `subagent_state_update {subagentSessionId, state}` as claude-agent-acp sends them
    (dist/native-subagents.js `announceNativeSubagent`, `finishNativeSubagent`), and the
    `asyncTasks` updates (`ASYNC_TASK_FIELDS`)."""
    update = params.get("update") if isinstance(params, dict) else None
    if not isinstance(update, dict) or not isinstance(params.get("sessionId"), str) or set(params) != {
            "sessionId", "update"}:
        return [f"AIR session/update params: {params!r}"]
    if update["sessionUpdate"] in ASYNC_TASK_FIELDS:
        required, optional = ASYNC_TASK_FIELDS[update["sessionUpdate"]]
        fields = set(update) - {"sessionUpdate"}
        good = (required <= fields <= required | optional and update.get("state", "running") in AIR_TASK_STATES
                and all(isinstance(update[name], bool if name in ("showInTranscript", "canStop") else str)
                        for name in fields - {"usage"}))
        return [] if good else [f"AIR {update['sessionUpdate']}: {update!r}"]
    if not isinstance(update.get("subagentSessionId"), str):
        return [f"AIR {update.get('sessionUpdate')}: {update!r}"]
    if update["sessionUpdate"] == "subagent_spawned":
        fields = {"sessionUpdate", "subagentSessionId", "name", "task", "prompt", "capabilities"}
        good = (set(update) <= fields and isinstance(update.get("name"), str) and isinstance(update.get("task"), str)
                and isinstance(update.get("prompt", ""), str) and update.get("capabilities") == {})
    else:
        good = set(update) == {"sessionUpdate", "subagentSessionId", "state"} and update["state"] in AIR_SUBAGENT_STATES
    return [] if good else [f"AIR {update['sessionUpdate']}: {update!r}"]


def schema_problems(method: str, request: bool, part: str, payload: Any, *, side: str = "",
                    stable: bool = True) -> list[str]:
    """What the JSON schema finds wrong in an agent's frame (a result, a notification's params, or
    with `side="client"` a request the agent sent the client): the unstable schema, and the stable
    one where it defines the method (a frame of a stable method must be stable)."""
    import jsonschema

    from tests import acp_schema

    problems: list[str] = []
    update = payload.get("update") if isinstance(payload, dict) and method == "session/update" else None
    unstable_only = not stable or (isinstance(update, dict) and update.get("sessionUpdate") in UNSTABLE_UPDATES)
    for variant in ("unstable",) if unstable_only else ("unstable", "stable"):
        try:
            if part == "result":
                acp_schema.check_result(method, payload, variant=variant)
            elif request and side == "client":
                acp_schema.check_client_request(method, payload, variant=variant)
            elif request:
                return [f"unexpected agent request {method}"]
            else:
                acp_schema.check_notification({"method": method, "params": payload}, variant=variant)
        except jsonschema.ValidationError as exc:
            problems.append(f"{method} {part} ({variant}): {exc.message} at {list(exc.absolute_path)}")
        except KeyError as exc:
            if variant == "unstable":
                problems.append(f"{method} {part}: not in the schema ({exc})")
    return problems


class CreateElicitationRequestModel:
    """`elicitation/create` params are a union in the SDK: validated through a TypeAdapter."""

    adapter: TypeAdapter[Any] = TypeAdapter(schema.CreateElicitationRequest)

    @classmethod
    def model_validate(cls, payload: Any) -> Any:
        return cls.adapter.validate_python(payload)


REQUEST_MODELS: dict[str, type[Any]] = {
    "session/update": schema.SessionNotification,
    "session/request_permission": schema.RequestPermissionRequest,
    "elicitation/create": CreateElicitationRequestModel,
}


def _strip_nulls_equal(original: Any, dumped: Any) -> list[str]:
    """Paths where the model's reading differs from what was sent."""
    problems: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in a:
                if key not in b:
                    problems.append(f"{path}.{key}: not in the schema")
                else:
                    walk(a[key], b[key], f"{path}.{key}")
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                problems.append(f"{path}: list length {len(a)} read back as {len(b)}")
            for index, (x, y) in enumerate(zip(a, b, strict=False)):
                walk(x, y, f"{path}[{index}]")
        elif a != b and not (path.endswith(".category") and isinstance(a, str) and b is None):
            # A config option category outside ACP's named ones is the schema's `other` (codex-acp's
            # `collaboration_mode`); the python sdk reads every such category as None.
            problems.append(f"{path}: {a!r} read back as {b!r}")

    walk(original, dumped, "")
    return problems


def check_payload(model: type[Any], payload: Any) -> list[str]:
    try:
        parsed = model.model_validate(payload)
    except Exception as exc:
        return [f"{model.__name__}: {exc}"]
    dumped = parsed.model_dump(by_alias=True, exclude_unset=True, mode="json")
    return [f"{model.__name__}{problem}" for problem in _strip_nulls_equal(payload, dumped)]


class FrameLog:
    """Observer for the SDK connection: keeps every frame and validates the agent's."""

    def __init__(self) -> None:
        self.incoming: list[dict[str, Any]] = []
        self.outgoing: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self._methods: dict[Any, str] = {}
        self.on_frame: Callable[[], None] | None = None
        """Called after each frame of the agent's is kept (also one the SDK's models cannot read)."""

    def __call__(self, event: StreamEvent) -> None:
        message = event.message
        if event.direction is StreamDirection.OUTGOING:
            self.outgoing.append(message)
            if "method" in message and "id" in message:
                self._methods[message["id"]] = message["method"]
            return
        self.incoming.append(message)
        self.problems.extend(self.validate(message))
        self.problems.extend(self.against_the_schema(message))
        if self.on_frame is not None:
            self.on_frame()

    def against_the_schema(self, message: dict[str, Any]) -> list[str]:
        """Every agent frame against the sdk's JSON schema too (v1, unstable): a request's or
        notification's params, a response's result (extension methods, `_…`, have none)."""
        if "method" in message:
            method = str(message["method"])
            if method.startswith("_") or method in SCHEMA_ONLY_METHODS:
                return []  # checked above
            update = (message.get("params") or {}).get("update") if method == "session/update" else None
            if isinstance(update, dict) and update.get("sessionUpdate") in SCHEMA_ONLY_UPDATES | AIR_UPDATES:
                return []  # checked above
            return schema_problems(method, "id" in message, "params", message.get("params"), side="client")
        if "error" in message:
            return []
        method = self._methods.get(message.get("id"))
        if method is None or method.startswith("_") or method in SCHEMA_ONLY_METHODS or method in SCHEMA_ONLY_FIELDS:
            return []
        return schema_problems(method, True, "result", message.get("result"))

    def validate(self, message: dict[str, Any]) -> list[str]:
        if message.get("jsonrpc") != "2.0":
            return [f"frame without jsonrpc 2.0: {message}"]
        if "method" in message:
            update = (message.get("params") or {}).get("update") if message["method"] == "session/update" else None
            if isinstance(update, dict) and update.get("sessionUpdate") in AIR_UPDATES:
                return air_update_problems(message.get("params"))
            if isinstance(update, dict) and update.get("sessionUpdate") in SCHEMA_ONLY_UPDATES:
                return schema_problems(message["method"], False, "params", message.get("params"),
                                       stable=update["sessionUpdate"] not in UNSTABLE_UPDATES)
            if message["method"] == "_auth/status_update":
                return air_auth_status_problems(message.get("params"))
            if message["method"] in SCHEMA_ONLY_METHODS:
                return schema_problems(message["method"], "id" in message, "params", message.get("params"))
            model = REQUEST_MODELS.get(message["method"])
            if model is None:
                return [f"unexpected agent method {message['method']}"]
            return check_payload(model, message.get("params"))
        if "error" in message:
            return check_payload(schema.Error, message["error"])
        method = self._methods.get(message.get("id"))
        if method in SCHEMA_ONLY_METHODS:
            return schema_problems(method, True, "result", message.get("result"))
        model = RESPONSE_MODELS.get(method or "")
        if model is None:
            return [f"response to unknown request {message.get('id')}"]
        problems = check_payload(model, message.get("result"))
        if method in SCHEMA_ONLY_FIELDS:  # fields the models do not know yet: the JSON schema's to judge
            known = {f"{model.__name__}.{path}: not in the schema" for path in SCHEMA_ONLY_FIELDS[method]}
            problems = [problem for problem in problems if problem not in known]
            problems += schema_problems(method, True, "result", message.get("result"))
        return problems

    def text(self) -> str:
        return json.dumps(self.incoming)

    def failure_records(self) -> list[dict[str, Any]]:
        records = []
        for frame in self.incoming:
            holder = frame.get("result") if "result" in frame else (frame.get("params") or {}).get("update")
            if isinstance(holder, dict):
                record = (holder.get("_meta") or {}).get("jetbrains", {}).get("air", {}).get("sessionFailure")
                if record is not None:
                    records.append(record)
        return records

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        return [frame["params"]["update"] for frame in self.incoming if frame.get("method") == "session/update"
                and (session_id is None or frame["params"]["sessionId"] == session_id)]


class RecordingClient:
    """A minimal editor: records updates, answers permission requests with `permission`.

    `permission_hook` (async, given the options and the tool call) replaces `permission` when a test
    must act while a request is open; `update_hook` sees every session update as it arrives.
    """

    def __init__(self) -> None:
        self.permission: Callable[[Any], str | None] = lambda options: options[0].option_id
        self.elicitation: Callable[[str, Any], Any] = lambda message, mode: schema.DeclineElicitationResponse(
            action="decline")
        """Answers `elicitation/create` (given the message and the SDK's mode record)."""
        self.elicitations: list[tuple[str, Any]] = []
        self.permission_hook: Callable[[list[Any], Any], Awaitable[Any]] | None = None
        self.update_hook: Callable[[str, Any], None] | None = None
        self.permission_requests: list[Any] = []

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        self.permission_requests.append((tool_call, options))
        if self.permission_hook is not None:
            return await self.permission_hook(options, tool_call)
        choice = self.permission(options)
        if choice is None:
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected", option_id=choice))

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.elicitations.append((message, mode))
        answer = self.elicitation(message, mode)
        return await answer if inspect.isawaitable(answer) else answer

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if self.update_hook is not None:
            self.update_hook(session_id, update)

    async def write_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("fs/read_text_file")

    async def create_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("terminal/create")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


def agent_executable() -> str:
    """The real console script installed beside this interpreter."""
    candidate = Path(sys.executable).parent / "acp-agent"
    found = str(candidate) if candidate.exists() else shutil.which("acp-agent")
    assert found, "acp-agent is not installed in this environment"
    return found


class PipeFrames:
    """The frames an agent process writes to a pipe, read one line at a time with a deadline and
    without an event loop.

    With `importtime`, the agent's stderr is the same pipe (`stderr=subprocess.STDOUT` under
    `python -X importtime`): the pipe keeps the order in which the agent wrote, so `imported`
    holds exactly the modules it reported before the last frame `next` returned (a stderr read
    after the frame arrived could also see what the agent imported meanwhile)."""

    def __init__(self, fd: int, deadline_s: float = 60.0, *, importtime: bool = False) -> None:
        self.fd, self.deadline_s, self.buffer = fd, deadline_s, b""
        self.importtime = importtime
        self.imported: list[str] = []

    def _line(self, deadline: float) -> bytes:
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.fd], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                raise TimeoutError("no frame from the agent within the deadline")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise AssertionError(f"the agent closed stdout; read {self.buffer!r}")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def next(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.deadline_s
        while True:
            line = self._line(deadline)
            if self.importtime and not line.startswith(b"{"):
                self.imported += imported_modules(line)  # the import report (or another stderr line)
                continue
            message: dict[str, Any] = json.loads(line)
            return message

    def answer(self, request_id: int) -> dict[str, Any]:
        """The answer to request `request_id` (what comes before it is passed over)."""
        while True:
            message = self.next()
            if message.get("id") == request_id and "method" not in message:
                return message


@contextmanager
def reaped(process: subprocess.Popen[bytes], deadline_s: float = 60.0) -> Iterator[subprocess.Popen[bytes]]:
    """`process` for the block; if it still runs when the block is left (a failed assertion, a
    timeout), it is killed and reaped."""
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            process.wait(timeout=deadline_s)


@contextmanager
def agent_under_importtime(provider: str, env: Mapping[str, str], cwd: Path,
                           deadline_s: float = 60.0) -> Iterator[tuple[subprocess.Popen[bytes], PipeFrames]]:
    """The real console script serving `provider` under `python -X importtime`, its import report
    in the same pipe as its frames (`PipeFrames.imported`); killed and reaped if the block leaves
    it running."""
    process = subprocess.Popen([sys.executable, "-X", "importtime", agent_executable(), "--provider", provider],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(env),
                               cwd=cwd)
    with reaped(process, deadline_s):
        assert process.stdout is not None and process.stdin is not None
        yield process, PipeFrames(process.stdout.fileno(), deadline_s, importtime=True)


def send_frame(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    """Write one JSON-RPC message (`jsonrpc` added) to the agent's stdin."""
    assert process.stdin is not None
    process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    process.stdin.flush()


def imported_modules(importtime: bytes) -> list[str]:
    """The modules `python -X importtime` reported in `importtime` (its stderr), in import order."""
    return [line.split("|")[-1].strip() for line in importtime.decode().splitlines()
            if line.startswith("import time:") and "|" in line and "imported package" not in line]


def run_command_script(script: str) -> subprocess.CompletedProcess[str]:
    """`script` (Python that ends by calling the command line's `command()`) run by this
    interpreter with one `initialize` on its stdin, then EOF; no ACP_AGENT_ settings inherited."""
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACP_AGENT_")}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          input=request + "\n", timeout=30, check=False)


class AgentProcess:
    def __init__(self, conn: Any, process: Any, frames: FrameLog, client: RecordingClient, log_path: Path) -> None:
        self.conn = conn
        self.process = process
        self.frames = frames
        self.client = client
        self.log_path = log_path

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    async def initialize(self, *, capable: bool, meta: Mapping[str, Any] | None = None,
                         elicitation: schema.ElicitationCapabilities | None = None,
                         session: Mapping[str, Any] | None = None, plan: bool = False,
                         subagents: bool = False) -> Any:
        """`initialize` as a client of the failure extension (`capable`) or not; `session`: the
        `clientCapabilities.session` extensions (`{"notices": {}}`, …), sent as given (the
        models do not know them all yet); `plan`: ACP's unstable `plan` capability (`{}`);
        `subagents`: ACP's unstable `subagents: {}`."""
        client_meta = dict(meta or {})
        if capable:
            client_meta.update(CAPABLE_META)
        capabilities = schema.ClientCapabilities(field_meta=client_meta or None, elicitation=elicitation,
                                                 plan=schema.PlanCapabilities() if plan else None)
        info = schema.Implementation(name="e2e", version="1")
        if session is None and not subagents:
            return await self.conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                              client_capabilities=capabilities, client_info=info)
        params = schema.InitializeRequest(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities,
                                          client_info=info).model_dump(by_alias=True, exclude_none=True)
        if session is not None:
            params["clientCapabilities"]["session"] = dict(session)
        if subagents:
            params["clientCapabilities"]["subagents"] = {}
        result = await self.conn._conn.send_request("initialize", params)
        return schema.InitializeResponse.model_validate(result)


@asynccontextmanager
async def spawn_agent(provider: str | None, tmp_path: Path, env: Mapping[str, str] | None = None,
                      args: tuple[str, ...] = (), *, unstable: bool = False) -> AsyncIterator[AgentProcess]:
    """Start `acp-agent --provider NAME` (None: `acp-agent`, every provider) with logs at debug
    level in tmp_path; stop it on exit."""
    frames = FrameLog()
    client = RecordingClient()
    log_path = tmp_path / f"agent-{provider or 'all'}.log"
    stderr_path = tmp_path / f"agent-{provider or 'all'}.stderr"
    chosen = ("--provider", provider) if provider is not None else ()
    full_env = {key: value for key, value in os.environ.items() if not key.startswith("ACP_AGENT_")}
    full_env.update(env or {})
    full_env = {key: value for key, value in full_env.items() if value != ""}
    with open(stderr_path, "wb") as stderr:
        async with acp.spawn_agent_process(
            client, agent_executable(), *chosen, "--log-file", str(log_path), "--log-level", "debug",
            *args, env=full_env, cwd=str(tmp_path), transport_kwargs={"stderr": stderr, "shutdown_timeout": 10.0},
            observers=[frames], use_unstable_protocol=unstable,  # unstable: answer elicitation/create
        ) as (conn, process):
            yield AgentProcess(conn, process, frames, client, log_path)


def answers_and_texts(agent: AgentProcess, session_id: str,
                      keep: Callable[[str], bool] = lambda text: True) -> list[str]:
    """A session's prompt answers (`<stopReason>`) and agent text chunks (those `keep` accepts),
    in the order the agent wrote them: which answer each text came before."""
    out: list[str] = []
    for frame in agent.frames.incoming:
        result = frame.get("result")
        if isinstance(result, dict) and "stopReason" in result:
            out.append(f"<{result['stopReason']}>")
        elif frame.get("method") == "session/update" and frame["params"]["sessionId"] == session_id:
            update = frame["params"]["update"]
            if update["sessionUpdate"] == "agent_message_chunk" and keep(update["content"]["text"]):
                out.append(update["content"]["text"])
    return out


def joined(parts: list[str]) -> str:
    """Text chunks joined, answers kept apart: "echo: alpha|<end_turn>|echo: bravo|<end_turn>"."""
    out: list[str] = []
    for part in parts:
        if part.startswith("<") or not out or out[-1].startswith("<"):
            out.append(part)
        else:
            out[-1] += part
    return "|".join(out)


def fork_meta(message_id: str) -> dict[str, Any]:
    """A `session/fork`'s `_meta` asking to branch at `message_id` (AIR's fork point)."""
    return {"jetbrains": {"air": {"fork": {"version": 1, "messageId": message_id}}}}


MESSAGE_CHUNKS = ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk")


def messages(updates: list[dict[str, Any]], kinds: tuple[str, ...] = MESSAGE_CHUNKS) -> list[tuple[str, str | None, str]]:
    """(kind, messageId, text) of each message in `updates`, its text chunks joined, in order."""
    joined: list[tuple[str, str | None, str]] = []
    for update in updates:
        if update["sessionUpdate"] not in kinds or update["content"].get("type") != "text":
            continue
        kind, message_id, piece = update["sessionUpdate"], update.get("messageId"), update["content"]["text"]
        if joined and joined[-1][:2] == (kind, message_id):
            joined[-1] = (kind, message_id, joined[-1][2] + piece)
        else:
            joined.append((kind, message_id, piece))
    return joined
