// The Node demo agent (examples/node/demo_host.mjs, on the turn runner) driven as a subprocess by
// the official TypeScript client, every agent message validated against the generated v1 schema.
// Scenarios: docs/DEMO.md.

import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'

import { chunkText, serveInProcess, spawnAgent, textPrompt } from './support/client.mjs'

const dirs = []
function tempStore() {
  const dir = mkdtempSync(join(tmpdir(), 'acp-facade-node-'))
  dirs.push(dir)
  return join(dir, 'demo.sqlite')
}
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

async function withAgent(args, fn, options) {
  const agent = spawnAgent(args, options)
  try {
    await fn(agent)
    agent.assertValid()
  } finally {
    const { code, signal } = await agent.hangUp()
    assert.equal(signal, null, `the agent died: ${agent.stderr()}`)
    assert.equal(code, 0, `the agent failed: ${agent.stderr()}`)
  }
  agent.assertValid()
}

async function newSession(agent, cwd = tmpdir()) {
  return agent.connection.newSession({ cwd, mcpServers: [] })
}

describe('demo agent on the Node turn runner', () => {
  test('initialize advertises every session capability and the demo agent info', async () => {
    await withAgent(['--store', ':memory:'], async (agent) => {
      const init = await agent.initialize()
      assert.equal(init.protocolVersion, 1)
      assert.deepEqual(init.agentInfo, { name: 'acp-facade-demo', version: '0.1.0' })
      assert.equal(init.agentCapabilities.loadSession, true)
      assert.deepEqual(Object.keys(init.agentCapabilities.sessionCapabilities).sort(), ['close', 'delete', 'list', 'resume', 'systemPrompt'])
    })
  })

  test('session/new serves config options and modes', async () => {
    await withAgent(['--store', ':memory:'], async (agent) => {
      await agent.initialize()
      const session = await newSession(agent)
      assert.match(session.sessionId, /^sess_/)
      assert.deepEqual(
        session.configOptions.map((o) => [o.id, o.currentValue, o.options.map((v) => v.value)]),
        [
          ['mode', 'ask', ['ask', 'code']],
          ['model', 'fast', ['fast', 'smart']],
        ],
      )
      assert.deepEqual(session.modes, {
        currentModeId: 'ask',
        availableModes: [
          { id: 'ask', name: 'Ask', description: 'Ask before changing anything' },
          { id: 'code', name: 'Code', description: 'Write code directly' },
        ],
      })
    })
  })

  test('echo: word by word, a title, usage before the response', async () => {
    await withAgent(['--store', ':memory:'], async (agent) => {
      await agent.initialize()
      const { sessionId } = await newSession(agent)
      const response = await agent.connection.prompt(textPrompt(sessionId, '  hello   wide world  '))
      assert.equal(response.stopReason, 'end_turn')
      const updates = agent.updatesOf(sessionId)
      const chunks = updates.filter((u) => u.sessionUpdate === 'agent_message_chunk').map((u) => u.content.text)
      assert.deepEqual(chunks, ['hello ', 'wide ', 'world'])
      const info = updates.find((u) => u.sessionUpdate === 'session_info_update')
      assert.equal(info.title, 'hello   wide world')
      const usage = updates.filter((u) => u.sessionUpdate === 'usage_update')
      assert.equal(usage.length, 1)
      // The trimmed prompt's bytes plus the reply's.
      assert.deepEqual([usage[0].used, usage[0].size], [18 + 16, 200000])
      assert.equal(updates.at(-1).sessionUpdate, 'usage_update')
    })
  })

  test('the title is the first 40 characters of the first prompt, once', async () => {
    await withAgent(['--store', ':memory:'], async (agent) => {
      await agent.initialize()
      const { sessionId } = await newSession(agent)
      const long = 'é'.repeat(30) + ' ' + 'x'.repeat(30)
      await agent.connection.prompt(textPrompt(sessionId, long))
      await agent.connection.prompt(textPrompt(sessionId, 'second'))
      const titles = agent.updatesOf(sessionId).filter((u) => u.sessionUpdate === 'session_info_update')
      assert.equal(titles.length, 1)
      assert.equal(titles[0].title, [...long].slice(0, 40).join(''))
    })
  })

  test('stream N sends N chunks in order', async () => {
    await withAgent(['--store', ':memory:'], async (agent) => {
      await agent.initialize()
      const { sessionId } = await newSession(agent)
      const response = await agent.connection.prompt(textPrompt(sessionId, 'stream 2000'))
      assert.equal(response.stopReason, 'end_turn')
      const chunks = agent.updatesOf(sessionId).filter((u) => u.sessionUpdate === 'agent_message_chunk')
      assert.equal(chunks.length, 2000)
      chunks.forEach((c, i) => assert.equal(c.content.text, `t${i + 1} `))
    })
  })

  test('think sends one thought then a message', async () => {
    await withAgent(['--store', ':memory:'], async (agent) => {
      await agent.initialize()
      const { sessionId } = await newSession(agent)
      await agent.connection.prompt(textPrompt(sessionId, 'think about it'))
      const updates = agent.updatesOf(sessionId)
      assert.equal(chunkText(updates, 'agent_thought_chunk'), 'about it')
      assert.equal(chunkText(updates), 'done thinking')
      const kinds = updates.map((u) => u.sessionUpdate).filter((k) => k.startsWith('agent_'))
      assert.deepEqual(kinds, ['agent_thought_chunk', 'agent_message_chunk'])
    })
  })

  for (const [answer, status, text] of [
    ['allow_once', 'completed', 'deploy: done'],
    ['allow_always', 'completed', 'deploy: done'],
    ['reject_once', 'failed', 'deploy: denied'],
  ]) {
    test(`tool: answered ${answer}`, async () => {
      await withAgent(
        ['--store', ':memory:'],
        async (agent) => {
          await agent.initialize()
          const { sessionId } = await newSession(agent)
          const response = await agent.connection.prompt(textPrompt(sessionId, 'tool deploy'))
          assert.equal(response.stopReason, 'end_turn')
          const [request] = agent.permissionRequests
          assert.deepEqual(request.options.map((o) => o.kind), ['allow_once', 'allow_always', 'reject_once'])
          const updates = agent.updatesOf(sessionId)
          const call = updates.find((u) => u.sessionUpdate === 'tool_call')
          assert.equal(call.status ?? 'pending', 'pending')
          assert.equal(call.kind, 'execute')
          assert.equal(request.toolCall.toolCallId, call.toolCallId)
          const final = updates.filter((u) => u.sessionUpdate === 'tool_call_update').at(-1)
          assert.equal(final.status, status)
          assert.equal(chunkText(updates), text)
        },
        { permission: answer },
      )
    })
  }

  test('tool: a permission the client answers `cancelled` ends the turn cancelled', async () => {
    await withAgent(
      ['--store', ':memory:'],
      async (agent) => {
        await agent.initialize()
        const { sessionId } = await newSession(agent)
        const response = await agent.connection.prompt(textPrompt(sessionId, 'tool rm'))
        assert.equal(response.stopReason, 'cancelled')
      },
      { permission: 'cancelled' },
    )
  })

  test('tool: session/cancel while the permission is pending ends the turn cancelled', async () => {
    let agentRef
    await withAgent(
      ['--store', ':memory:'],
      async (agent) => {
        agentRef = agent
        await agent.initialize()
        const { sessionId } = await newSession(agent)
        const response = await agent.connection.prompt(textPrompt(sessionId, 'tool rm'))
        assert.equal(response.stopReason, 'cancelled')
      },
      {
        permission: async (params) => {
          await agentRef.connection.cancel({ sessionId: params.sessionId })
          return new Promise(() => {})
        },
      },
    )
  })

  test('sleep waits, then says slept; session/cancel ends it at once', async () => {
    await withAgent(['--store', ':memory:'], async (agent) => {
      await agent.initialize()
      const { sessionId } = await newSession(agent)
      const quick = await agent.connection.prompt(textPrompt(sessionId, 'sleep 20'))
      assert.equal(quick.stopReason, 'end_turn')
      assert.equal(chunkText(agent.updatesOf(sessionId)), 'slept')
      const started = Date.now()
      const pending = agent.connection.prompt(textPrompt(sessionId, 'sleep 60000'))
      setTimeout(() => agent.connection.cancel({ sessionId }), 100)
      assert.equal((await pending).stopReason, 'cancelled')
      assert.ok(Date.now() - started < 5000)
    })
  })

  test('ask waits until session/cancel', async () => {
    await withAgent(['--store', ':memory:'], async (agent) => {
      await agent.initialize()
      const { sessionId } = await newSession(agent)
      const pending = agent.connection.prompt(textPrompt(sessionId, 'ask what now?'))
      setTimeout(() => agent.connection.cancel({ sessionId }), 150)
      assert.equal((await pending).stopReason, 'cancelled')
    })
  })

  test('stream cancelled mid-way ends cancelled', async () => {
    await withAgent(['--store', ':memory:'], async (agent) => {
      await agent.initialize()
      const { sessionId } = await newSession(agent)
      const pending = agent.connection.prompt(textPrompt(sessionId, 'stream 100000000'))
      setTimeout(() => agent.connection.cancel({ sessionId }), 200)
      assert.equal((await pending).stopReason, 'cancelled')
    })
  })

  test('fail answers an internal error', async () => {
    await withAgent(['--store', ':memory:'], async (agent) => {
      await agent.initialize()
      const { sessionId } = await newSession(agent)
      await assert.rejects(agent.connection.prompt(textPrompt(sessionId, 'fail')), (e) => {
        assert.equal(e.code, -32603)
        assert.match(e.message, /the demo turn failed, as asked/)
        return true
      })
      // The session serves on.
      const next = await agent.connection.prompt(textPrompt(sessionId, 'ok'))
      assert.equal(next.stopReason, 'end_turn')
    })
  })

  test('/compact is advertised and ends end_turn', async () => {
    await withAgent(['--store', ':memory:'], async (agent) => {
      await agent.initialize()
      const { sessionId } = await newSession(agent)
      await agent.connection.prompt(textPrompt(sessionId, 'hi'))
      const commands = agent.updatesOf(sessionId).find((u) => u.sessionUpdate === 'available_commands_update')
      assert.ok(commands.availableCommands.some((c) => c.name === 'compact'))
      const response = await agent.connection.prompt(textPrompt(sessionId, '/compact'))
      assert.equal(response.stopReason, 'end_turn')
    })
  })

  test('set_mode and set_config_option change the config', async () => {
    await withAgent(['--store', ':memory:'], async (agent) => {
      await agent.initialize()
      const { sessionId } = await newSession(agent)
      await agent.connection.setSessionMode({ sessionId, modeId: 'code' })
      const set = await agent.connection.setSessionConfigOption({ sessionId, configId: 'model', value: 'smart' })
      const current = Object.fromEntries(set.configOptions.map((o) => [o.id, o.currentValue]))
      assert.deepEqual(current, { mode: 'code', model: 'smart' })
      await assert.rejects(agent.connection.setSessionConfigOption({ sessionId, configId: 'model', value: 'huge' }), (e) => e.code === -32602)
    })
  })

  test('list paginates with --page-size; close, delete', async () => {
    await withAgent(['--store', tempStore(), '--page-size', '2'], async (agent) => {
      await agent.initialize()
      const ids = []
      for (let i = 0; i < 3; i++) {
        const { sessionId } = await newSession(agent)
        await agent.connection.prompt(textPrompt(sessionId, `session ${i}`))
        ids.push(sessionId)
      }
      const first = await agent.connection.listSessions({})
      assert.equal(first.sessions.length, 2)
      assert.ok(first.nextCursor)
      const second = await agent.connection.listSessions({ cursor: first.nextCursor })
      const listed = [...first.sessions, ...second.sessions].map((s) => s.sessionId)
      assert.deepEqual(listed.sort(), [...ids].sort())
      await agent.connection.closeSession({ sessionId: ids[0] })
      await agent.connection.deleteSession({ sessionId: ids[0] })
      const after = await agent.connection.listSessions({})
      assert.ok(!after.sessions.some((s) => s.sessionId === ids[0]))
    })
  })

  test('sessions survive a restart: load replays history, resume reopens', async () => {
    const store = tempStore()
    let sessionId
    await withAgent(['--store', store], async (agent) => {
      await agent.initialize()
      sessionId = (await newSession(agent)).sessionId
      await agent.connection.prompt(textPrompt(sessionId, 'remember this'))
      await agent.connection.prompt(textPrompt(sessionId, 'think deeply'))
    })
    await withAgent(['--store', store], async (agent) => {
      await agent.initialize()
      const listed = await agent.connection.listSessions({})
      const entry = listed.sessions.find((s) => s.sessionId === sessionId)
      assert.equal(entry.title, 'remember this')
      await agent.connection.loadSession({ sessionId, cwd: tmpdir(), mcpServers: [] })
      const replay = agent.updatesOf(sessionId)
      assert.equal(chunkText(replay, 'user_message_chunk'), 'remember thisthink deeply')
      assert.equal(chunkText(replay), 'remember thisdone thinking')
      assert.equal(chunkText(replay, 'agent_thought_chunk'), 'deeply')
      await agent.connection.closeSession({ sessionId })
      await agent.connection.resumeSession({ sessionId, cwd: tmpdir(), mcpServers: [] })
      const response = await agent.connection.prompt(textPrompt(sessionId, 'again'))
      assert.equal(response.stopReason, 'end_turn')
    })
  })

  test('bad arguments exit 2 with a message on stderr and nothing on stdout', async () => {
    const agent = spawnAgent(['--page-size', 'zero'])
    let stdout = ''
    agent.child.stdout.on('data', (d) => (stdout += d))
    const { code } = await agent.exited
    assert.equal(code, 2)
    assert.match(agent.stderr(), /--page-size must be a positive number/)
    assert.equal(stdout, '')
  })
})

