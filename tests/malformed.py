"""Wrong-typed backend input for the translators' table tests (issue 25, item 3).

`mutations` yields a backend message with one field (at any depth) replaced by a value of
another type; `acp_problems` says which of a translator's steps a client could not read (each
checked against the ACP SDK's schema). A translator given any mutation must neither raise nor
produce an update that is not ACP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from acp import schema

from acp_agent.backends.events import TerminalExited, TerminalOutput, TerminalStarted
from acp_agent.wire.acp import make_acp_converter

WRONG: tuple[Any, ...] = (5, -3, True, None, "x", [1], {"a": 1}, [{"a": 1}])
"""Values of every JSON type, and numbers a count or an id must not be."""

_CONVERTER = make_acp_converter()

Path = tuple[str | int, ...]


def mutations(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """`value` with one field (or list entry), at any depth, replaced by each of `WRONG`."""
    if isinstance(value, dict):
        for key, inner in value.items():
            for wrong in WRONG:
                yield (*path, key), {**value, key: wrong}
            for where, changed in mutations(inner, (*path, key)):
                yield where, {**value, key: changed}
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            for wrong in WRONG:
                yield (*path, index), [*value[:index], wrong, *value[index + 1:]]
            for where, changed in mutations(inner, (*path, index)):
                yield where, [*value[:index], changed, *value[index + 1:]]


def shape(path: Path) -> tuple[str, ...]:
    """A path without its list indexes: one table row per field, not per entry."""
    return tuple(part for part in path if isinstance(part, str))


def acp_problems(steps: Iterable[Any]) -> list[str]:
    """The updates among `steps` (a terminal's as clients without terminals see it) that the ACP
    schema rejects."""
    problems = []
    for step in steps:
        update = (step.call if isinstance(step, TerminalStarted) else step.update if isinstance(step, TerminalExited)
                  else step.legacy if isinstance(step, TerminalOutput) else step)
        if not hasattr(update, "session_update"):
            continue
        try:
            schema.SessionNotification.model_validate({"sessionId": "s", "update": _CONVERTER.unstructure(update)})
        except ValueError as exc:
            problems.append(f"{type(update).__name__}: {exc}")
    return problems


def problems_of(label: str, base: Any, run: Callable[[Any], list[Any]]) -> list[str]:
    """Each mutation of `base` run through `run`: what raised or is not ACP (one row per field)."""
    found, seen = [], set()
    for where, changed in mutations(base):
        if shape(where) in seen:
            continue
        seen.add(shape(where))
        try:
            problems = acp_problems(run(changed))
        except Exception as exc:
            problems = [f"raised {type(exc).__name__}: {exc}"]
        found.extend(f"{label} {'.'.join(map(str, where))}: {problem}" for problem in problems)
    return found
