"""Idempotent prompts (docs/DEMO.md, "Sessions"): a `session/prompt` repeating the
`_meta["acp/idempotencyKey"]` of a prompt its session accepted runs nothing and is answered as the
first was — after the first's turn ended, and also while it runs (both answered when it ends)."""

from __future__ import annotations

import asyncio
from typing import Any, Dict

from conformance.scenario import scenario
from conformance.wire import Peer, Reply, Run

from .prompts import assert_usage_last

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


async def _keyed(p: Peer, sid: str, text: str, key: Any) -> Reply:
    params: Dict[str, Any] = {
        "sessionId": sid,
        "prompt": [{"type": "text", "text": text}],
        "_meta": {"acp/idempotencyKey": key, "traceparent": TRACEPARENT},
    }
    return await p.request("session/prompt", params)


@scenario()
async def idempotent_prompt(run: Run) -> None:
    """The repeat of `echo …` with its key returns the same answer (stop reason and `_meta`) and
    sends no second set of chunks, even with another text; another key runs; a key that is not a
    string is -32602 naming `acp/idempotencyKey`."""
    p = await run.start()
    sid = await p.new_session()
    mark = run.mark()
    first = await _keyed(p, sid, "echo these words", "k1")
    assert first.raw["result"] == {"stopReason": "end_turn", "_meta": {"traceparent": TRACEPARENT}}, first.raw
    assert run.texts("agent_message_chunk", mark, sid) == ["echo ", "these ", "words"]
    assert_usage_last(run, mark, sid, "echo these words")
    for text in ("echo these words", "stream 3"):
        mark = run.mark()
        repeat = await _keyed(p, sid, text, "k1")
        assert repeat.raw["result"] == first.raw["result"], repeat.raw
        assert run.updates(mark, sid) == [], run.updates(mark, sid)
    mark = run.mark()
    other = await _keyed(p, sid, "echo again", "k2")
    assert other.stop_reason == "end_turn", other.raw
    assert run.texts("agent_message_chunk", mark, sid) == ["echo ", "again"]
    bad = await _keyed(p, sid, "echo no", 7)
    assert bad.code == -32602 and "acp/idempotencyKey" in bad.error["message"], bad.raw


@scenario()
async def idempotent_prompt_while_running(run: Run) -> None:
    """A repeat of a running prompt's key is not refused as a second prompt: both are answered,
    alike, when the turn ends, and its chunks come once."""
    p = await run.start()
    sid = await p.new_session()
    assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"
    mark = run.mark()
    loop = asyncio.get_running_loop()
    first = loop.create_task(_keyed(p, sid, "drip 3 200", "k"))
    await p.wait_for(lambda m: m["params"]["update"]["content"]["text"] == "d1 ", since=mark)
    repeat = loop.create_task(_keyed(p, sid, "drip 3 200", "k"))
    first, repeat = await first, await repeat
    assert first.raw["result"] == {"stopReason": "end_turn", "_meta": {"traceparent": TRACEPARENT}}, first.raw
    assert repeat.raw["result"] == first.raw["result"], repeat.raw
    assert run.texts("agent_message_chunk", mark, sid) == ["d1 ", "d2 ", "d3 "]
    assert_usage_last(run, mark, sid, "drip 3 200")
