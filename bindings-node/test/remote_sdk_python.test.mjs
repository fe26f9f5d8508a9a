// The official TypeScript SDK 2.4's remote clients (`acp-sdk-2`: `experimental/http-client`'s
// Streamable HTTP and `experimental/ws-client`'s WebSocket) drive the Python demo served with
// `--listen 127.0.0.1:0`, as remote_sdk.test.mjs drives the Rust one: initialize, session/new, a
// streamed prompt, a call from the agent's Python turn to the client (`read PATH`), the
// bearer-token rule, and SIGTERM ending the demo with status 0.
//
// The Python demo needs a Python with acp_facade installed: ACP_SDK_V2_PYTHON names it, as for
// sdk2_v2.test.mjs (scripts/lib/sdk_clients.sh sets it to the venv of the test command). Without it
// this file is skipped, unless ACP_SDK_V2_REQUIRE names `python`: then it fails.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before, describe, test } from 'node:test'

import * as acp from 'acp-sdk-2'
import { createHttpStream } from 'acp-sdk-2/experimental/http-client'
import { createWebSocketStream } from 'acp-sdk-2/experimental/ws-client'
import { WebSocket } from 'ws'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const PYTHON = process.env.ACP_SDK_V2_PYTHON
const REQUIRED = (process.env.ACP_SDK_V2_REQUIRE ?? '').split(',').includes('python')

/** Why the Python demo cannot run here, or null. */
function missing() {
  if (!PYTHON) return 'ACP_SDK_V2_PYTHON is not set (a Python with acp_facade installed, e.g. target/py-venv/bin/python)'
  if (!existsSync(PYTHON)) return `ACP_SDK_V2_PYTHON=${PYTHON} does not exist`
  return null
}

const why = missing()
if (why && REQUIRED) throw new Error(`ACP_SDK_V2_REQUIRE names python, but ${why}`)

/** Starts the Python demo with `args`; resolves with its URL once it printed `listening on URL`. */
async function listen(args) {
  const demo = join(ROOT, 'examples/python/demo_host.py')
  const child = spawn(PYTHON, [demo, '--store', ':memory:', '--listen', '127.0.0.1:0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  let stdout = ''
  child.stdout.on('data', (data) => (stdout += data))
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (data) => {
      stderr += data
      const match = /^listening on (http:\/\/127\.0\.0\.1:\d+\/acp)$/m.exec(stderr)
      if (match) resolve(match[1])
    })
    child.on('exit', (code) => reject(new Error(`the demo exited (${code}) before listening: ${stderr}`)))
  })
  return { url, child, exited, stderr: () => stderr, stdout: () => stdout }
}

/** The text of the `agent_message_chunk`s among `updates`. */
const said = (updates) =>
  updates
    .filter((u) => u.update?.sessionUpdate === 'agent_message_chunk' && u.update.content.type === 'text')
    .map((u) => u.update.content.text)
    .join('')

/** Runs initialize, session/new, `stream 3` and `read PATH` over `stream`. */
async function workflow(stream, work) {
  const updates = []
  const reads = []
  const { methods } = acp
  const app = acp
    .client({ name: 'acp-facade remote test (Python demo)' })
    .onNotification(methods.client.session.update, ({ params }) => updates.push(params))
    .onRequest(methods.client.fs.readTextFile, ({ params }) => {
      reads.push(params.path)
      return { content: 'remote file text' }
    })
  return await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: false } },
      clientInfo: { name: 'remote', version: '1' },
    })
    assert.equal(init.protocolVersion, 1)
    assert.equal(init.agentInfo.name, 'acp-facade-demo')
    const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: work, mcpServers: [] })
    const streamed = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'stream 3' }] })
    assert.equal(streamed.stopReason, 'end_turn')
    assert.equal(said(updates), 't1 t2 t3 ')
    const from = updates.length
    const path = join(work, 'notes.txt')
    const read = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: `read ${path}` }] })
    assert.equal(read.stopReason, 'end_turn')
    assert.deepEqual(reads, [path])
    assert.equal(said(updates.slice(from)), 'remote file text')
    return sessionId
  })
}

describe('the official SDK 2.4 remote clients drive the Python demo', { skip: why ?? false }, () => {
  let demo
  let work
  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'acp-remote-py-'))
    writeFileSync(join(work, 'notes.txt'), 'remote file text')
    demo = await listen(['--token', 'alice:s3cret'])
  })
  after(() => {
    demo?.child.kill('SIGKILL')
    rmSync(work, { recursive: true, force: true })
  })

  test('Streamable HTTP (createHttpStream): initialize, session/new, a streamed prompt, a client call', async () => {
    const stream = createHttpStream(demo.url, { headers: { Authorization: 'Bearer s3cret' } })
    assert.ok(await workflow(stream, work))
  })

  test('WebSocket (createWebSocketStream): initialize, session/new, a streamed prompt, a client call', async () => {
    const stream = createWebSocketStream(demo.url.replace(/^http/, 'ws'), { WebSocket, headers: { Authorization: 'Bearer s3cret' } })
    assert.ok(await workflow(stream, work))
  })

  test('without the token the HTTP client is refused with 401', async () => {
    const stream = createHttpStream(demo.url, { headers: { Authorization: 'Bearer wrong' } })
    await assert.rejects(
      acp.client({ name: 'intruder' }).connectWith(stream, (ctx) => ctx.request(acp.methods.agent.initialize, { protocolVersion: 1 })),
      /401/,
    )
  })

  test('SIGTERM shuts the demo down gracefully: exit status 0, nothing on stdout', async () => {
    demo.child.kill('SIGTERM')
    const { code, signal } = await demo.exited
    assert.equal(signal, null, demo.stderr())
    assert.equal(code, 0, demo.stderr())
    assert.equal(demo.stdout(), '')
  })
})
