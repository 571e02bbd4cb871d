"""A session's turns: a turn starts, takes the provider's neutral events, ends and publishes.

Data goes one way: the provider emits into a `Turn` (or, between turns, its `Session`); the fold
(`Session.take`) turns each neutral event into ACP updates and failure records with the session's
incidents; the `Outbox` writes them to the client. When the turn ends, `Turn.finish` records the
auth observation, sends the auth status and answers the prompt with the turn's record (or the
baseline error). Nothing here calls back into the agent, which only starts turns and routes
methods.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

import anyio
import attrs
import cattrs
from attrs import define, field

from acp_agent.backends.contract import SessionStart
from acp_agent.backends.events import (
    AttemptBoundary,
    AuthConfirmed,
    Event,
    HistoryFailure,
    Notice,
    OfSubagent,
    PlanFileCall,
    Presented,
    RetryProgress,
    RuntimeReplaced,
    SessionFailure,
    SubagentFinished,
    SubagentLaunch,
    SubagentStarted,
    TurnUsage,
    is_model_answer,
)
from acp_agent.backends.questions import Answer, Question, UrlQuestion
from acp_agent.failures.auth_status import (
    AuthObservation,
    AuthStatusFeed,
    CredentialState,
    auth_status_key,
    turn_status,
)
from acp_agent.failures.protocol import (
    FailureKind,
    FailureObservation,
    FailureRecord,
    IncidentRegistry,
    RecoverySignal,
    baseline_error_code,
    baseline_error_data,
    baseline_error_message,
    split_title,
)
from acp_agent.failures.redaction import Redactor
from acp_agent.failures.scrub import StreamScrubber
from acp_agent.gateways import GatewayRoute
from acp_agent.sessions import switches
from acp_agent.sessions.choices import KeptChoices
from acp_agent.sessions.file_changes import ChangedFiles, report_update
from acp_agent.sessions.presentation import ClientFeatures, Presenter, plan_review_request
from acp_agent.sessions.questions import AskingTurn, ask
from acp_agent.sessions.routing import SessionRouter
from acp_agent.sessions.subagents import SubagentTable
from acp_agent.wire import acp
from acp_agent.wire.acp import MethodNames as M
from acp_agent.wire.convert import UNSET
from acp_agent.wire.rpc import ClientLink, ConnectionClosed, Reply, RpcError

log = logging.getLogger(__name__)

PERMISSION_TIMEOUT_S = 3600.0

_SUBAGENT_EVENTS = (SubagentStarted, SubagentFinished, SubagentLaunch, OfSubagent)
_SIGNALS: dict[type, RecoverySignal] = {
    AttemptBoundary: RecoverySignal.ATTEMPT_BOUNDARY,
    RuntimeReplaced: RecoverySignal.RUNTIME_REPLACED,
    AuthConfirmed: RecoverySignal.AUTH_CONFIRMED,
}


def baseline_error(observation: FailureObservation, redact: Redactor) -> RpcError:
    """The JSON-RPC error a client without the extension gets for a failure (DESIGN §5)."""
    return RpcError(baseline_error_code(observation), baseline_error_message(observation, redact),
                    baseline_error_data(observation, redact))


@define(eq=False)
class Outbox:
    """The client as negotiated: where session updates, failure records and permission asks go.

    The agent fills in the connection when it serves and the negotiated flags at `initialize`.
    """

    converter: cattrs.Converter
    redact: Redactor
    provider_name: str
    credentials: Callable[[], Awaitable[CredentialState]]
    """The agent's configured credentials (environment, keyring, stored), resolved when asked."""
    session_env_vars: Collection[str] = ()
    """Variables that, handed over for one session, make its credentials `clientProvider`."""
    connection: ClientLink | None = None
    """The client's connection, or its ACP v2 translation (`acp_agent.v2`)."""
    capable: bool = False
    auth_status: bool = False
    auth_feed: AuthStatusFeed = field(factory=AuthStatusFeed)
    """The agent's `auth/status` feed: a turn's verdict on the credentials may change it."""
    features: ClientFeatures = field(factory=ClientFeatures)
    """Terminals and elicitation as the client declared them (`acp_agent.sessions.presentation`)."""
    choices: KeptChoices = field(factory=KeptChoices)  # what the user chose, by session id
    _held: dict[str, tuple[Any, str]] = field(factory=dict, init=False)
    """Per session, the text chunk being streamed and its tail held back (`stream_text`)."""
    _streams: StreamScrubber = field(init=False, default=attrs.Factory(
        lambda self: StreamScrubber(self.redact), takes_self=True))

    def dump(self, value: Any) -> Any:
        return self.converter.unstructure(value)

    async def send_update(self, session_id: str, update: Any, *, wait: bool = False) -> bool:
        if session_id in self._held:
            await self.flush_text(session_id)
        return await self._write(session_id, update, wait)

    async def _write(self, session_id: str, update: Any, wait: bool) -> bool:
        if self.connection is None:
            return False
        params = {"sessionId": session_id, "update": self.dump(update)}
        return await self.connection.notify(M.SESSION_UPDATE, params, wait_written=wait)

    async def stream_text(self, session_id: str, chunk: Any) -> None:
        """A text chunk of a running turn's message or thought, scrubbed with the chunks before it
        as one text (`acp_agent.failures.scrub.StreamScrubber`), so a secret split across them is masked.

        What could still begin a secret is held back, at most one character less than the longest
        secret, and goes out before anything else is written for the session: the next chunk of
        another stream (kind or `_meta`), any other update, a request to the client, the turn's
        answer (`flush_text`). Without secrets nothing is held.
        """
        streams = self._streams
        held = self._held.pop(session_id, None)
        if held is None and not streams.active:
            await self._write(session_id, chunk, False)
            return
        template, text = held if held is not None else (None, "")
        content = chunk.content
        if template is not None and template != attrs.evolve(chunk, content=attrs.evolve(content, text="")):
            await self._write(session_id, _with_text(template, streams.end(text)), False)
            text = ""
        out, text = streams.feed(text, content.text)
        if text:
            self._held[session_id] = (attrs.evolve(chunk, content=attrs.evolve(content, text="")), text)
        if out == content.text:
            await self._write(session_id, chunk, False)
        elif out:
            await self._write(session_id, _with_text(chunk, out), False)

    async def flush_text(self, session_id: str) -> None:
        """The text `stream_text` holds for the session, if any, goes out now."""
        held = self._held.pop(session_id, None)
        if held is not None:
            template, text = held
            await self._write(session_id, _with_text(template, self._streams.end(text)), False)

    async def publish(self, session: Session, record: FailureRecord, kind: FailureKind, *,
                      active: bool = True) -> None:
        """Send a record as session_info_update; it counts only once the write succeeded."""
        update = acp.SessionInfoUpdate(meta=record.to_meta())
        written = await self.send_update(session.session_id, update, wait=True)
        committed(session.incidents, record, kind, written, active=active)

    async def send_auth_status(self, session: Session) -> None:
        """After a turn: the session's `<provider>/authStatus` (a client that negotiated it) and
        an `auth/status_update` when the turn changed what `auth/status` would answer."""
        self.auth_feed.turn_ended(session.auth)
        await self.push_auth_status()
        if not self.auth_status:
            return
        status = turn_status(await session.credential_state(), session.auth)
        await self.send_update(session.session_id,
                               acp.SessionInfoUpdate(meta={auth_status_key(self.provider_name): status}))

    async def push_auth_status(self) -> None:
        """`auth/status_update`, to a client that asked `auth/status`, and `_auth/status_update`,
        to an AIR client, when what they were told changed."""
        feed = self.auth_feed
        if self.connection is None or (feed.last is None and not feed.air):
            return
        state = await self.credentials()
        update = feed.update(state)
        if update is not None:
            await self.connection.notify(M.AUTH_STATUS_UPDATE, update)
        pushed = feed.air_update(state)
        if pushed is not None:
            await self.connection.notify(M.AIR_AUTH_STATUS_UPDATE, pushed)

    async def request_permission(
        self, session_id: str, tool_call: acp.ToolCallUpdate | PlanFileCall,
        options: Sequence[acp.PermissionOption], turn: AskingTurn | None,
    ) -> str | None:
        """`session/request_permission`: the option the user picked, None if there was no answer
        (or the turn was cancelled). A plan review is asked about as the client sees it."""
        await self.flush_text(session_id)
        if isinstance(tool_call, PlanFileCall):
            tool_call = plan_review_request(tool_call, self.features)
        fields = acp.ToolCallFields(**{a.name: getattr(tool_call, a.name) for a in attrs.fields(acp.ToolCallFields)})
        params = self.dump(acp.RequestPermissionRequest(session_id, fields, list(options)))
        answer = await self.client_request(M.REQUEST_PERMISSION, params, turn, timeout_s=PERMISSION_TIMEOUT_S)
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        if isinstance(outcome, dict) and outcome.get("outcome") == "selected":
            option_id = outcome.get("optionId")
            valid = {option.option_id for option in options}
            return option_id if option_id in valid else None
        return None

    async def client_request(self, method: str, params: Any, turn: AskingTurn | None, *, timeout_s: float) -> Any:
        """A request to the client that `session/cancel` of its turn withdraws: its answer, None
        when there is none (an error, the deadline, a cancel, no client)."""
        if self.connection is None or (turn is not None and turn.cancel_requested):
            return None
        with anyio.CancelScope() as scope:
            if turn is not None:
                turn.permission_scopes.add(scope)
            try:
                return await self.connection.request(method, params, timeout_s=timeout_s)
            except (RpcError, ConnectionClosed, TimeoutError) as exc:
                log.info("%s ended without an answer: %s", method, type(exc).__name__)
                return None
            finally:
                if turn is not None:
                    turn.permission_scopes.discard(scope)
        return None  # withdrawn


