// The rich turn from Node, in-process over `agent.serve` to the official client, every agent
// message validated against the generated v1 schema: prompt blocks, MCP servers, the request's
// `_meta`, slash commands and the session's `SessionControl` reaching a host's live session; plans,
// response `_meta`, costs and complete tool calls from its events; extension methods; and the
// runner's `Turn` with all of it (tool calls with diffs, terminals and locations, replayed by load).

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { AcpError, Agent, Client, EventHub, MemoryStore, Runner } from 'acp-facade'

import { chunkText, serveInProcess, textPrompt } from './support/client.mjs'

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
const STDIO = { name: 'fs', command: '/usr/bin/mcp-fs', args: ['--ro'], env: [{ name: 'LEVEL', value: '2' }] }
const HTTP = { type: 'http', name: 'web', url: 'https://example.com/mcp', headers: [{ name: 'A', value: 'b' }] }
const SSE = { type: 'sse', name: 'old', url: 'https://example.com/sse', headers: [] }
const SHOUT = { name: 'shout', description: 'Repeat the input in capitals', input: { hint: 'text' } }

function modeOption(current) {
  return {
    id: 'mode',
    name: 'Mode',
    category: 'mode',
    type: 'select',
    currentValue: current,
    options: [
      { value: 'ask', name: 'Ask' },
      { value: 'code', name: 'Code' },
    ],
  }
}

/** Waits until `conn` has received `count` updates; returns their kinds. */
async function arrived(conn, count) {
  for (let i = 0; i < 500 && conn.updates.length < count; i++) await new Promise((r) => setTimeout(r, 10))
  return conn.updates.map((u) => u.update.sessionUpdate)
}

/** Rejects with the JSON-RPC error `code`. */
async function refused(promise, code) {
  await assert.rejects(promise, (e) => {
    assert.equal(e.code, code, JSON.stringify(e))
    return true
  })
}

/**
 * A live session recording what reaches it; each turn publishes a plan, a response `_meta`
 * echoing the traceparent, a chunk naming the prompt's first block (or the command) and a usage
 * with a cost — or, for the prompt `tools`, a tool call with every field, changed and finished.
 */
class RichSession {
  constructor(id, setup) {
    this.id = id
    this.setup = setup
    this.events = new EventHub()
    this.prompts = []
    this.control = null
    this.mode = 'ask'
    this.turns = 0
  }

  commands() {
    return [SHOUT]
  }

  setControl(control) {
    this.control = control
  }

  submit() {
    throw new Error('submitPrompt is called instead')
  }

  submitPrompt(prompt) {
    this.prompts.push(prompt)
    const n = ++this.turns
    const commandId = `${this.id}/c${n}`
    const at = { loopId: 'main', turnId: `t${n}` }
    const publish = (kind, durable) => this.events.publish({ ...at, class: durable ? 'enduring' : 'ephemeral', kind })
    this.events.publish({ ...at, class: 'enduring', commandId, kind: { type: 'turnStarted', message: { content: prompt.content } } })
    if (prompt.content[0]?.text === 'tools') {
      publish({
        type: 'toolCallStarted',
        callId: 'c1',
        name: 'edit a.rs',
        kind: 'edit',
        input: { path: 'a.rs' },
        status: 'in_progress',
        content: [
          { type: 'diff', path: '/w/a.rs', oldText: 'old\n', newText: 'new\n' },
          { type: 'terminal', terminalId: 'term-1' },
          { type: 'text', text: 't' },
        ],
        locations: [{ path: '/w/a.rs', line: 1 }],
      })
      publish({ type: 'toolCallProgress', callId: 'c1', title: 'edit a.rs (2)', kind: 'read' })
      publish({ type: 'toolCallCompleted', callId: 'c1', output: [], isError: false, rawOutput: { ok: true } })
    } else {
      const first = prompt.content[0]
      const said = prompt.command ? `${prompt.command.name}: ${prompt.command.input}` : first.type
      publish({ type: 'planUpdated', plan: { entries: [{ content: 'answer', priority: 'medium', status: 'in_progress' }] } }, true)
      if (prompt.meta?.traceparent) publish({ type: 'responseMeta', meta: { traceparent: prompt.meta.traceparent } })
      publish({ type: 'tokenDelta', text: said, channel: 'message' })
      publish({ type: 'contextMeasured', used: 5, size: 100, cost: { amount: 0.01, currency: 'USD' } }, true)
    }
    this.events.publish({ ...at, class: 'enduring', kind: { type: 'turnDone' } })
    return commandId
  }

