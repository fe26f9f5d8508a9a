// The Node API of issue 34 (ACP's newest stable v1 additions), in-process over `agent.serve` to the
// official TypeScript client, each with and without the client capability it needs: the runner
// Turn's notices, plans with ids and subagents (src/runner/session_updates.rs), its client
// capabilities, tool-call names, the client's system prompt (`acceptsSystemPrompt`,
// `turn.systemPrompt`, `composeSystemPrompt`), `/compact` with a summary; and, for host
// interfaces, `AgentOptions.systemPrompt`, `setup.systemPrompt` and the new event kinds. Assertions
// read the wire (what the agent wrote), and every agent message validates against the generated v1
// schema.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { Agent, EventHub, MemoryStore, Runner, Subagent } from 'acp-facade'

import { serveInProcess, textPrompt } from './support/client.mjs'

const NOTICES = { session: { notices: {} } }
const COMPACTION = { session: { compaction: {} } }
const SUBAGENTS = { subagents: {} }
const PLANS = { plan: {} }
const ALL = { session: { notices: {}, compaction: {} }, subagents: {}, plan: {} }
const ENTRIES = [
  { content: 'read', priority: 'high', status: 'completed' },
  { content: 'write', priority: 'medium', status: 'pending' },
]

/** A turn runner whose turns run `lines[promptText](turn)`, recording what each returned (or threw). */
class Script {
  constructor(lines, hooks = {}) {
    this.lines = lines
    this.results = []
    Object.assign(this, hooks)
  }

  async runTurn(turn) {
    const line = this.lines[turn.promptText]
    if (!line) throw new Error(`no line ${turn.promptText}`)
    try {
      this.results.push(await line(turn))
    } catch (e) {
      this.results.push(e)
    }
    return 'end_turn'
  }
}

/** Serves `turns` in-process to a client advertising `clientCapabilities`; opens a session with `session` as extra params. */
async function open(turns, clientCapabilities = {}, session = {}) {
  const runner = new Runner(new MemoryStore(), turns)
  const conn = serveInProcess(runner.agent(), { clientCapabilities })
  const init = await conn.initialize()
  const { sessionId } = await conn.connection.newSession({ cwd: '/tmp', mcpServers: [], ...session })
  return { runner, conn, init, sessionId }
}

/** The updates of `sessionId` as the agent wrote them (not as the SDK parsed them). */
function wire(conn, sessionId) {
  return conn.transcript
    .filter((m) => m?.method === 'session/update' && m.params.sessionId === sessionId)
    .map((m) => m.params.update)
    .filter((u) => u.sessionUpdate !== 'available_commands_update' && u.sessionUpdate !== 'session_info_update')
}

async function prompt(conn, sessionId, text) {
  return (await conn.connection.prompt(textPrompt(sessionId, text))).stopReason
}

describe('the runner turn: notices', () => {
  const lines = {
    notices: async (turn) => [
      await turn.notice('Indexing', { severity: 'warning', description: 'the disk is slow' }),
      await turn.notice('Done'),
      await turn.notice('Failed', { severity: 'error' }),
    ],
  }

  test('a client with session.notices gets each notice; each call resolves true', async () => {
    const turns = new Script(lines)
    const { conn, sessionId } = await open(turns, NOTICES)
    assert.equal(await prompt(conn, sessionId, 'notices'), 'end_turn')
    assert.deepEqual(turns.results, [[true, true, true]])
    assert.deepEqual(wire(conn, sessionId), [
      { sessionUpdate: 'notice', severity: 'warning', title: 'Indexing', description: 'the disk is slow' },
      { sessionUpdate: 'notice', severity: 'info', title: 'Done' },
      { sessionUpdate: 'notice', severity: 'error', title: 'Failed' },
    ])
    await conn.end()
  })

  test('a client without it gets nothing; each call resolves false', async () => {
    const turns = new Script(lines)
    const { conn, sessionId } = await open(turns, { ...COMPACTION, ...SUBAGENTS, ...PLANS })
    assert.equal(await prompt(conn, sessionId, 'notices'), 'end_turn')
    assert.deepEqual(turns.results, [[false, false, false]])
    assert.deepEqual(wire(conn, sessionId), [])
    await conn.end()
  })

  test('an unknown severity rejects with a TypeError naming it; nothing is sent, the turn goes on', async () => {
    const turns = new Script({
      loud: async (turn) => {
        const refused = await turn.notice('x', { severity: 'loud' }).then(() => null, (e) => e)
        await turn.text('after')
        return refused
      },
    })
    const { conn, sessionId } = await open(turns, NOTICES)
    assert.equal(await prompt(conn, sessionId, 'loud'), 'end_turn')
    const [error] = turns.results
    assert.ok(error instanceof TypeError, String(error))
    assert.equal(error.code, 'ERR_ACP_INVALID_ARG')
    assert.match(error.message, /`loud`/)
    assert.deepEqual(wire(conn, sessionId), [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'after' } }])
    await conn.end()
  })
})