def _with_text(chunk: Any, text: str) -> Any:
    return attrs.evolve(chunk, content=attrs.evolve(chunk.content, text=text))


def _text_chunk(event: object) -> bool:
    """A chunk of the agent's message or thought text (streamed: `Outbox.stream_text`)."""
    return (getattr(event, "session_update", None) in _STREAMED
            and getattr(getattr(event, "content", None), "type", None) == "text")


_STREAMED = frozenset({"agent_message_chunk", "agent_thought_chunk"})


def committed(incidents: IncidentRegistry, record: FailureRecord, kind: FailureKind, written: bool, *,
              active: bool = True) -> None:
    """A record's revision is used (and its incident known) only once the frame was written."""
    if written:
        incidents.commit(record, kind, active=active)
    else:
        log.warning("failure record %s revision %d was not delivered", record.id, record.revision)


class _OfSession:
    """What a channel tells its provider about the session it serves, read from the session
    itself (never a copy that could go stale when the session changes)."""

    __slots__ = ()
    session: Session

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def credentials(self) -> dict[str, str]:
        return self.session.credentials

    @property
    def additional_directories(self) -> tuple[str, ...]:
        return self.session.additional_directories

    @property
    def gateways(self) -> Mapping[str, GatewayRoute]:
        return self.session.gateways

    @property
    def custom_instructions(self) -> str | None:
        return self.session.custom_instructions

    @property
    def recommended_values(self) -> bool:
        return self.session.outbox.features.recommended_value

    @property
    def subagent_sessions(self) -> bool:
        return self.session.outbox.features.subagent_form is not None

    @property
    def background_subagents(self) -> bool:
        return self.session.outbox.features.background_subagents


