"""`SessionTable`: the one shape of a runtime's open sessions, whose lookup of an id it does not
hold is `SessionNotFound` (the core's -32002), never a `KeyError` (an internal error)."""

from __future__ import annotations

import pytest

from acp_agent.provider import SessionNotFound, SessionTable


def test_a_missing_id_is_session_not_found_and_the_rest_is_a_dict() -> None:
    table: SessionTable[int] = SessionTable()
    table["open"] = 1
    with pytest.raises(SessionNotFound) as missing:
        table["closed"]
    assert str(missing.value) == "closed"
    assert (table["open"], table.get("closed"), "closed" in table, table.pop("closed", None)) == (1, None, False, None)
    assert isinstance(table, dict) and not isinstance(missing.value, KeyError)
