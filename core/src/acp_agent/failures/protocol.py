"""The sessionFailure extension (negotiation, record, policy, identity, recovery) and baseline data.

Owns everything DESIGN §4–§5 says about failures; knows nothing of any vendor. Providers describe
what they observed as a `FailureObservation`; this module decides how it is presented.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from attrs import define, field

from acp_agent.failures.redaction import MAX_LENGTH, Redactor
from acp_agent.wire.records import frozen

EXTENSION = "sessionFailure"
RECORD_VERSION = 1
TITLE_LIMIT = 256


class FailureKind(enum.StrEnum):
    AUTH_REQUIRED = "auth_required"
    ACCESS_DENIED = "access_denied"
    QUOTA_EXHAUSTED = "quota_exhausted"
    RATE_LIMITED = "rate_limited"
    BUDGET_EXHAUSTED = "budget_exhausted"
    CONTEXT_EXHAUSTED = "context_exhausted"
    BAD_REQUEST = "bad_request"
    POLICY_DENIED = "policy_denied"
    OVERLOADED = "overloaded"
    PROVIDER_ERROR = "provider_error"
    INTERNAL_ERROR = "internal_error"
    TRANSPORT_LOST = "transport_lost"
    WORKER_SHUTDOWN = "worker_shutdown"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    ADVISORY = "advisory"


class Category(enum.StrEnum):
    CONNECTION = "connection"
    ACCESS = "access"
    LIMIT = "limit"
    REQUEST = "request"
    SERVICE = "service"
    UNKNOWN = "unknown"


class Action(enum.StrEnum):
    RETRY = "retry"
    LOGIN = "login"
    NEW_SESSION = "new_session"


class Recovery(enum.Enum):
    """Which later evidence ends an incident's active state (internal, never serialized)."""

    MODEL_ANSWER = "model_answer"
    AUTH_CONFIRMED = "auth_confirmed"
    RUNTIME_REPLACED = "runtime_replaced"
    ATTEMPT_BOUNDARY = "attempt_boundary"
    NEVER = "never"


@frozen
class Policy:
    category: Category
    actions: tuple[Action, ...]
    fallback_title: str
    recovery: Recovery
    recovery_hint: str


_R, _L, _N = (Action.RETRY,), (Action.LOGIN,), (Action.NEW_SESSION,)

POLICY: Mapping[FailureKind, Policy] = {
    FailureKind.AUTH_REQUIRED: Policy(Category.ACCESS, _L, "Authentication is required.", Recovery.AUTH_CONFIRMED,
                                      "Sign in or configure credentials, then try again."),
    FailureKind.ACCESS_DENIED: Policy(Category.ACCESS, _R, "Access was denied.", Recovery.ATTEMPT_BOUNDARY,
                                      "Check that the credentials are valid and allowed to use this model."),
    FailureKind.QUOTA_EXHAUSTED: Policy(Category.LIMIT, (), "The account's usage limit has been reached.",
                                        Recovery.MODEL_ANSWER, "Check the account's usage limits before trying again."),
    FailureKind.RATE_LIMITED: Policy(Category.LIMIT, _R, "The request was rate limited.", Recovery.ATTEMPT_BOUNDARY,
                                     "Wait a moment before trying again."),
    FailureKind.BUDGET_EXHAUSTED: Policy(Category.LIMIT, _N, "The session's budget is exhausted.",
                                         Recovery.ATTEMPT_BOUNDARY, "Start a new session or raise the budget."),
    FailureKind.CONTEXT_EXHAUSTED: Policy(Category.LIMIT, _N, "The conversation has reached its context limit.",
                                          Recovery.ATTEMPT_BOUNDARY, "Start a new session to continue."),
    FailureKind.BAD_REQUEST: Policy(Category.REQUEST, (), "The request was rejected as invalid.",
                                    Recovery.ATTEMPT_BOUNDARY, "Check the prompt, model and settings before trying again."),
    FailureKind.POLICY_DENIED: Policy(Category.REQUEST, (), "The request was declined by policy.",
                                      Recovery.ATTEMPT_BOUNDARY, "Rephrase the request before trying again."),
    FailureKind.OVERLOADED: Policy(Category.SERVICE, _R, "The service is overloaded.", Recovery.ATTEMPT_BOUNDARY,
                                   "Wait a moment before trying again."),
    FailureKind.PROVIDER_ERROR: Policy(Category.SERVICE, _R, "The provider reported an error.",
                                       Recovery.ATTEMPT_BOUNDARY, "Check the session before trying again."),
    FailureKind.INTERNAL_ERROR: Policy(Category.SERVICE, _R, "The agent hit an internal error.",
                                       Recovery.ATTEMPT_BOUNDARY, "Reload the session and check its state before trying again."),
    FailureKind.TRANSPORT_LOST: Policy(Category.CONNECTION, _N, "The connection to the backend was lost.",
                                       Recovery.RUNTIME_REPLACED,
                                       "Reload and inspect the session before deciding to submit again."),
    FailureKind.WORKER_SHUTDOWN: Policy(Category.CONNECTION, _N, "The backend is shutting down.",
                                        Recovery.RUNTIME_REPLACED, "Start a new session."),
    FailureKind.DEADLINE_EXCEEDED: Policy(Category.CONNECTION, _N, "The backend did not answer in time.",
                                          Recovery.ATTEMPT_BOUNDARY,
                                          "Check the backend's availability and the named deadline before trying again."),
    FailureKind.ADVISORY: Policy(Category.UNKNOWN, (), "The backend reported a warning.", Recovery.NEVER, ""),
}