@define(eq=False)
class Turn(_OfSession):
    """One running prompt. The first failure recorded wins over everything that follows."""

    session: Session
    turn_id: str
    failure: FailureObservation | None = None
    cancel_requested: bool = False
    retry_published: bool = False
    permission_scopes: set[anyio.CancelScope] = field(factory=set)
    run_scope: anyio.CancelScope | None = None
    backend_done: bool = False
    """The provider's prompt has returned: the backend's turn is over (or was ended by force)."""
    usage: TurnUsage | None = None
    """The tokens the backend said the turn used (its last report)."""
    file_changes: ChangedFiles | None = None
    """AIR's `agentFileChangeReport`: the prompt asked for the files this turn changes."""

    def record_failure(self, observation: FailureObservation) -> None:
        if self.failure is None:
            self.failure = observation

    def adopt_turn_id(self, backend_turn_id: str) -> bool:
        """Take the backend's own turn id, so stored history later replays under the same incident id.

        Only before anything of this turn was published: an id already on the wire never changes.
        """
        if self.retry_published or not backend_turn_id:
            return False
        self.turn_id = backend_turn_id
        return True

    async def emit(self, event: Event) -> None:
        await self.session.take(event, self)

    async def request_permission(
        self, tool_call: acp.ToolCallUpdate | PlanFileCall, options: Sequence[acp.PermissionOption]
    ) -> str | None:
        return await self.session.ask_permission(tool_call, options, self)

    async def ask(self, question: Question | UrlQuestion) -> Answer:
        await self.session.outbox.flush_text(self.session_id)  # the text before the question first
        return await ask(self.session.outbox, self.session_id, question, self)

    def end(self) -> None:
        """The provider's turn is over: the session takes the next prompt."""
        self.backend_done = True
        self.run_scope = None
        self.session.turn = None

    async def finish(self, stop_reason: acp.StopReason) -> Any:
        """The prompt's answer: auth observation and status first, then the result with the
        turn's failure record (capable clients) or the baseline error (raised)."""
        session, outbox = self.session, self.session.outbox
        for update in session.presenter.turn_ended(outbox.features):
            await session.send_update(update)
        await session.children_ended(self, cancelled=stop_reason == "cancelled")
        failure = self.failure
        if self.file_changes is not None:
            changes = self.file_changes
            report = (changes.unavailable("providerError") if failure is not None
                      else changes.unavailable("cancelled") if stop_reason == "cancelled"
                      else changes.report(session.cwd, session.additional_directories))
            await session.send_update(report_update(report))
        if failure is None:
            if stop_reason != "cancelled":
                session.auth.turn_succeeded()
                session.incidents.signal(RecoverySignal.ATTEMPT_BOUNDARY)
            await outbox.send_auth_status(session)
            return outbox.dump(acp.PromptResponse(stop_reason=stop_reason, usage=_usage(self.usage)))
        redact = outbox.redact
        session.auth.turn_failed(failure, baseline_error_data(failure, redact)["failure"])
        await outbox.send_auth_status(session)
        if not outbox.capable:
            raise baseline_error(failure, redact)
        title, details = failure.presented_title(redact)
        incidents = session.incidents
        record = incidents.prepare(incidents.turn_incident_id(self.turn_id), failure.kind, "error", title, details,
                                   failure.category)
        incidents.interrupt_notice_run()
        response = outbox.dump(acp.PromptResponse(stop_reason="end_turn", usage=_usage(self.usage),
                                                  meta=record.to_meta()))
        kind = failure.kind
        return Reply(response, lambda ok: committed(incidents, record, kind, ok))


