// The official TypeScript SDK 2.4's remote clients (@agentclientprotocol/sdk, installed as
// `acp-sdk-2`: `experimental/http-client`'s Streamable HTTP and `experimental/ws-client`'s
// WebSocket) drive the Rust demo and the Node demo, each served with `--listen 127.0.0.1:0`:
// initialize, session/new, a streamed prompt, a call from the agent to the client (`read PATH`:
// fs/read_text_file, answered on the session's route), and the bearer-token rule; SIGTERM then ends
// the demo with status 0. A non-loopback `--listen` without `--token` exits 2 with one line, and
// both demos refuse the same bad remote command lines (`--tls-cert`/`--tls-key` among them) alike.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before, describe, test } from 'node:test'

import * as acp from 'acp-sdk-2'
import { createHttpStream } from 'acp-sdk-2/experimental/http-client'
import { createWebSocketStream } from 'acp-sdk-2/experimental/ws-client'
import { WebSocket } from 'ws'

import { DEMO_HOST, rustDemo } from './support/client.mjs'

/** The demos, each as the command and leading arguments that start it. */
const DEMOS = {
  // rustDemo() builds it when ACP_FACADE_RUST_DEMO is unset.
  Rust: () => [rustDemo()],
  Node: () => [process.execPath, DEMO_HOST],
}

/** Starts `demo` with `args`; resolves with its URL once it printed `listening on URL`. */
async function listen(demo, args) {
  const [command, ...lead] = demo
  const child = spawn(command, [...lead, '--store', ':memory:', '--listen', '127.0.0.1:0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (data) => {
      stderr += data
      const match = /^listening on (http:\/\/127\.0\.0\.1:\d+\/acp)$/m.exec(stderr)
      if (match) resolve(match[1])
    })
    child.on('exit', (code) => reject(new Error(`the demo exited (${code}) before listening: ${stderr}`)))
  })
  return { url, child, exited, stderr: () => stderr }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** The text of the `agent_message_chunk`s among `updates`. */
const said = (updates) =>
  updates
    .filter((u) => u.update?.sessionUpdate === 'agent_message_chunk' && u.update.content.type === 'text')
    .map((u) => u.update.content.text)
    .join('')

/** Runs initialize, session/new, `stream 3` and `read PATH` over `stream`; returns what was seen. */
async function workflow(stream, work) {
  const updates = []
  const reads = []
  const { methods } = acp
  const app = acp
    .client({ name: 'acp-facade remote test' })
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
    assert.ok(updates.every((u) => u.sessionId === sessionId))
    const from = updates.length
    const path = join(work, 'notes.txt')
    const read = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: `read ${path}` }] })
    assert.equal(read.stopReason, 'end_turn')
    assert.deepEqual(reads, [path])
    assert.match(said(updates.slice(from)), /remote file text/)
    return sessionId
  })
}