Severity = Literal["warning", "error"]
Source = Literal["host", "provider", "transport", "adapter"]
Outcome = Literal["failed", "unknown"]
Execution = Literal["notSubmitted", "possiblySubmitted"]


# --- negotiation -------------------------------------------------------------------------------


def negotiated(client_meta: Any) -> bool:
    """Whether `clientCapabilities._meta` asks for sessionFailure, with the strict rules of DESIGN §4."""
    if not isinstance(client_meta, Mapping):
        return False
    jetbrains = client_meta.get("jetbrains")
    air = jetbrains.get("air") if isinstance(jetbrains, Mapping) else None
    if not isinstance(air, Mapping):
        return False
    version = air.get("version")
    if isinstance(version, bool) or not isinstance(version, int | float):
        return False
    if not math.isfinite(version) or version != int(version) or version < 1:
        return False
    capabilities = air.get("capabilities")
    return isinstance(capabilities, list) and EXTENSION in capabilities


SESSION_INDEX = "sessionIndex"
INDEX_ADVERTISED = (SESSION_INDEX, "sessionBatchGet", "sessionArchive", "sessionRename", "sessionListSubscribe")
"""What the agent advertises to a client that declared AIR's session index
(`acp_agent.sessions.index`; claude-agent-acp's list without `sessionWorktrees`: acp-agent makes
no worktrees)."""


def index_declared(client_meta: Any) -> bool:
    """Whether `clientCapabilities._meta.jetbrains.air.capabilities` lists `sessionIndex` (here,
    not in the index's module, which `initialize` does not need)."""
    return SESSION_INDEX in declared_air(client_meta)


def declared_air(client_meta: Any) -> frozenset[str]:
    """The AIR capabilities `clientCapabilities._meta` lists in `jetbrains.air.capabilities`."""
    jetbrains = client_meta.get("jetbrains") if isinstance(client_meta, Mapping) else None
    air = jetbrains.get("air") if isinstance(jetbrains, Mapping) else None
    listed = air.get("capabilities") if isinstance(air, Mapping) else None
    return frozenset(name for name in listed if isinstance(name, str)) if isinstance(listed, list) else frozenset()


def advertised_meta(*more: str) -> dict[str, Any]:
    """The initialize response's `_meta` for a capable client: this extension and the other AIR
    capabilities (`more`) this agent serves for its provider."""
    return {"jetbrains": {"air": {"version": RECORD_VERSION, "capabilities": [EXTENSION, *more]}}}


# --- the record -------------------------------------------------------------------------------


