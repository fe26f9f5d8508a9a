// The client handle (bindings-node/src/client.rs): `turn.client` and `setup.client` driven
// in-process by the official TypeScript client, which serves files, terminals and elicitation.
// Each outcome is checked as the host sees it (the resolved value, or the error class of its kind
// with its `code`) and on the wire (what the agent sent, and what it did not).

import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { describe, test } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

import {
  AcpError,
  ClientError,
  EventHub,
  InvalidArgumentError,
  MemoryStore,
  RejectedError,
  RelativePathError,
  ReleasedError,
  Runner,
  UnsupportedError,
} from 'acp-facade'

import { RequestError } from '@agentclientprotocol/sdk'

import { chunkText, serveInProcess, textPrompt } from './support/client.mjs'

const ALL = { fs: { readTextFile: true, writeTextFile: true }, terminal: true, elicitation: { form: {}, url: {} } }

/** A client serving an in-memory file system and scripted terminals, recording every call. */
function editor() {
  const files = new Map([['/work/notes.txt', 'one\ntwo\nthree\n']])
  const calls = []
  let terminals = 0
  const exits = new Map()
  const handlers = {
    async readTextFile(params) {
      calls.push(['read', params])
      if (params.path === '/work/hang') return new Promise(() => {})
      if (!files.has(params.path)) throw new RequestError(-32002, 'no such file', { path: params.path })
      let lines = files.get(params.path).split('\n')
      if (params.line) lines = lines.slice(params.line - 1)
      if (params.limit) lines = lines.slice(0, params.limit)
      return { content: lines.join('\n') }
    },
    async writeTextFile(params) {
      calls.push(['write', params])
      files.set(params.path, params.content)
      return {}
    },
    async createTerminal(params) {
      calls.push(['create', params])
      const terminalId = `term-${++terminals}`
      let exit
      exits.set(terminalId, new Promise((resolve) => (exit = resolve)))
      if (params.command === 'true') exit({ exitCode: 0 })
      exits.get(terminalId).exit = exit
      return { terminalId }
    },
    async terminalOutput(params) {
      calls.push(['output', params])
      return { output: 'hello\n', truncated: false, exitStatus: { exitCode: 0 } }
    },
    async waitForTerminalExit(params) {
      calls.push(['wait', params])
      return exits.get(params.terminalId)
    },
    async killTerminal(params) {
      calls.push(['kill', params])
      return {}
    },
    async releaseTerminal(params) {
      calls.push(['release', params])
      return {}
    },
    async createElicitation(params) {
      calls.push(['elicit', params])
      if (params.mode === 'url') return { action: 'accept' }
      return { action: 'accept', content: { answer: 'blue' } }
    },
    async completeElicitation(params) {
      calls.push(['complete', params])
    },
  }
  return { files, calls, handlers, named: (name) => calls.filter(([n]) => n === name).map(([, p]) => p) }
}

/** Serves a runner whose turns run `body(turn)`, to the official client advertising `capabilities`. */
async function withRunner(body, capabilities, fn) {
  const client = editor()
  const runner = new Runner(new MemoryStore(), {
    async runTurn(turn) {
      return body(turn)
    },
  })
  const conn = serveInProcess(runner.agent(), { handlers: client.handlers, clientCapabilities: capabilities })
  try {
    await conn.initialize()
    const { sessionId } = await conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] })
    await fn(conn, sessionId, client)
  } finally {
    await conn.end()
  }
}

/** Runs one prompt whose turn runs `body`; the turn's answer and the client. */
async function oneTurn(body, capabilities = ALL) {
  let result
  await withRunner(body, capabilities, async (conn, sessionId, client) => {
    const response = await conn.connection.prompt(textPrompt(sessionId, 'go'))
    result = { response, client, conn, sessionId }
  })
  return result
}

/** The error `promise` rejects with. */
async function rejection(promise) {
  try {
    await promise
  } catch (e) {
    return e
  }
  assert.fail('the call resolved')
}