  interrupt() {}
  respondGate() {}

  configOptions() {
    return [modeOption(this.mode)]
  }

  setConfigOption(configId, value) {
    this.mode = value
  }
}

function richAgent(notified = []) {
  const host = {
    sessions: [],
    newSession(setup) {
      const session = new RichSession(`rich-${this.sessions.length + 1}`, setup)
      this.sessions.push(session)
      return session
    },
  }
  const agent = new Agent(host, {
    promptCapabilities: { image: true, embeddedContext: true },
    mcpCapabilities: { http: true },
    extensionMethods: {
      '_test/echo': async (params) => {
        if (params?.fail) throw new AcpError(-32602, 'asked to fail', { why: 'test' })
        return { echoed: params }
      },
    },
    extensionNotifications: { '_test/notice': (params) => void notified.push(params) },
  })
  return { host, agent }
}

describe('the rich turn: host interfaces', () => {
  test('a live session gets typed setups and prompts and sends plans, response _meta and costs', async () => {
    const { host, agent } = richAgent()
    const conn = serveInProcess(agent)
    const caps = (await conn.initialize()).agentCapabilities
    assert.deepEqual(caps.promptCapabilities, { image: true, audio: false, embeddedContext: true })
    assert.deepEqual([caps.mcpCapabilities.http, caps.mcpCapabilities.sse], [true, false])
    assert.deepEqual(caps._meta, { '_test/echo': {}, '_test/notice': {} })
    const c = conn.connection
    const { sessionId } = await c.newSession({ cwd: '/tmp', mcpServers: [STDIO, HTTP], _meta: { traceparent: TRACEPARENT } })
    const session = host.sessions[0]
    const { client, ...setup } = session.setup
    assert.ok(client instanceof Client, 'setup.client is the session\'s handle on the client')
    assert.deepEqual(setup, { cwd: '/tmp', additionalDirectories: [], mcpServers: [STDIO, HTTP], meta: { traceparent: TRACEPARENT } })
    await refused(c.newSession({ cwd: '/tmp', mcpServers: [SSE] }), -32602)
    assert.equal(host.sessions.length, 1, 'refused before the host saw it')

    const image = { type: 'image', data: 'AA==', mimeType: 'image/png' }
    const response = await c.prompt({ sessionId, prompt: [image, { type: 'text', text: 'look' }], _meta: { traceparent: TRACEPARENT } })
    assert.deepEqual(response, { stopReason: 'end_turn', _meta: { traceparent: TRACEPARENT } })
    assert.deepEqual(session.prompts[0], { content: [image, { type: 'text', text: 'look' }], command: null, meta: { traceparent: TRACEPARENT } })
    const ups = conn.updatesOf(sessionId)
    assert.deepEqual(
      ups.map((u) => u.sessionUpdate),
      ['available_commands_update', 'plan', 'agent_message_chunk', 'usage_update'],
    )
    assert.deepEqual(ups[0].availableCommands, [SHOUT], 'the session’s own commands')
    assert.equal(ups[1].entries[0].content, 'answer')
    assert.equal(ups[2].content.text, 'image')
    assert.deepEqual(ups[3].cost, { amount: 0.01, currency: 'USD' })

    assert.deepEqual(await c.prompt(textPrompt(sessionId, ' /shout  hey you ')), { stopReason: 'end_turn' })
    assert.deepEqual(session.prompts[1].command, { name: 'shout', input: 'hey you' })
    assert.equal(conn.updatesOf(sessionId).at(-2).content.text, 'shout: hey you')

    await refused(c.prompt({ sessionId, prompt: [{ type: 'audio', data: 'AA==', mimeType: 'audio/wav' }] }), -32602)
    assert.equal(session.prompts.length, 2, 'refused before the host saw it')
    await conn.end()
  })

  test('a live session sends tool calls with every field through its events', async () => {
    const { agent } = richAgent()
    const conn = serveInProcess(agent)
    await conn.initialize()
    const { sessionId } = await conn.connection.newSession({ cwd: '/tmp', mcpServers: [] })
    assert.equal((await conn.connection.prompt(textPrompt(sessionId, 'tools'))).stopReason, 'end_turn')
    const calls = conn.updatesOf(sessionId).filter((u) => u.sessionUpdate.startsWith('tool_call'))
    assert.deepEqual(calls, [
      {
        sessionUpdate: 'tool_call',
        toolCallId: 'c1',
        title: 'edit a.rs',
        kind: 'edit',
        status: 'in_progress',
        content: [
          { type: 'diff', path: '/w/a.rs', oldText: 'old\n', newText: 'new\n' },
          { type: 'terminal', terminalId: 'term-1' },
          { type: 'content', content: { type: 'text', text: 't' } },
        ],
        locations: [{ path: '/w/a.rs', line: 1 }],
        rawInput: { path: 'a.rs' },
      },
      { sessionUpdate: 'tool_call_update', toolCallId: 'c1', title: 'edit a.rs (2)', kind: 'read' },
      { sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'completed', rawOutput: { ok: true } },
    ])
    await conn.end()
  })

  test('a live session changes its mode, options and commands through its control', async () => {
    const { host, agent } = richAgent()
    const conn = serveInProcess(agent)
    await conn.initialize()
    const { sessionId } = await conn.connection.newSession({ cwd: '/tmp', mcpServers: [] })
    const session = host.sessions[0]
    for (let i = 0; i < 500 && session.control === null; i++) await new Promise((r) => setTimeout(r, 10))
    const control = session.control
    assert.equal(control.sessionId, sessionId)
    await control.setMode('code')
    assert.deepEqual(await arrived(conn, 2), ['current_mode_update', 'config_option_update'])
    assert.equal(conn.updates[0].update.currentModeId, 'code')
    assert.equal(session.mode, 'code')
    await assert.rejects(control.setConfigOption('mode', 'yolo'), /-32602/)
    const state = await control.setConfigOption('mode', 'ask')
    assert.deepEqual(state.map((o) => o.currentValue), ['ask'])
    assert.deepEqual((await arrived(conn, 4)).slice(2), ['current_mode_update', 'config_option_update'])
    conn.updates.length = 0
    await control.setCommands([SHOUT]) // not advertised before the first prompt
    await new Promise((r) => setTimeout(r, 100))
    assert.deepEqual(conn.updates, [])
    await conn.connection.prompt(textPrompt(sessionId, 'hi'))
    conn.updates.length = 0
    await control.setCommands([SHOUT, { name: 'whisper', description: 'Repeat it in lower case' }])
    assert.deepEqual(await arrived(conn, 1), ['available_commands_update'])
    assert.deepEqual(conn.updates[0].update.availableCommands.map((c) => c.name), ['shout', 'whisper'])
    await conn.connection.closeSession({ sessionId })
    await assert.rejects(control.setMode('code'), /-32002/)
    await conn.end()
  })

  test('a repeated identical title from a live session is announced once', async () => {
    const session = new RichSession('titled', null)
    session.submitPrompt = function (prompt) {
      const n = ++this.turns
      const at = { loopId: 'main', turnId: `t${n}`, class: 'enduring' }
      this.events.publish({ ...at, commandId: `c${n}`, kind: { type: 'turnStarted', message: { content: prompt.content } } })
      for (const title of ['Same', 'Same', 'Other', 'Other']) this.events.publish({ ...at, kind: { type: 'sessionMetaChanged', title } })
      this.events.publish({ ...at, kind: { type: 'turnDone' } })
      return `c${n}`
    }
    const conn = serveInProcess(new Agent({ newSession: () => session }))
    await conn.initialize()
    const { sessionId } = await conn.connection.newSession({ cwd: '/tmp', mcpServers: [] })
    for (let i = 0; i < 2; i++) await conn.connection.prompt(textPrompt(sessionId, 'go'))
    const titles = conn.updatesOf(sessionId).filter((u) => u.sessionUpdate === 'session_info_update').map((u) => u.title)
    assert.deepEqual(titles, ['Same', 'Other', 'Same', 'Other'])
    await conn.end()
  })

  test('extension methods and notifications reach their handlers; others are -32601', async () => {
    const notified = []
    const { agent } = richAgent(notified)
    const conn = serveInProcess(agent)
    await conn.initialize()
    const c = conn.connection
    assert.deepEqual(await c.extMethod('_test/echo', { a: [1, 'é'] }), { echoed: { a: [1, 'é'] } })
    await assert.rejects(c.extMethod('_test/echo', { fail: true }), (e) => {
      assert.deepEqual([e.code, e.data], [-32602, { why: 'test' }])
      return true
    })
    await refused(c.extMethod('_test/other', {}), -32601)
    await c.extNotification('_test/notice', { n: 1 })
    for (let i = 0; i < 500 && notified.length === 0; i++) await new Promise((r) => setTimeout(r, 10))
    assert.deepEqual(notified, [{ n: 1 }])
    await conn.end()
    assert.throws(() => new Agent({ newSession() {} }, { extensionMethods: { 'test/echo': () => null } }), /_/)
  })
})

