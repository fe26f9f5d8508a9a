// The host interfaces (bindings-node/src/host.rs) and the turn runner in-process, served over
// caller-supplied streams (`agent.serve(input, output)`) to the official client: Promise and plain
// return values, `this`, optional methods switching capabilities, AcpError codes, throws and
// rejections, Promises that never settle; and a host answering from `process.nextTick`, in a
// process of its own.

import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

import { AcpError, Agent, Client, ErrorCode, EventHub, MemoryStore, Runner } from 'acp-facade'

import { chunkText, serveInProcess, spawnAgent, textPrompt } from './support/client.mjs'

const TICK_HOST = fileURLToPath(new URL('./fixtures/tick_host.mjs', import.meta.url))

/** A minimal live session: echoes the prompt as one chunk, or never ends with `hang`. */
class EchoSession {
  constructor(id) {
    this.id = id
    this.events = new EventHub()
    this.turns = 0
    this.interrupted = 0
    this.running = null
  }

  submit(prompt) {
    const n = ++this.turns
    const commandId = `${this.id}/c${n}`
    const at = { loopId: 'main', turnId: `t${n}` }
    const text = prompt.find((b) => b.type === 'text')?.text ?? ''
    this.events.publish({ ...at, class: 'enduring', commandId, kind: { type: 'turnStarted', message: { content: prompt } } })
    if (text === 'hang') {
      this.running = at
      return commandId
    }
    this.events.publish({ ...at, kind: { type: 'tokenDelta', text: `echo: ${text}`, channel: 'message' } })
    this.events.publish({ ...at, kind: { type: 'tokenDelta', text: 'secret', channel: 'message' }, visibility: 'internal' })
    this.events.publish({ ...at, class: 'enduring', kind: { type: 'turnDone', stop: 'end_turn' } })
    return Promise.resolve(commandId)
  }

  async interrupt() {
    this.interrupted++
    if (this.running) {
      this.events.publish({ ...this.running, class: 'enduring', kind: { type: 'turnInterrupted' } })
      this.running = null
    }
  }

  respondGate() {}
}

class Host {
  constructor() {
    this.sessions = new Map()
  }

  // A plain (non-Promise) return value, using `this`.
  newSession(setup) {
    const session = new EchoSession(`js-${this.sessions.size + 1}`)
    session.cwd = setup.cwd
    this.sessions.set(session.id, session)
    return session
  }
}

