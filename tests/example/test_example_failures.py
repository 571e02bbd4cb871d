"""The guide's example reports failures the way the guide says: a failed turn, a missing model program."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.backends.contract import ProviderSpec
from acp_agent.backends.plugins import discover
from acp_agent.testing import kit_environ, run_in_process
from acp_agent.wire.rpc import RpcError

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def example() -> ProviderSpec:
    loaded = discover().get("example")
    assert loaded is not None, "acp-agent-example is not installed (tests/example_provider)"
    return loaded.spec


async def test_a_failed_turn_is_one_error_record_for_a_capable_client(tmp_path: Path) -> None:
    async with run_in_process(example(), environ=kit_environ({})) as client:
        await client.initialize(capable=True)
        session_id = await client.new_session(str(tmp_path))
        result = await client.prompt(session_id, "fail")
        after = await client.prompt(session_id, "still here")
    assert result["stopReason"] == "end_turn"  # the capable client's failure is the record, not an error
    [record] = client.failure_records(session_id)
    assert record["category"] == "service" and record["severity"] == "error"
    assert record["title"] == "The echo model is overloaded; try again later."
    assert after["stopReason"] == "end_turn"


async def test_a_failed_turn_is_the_baseline_error_for_a_legacy_client(tmp_path: Path) -> None:
    async with run_in_process(example(), environ=kit_environ({})) as client:
        await client.initialize(capable=False)
        session_id = await client.new_session(str(tmp_path))
        with pytest.raises(RpcError) as caught:
            await client.prompt(session_id, "fail")
    assert caught.value.data["failure"]["kind"] == "overloaded"
    assert "The echo model is overloaded" in str(caught.value)


async def test_a_missing_model_program_is_said_in_words_at_session_new(tmp_path: Path) -> None:
    missing = tmp_path / "no-python"
    assert example().check_backend().usable
    async with run_in_process(example(), environ=kit_environ({"EXAMPLE_MODEL_PYTHON": str(missing)})) as client:
        await client.initialize(capable=False)
        with pytest.raises(RpcError) as caught:
            await client.new_session(str(tmp_path))
    assert str(caught.value).startswith(f"Example could not be started: the echo model's Python was not found at {missing}.")
    assert caught.value.data["failure"]["kind"] == "modelNotFound"