/** The runner's turns: each reports what it got and uses every rich call of the turn. */
class RichTurns {
  constructor() {
    this.seen = []
    this.refusals = []
    this.errors = []
  }

  configOptions() {
    return [modeOption('ask')]
  }

  commands() {
    return [SHOUT]
  }

  async runTurn(turn) {
    this.seen.push({ prompt: turn.prompt, command: turn.command, meta: turn.meta, mcpServers: turn.mcpServers })
    if (turn.promptText === 'edit') return this.edit(turn)
    if (turn.promptText === 'bad') return this.bad(turn)
    if (turn.meta !== null) await turn.setResponseMeta({ echo: turn.meta.traceparent })
    await turn.plan({ entries: [{ content: 'think', priority: 'high', status: 'in_progress' }] })
    if (turn.command !== null) {
      await turn.setMode('code')
      try {
        await turn.setMode('yolo')
      } catch (e) {
        this.refusals.push(e.message)
      }
      const state = await turn.setConfigOption('mode', 'ask')
      assert.deepEqual(state.map((o) => o.currentValue), ['ask'])
      await turn.setCommands([SHOUT, { name: 'whisper', description: 'Quietly' }])
    }
    await turn.text('ok')
    await turn.usage(10, 100, { amount: 0.5, currency: 'USD' })
  }