describe('the runner turn: plans with ids', () => {
  const lines = {
    plans: async (turn) => [
      await turn.updatePlan('p', ENTRIES),
      await turn.updatePlanMarkdown('doc', '# Doc\n- one'),
      await turn.updatePlan('p', ENTRIES.map((e) => ({ ...e, status: 'completed' }))),
      await turn.removePlan('doc'),
    ],
    bad: async (turn) => {
      try {
        turn.updatePlan('p', [{ content: 'x', priority: 'low', status: 'done' }])
      } catch (e) {
        return e
      }
    },
  }
  const done = ENTRIES.map((e) => ({ ...e, status: 'completed' }))

  test('a client with plan operations gets plan_update and plan_removed; each call resolves true; load replays each plan still there', async () => {
    const turns = new Script(lines)
    const { runner, conn, sessionId } = await open(turns, PLANS)
    assert.equal(await prompt(conn, sessionId, 'plans'), 'end_turn')
    assert.deepEqual(turns.results, [[true, true, true, true]])
    assert.deepEqual(wire(conn, sessionId), [
      { sessionUpdate: 'plan_update', plan: { type: 'items', planId: 'p', entries: ENTRIES } },
      { sessionUpdate: 'plan_update', plan: { type: 'markdown', planId: 'doc', content: '# Doc\n- one' } },
      { sessionUpdate: 'plan_update', plan: { type: 'items', planId: 'p', entries: done } },
      { sessionUpdate: 'plan_removed', planId: 'doc' },
    ])
    await conn.end()

    const replay = serveInProcess(runner.agent(), { clientCapabilities: PLANS })
    await replay.initialize()
    await replay.connection.loadSession({ sessionId, cwd: '/tmp', mcpServers: [] })
    const plans = wire(replay, sessionId).filter((u) => u.sessionUpdate.startsWith('plan'))
    assert.deepEqual(plans, [{ sessionUpdate: 'plan_update', plan: { type: 'items', planId: 'p', entries: done } }])
    await replay.end()
  })

  test('a client without them gets whole plans (a document and a removal: empty ones); each call resolves false', async () => {
    const turns = new Script(lines)
    const { conn, sessionId } = await open(turns, NOTICES)
    assert.equal(await prompt(conn, sessionId, 'plans'), 'end_turn')
    assert.deepEqual(turns.results, [[false, false, false, false]])
    assert.deepEqual(wire(conn, sessionId), [
      { sessionUpdate: 'plan', entries: ENTRIES },
      { sessionUpdate: 'plan', entries: [] },
      { sessionUpdate: 'plan', entries: done },
      { sessionUpdate: 'plan', entries: [] },
    ])
    await conn.end()
  })

  test('invalid entries throw ERR_ACP_INVALID_ARG naming the field; nothing is sent', async () => {
    const turns = new Script(lines)
    const { conn, sessionId } = await open(turns, PLANS)
    assert.equal(await prompt(conn, sessionId, 'bad'), 'end_turn')
    assert.equal(turns.results[0].code, 'ERR_ACP_INVALID_ARG')
    assert.match(turns.results[0].message, /done/)
    assert.deepEqual(wire(conn, sessionId), [])
    await conn.end()
  })
})

