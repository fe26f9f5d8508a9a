// `agent.serveHttp`: a Node agent served remotely (Streamable HTTP and WebSocket at one endpoint),
// driven by the official TypeScript SDK 2.4's remote clients (@agentclientprotocol/sdk, installed
// as `acp-sdk-2`) and, for the rules checked before any ACP is read, by plain HTTP requests:
// initialize, session/new and a prompt turn over each transport; the Node host's callbacks (a
// permission request, a file read through the client) over a remote connection; the token
// verifier (a refused token, one that throws, rejects or answers a wrong type: 401, and the server
// goes on); a foreign Origin (403); another principal's sessions; the graceful shutdown with a turn
// running; bad options; TLS (a certificate made here with the `openssl` command: initialize over
// HTTPS and WSS, the SDK clients over both, unusable files refused), `maxConnections` (503 with
// `Retry-After`) and `keepaliveIntervalMs` (a `: keepalive` comment on an SSE stream); the Node
// demo's `--tls-cert`/`--tls-key`; and the README's Node server snippet, run as written. The Node
// demo's `--listen`, `--token`, `--allow-origin` and SIGTERM run in remote_sdk.test.mjs, with the
// Rust demo's.

import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { request as httpsRequest } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'

import * as acp from 'acp-sdk-2'
import { createHttpStream } from 'acp-sdk-2/experimental/http-client'
import { createWebSocketStream } from 'acp-sdk-2/experimental/ws-client'
import { WebSocket } from 'ws'

import { Agent, MemoryStore, RemoteServer, Runner } from 'acp-facade'

import { DEMO_HOST, ROOT } from './support/client.mjs'

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
    [{ address: '127.0.0.1:0', maxBufferedBytes: 0 }, 'ERR_ACP_INVALID_ARG', /maxBufferedBytes must be a positive number of bytes/],
    [{ address: '127.0.0.1:0', maxConnections: 0 }, 'ERR_ACP_INVALID_ARG', /maxConnections must be a positive number of connections/],
    [{ address: '127.0.0.1:0', keepaliveIntervalMs: 0 }, 'ERR_ACP_INVALID_ARG', /keepaliveIntervalMs must be a positive number of milliseconds/],
    // Numbers out of range, not whole, or not numbers: refused, never wrapped around.
    [{ address: '127.0.0.1:0', maxConnections: -1 }, 'ERR_ACP_INVALID_ARG', /maxConnections must be a positive number of connections, a whole number up to 4294967295 \(got -1\)/],
    [{ address: '127.0.0.1:0', maxBufferedBytes: 2 ** 32 }, 'ERR_ACP_INVALID_ARG', /maxBufferedBytes must be a positive number of bytes, a whole number up to 4294967295 \(got 4294967296\)/],
    [{ address: '127.0.0.1:0', keepaliveIntervalMs: 1.5 }, 'ERR_ACP_INVALID_ARG', /keepaliveIntervalMs must be .* \(got 1\.5\)/],
    [{ address: '127.0.0.1:0', maxConnections: '10' }, 'ERR_ACP_INVALID_ARG', /maxConnections must be .* \(not a number\)/],
    [{ address: '127.0.0.1:0', maxBodySize: Number.NaN }, 'ERR_ACP_INVALID_ARG', /maxBodySize must be a positive number/],
    [{ address: '127.0.0.1:0', shutdownGraceMs: -1 }, 'ERR_ACP_INVALID_ARG', /shutdownGraceMs must be a number of milliseconds, a whole number up to 4294967295 \(got -1\)/],
    [{ address: '127.0.0.1:0', idleTimeoutMs: Infinity }, 'ERR_ACP_INVALID_ARG', /idleTimeoutMs must be a number of milliseconds/],
    [{ address: '127.0.0.1:0', tls: 'cert.pem' }, 'ERR_ACP_INVALID_ARG', /tls must be \{ cert, key \}/],
    [{ address: '127.0.0.1:0', tls: { cert: 'cert.pem' } }, 'ERR_ACP_INVALID_ARG', /tls\.key is not a non-empty string/],
    [{ address: '127.0.0.1:0', tls: { key: 'key.pem' } }, 'ERR_ACP_INVALID_ARG', /tls\.cert is not a non-empty string/],
    [{ address: '127.0.0.1:0', tls: { cert: '', key: 'key.pem' } }, 'ERR_ACP_INVALID_ARG', /tls\.cert is not a non-empty string/],
    [{ address: '127.0.0.1:0', tls: { cert: 'cert.pem', key: 7 } }, 'ERR_ACP_INVALID_ARG', /tls\.key is not a non-empty string/],
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

/**
 * A self-signed certificate for `localhost` and `127.0.0.1` and its key, made in `dir` with the
 * `openssl` command (a machine without it fails here: nothing is skipped); `{ cert, key }` paths.
 */
function certificate(dir, name = 'server') {
  const [cert, key] = [join(dir, `${name}.cert.pem`), join(dir, `${name}.key.pem`)]
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ], { stdio: ['ignore', 'ignore', 'pipe'] })
  return { cert, key }
}

