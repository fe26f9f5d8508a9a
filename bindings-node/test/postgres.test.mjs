// The PostgreSQL store from Node (bindings-node/src/runner/postgres.rs): `new PostgresStore(url)`
// in-process, and Node demo agents sharing one database as processes of a fleet would, driven by
// the official TypeScript client: a session live in one is refused elsewhere (-32600) until it is
// closed there, a list cursor pages in another process, and an unreachable database fails fast.

import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { describe, test } from 'node:test'

import { MemoryStore, PostgresStore, Runner } from 'acp-facade'

import { DEMO_HOST, chunkText, spawnAgent, textPrompt } from './support/client.mjs'
import { NO_POSTGRES, postgresUrl } from './support/postgres.mjs'

const cwd = tmpdir()

async function started(url, extra = []) {
  const agent = spawnAgent(['--store', url, ...extra])
  await agent.initialize()
  return agent
}

async function stopped(agent) {
  agent.assertValid()
  const { code, signal } = await agent.hangUp()
  assert.equal(signal, null, `the agent died: ${agent.stderr()}`)
  assert.equal(code, 0, `the agent failed: ${agent.stderr()}`)
}

describe('PostgresStore', () => {
  test('an unreachable database throws ERR_ACP_STORE naming the server, not the password', () => {
    assert.throws(
      () => new PostgresStore('postgres://acp:s3cret@/postgres?host=/nonexistent/acp-facade'),
      (e) => {
        assert.equal(e.code, 'ERR_ACP_STORE')
        assert.match(e.message, /cannot connect to PostgreSQL \(host=\/nonexistent\/acp-facade/)
        assert.doesNotMatch(e.message, /s3cret/)
        return true
      },
    )
    assert.throws(() => new PostgresStore('mysql://nope'), (e) => e.code === 'ERR_ACP_STORE' && /invalid PostgreSQL URL/.test(e.message))
  })

  test('the demo exits 1 with one line on stderr when the database is unreachable', () => {
    const run = spawnSync(process.execPath, [DEMO_HOST, '--store', 'postgres://acp@/postgres?host=/nonexistent/acp-facade'], {
      input: '',
      encoding: 'utf8',
    })
    assert.equal(run.status, 1)
    assert.equal(run.stdout, '')
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr)
    assert.match(run.stderr, /cannot open the session store \(PostgreSQL\).*cannot connect to PostgreSQL/)
  })

  test('a runner over it, in-process', async (t) => {
    const url = postgresUrl()
    if (url === null) return t.skip(NO_POSTGRES)
    const store = new PostgresStore(url)
    const runner = new Runner(store, { runTurn: () => undefined })
    assert.equal(typeof runner.agent, 'function')
    assert.ok(!(store instanceof MemoryStore))
    await store.close()
  })

  test('two demo processes on one database: one live owner per session, shared cursors', async (t) => {
    const url = postgresUrl()
    if (url === null) return t.skip(NO_POSTGRES)
    const a = await started(url, ['--page-size', '2'])
    const b = await started(url, ['--page-size', '2'])
    try {
      const { sessionId } = await a.connection.newSession({ cwd, mcpServers: [] })
      assert.equal((await a.connection.prompt(textPrompt(sessionId, 'hello fleet'))).stopReason, 'end_turn')
      await assert.rejects(b.connection.loadSession({ sessionId, cwd, mcpServers: [] }), (e) => {
        assert.equal(e.code, -32600)
        assert.match(e.message, /live in another process/)
        return true
      })
      for (let i = 0; i < 3; i++) await a.connection.newSession({ cwd, mcpServers: [] })
      const first = await a.connection.listSessions({})
      assert.ok(first.nextCursor, 'more than one page')
      const inA = await a.connection.listSessions({ cursor: first.nextCursor })
      const inB = await b.connection.listSessions({ cursor: first.nextCursor })
      assert.deepEqual(inB.sessions, inA.sessions, 'a cursor from a pages in b')

      await a.connection.closeSession({ sessionId })
      await b.connection.loadSession({ sessionId, cwd, mcpServers: [] })
      assert.equal(chunkText(b.updatesOf(sessionId), 'user_message_chunk'), 'hello fleet')
      assert.equal((await b.connection.prompt(textPrompt(sessionId, 'again'))).stopReason, 'end_turn')
    } finally {
      await stopped(a)
      await stopped(b)
    }
  })
})
