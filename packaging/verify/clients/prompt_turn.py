"""Prompt turns of an installed demo agent under the official ACP Python client.

The release verification runs this with the Python of a fresh environment where the wheel and
``agent-client-protocol`` are installed; nothing else of the checkout is imported.

usage: python prompt_turn.py COMMAND [ARG...]   (the agent's command line, e.g. python -m acp_facade.demo)

It initializes the agent, opens a session, runs ``stream 3`` and ``tool build`` (the permission
allowed once), and checks what docs/DEMO.md says each turn sends. Exit status 0 and one summary
line on stdout when every check holds.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from typing import Any, List

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import AllowedOutcome, RequestPermissionResponse


class Client:
    """Records session updates; allows every permission request once."""

    def __init__(self) -> None:
        self.updates: List[Any] = []
        self.permission_requests: List[Any] = []

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        self.permission_requests.append(tool_call)
        allow = next(o for o in options if o.kind == "allow_once")
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    def on_connect(self, conn: Any) -> None:
        pass

    def text(self) -> str:
        return "".join(u.content.text for u in self.updates if u.session_update == "agent_message_chunk")

    def kinds(self) -> List[str]:
        return [u.session_update for u in self.updates]


async def main(command: List[str]) -> str:
    client = Client()
    with tempfile.TemporaryDirectory() as cwd:
        async with spawn_agent_process(client, command[0], *command[1:], cwd=cwd) as (conn, process):
            init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
            assert init.protocol_version == 1, init
            assert init.agent_info is not None and init.agent_info.name == "acp-facade-demo", init
            session = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id

            reply = await conn.prompt(session_id=session, prompt=[text_block("stream 3")])
            assert reply.stop_reason == "end_turn", reply
            assert client.text() == "t1 t2 t3 ", client.text()
            assert client.kinds()[-1] == "usage_update", client.kinds()

            client.updates.clear()
            reply = await conn.prompt(session_id=session, prompt=[text_block("tool build")])
            assert reply.stop_reason == "end_turn", reply
            assert len(client.permission_requests) == 1, client.permission_requests
            kinds = client.kinds()
            assert "tool_call" in kinds and "tool_call_update" in kinds, kinds
            assert client.text() == "build: done", client.text()
            process.stdin.close()
            code = await asyncio.wait_for(process.wait(), 10)
            assert code == 0, f"the agent exited {code} after the client hung up"
    return f"ok: {init.agent_info.name} {init.agent_info.version}: stream and tool turns as documented"


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__.strip().splitlines()[4] + "\n")
        sys.exit(2)
    print(asyncio.run(main(sys.argv[1:])))
