// `agent.serveHttp`: a Node agent served remotely (Streamable HTTP and WebSocket at one endpoint),
// driven by the official TypeScript SDK 2.4's remote clients (@agentclientprotocol/sdk, installed
// as `acp-sdk-2`) and, for the rules checked before any ACP is read, by plain HTTP requests:
// initialize, session/new and a prompt turn over each transport; the Node host's callbacks (a
// permission request, a file read through the client) over a remote connection; the token
// verifier (a refused token, one that throws, rejects or answers a wrong type: 401, and the server
// goes on); a foreign Origin (403); another principal's sessions; the graceful shutdown with a turn
// running; bad options; and the README's Node server snippet, run as written. The Node demo's
// `--listen`, `--token`, `--allow-origin` and SIGTERM run in remote_sdk.test.mjs, with the Rust
// demo's.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'

import * as acp from 'acp-sdk-2'
import { createHttpStream } from 'acp-sdk-2/experimental/http-client'
import { createWebSocketStream } from 'acp-sdk-2/experimental/ws-client'
import { WebSocket } from 'ws'

import { Agent, MemoryStore, RemoteServer, Runner } from 'acp-facade'

import { ROOT } from './support/client.mjs'

const { methods } = acp

/** Bearer tokens the verifier knows, by the principal they act as. */
const TOKENS = { alice: 'alice-secret', bob: 'bob-secret' }

/**
 * The verifier under test: a known token is its principal; the tokens `throws`, `rejects`, `number`
 * and `empty` make it throw, reject, answer 42 and answer ''; anything else is refused (undefined).
 * Every call is recorded.
 */
const verified = []
function tokenVerifier(token) {
  verified.push(token)
  if (token === 'throws') throw new Error('the verifier broke')
  if (token === 'rejects') return Promise.reject(new Error('the verifier rejected'))
  if (token === 'number') return 42
  if (token === 'empty') return ''
  // `async:TOKEN`: the same answer, as a Promise.
  const awaited = token.startsWith('async:')
  const secret = awaited ? token.slice('async:'.length) : token
  const principal = Object.entries(TOKENS).find(([, known]) => known === secret)?.[0]
  return awaited ? Promise.resolve(principal) : principal
}

/** Releases the `hold` turns (see `runTurn`). */
let release
let held = new Promise((resolve) => (release = resolve))
/** Resolved when a `hold` turn has started. */
let entered
let holding = new Promise((resolve) => (entered = resolve))

const runner = new Runner(new MemoryStore(), {
  async runTurn(turn) {
    const [verb, ...words] = turn.promptText.split(/\s+/).filter(Boolean)
    if (verb === 'stream') {
      for (let i = 1; i <= Number(words[0]); i++) await turn.text(`t${i} `)
    } else if (verb === 'guarded') {
      // A host callback over the remote connection: a permission request, then a file read.
      const call = await turn.startToolCall(`Read ${words[0]}`, 'read', { path: words[0] })
      const answer = await turn.requestPermission(call, `Read ${words[0]}?`)
      if (answer !== 'allowed') {
        await turn.failToolCall(call, answer)
        await turn.text(`not read: ${answer}`)
        return 'end_turn'
      }
      const text = await turn.client.readTextFile(words[0])
      await turn.completeToolCall(call, text)
      await turn.text(`read: ${text}`)
    } else if (verb === 'hold') {
      entered()
      await held
      await turn.text('released')
    } else {
      await turn.text(`echo ${turn.promptText}`)
    }
    return 'end_turn'
  },
})

/** An agent of the runner, as a product would make it. */
const agent = () => runner.agent({ agentName: 'node-remote', agentVersion: '1.0.0' })

/** The text of the `agent_message_chunk`s among `updates` (session/update params). */
const said = (updates) =>
  updates
    .filter((u) => u.update?.sessionUpdate === 'agent_message_chunk' && u.update.content.type === 'text')
    .map((u) => u.update.content.text)
    .join('')

/** A bearer header for `principal`'s token (or a raw token). */
const bearer = (token) => ({ Authorization: `Bearer ${token}` })