for (const [language, command] of Object.entries(DEMOS)) describe(`the official SDK 2.4 remote clients drive the ${language} demo`, () => {
  let demo
  let work
  let agent
  before(async () => {
    agent = command()
    work = mkdtempSync(join(tmpdir(), 'acp-remote-'))
    writeFileSync(join(work, 'notes.txt'), 'remote file text')
    demo = await listen(agent, ['--token', 'alice:s3cret', '--token', 'bob:b0b', '--allow-origin', 'https://app.example'])
  })
  after(() => {
    demo?.child.kill('SIGKILL')
    rmSync(work, { recursive: true, force: true })
  })

  test('Streamable HTTP (createHttpStream): initialize, session/new, a streamed prompt, a client call', async () => {
    const stream = createHttpStream(demo.url, { headers: { Authorization: 'Bearer s3cret' } })
    assert.ok(await workflow(stream, work))
  })

  test('Streamable HTTP: a new connection loads the session the first one made (replay on the session stream, the answer on the connection stream)', async () => {
    const headers = { Authorization: 'Bearer s3cret' }
    const sessionId = await workflow(createHttpStream(demo.url, { headers }), work)
    const updates = []
    const { methods } = acp
    const app = acp.client({ name: 'acp-facade remote reload' }).onNotification(methods.client.session.update, ({ params }) => updates.push(params))
    await app.connectWith(createHttpStream(demo.url, { headers }), async (ctx) => {
      const init = await ctx.request(methods.agent.initialize, { protocolVersion: 1 })
      assert.equal(init.agentCapabilities.loadSession, true)
      await ctx.request(methods.agent.session.load, { sessionId, cwd: work, mcpServers: [] })
      // The answer comes on the connection's stream and the replay on the session's (the RFD's and
      // the SDK's routing): two streams, so the answer may overtake the replay's last updates.
      for (let waited = 0; !said(updates).includes('t1 t2 t3 ') && waited < 5000; waited += 20) await sleep(20)
    })
    assert.ok(updates.length > 0 && updates.every((u) => u.sessionId === sessionId))
    assert.match(said(updates), /t1 t2 t3 /)
  })

  test('WebSocket (createWebSocketStream): initialize, session/new, a streamed prompt, a client call', async () => {
    const stream = createWebSocketStream(demo.url.replace(/^http/, 'ws'), { WebSocket, headers: { Authorization: 'Bearer s3cret' } })
    assert.ok(await workflow(stream, work))
  })

  test("the README's remote client snippet runs against the demo as written", async () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
    const snippets = [...readme.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]).filter((t) => t.includes('experimental/http-client'))
    assert.equal(snippets.length, 1, 'the README has one remote client snippet')
    // This checkout installs SDK 2.4 as `acp-sdk-2`; the snippet's URL is an example port.
    const program = snippets[0].replaceAll("'@agentclientprotocol/sdk", "'acp-sdk-2").replace(/'http:\/\/127\.0\.0\.1:\d+\/acp'/, `'${demo.url}'`)
    assert.ok(program.includes(demo.url), 'the snippet names its URL as a string')
    const dir = mkdtempSync(join(fileURLToPath(new URL('.', import.meta.url)), '.readme-remote-'))
    try {
      const file = join(dir, 'remote_client.mjs')
      writeFileSync(file, `${program}\nprocess.exit(0)\n`)
      const run = spawn(process.execPath, [file], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] })
      let output = ''
      run.stdout.on('data', (d) => (output += d))
      run.stderr.on('data', (d) => (output += d))
      const code = await new Promise((resolve) => run.on('exit', resolve))
      assert.equal(code, 0, output)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('without the token the HTTP client is refused with 401 and nothing is served', async () => {
    const stream = createHttpStream(demo.url, { headers: { Authorization: 'Bearer wrong' } })
    await assert.rejects(
      acp.client({ name: 'intruder' }).connectWith(stream, (ctx) => ctx.request(acp.methods.agent.initialize, { protocolVersion: 1 })),
      /401/,
    )
  })

  test('--token and --allow-origin: each token acts as its name; a foreign Origin is answered 403 before the token is looked at', async () => {
    const post = (headers) =>
      fetch(demo.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } }),
      })
    assert.equal((await post({ Authorization: 'Bearer b0b' })).status, 200)
    assert.equal((await post({ Authorization: 'Bearer b0b', Origin: 'https://app.example' })).status, 200)
    assert.equal((await post({ Authorization: 'Bearer b0b', Origin: 'https://evil.example' })).status, 403)
    assert.equal((await post({ Authorization: 'Bearer nope', Origin: 'https://app.example' })).status, 401)
  })

  test('SIGTERM shuts the demo down gracefully: exit status 0', async () => {
    demo.child.kill('SIGTERM')
    const { code, signal } = await demo.exited
    assert.equal(signal, null, demo.stderr())
    assert.equal(code, 0, demo.stderr())
  })

  test('a non-loopback --listen without --token: exit status 2, one line on stderr, nothing on stdout', async () => {
    const [program, ...lead] = agent
    const child = spawn(program, [...lead, '--store', ':memory:', '--listen', '0.0.0.0:0'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    let stdout = ''
    child.stderr.on('data', (data) => (stderr += data))
    child.stdout.on('data', (data) => (stdout += data))
    const code = await new Promise((resolve) => child.on('exit', resolve))
    assert.equal(code, 2)
    assert.equal(stderr.trim().split('\n').length, 1, stderr)
    assert.match(stderr, /--listen 0\.0\.0\.0:0 is not a loopback address: give at least one --token/)
    assert.equal(stdout, '')
  })
})

test('the Rust and Node demos refuse the same bad remote command lines, with the same message', async () => {
  /** Runs `demo` with `args`; its status, its one stderr line's message (less the program's prefix and the --help hint), its stdout. */
  const run = async ([program, ...lead], args) => {
    const child = spawn(program, [...lead, '--store', ':memory:', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    let stdout = ''
    child.stderr.on('data', (data) => (stderr += data))
    child.stdout.on('data', (data) => (stdout += data))
    const code = await new Promise((resolve) => child.on('exit', resolve))
    const lines = stderr.trimEnd().split('\n')
    assert.equal(lines.length, 1, stderr)
    const message = /^[^:]+: (.*) \(see .*--help\)$/.exec(lines[0])?.[1]
    assert.ok(message, lines[0])
    return { code, message, stdout }
  }
  const rust = DEMOS.Rust()
  const node = DEMOS.Node()
  for (const args of [
    ['--listen'],
    ['--token'],
    ['--allow-origin'],
    ['--listen', '127.0.0.1:0', '--token', 'alice'],
    ['--listen', '127.0.0.1:0', '--token', ':s3cret'],
    ['--listen', '127.0.0.1:0', '--token', 'alice:'],
    ['--token', 'alice:s3cret'],
    ['--allow-origin', 'https://app.example'],
    ['--listen', 'nowhere'],
    ['--listen', '127.0.0.1:http'],
    ['--listen', '0.0.0.0:0'],
    ['--tls-cert'],
    ['--tls-key'],
    ['--listen', '127.0.0.1:0', '--tls-cert', 'cert.pem'],
    ['--listen', '127.0.0.1:0', '--tls-key', 'key.pem'],
    ['--tls-cert', 'cert.pem', '--tls-key', 'key.pem'],
  ]) {
    const [r, n] = [await run(rust, args), await run(node, args)]
    assert.equal(r.code, 2, args.join(' '))
    assert.deepEqual(n, r, args.join(' '))
  }
})
