"""What the user chose for each session, kept by the core for the agent process's life.

`session/set_mode` and `session/set_config_option` are checked here against what the session
advertised (a runtime never sees a mode or value it did not offer), and each accepted choice is
remembered by session id. When that id is resumed or loaded again in this process (after a
`session/close`, or while open), or forked, the core hands the choices to the runtime's own
`set_mode` and `set_config_option` once the session is open, in the order they were last made,
before the client gets its answer: the session runs with them again, and its answer shows them.
A runtime keeps nothing of a closed session. A choice the reopened session does not offer (a
model gone, an effort its model lacks) is left out, as is one the runtime refuses (logged).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from attrs import evolve

from acp_agent.wire.convert import clip
from acp_agent.wire.rpc import INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from acp_agent.backends.contract import ProviderRuntime, SessionStart
    from acp_agent.wire.acp import ConfigOption, SessionModeState

log = logging.getLogger(__name__)
Key = tuple[Literal["mode", "option"], str]


def check_mode(modes: SessionModeState | None, mode_id: str,
               why_not: Callable[[str], str | None] | None = None) -> None:
    """-32602 for a mode the session does not offer (`why_not`: the runtime's reason, if any)."""
    offered = [mode.id for mode in modes.available_modes] if modes is not None else []
    if mode_id not in offered:
        why = why_not(mode_id) if why_not is not None else None
        said = f"Mode {clip(mode_id)!r} is not available: {why}" if why else f"Unknown mode {clip(mode_id)!r}"
        raise RpcError(INVALID_PARAMS, f"{said}; {_choices(offered)}", {"field": "modeId"})


def check_option(options: Sequence[ConfigOption], config_id: str, value: str) -> None:
    """-32602 naming the field for an option, or a value of it, the session does not offer."""
    option = next((option for option in options if option.id == config_id), None)
    if option is None:
        raise RpcError(INVALID_PARAMS, f"Unknown config option {clip(config_id)!r}; "
                       f"{_choices([option.id for option in options])}", {"field": "configId"})
    values = [choice.value for choice in option.options]
    if value not in values:
        raise RpcError(INVALID_PARAMS, f"Unknown value {clip(value)!r} for {clip(option.name)}; "
                       f"{_choices(values)}", {"field": "value"})


def _choices(offered: Sequence[str]) -> str:
    """The end of an "unknown mode/option/value" message: what the session does offer."""
    if not offered:
        return "this session offers none."
    return "choose one of " + ", ".join(clip(choice) for choice in offered[:20]) + (
        ", …" if len(offered) > 20 else "") + "."


class KeptChoices:
    """The modes and option values the user chose, by session id (the last one per option)."""

    def __init__(self) -> None:
        self._made: dict[str, dict[Key, str]] = {}

    def chose(self, session_id: str, key: Key, value: str) -> None:
        made = self._made.setdefault(session_id, {})
        made.pop(key, None)  # in the order they were last made: a replay ends where the user did
        made[key] = value

    def forget(self, session_id: str) -> None:
        """The session was deleted: nothing of it comes back."""
        self._made.pop(session_id, None)

    async def reapply(self, runtime: ProviderRuntime, start: SessionStart, of: str) -> SessionStart:
        """`start` (a session the runtime just opened: `of` resumed or loaded, or forked from `of`)
        once the choices made for `of` are applied to it; a fork keeps them as its own."""
        made = dict(self._made.get(of, {}))
        if not made:
            return start
        if start.session_id != of:
            self._made[start.session_id] = dict(made)
        modes, options = start.modes, list(start.config_options or ())
        for (kind, key), value in made.items():
            try:
                if kind == "mode":
                    check_mode(modes, value)
                    await runtime.set_mode(start.session_id, value)
                    assert modes is not None  # (it offers the mode)
                    modes = evolve(modes, current_mode_id=value)
                else:
                    check_option(options, key, value)
                    options = list(await runtime.set_config_option(start.session_id, key, value))
            except RpcError:
                log.info("session %s no longer offers the %s chosen for it", start.session_id, kind)
            except Exception as exc:
                log.warning("applying the %s chosen for session %s failed: %s", kind, start.session_id,
                            type(exc).__name__)
        return evolve(start, modes=modes, config_options=options if start.config_options is not None else None)