@define(eq=False)
class Session:
    """One ACP session and its per-session state (incidents, auth observations)."""

    outbox: Outbox
    session_id: str
    cwd: str
    incidents: IncidentRegistry
    router: SessionRouter
    """The agent's one router: what the session gets between turns passes it (and its backlog)."""
    auth: AuthObservation = field(factory=AuthObservation)
    turn: Turn | None = None
    credentials: dict[str, str] = field(factory=dict)
    additional_directories: tuple[str, ...] = ()
    gateways: Mapping[str, GatewayRoute] = field(factory=dict)
    """The client's gateway routing as the session was opened (`acp_agent.gateways`): it keeps it."""
    custom_instructions: str | None = None
    """AIR's `customInstructions` (`acp_agent.sessions.instructions`): the backend runs with them."""
    modes: acp.SessionModeState | None = None
    """What the session advertised: the core checks modes and option values against it (`choices`)."""
    config_options: Sequence[acp.ConfigOption] = ()
    presenter: Presenter = field(factory=Presenter)
    file_change_requests: set[str] = field(factory=set)
    """The `agentFileChangeReportRequest` ids its prompts sent: each is answered once."""
    subagents: SubagentTable = field(factory=SubagentTable)
    """The session's child sessions (`acp_agent.sessions.subagents`)."""
    cost: acp.Cost | None = None
    """What the session has cost so far, as its last `usage_update` said (AIR's index row)."""

    def advertise(self, start: SessionStart) -> None:
        self.modes = start.modes
        self.config_options = tuple(start.config_options or ())

    async def credential_state(self) -> CredentialState:
        if any(name in self.outbox.session_env_vars for name in self.credentials):
            return CredentialState(True, "clientProvider")
        return await self.outbox.credentials()

    def start_turn(self, turn_id: str) -> Turn:
        turn = Turn(self, turn_id)
        self.turn = turn
        return turn

    async def emit(self, event: Event) -> None:
        """Through the router: in order with what the runtime emits for this session by its id."""
        await self.router.emit(self.session_id, event)

    async def deliver(self, event: Event) -> None:
        """The router's sink for this session: into the running turn, if any."""
        await self.take(event, self.turn)

    async def request_permission(
        self, tool_call: acp.ToolCallUpdate | PlanFileCall, options: Sequence[acp.PermissionOption]
    ) -> str | None:
        return await self.ask_permission(tool_call, options, self.turn)

    async def ask_permission(self, tool_call: acp.ToolCallUpdate | PlanFileCall,
                             options: Sequence[acp.PermissionOption], turn: Turn | None) -> str | None:
        """`session/request_permission` in the session that showed the call (`asked_in`); None,
        asking nothing, for a subagent's call the client was never shown (`SubagentTable.unseen`)."""
        call_id = (tool_call.update if isinstance(tool_call, PlanFileCall) else tool_call).tool_call_id
        if call_id in self.subagents.unseen:
            return None
        return await self.outbox.request_permission(self.asked_in(tool_call), tool_call, options, turn)

    def asked_in(self, tool_call: acp.ToolCallUpdate | PlanFileCall) -> str:
        """The session a permission request for `tool_call` goes to: a running child's, for a
        call it showed (`SubagentTable.running_owner`), else this one."""
        call_id = (tool_call.update if isinstance(tool_call, PlanFileCall) else tool_call).tool_call_id
        return self.subagents.running_owner(call_id, self.outbox.features.subagent_form) or self.session_id

    async def send_update(self, update: Any) -> None:
        await self.outbox.send_update(self.session_id, update)

    async def open(self) -> None:
        """Once the client knows the session: what was kept for it, in order, then the rest live."""
        await self.router.open(self.session_id, self.deliver)

    async def take(self, event: Event, turn: Turn | None) -> None:
        """Fold one neutral event into ACP updates and failure records (`turn`: the running one)."""
        outbox, incidents = self.outbox, self.incidents
        redact = outbox.redact
        signal = _SIGNALS.get(type(event))
        if signal is not None:
            incidents.signal(signal)
            return
        if isinstance(event, TurnUsage):
            if turn is not None:
                turn.usage = event
            return
        if isinstance(event, RetryProgress):
            if turn is None:
                return
            if outbox.capable:
                record = incidents.prepare(incidents.turn_incident_id(turn.turn_id), event.kind, "warning",
                                           *split_title(redact(event.title)), event.category)
                await outbox.publish(self, record, event.kind)
                turn.retry_published = True
            return
        if isinstance(event, Notice):
            title = redact(event.title)
            if outbox.features.notices:
                description = redact(event.details) if event.details else UNSET
                await self.send_update(acp.NoticeUpdate(event.severity, title, description))
            elif outbox.capable:
                text = f"{title}\n{event.details}" if event.details else title
                record = incidents.prepare(incidents.notice_id(text), FailureKind.ADVISORY, "warning", title,
                                           redact(event.details) if event.details else None)
                await outbox.publish(self, record, FailureKind.ADVISORY)
            elif event.legacy_text is not None:
                await self.send_update(acp.AgentMessageChunk(acp.TextContent(redact(event.legacy_text))))
            return
        if isinstance(event, SessionFailure):
            observation = event.observation
            if outbox.capable:
                title, details = observation.presented_title(redact)
                record = incidents.prepare(incidents.new_session_incident_id(), observation.kind, "error", title,
                                           details, observation.category)
                await outbox.publish(self, record, observation.kind)
            else:
                log.warning("session %s failure outside a turn: %s", self.session_id, observation.native_kind)
            return
        if isinstance(event, HistoryFailure):
            await self._replay_failure(event)
            return
        if isinstance(event, Presented):  # rendered for what the client declared, then as updates
            for update in self.presenter.render(event, outbox.features, outbox.capable):
                await self.take(update, turn)
            return
        if isinstance(event, _SUBAGENT_EVENTS):  # the parent's own, or a child session's
            for target, shown in self.subagents.route(event, outbox.features.subagent_form):
                if target is None:
                    await self.take(shown, turn)
                else:
                    await self._take_child(target, shown, turn)
            return
        if isinstance(event, acp.ToolCallUpdate) and (child := self.subagents.running_owner(
                event.tool_call_id, outbox.features.subagent_form)) is not None:
            await self._take_child(child, event, turn)  # (the allowed call of a child's permission request)
            return
        incidents.interrupt_notice_run()
        if turn is not None and is_model_answer(event):
            # A live model answer is the attempt boundary after a retry (and ends quota and auth
            # incidents); providers need not say so. Replayed history carries its own recovery.
            incidents.signal(RecoverySignal.MODEL_ANSWER)
        if isinstance(event, acp.ConfigOptionUpdate):
            # what the client now sees offered, as the runtime offers it
            self.config_options = tuple(o for o in event.config_options if isinstance(o, acp.ConfigOption))
            features = outbox.features
            if features.boolean_options or features.recommended_value:
                event = attrs.evolve(event, config_options=switches.shown(
                    event.config_options, features.boolean_options, features.recommended_value))
        elif isinstance(event, acp.CurrentModeUpdate):  # (e.g. a plan approved with a mode to go on in)
            outbox.choices.chose(self.session_id, ("mode", ""), event.current_mode_id)
        elif isinstance(event, acp.UsageUpdate) and isinstance(event.cost, acp.Cost):
            self.cost = event.cost
        if turn is not None and _text_chunk(event):
            await outbox.stream_text(self.session_id, event)  # a secret split across chunks: masked
            return
        if isinstance(event, acp.ToolCall | acp.ToolCallUpdate):
            if turn is not None and turn.file_changes is not None:
                turn.file_changes.take(event)
            if outbox.features.diff_patch and event.patches:
                from acp_agent.sessions.patches import with_patches

                event = with_patches(event)
        await self.send_update(event)

    async def _take_child(self, child_id: str, event: Any, turn: Turn | None) -> None:
        """An update of the child session `child_id` (a `Presented` event rendered for it first)."""
        outbox = self.outbox
        if isinstance(event, Presented):
            for update in self.subagents.presenter(child_id).render(event, outbox.features, outbox.capable):
                await self._take_child(child_id, update, turn)
            return
        if turn is not None and _text_chunk(event):
            await outbox.stream_text(child_id, event)  # a secret split across chunks: masked
            return
        await outbox.send_update(child_id, event)

    async def children_ended(self, turn: Turn | None, *, cancelled: bool) -> None:
        """The turn is over: what its children's text streams hold goes out, and a cancelled
        turn ends its children as the client's form says (`SubagentTable.cancelled`)."""
        for child_id in self.subagents.child_ids():
            await self.outbox.flush_text(child_id)
        if cancelled:
            for target, shown in self.subagents.cancelled(self.outbox.features.subagent_form):
                if target is None:
                    await self.take(shown, turn)
                else:
                    await self._take_child(target, shown, turn)

    async def _replay_failure(self, event: HistoryFailure) -> None:
        if not self.outbox.capable:
            for update in event.legacy_updates:
                await self.send_update(update)
            return
        if not event.typed:
            return
        incidents = self.incidents
        observation = event.observation
        title, details = observation.presented_title(self.outbox.redact)
        incident_id = incidents.history_incident_id(event.user_message_id, event.message_id)
        record = incidents.prepare(incident_id, observation.kind, "error", title, details, observation.category)
        await self.outbox.publish(self, record, observation.kind, active=event.active)