/** A client app recording updates, permission requests and file reads; permissions answered `allow`. */
function app({ allow = true } = {}) {
  const seen = { updates: [], permissions: [], reads: [] }
  const client = acp
    .client({ name: 'serve-http test' })
    .onNotification(methods.client.session.update, ({ params }) => seen.updates.push(params))
    .onRequest(methods.client.session.requestPermission, ({ params }) => {
      seen.permissions.push(params)
      const option = params.options.find((o) => o.kind === (allow ? 'allow_once' : 'reject_once'))
      return { outcome: { outcome: 'selected', optionId: option.optionId } }
    })
    .onRequest(methods.client.fs.readTextFile, ({ params }) => {
      seen.reads.push(params.path)
      return { content: `contents of ${params.path}` }
    })
  return { client, seen }
}

/** Initializes with a client that reads files. */
const initialize = (ctx) =>
  ctx.request(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: false } },
    clientInfo: { name: 'serve-http test', version: '1' },
  })

/** A raw `initialize` POST (what the guard sees first); resolves with the response. */
function rawInitialize(url, headers = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } }),
  })
}

describe('agent.serveHttp serves a Node runner remotely', () => {
  let server
  let work
  let closed = false
  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'acp-serve-http-'))
    server = await agent().serveHttp({
      address: '127.0.0.1:0',
      tokenVerifier,
      allowedOrigins: ['https://app.example'],
      shutdownGraceMs: 60_000,
    })
    server.closed.then(() => (closed = true))
  })
  after(async () => {
    release()
    await server?.shutdown()
    rmSync(work, { recursive: true, force: true })
  })

  test('it listens where it says: url, address, port', () => {
    assert.ok(server instanceof RemoteServer)
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/acp$/)
    assert.equal(server.address, `127.0.0.1:${server.port}`)
    assert.ok(server.port > 0)
    assert.equal(server.url, `http://${server.address}/acp`)
    assert.ok(server.closed instanceof Promise)
  })

  for (const [transport, open] of [
    ['Streamable HTTP', (url, headers) => createHttpStream(url, { headers })],
    ['WebSocket', (url, headers) => createWebSocketStream(url.replace(/^http/, 'ws'), { WebSocket, headers })],
  ]) {
    test(`${transport}: initialize, session/new, a streamed prompt turn`, async () => {
      const { client, seen } = app()
      await client.connectWith(open(server.url, bearer(TOKENS.alice)), async (ctx) => {
        const init = await initialize(ctx)
        assert.deepEqual(init.agentInfo, { name: 'node-remote', version: '1.0.0' })
        assert.ok(server.connections >= 1, 'the connection is counted')
        const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: work, mcpServers: [] })
        const reply = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'stream 3' }] })
        assert.equal(reply.stopReason, 'end_turn')
        assert.equal(said(seen.updates), 't1 t2 t3 ')
        assert.ok(seen.updates.every((u) => u.sessionId === sessionId))
      })
    })

    test(`${transport}: the Node host's callbacks reach the remote client (a permission request, a file read)`, async () => {
      const path = join(work, 'notes.txt')
      for (const allow of [true, false]) {
        const { client, seen } = app({ allow })
        await client.connectWith(open(server.url, bearer(TOKENS.alice)), async (ctx) => {
          await initialize(ctx)
          const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: work, mcpServers: [] })
          const reply = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: `guarded ${path}` }] })
          assert.equal(reply.stopReason, 'end_turn')
          assert.equal(seen.permissions.length, 1)
          assert.equal(seen.permissions[0].sessionId, sessionId)
          assert.equal(typeof seen.permissions[0].toolCall.toolCallId, 'string')
          if (allow) {
            assert.deepEqual(seen.reads, [path])
            assert.equal(said(seen.updates), `read: contents of ${path}`)
          } else {
            assert.deepEqual(seen.reads, [])
            assert.equal(said(seen.updates), 'not read: denied')
          }
        })
      }
    })
  }

  test('a token the verifier refuses, or a verifier that throws, rejects or answers a wrong type: 401, and the server goes on', async () => {
    for (const token of ['wrong', 'throws', 'rejects', 'number', 'empty']) {
      const before = verified.length
      const response = await rawInitialize(server.url, bearer(token))
      assert.equal(response.status, 401, token)
      assert.equal(response.headers.get('www-authenticate'), 'Bearer')
      assert.equal(response.headers.get('acp-connection-id'), null, 'no connection was made')
      assert.deepEqual(verified.slice(before), [token], 'the verifier saw the token')
      // The next request with a good token is served as before.
      const good = await rawInitialize(server.url, bearer(TOKENS.bob))
      assert.equal(good.status, 200, token)
      assert.equal((await good.json()).result.protocolVersion, 1)
    }
    const none = await rawInitialize(server.url)
    assert.equal(none.status, 401, 'no token at all')
    // A Promise of the principal is as good as the principal, and a Promise of undefined refuses.
    assert.equal((await rawInitialize(server.url, bearer(`async:${TOKENS.alice}`))).status, 200, 'a known token, awaited')
    assert.equal((await rawInitialize(server.url, bearer('async:wrong'))).status, 401, 'an unknown token, awaited')
  })

  test('the SDK client with a refused token fails with 401 and is served nothing', async () => {
    const stream = createHttpStream(server.url, { headers: bearer('throws') })
    await assert.rejects(acp.client({ name: 'intruder' }).connectWith(stream, (ctx) => initialize(ctx)), /401/)
  })

  test('an Origin that is not allowed: 403; an allowed one is served', async () => {
    const foreign = await rawInitialize(server.url, { ...bearer(TOKENS.alice), Origin: 'https://evil.example' })
    assert.equal(foreign.status, 403)
    const allowed = await rawInitialize(server.url, { ...bearer(TOKENS.alice), Origin: 'https://app.example' })
    assert.equal(allowed.status, 200)
  })

  test("another principal's session does not exist for bob: not listed, and loading it answers as an unknown id", async () => {
    const aliceSession = await app().client.connectWith(createHttpStream(server.url, { headers: bearer(TOKENS.alice) }), async (ctx) => {
      await initialize(ctx)
      const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: work, mcpServers: [] })
      await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'mine' }] })
      const { sessions } = await ctx.request(methods.agent.session.list, {})
      assert.ok(sessions.some((s) => s.sessionId === sessionId), 'alice lists her own session')
      return sessionId
    })
    await app().client.connectWith(createHttpStream(server.url, { headers: bearer(TOKENS.bob) }), async (ctx) => {
      await initialize(ctx)
      const { sessions } = await ctx.request(methods.agent.session.list, {})
      assert.ok(!sessions.some((s) => s.sessionId === aliceSession), "bob does not list alice's session")
      const failure = (sessionId) =>
        ctx.request(methods.agent.session.load, { sessionId, cwd: work, mcpServers: [] }).then(
          () => assert.fail('loaded'),
          (e) => ({ code: e.code, message: e.message.replaceAll(sessionId, 'ID') }),
        )
      const unknown = 'no-such-session'
      assert.deepEqual(await failure(aliceSession), await failure(unknown))
    })
  })

  test('the graceful shutdown: a new connection is refused (503) while a running turn finishes and is answered; then `closed` resolves', async () => {
    const { client, seen } = app()
    assert.equal(closed, false, '`closed` is pending while the server runs')
    let stopping
    const turn = client.connectWith(createHttpStream(server.url, { headers: bearer(TOKENS.alice) }), async (ctx) => {
      await initialize(ctx)
      const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: work, mcpServers: [] })
      const prompt = ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'hold' }] })
      await holding
      stopping = server.shutdown()
      // The shutdown begins on the core's threads: poll until a new connection is refused.
      let status
      do status = (await rawInitialize(server.url, bearer(TOKENS.alice))).status
      while (status === 200)
      assert.equal(status, 503)
      release()
      return prompt
    })
    const reply = await turn
    assert.equal(reply.stopReason, 'end_turn', 'the turn ran to its end')
    assert.equal(said(seen.updates), 'released')
    await stopping
    await server.closed
    assert.equal(closed, true)
    assert.equal(server.connections, 0)
    await server.shutdown() // again: resolves alike
    await assert.rejects(rawInitialize(server.url), 'nothing listens any more')
    held = new Promise((resolve) => (release = resolve))
    holding = new Promise((resolve) => (entered = resolve))
  })
})

