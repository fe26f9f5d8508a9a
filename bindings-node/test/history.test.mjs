// `turn.history()` from Node (bindings-node/src/runner/turn.rs): a later turn reads the session's
// earlier turns as typed entries (prompts, replies, thoughts, tool calls with their final status),
// bounded by `limit`; Node agents in separate processes over one store (SQLite, and PostgreSQL
// when the test server is configured) read the same conversation after `session/load` and
// `session/resume`; `/compact` leaves its summary in place of what it compacted. The agents are
// test/fixtures/history_host.mjs, driven by the official TypeScript client.

import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { MemoryStore, Runner } from 'acp-facade'

import { chunkText, serveInProcess, spawnAgent, textPrompt } from './support/client.mjs'
import { NO_POSTGRES, postgresUrl } from './support/postgres.mjs'

const HOST = fileURLToPath(new URL('./fixtures/history_host.mjs', import.meta.url))
const cwd = tmpdir()

/** Prompts that make every kind of entry, and what `recall` streams after them. */
const CONVERSATION = ['hello', 'think deeply', 'tool', 'toolfail', 'dangling']
const CONVERSED = [
  'user:hello',
  'assistant:hello',
  'user:think deeply',
  'thought:deeply',
  'assistant:ok',
  'user:tool',
  'assistant:read it',
  'tool:Read file:completed:contents',
  'user:toolfail',
  'tool:Run rm:failed:refused',
  'user:dangling',
  'tool:Wait:pending:',
]

/** Prompts `sessionId` with `text` on `agent`; the text the turn streamed, as the agent wrote it
 * before its response (read off the transcript, which the response cannot overtake). */
async function say(agent, sessionId, text) {
  const before = agent.transcript.length
  const response = await agent.connection.prompt(textPrompt(sessionId, text))
  assert.equal(response.stopReason, 'end_turn')
  const updates = agent.transcript
    .slice(before)
    .filter((m) => m?.method === 'session/update' && m.params.sessionId === sessionId)
    .map((m) => m.params.update)
  return chunkText(updates)
}

const lines = (text) => (text === '' ? [] : text.replace(/\n$/, '').split('\n'))

describe('turn.history', () => {
  test('a turn reads typed entries of the turns before it, bounded by limit', async () => {
    const seen = []
    const turns = {
      async runTurn(turn) {
        const [verb, rest] = turn.promptText.split(' ')
        if (verb === 'recall') {
          const entries = await turn.history(rest === undefined ? undefined : Number(rest))
          seen.push(entries)
          await turn.text(entries.map((e) => `${e.type}:${e.type === 'tool_call' ? e.status : e.text}`).join(','))
        } else if (verb === 'tool') {
          const call = await turn.startToolCall('Read file', 'read', { path: '/tmp/a' })
          await turn.completeToolCall(call, 'contents')
        } else if (verb === 'bad') {
          for (const limit of [-1, 1.5, Number.NaN]) {
            assert.throws(() => turn.history(limit), (e) => e.code === 'ERR_ACP_INVALID_ARG' && /`limit` must be a non-negative integer/.test(e.message))
          }
        } else {
          await turn.text(turn.promptText)
        }
        return 'end_turn'
      },
    }
    const conn = serveInProcess(new Runner(new MemoryStore(), turns).agent())
    try {
      await conn.initialize()
      const { sessionId } = await conn.connection.newSession({ cwd, mcpServers: [] })
      assert.equal(await say(conn, sessionId, 'recall'), '', 'a new session has no history')
      for (let i = 0; i < 30; i++) await say(conn, sessionId, `hi ${i}`)
      await say(conn, sessionId, 'tool')
      await say(conn, sessionId, 'bad')
      const fifty = await say(conn, sessionId, 'recall')
      assert.equal(fifty.split(',').length, 50, 'the default limit is 50')
      assert.ok(fifty.endsWith(',user:tool,tool_call:completed,user:bad'), fifty)
      assert.equal(await say(conn, sessionId, 'recall 3'), `user:bad,user:recall,assistant:${fifty}`, 'the last three, oldest first')
      assert.equal(await say(conn, sessionId, 'recall 0'), '')
    } finally {
      await conn.end()
    }

    const [call] = seen.at(-3).filter((e) => e.type === 'tool_call')
    assert.deepEqual(call, {
      type: 'tool_call',
      id: call.id,
      name: null,
      title: 'Read file',
      kind: 'read',
      status: 'completed',
      input: { path: '/tmp/a' },
      output: null,
      content: [{ type: 'content', content: { type: 'text', text: 'contents' } }],
      text: 'contents',
    })
    assert.match(call.id, /call/)
    assert.deepEqual(seen.at(-3).at(-3), { type: 'user', text: 'tool', content: [{ type: 'text', text: 'tool' }] })
  })

  for (const database of ['sqlite', 'postgres']) {
    test(`another process reads the same history after load, compaction and resume (${database})`, async (t) => {
      let store
      let dir
      if (database === 'postgres') {
        store = postgresUrl()
        if (store === null) return t.skip(NO_POSTGRES)
      } else {
        dir = mkdtempSync(join(tmpdir(), 'acp-history-'))
        store = join(dir, 'sessions.sqlite')
      }
      const agents = []
      const started = async () => {
        const agent = spawnAgent(['--store', store], { script: HOST })
        agents.push(agent)
        await agent.initialize()
        return agent
      }
      const stopped = async (agent) => {
        agent.assertValid()
        const { code } = await agent.hangUp()
        assert.equal(code, 0, agent.stderr())
      }
      try {
        const first = await started()
        const { sessionId } = await first.connection.newSession({ cwd, mcpServers: [] })
        for (const prompt of CONVERSATION) await say(first, sessionId, prompt)
        await stopped(first)

        const second = await started()
        await second.connection.loadSession({ sessionId, cwd, mcpServers: [] })
        assert.deepEqual(lines(await say(second, sessionId, 'recall 50')), CONVERSED, 'after load, in another process')
        await say(second, sessionId, '/compact')
        assert.deepEqual(lines(await say(second, sessionId, 'recall')), ['summary:summary 1'], 'compacted')
        await say(second, sessionId, 'more')
        await stopped(second)

        const third = await started()
        await third.connection.resumeSession({ sessionId, cwd, mcpServers: [] })
        const expected = ['summary:summary 1', 'user:recall', 'assistant:summary:summary 1\\n', 'user:more', 'assistant:more']
        assert.deepEqual(lines(await say(third, sessionId, 'recall')), expected, 'after resume: the summary, then what followed')
        assert.deepEqual(lines(await say(third, sessionId, 'recall 1')), [`assistant:${expected.join('\\n')}\\n`])
        await stopped(third)
      } finally {
        for (const agent of agents) agent.child.kill()
        if (dir) rmSync(dir, { recursive: true, force: true })
      }
    })
  }
})