  async edit(turn) {
    const call = await turn.startTool({
      title: 'edit a.rs',
      kind: 'edit',
      status: 'in_progress',
      content: [
        { type: 'text', text: 'proposing' },
        { type: 'diff', path: '/w/a.rs', oldText: 'old\n', newText: 'new\n' },
        { type: 'terminal', terminalId: 'term-1' },
      ],
      locations: [{ path: '/w/a.rs', line: 1 }, { path: '/w/b.rs' }],
      rawInput: { path: 'a.rs' },
    })
    await turn.updateTool(call, { title: 'edit a.rs (2)', locations: [{ path: '/w/a.rs', line: 7 }] })
    await turn.updateTool(call, { status: 'completed', rawOutput: { ok: true }, content: [{ type: 'diff', path: '/w/new.rs', newText: 'x\n' }] })
    await turn.text('edited')
  }

  async bad(turn) {
    const attempts = [
      () => turn.updateTool('call', { kind: 'edti' }),
      () => turn.updateTool('call', { locations: [{ line: 1 }] }),
      () => turn.updateTool('call', { colour: 'red' }),
      () => turn.startTool({ kind: 'edit' }),
      () => turn.startTool({ title: 't', content: [{ type: 'diff', path: '/a' }] }),
    ]
    for (const attempt of attempts) {
      try {
        await attempt()
      } catch (e) {
        this.errors.push(`${e.code}: ${e.message}`)
      }
    }
  }
}

