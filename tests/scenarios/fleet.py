"""A fleet: several demo processes on one PostgreSQL database (``--store postgres://…``,
DEMO.md "Processes sharing one PostgreSQL database"), each driven by the official client:
sessions created concurrently and listed exactly once everywhere, a cursor from one process paging
in another, one live owner per session (-32600 elsewhere until it is closed there or its process
exits), a takeover after a ``SIGKILL`` mid-stream with every completed turn in the replay and
nothing twice, a delete in one process seen by another, and the database stopped and restarted
under a running agent. Each run gets a schema of its own (``conformance.postgres``).

Not compared across agents: several processes race by design (which session lands where, when a
lease expires), so each scenario asserts what DEMO.md promises instead."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Dict, List

from conformance import postgres
from conformance.scenario import NONE, scenario
from conformance.wire import CWD, Peer, Run

RACY = "several processes race by design (session ids, interleavings, lease expiry)"

TAKEOVER_LIMIT = 30.0
"""DEMO.md: after a process dies, another takes its sessions over within 30 s."""


def _updates(run: Run, since: int, sid: str, proc: int) -> List[Dict[str, Any]]:
    return run.updates(since, sid, proc)


def _texts(updates: List[Dict[str, Any]], kind: str) -> List[str]:
    return [(u.get("content") or {}).get("text") for u in updates if u.get("sessionUpdate") == kind]


async def _load(run: Run, p: Peer, sid: str) -> List[Dict[str, Any]]:
    """Loads ``sid`` in ``p``; the replayed updates."""
    mark = run.mark()
    reply = await p.load(sid)
    assert reply.ok, reply.raw
    return _updates(run, mark, sid, p.index)


async def _refused(p: Peer, sid: str) -> None:
    """Load, resume and delete of ``sid`` in ``p`` are refused: it is live in another process."""
    for reply in (await p.load(sid), await p.resume(sid), await p.request("session/delete", {"sessionId": sid})):
        assert not reply.ok and reply.code == -32600, reply.raw
        assert "live in another process" in reply.error["message"], reply.raw


@scenario(compare=NONE, why=RACY)
async def fleet_list_and_cursors(run: Run) -> None:
    """Four processes on one database create 25 sessions each, all at once: every process lists
    the 100 sessions exactly once; a cursor issued by one process pages in the others, identically;
    a tampered cursor is -32602 everywhere."""
    url = postgres.schema_url("list")
    peers = [await run.start("--page-size", "10", store=url) for _ in range(4)]
    created = await asyncio.gather(*(p.new_session() for p in peers for _ in range(25)))
    assert len(set(created)) == 100, "100 distinct sessions"
    for p in peers:
        listed = await p.list_all()
        assert sorted(listed) == sorted(created), f"p{p.index} lists every session exactly once"
        assert listed == sorted(listed, key=lambda s: s.encode()), "in id order"
    first = (await peers[0].list()).result
    cursor = first["nextCursor"]
    pages = [(await p.list(cursor=cursor)).result for p in peers]
    assert all(page == pages[0] for page in pages), "one cursor, the same page in every process"
    assert len(pages[0]["sessions"]) == 10
    # Followed through another process to the end: the rest, once.
    rest = await peers[1].list_all(cursor)
    assert sorted([s["sessionId"] for s in first["sessions"]] + rest) == sorted(created)
    tampered = cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")
    for p in peers:
        assert (await p.list(cursor=tampered)).code == -32602
    # A process started later (a restart) takes the cursor too.
    late = await run.start("--page-size", "10", store=url)
    assert (await late.list(cursor=cursor)).result == pages[0]


@scenario(compare=NONE, why=RACY)
async def fleet_one_live_owner(run: Run) -> None:
    """A session live in one process cannot be loaded, resumed or deleted by another (-32600)
    until that process closes it or exits; then the other loads it with its history. A delete in
    one process is seen by the others."""
    url = postgres.schema_url("owner")
    a = await run.start(store=url)
    b = await run.start(store=url)
    sid = await a.new_session()
    assert (await a.prompt(sid, "hello fleet")).stop_reason == "end_turn"
    await _refused(b, sid)
    assert sid in await b.list_all(), "listed everywhere all the same"

    assert (await a.close(sid)).ok
    replay = await _load(run, b, sid)
    assert _texts(replay, "user_message_chunk") == ["hello fleet"]
    assert (await b.prompt(sid, "from b")).stop_reason == "end_turn"
    await _refused(a, sid)

    # b exits: its sessions are a's to take, at once.
    assert await b.hang_up() == 0
    replay = await _load(run, a, sid)
    assert _texts(replay, "user_message_chunk") == ["hello fleet", "from b"]

    # A delete in one process is seen by another.
    c = await run.start(store=url)
    other = await a.new_session()
    assert (await a.close(other)).ok
    assert (await c.request("session/delete", {"sessionId": other})).ok
    assert other not in await a.list_all()
    reply = await a.load(other)
    assert not reply.ok and reply.code == -32002, reply.raw


@scenario(compare=NONE, why=RACY)
async def fleet_takeover_after_sigkill(run: Run) -> None:
    """A process is SIGKILLed in the middle of a stream: its session is still held (-32600) until
    its lease expires, then another process loads it within 30 s, with every turn that had
    completed in the replay, the interrupted one's prompt, and nothing twice."""
    url = postgres.schema_url("kill")
    a = await run.start(store=url)
    b = await run.start(store=url)
    sid = await a.new_session()
    for text in ("one two", "think hard", "stream 3"):
        assert (await a.prompt(sid, text)).stop_reason == "end_turn"
    mark = run.mark()
    streaming = a.start_prompt(sid, "stream 1000000", timeout=120)
    await a.wait_for(lambda m: m["params"]["update"]["content"]["text"] == "t200 ", since=mark)
    await a.kill()
    killed_at = time.monotonic()
    # The stream's prompt never gets its answer: its connection went with the process.
    (lost,) = await asyncio.gather(streaming, return_exceptions=True)
    assert isinstance(lost, Exception), lost

    assert (await b.load(sid)).code == -32600, "the dead process's lease runs on for a while"
    while True:
        mark = run.mark()
        reply = await b.load(sid)
        if reply.ok:
            break
        assert reply.code == -32600, reply.raw
        assert time.monotonic() - killed_at < TAKEOVER_LIMIT, f"not taken over within {TAKEOVER_LIMIT} s"
        await asyncio.sleep(0.5)
    replay = _updates(run, mark, sid, b.index)
    users = _texts(replay, "user_message_chunk")
    assert users == ["one two", "think hard", "stream 3", "stream 1000000"], users
    agents = _texts(replay, "agent_message_chunk")
    assert agents == ["one two", "done thinking", "t1 t2 t3 "], f"each completed turn once: {agents}"
    assert _texts(replay, "agent_thought_chunk") == ["hard"]
    # And it serves on in its new process.
    assert (await b.prompt(sid, "stream 2")).stop_reason == "end_turn"


