// The replay order of `session/load` set from Node (`AgentOptions.replayOrder`): a runner session of
// two turns (each a thought, text and a tool call, then more text in a second step) is recorded on
// one connection and loaded on others, through the wire to the official client: grouped by default
// (every question, then every answer, then the tool calls), turn by turn with 'conversation'; the
// same updates either way. A wrong order throws ERR_ACP_INVALID_ARG when the agent is made.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { Agent, MemoryStore, Runner } from 'acp-facade'

import { serveInProcess, textPrompt } from './support/client.mjs'

/** Every prompt `q`: a step that thinks, answers and looks `q` up, then one that says done. */
const TURNS = {
  async runTurn(turn) {
    const q = turn.promptText
    await turn.thought(`thinking about ${q}`)
    await turn.text(`answer to ${q}`)
    const call = await turn.startToolCall(`look up ${q}`, 'search', { q })
    await turn.completeToolCall(call, `found ${q}`)
    await turn.endStep()
    await turn.text(`${q} done`)
    await turn.usage(10, 100)
    return 'end_turn'
  },
}

async function record(runner) {
  const conn = serveInProcess(runner.agent())
  await conn.initialize()
  const { sessionId } = await conn.connection.newSession({ cwd: '/tmp', mcpServers: [] })
  for (const q of ['q1', 'q2']) await conn.connection.prompt(textPrompt(sessionId, q))
  await conn.end()
  return sessionId
}

/** The updates an agent with `options` sends before answering `session/load`, as written on the wire. */
async function load(runner, sessionId, options) {
  const conn = serveInProcess(runner.agent(options))
  await conn.initialize()
  const start = conn.transcript.length
  await conn.connection.loadSession({ sessionId, cwd: '/tmp', mcpServers: [] })
  const lines = conn.transcript.slice(start)
  const answered = lines.findIndex((m) => m.method === undefined && m.result !== undefined)
  assert.ok(answered >= 0, 'the load was answered')
  await conn.end()
  return lines.slice(0, answered).map((m) => {
    assert.equal(m.method, 'session/update')
    return m.params.update
  })
}

function describeUpdate(u) {
  if (u.sessionUpdate.endsWith('_chunk')) return `${u.sessionUpdate}:${u.content.text}`
  if (u.sessionUpdate === 'tool_call') return `tool_call:${u.title}:${u.status}`
  return u.sessionUpdate
}

const GROUPED = [
  'user_message_chunk:q1',
  'user_message_chunk:q2',
  'agent_thought_chunk:thinking about q1',
  'agent_message_chunk:answer to q1',
  'agent_message_chunk:q1 done',
  'agent_thought_chunk:thinking about q2',
  'agent_message_chunk:answer to q2',
  'agent_message_chunk:q2 done',
  'tool_call:look up q1:completed',
  'tool_call:look up q2:completed',
  'usage_update',
]

const CONVERSATION = [
  'user_message_chunk:q1',
  'agent_thought_chunk:thinking about q1',
  'agent_message_chunk:answer to q1',
  'tool_call:look up q1:completed',
  'agent_message_chunk:q1 done',
  'user_message_chunk:q2',
  'agent_thought_chunk:thinking about q2',
  'agent_message_chunk:answer to q2',
  'tool_call:look up q2:completed',
  'agent_message_chunk:q2 done',
  'usage_update',
]

describe('replayOrder', () => {
  test('session/load replays grouped by default and turn by turn in conversation order', async () => {
    const runner = new Runner(new MemoryStore(), TURNS)
    const sessionId = await record(runner)
    const grouped = await load(runner, sessionId)
    assert.deepEqual(grouped.map(describeUpdate), GROUPED)
    assert.deepEqual((await load(runner, sessionId, { replayOrder: 'grouped' })).map(describeUpdate), GROUPED)
    const conversation = await load(runner, sessionId, { replayOrder: 'conversation' })
    assert.deepEqual(conversation.map(describeUpdate), CONVERSATION)
    // The same updates, message ids included: only their order differs.
    const sorted = (updates) => updates.map((u) => JSON.stringify(u)).sort()
    assert.deepEqual(sorted(conversation), sorted(grouped))
  })

  test('a wrong order throws ERR_ACP_INVALID_ARG naming the accepted ones, when the agent is made', () => {
    const host = { newSession() {} }
    for (const bad of ['Conversation', 'chronological', '']) {
      const refused = (e) =>
        e.code === 'ERR_ACP_INVALID_ARG' && e.message.includes(`replayOrder: unknown replay order "${bad}": expected "grouped" or "conversation"`)
      assert.throws(() => new Agent(host, { replayOrder: bad }), refused)
      assert.throws(() => new Runner(new MemoryStore(), TURNS).agent({ replayOrder: bad }), refused)
    }
    // Not a string: refused by the options' conversion, as any mistyped option.
    assert.throws(() => new Agent(host, { replayOrder: 1 }), /AgentOptions\.replayOrder/)
    new Agent(host, { replayOrder: 'conversation' })
  })
})
