"""`--auth` (DEMO.md): one auth method `demo-login` with logout; until `authenticate` with it
succeeds, and again after `logout`, every session method answers -32000 and touches nothing;
initialize, authenticate, logout and extension methods are not gated."""

from __future__ import annotations

from conformance.scenario import scenario
from conformance.wire import CWD, Peer, Run

AUTH_REQUIRED = -32000


def _session_requests(sid: str):
    """One well-formed request per session method, for session `sid`."""
    return [
        ("session/new", {"cwd": CWD, "mcpServers": []}),
        ("session/load", {"sessionId": sid, "cwd": CWD, "mcpServers": []}),
        ("session/resume", {"sessionId": sid, "cwd": CWD}),
        ("session/list", {}),
        ("session/delete", {"sessionId": sid}),
        ("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}),
        ("session/set_mode", {"sessionId": sid, "modeId": "code"}),
        ("session/set_config_option", {"sessionId": sid, "configId": "model", "value": "smart"}),
        ("session/close", {"sessionId": sid}),
    ]


async def _all_refused(p: Peer, sid: str) -> None:
    for method, params in _session_requests(sid):
        reply = await p.raw_request(method, params)
        assert reply.get("error", {}).get("code") == AUTH_REQUIRED, (method, reply)


@scenario()
async def auth_required(run: Run) -> None:
    """--auth: initialize advertises `demo-login` and logout; every session method is -32000 before
    authenticate (an unknown method id fails and changes nothing), works after it, is -32000 again
    after logout (a live session included), and works after authenticating again."""
    p = await run.start("--auth", initialize=False)
    init = (await p.initialize()).result
    assert init["authMethods"] == [{"id": "demo-login", "name": "Demo login"}], init
    assert init["agentCapabilities"]["auth"]["logout"] == {}, init
    await _all_refused(p, "sess_00000000000000000")
    assert "error" in await p.raw_request("authenticate", {"methodId": "nope"})
    await _all_refused(p, "sess_00000000000000000")
    # Extension methods are not gated: served, or unknown, never unauthenticated.
    assert (await p.raw_request("_demo/echo", {"before": "login"}))["result"] == {"before": "login"}
    assert (await p.raw_request("_demo/unknown", {}))["error"]["code"] == -32601

    assert (await p.raw_request("authenticate", {"methodId": "demo-login"}))["result"] == {}
    sid = await p.new_session()
    assert (await p.prompt(sid, "stream 2")).stop_reason == "end_turn"
    assert (await p.list()).ok

    assert (await p.raw_request("logout", {}))["result"] == {}
    await _all_refused(p, sid)
    assert (await p.raw_request("authenticate", {"methodId": "demo-login"}))["result"] == {}
    assert (await p.prompt(sid, "stream 1")).stop_reason == "end_turn"
    assert [s["sessionId"] for s in (await p.list()).result["sessions"]] == [sid]
    assert (await p.close(sid)).result == {}
