"""Authentication from Python: a host mixing in :class:`acp_facade.Authenticator`, served in-process
over a pair of asyncio streams and driven by the official ACP Python client."""

from __future__ import annotations

from typing import List

import pytest
from acp import RequestError

import acp_facade
from acp_facade import Agent, AuthMethod, Authenticator, Options
from conftest import run
from test_host import EchoHost, connect


class AuthHost(EchoHost, Authenticator):
    """An echo host behind a token login; the `broken` method refuses with a custom code."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: List[str] = []

    def auth_methods(self) -> List[AuthMethod]:
        return [AuthMethod("token", "API token", "Use the stored token"), AuthMethod("broken", "Always fails")]

    async def authenticate(self, method_id: str) -> None:
        self.calls.append(method_id)
        if method_id == "broken":
            raise acp_facade.AcpError(-32042, "the token store is locked")


class LogoutHost(AuthHost):
    async def logout(self) -> None:
        self.calls.append("logout")


async def expect_error(code: int, call: object) -> RequestError:
    with pytest.raises(RequestError) as info:
        await call  # type: ignore[misc]
    assert info.value.code == code, info.value
    return info.value


def test_authentication_gates_sessions_and_logout_restores_the_gate() -> None:
    async def body() -> None:
        host = LogoutHost()
        async with connect(Agent(Options(host))) as conn:
            init = conn.init_response  # type: ignore[attr-defined]
            methods = [(m.id, m.name, m.description) for m in init.auth_methods]
            assert methods == [("token", "API token", "Use the stored token"), ("broken", "Always fails", None)]
            assert init.agent_capabilities.auth.logout is not None

            await expect_error(-32000, conn.new_session(cwd="/tmp", mcp_servers=[]))
            await expect_error(-32602, conn.authenticate(method_id="nope"))
            error = await expect_error(-32042, conn.authenticate(method_id="broken"))
            assert "locked" in str(error)
            await expect_error(-32000, conn.new_session(cwd="/tmp", mcp_servers=[]))

            await conn.authenticate(method_id="token")
            assert (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id

            await conn._conn.send_request("logout", {})
            await expect_error(-32000, conn.new_session(cwd="/tmp", mcp_servers=[]))
            assert host.calls == ["broken", "token", "logout"]

    run(body)


def test_no_logout_and_no_requirement() -> None:
    class OptionalAuth(AuthHost):
        def requires_authentication(self) -> bool:
            return False

    async def body() -> None:
        async with connect(Agent(Options(OptionalAuth()))) as conn:
            init = conn.init_response  # type: ignore[attr-defined]
            assert [m.id for m in init.auth_methods] == ["token", "broken"]
            auth = init.agent_capabilities.auth
            assert auth is None or auth.logout is None
            assert (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            await expect_error(-32601, conn._conn.send_request("logout", {}))

    run(body)


def test_auth_hooks_have_the_right_kind() -> None:
    class SyncAuthenticate(EchoHost):
        def auth_methods(self) -> List[AuthMethod]:
            return []

        def authenticate(self, method_id: str) -> None:
            return None

    class AsyncRequires(AuthHost):
        async def requires_authentication(self) -> bool:  # type: ignore[override]
            return True

    with pytest.raises(TypeError, match="async def"):
        Options(SyncAuthenticate())
    with pytest.raises(TypeError, match="plain `def`"):
        Options(AsyncRequires())


def test_a_runner_agent_takes_an_authenticator_and_refuses_objects_that_are_not_one() -> None:
    """`Options.authenticator` gives a runner's agent authentication (the demo's `--auth`, driven
    end to end by the conformance suite); an object without `authenticate` is a TypeError, and a
    plain `def authenticate` too."""
    runner = acp_facade.Runner(acp_facade.MemoryStore(), _NoTurns())
    options = runner.options().authenticator(LogoutHost())
    assert "Options" in repr(options)
    with pytest.raises(TypeError, match="authenticate"):
        runner.options().authenticator(object())

    class SyncLogin:
        def authenticate(self, method_id: str) -> None:
            return None

    with pytest.raises(TypeError):
        runner.options().authenticator(SyncLogin())


class _NoTurns(acp_facade.TurnRunner):
    async def run_turn(self, turn: acp_facade.Turn) -> acp_facade.StopReason:
        return acp_facade.StopReason.END_TURN