/** An `initialize` POST over HTTPS trusting `ca`; resolves with `{ status, headers, body }`. */
function httpsInitialize(url, ca) {
  return new Promise((resolve, reject) => {
    const request = httpsRequest(url, { method: 'POST', ca, headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' } }, (response) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk) => (body += chunk))
      response.on('end', () => resolve({ status: response.statusCode, headers: response.headers, body }))
    })
    request.on('error', reject)
    request.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } }))
  })
}

describe('serveHttp over TLS', () => {
  let dir
  let files
  let ca
  let server
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'acp-serve-https-'))
    files = certificate(dir)
    ca = readFileSync(files.cert)
    server = await agent().serveHttp({ address: '127.0.0.1:0', tls: files })
  })
  after(async () => {
    await server?.shutdown()
    rmSync(dir, { recursive: true, force: true })
  })

  test('its url says https', () => {
    assert.equal(server.url, `https://127.0.0.1:${server.port}/acp`)
  })

  test('HTTPS (node:https trusting the certificate): initialize is answered; plain HTTP is not served', async () => {
    const response = await httpsInitialize(server.url, ca)
    assert.equal(response.status, 200, response.body)
    assert.ok(response.headers['acp-connection-id'], 'an HTTP connection was made')
    assert.deepEqual(JSON.parse(response.body).result.agentInfo, { name: 'node-remote', version: '1.0.0' })
    // The same port spoken to in plain HTTP, or with a client that does not trust the certificate.
    await assert.rejects(rawInitialize(server.url.replace(/^https/, 'http')))
    await assert.rejects(httpsInitialize(server.url, undefined), /self[- ]signed/i)
  })

  test('WSS (ws trusting the certificate): initialize is answered', async () => {
    const socket = new WebSocket(server.url.replace(/^https/, 'wss'), { ca })
    const answer = new Promise((resolve, reject) => {
      socket.on('message', (data) => resolve(JSON.parse(String(data))))
      socket.on('error', reject)
    })
    await new Promise((resolve, reject) => socket.on('open', resolve).on('error', reject))
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } }))
    const reply = await answer
    assert.equal(reply.id, 1)
    assert.equal(reply.result.protocolVersion, 1)
    socket.close()
  })

  test('the SDK WebSocket client over WSS (a ws constructor trusting the certificate): initialize, session/new, a streamed prompt', async () => {
    class TrustingWebSocket extends WebSocket {
      constructor(url, protocols, options) {
        super(url, protocols, { ...options, ca })
      }
    }
    const { client, seen } = app()
    await client.connectWith(createWebSocketStream(server.url.replace(/^https/, 'wss'), { WebSocket: TrustingWebSocket }), async (ctx) => {
      await initialize(ctx)
      const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: dir, mcpServers: [] })
      const reply = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'stream 2' }] })
      assert.equal(reply.stopReason, 'end_turn')
    })
    assert.equal(said(seen.updates), 't1 t2 ')
  })

  test('the SDK Streamable HTTP client over HTTPS, in a process trusting the certificate (NODE_EXTRA_CA_CERTS)', async () => {
    const program = `
      import * as acp from 'acp-sdk-2'
      import { createHttpStream } from 'acp-sdk-2/experimental/http-client'
      const { methods } = acp
      let text = ''
      const client = acp.client({ name: 'https' }).onNotification(methods.client.session.update, ({ params }) => {
        if (params.update.sessionUpdate === 'agent_message_chunk') text += params.update.content.text
      })
      const stop = await client.connectWith(createHttpStream(${JSON.stringify(server.url)}), async (ctx) => {
        await ctx.request(methods.agent.initialize, { protocolVersion: 1 })
        const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: ${JSON.stringify(dir)}, mcpServers: [] })
        return (await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'stream 3' }] })).stopReason
      })
      process.stdout.write(JSON.stringify({ stop, text }))
      process.exit(0)
    `
    // In the test directory, so that `acp-sdk-2` resolves from this checkout's node_modules.
    const file = join(ROOT, 'bindings-node/test', `.https-client-${process.pid}.mjs`)
    writeFileSync(file, program)
    try {
      const child = spawn(process.execPath, [file], { env: { ...process.env, NODE_EXTRA_CA_CERTS: files.cert }, stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (d) => (stdout += d))
      child.stderr.on('data', (d) => (stderr += d))
      const code = await new Promise((resolve) => child.on('exit', resolve))
      assert.equal(code, 0, stderr)
      assert.deepEqual(JSON.parse(stdout), { stop: 'end_turn', text: 't1 t2 t3 ' })
    } finally {
      rmSync(file, { force: true })
    }
  })

  test('TLS files that cannot be used: the Promise rejects with ERR_ACP_INVALID_ARG naming the file', async () => {
    const other = certificate(dir, 'other')
    const notPem = join(dir, 'not.pem')
    writeFileSync(notPem, 'not a certificate\n')
    const missing = join(dir, 'missing.pem')
    const refused = (tls, file, what) =>
      assert.rejects(agent().serveHttp({ address: '127.0.0.1:0', tls }), (e) => {
        assert.equal(e.code, 'ERR_ACP_INVALID_ARG', e.message)
        assert.ok(e.message.includes(file), `${e.message} names ${file}`)
        assert.match(e.message, what)
        return true
      })
    await refused({ cert: missing, key: files.key }, missing, /not a readable PEM certificate chain/)
    await refused({ cert: notPem, key: files.key }, notPem, /no PEM certificate in it/)
    await refused({ cert: files.cert, key: missing }, missing, /not a readable PEM private key/)
    await refused({ cert: files.cert, key: other.key }, other.key, /not a key for the certificate/)
    // Nothing was left listening, and the server that runs goes on.
    assert.equal((await httpsInitialize(server.url, ca)).status, 200)
  })
})

