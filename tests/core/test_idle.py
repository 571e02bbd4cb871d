"""`acp_agent.backends.idle`: the release-time variable's one reader and the idle release task."""

from __future__ import annotations

import time

import anyio
import pytest

from acp_agent.backends.idle import IdleRelease, count_setting, idle_release_s

pytestmark = pytest.mark.timeout(30)
VAR = "ACP_AGENT_X_IDLE_RELEASE_MS"


@pytest.mark.parametrize(("raw", "expected"), [
    (None, 60.0), ("", 60.0), (" 2500 ", 2.5), ("0", None), ("-5", 60.0), ("soon", 60.0), ("1.5", 60.0)])
def test_the_variable_is_milliseconds_zero_is_never_and_anything_else_the_default(
        raw: str | None, expected: float | None) -> None:
    environ = {} if raw is None else {VAR: raw}
    assert idle_release_s(environ, VAR, default_ms=60_000) == expected


@pytest.mark.parametrize(("raw", "expected"), [(None, 32), ("", 32), (" 4 ", 4), ("0", None), ("-1", 32), ("x", 32)])
def test_a_bound_is_a_count_zero_is_none_and_anything_else_the_default(raw: str | None, expected: int | None) -> None:
    assert count_setting({} if raw is None else {VAR: raw}, VAR, default=32) == expected


@pytest.mark.anyio
async def test_what_is_due_is_released_and_what_is_in_use_is_not() -> None:
    released: list[str] = []
    done = anyio.Event()
    in_use = {"busy"}
    last_used = {"due": time.monotonic() - 10, "busy": time.monotonic() - 10}

    def release(name: str) -> None:
        released.append(name)
        last_used.pop(name)
        done.set()

    idle = IdleRelease(1.0, lambda: ((n, t) for n, t in last_used.items() if n not in in_use), release)
    async with anyio.create_task_group() as tg:
        tg.start_soon(idle.run)
        with anyio.fail_after(5):
            await done.wait()
        idle.stop()
    assert released == ["due"]


@pytest.mark.anyio
async def test_touched_wakes_the_task_before_the_release_time_it_was_sleeping_for() -> None:
    """An item that becomes due while the task sleeps for the full release time is released at
    once when the task is touched (here the full time is far beyond the test's deadline)."""
    released, scanned = anyio.Event(), anyio.Event()
    last_used: dict[str, float] = {}

    def idle_since() -> list[tuple[str, float]]:
        scanned.set()
        return list(last_used.items())

    idle = IdleRelease(3600.0, idle_since, lambda name: released.set())
    async with anyio.create_task_group() as tg:
        tg.start_soon(idle.run)
        with anyio.fail_after(5):
            await scanned.wait()  # the task scanned (nothing idle) and sleeps for the full time
        last_used["session"] = time.monotonic() - 7200
        idle.touched()
        with anyio.fail_after(5):
            await released.wait()
        idle.stop()


@pytest.mark.anyio
async def test_never_releases_and_returns_at_once() -> None:
    idle = IdleRelease(None, lambda: [("x", 0.0)], lambda name: pytest.fail("released"))
    with anyio.fail_after(5):
        await idle.run()


@pytest.mark.anyio
async def test_a_background_stop_sets_its_event_once_it_ends_even_by_an_error() -> None:
    from acp_agent.backends.idle import stop_in_background

    release = anyio.Event()

    async def stop() -> None:
        await release.wait()
        raise OSError("the process was gone already")

    failed = []
    try:
        async with anyio.create_task_group() as group:
            stopped = stop_in_background(group, stop)
            await anyio.wait_all_tasks_blocked()
            assert not stopped.is_set()
            release.set()
            with anyio.fail_after(5):
                await stopped.wait()
    except* OSError as group_error:
        failed.append(group_error)
    assert failed, "the stop's error reaches the task group"
    assert stopped.is_set()