describe('a runner agent with an authenticator', () => {
  test('--auth: session methods need authenticate with demo-login, again after logout', async () => {
    await withAgent(['--store', ':memory:', '--auth'], async (agent) => {
      const init = await agent.initialize()
      assert.deepEqual(init.authMethods, [{ id: 'demo-login', name: 'Demo login' }])
      await assert.rejects(newSession(agent), (e) => e.code === -32000)
      await assert.rejects(agent.connection.authenticate({ methodId: 'nope' }), (e) => e.code === -32602)
      await agent.connection.authenticate({ methodId: 'demo-login' })
      const { sessionId } = await newSession(agent)
      await agent.connection.prompt(textPrompt(sessionId, 'stream 1'))
      await agent.connection.logout({})
      await assert.rejects(agent.connection.prompt(textPrompt(sessionId, 'stream 1')), (e) => e.code === -32000)
    })
  })

  test('an authenticator without `authenticate` is refused', async () => {
    const { Runner, MemoryStore } = await import('acp-facade')
    const runner = new Runner(new MemoryStore(), { async runTurn() {} })
    assert.throws(() => runner.agent({}, { authMethods: [] }), /authenticate/)
  })
})

// The lines of issue 34 (docs/DEMO.md), each with and without the client capability it needs;
// every agent message validated, as above.
describe('demo agent on the Node turn runner: the lines of issue 34', () => {
  const NOTICES = { session: { notices: {} } }
  const COMPACTION = { session: { compaction: {} } }
  const SUBAGENTS = { subagents: {} }
  const PLANS = { plan: {} }

  /** Runs `fn(agent, sessionId)` on a fresh demo whose client advertises `clientCapabilities`; `session` adds to session/new. */
  async function withDemo(clientCapabilities, fn, session = {}) {
    await withAgent(
      ['--store', ':memory:'],
      async (agent) => {
        await agent.initialize()
        const { sessionId } = await agent.connection.newSession({ cwd: tmpdir(), mcpServers: [], ...session })
        await fn(agent, sessionId)
      },
      { clientCapabilities },
    )
  }

  /** The turn's updates as the agent wrote them, less the usage report and the session's own. */
  function turnUpdates(agent, sessionId) {
    return agent.transcript
      .filter((m) => m?.method === 'session/update' && m.params.sessionId === sessionId)
      .map((m) => m.params.update)
      .filter((u) => !['available_commands_update', 'session_info_update', 'usage_update'].includes(u.sessionUpdate))
  }
  const chunk = (text) => ({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } })

  test('notice TEXT: a notice to a client with session.notices, else the chunk `notice: TEXT`', async () => {
    await withDemo(NOTICES, async (agent, sessionId) => {
      assert.equal((await agent.connection.prompt(textPrompt(sessionId, 'notice  the index is stale '))).stopReason, 'end_turn')
      assert.deepEqual(turnUpdates(agent, sessionId), [{ sessionUpdate: 'notice', severity: 'info', title: 'the index is stale' }])
    })
    await withDemo({}, async (agent, sessionId) => {
      await agent.connection.prompt(textPrompt(sessionId, 'notice the index is stale'))
      assert.deepEqual(turnUpdates(agent, sessionId), [chunk('notice: the index is stale')])
    })
  })

  test('system: the demo prompt, with the client system prompt appended or in its place', async () => {
    const own = 'You are the acp-facade demo.'
    for (const [systemPrompt, said] of [
      [undefined, own],
      [{ mode: 'append', content: [{ type: 'text', text: 'Be brief.' }] }, `${own}\nBe brief.`],
      [{ mode: 'override', content: [{ type: 'text', text: 'You review code.' }] }, 'You review code.'],
    ]) {
      await withDemo(
        {},
        async (agent, sessionId) => {
          await agent.connection.prompt(textPrompt(sessionId, 'system'))
          assert.deepEqual(turnUpdates(agent, sessionId), [chunk(said)])
        },
        systemPrompt ? { systemPrompt } : {},
      )
    }
  })

  test('subagent TEXT: a child sent TEXT that answers it word by word, to a client with subagents; else the chunk', async () => {
    await withDemo(SUBAGENTS, async (agent, sessionId) => {
      await agent.connection.prompt(textPrompt(sessionId, 'subagent find  the bug'))
      const [announced, sent, reply, ...rest] = turnUpdates(agent, sessionId)
      const child = announced.sessionId
      assert.deepEqual(announced, { sessionUpdate: 'subagent_update', sessionId: child, title: 'subagent' })
      assert.ok(child.startsWith(`${sessionId}/`), child)
      assert.deepEqual(sent, {
        sessionUpdate: 'session_message',
        messageId: sent.messageId,
        senderSessionId: sessionId,
        recipientSessionId: child,
        content: [{ type: 'text', text: 'find  the bug' }],
      })
      assert.deepEqual(reply, { sessionUpdate: 'session_message', messageId: reply.messageId, senderSessionId: child, recipientSessionId: sessionId })
      const text = (t) => ({ sessionUpdate: 'session_message_chunk', messageId: reply.messageId, content: { type: 'text', text: t } })
      assert.deepEqual(rest, [
        text('find '),
        text('the '),
        text('bug'),
        { sessionUpdate: 'subagent_update', sessionId: child, state: { state: 'idle', stopReason: 'end_turn' } },
        chunk('subagent: done'),
      ])
    })
    await withDemo({}, async (agent, sessionId) => {
      await agent.connection.prompt(textPrompt(sessionId, 'subagent find the bug'))
      assert.deepEqual(turnUpdates(agent, sessionId), [chunk('subagent: find the bug')])
    })
  })

  test('drip N MS: N chunks, one every MS; session/cancel ends it cancelled', async () => {
    await withDemo({}, async (agent, sessionId) => {
      const started = Date.now()
      assert.equal((await agent.connection.prompt(textPrompt(sessionId, 'drip 3 40'))).stopReason, 'end_turn')
      assert.ok(Date.now() - started >= 100, `${Date.now() - started} ms`)
      assert.deepEqual(turnUpdates(agent, sessionId), [chunk('d1 '), chunk('d2 '), chunk('d3 ')])
      const dripping = agent.connection.prompt(textPrompt(sessionId, 'drip 1000 20'))
      while (turnUpdates(agent, sessionId).length < 5) await new Promise((r) => setTimeout(r, 10))
      await agent.connection.cancel({ sessionId })
      assert.equal((await dripping).stopReason, 'cancelled')
    })
  })

  test('tool NAME: the tool call carries NAME as its name', async () => {
    await withDemo({}, async (agent, sessionId) => {
      await agent.connection.prompt(textPrompt(sessionId, 'tool deploy'))
      const [call] = turnUpdates(agent, sessionId)
      assert.deepEqual(call, { sessionUpdate: 'tool_call', toolCallId: call.toolCallId, title: 'deploy', name: 'deploy', kind: 'execute', rawInput: { name: 'deploy' } })
    })
  })

  test('plan N: N + 1 plan_update of the plan `plan` to a client with plan operations, else whole plans', async () => {
    const entries = (done) => [1, 2].map((i) => ({ content: `step ${i}`, priority: 'medium', status: i <= done ? 'completed' : 'pending' }))
    await withDemo(PLANS, async (agent, sessionId) => {
      await agent.connection.prompt(textPrompt(sessionId, 'plan 2'))
      assert.deepEqual(turnUpdates(agent, sessionId), [
        ...[0, 1, 2].map((done) => ({ sessionUpdate: 'plan_update', plan: { type: 'items', planId: 'plan', entries: entries(done) } })),
        chunk('planned'),
      ])
    })
    await withDemo({}, async (agent, sessionId) => {
      await agent.connection.prompt(textPrompt(sessionId, 'plan 2'))
      assert.deepEqual(turnUpdates(agent, sessionId), [...[0, 1, 2].map((done) => ({ sessionUpdate: 'plan', entries: entries(done) })), chunk('planned')])
    })
  })

  test('/compact: the summary and the compaction state to a client with session.compaction; nothing to others', async () => {
    await withDemo(COMPACTION, async (agent, sessionId) => {
      assert.equal((await agent.connection.prompt(textPrompt(sessionId, '/compact'))).stopReason, 'end_turn')
      const updates = turnUpdates(agent, sessionId)
      const compactionId = updates[0].compactionId
      assert.deepEqual(updates, [
        { sessionUpdate: 'compaction_update', compactionId, status: 'in_progress' },
        { sessionUpdate: 'compaction_summary_chunk', compactionId, content: { type: 'text', text: 'The conversation so far, compacted.' } },
        { sessionUpdate: 'compaction_update', compactionId, status: 'completed' },
      ])
    })
    await withDemo({}, async (agent, sessionId) => {
      assert.equal((await agent.connection.prompt(textPrompt(sessionId, '/compact'))).stopReason, 'end_turn')
      assert.deepEqual(turnUpdates(agent, sessionId), [])
    })
  })
})

test('runTurn resolving a string: a stop reason ends the turn with it; another fails it, named', async () => {
  // What a class's `async runTurn` may resolve with as far as TypeScript knows (`TurnOutcome`:
  // a Promise of any string), checked when it arrives.
  const { Runner, MemoryStore } = await import('acp-facade')
  class Stops {
    async runTurn(turn) {
      const text = turn.prompt.map((b) => b.text).join('')
      return text
    }
  }
  const conn = serveInProcess(new Runner(new MemoryStore(), new Stops()).agent())
  try {
    await conn.connection.initialize({ protocolVersion: 1, clientCapabilities: {} })
    const { sessionId } = await newSession(conn)
    assert.equal((await conn.connection.prompt(textPrompt(sessionId, 'max_tokens'))).stopReason, 'max_tokens')
    await assert.rejects(conn.connection.prompt(textPrompt(sessionId, 'end_turnn')), (e) => {
      assert.equal(e.code, -32603)
      assert.match(e.message, /stop reason/, e.message)
      return true
    })
    assert.equal((await conn.connection.prompt(textPrompt(sessionId, 'end_turn'))).stopReason, 'end_turn')
  } finally {
    await conn.end()
  }
})