describe('the remote limits', () => {
  test('maxConnections: 1 — a second connection is answered 503 with Retry-After; the open one is served, and a place freed is taken again', async () => {
    const server = await agent().serveHttp({ address: '127.0.0.1:0', maxConnections: 1 })
    try {
      const first = await rawInitialize(server.url)
      assert.equal(first.status, 200)
      const connection = first.headers.get('acp-connection-id')
      const second = await rawInitialize(server.url)
      assert.equal(second.status, 503)
      assert.ok(Number(second.headers.get('retry-after')) > 0, 'Retry-After in seconds')
      const upgrade = await new Promise((resolve) => {
        const socket = new WebSocket(server.url.replace(/^http/, 'ws'))
        socket.on('unexpected-response', (_request, response) => resolve(response))
        socket.on('open', () => resolve('opened'))
      })
      assert.equal(upgrade.statusCode, 503, 'a WebSocket over the limit')
      assert.ok(upgrade.headers['retry-after'])
      const list = await fetch(server.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Acp-Connection-Id': connection },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'session/list', params: {} }),
      })
      assert.equal(list.status, 202, 'the open connection is served as before')
      assert.equal((await fetch(server.url, { method: 'DELETE', headers: { 'Acp-Connection-Id': connection } })).ok, true)
      // The hang-up completes on the core's threads: poll until the place is taken again.
      let status
      do status = (await rawInitialize(server.url)).status
      while (status === 503)
      assert.equal(status, 200)
    } finally {
      await server.shutdown()
    }
  })

  test('keepaliveIntervalMs: an idle SSE stream carries `: keepalive` comments', async () => {
    const server = await agent().serveHttp({ address: '127.0.0.1:0', keepaliveIntervalMs: 50, maxBufferedBytes: 65536 })
    try {
      const connection = (await rawInitialize(server.url)).headers.get('acp-connection-id')
      const controller = new AbortController()
      const stream = await fetch(server.url, { headers: { Accept: 'text/event-stream', 'Acp-Connection-Id': connection }, signal: controller.signal })
      assert.equal(stream.status, 200)
      assert.equal(stream.headers.get('content-type'), 'text/event-stream')
      let raw = ''
      const decoder = new TextDecoder()
      for await (const chunk of stream.body) {
        raw += decoder.decode(chunk, { stream: true })
        if (raw.includes(': keepalive\n')) break
      }
      assert.match(raw, /^: keepalive$/m)
      controller.abort()
    } finally {
      await server.shutdown()
    }
  })
})

/** Starts the Node demo with `args`; resolves with its status, stderr and stdout once it exits. */
async function demo(args, { until } = {}) {
  const child = spawn(process.execPath, [DEMO_HOST, '--store', ':memory:', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  let stdout = ''
  child.stdout.on('data', (data) => (stdout += data))
  let signalled = false
  child.stderr.on('data', (data) => {
    stderr += data
    // Once: a second SIGTERM during the graceful shutdown would end the demo by its default action.
    if (!signalled && until?.test(stderr)) signalled = child.kill('SIGTERM')
  })
  const code = await new Promise((resolve) => child.on('exit', resolve))
  return { code, stderr, stdout }
}

test('the Node demo with --tls-cert and --tls-key listens on https; one without the other exits 2', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-demo-tls-'))
  try {
    const { cert, key } = certificate(dir)
    const listening = /^listening on (https:\/\/127\.0\.0\.1:\d+\/acp)$/m
    const served = await demo(['--listen', '127.0.0.1:0', '--tls-cert', cert, '--tls-key', key], { until: listening })
    assert.match(served.stderr, listening)
    assert.equal(served.code, 0, served.stderr)
    assert.equal(served.stdout, '')
    for (const args of [['--tls-cert', cert], ['--tls-key', key]]) {
      const refused = await demo(['--listen', '127.0.0.1:0', ...args])
      assert.equal(refused.code, 2, refused.stderr)
      assert.equal(refused.stderr, 'demo_host.mjs: --tls-cert and --tls-key go together: give both or neither (see --help)\n')
      assert.equal(refused.stdout, '')
    }
    const usage = await demo(['--help'])
    assert.match(usage.stdout, /--tls-cert FILE --tls-key FILE/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
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