@scenario(compare=NONE, why="the database's restart takes as long as it takes")
async def fleet_database_restart(run: Run) -> None:
    """The database is stopped and restarted under a running agent: requests during the outage fail
    with a clear error (never end_turn for a turn that was not recorded), a turn that spans the
    restart ends end_turn once its events are recorded, the agent serves on when the database is
    back, and a new process replays every acknowledged turn — nothing lost, nothing twice."""
    url = postgres.schema_url("restart")
    a = await run.start(store=url)
    sid = await a.new_session()
    spanning = await a.new_session()
    assert (await a.prompt(sid, "before outage")).stop_reason == "end_turn"
    sleeping = a.start_prompt(spanning, "sleep 8000", timeout=60)
    await asyncio.sleep(0.5)  # its prompt is journaled within 10 ms
    try:
        postgres.control("stop", "-m", "fast")
        during = await a.prompt(sid, "during outage")
        assert not during.ok and during.code == -32603, during.raw
        assert "session store" in during.error["message"], during.raw
        refused = await a.prompt(sid, "refused")
        assert not refused.ok and refused.code == -32603, refused.raw
        listed = await a.list()
        assert not listed.ok and listed.code == -32603, listed.raw
    finally:
        postgres.control("start")
    assert (await sleeping).stop_reason == "end_turn", "recorded once the database was back"
    assert (await a.prompt(sid, "after outage")).stop_reason == "end_turn"
    assert sid in await a.list_all()
    assert (await a.close(sid)).ok
    assert (await a.close(spanning)).ok

    b = await run.start(store=url)
    replay = await _load(run, b, sid)
    users = _texts(replay, "user_message_chunk")
    assert users == ["before outage", "during outage", "after outage"], users
    agents = _texts(replay, "agent_message_chunk")
    assert agents == ["before outage", "during outage", "after outage"], agents
    replay = await _load(run, b, spanning)
    assert _texts(replay, "user_message_chunk") == ["sleep 8000"]
    assert _texts(replay, "agent_message_chunk") == ["slept"]
