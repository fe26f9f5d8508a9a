// Process lifecycle: a Node agent exits on its own (code 0) when the client hangs up, stored
// callbacks never keep it alive, and process.exit() mid-stream never crashes it, also under CPU
// load. 30 runs in all.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { tmpdir } from 'node:os'
import { after, before, describe, test } from 'node:test'

import { DEMO_HOST, spawnAgent, textPrompt } from './support/client.mjs'

const EXIT_HOST = new URL('./fixtures/exit_host.mjs', import.meta.url).pathname
const HANG_LIMIT_MS = 15_000

function withinLimit(promise, what) {
  let timer
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no exit within ${HANG_LIMIT_MS} ms`)), HANG_LIMIT_MS)
  })
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer))
}

/** Starts a prompt that streams, hangs up or lets the host exit, and checks a clean exit. */
async function run({ script, env, hangUpAfterMs }) {
  const agent = spawnAgent([], { script, env })
  await agent.initialize()
  const { sessionId } = await agent.connection.newSession({ cwd: tmpdir(), mcpServers: [] })
  agent.connection.prompt(textPrompt(sessionId, 'stream 100000000')).catch(() => {})
  if (hangUpAfterMs !== undefined) {
    await new Promise((r) => setTimeout(r, hangUpAfterMs))
    agent.child.stdin.end()
  }
  const { code, signal } = await withinLimit(agent.exited, 'agent')
  assert.equal(signal, null, `killed by ${signal}: ${agent.stderr()}`)
  assert.equal(code, 0, `exit code ${code}: ${agent.stderr()}`)
  assert.doesNotMatch(agent.stderr(), /panic|fatal|Segmentation|Abort/i)
}

let load = []
// Each busy loop also ends when this process is gone (killed by a timeout, say), instead of
// spinning on as an orphan.
const BUSY = `let i = 0; for (;;) { if (++i % 1e7 === 0 && process.ppid !== ${process.pid}) process.exit() }`
function startLoad() {
  load = [0, 1].map(() => spawn(process.execPath, ['-e', BUSY], { stdio: 'ignore' }))
}
function stopLoad() {
  load.forEach((p) => p.kill('SIGKILL'))
  load = []
}
after(stopLoad)

describe('lifecycle', () => {
  test('the demo agent exits 0 on its own after an idle hang-up', async () => {
    const agent = spawnAgent(['--store', ':memory:'])
    await agent.initialize()
    const { sessionId } = await agent.connection.newSession({ cwd: tmpdir(), mcpServers: [] })
    await agent.connection.prompt(textPrompt(sessionId, 'hello'))
    const { code, signal } = await withinLimit(agent.hangUp(), 'demo agent')
    assert.deepEqual([code, signal], [0, null])
  })

  for (let i = 0; i < 10; i++) {
    test(`hang-up mid-stream exits 0 (run ${i + 1})`, () => run({ script: DEMO_HOST, hangUpAfterMs: 20 + i * 15 }))
  }

  for (let i = 0; i < 10; i++) {
    test(`process.exit() mid-stream exits 0 (run ${i + 1})`, () => run({ script: EXIT_HOST, env: { EXIT_AFTER_MS: String(i * 20) } }))
  }

  describe('under CPU load', () => {
    before(startLoad)
    after(stopLoad)
    for (let i = 0; i < 5; i++) {
      test(`hang-up mid-stream exits 0 (loaded run ${i + 1})`, () => run({ script: DEMO_HOST, hangUpAfterMs: 10 + i * 30 }))
      test(`process.exit() mid-stream exits 0 (loaded run ${i + 1})`, () => run({ script: EXIT_HOST, env: { EXIT_AFTER_MS: String(i * 25) } }))
    }
  })
})