describe('the runner turn: subagents', () => {
  const exchange = async (turn) => {
    const child = await turn.startSubagent('helper')
    const sent = await child.send('find the bug')
    const replied = await child.reply(['found ', 'it'])
    await child.finish()
    return { child, sent, replied }
  }

  test('a client with subagents sees the child announced, the messages both ways, and the child idle; load replays the exchange', async () => {
    const turns = new Script({ exchange, cancelled: async (turn) => (await turn.startSubagent('quitter')).finish('cancelled') })
    const { runner, conn, sessionId } = await open(turns, SUBAGENTS)
    assert.equal(await prompt(conn, sessionId, 'exchange'), 'end_turn')
    const [{ child, sent, replied }] = turns.results
    assert.ok(child instanceof Subagent)
    assert.equal(child.isVisible, true)
    assert.ok(child.sessionId.startsWith(`${sessionId}/`), child.sessionId)
    assert.notEqual(sent, replied)
    const updates = [
      { sessionUpdate: 'subagent_update', sessionId: child.sessionId, title: 'helper' },
      {
        sessionUpdate: 'session_message',
        messageId: sent,
        senderSessionId: sessionId,
        recipientSessionId: child.sessionId,
        content: [{ type: 'text', text: 'find the bug' }],
      },
      { sessionUpdate: 'session_message', messageId: replied, senderSessionId: child.sessionId, recipientSessionId: sessionId },
      { sessionUpdate: 'session_message_chunk', messageId: replied, content: { type: 'text', text: 'found ' } },
      { sessionUpdate: 'session_message_chunk', messageId: replied, content: { type: 'text', text: 'it' } },
      { sessionUpdate: 'subagent_update', sessionId: child.sessionId, state: { state: 'idle', stopReason: 'end_turn' } },
    ]
    assert.deepEqual(wire(conn, sessionId), updates)
    assert.equal(await prompt(conn, sessionId, 'cancelled'), 'end_turn')
    assert.deepEqual(wire(conn, sessionId).at(-1).state, { state: 'idle', stopReason: 'cancelled' })
    await conn.end()

    const replay = serveInProcess(runner.agent(), { clientCapabilities: SUBAGENTS })
    await replay.initialize()
    await replay.connection.loadSession({ sessionId, cwd: '/tmp', mcpServers: [] })
    const replayed = wire(replay, sessionId).filter((u) => u.sessionUpdate.startsWith('s'))
    assert.deepEqual(replayed.slice(0, updates.length), updates)
    await replay.end()
  })

  test('a client without them sees nothing; the calls answer all the same', async () => {
    const turns = new Script({ exchange })
    const { conn, sessionId } = await open(turns, { ...NOTICES, ...PLANS })
    assert.equal(await prompt(conn, sessionId, 'exchange'), 'end_turn')
    const [{ child, sent, replied }] = turns.results
    assert.equal(child.isVisible, false)
    assert.equal(typeof sent, 'string')
    assert.equal(typeof replied, 'string')
    assert.deepEqual(wire(conn, sessionId), [])
    await conn.end()
  })

  test('a subagent kept after its turn, and the turn itself, throw ERR_ACP_TURN_ENDED', async () => {
    let kept
    let ended
    const turns = new Script({
      start: async (turn) => {
        kept = await turn.startSubagent('kept')
        ended = turn
      },
      later: async () => {
        const codes = []
        for (const call of [() => kept.send('x'), () => kept.finish(), () => ended.notice('x'), () => ended.updatePlan('p', [])]) {
          try {
            await call()
            codes.push('no error')
          } catch (e) {
            codes.push(e.code)
          }
        }
        return codes
      },
    })
    const { conn, sessionId } = await open(turns, SUBAGENTS)
    await prompt(conn, sessionId, 'start')
    await prompt(conn, sessionId, 'later')
    assert.deepEqual(turns.results[1], Array(4).fill('ERR_ACP_TURN_ENDED'))
    await conn.end()
  })

  test('an unknown stop reason throws ERR_ACP_INVALID_ARG', async () => {
    const turns = new Script({
      bad: async (turn) => {
        const child = await turn.startSubagent('x')
        try {
          child.finish('done')
        } catch (e) {
          return e.code
        }
      },
    })
    const { conn, sessionId } = await open(turns, SUBAGENTS)
    await prompt(conn, sessionId, 'bad')
    assert.deepEqual(turns.results, ['ERR_ACP_INVALID_ARG'])
    await conn.end()
  })
})