describe('host interfaces', () => {
  test('a class host with plain return values and `this`; internal events never reach the client', async () => {
    const host = new Host()
    const conn = serveInProcess(new Agent(host))
    await conn.initialize()
    const { sessionId } = await conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] })
    assert.equal(sessionId, 'js-1')
    const response = await conn.connection.prompt(textPrompt(sessionId, 'hi there'))
    assert.equal(response.stopReason, 'end_turn')
    assert.equal(chunkText(conn.updatesOf(sessionId)), 'echo: hi there')
    await conn.end()
  })

  test('newSession receives the setup as { cwd, additionalDirectories, mcpServers, client }', async () => {
    const setups = []
    const conn = serveInProcess(
      new Agent({
        newSession(setup) {
          setups.push(setup)
          return new EchoSession('setup-1')
        },
      }),
    )
    await conn.initialize()
    const server = { name: 'fs', command: '/bin/mcp-fs', args: ['--ro'], env: [] }
    await conn.connection.newSession({ cwd: '/nonexistent/acp-facade', mcpServers: [server] })
    const [{ client, ...setup }] = setups
    assert.deepEqual(setup, { cwd: '/nonexistent/acp-facade', additionalDirectories: [], mcpServers: [server] })
    assert.deepEqual(Object.keys(setups[0]), ['cwd', 'additionalDirectories', 'mcpServers', 'client'])
    assert.ok(client instanceof Client)
    assert.equal(client.capabilities.readTextFile, false)
    await conn.end()
  })

  test('the agent holds a live session until it is closed, then lets it be collected', async () => {
    // A host that keeps no session itself: only the agent's reference keeps one alive.
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc')
    const collected = []
    const registry = new FinalizationRegistry((id) => collected.push(id))
    let made = 0
    const host = {
      newSession() {
        const session = new EchoSession(`kept-${++made}`)
        registry.register(session, session.id)
        return session
      },
    }
    const conn = serveInProcess(new Agent(host))
    await conn.initialize()
    const first = (await conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] })).sessionId
    const second = (await conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] })).sessionId
    assert.equal((await conn.connection.prompt(textPrompt(first, 'one'))).stopReason, 'end_turn')
    await conn.connection.closeSession({ sessionId: first })
    for (let round = 0; round < 50 && collected.length === 0; round++) {
      gc()
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    assert.deepEqual(collected, [first], 'the closed session is released, the open one kept')
    // The open one still answers: its object and methods are intact after collections.
    assert.equal((await conn.connection.prompt(textPrompt(second, 'two'))).stopReason, 'end_turn')
    assert.match(chunkText(conn.updatesOf(second)), /echo: two/)
    await conn.end()
  })

  test('optional methods switch capabilities on', async () => {
    const bare = serveInProcess(new Agent(new Host()))
    const init = await bare.initialize()
    assert.equal(init.agentCapabilities.loadSession, false)
    assert.deepEqual(Object.keys(init.agentCapabilities.sessionCapabilities ?? {}), ['close'])
    await bare.end()

    const host = Object.assign(new Host(), {
      listSessions: async () => [{ sessionId: 'old-1', cwd: tmpdir(), title: 'Old' }],
      deleteSession: async () => {},
      resumeSession(sessionId) {
        return this.newSession({ cwd: tmpdir() })
      },
      loadSession: async (sessionId, setup) => ({ session: new EchoSession(sessionId), history: [] }),
    })
    const full = serveInProcess(new Agent(host))
    const caps = await full.initialize()
    assert.equal(caps.agentCapabilities.loadSession, true)
    assert.deepEqual(Object.keys(caps.agentCapabilities.sessionCapabilities).sort(), ['close', 'delete', 'list', 'resume'])
    const listed = await full.connection.listSessions({})
    assert.deepEqual(listed.sessions.map((s) => [s.sessionId, s.title]), [['old-1', 'Old']])
    await full.end()
  })

  test('a host answering from process.nextTick or a microtask is answered', async () => {
    // In a process of its own, where nothing else wakes the host's event loop (fixtures/tick_host.mjs).
    const agent = spawnAgent([], { script: TICK_HOST })
    await agent.initialize()
    for (const expected of ['tick-1', 'tick-2', 'tick-3', 'tick-4']) {
      const { sessionId } = await agent.connection.newSession({ cwd: tmpdir(), mcpServers: [] })
      assert.equal(sessionId, expected)
    }
    assert.deepEqual(await agent.hangUp(), { code: 0, signal: null }, agent.stderr())
  })

  test('a rejection with an AcpError answers its code, message and data', async () => {
    const host = {
      newSession: async () => {
        throw new AcpError(-32042, 'no room today', { retryAfter: 5 })
      },
    }
    const conn = serveInProcess(new Agent(host))
    await conn.initialize()
    await assert.rejects(conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] }), (e) => {
      assert.equal(e.code, -32042)
      assert.match(e.message, /no room today/)
      assert.deepEqual(e.data, { retryAfter: 5 })
      return true
    })
    await conn.end()
  })

  test('a synchronous throw, a plain rejection and a thrown string answer -32603 with the message', async () => {
    const failures = [
      () => {
        throw new Error('sync boom')
      },
      () => Promise.reject(new TypeError('async boom')),
      () => {
        throw 'a bare string'
      },
    ]
    let n = 0
    const conn = serveInProcess(new Agent({ newSession: (setup) => failures[n++](setup) }))
    await conn.initialize()
    for (const expected of ['sync boom', 'async boom', 'a bare string']) {
      await assert.rejects(conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] }), (e) => {
        assert.equal(e.code, ErrorCode.INTERNAL_ERROR)
        assert.match(e.message, new RegExp(expected))
        return true
      })
    }
    // The connection serves on.
    await conn.end()
  })

  test('a submit Promise that never settles is answered cancelled on session/cancel, and close ends it', async () => {
    const host = new Host()
    host.newSession = function newSession() {
      const session = Host.prototype.newSession.call(this, { cwd: tmpdir() })
      session.submit = () => new Promise(() => {})
      return session
    }
    const conn = serveInProcess(new Agent(host, { cancelGraceMs: 200, closeGraceMs: 200 }))
    await conn.initialize()
    const { sessionId } = await conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] })
    const pending = conn.connection.prompt(textPrompt(sessionId, 'anything'))
    setTimeout(() => conn.connection.cancel({ sessionId }), 50)
    assert.equal((await pending).stopReason, 'cancelled')
    const again = conn.connection.prompt(textPrompt(sessionId, 'anything'))
    await new Promise((r) => setTimeout(r, 50))
    await conn.connection.closeSession({ sessionId })
    assert.equal((await again).stopReason, 'cancelled')
    await conn.end()
  })

  test('interrupt reaches the host and a hanging turn ends cancelled', async () => {
    const host = new Host()
    const conn = serveInProcess(new Agent(host))
    await conn.initialize()
    const { sessionId } = await conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] })
    const pending = conn.connection.prompt(textPrompt(sessionId, 'hang'))
    setTimeout(() => conn.connection.cancel({ sessionId }), 50)
    assert.equal((await pending).stopReason, 'cancelled')
    assert.equal(host.sessions.get(sessionId).interrupted, 1)
    await conn.end()
  })

  test('publish always returns a Promise, takes camelCase kinds and refuses snake_case ones with the name to use', async () => {
    const hub = new EventHub()
    const paced = hub.publish({ kind: { type: 'tokenDelta', text: 'x', channel: 'message' } })
    assert.ok(paced instanceof Promise)
    await paced
    await hub.publish({ kind: { type: 'toolCallCompleted', callId: 'c', output: [], isError: false, rawOutput: { keep_me: 1 } } })
    assert.throws(
      () => hub.publish({ kind: { type: 'token_delta', text: 'x', channel: 'message' } }),
      (e) => e.code === 'ERR_ACP_INVALID_ARG' && /`type: "tokenDelta"`/.test(e.message),
    )
    assert.throws(
      () => hub.publish({ kind: { type: 'gateResolved', gate_id: 'g' } }),
      (e) => e.code === 'ERR_ACP_INVALID_ARG' && /`gateId`/.test(e.message),
    )
  })

  test('a host without newSession is refused with a stable code', () => {
    assert.throws(() => new Agent({}), (e) => e.code === 'ERR_ACP_INVALID_ARG')
  })
})