describe('the client handle of a runner turn', () => {
  test('reads and writes files through the client', async () => {
    let seen
    const { client } = await oneTurn(async (turn) => {
      assert.deepEqual(turn.client.capabilities, {
        readTextFile: true,
        writeTextFile: true,
        terminal: true,
        elicitationForm: true,
        elicitationUrl: true,
        authTerminal: false,
        notices: false,
        compaction: false,
        subagents: false,
        planOperations: false,
        meta: null,
      })
      await turn.client.writeTextFile('/work/new.txt', 'fresh')
      seen = [await turn.client.readTextFile('/work/notes.txt', 2, 1), await turn.client.readTextFile('/work/new.txt')]
    })
    assert.deepEqual(seen, ['two', 'fresh'])
    assert.deepEqual(client.named('read')[0].line, 2)
    assert.deepEqual(client.named('read')[0].limit, 1)
    assert.equal(client.files.get('/work/new.txt'), 'fresh')
  })

  test('each file call goes out after the updates of what the turn did before it, queued or begun at once', async () => {
    // A call made while the turn's earlier calls wait in its queue goes through the queue; one made
    // once they are applied begins on the JS thread (and waits only for their updates to go out).
    const rounds = 12
    const { conn } = await oneTurn(async (turn) => {
      for (let i = 0; i < rounds; i++) {
        turn.text(`t${i} `)
        if (i % 2) await new Promise((resolve) => setImmediate(resolve))
        await turn.client.readTextFile('/work/notes.txt', 1, 1)
      }
    })
    const reads = []
    conn.transcript.forEach((m, at) => m.method === 'fs/read_text_file' && reads.push(at))
    assert.equal(reads.length, rounds)
    for (let i = 0; i < rounds; i++) {
      const chunk = conn.transcript.findIndex((m) => m.params?.update?.content?.text === `t${i} `)
      assert.ok(chunk >= 0 && chunk < reads[i], `the update of t${i} precedes read ${i}`)
      assert.ok(i === 0 || reads[i - 1] < chunk, `read ${i - 1} precedes the update of t${i}`)
    }
  })

  test('many calls in flight: each Promise settles with its own answer, failures with their own error', async () => {
    // Answers arrive together and are settled in batches on the JS thread (bindings-node/src/settle.rs).
    let seen
    const { client } = await oneTurn(async (turn) => {
      const reads = []
      for (let i = 0; i < 200; i++) {
        reads.push(turn.client.readTextFile('/work/notes.txt', (i % 3) + 1, 1))
        if (i % 50 === 0) reads.push(turn.client.readTextFile('/work/missing').then(() => 'resolved', (e) => e.code))
      }
      seen = await Promise.all(reads)
    })
    const expected = []
    for (let i = 0; i < 200; i++) {
      expected.push(['one', 'two', 'three'][i % 3])
      if (i % 50 === 0) expected.push(-32002)
    }
    assert.deepEqual(seen, expected)
    assert.equal(client.named('read').length, 204)
  })

  test('each failure is the error class of its kind, and only the client error reaches the wire', async () => {
    let errors
    const { client, conn } = await oneTurn(
      async (turn) => {
        errors = {
          relative: await rejection(turn.client.readTextFile('notes.txt')),
          unsupported: await rejection(turn.client.writeTextFile('/work/x', 'x')),
          terminal: await rejection(turn.client.createTerminal('ls')),
          rejected: await rejection(turn.client.readTextFile('/work/missing')),
          url: await rejection(turn.client.elicitUrl('Open it', 'not a url')),
        }
      },
      { fs: { readTextFile: true }, elicitation: { url: {} } },
    )
    const { relative, unsupported, terminal, rejected, url } = errors
    assert.ok(relative instanceof RelativePathError && relative instanceof ClientError && relative instanceof AcpError)
    assert.equal(relative.name, 'RelativePathError')
    assert.equal(relative.kind, 'relative_path')
    assert.equal(relative.code, -32602)
    assert.equal(relative.field, 'path')
    assert.equal(relative.path, 'notes.txt')
    assert.ok(unsupported instanceof UnsupportedError)
    assert.equal(unsupported.kind, 'unsupported')
    assert.equal(unsupported.code, -32601)
    assert.equal(unsupported.method, 'fs/write_text_file')
    assert.match(unsupported.capability, /writeTextFile/)
    assert.ok(terminal instanceof UnsupportedError)
    assert.equal(terminal.method, 'terminal/create')
    assert.ok(rejected instanceof RejectedError)
    assert.equal(rejected.kind, 'rejected')
    assert.equal(rejected.code, -32002)
    assert.equal(rejected.message, 'no such file')
    assert.deepEqual(rejected.data, { path: '/work/missing' })
    assert.equal(rejected.method, 'fs/read_text_file')
    assert.ok(url instanceof InvalidArgumentError)
    assert.equal(url.code, -32602)
    // Nothing was sent for the calls refused at once: one read, the rejected one.
    assert.deepEqual(client.named('read').map((p) => p.path), ['/work/missing'])
    assert.equal(client.named('write').length + client.named('create').length + client.named('elicit').length, 0)
    const methods = conn.transcript.map((m) => m.method).filter(Boolean)
    assert.ok(!methods.includes('fs/write_text_file') && !methods.includes('terminal/create'))
  })

  test('a client error the turn lets propagate fails the prompt (-32603 with its message)', async () => {
    await withRunner(
      async (turn) => {
        await turn.client.readTextFile('/work/missing')
      },
      ALL,
      async (conn, sessionId) => {
        const error = await rejection(conn.connection.prompt(textPrompt(sessionId, 'go')))
        assert.equal(error.code, -32603)
        assert.match(error.message, /no such file/)
      },
    )
  })

  test('a terminal: output, exit status, released once; calls after release send nothing', async () => {
    let seen
    const { client } = await oneTurn(async (turn) => {
      const terminal = await turn.client.createTerminal('true', ['-x'], { LANG: 'C' }, '/work', 4096)
      assert.deepEqual(terminal.content, { type: 'terminal', terminalId: terminal.id })
      const status = await terminal.waitForExit()
      const output = await terminal.output()
      await terminal.release()
      await terminal.release()
      const released = await rejection(terminal.output())
      seen = { status, output, released, isReleased: terminal.isReleased }
    })
    assert.equal(seen.status.exitCode, 0)
    assert.equal(seen.output.output, 'hello\n')
    assert.equal(seen.output.truncated, false)
    assert.ok(seen.released instanceof ReleasedError)
    assert.equal(seen.released.code, -32600)
    assert.equal(seen.released.terminalId, 'term-1')
    assert.equal(seen.isReleased, true)
    const [create] = client.named('create')
    assert.deepEqual(
      [create.command, create.args, create.env, create.cwd, create.outputByteLimit],
      ['true', ['-x'], [{ name: 'LANG', value: 'C' }], '/work', 4096],
    )
    assert.equal(client.named('release').length, 1)
    assert.equal(client.named('output').length, 1)
  })

  test('a terminal relative cwd is refused at once', async () => {
    let error
    const { client } = await oneTurn(async (turn) => {
      error = await rejection(turn.client.createTerminal('ls', [], null, 'relative/dir'))
    })
    assert.ok(error instanceof RelativePathError)
    assert.equal(error.field, 'cwd')
    assert.equal(client.named('create').length, 0)
  })

  test('leaving `await using` releases the terminal', async () => {
    let id
    const { client } = await oneTurn(async (turn) => {
      const terminal = await turn.client.createTerminal('true')
      await terminal[Symbol.asyncDispose]()
      id = terminal.id
      assert.equal(terminal.isReleased, true)
    })
    assert.deepEqual(client.named('release').map((p) => p.terminalId), [id])
  })

  test('a terminal dropped by the host and garbage-collected is released', async () => {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc')
    let released
    await withRunner(
      async (turn) => {
        // Created, then dropped without release while the turn keeps running.
        await (async () => {
          await turn.client.createTerminal('true')
        })()
        for (let i = 0; i < 50 && released() === 0; i++) {
          gc()
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
        await turn.text(`released ${released()}`)
      },
      ALL,
      async (conn, sessionId, client) => {
        released = () => client.named('release').length
        await conn.connection.prompt(textPrompt(sessionId, 'go'))
        assert.equal(chunkText(conn.updatesOf(sessionId)), 'released 1', 'released while the turn still ran')
        assert.equal(released(), 1)
      },
    )
  })

  test('a runTurn Promise that can never settle is collected: the prompt fails rather than waiting forever', async () => {
    // What waits for a host's Promise is held by the Promise's reactions (bindings-node/src/callback.rs),
    // so it goes with the Promise instead of staying behind for ever.
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc')
    let outcome
    await withRunner(() => new Promise(() => {}), ALL, async (conn, sessionId) => {
      const prompt = conn.connection.prompt(textPrompt(sessionId, 'go')).then(
        (response) => ({ response }),
        (error) => ({ error }),
      )
      for (let i = 0; i < 100 && outcome === undefined; i++) {
        gc()
        outcome = await Promise.race([prompt, new Promise((resolve) => setTimeout(resolve, 20))])
      }
    })
    assert.equal(outcome?.error?.code, -32603, `the prompt failed: ${JSON.stringify(outcome)}`)
  })

  test('a terminal left running when the turn ends is released by the turn', async () => {
    const { client } = await oneTurn(async (turn) => {
      await turn.client.createTerminal('sleep')
    })
    assert.equal(client.named('release').length, 1)
  })

  test('cancel during a read: $/cancel_request, the host sees an AbortError, the turn ends cancelled', async () => {
    let error
    await withRunner(
      async (turn) => {
        error = await rejection(turn.client.readTextFile('/work/hang'))
        return 'cancelled'
      },
      ALL,
      async (conn, sessionId, client) => {
        const prompt = conn.connection.prompt(textPrompt(sessionId, 'go'))
        while (client.named('read').length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
        await conn.connection.cancel({ sessionId })
        assert.equal((await prompt).stopReason, 'cancelled')
        assert.ok(conn.transcript.some((m) => m.method === '$/cancel_request'))
      },
    )
    assert.equal(error.name, 'AbortError')
    assert.equal(error.code, 'ABORT_ERR')
    assert.ok(!(error instanceof ClientError))
  })

  test('cancel while a terminal runs: killed and released', async () => {
    await withRunner(
      async (turn) => {
        const terminal = await turn.client.createTerminal('sleep')
        const error = await rejection(terminal.waitForExit())
        assert.equal(error.name, 'AbortError')
        return 'cancelled'
      },
      ALL,
      async (conn, sessionId, client) => {
        const prompt = conn.connection.prompt(textPrompt(sessionId, 'go'))
        while (client.named('wait').length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
        await conn.connection.cancel({ sessionId })
        assert.equal((await prompt).stopReason, 'cancelled')
        // The agent sends kill and release before the prompt's answer, but the client's SDK runs
        // its handlers for them asynchronously: the answer may be seen first, under load.
        while (client.named('release').length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
        assert.equal(client.named('kill').length, 1)
        assert.equal(client.named('release').length, 1)
      },
    )
  })

  test('elicitation: a form, a URL completed, and the turn questions', async () => {
    let seen
    const { client } = await oneTurn(async (turn) => {
      const form = await turn.client.elicitForm('Colour?', {
        type: 'object',
        properties: { answer: { type: 'string' } },
        required: ['answer'],
      })
      const opened = await turn.client.elicitUrl('Log in', 'https://example.com/login')
      await turn.client.completeElicitation(opened.elicitationId)
      const asked = await turn.ask('Colour?')
      seen = { form, opened, asked }
    })
    assert.deepEqual(seen.form, { action: 'accept', values: { answer: 'blue' } })
    assert.equal(seen.opened.answer.action, 'accept')
    assert.deepEqual(seen.asked, { kind: 'answered', value: 'blue' })
    assert.deepEqual(client.named('complete'), [{ elicitationId: seen.opened.elicitationId }])
    const modes = client.named('elicit').map((p) => p.mode)
    assert.deepEqual(modes, ['form', 'url', 'form'])
  })

  test('rich tool calls and permission options', async () => {
    let answer
    await withRunner(
      async (turn) => {
        const call = await turn.startTool({
          title: 'edit a',
          kind: 'edit',
          status: 'in_progress',
          content: [{ type: 'diff', path: '/work/a', oldText: 'x', newText: 'y' }],
          locations: [{ path: '/work/a', line: 1 }],
        })
        answer = await turn.requestPermissionWithOptions(call, 'Edit a', ['approve'], [
          { optionId: 'never', name: 'Never', kind: 'reject_always' },
        ])
        await turn.updateTool(call, { status: 'completed', rawOutput: { ok: true } })
      },
      ALL,
      async (conn, sessionId) => {
        conn.permission = undefined
        await conn.connection.prompt(textPrompt(sessionId, 'go'))
        const updates = conn.updatesOf(sessionId)
        const started = updates.find((u) => u.sessionUpdate === 'tool_call')
        assert.equal(started.kind, 'edit')
        assert.deepEqual(started.locations, [{ path: '/work/a', line: 1 }])
        assert.equal(started.content[0].type, 'diff')
        const done = updates.find((u) => u.sessionUpdate === 'tool_call_update' && u.status === 'completed')
        assert.deepEqual(done.rawOutput, { ok: true })
        const offered = conn.permissionRequests[0].options.map((o) => [o.optionId, o.kind])
        assert.deepEqual(offered.at(-1), ['never', 'reject_always'])
      },
    )
    // The test client picks the first option of the kind asked for (`allow_once`).
    assert.deepEqual(answer, { kind: 'action', action: 'approve' })
  })
})

describe('the session handle (setup.client) of a host', () => {
  test('works once the session is established, ordered after its events', async () => {
    const client = editor()
    let setupClient
    const host = {
      newSession(setup) {
        setupClient = setup.client
        const events = new EventHub()
        return {
          id: 'js-1',
          events,
          submit(prompt) {
            const at = { loopId: 'main', turnId: 't1', commandId: 'c1' }
            events.publish({ ...at, class: 'enduring', kind: { type: 'turnStarted', message: { content: prompt } } })
            events.publish({ ...at, kind: { type: 'tokenDelta', text: 'before', channel: 'message' } })
            // The turn goes on after `submit` returned (the agent matches its events by command id).
            setup.client.readTextFile('/work/notes.txt', 1, 1).then((content) => {
              events.publish({ ...at, kind: { type: 'tokenDelta', text: ` ${content}`, channel: 'message' } })
              events.publish({ ...at, class: 'enduring', kind: { type: 'turnDone', stop: 'end_turn' } })
            })
            return 'c1'
          },
          interrupt() {},
          respondGate() {},
        }
      },
    }
    const { Agent } = await import('acp-facade')
    const conn = serveInProcess(new Agent(host), { handlers: client.handlers, clientCapabilities: ALL })
    try {
      await conn.initialize()
      const { sessionId } = await conn.connection.newSession({ cwd: tmpdir(), mcpServers: [] })
      assert.equal(setupClient.sessionId, sessionId)
      assert.equal(setupClient.capabilities.terminal, true)
      await conn.connection.prompt(textPrompt(sessionId, 'go'))
      assert.equal(chunkText(conn.updatesOf(sessionId)), 'before one')
      // The read went out after the update published before it.
      const read = conn.transcript.findIndex((m) => m.method === 'fs/read_text_file')
      const before = conn.transcript.findIndex((m) => m.params?.update?.content?.text === 'before')
      assert.ok(before >= 0 && before < read)
    } finally {
      await conn.end()
    }
  })
})

describe('terminal auth methods', () => {
  test('are advertised to a client that advertised auth.terminal, and only to it', async () => {
    const { Agent } = await import('acp-facade')
    const host = {
      newSession() {
        throw new Error('unused')
      },
      authMethods: [
        { id: 'login', name: 'Log in' },
        { type: 'terminal', id: 'tty', name: 'In a terminal', args: ['--login'], env: { MODE: 'tty' } },
      ],
      requiresAuthentication: false,
      authenticate() {},
    }
    for (const [capabilities, ids] of [
      [{}, ['login']],
      [{ auth: { terminal: true } }, ['login', 'tty']],
    ]) {
      const conn = serveInProcess(new Agent(host), { clientCapabilities: capabilities })
      try {
        const init = await conn.initialize()
        assert.deepEqual(init.authMethods.map((m) => m.id), ids)
        const tty = init.authMethods.find((m) => m.id === 'tty')
        if (tty) assert.deepEqual([tty.type, tty.args, tty.env], ['terminal', ['--login'], { MODE: 'tty' }])
      } finally {
        await conn.end()
      }
    }
  })
})
