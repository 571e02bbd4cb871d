"""Secrets stay off the wire, whichever frame carries them (`acp-agent --provider scripted`).

The scripted provider echoes a prompt's text and replays stored history, so a value the agent
holds as a secret can be made to come back in a session update; the client must see the mask.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import schema

from tests.e2e.harness import AgentProcess, spawn_agent
from tests.e2e.test_scripted_e2e import script_env, text_prompt

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]
MASK = "[REDACTED]"
SECRETS = {
    "new-env": "postgres://app:new-env-pw-4242@db.internal/app",
    "new-header": "Bearer new-header-token-9a8b7c",
    "load-env": "load-env-secret-31337",
    "resume-header": "resume-header-secret-2718",
    "fork-env": "fork-env-secret-1618",
    "environment": "sk-env-secret-var-5551212",
}


def stdio_server(name: str, value: str) -> schema.McpServerStdio:
    return schema.McpServerStdio(name=name, command="/bin/true", args=[],
                                 env=[schema.EnvVariable(name="ANY_NAME_AT_ALL", value=value)])


def http_server(name: str, value: str) -> schema.HttpMcpServer:
    return schema.HttpMcpServer(name=name, url="http://127.0.0.1:9/mcp", type="http",
                                headers=[schema.HttpHeader(name="Authorization", value=value)])


def agent_text(agent: AgentProcess, session_id: str) -> str:
    return "".join(u["content"]["text"] for u in agent.frames.updates(session_id)
                   if u["sessionUpdate"] == "agent_message_chunk")


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_mcp_env_and_header_values_and_env_secrets_never_reach_the_client(
        tmp_path: Path, capable: bool) -> None:
    script: dict[str, Any] = {"history": {"stored-1": [
        {"user": "what was the password?"}, {"agent": f"It was {SECRETS['load-env']}."}]}}
    env = {**script_env(tmp_path, script), "SCRIPTED_DEPLOY_TOKEN": SECRETS["environment"]}
    async with spawn_agent("scripted", tmp_path, env) as agent:
        await agent.initialize(capable=capable)
        new = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=[
            stdio_server("db", SECRETS["new-env"]), http_server("api", SECRETS["new-header"])])
        await agent.conn.prompt(session_id=new.session_id, prompt=text_prompt(
            f"db {SECRETS['new-env']} api {SECRETS['new-header']} env {SECRETS['environment']}"))
        await agent.conn.load_session(cwd=str(tmp_path), session_id="stored-1",
                                      mcp_servers=[stdio_server("db", SECRETS["load-env"])])
        loaded_history = agent_text(agent, "stored-1")
        await agent.conn.resume_session(session_id="stored-1", cwd=str(tmp_path),
                                        mcp_servers=[http_server("api", SECRETS["resume-header"])])
        await agent.conn.prompt(session_id="stored-1", prompt=text_prompt(f"resumed {SECRETS['resume-header']}"))
        fork = await agent.conn.fork_session(session_id=new.session_id, cwd=str(tmp_path),
                                             mcp_servers=[stdio_server("db", SECRETS["fork-env"])])
        await agent.conn.prompt(session_id=fork.session_id, prompt=text_prompt(f"forked {SECRETS['fork-env']}"))
    assert agent_text(agent, new.session_id) == f"db {MASK} api {MASK} env {MASK}"
    assert loaded_history == f"It was {MASK}."  # replayed history: held before the replay began
    assert agent_text(agent, "stored-1") == f"It was {MASK}.resumed {MASK}"
    assert agent_text(agent, fork.session_id) == f"forked {MASK}"
    wire = json.dumps(agent.frames.incoming, ensure_ascii=False)
    assert not [name for name, value in SECRETS.items() if value in wire]
    assert not [name for name, value in SECRETS.items() if value in agent.log_text()]
    assert agent.frames.problems == []


async def test_plain_mcp_values_are_not_secrets_so_output_and_protocol_stay_whole(tmp_path: Path) -> None:
    """A word, a number or a path given to an MCP server is configuration: masking `error` or
    `text` would break every error response and every text block, a path every file location."""
    plain = {"LOG_LEVEL": "error", "FORMAT": "text", "PORT": "8080", "WORKDIR": str(tmp_path)}
    rate = {"kind": "rate_limited", "native_kind": "rate_limit", "title": "API Error: 429 rate limited"}
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, {"turns": [[{"fail": rate}]]})) as agent:
        await agent.initialize(capable=False)
        server = schema.McpServerStdio(name="tools", command="/bin/true", args=[], env=[
            *(schema.EnvVariable(name=name, value=value) for name, value in plain.items()),
            schema.EnvVariable(name="API_TOKEN", value="text-but-named-a-token")])
        session = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=[server])
        with pytest.raises(acp.RequestError) as failed:
            await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("one"))
        echoed = " ".join(plain.values()) + " text-but-named-a-token"
        await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt(echoed))
    # The baseline message is the vendor text, then the recovery sentence (issue 9, item 7).
    assert failed.value.code == -32603 and str(failed.value).startswith(rate["title"] + ". ")
    assert agent_text(agent, session.session_id) == " ".join(plain.values()) + f" {MASK}"
    assert agent.frames.problems == []
