// `turn.signal` is made when first read (most turns never read it): read before a cancellation it
// aborts then; read after one it is already aborted; every read gives the same object. And a Node
// worker thread can serve an agent and end while a call to it is still queued.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Worker } from 'node:worker_threads'

import { MemoryStore, Runner } from 'acp-facade'

import { serveInProcess, textPrompt } from './support/client.mjs'

/** Resolves once `check()` holds (polled every few milliseconds, at most 5 s). */
async function until(check) {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((r) => setTimeout(r, 5))
  assert.ok(check(), 'timed out')
}

/** A turn runner whose `runTurn(turn)` is `body(turn)`; `started` counts the turns begun. */
function turnsOf(body) {
  const turns = {
    started: 0,
    async runTurn(turn) {
      turns.started++
      return body(turn)
    },
  }
  return turns
}

async function cancelledTurn(body) {
  const seen = {}
  const turns = turnsOf((turn) => body(turn, seen))
  const conn = serveInProcess(new Runner(new MemoryStore(), turns).agent())
  await conn.initialize()
  const { sessionId } = await conn.connection.newSession({ cwd: '/tmp', mcpServers: [] })
  const prompt = conn.connection.prompt(textPrompt(sessionId, 'wait'))
  await until(() => turns.started === 1)
  await conn.connection.cancel({ sessionId })
  assert.equal((await prompt).stopReason, 'cancelled')
  await conn.end()
  return seen
}

describe('turn.signal', () => {
  test('first read after the turn was cancelled: already aborted', async () => {
    const seen = await cancelledTurn(async (turn, seen) => {
      await until(() => turn.isCancelled)
      const signal = turn.signal
      seen.aborted = signal.aborted
      seen.same = signal === turn.signal
      seen.reason = signal.reason?.name
      return 'cancelled'
    })
    assert.deepEqual(seen, { aborted: true, same: true, reason: 'AbortError' })
  })

  test('read before the cancellation: aborts on it, once', async () => {
    const seen = await cancelledTurn(async (turn, seen) => {
      const signal = turn.signal
      seen.before = signal.aborted
      seen.events = 0
      signal.addEventListener('abort', () => seen.events++)
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
      seen.same = signal === turn.signal
      return 'cancelled'
    })
    assert.deepEqual(seen, { before: false, events: 1, same: true })
  })

  test('a turn that never reads it still ends cancelled', async () => {
    const seen = await cancelledTurn(async (turn, seen) => {
      await until(() => turn.isCancelled)
      seen.done = true
      return 'cancelled'
    })
    assert.deepEqual(seen, { done: true })
  })
})

// The worker serves an agent in-process, starts a turn whose `runTurn` never settles, then asks
// for prompts that queue calls into it, and is terminated with them pending: the environment's
// tear-down must drop what is queued without crashing the process.
const WORKER = `
const { parentPort } = require('node:worker_threads')
const { PassThrough } = require('node:stream')
const { MemoryStore, Runner } = require(${JSON.stringify(new URL('../index.js', import.meta.url).pathname)})
const runner = new Runner(new MemoryStore(), {
  runTurn(turn) {
    parentPort.postMessage('turn')
    return new Promise(() => {})
  },
})
const toAgent = new PassThrough()
const fromAgent = new PassThrough()
runner.agent().serve(toAgent, fromAgent)
const send = (m) => toAgent.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\\n')
let buffer = ''
fromAgent.on('data', (chunk) => {
  buffer += chunk
  for (let i; (i = buffer.indexOf('\\n')) >= 0; ) {
    const line = JSON.parse(buffer.slice(0, i))
    buffer = buffer.slice(i + 1)
    if (line.id === 2) {
      for (let n = 0; n < 20; n++) {
        send({ id: 10 + n, method: 'session/prompt', params: { sessionId: line.result.sessionId, prompt: [{ type: 'text', text: 'x' }] } })
      }
    }
  }
})
send({ id: 1, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } })
send({ id: 2, method: 'session/new', params: { cwd: '/tmp', mcpServers: [] } })
`

describe('worker threads', () => {
  test('a worker serving an agent ends with calls into it pending', async () => {
    for (let round = 0; round < 3; round++) {
      const worker = new Worker(WORKER, { eval: true })
      await new Promise((resolve, reject) => {
        worker.once('message', resolve)
        worker.once('error', reject)
      })
      assert.equal(await worker.terminate(), 1)
    }
  })
})