@define(eq=False)
class LoadingSession(_OfSession):
    """Channel for a session being loaded or resumed: the history it replays is the answer to the
    request and is written as it comes; what the router keeps for the session follows, before the
    answer. A provider that keeps this channel reaches the session through the router afterwards."""

    session: Session
    loaded: bool = False

    async def emit(self, event: Event) -> None:
        if self.loaded:
            await self.session.emit(event)
        else:
            await self.session.deliver(event)

    async def request_permission(
        self, tool_call: acp.ToolCallUpdate | PlanFileCall, options: Sequence[acp.PermissionOption]
    ) -> str | None:
        return await self.session.request_permission(tool_call, options)


@define(eq=False)
class PendingSession:
    """Channel for a session the provider is still creating, whose id is not known yet: its events
    wait in the router under a provisional key, which becomes the session's once it exists.

    Once the session exists, a provider that kept this channel reaches the session through it.
    """

    router: SessionRouter
    credentials: dict[str, str] = field(factory=dict)
    additional_directories: tuple[str, ...] = ()
    gateways: Mapping[str, GatewayRoute] = field(factory=dict)
    fork_at: str | None = None
    """The message a fork branches at (`backends.contract.fork_at`)."""
    custom_instructions: str | None = None
    """AIR's `customInstructions` the new session runs with (`backends.contract.custom_instructions`)."""
    recommended_values: bool = False
    """The client shows recommended values (`backends.contract.recommends_values`)."""
    session_id: str = ""
    target: Session | None = None
    key: str = field(init=False)

    def __attrs_post_init__(self) -> None:
        self.key = self.router.provisional_key()

    def bind(self, session: Session) -> None:
        self.router.rekey(self.key, session.session_id)
        self.session_id = session.session_id
        self.target = session

    def abandon(self) -> None:
        """The provider did not create the session: what it emitted is dropped."""
        self.router.forget(self.key)

    async def emit(self, event: Event) -> None:
        if self.target is not None:
            await self.target.emit(event)
        else:
            await self.router.emit(self.key, event)

    async def request_permission(
        self, tool_call: acp.ToolCallUpdate | PlanFileCall, options: Sequence[acp.PermissionOption]
    ) -> str | None:
        if self.target is not None:
            return await self.target.request_permission(tool_call, options)
        return None


__all__ = ["PERMISSION_TIMEOUT_S", "LoadingSession", "Outbox", "PendingSession", "Session", "Turn", "baseline_error"]


def _usage(usage: TurnUsage | None) -> acp.Usage | Any:
    """`PromptResponse.usage` from the turn's last report (UNSET: none)."""
    if usage is None:
        return UNSET
    optional = [usage.thought_tokens, usage.cached_read_tokens, usage.cached_write_tokens]
    total = usage.total_tokens
    if total is None:
        total = usage.input_tokens + usage.output_tokens + sum(value or 0 for value in optional)
    return acp.Usage(total, usage.input_tokens, usage.output_tokens,
                     *(UNSET if value is None else value for value in optional))