describe('the rich turn: the runner', () => {
  test('a turn gets typed prompts, commands, _meta and servers and uses every rich call', async () => {
    const turns = new RichTurns()
    const runner = new Runner(new MemoryStore(), turns)
    const conn = serveInProcess(runner.agent({ promptCapabilities: { audio: true }, mcpCapabilities: { http: true } }))
    await conn.initialize()
    const c = conn.connection
    const { sessionId } = await c.newSession({ cwd: '/tmp', mcpServers: [HTTP, STDIO] })
    const audio = { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' }
    const response = await c.prompt({ sessionId, prompt: [audio], _meta: { traceparent: TRACEPARENT } })
    assert.deepEqual(response, { stopReason: 'end_turn', _meta: { echo: TRACEPARENT } })
    assert.deepEqual(turns.seen[0], { prompt: [audio], command: null, meta: { traceparent: TRACEPARENT }, mcpServers: [HTTP, STDIO] })
    assert.deepEqual(
      conn.updatesOf(sessionId).map((u) => u.sessionUpdate),
      ['available_commands_update', 'plan', 'agent_message_chunk', 'usage_update'],
    )
    const usage = conn.updatesOf(sessionId).at(-1)
    assert.deepEqual([usage.used, usage.size, usage.cost], [10, 100, { amount: 0.5, currency: 'USD' }])

    conn.updates.length = 0
    assert.deepEqual(await c.prompt(textPrompt(sessionId, '/shout it')), { stopReason: 'end_turn' })
    assert.deepEqual(turns.seen[1].command, { name: 'shout', input: 'it' })
    assert.equal(turns.refusals.length, 1)
    assert.match(turns.refusals[0], /-32602/)
    const ups = conn.updatesOf(sessionId)
    assert.deepEqual(ups.map((u) => u.sessionUpdate), [
      'plan',
      'current_mode_update',
      'config_option_update',
      'current_mode_update',
      'config_option_update',
      'available_commands_update',
      'agent_message_chunk',
      'usage_update',
    ])
    assert.deepEqual(ups[5].availableCommands.map((c) => c.name), ['shout', 'whisper'])
    await conn.end()
  })

  test('a turn sends tool calls with every field; load replays each once, as it ended', async () => {
    const runner = new Runner(new MemoryStore(), new RichTurns())
    const conn = serveInProcess(runner.agent())
    await conn.initialize()
    const { sessionId } = await conn.connection.newSession({ cwd: '/tmp', mcpServers: [] })
    assert.equal((await conn.connection.prompt(textPrompt(sessionId, 'edit'))).stopReason, 'end_turn')
    const calls = conn.updatesOf(sessionId).filter((u) => u.sessionUpdate.startsWith('tool_call'))
    await conn.end()
    const [started, renamed, done] = calls
    const callId = started.toolCallId
    assert.deepEqual(started, {
      sessionUpdate: 'tool_call',
      toolCallId: callId,
      title: 'edit a.rs',
      kind: 'edit',
      status: 'in_progress',
      content: [
        { type: 'content', content: { type: 'text', text: 'proposing' } },
        { type: 'diff', path: '/w/a.rs', oldText: 'old\n', newText: 'new\n' },
        { type: 'terminal', terminalId: 'term-1' },
      ],
      locations: [{ path: '/w/a.rs', line: 1 }, { path: '/w/b.rs' }],
      rawInput: { path: 'a.rs' },
    })
    assert.deepEqual(renamed, { sessionUpdate: 'tool_call_update', toolCallId: callId, title: 'edit a.rs (2)', locations: [{ path: '/w/a.rs', line: 7 }] })
    assert.deepEqual(done, {
      sessionUpdate: 'tool_call_update',
      toolCallId: callId,
      status: 'completed',
      content: [{ type: 'diff', path: '/w/new.rs', newText: 'x\n' }],
      rawOutput: { ok: true },
    })

    const replay = serveInProcess(runner.agent())
    await replay.initialize()
    await replay.connection.loadSession({ sessionId, cwd: '/tmp', mcpServers: [] })
    const replayed = replay.updatesOf(sessionId).filter((u) => u.sessionUpdate.startsWith('tool_call'))
    assert.deepEqual(replayed, [
      {
        sessionUpdate: 'tool_call',
        toolCallId: callId,
        title: 'edit a.rs (2)',
        kind: 'edit',
        status: 'completed',
        content: [{ type: 'diff', path: '/w/new.rs', newText: 'x\n' }],
        locations: [{ path: '/w/a.rs', line: 7 }],
        rawInput: { path: 'a.rs' },
        rawOutput: { ok: true },
      },
    ])
    assert.equal(chunkText(replay.updatesOf(sessionId)), 'edited')
    await replay.end()
  })

  test('invalid tool call fields throw ERR_ACP_INVALID_ARG naming them; the turn goes on', async () => {
    const turns = new RichTurns()
    const conn = serveInProcess(new Runner(new MemoryStore(), turns).agent())
    await conn.initialize()
    const { sessionId } = await conn.connection.newSession({ cwd: '/tmp', mcpServers: [] })
    assert.equal((await conn.connection.prompt(textPrompt(sessionId, 'bad'))).stopReason, 'end_turn')
    assert.equal(turns.errors.length, 5, turns.errors.join('\n'))
    for (const [error, needle] of turns.errors.map((e, i) => [e, ['edti', 'path', 'colour', 'title', 'newText'][i]])) {
      assert.match(error, /^ERR_ACP_INVALID_ARG: /)
      assert.ok(error.includes(needle), `${error} names ${needle}`)
    }
    assert.deepEqual(conn.updatesOf(sessionId).filter((u) => u.sessionUpdate.startsWith('tool_call')), [])
    await conn.end()
  })
})