describe('the runner turn: order, capabilities, tool names', () => {
  test('the session updates keep their place among the turn calls made without awaiting', async () => {
    const turns = new Script({
      order: async (turn) => {
        const calls = [
          turn.text('a '),
          turn.notice('n'),
          turn.text('b '),
          turn.updatePlan('p', ENTRIES),
          turn.thought('t'),
          turn.startSubagent('s').then((child) => child.send('hi')),
          turn.text('c'),
        ]
        await Promise.all(calls)
      },
    })
    const { conn, sessionId } = await open(turns, ALL)
    assert.equal(await prompt(conn, sessionId, 'order'), 'end_turn')
    assert.deepEqual(
      wire(conn, sessionId).map((u) => u.sessionUpdate),
      ['agent_message_chunk', 'notice', 'agent_message_chunk', 'plan_update', 'agent_thought_chunk', 'subagent_update', 'agent_message_chunk', 'session_message'],
    )
    await conn.end()
  })

  test('clientCapabilities tells notices, compaction, subagents and plan operations', async () => {
    const seen = []
    const turns = new Script({ caps: async (turn) => seen.push(turn.clientCapabilities) })
    for (const caps of [{}, NOTICES, COMPACTION, SUBAGENTS, PLANS, ALL]) {
      const { conn, sessionId } = await open(turns, caps)
      await prompt(conn, sessionId, 'caps')
      await conn.end()
    }
    const flags = seen.map(({ notices, compaction, subagents, planOperations }) => [notices, compaction, subagents, planOperations])
    assert.deepEqual(flags, [
      [false, false, false, false],
      [true, false, false, false],
      [false, true, false, false],
      [false, false, true, false],
      [false, false, false, true],
      [true, true, true, true],
    ])
  })

  test('tool calls carry their programmatic name: startTool, updateTool, startToolCall; load replays it', async () => {
    const turns = new Script({
      tools: async (turn) => {
        const read = await turn.startTool({ title: 'Read a.rs', name: 'read_file', kind: 'read' })
        await turn.updateTool(read, { name: 'read_files', status: 'completed' })
        const run = await turn.startToolCall('Run ls', 'execute', { cmd: 'ls' }, 'shell')
        await turn.completeToolCall(run)
        const plain = await turn.startToolCall('Plain')
        await turn.failToolCall(plain)
        return [read, run, plain]
      },
    })
    const { runner, conn, sessionId } = await open(turns)
    assert.equal(await prompt(conn, sessionId, 'tools'), 'end_turn')
    const [[read, run, plain]] = turns.results
    assert.deepEqual(wire(conn, sessionId), [
      { sessionUpdate: 'tool_call', toolCallId: read, title: 'Read a.rs', name: 'read_file', kind: 'read' },
      { sessionUpdate: 'tool_call_update', toolCallId: read, status: 'completed', name: 'read_files' },
      { sessionUpdate: 'tool_call', toolCallId: run, title: 'Run ls', name: 'shell', kind: 'execute', rawInput: { cmd: 'ls' } },
      { sessionUpdate: 'tool_call_update', toolCallId: run, status: 'completed' },
      { sessionUpdate: 'tool_call', toolCallId: plain, title: 'Plain' },
      { sessionUpdate: 'tool_call_update', toolCallId: plain, status: 'failed' },
    ])
    await conn.end()

    const replay = serveInProcess(runner.agent())
    await replay.initialize()
    await replay.connection.loadSession({ sessionId, cwd: '/tmp', mcpServers: [] })
    const names = wire(replay, sessionId).filter((u) => u.sessionUpdate === 'tool_call').map((u) => [u.toolCallId, u.name])
    assert.deepEqual(names, [[read, 'read_files'], [run, 'shell'], [plain, undefined]])
    await replay.end()
  })
})

