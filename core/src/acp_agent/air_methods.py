"""JetBrains AIR's own session methods: the session index (`_session/batch_get`, rename,
archive, the list subscription), the goal (`_session/goal`), the stop of a background task
(`_session/async_task/stop`) and codex's hooks."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from acp_agent.prompt_methods import PromptMethods
from acp_agent.wire import acp
from acp_agent.wire.acp import MethodNames as M
from acp_agent.wire.convert import clip
from acp_agent.wire.rpc import INVALID_PARAMS, METHOD_NOT_FOUND, Reply, RpcError

if TYPE_CHECKING:  # a session's machinery loads with the first session, after `initialize`
    from acp_agent.sessions.index import SessionIndex


class AirMethods(PromptMethods):
    """AIR's `_session/*` index methods, `_session/goal` and `_codex/hooks/*` (each answers
    method-not-found to a client that did not declare its capability)."""

    def _index_for(self, method: str) -> SessionIndex:
        """The index, for a client that declared `sessionIndex`; method-not-found for another."""
        from acp_agent.sessions.index import not_offered

        index = self.session_index
        if index is None:
            raise not_offered(method)
        return index

    async def batch_get_sessions(self, params: Any) -> Any:
        """`_session/batch_get {sessionIds}` → `{sessions}`: the rows of the ids the backend (or
        this process) knows, in any directory and archive state; unknown ids are left out."""
        from acp_agent.sessions.index import session_ids_param

        index = self._index_for(M.SESSION_BATCH_GET)
        ids = session_ids_param(params)
        async with self._provider_call(M.SESSION_BATCH_GET):
            return await index.batch_get(ids, self._dump)

    async def rename_session(self, params: Any) -> Any:
        """`_session/rename {sessionId, title}`: as `session/set_title`, answered `{}`."""
        from acp_agent.sessions.index import session_id_param

        self._index_for(M.SESSION_RENAME)
        session_id = session_id_param(params, M.SESSION_RENAME)
        title = params.get("title")
        if not isinstance(title, str):
            raise RpcError(INVALID_PARAMS, "title must be a non-empty string", {"field": "title"})
        await self._retitle(session_id, title, M.SESSION_RENAME)
        return {}

    async def archive_session(self, params: Any) -> Any:
        return await self._set_archived(params, M.SESSION_ARCHIVE, True)

    async def unarchive_session(self, params: Any) -> Any:
        return await self._set_archived(params, M.SESSION_UNARCHIVE, False)

    async def _set_archived(self, params: Any, method: str, archived: bool) -> Any:
        """`_session/archive` / `_session/unarchive {sessionId}`: idempotent; the session need not
        be open (one open here stays open and is told `_meta.jetbrains.air.archived`); an id
        neither the backend nor this process knows is not found."""
        from acp_agent.agent_base import session_not_found
        from acp_agent.sessions.index import session_id_param

        index = self._index_for(method)
        session_id = session_id_param(params, method)
        async with self._provider_call(method):
            found = (await index.find([session_id], self._dump)).get(session_id)
            if found is None:
                raise session_not_found(session_id)
            if found["_meta"]["jetbrains"]["air"]["archived"] != archived:
                if self.provider.capabilities.archive_sessions:
                    runtime = await self.runtime()
                    await runtime.archive_session(session_id, archived)
                else:
                    index.store.set_archived(session_id, archived)
        session = self.sessions.get(session_id)
        if session is not None:
            await session.send_update(acp.SessionInfoUpdate(
                meta={"jetbrains": {"air": {"version": 1, "archived": archived}}}))
        index.changed()
        return {}

    async def subscribe_session_list(self, params: Any) -> Any:
        """`_session/list/subscribe {cwd}` → `{subscriptionId}`; `_session/list/changes` follow."""
        index = self._index_for(M.SESSION_LIST_SUBSCRIBE)
        cwd = params.get("cwd") if isinstance(params, dict) else None
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise RpcError(INVALID_PARAMS, "params require an absolute cwd", {"field": "cwd"})
        assert self._task_group is not None
        async with self._provider_call(M.SESSION_LIST_SUBSCRIBE):
            return {"subscriptionId": await index.subscribe(cwd, self._dump, self._task_group)}

    async def unsubscribe_session_list(self, params: Any) -> Any:
        index = self._index_for(M.SESSION_LIST_UNSUBSCRIBE)
        subscription_id = params.get("subscriptionId") if isinstance(params, dict) else None
        if not isinstance(subscription_id, str):
            raise RpcError(INVALID_PARAMS, "params require a subscriptionId", {"field": "subscriptionId"})
        index.unsubscribe(subscription_id)
        return {}

    async def goal(self, params: Any) -> Any:
        """`_session/goal {sessionId, action, objective?}` → `{}`: run in the session's line as the
        prompt `/goal <objective>` (`/goal pause`, `/goal resume`, `/goal clear`), the backend's
        own goal command, as claude-agent-acp runs it; answered once that turn has ended. The
        snapshot reaches the client as `session_info_update` with `_meta.jetbrains.air.goal`."""
        if not self.outbox.features.goal:
            raise _not_offered(M.SESSION_GOAL)
        actions = self.provider.capabilities.goal_actions
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "goal params must be an object")
        session_id, action, objective = params.get("sessionId"), params.get("action"), params.get("objective")
        if not isinstance(session_id, str) or not session_id:
            raise RpcError(INVALID_PARAMS, "goal params require a non-empty sessionId", {"field": "sessionId"})
        if action not in actions:
            raise RpcError(INVALID_PARAMS, "goal action must be one of " + ", ".join(f'"{a}"' for a in actions),
                           {"field": "action"})
        if action == "set":
            if not isinstance(objective, str) or not objective.strip():
                raise RpcError(INVALID_PARAMS, 'goal action "set" requires a non-empty objective',
                               {"field": "objective"})
            if len(objective.strip()) > MAX_GOAL_OBJECTIVE:
                raise RpcError(INVALID_PARAMS, f"goal objective is longer than {MAX_GOAL_OBJECTIVE} characters",
                               {"field": "objective"})
        session = await self._opened(session_id)
        command = f"/goal {objective.strip()}" if isinstance(objective, str) and action == "set" else f"/goal {action}"
        result = await self._queued_prompt(session, [acp.TextContent(command)])
        return Reply({}, result.on_written) if isinstance(result, Reply) else {}

    async def stop_async_task(self, params: Any) -> Any:
        """`_session/async_task/stop {sessionId, asyncTaskId}` → `{stopped}` (claude-agent-acp's
        answer): the task is stopped through the backend and the running turn, if any, goes on;
        `{stopped: false}` for a task that already ended (or whose stop is under way). A session
        this agent does not hold, or a task the session never reported, is invalid (-32602)."""
        if not self.outbox.features.async_tasks:
            raise _not_offered(M.SESSION_ASYNC_TASK_STOP)
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "async task stop params must be an object")
        ids = {}
        for name in ("sessionId", "asyncTaskId"):
            value = params.get(name)
            if not isinstance(value, str) or not value.strip():
                raise RpcError(INVALID_PARAMS, f"async task stop params require a non-empty {name}", {"field": name})
            ids[name] = value.strip()
        session_id, task_id = ids["sessionId"], ids["asyncTaskId"]
        if session_id not in self.sessions:
            raise RpcError(INVALID_PARAMS, f"Unknown session: {clip(session_id)}", {"field": "sessionId"})
        async with self._provider_call(M.SESSION_ASYNC_TASK_STOP):
            runtime = await self.runtime()
            stopped = await runtime.stop_async_task(session_id, task_id)
        if stopped is None:
            raise RpcError(INVALID_PARAMS, f"Unknown async task: {clip(task_id)}", {"field": "asyncTaskId"})
        return {"stopped": stopped}

    async def list_hooks(self, params: Any) -> Any:
        """`_codex/hooks/list {cwd}` → `{cwd, hooks, warnings, errors}` (codex-acp's)."""
        cwd = self._hooks_cwd(M.CODEX_HOOKS_LIST, params)
        async with self._provider_call(M.CODEX_HOOKS_LIST):
            runtime = await self.runtime()
            return dict(await runtime.list_hooks(cwd))

    async def trust_hooks(self, params: Any) -> Any:
        """`_codex/hooks/trust {cwd, hooks: [{key, currentHash}]}` → `{trusted}`."""
        cwd = self._hooks_cwd(M.CODEX_HOOKS_TRUST, params)
        hooks = params.get("hooks")
        if not isinstance(hooks, list) or not hooks or not all(
                isinstance(hook, dict) and all(isinstance(hook.get(key), str) and hook[key]
                                               for key in ("key", "currentHash")) for hook in hooks):
            raise RpcError(INVALID_PARAMS, "hooks must be a non-empty array of {key, currentHash} strings",
                           {"field": "hooks"})
        requested = [{"key": hook["key"], "currentHash": hook["currentHash"]} for hook in hooks]
        async with self._provider_call(M.CODEX_HOOKS_TRUST):
            runtime = await self.runtime()
            return {"trusted": await runtime.trust_hooks(cwd, requested)}

    def _hooks_cwd(self, method: str, params: Any) -> str:
        if not self.outbox.features.codex_hooks:
            raise _not_offered(method)
        cwd = params.get("cwd") if isinstance(params, dict) else None
        if not isinstance(cwd, str) or not os.path.isabs(cwd.strip()):
            raise RpcError(INVALID_PARAMS, "params require an absolute cwd", {"field": "cwd"})
        return cwd.strip()


MAX_GOAL_OBJECTIVE = 4000
"""The longest objective codex-acp's `/goal` takes."""


def _not_offered(method: str) -> RpcError:
    """-32601 for an AIR method the client did not declare, as for a method the agent lacks."""
    return RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")