@frozen
class FailureRecord:
    """The wire record at `_meta.jetbrains.air.sessionFailure`; no other fields, ever."""

    id: str
    revision: int
    category: Category
    severity: Severity
    title: str
    actions: tuple[Action, ...]
    details: str | None = None

    def to_wire(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "id": self.id,
            "revision": self.revision,
            "category": str(self.category),
            "severity": self.severity,
            "title": self.title,
        }
        if self.details:
            record["details"] = self.details
        record["actions"] = [str(action) for action in self.actions]
        return record

    def to_meta(self) -> dict[str, Any]:
        return {"jetbrains": {"air": {"version": RECORD_VERSION, EXTENSION: self.to_wire()}}}


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_title(text: str) -> tuple[str, str | None]:
    """The complete text as title when it fits; else its first sentence and the rest as details."""
    text = text.strip()
    if len(text) <= TITLE_LIMIT:
        return text, None
    parts = _SENTENCE_END.split(text, maxsplit=1)
    if len(parts) == 2 and len(parts[0]) <= TITLE_LIMIT:
        return parts[0], parts[1].strip() or None
    cut = text.rfind(" ", 0, TITLE_LIMIT - 1)
    cut = cut if cut > TITLE_LIMIT // 2 else TITLE_LIMIT - 1
    return text[:cut].rstrip() + "…", text[cut:].strip()


# --- observations -----------------------------------------------------------------------------


@frozen
class FailureObservation:
    """What a provider observed: a neutral kind, the vendor's own text and the baseline evidence.

    `native_kind` is the backend's own name for the failure (shown to baseline clients as
    `data.failure.kind`); `native_data` are provider fields placed beside `failure` in `data`.
    """

    kind: FailureKind
    native_kind: str
    title: str | None = None
    source: Source = "provider"
    outcome: Outcome = "failed"
    execution: Execution | None = None
    phase: str | None = None
    retryable: bool | None = None
    mutation_possibly_applied: bool = False
    recovery_hint: str | None = None
    category: Category | None = None
    native_data: Mapping[str, Any] = field(factory=dict)

    @property
    def policy(self) -> Policy:
        return POLICY[self.kind]

    def presented_title(self, redact: Redactor) -> tuple[str, str | None]:
        text = redact(self.title) if self.title and self.title.strip() else self.policy.fallback_title
        return split_title(text)


def baseline_error_data(observation: FailureObservation, redact: Redactor) -> dict[str, Any]:
    """`error.data` for a client without the extension: `failure` plus the provider's native fields."""
    failure: dict[str, Any] = {"kind": observation.native_kind, "source": observation.source}
    if observation.retryable is not None:
        failure["retryable"] = observation.retryable
    failure["outcome"] = observation.outcome
    failure["recovery"] = recovery_text(observation)
    if observation.phase is not None:
        failure["phase"] = observation.phase
    if observation.execution is not None:
        failure["execution"] = observation.execution
    if observation.mutation_possibly_applied:
        failure["mutation"] = "possiblyApplied"
    data: dict[str, Any] = redact.data(dict(observation.native_data))  # keys too: a key can carry a secret
    data["failure"] = redact.data(failure)
    return data


def baseline_error_code(observation: FailureObservation) -> int:
    return -32000 if observation.kind is FailureKind.AUTH_REQUIRED else -32603


def recovery_text(observation: FailureObservation) -> str:
    """The one sentence telling the user what to inspect before trying again."""
    return observation.recovery_hint or observation.policy.recovery_hint


def baseline_error_message(observation: FailureObservation, redact: Redactor) -> str:
    """The JSON-RPC error message: the failure, then the recovery (spec/004), bounded.

    A client without the extension may show nothing but this text, so it names what failed, says
    when no model turn was submitted, and ends with the recovery sentence that is also in
    `data.failure.recovery`. A long vendor text is cut so the recovery always survives the bound.
    """
    title, details = observation.presented_title(redact)
    message = f"{title} {details}" if details else title
    if observation.execution == "notSubmitted" and "no model turn" not in message.lower():
        message = f"{_sentence(message)} No model turn was submitted."
    recovery = redact(recovery_text(observation))
    if not recovery or recovery in message:
        return redact(message)
    room = MAX_LENGTH - len(recovery) - 2
    message = redact(message)
    if len(message) > room:
        message = message[: room - 1].rstrip() + "…"
    return f"{_sentence(message)} {recovery}"


def _sentence(text: str) -> str:
    """Text that ends as a sentence, so another sentence can follow it."""
    text = text.rstrip()
    return text if not text or text[-1] in ".!?…" else f"{text}."


# --- identity and the registry ------------------------------------------------------------------