describe('the runner turn: system prompts', () => {
  const APPEND = { mode: 'append', content: [{ type: 'text', text: 'Answer ' }, { type: 'text', text: 'briefly.' }] }
  const OVERRIDE = { mode: 'override', content: [{ type: 'text', text: 'You review code.' }] }
  const lines = { system: async (turn) => [turn.systemPrompt, turn.composeSystemPrompt('You are helpful.')] }

  test('acceptsSystemPrompt: advertised; the turn sees the client prompt and composes with it', async () => {
    for (const accepts of [true, () => true]) {
      const cases = [
        [undefined, null, 'You are helpful.'],
        [APPEND, { ...APPEND, text: 'Answer briefly.' }, 'You are helpful.\nAnswer briefly.'],
        [OVERRIDE, { ...OVERRIDE, text: 'You review code.' }, 'You review code.'],
      ]
      for (const [given, seen, composed] of cases) {
        const turns = new Script(lines, { acceptsSystemPrompt: accepts })
        const { conn, init, sessionId } = await open(turns, {}, given ? { systemPrompt: given } : {})
        assert.deepEqual(init.agentCapabilities.sessionCapabilities.systemPrompt, {})
        await prompt(conn, sessionId, 'system')
        assert.deepEqual(turns.results, [[seen, composed]])
        await conn.end()
      }
    }
  })

  test('a turn runner that does not accept them: not advertised, and one sent anyway is left out', async () => {
    for (const accepts of [undefined, false, () => false]) {
      const turns = new Script(lines, accepts === undefined ? {} : { acceptsSystemPrompt: accepts })
      const { conn, init, sessionId } = await open(turns, {}, { systemPrompt: APPEND })
      assert.equal(init.agentCapabilities.sessionCapabilities.systemPrompt, undefined)
      await prompt(conn, sessionId, 'system')
      assert.deepEqual(turns.results, [[null, 'You are helpful.']])
      await conn.end()
    }
  })

  test('acceptsSystemPrompt must be a boolean or a method returning one', () => {
    for (const bad of ['yes', 1, () => 'yes']) {
      assert.throws(
        () => new Runner(new MemoryStore(), { runTurn() {}, acceptsSystemPrompt: bad }),
        (e) => e.code === 'ERR_ACP_INVALID_ARG' && /acceptsSystemPrompt/.test(e.message),
      )
    }
  })
})

describe('the runner turn: /compact with a summary', () => {
  const compacting = (summary) => new Script({}, { compact: async () => summary })

  test('a client with session.compaction sees it start, its summary and its end', async () => {
    const { conn, sessionId } = await open(compacting('What happened.'), COMPACTION)
    assert.equal(await prompt(conn, sessionId, '/compact'), 'end_turn')
    const updates = wire(conn, sessionId)
    const id = updates[0].compactionId
    assert.deepEqual(updates, [
      { sessionUpdate: 'compaction_update', compactionId: id, status: 'in_progress' },
      { sessionUpdate: 'compaction_summary_chunk', compactionId: id, content: { type: 'text', text: 'What happened.' } },
      { sessionUpdate: 'compaction_update', compactionId: id, status: 'completed' },
    ])
    await conn.end()
  })

  test('no summary (undefined): start and end only; a client without the capability sees neither', async () => {
    for (const [caps, kinds] of [
      [COMPACTION, ['compaction_update', 'compaction_update']],
      [{}, []],
    ]) {
      const { conn, sessionId } = await open(compacting(undefined), caps)
      assert.equal(await prompt(conn, sessionId, '/compact'), 'end_turn')
      assert.deepEqual(wire(conn, sessionId).map((u) => u.sessionUpdate), kinds)
      await conn.end()
    }
    const { conn, sessionId } = await open(compacting('What happened.'), {})
    assert.equal(await prompt(conn, sessionId, '/compact'), 'end_turn')
    assert.deepEqual(wire(conn, sessionId), [])
    await conn.end()
  })

  test('anything but a string or undefined fails the command, naming what it was', async () => {
    for (const [value, named] of [
      [null, 'null'],
      [42, 'a number'],
      [{ summary: 'x' }, 'an object'],
    ]) {
      const { conn, sessionId } = await open(compacting(value), COMPACTION)
      await assert.rejects(conn.connection.prompt(textPrompt(sessionId, '/compact')), (e) => {
        assert.equal(e.code, -32603, JSON.stringify(e))
        assert.ok(e.message.includes(`not ${named}`), e.message)
        return true
      })
      await conn.end()
    }
  })
})

