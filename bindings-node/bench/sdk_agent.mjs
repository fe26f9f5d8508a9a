// A minimal agent written with the official TypeScript SDK, for the benchmark: `stream N` streams
// N agent_message_chunk notifications ("t1 ", "t2 ", ...), then ends the turn.
import { Readable, Writable } from 'node:stream'

import { AgentSideConnection, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk'

new AgentSideConnection(
  (conn) => ({
    async initialize() {
      return { protocolVersion: PROTOCOL_VERSION, agentCapabilities: {} }
    },
    async newSession() {
      return { sessionId: 'sdk-session' }
    },
    async authenticate() {},
    async cancel() {},
    async prompt({ sessionId, prompt }) {
      const n = Number(prompt[0].text.split(' ')[1] ?? 0)
      for (let i = 1; i <= n; i++) {
        await conn.sessionUpdate({ sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `t${i} ` } } })
      }
      return { stopReason: 'end_turn' }
    },
  }),
  ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)),
)