describe('serveHttp checks its options', () => {
  const bad = [
    [{ address: 'nowhere' }, 'ERR_ACP_INVALID_ARG', /address must be HOST:PORT, got "nowhere"/],
    [{ address: '0.0.0.0:0' }, 'ERR_ACP_INVALID_ARG', /non-loopback address 0\.0\.0\.0:0 without a token verifier/],
    [{ address: '127.0.0.1:0', path: 'acp' }, 'ERR_ACP_INVALID_ARG', /path must be a plain absolute path/],
    [{ address: '127.0.0.1:0', path: '/{id}' }, 'ERR_ACP_INVALID_ARG', /path must be a plain absolute path/],
    [{ address: '127.0.0.1:0', maxBodySize: 0 }, 'ERR_ACP_INVALID_ARG', /maxBodySize must be a positive number/],
    // Options of the wrong type.
    [{ address: '127.0.0.1:0', tokenVerifier: 'alice' }, 'ERR_ACP_INVALID_ARG', /tokenVerifier must be a function/],
    [{}, undefined, /address/],
  ]
  for (const [options, code, message] of bad) {
    test(`${JSON.stringify(options)}: ${code ?? 'refused'}`, async () => {
      await assert.rejects(
        async () => agent().serveHttp(options),
        (e) => (code === undefined || e.code === code) && message.test(e.message),
      )
    })
  }

  test('an address in use: ERR_ACP_IO', async () => {
    const first = await agent().serveHttp({ address: '127.0.0.1:0' })
    try {
      await assert.rejects(agent().serveHttp({ address: first.address }), (e) => e.code === 'ERR_ACP_IO' && /cannot serve on/.test(e.message))
    } finally {
      await first.shutdown()
    }
  })

  test('a host name is resolved; the path, the body limit and an agent made from host interfaces are served', async () => {
    const host = {
      async newSession() {
        return { async prompt() { return 'end_turn' } }
      },
    }
    const server = await new Agent(host, { agentName: 'hosted' }).serveHttp({ address: 'localhost:0', path: '/v1/agent', maxBodySize: 1024 })
    try {
      assert.match(server.url, /^http:\/\/(127\.0\.0\.1|\[::1\]):\d+\/v1\/agent$/)
      const init = await rawInitialize(server.url)
      assert.equal(init.status, 200)
      assert.equal((await init.json()).result.agentInfo.name, 'hosted')
      const big = await fetch(server.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1, pad: 'x'.repeat(2048) } }),
      })
      assert.equal(big.status, 413)
      assert.equal((await fetch(server.url.replace('/v1/agent', '/acp'), { method: 'POST' })).status, 404)
    } finally {
      await server.shutdown()
    }
  })
})

