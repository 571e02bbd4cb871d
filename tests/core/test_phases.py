"""Deadlines from the environment and the phase clock."""

from __future__ import annotations

import anyio
import pytest

from acp_agent.backends.phases import DeadlineConfigError, Deadlines, Phase, PhaseClock, PhaseDeadlineExceeded


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5", "", "2147483648", " "])
def test_bad_values_name_the_variable(value: str) -> None:
    with pytest.raises(DeadlineConfigError, match="ACP_AGENT_SUBMIT_TIMEOUT_MS"):
        Deadlines.from_environment({"ACP_AGENT_SUBMIT_TIMEOUT_MS": value})


def test_defaults_and_aliases() -> None:
    assert Deadlines.from_environment({}) == Deadlines(120_000, 30_000, 20_000, 20_000)
    aliases = {"ACP_AGENT_STARTUP_TIMEOUT_MS": ("MUSE_CODE_ACP_STARTUP_TIMEOUT_MS",)}
    assert Deadlines.from_environment({"MUSE_CODE_ACP_STARTUP_TIMEOUT_MS": "2147483647"}, aliases).startup_ms == 2147483647
    assert Deadlines.from_environment({"ACP_AGENT_STARTUP_TIMEOUT_MS": "5",
                                       "MUSE_CODE_ACP_STARTUP_TIMEOUT_MS": "9"}, aliases).startup_ms == 5


@pytest.mark.anyio
@pytest.mark.timeout(10)
@pytest.mark.parametrize(("phase", "execution", "outcome"), [
    (Phase.INITIALIZING, "notSubmitted", "failed"),
    (Phase.PREPARING, "notSubmitted", "failed"),
    (Phase.SUBMITTING, "possiblySubmitted", "unknown"),
    (Phase.READING, "notSubmitted", "failed"),
])
async def test_overrun_raises_deadline_observation(phase: Phase, execution: str, outcome: str) -> None:
    clock = PhaseClock(Deadlines(startup_ms=20, submit_ms=20, read_ms=20), "Backend")
    with pytest.raises(PhaseDeadlineExceeded) as caught:
        async with clock.phase(phase):
            await anyio.sleep_forever()
    observation = caught.value.observation
    assert (observation.native_kind, observation.source) == ("deadlineExceeded", "adapter")
    assert (observation.phase, observation.execution, observation.outcome) == (phase.value, execution, outcome)
    assert "20 ms" in (observation.title or "")


@pytest.mark.anyio
async def test_running_has_no_timer() -> None:
    clock = PhaseClock(Deadlines(startup_ms=1), "Backend")
    async with clock.phase(Phase.RUNNING):
        await anyio.sleep(0.01)