describe('turn runner in-process', () => {
  test('runTurn throwing fails the prompt with -32603 and its message; the session serves on', async () => {
    let calls = 0
    const runner = new Runner(new MemoryStore(), {
      runTurn(turn) {
        if (++calls === 1) throw new Error('model exploded')
        turn.text('fine')
        return 'end_turn'
      },
    })
    const conn = serveInProcess(runner.agent())
    await conn.initialize()
    const { sessionId } = await conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] })
    await assert.rejects(conn.connection.prompt(textPrompt(sessionId, 'x')), (e) => e.code === -32603 && /model exploded/.test(e.message))
    assert.equal((await conn.connection.prompt(textPrompt(sessionId, 'y'))).stopReason, 'end_turn')
    assert.equal(chunkText(conn.updatesOf(sessionId)), 'fine')
    await conn.end()
  })

  test('a runTurn that never settles ends cancelled on session/cancel; its signal aborts; late calls throw ERR_ACP_TURN_ENDED', async () => {
    let seen
    const runner = new Runner(new MemoryStore(), {
      runTurn(turn) {
        seen = turn
        return new Promise(() => {})
      },
    })
    const conn = serveInProcess(runner.agent())
    await conn.initialize()
    const { sessionId } = await conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] })
    const pending = conn.connection.prompt(textPrompt(sessionId, 'wait'))
    setTimeout(() => conn.connection.cancel({ sessionId }), 50)
    assert.equal((await pending).stopReason, 'cancelled')
    assert.equal(seen.signal.aborted, true)
    assert.equal(seen.isCancelled, true)
    assert.throws(() => seen.text('too late'), (e) => e.code === 'ERR_ACP_TURN_ENDED')
    await conn.end()
  })

  test('turn API: prompt, config values, tool calls, permission, usage', async () => {
    const runner = new Runner(new MemoryStore(), {
      configOptions: () => [{ id: 'model', name: 'Model', type: 'select', currentValue: 'fast', options: [{ value: 'fast', name: 'Fast' }] }],
      async runTurn(turn) {
        assert.equal(turn.promptText, 'go')
        assert.deepEqual(turn.prompt, [{ type: 'text', text: 'go' }])
        assert.equal(turn.configValue('model'), 'fast')
        assert.equal(turn.configValue('nope'), null)
        const call = await turn.startToolCall('Read file', 'read', { path: '/x' })
        await turn.toolProgress(call, 'in_progress', 'reading')
        const answer = await turn.requestPermission(call, 'Read /x?')
        assert.equal(answer, 'allowed')
        await turn.completeToolCall(call, [{ type: 'text', text: 'contents' }])
        const paced = [turn.thought('hmm'), turn.text('done'), turn.usage(10, 100), turn.endStep()]
        assert.ok(paced.every((p) => p instanceof Promise), 'every paced turn call returns a Promise')
        await Promise.all(paced)
      },
    })
    const conn = serveInProcess(runner.agent({ agentName: 'custom', agentVersion: '9.9.9' }))
    const init = await conn.initialize()
    assert.deepEqual(init.agentInfo, { name: 'custom', version: '9.9.9' })
    const { sessionId } = await conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] })
    assert.equal((await conn.connection.prompt(textPrompt(sessionId, 'go'))).stopReason, 'end_turn')
    const kinds = conn.updatesOf(sessionId).map((u) => u.sessionUpdate)
    assert.deepEqual(kinds, ['tool_call', 'tool_call_update', 'tool_call_update', 'agent_thought_chunk', 'agent_message_chunk', 'usage_update'])
    await conn.end()
  })
})
