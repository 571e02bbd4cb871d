"""A fake Muse Code host: `<exe> serve` speaks MSP (JSON-RPC 2.0 lines on stdio); `login`/`logout` too.

Tests write a small executable wrapper that runs this file and point `MUSE_CODE_EXECUTABLE` at
it. Everything it does is real MSP as the generated `muse-code-msp` types describe it (checked by
the official `muse-code-sdk` client in tests/muse/test_fake_host.py): the handshake with the
schema fingerprint the installed `muse-code-msp` defines, `commandId` idempotency (a re-sent
command gets the value-identical ack), durable sessions on disk (`MUSE_FAKE_HOME`), view
notifications with cursors and source ranges, approvals as both `approval/requested` and the
`approval/request` server request, and `-32020` for a session it does not know.

Environment:
- `MUSE_FAKE_HOME`: where sessions are stored (required for `serve`).
- `MUSE_FAKE_LOG`: a JSON-lines file; every frame received and every lifecycle event is appended.
- `MUSE_FAKE_PIDS`: a file each `serve` process appends its PID to.
- `MUSE_FAKE_TURN`: what a turn does (default `text`); a prompt starting with `turn:<name>` (first
  word) overrides it for that turn. Names: `text`, `stream`, `approval`, `fail:<errorKind>`,
  `steplimit`, `retry`, `retry-fail`, `exit`, `wait`, `question`, `closed`, `echo` (answers
  `echo: <the turn's input text>`, so a test sees which turn an answer belongs to), `many:<n>` (an
  answer streamed in n chunks `w<i> ` plus 100 dots), `shell` (a `shell` tool call whose output
  streams as `visibleOutput` deltas, exit code 0), `compact` (`session/contextUsage` near the window's
  end, an automatic `compaction` item reporting `tokensAfter`, then an answer), `compact-cancel` (a
  compaction whose `outcome` is `cancelled`), `unserved` (`session/modelRouteUnserved`, then an
  answer; after `turn/completed` another one, between turns).
- `session/fork` takes `cutPoint {lastTurnId}`: the fork keeps the items through that turn.
- With the scenario directive `names`, a session's first turn names it: `session/nameChanged`
  (`nameOrigin: automatic`, the first prompt's first 40 characters) before that turn's
  `turn/completed`, as the host's first naming does.
- The `question` turn asks one single-choice question (`Which file?`, option `a.py`) and answers
  `You chose <label>.` after `userInput/answer`, `Continuing without an answer.` after
  `userInput/cancel`.
- `hold`: answers `echo: <input>`, then the turn stays running until a `turn/steer` naming it
  (answered `echo: <steered input>` in the same turn, then it completes), a `turn/cancel`, or a line
  written to the named pipe `MUSE_FAKE_HOLD_FIFO` (then it completes).
- `turn/steer {sessionId, expectedTurnId, input}` puts input into the running turn it names (only a
  `hold` turn reads it); a turn that is not the running one is `-32030 commandRejected`.
- A `turn/start` while a turn of that session runs is queued (MSP's default `ifBusy: queue`:
  disposition `queued`, `startedNewTurn: false`) and starts when the running turn completes.
- `MUSE_FAKE_ERROR_MESSAGE`: the host's message for `fail:` turns.
- `MUSE_FAKE_SCENARIO`: comma-separated host behaviours: `hang=<method>` (never answer it, keep
  reading), `exit=<method>` (exit instead of answering), `overloaded-once=<method>`,
  `backpressured-once=<method>`, `reject=<method>` (-32030), `fingerprint=<value>`,
  `models=error|hang`, `settings-ignored`, `no-mcp-grant`, `ephemeral`, `names`.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

HOST_VERSION = "1.4.13"
MODELS = [
    {"modelId": "muse-large", "displayLabel": "Muse Large", "description": "The most capable model.",
     "isDefault": True},
    {"modelId": "muse-small", "displayLabel": "Muse Small", "description": "Fast and light.", "isDefault": False,
     "defaultReasoningEffort": "low", "variants": ["low", "medium", "high"],
     "reasoningEffortVariants": [{"tier": "low", "description": "Quick answers."},
                                 {"tier": "medium", "description": "Balanced."},
                                 {"tier": "high", "description": "Thinks longest."}]},
]
DEFAULT_MODEL = "muse-large"
RETRYABLE_KINDS = {"modelError": True, "launchError": True, "mcpLinkError": True}
CHOICES = [
    {"choiceId": "allow-once", "decision": "approved", "label": "Allow once", "scope": "once"},
    {"choiceId": "allow-session", "decision": "approvedForSession", "label": "Allow for this session",
     "scope": "session"},
    {"choiceId": "deny", "decision": "denied", "label": "Deny", "scope": "once", "acceptsFeedback": True},
    {"choiceId": "abort", "decision": "abort", "label": "Deny and stop", "scope": "once"},
]


def now_iso() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


class Log:
    def __init__(self) -> None:
        self.path = os.environ.get("MUSE_FAKE_LOG")
        self.lock = threading.Lock()

    def write(self, event: str, **fields: Any) -> None:
        if not self.path:
            return
        with self.lock, open(self.path, "a") as handle:
            handle.write(json.dumps({"pid": os.getpid(), "event": event, **fields}) + "\n")


LOG = Log()


def scenario() -> dict[str, list[str]]:
    directives: dict[str, list[str]] = {}
    for raw in os.environ.get("MUSE_FAKE_SCENARIO", "").split(","):
        part = raw.strip()
        if not part:
            continue
        name, _, value = part.partition("=")
        directives.setdefault(name, []).append(value)
    return directives


class MspError(Exception):
    def __init__(self, code: int, kind: str, message: str, retryable: bool | None = None, **data: Any) -> None:
        super().__init__(message)
        self.code, self.kind, self.message = code, kind, message
        self.data = {"kind": kind, **({"retryable": retryable} if retryable is not None else {}), **data}


class Store:
    """Durable sessions (one JSON file each), or only in memory for the ephemeral profile."""

    def __init__(self, home: Path | None) -> None:
        self.home = home
        self.memory: dict[str, dict[str, Any]] = {}
        if home is not None:
            (home / "sessions").mkdir(parents=True, exist_ok=True)

    def get(self, session_id: str) -> dict[str, Any] | None:
        if self.home is None:
            return self.memory.get(session_id)
        path = self.home / "sessions" / f"{session_id}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def put(self, record: dict[str, Any]) -> None:
        record["session"]["updatedAt"] = now_iso()
        if self.home is None:
            self.memory[record["session"]["sessionId"]] = record
            return
        path = self.home / "sessions" / f"{record['session']['sessionId']}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record))
        tmp.replace(path)

    def all(self) -> list[dict[str, Any]]:
        if self.home is None:
            return list(self.memory.values())
        return [json.loads(path.read_text()) for path in (self.home / "sessions").glob("*.json")]


class Host:
    def __init__(self) -> None:
        self.directives = scenario()
        self.write_lock = threading.Lock()
        self.state_lock = threading.RLock()
        home = os.environ.get("MUSE_FAKE_HOME")
        self.store = Store(None if "ephemeral" in self.directives else Path(home or "/nonexistent-muse-home"))
        self.loaded: set[str] = set()
        self.acks: dict[str, tuple[str, Any]] = {}
        self.failed_once: set[str] = set()
        self.cursor = 0
        self.sequence = 0
        self.next_request = 0
        self.initialized = False
        self.waiters: dict[str, queue.Queue[dict[str, Any]]] = {}
        self.running: dict[str, dict[str, Any]] = {}
        self.queued: dict[str, list[tuple[str, threading.Thread]]] = {}
        self.pending_start: threading.Thread | None = None

    # -- wire -----------------------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps({"jsonrpc": "2.0", **message}) + "\n"
        with self.write_lock:
            try:
                sys.stdout.write(line)
                sys.stdout.flush()
            except (BrokenPipeError, ValueError):
                os._exit(0)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"method": method, "params": params})

    def server_request(self, method: str, params: dict[str, Any]) -> None:
        with self.state_lock:
            self.next_request += 1
            request_id = self.next_request
        self.send({"id": request_id, "method": method, "params": params})

    def view(self, session_id: str) -> dict[str, Any]:
        """A fresh view cursor and the durable source range it folded from."""
        with self.state_lock:
            self.cursor += 1
            self.sequence += 1
            cursor = f"v{self.cursor:08d}"
            position = {"id": f"rec-{self.sequence}", "sequence": self.sequence}
        return {"sessionId": session_id, "viewCursor": cursor,
                "sourceRange": {"first": position, "last": position, "stream": {"id": session_id, "kind": "session"}}}

    def head(self) -> str:
        return f"v{self.cursor:08d}"

    # -- requests ---------------------------------------------------------------------------------------------

    def handle(self, message: dict[str, Any]) -> None:
        method, params, request_id = message.get("method"), message.get("params") or {}, message.get("id")
        if request_id is None:
            if method == "initialized":
                self.initialized = True
            return
        if "hang" in self.directives and method in self.directives["hang"]:
            LOG.write("hang", method=method)
            return
        if "exit" in self.directives and method in self.directives["exit"]:
            LOG.write("exit", method=method, code=3)
            os._exit(3)
        try:
            result = self.dispatch(str(method), params)
        except MspError as error:
            self.send({"id": request_id, "error": {"code": error.code, "message": error.message, "data": error.data}})
            return
        if result is not None:
            self.send({"id": request_id, "result": result})

    def command(self, method: str, params: dict[str, Any], run: Callable[[], Any]) -> Any:
        command_id = params.get("commandId")
        if not isinstance(command_id, str) or not command_id:
            raise MspError(-32602, "invalidParams", f"{method} requires commandId")
        for name, code, kind in (("overloaded-once", -32001, "overloaded"), ("backpressured-once", -32031,
                                                                              "backpressured")):
            if method in self.directives.get(name, []) and method not in self.failed_once:
                self.failed_once.add(method)
                raise MspError(code, kind, f"The host is {kind}; nothing was admitted.", retryable=True)
        if method in self.directives.get("reject", []):
            raise MspError(-32030, "commandRejected", f"{method} was rejected by the fake host's policy.",
                           reason="policy")
        signature = json.dumps(params, sort_keys=True)
        with self.state_lock:
            remembered = self.acks.get(command_id)
        if remembered is not None:
            if remembered[0] != signature:
                raise MspError(-32602, "invalidParams", f"commandId {command_id} reused with another payload")
            return remembered[1]
        result = run()
        with self.state_lock:
            self.acks[command_id] = (signature, result)
        return result

    def dispatch(self, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize":
            return self.initialize(params)
        if method == "model/list":
            mode = self.directives.get("models", [""])[0]
            if mode == "hang":
                return None
            if mode == "error":
                raise MspError(-32603, "internal", "The model catalog is unavailable.")
            record = self.store.get(params.get("sessionId", "")) if params.get("sessionId") else None
            active = record["session"]["modelId"] if record else DEFAULT_MODEL
            models = [{"contextLimit": 200000, "cost": None, "outputLimit": 32000, "profileId": None,
                       "providerId": "meta", "releaseDate": None, **model, "isActive": model["modelId"] == active}
                      for model in MODELS]
            return {"models": models, "profileId": None, "providerId": "meta", "source": "fakeCatalog"}
        if method == "session/list":
            return self.list_sessions(params)
        if method == "session/read":
            record = self.require(params)
            return {**self.envelope(record, not params.get("excludeItems")), **self.last_turn(record)}
        commands: dict[str, Callable[[], Any]] = {
            "session/start": lambda: self.start(params),
            "session/resume": lambda: self.resume(params),
            "session/fork": lambda: self.fork(params),
            "session/setApprovalMode": lambda: self.set_mode(params),
            "session/setModel": lambda: self.set_model(params),
            "session/rename": lambda: self.rename(params),
            "session/leave": lambda: self.leave(params),
            "turn/start": lambda: self.turn_start(params),
            "turn/cancel": lambda: self.turn_cancel(params),
            "turn/steer": lambda: self.turn_steer(params),
            "approval/decide": lambda: self.decide(params),
            "userInput/cancel": lambda: self.user_input_cancel(params),
            "userInput/answer": lambda: self.user_input_answer(params),
        }
        if method in commands:
            return self.command(method, params, commands[method])
        raise MspError(-32601, "methodNotFound", f"method not found: {method}", retryable=False)

    def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        from muse_code_msp import SCHEMA_FINGERPRINT, SCHEMA_VERSION

        requested = (params.get("capabilities") or {}).get("requestedCapabilities") or []
        granted = [name for name in requested if name in ("sessionMcp", "userShell", "sessionListStream")
                   and not (name == "sessionMcp" and "no-mcp-grant" in self.directives)]
        fingerprint = self.directives.get("fingerprint", [SCHEMA_FINGERPRINT])[0]
        LOG.write("initialize", clientInfo=params.get("clientInfo"), granted=granted)
        return {
            "experimentalApi": False, "grantedCapabilities": granted, "museHome": "/tmp/muse-fake-home",
            "platformFamily": "unix", "platformOs": "linux",
            "schema": {"version": SCHEMA_VERSION, "fingerprint": fingerprint},
            "serverInfo": {"name": "muse-fake", "version": HOST_VERSION}, "userAgent": f"muse-fake/{HOST_VERSION}",
            "sessionDurability": "ephemeral" if "ephemeral" in self.directives else "durable",
            "sandboxAvailability": "available",
        }

    # -- sessions ---------------------------------------------------------------------------------------------

    def require(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = params.get("sessionId")
        record = self.store.get(session_id) if isinstance(session_id, str) else None
        if record is None:
            raise MspError(-32020, "sessionNotFound", f"no session {session_id}", sessionId=session_id)
        return record

    def require_loaded(self, params: dict[str, Any]) -> dict[str, Any]:
        record = self.require(params)
        if record["session"]["sessionId"] not in self.loaded:
            raise MspError(-32024, "sessionNotLoaded", "the session is not loaded on this host")
        return record

    def session_object(self, session_id: str, workspace: str | None, mode: str, model: str,
                       forked_from: dict[str, Any] | None = None) -> dict[str, Any]:
        stamp = now_iso()
        return {"activeTurnId": None, "createdAt": stamp, "forkedFrom": forked_from, "modelId": model,
                "path": f"/tmp/muse-fake/{session_id}.log", "providerId": "meta", "sessionId": session_id,
                "status": "idle", "turnCount": 0, "updatedAt": stamp, "workspaceRoot": workspace,
                "approvalMode": {"lastCommandId": None, "mode": mode, "source": "startup"}, "kind": "root"}

    def envelope(self, record: dict[str, Any], with_items: bool) -> dict[str, Any]:
        history = ({"items": record["items"], "mode": "inline", "snapshot": None} if with_items else
                   {"items": None, "mode": "none", "snapshot": None, "noneReason": "excluded"})
        return {"history": history, "pendingRequests": [], "session": record["session"], "viewCursor": self.head()}

    @staticmethod
    def last_turn(record: dict[str, Any]) -> dict[str, Any]:
        return {"lastTurn": record["lastTurn"]} if record.get("lastTurn") else {}

    def start(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = params.get("sessionId") or str(uuid.uuid4())
        if self.store.get(session_id) is not None:
            raise MspError(-32030, "commandRejected", "a session with that id exists", reason="exists")
        session = self.session_object(session_id, params.get("workspaceRoot"), params.get("approvalMode") or
                                      "promptUnmatched", params.get("modelId") or DEFAULT_MODEL)
        record = {"session": session, "items": [], "mcp": (params.get("config") or {}).get("mcpServers")}
        self.store.put(record)
        self.loaded.add(session_id)
        LOG.write("started", sessionId=session_id, mcp=record["mcp"])
        self.notify("session/started", {"session": session})
        return {"session": session, "viewCursor": self.head()}

    def resume(self, params: dict[str, Any]) -> dict[str, Any]:
        record = self.require(params)
        self.loaded.add(record["session"]["sessionId"])
        return {**self.envelope(record, not params.get("excludeItems")), **self.last_turn(record)}

    def fork(self, params: dict[str, Any]) -> dict[str, Any]:
        source = self.require(params)
        new_id = str(uuid.uuid4())
        provenance = {"commandId": params["commandId"], "cutCursor": self.head(), "cutExplicit": False,
                      "sessionId": source["session"]["sessionId"]}
        session = self.session_object(new_id, source["session"]["workspaceRoot"],
                                      source["session"]["approvalMode"]["mode"], source["session"]["modelId"],
                                      forked_from=provenance)
        kept, last_turn = [dict(item) for item in source["items"]], source.get("lastTurn")
        cut = (params.get("cutPoint") or {}).get("lastTurnId")
        if cut is not None:  # through that turn, inclusive; a turn the session lacks is -32023
            turns = list(dict.fromkeys(item.get("turnId") for item in kept))
            if cut not in turns:
                raise MspError(-32023, "forkBoundaryInvalid", "the cut point names no turn of the session")
            through = set(turns[:turns.index(cut) + 1])
            kept = [item for item in kept if item.get("turnId") in through]
            last_turn = {"turnId": cut, "terminal": "completed"}
            provenance["cutExplicit"] = True
        record = {"session": session, "items": kept, "lastTurn": last_turn}
        self.store.put(record)
        self.loaded.add(new_id)
        self.notify("session/started", {"session": session})
        return self.envelope(record, not params.get("excludeItems"))

    def list_sessions(self, params: dict[str, Any]) -> dict[str, Any]:
        rows = [record["session"] for record in self.store.all()
                if not params.get("workspaceRoot") or record["session"]["workspaceRoot"] == params["workspaceRoot"]]
        rows.sort(key=lambda row: row["updatedAt"], reverse=True)
        return {"nextCursor": None, "sessions": rows[: int(params.get("limit") or 50)]}

    def set_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        record = self.require_loaded(params)
        effective = dict(record["session"]["approvalMode"])
        outcome = "noop"
        if "settings-ignored" not in self.directives and effective["mode"] != params["mode"]:
            effective = {"lastCommandId": params["commandId"], "mode": params["mode"], "source": "approvalReconfigure"}
            record["session"]["approvalMode"] = effective
            self.store.put(record)
            outcome = "completed"
            self.notify("session/approvalModeChanged", {**self.view(record["session"]["sessionId"]),
                                                        "clientName": "acp", "commandId": params["commandId"],
                                                        "mode": params["mode"], "source": "approvalReconfigure"})
        return {"applyOutcome": outcome, "commandId": params["commandId"], "effectiveMode": effective,
                "status": "accepted"}

    def rename(self, params: dict[str, Any]) -> dict[str, Any]:
        """`session/rename`: the durable name, normalised (white space folded), announced."""
        record = self.require(params)
        name = " ".join(str(params.get("name") or "").split())
        if not name:
            raise MspError(-32602, "invalidParams", "the name is empty")
        session_id = record["session"]["sessionId"]
        with self.state_lock:
            record["session"]["name"] = name
            self.store.put(record)
        self.notify("session/nameChanged", {**self.view(session_id), "name": name, "nameOrigin": "user"})
        return {"commandId": params["commandId"], "status": "accepted", "name": name}

    def set_model(self, params: dict[str, Any]) -> dict[str, Any]:
        record = self.require_loaded(params)
        model = (params.get("model") or {}).get("modelId")
        if model not in {entry["modelId"] for entry in MODELS}:
            raise MspError(-32602, "invalidParams", f"unknown model {model}")
        if "settings-ignored" not in self.directives:
            record["session"]["modelId"] = model
            self.store.put(record)
            self.notify("session/modelChanged", {**self.view(record["session"]["sessionId"]), "modelId": model,
                                                 "providerId": "meta", "source": "user"})
        return {"commandId": params["commandId"], "status": "accepted"}

    def leave(self, params: dict[str, Any]) -> dict[str, Any]:
        record = self.require(params)
        session_id = record["session"]["sessionId"]
        self.loaded.discard(session_id)
        self.notify("session/closed", {"reason": "leave", "sessionId": session_id, "viewCursor": self.head()})
        return {"commandId": params["commandId"], "status": "accepted"}

    # -- turns ---------------------------------------------------------------------------------------------------

    def turn_start(self, params: dict[str, Any]) -> dict[str, Any]:
        record = self.require_loaded(params)
        session_id = record["session"]["sessionId"]
        text = "".join(part.get("text", "") for part in params.get("input") or [] if part.get("type") == "text")
        turn_name = os.environ.get("MUSE_FAKE_TURN", "text")
        if text.startswith("turn:"):
            turn_name = text.split()[0][len("turn:"):]
        turn_id = "turn-" + params["commandId"][-12:]
        waiter: queue.Queue[dict[str, Any]] = queue.Queue()
        thread = threading.Thread(target=self.run_turn, args=(session_id, turn_id, params["commandId"], text,
                                                               turn_name, waiter), daemon=True)
        with self.state_lock:
            self.waiters[turn_id] = waiter
            busy = session_id in self.running
            if busy:
                self.queued.setdefault(session_id, []).append((turn_id, thread))
            else:
                self.running[session_id] = {"turnId": turn_id}
        if busy:
            LOG.write("queued", turnId=turn_id)
            return {"commandId": params["commandId"], "disposition": "queued", "startedNewTurn": False,
                    "status": "accepted", "turnId": turn_id}
        self.pending_start = thread  # started once the acknowledgement is written
        return {"commandId": params["commandId"], "disposition": "started", "startedNewTurn": True,
                "status": "accepted", "turnId": turn_id}

    def turn_steer(self, params: dict[str, Any]) -> dict[str, Any]:
        record = self.require_loaded(params)
        turn_id = params.get("expectedTurnId")
        if not isinstance(turn_id, str) or not turn_id:
            raise MspError(-32602, "invalidParams", "turn/steer requires expectedTurnId")
        text = "".join(part.get("text", "") for part in params.get("input") or [] if part.get("type") == "text")
        with self.state_lock:
            running = (self.running.get(record["session"]["sessionId"]) or {}).get("turnId")
            waiter = self.waiters.get(turn_id) if running == turn_id else None
        if waiter is None:
            raise MspError(-32030, "commandRejected", f"turn {turn_id} is not the running turn",
                           reason="turnNotActive")
        LOG.write("steered", turnId=turn_id, text=text)
        waiter.put({"steer": text})
        return {"commandId": params["commandId"], "status": "accepted", "turnId": turn_id}

    def turn_cancel(self, params: dict[str, Any]) -> dict[str, Any]:
        record = self.require_loaded(params)
        turn_id = params.get("turnId") or (self.running.get(record["session"]["sessionId"]) or {}).get("turnId")
        waiter = self.waiters.get(turn_id or "")
        if waiter is not None:
            waiter.put({"cancel": True})
        return {"commandId": params["commandId"], "status": "accepted", "turnId": turn_id or ""}

    def decide(self, params: dict[str, Any]) -> dict[str, Any]:
        approval_id = params.get("approvalId", "")
        turn_id = approval_id.split("/", 1)[0]
        waiter = self.waiters.get(turn_id)
        if waiter is None:
            raise MspError(-32050, "approvalNotFound", f"no pending approval {approval_id}")
        if params.get("choiceId") not in {choice["choiceId"] for choice in CHOICES}:
            raise MspError(-32052, "approvalChoiceInvalid", "that choice was not offered")
        waiter.put({"decide": params})
        return {"approvalId": approval_id, "commandId": params["commandId"], "status": "accepted", "terminal": True}

    def user_input_cancel(self, params: dict[str, Any]) -> dict[str, Any]:
        question = params.get("userInputId", "")
        waiter = self.waiters.get(question.split("/", 1)[0])
        if waiter is not None:
            waiter.put({"questionCancelled": params})
        return {"commandId": params["commandId"], "status": "accepted", "userInputId": question}

    def user_input_answer(self, params: dict[str, Any]) -> dict[str, Any]:
        question = params.get("userInputId", "")
        waiter = self.waiters.get(question.split("/", 1)[0])
        answers = params.get("answers")
        if waiter is None:
            raise MspError(-32056, "userInputNotFound", f"no open user input {question}")
        if not isinstance(answers, list) or [a.get("questionId") for a in answers] != ["q1"] or not any(
                key in answers[0] for key in ("selectedLabel", "selectedLabels", "freeText")):
            raise MspError(-32057, "userInputAnswerInvalid", "answer every question")
        waiter.put({"answered": params})
        return {"commandId": params["commandId"], "status": "accepted", "userInputId": question}

    # -- the turn's events ------------------------------------------------------------------------------------

    def item(self, session_id: str, method: str, item: dict[str, Any]) -> None:
        params = {**self.view(session_id), "item": item}
        if method == "item/started" and item["kind"] in ("agentMessage", "reasoning"):
            params.pop("sourceRange")  # opens on an ephemeral record
        self.notify(method, params)

    def delta(self, session_id: str, item_id: str, delta: str, field: str | None = None) -> None:
        params = {"sessionId": session_id, "itemId": item_id, "delta": delta, "viewCursor": self.view(session_id)
                  ["viewCursor"]}
        if field is not None:
            params["field"] = field
        self.notify("item/delta", params)

    def message(self, session_id: str, turn_id: str, item_id: str, kind: str, chunks: list[str]) -> dict[str, Any]:
        item = {"itemId": item_id, "kind": kind, "revision": 1, "status": "inProgress", "turnId": turn_id}
        self.item(session_id, "item/started", item)
        for chunk in chunks:
            self.delta(session_id, item_id, chunk)
        done = {**item, "revision": 2, "status": "completed", "text": "".join(chunks)}
        if kind == "agentMessage":
            done["messagePhase"] = "finalAnswer"
        self.item(session_id, "item/completed", done)
        return done

    def run_turn(self, session_id: str, turn_id: str, command_id: str, text: str, name: str,
                 waiter: queue.Queue[dict[str, Any]]) -> None:
        items: list[dict[str, Any]] = []
        user = {"itemId": f"{turn_id}-user", "kind": "userMessage", "revision": 1, "status": "completed",
                "turnId": turn_id, "text": text}
        self.notify("turn/started", {**self.view(session_id), "commandId": command_id, "turnId": turn_id})
        self.item(session_id, "item/completed", user)
        items.append(user)
        terminal: dict[str, Any] = {"terminal": "completed"}
        if name == "text":
            items.append(self.message(session_id, turn_id, f"{turn_id}-think", "reasoning", ["Thinking", " it over."]))
            items.append(self.message(session_id, turn_id, f"{turn_id}-answer", "agentMessage", ["Hello", ", world."]))
            self.token_usage(session_id, turn_id)
            self.notify("session/contextUsage", {**self.view(session_id), "pressure": "normal", "usedTokens": 1200,
                                                 "windowTokens": 200000})
        elif name == "stream":
            self.stream(session_id, turn_id, items)
        elif name == "approval":
            terminal = self.approval(session_id, turn_id, items, waiter)
        elif name.startswith("fail:"):
            kind = name[len("fail:"):]
            items.append(self.message(session_id, turn_id, f"{turn_id}-answer", "agentMessage", ["Working on it."]))
            message = os.environ.get("MUSE_FAKE_ERROR_MESSAGE") or f"The turn failed: {kind}."
            terminal = {"terminal": "failed", "error": {"kind": kind, "message": message,
                                                        "retryable": RETRYABLE_KINDS.get(kind, False)}}
        elif name == "steplimit":
            terminal = {"terminal": "failed", "error": {"kind": "stepLimit", "message": "Reached the step limit of 50.",
                                                        "retryable": False}}
        elif name in ("retry", "retry-fail"):
            retry = {**self.view(session_id), "turnId": turn_id, "attempt": 1, "maxAttempts": 3, "nextAttempt": 2,
                     "retryDelayMs": 1000}
            self.notify("turn/retryScheduled", {**retry, "reason": "The model provider rate limited the request",
                                                "errorKind": "rateLimited", "httpStatus": 429})
            self.notify("turn/modelRetryScheduled", {**self.view(session_id), "turnId": turn_id, "attempt": 2,
                                                     "maxAttempts": 3, "nextAttempt": 3, "retryDelayMs": 2000,
                                                     "system": "Meta model API", "httpStatus": 529})
            if name == "retry":
                items.append(self.message(session_id, turn_id, f"{turn_id}-answer", "agentMessage",
                                          ["Recovered", " after retrying."]))
            else:
                terminal = {"terminal": "failed", "error": {
                    "kind": "modelError", "message": "The model is overloaded; giving up after 3 attempts.",
                    "retryable": True}}
        elif name == "exit":
            self.item(session_id, "item/started", {"itemId": f"{turn_id}-answer", "kind": "agentMessage",
                                                    "revision": 1, "status": "inProgress", "turnId": turn_id})
            self.delta(session_id, f"{turn_id}-answer", "Partial answer")
            LOG.write("exit", method="turn", code=7)
            sys.stdout.flush()
            os._exit(7)
        elif name == "wait":
            self.item(session_id, "item/started", {"itemId": f"{turn_id}-answer", "kind": "agentMessage",
                                                    "revision": 1, "status": "inProgress", "turnId": turn_id})
            self.delta(session_id, f"{turn_id}-answer", "Working slowly")
            LOG.write("waiting", turnId=turn_id)
            while "cancel" not in waiter.get():
                pass
            terminal = {"terminal": "cancelled", "reason": "turn/cancel"}
        elif name == "question":
            question_id = f"{turn_id}/q1"
            question = {**self.view(session_id), "itemId": f"{turn_id}-tool", "toolCallId": "call-q", "toolName":
                        "ask_user", "turnId": turn_id, "userInputId": question_id, "questions": [
                            {"header": "Pick", "id": "q1", "question": "Which file?", "options": [{"label": "a.py"}],
                             "selection": {"mode": "single"}}]}
            self.notify("userInput/requested", question)
            self.server_request("userInput/request", question)
            answer = waiter.get()
            LOG.write("question-settled", answer=answer)
            answered = (answer.get("answered") or {}).get("answers") or []
            picked = answered[0].get("selectedLabel") or answered[0].get("freeText") if answered else None
            items.append(self.message(session_id, turn_id, f"{turn_id}-answer", "agentMessage",
                                      [f"You chose {picked}." if picked else "Continuing without an answer."]))
        elif name == "closed":
            items.append(self.message(session_id, turn_id, f"{turn_id}-answer", "agentMessage", ["Done."]))
        elif name.startswith("many:"):  # a long answer: `many:<n>` streams n chunks "w<i> ....."
            chunks = [f"w{i} " + "." * 100 for i in range(int(name[len("many:"):]))]
            items.append(self.message(session_id, turn_id, f"{turn_id}-answer", "agentMessage", chunks))
        elif name == "hold":
            terminal = self.hold(session_id, turn_id, text, items, waiter)
        elif name == "echo":
            items.append(self.message(session_id, turn_id, f"{turn_id}-answer", "agentMessage", [f"echo: {text}"]))
        elif name == "unserved":  # a credential update mid-turn installed a provider without the model
            self.notify("session/modelRouteUnserved", {**self.view(session_id), "commandId": command_id,
                                                       "installedProviderId": "openrouter", "modelId": DEFAULT_MODEL,
                                                       "providerId": "meta"})
            items.append(self.message(session_id, turn_id, f"{turn_id}-answer", "agentMessage", ["Still here."]))
        elif name == "shell":
            self.shell(session_id, turn_id, items)
        elif name == "edit":
            self.edit(session_id, turn_id, items)
        elif name in ("compact", "compact-cancel"):
            self.notify("session/contextUsage", {**self.view(session_id), "pressure": "high", "usedTokens": 150000,
                                                 "windowTokens": 200000})
            compaction = {"itemId": f"{turn_id}-compact", "kind": "compaction", "revision": 1, "status": "inProgress",
                          "turnId": turn_id, "trigger": "auto", "tokensBefore": 150000}
            self.item(session_id, "item/started", compaction)
            done = {**compaction, "revision": 2, "status": "completed", "outcome": "compacted", "tokensAfter": 20000}
            if name == "compact-cancel":
                done = {**compaction, "revision": 2, "status": "completed", "outcome": "cancelled",
                        "failureReason": "The compaction was cancelled."}
            self.item(session_id, "item/completed", done)
            items.append(done)
            items.append(self.message(session_id, turn_id, f"{turn_id}-answer", "agentMessage", ["Compacted."]))
        self.name_once(session_id, text)
        self.finish(session_id, turn_id, items, terminal)
        if name == "unserved":  # and another one between turns
            self.notify("session/modelRouteUnserved", {**self.view(session_id), "commandId": str(uuid.uuid4()),
                                                       "installedProviderId": "bedrock", "modelId": DEFAULT_MODEL,
                                                       "providerId": "meta"})
        if name == "closed":
            self.loaded.discard(session_id)
            self.notify("session/closed", {"reason": "idle", "sessionId": session_id, "viewCursor": self.head()})

    def name_once(self, session_id: str, text: str) -> None:
        """The host's first naming of a session (automatic, from the first prompt)."""
        if "names" not in self.directives:
            return
        with self.state_lock:
            record = self.store.get(session_id)
            if record is None or record["session"].get("name"):
                return
            name = " ".join(text.split())[:40] or "New session"
            record["session"]["name"] = name
            self.store.put(record)
        self.notify("session/nameChanged", {**self.view(session_id), "name": name, "nameOrigin": "automatic"})

    def shell(self, session_id: str, turn_id: str, items: list[dict[str, Any]]) -> None:
        tool = {"itemId": f"{turn_id}-shell", "kind": "toolCall", "revision": 1, "status": "inProgress",
                "turnId": turn_id, "tool": "shell", "callId": "call-sh",
                "args": json.dumps({"command": ["bash", "-lc", "make test"]})}
        self.item(session_id, "item/started", tool)
        for line in ("compiling\n", "testing\n", "3 passed\n"):
            self.delta(session_id, tool["itemId"], line, "visibleOutput")
        done = {**tool, "revision": 2, "status": "completed", "visibleOutput": "compiling\ntesting\n3 passed\n",
                "exitCode": 0, "durationMs": 40}
        self.item(session_id, "item/completed", done)
        items.append(done)
        items.append(self.message(session_id, turn_id, f"{turn_id}-answer", "agentMessage", ["Tests pass."]))

    def hold(self, session_id: str, turn_id: str, text: str, items: list[dict[str, Any]],
             waiter: queue.Queue[dict[str, Any]]) -> dict[str, Any]:
        items.append(self.message(session_id, turn_id, f"{turn_id}-answer", "agentMessage", [f"echo: {text}"]))
        fifo = os.environ.get("MUSE_FAKE_HOLD_FIFO")
        if fifo:
            def read_release() -> None:
                with open(fifo, encoding="utf-8") as pipe:
                    pipe.readline()
                waiter.put({"release": True})
            threading.Thread(target=read_release, daemon=True).start()
        LOG.write("holding", turnId=turn_id)
        event = waiter.get()
        if "cancel" in event:
            return {"terminal": "cancelled", "reason": "turn/cancel"}
        if "steer" in event:
            steered = event["steer"]
            user = {"itemId": f"{turn_id}-steer", "kind": "userMessage", "revision": 1, "status": "completed",
                    "turnId": turn_id, "text": steered, "steered": True}
            self.item(session_id, "item/completed", user)
            items.append(user)
            items.append(self.message(session_id, turn_id, f"{turn_id}-steered", "agentMessage",
                                      [f"echo: {steered}"]))
        return {"terminal": "completed"}

    def stream(self, session_id: str, turn_id: str, items: list[dict[str, Any]]) -> None:
        self.notify("session/todoListChanged", {**self.view(session_id), "revision": 1, "sourceTool": "todo_write",
                                                "items": [{"status": "completed", "text": "Read the file"},
                                                          {"status": "inProgress", "text": "Summarise it"},
                                                          {"status": "pending", "text": "Report back"}]})
        items.append(self.message(session_id, turn_id, f"{turn_id}-think", "reasoning", ["Let me ", "read it."]))
        tool = {"itemId": f"{turn_id}-tool", "kind": "toolCall", "revision": 1, "status": "inProgress",
                "turnId": turn_id, "tool": "read_file", "callId": "call-1", "args": json.dumps({"path": "notes.md"}),
                "displayLabel": {"active": "Reading notes.md", "done": "Read notes.md", "neutral": "Read notes.md"}}
        self.item(session_id, "item/started", tool)
        self.delta(session_id, tool["itemId"], "# Notes\n", "visibleOutput")
        self.item(session_id, "item/updated", {**tool, "revision": 2})
        done = {**tool, "revision": 3, "status": "completed", "visibleOutput": "# Notes\nship it\n", "durationMs": 3}
        self.item(session_id, "item/completed", done)
        items.append(done)
        answer_id = f"{turn_id}-answer"
        # A delta may arrive before its item opens; clients hold it.
        self.delta(session_id, answer_id, "The ")
        self.item(session_id, "item/started", {"itemId": answer_id, "kind": "agentMessage", "revision": 1,
                                                "status": "inProgress", "turnId": turn_id})
        chunks = ["The ", "notes ", "say ", "to ", "ship ", "it."]
        for chunk in chunks[1:]:
            self.delta(session_id, answer_id, chunk)
        done_answer = {"itemId": answer_id, "kind": "agentMessage", "revision": 2, "status": "completed",
                       "turnId": turn_id, "text": "".join(chunks), "messagePhase": "finalAnswer"}
        self.item(session_id, "item/completed", done_answer)
        items.append(done_answer)

    def edit(self, session_id: str, turn_id: str, items: list[dict[str, Any]]) -> None:
        """`turn:edit`: a file written (completed) and an edit that failed, then an answer."""
        for suffix, tool, path, status in (("write", "write_file", "notes.md", "completed"),
                                           ("edit", "edit_file", "other.md", "failed")):
            tool_item = {"itemId": f"{turn_id}-{suffix}", "kind": "toolCall", "revision": 1, "status": "inProgress",
                         "turnId": turn_id, "tool": tool, "callId": f"call-{suffix}",
                         "args": json.dumps({"path": path, "content": "ship it\n"})}
            self.item(session_id, "item/started", tool_item)
            done = {**tool_item, "revision": 2, "status": status}
            if status == "failed":
                done["failureReason"] = "The file is locked."
            self.item(session_id, "item/completed", done)
            items.append(done)
        items.append(self.message(session_id, turn_id, f"{turn_id}-answer", "agentMessage", ["Edited."]))

    def approval(self, session_id: str, turn_id: str, items: list[dict[str, Any]],
                 waiter: queue.Queue[dict[str, Any]]) -> dict[str, Any]:
        approval_id = f"{turn_id}/a1"
        tool = {"itemId": f"{turn_id}-tool", "kind": "toolCall", "revision": 1, "status": "inProgress",
                "turnId": turn_id, "tool": "shell", "callId": "call-2", "approvalId": approval_id,
                "args": json.dumps({"command": ["rm", "-rf", "build"]})}
        self.item(session_id, "item/started", tool)
        requirement = {"approvalId": approval_id, "sourceIndex": 0}
        request = {**self.view(session_id), "approvalId": approval_id, "availableChoices": CHOICES,
                   "currentRequirementId": requirement, "itemId": tool["itemId"], "judgeEscalated": False,
                   "protectedWrite": False, "rawArgs": tool["args"], "subject": {"kind": "shell", "command":
                   "rm -rf build"}, "taskId": "task-1", "toolCallId": "call-2", "toolName": "shell", "turnId": turn_id}
        self.notify("approval/requested", request)
        self.server_request("approval/request", request)
        event = waiter.get()
        if "cancel" in event:
            decision, choice = "abort", "abort"
        else:
            choice = event["decide"]["choiceId"]
            decision = next(c["decision"] for c in CHOICES if c["choiceId"] == choice)
        LOG.write("decided", approvalId=approval_id, choiceId=choice)
        allowed = decision in ("approved", "approvedForSession")
        self.notify("approval/resolved", {**self.view(session_id), "approvalId": approval_id, "decision": decision,
                                          "itemId": tool["itemId"], "policyResult": "allow" if allowed else "deny",
                                          "resolvedBy": "user", "stageEvidence": [], "turnId": turn_id})
        done = {**tool, "revision": 2, "status": "completed" if allowed else "rejected",
                "visibleOutput": "removed build/\n" if allowed else "", "exitCode": 0 if allowed else None}
        if not allowed:
            done.pop("exitCode")
            done["failureReason"] = "The user denied this action."
        self.item(session_id, "item/completed", done)
        items.append(done)
        if decision == "abort":
            return {"terminal": "cancelled", "reason": "approvalAbort"}
        items.append(self.message(session_id, turn_id, f"{turn_id}-answer", "agentMessage",
                                  ["Removed the build directory." if allowed else "I did not remove it."]))
        return {"terminal": "completed"}

    def token_usage(self, session_id: str, turn_id: str) -> None:
        """`session/tokenUsage` for the turn's one model call: its counters and the session's
        running totals, with a cost of $0.0125 a call."""
        with self.state_lock:
            record = self.store.get(session_id)
            calls = (record["session"]["turnCount"] if record is not None else 0) + 1
        usage = {"cachedTokens": 200, "inputTokens": 1200, "outputTokens": 20, "reasoningTokens": 5,
                 "cacheReadTokens": 200}
        self.notify("session/tokenUsage", {
            **self.view(session_id), "turnId": turn_id, "modelId": DEFAULT_MODEL, "promptTokens": 1000,
            "totalTokens": 1020, "usage": usage,
            "cumulative": {"promptTokens": 1000 * calls, "outputTokens": 20 * calls, "totalTokens": 1020 * calls,
                           "cost": {"usd": round(0.0125 * calls, 6), "partial": False}}})

    def finish(self, session_id: str, turn_id: str, items: list[dict[str, Any]], terminal: dict[str, Any]) -> None:
        with self.state_lock:
            record = self.store.get(session_id)
            if record is not None:
                record["items"].extend(items)
                record["session"]["turnCount"] += 1
                record["session"].setdefault("firstUserPrompt", items[0]["text"] if items else "")
                record["lastTurn"] = {"turnId": turn_id, **terminal}
                self.store.put(record)
            self.running.pop(session_id, None)
            self.waiters.pop(turn_id, None)
            waiting = self.queued.get(session_id) or []
            queued = waiting.pop(0) if waiting else None
            if queued is not None:
                self.running[session_id] = {"turnId": queued[0]}
        params = {**self.view(session_id), "turnId": turn_id, **terminal, "durationMs": 5}
        if terminal["terminal"] == "completed":
            params["usage"] = {"cachedTokens": 0, "inputTokens": 1200, "outputTokens": 20, "reasoningTokens": 5}
        self.notify("turn/completed", params)
        if queued is not None:
            queued[1].start()

    # -- the loop ----------------------------------------------------------------------------------------------

    def serve(self) -> int:
        pid_file = os.environ.get("MUSE_FAKE_PIDS")
        if pid_file:
            with open(pid_file, "a") as handle:
                handle.write(f"{os.getpid()}\n")
        key = os.environ.get("META_API_KEY")
        LOG.write("spawn", argv=sys.argv, cwd=os.getcwd(),
                  key=hashlib.sha256(key.encode()).hexdigest()[:16] if key else None)
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self.send({"id": None, "error": {"code": -32700, "message": "parse error", "data": {"kind": "parseError"}}})
                continue
            LOG.write("recv", frame=message)
            if "method" not in message:
                continue  # the client's receipts for our server requests
            self.pending_start = None
            self.handle(message)
            if self.pending_start is not None:
                self.pending_start.start()
        LOG.write("eof")
        return 0


def login(argv: list[str]) -> int:
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "muse"
    LOG.write("cli", argv=argv)
    if argv[0] == "login":
        config.mkdir(parents=True, exist_ok=True)
        (config / "auth.json").write_text(json.dumps({"token": "fake-login-token-0123456789"}))
        print("Signed in to Muse Code.")
    else:
        (config / "auth.json").unlink(missing_ok=True)
        print("Signed out of Muse Code.")
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--version"]:
        print("muse 0.0.0-fake (tests/fakes/muse_host.py)")
        return 0
    if argv[:1] == ["serve"]:
        return Host().serve()
    if argv[:1] in (["login"], ["logout"]):
        return login(argv)
    print("usage: muse serve | login | logout", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
