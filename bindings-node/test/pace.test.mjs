// Back-pressure of the binding's synchronous calls (the core's `pace` policy), in-process over
// caller-supplied streams so that the client reads on the very thread the producer blocks:
// `turn.text` and `events.publish` in a tight loop that never awaits are refused with
// ERR_ACP_QUEUE_FULL at the hard bound (16384 queued, `acp_facade::pace::HARD_LIMIT`) while the
// client reads nothing, and every call accepted before that still reaches the client, in order,
// once the producer awaits.

import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { describe, test } from 'node:test'

import { Agent, EventHub, MemoryStore, Runner } from 'acp-facade'

import { serveInProcess, textPrompt } from './support/client.mjs'

const HARD_LIMIT = 16384
const NEVER = 10_000_000

/** Calls `call(n)` without awaiting until it throws: the count accepted, the error, the last Promise. */
function flood(call) {
  let accepted = 0
  let last = null
  let error = null
  try {
    while (accepted < NEVER) {
      last = call(accepted) ?? last
      accepted++
    }
  } catch (e) {
    error = e
  }
  return { accepted, error, last }
}

function assertRefusedAtTheHardBound({ accepted, error, last }) {
  assert.equal(error?.code, 'ERR_ACP_QUEUE_FULL', String(error))
  assert.match(error.message, new RegExp(`^${HARD_LIMIT} calls are queued`))
  assert.ok(accepted >= HARD_LIMIT && accepted < NEVER, `${accepted} calls accepted`)
  assert.ok(last instanceof Promise, 'calls above the soft mark returned Promises to await')
}

function messageChunks(conn, sessionId) {
  return conn
    .updatesOf(sessionId)
    .filter((u) => u.sessionUpdate === 'agent_message_chunk')
    .map((u) => u.content.text)
}

const numbered = (count) => Array.from({ length: count }, (_, n) => `${n} `)

/** A live session whose turn publishes token deltas without awaiting until refused. */
class FloodSession {
  constructor(id) {
    this.id = id
    this.events = new EventHub()
    this.result = null
  }

  submit(prompt) {
    const at = { loopId: 'main', turnId: 't1' }
    const commandId = `${this.id}/c1`
    this.events.publish({ ...at, class: 'enduring', commandId, kind: { type: 'turnStarted', message: { content: prompt } } })
    setImmediate(async () => {
      this.result = flood((n) => this.events.publish({ ...at, kind: { type: 'tokenDelta', text: `${n} `, channel: 'message' } }))
      await this.result.last
      await this.events.publish({ ...at, class: 'enduring', kind: { type: 'turnDone', stop: 'end_turn' } })
    })
    return commandId
  }

  async interrupt() {}

  respondGate() {}
}

describe('back-pressure for callers that never await', () => {
  test('turn.text in a tight loop is refused at the hard bound; nothing accepted is lost', async () => {
    let result
    const runner = new Runner(new MemoryStore(), {
      async runTurn(turn) {
        result = flood((n) => turn.text(`${n} `))
        await result.last
        await turn.text('end')
      },
    })
    const conn = serveInProcess(runner.agent())
    await conn.initialize()
    const { sessionId } = await conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] })
    assert.equal((await conn.connection.prompt(textPrompt(sessionId, 'go'))).stopReason, 'end_turn')
    assertRefusedAtTheHardBound(result)
    assert.deepEqual(messageChunks(conn, sessionId), [...numbered(result.accepted), 'end'])
    await conn.end()
  })

  test('events.publish in a tight loop is refused at the hard bound; nothing accepted is lost', async () => {
    const session = new FloodSession('flood-1')
    const conn = serveInProcess(new Agent({ newSession: () => session }))
    await conn.initialize()
    const { sessionId } = await conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] })
    assert.equal((await conn.connection.prompt(textPrompt(sessionId, 'go'))).stopReason, 'end_turn')
    assertRefusedAtTheHardBound(session.result)
    assert.deepEqual(messageChunks(conn, sessionId), numbered(session.result.accepted))
    await conn.end()
  })
})