test("the README's Node server snippet runs as written: it serves the SDK client with its token, and SIGTERM ends it", async () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const snippets = [...readme.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]).filter((t) => t.includes('.serveHttp('))
  assert.equal(snippets.length, 1, 'the README has one Node server snippet')
  const dir = mkdtempSync(join(tmpdir(), 'acp-facade-readme-remote-'))
  try {
    mkdirSync(join(dir, 'node_modules'))
    symlinkSync(ROOT, join(dir, 'node_modules', 'acp-facade'), 'dir')
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'remote-agent', private: true, type: 'module' }))
    writeFileSync(join(dir, 'server.mjs'), snippets[0])
    const child = spawn(process.execPath, ['server.mjs'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
    const url = await new Promise((resolve, reject) => {
      child.stderr.on('data', (data) => {
        stderr += data
        const match = /^listening on (http:\/\/127\.0\.0\.1:\d+\/acp)$/m.exec(stderr)
        if (match) resolve(match[1])
      })
      child.on('exit', (code) => reject(new Error(`the snippet exited (${code}) before listening: ${stderr}`)))
    })
    const token = /tokens = new Map\(\[\['([^']+)'/.exec(snippets[0])?.[1]
    assert.ok(token, 'the snippet names its token')
    const { client, seen } = app()
    await client.connectWith(createHttpStream(url, { headers: bearer(token) }), async (ctx) => {
      await initialize(ctx)
      const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: dir, mcpServers: [] })
      const reply = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'hello' }] })
      assert.equal(reply.stopReason, 'end_turn')
    })
    assert.equal(said(seen.updates), 'you said: hello')
    assert.equal((await rawInitialize(url, bearer('wrong'))).status, 401)
    child.kill('SIGTERM')
    assert.deepEqual(await exited, { code: 0, signal: null }, stderr)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