@define
class Incident:
    id: str
    revision: int
    severity: Severity
    recovery: Recovery
    active: bool = True
    title: str = ""


class RecoverySignal(enum.Enum):
    ATTEMPT_BOUNDARY = "attempt_boundary"
    MODEL_ANSWER = "model_answer"
    AUTH_CONFIRMED = "auth_confirmed"
    RUNTIME_REPLACED = "runtime_replaced"


_ENDS: Mapping[RecoverySignal, frozenset[Recovery]] = {
    RecoverySignal.ATTEMPT_BOUNDARY: frozenset({Recovery.ATTEMPT_BOUNDARY}),
    RecoverySignal.MODEL_ANSWER: frozenset({Recovery.ATTEMPT_BOUNDARY, Recovery.MODEL_ANSWER, Recovery.AUTH_CONFIRMED}),
    RecoverySignal.AUTH_CONFIRMED: frozenset({Recovery.AUTH_CONFIRMED}),
    RecoverySignal.RUNTIME_REPLACED: frozenset({Recovery.RUNTIME_REPLACED}),
}


@define
class IncidentRegistry:
    """Per-session incident state: ids, published revisions, and internal recovery.

    A record is prepared with the next revision but only `commit`ted (revision used, incident
    active) once the frame carrying it was written.
    """

    session_id: str
    epoch: str
    incidents: dict[str, Incident] = field(factory=dict)
    _session_seq: int = 0
    _notice_seq: int = 0
    _last_notice: tuple[str, str] | None = None

    def turn_incident_id(self, turn_id: str) -> str:
        """The turn's current incident: `<turnId>:error`, or, once that recovered, the next one.

        A recovered incident is never reused (spec/000: a later independent occurrence gets a new
        id), so a failure after the turn's retry recovered is `<turnId>:error:2`, and so on.
        """
        base = incident_id = f"{turn_id}:error"
        occurrence = 1
        while (known := self.incidents.get(incident_id)) is not None and not known.active:
            occurrence += 1
            incident_id = f"{base}:{occurrence}"
        return incident_id

    def history_incident_id(self, user_message_id: str | None, message_id: str) -> str:
        if user_message_id:
            return f"{user_message_id}:error"
        return f"{self.session_id}:history-error:{message_id}"

    def new_session_incident_id(self) -> str:
        self._session_seq += 1
        return f"{self.session_id}:session-error:{self.epoch}:{self._session_seq}"

    def notice_id(self, text: str) -> str:
        """A consecutive identical notice reuses the last id; anything else gets a fresh one."""
        if self._last_notice is not None and self._last_notice[1] == text:
            return self._last_notice[0]
        self._notice_seq += 1
        notice = f"{self.session_id}:notice:{self.epoch}:{self._notice_seq}"
        self._last_notice = (notice, text)
        return notice

    def interrupt_notice_run(self) -> None:
        """Something else happened on the transcript: the next notice is an independent occurrence."""
        self._last_notice = None

    def prepare(
        self,
        incident_id: str,
        kind: FailureKind,
        severity: Severity,
        title: str,
        details: str | None,
        category: Category | None = None,
    ) -> FailureRecord:
        published = self.incidents.get(incident_id)
        revision = published.revision + 1 if published else 1
        policy = POLICY[kind]
        actions: tuple[Action, ...] = () if kind is FailureKind.ADVISORY or severity == "warning" else policy.actions
        return FailureRecord(
            id=incident_id,
            revision=revision,
            category=category or policy.category,
            severity="warning" if kind is FailureKind.ADVISORY else severity,
            title=title,
            details=details,
            actions=actions,
        )

    def commit(self, record: FailureRecord, kind: FailureKind, *, active: bool = True) -> None:
        self.incidents[record.id] = Incident(
            record.id, record.revision, record.severity, POLICY[kind].recovery, active, record.title
        )

    def signal(self, signal: RecoverySignal) -> list[str]:
        """Apply recovery evidence; returns the ids that stopped being active. Never edits a record."""
        ended = []
        for incident in self.incidents.values():
            if incident.active and incident.recovery in _ENDS[signal]:
                incident.active = False
                ended.append(incident.id)
        return ended

    def active_ids(self) -> list[str]:
        return [incident.id for incident in self.incidents.values() if incident.active]