describe('host interfaces: system prompts and the new event kinds', () => {
  /** A host whose sessions keep their setups and publish, per prompt, the events `kinds` names. */
  function host(events) {
    const setups = []
    return {
      setups,
      newSession(setup) {
        setups.push(setup)
        const hub = new EventHub()
        let n = 0
        return {
          id: `h${setups.length}`,
          events: hub,
          submit() {
            const at = { loopId: 'l', turnId: `t${++n}` }
            const commandId = `c${n}`
            hub.publish({ ...at, commandId, class: 'enduring', kind: { type: 'turnStarted', message: { content: [] } } })
            for (const kind of events) hub.publish({ ...at, kind })
            hub.publish({ ...at, class: 'enduring', kind: { type: 'turnDone' } })
            return commandId
          },
          interrupt() {},
          respondGate() {},
        }
      },
    }
  }
  const SP = { mode: 'append', content: [{ type: 'text', text: 'Be brief.' }] }

  test('AgentOptions.systemPrompt: advertised, and setup.systemPrompt carries the client one', async () => {
    for (const [options, advertised, given] of [
      [{ systemPrompt: true }, {}, SP],
      [{}, undefined, undefined],
    ]) {
      const h = host([])
      const conn = serveInProcess(new Agent(h, options))
      const init = await conn.initialize()
      assert.deepEqual(init.agentCapabilities.sessionCapabilities.systemPrompt, advertised)
      await conn.connection.newSession({ cwd: '/tmp', mcpServers: [], systemPrompt: SP })
      await conn.connection.newSession({ cwd: '/tmp', mcpServers: [] })
      assert.deepEqual(h.setups.map((s) => s.systemPrompt), [given, undefined])
      await conn.end()
    }
  })

  test('toolName on tool-call events is the name on the wire; notices, plans with ids and subagents are sent to the clients that take them', async () => {
    const events = [
      { type: 'toolCallStarted', callId: 'c1', name: 'Read a.rs', toolName: 'read_file', kind: 'read', input: null },
      { type: 'toolCallProgress', callId: 'c1', toolName: 'read_files' },
      { type: 'notice', notice: { severity: 'info', title: 'hello' } },
      { type: 'planChanged', update: { plan: { type: 'items', planId: 'p', entries: ENTRIES } } },
      { type: 'subagentChanged', update: { sessionId: 'h1/a', title: 'helper' } },
    ]
    for (const [caps, expected] of [
      [
        ALL,
        [
          { sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Read a.rs', name: 'read_file', kind: 'read' },
          { sessionUpdate: 'tool_call_update', toolCallId: 'c1', name: 'read_files' },
          { sessionUpdate: 'notice', severity: 'info', title: 'hello' },
          { sessionUpdate: 'plan_update', plan: { type: 'items', planId: 'p', entries: ENTRIES } },
          { sessionUpdate: 'subagent_update', sessionId: 'h1/a', title: 'helper' },
        ],
      ],
      [
        {},
        [
          { sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Read a.rs', name: 'read_file', kind: 'read' },
          { sessionUpdate: 'tool_call_update', toolCallId: 'c1', name: 'read_files' },
          { sessionUpdate: 'plan', entries: ENTRIES },
        ],
      ],
    ]) {
      const conn = serveInProcess(new Agent(host(events)), { clientCapabilities: caps })
      await conn.initialize()
      const { sessionId } = await conn.connection.newSession({ cwd: '/tmp', mcpServers: [] })
      assert.equal(await prompt(conn, sessionId, 'go'), 'end_turn')
      assert.deepEqual(wire(conn, sessionId), expected)
      await conn.end()
    }
  })
})
