// The newest official TypeScript client drives the Rust and the Node demo through the lines of
// docs/DEMO.md: @agentclientprotocol/sdk 2.x and its app API (`client().onRequest(...)`,
// `connectWith`), what an editor built today uses — installed as `acp-sdk-2`; the other suites keep
// 1.9.0's ClientSideConnection. Files are really read and written, terminal commands really run.
// Every message the agent sends validates against the generated v1 schema, and is parsed by the
// SDK's own schema to exactly what was sent: the SDK drops a field or an array item it does not
// accept without a word, so "no error" alone would prove nothing.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { before, describe, test } from 'node:test'
import { isDeepStrictEqual } from 'node:util'

import * as stable from 'acp-sdk-2'
import * as unstable from 'acp-sdk-2/unstable'

import { DEMO_HOST, rustDemo } from './support/client.mjs'
import { validateAgentMessage } from './support/schema.mjs'

// The SDK's parsers (its generated zod schemas), one set per entrypoint. The package does not
// export these files: a new SDK version must be checked for their paths.
const PARSERS = {
  stable: await import(new URL('../schema/zod.gen.js', import.meta.resolve('acp-sdk-2'))),
  unstable: await import(new URL('./schema/zod.gen.js', import.meta.resolve('acp-sdk-2/unstable'))),
}
// What the agent sends, by method: its requests' and notifications' params, its responses' results.
const SENT_BY_AGENT = {
  'session/request_permission': 'zRequestPermissionRequest',
  'fs/read_text_file': 'zReadTextFileRequest',
  'fs/write_text_file': 'zWriteTextFileRequest',
  'terminal/create': 'zCreateTerminalRequest',
  'terminal/output': 'zTerminalOutputRequest',
  'terminal/wait_for_exit': 'zWaitForTerminalExitRequest',
  'terminal/kill': 'zKillTerminalRequest',
  'terminal/release': 'zReleaseTerminalRequest',
  'elicitation/create': 'zCreateElicitationRequest',
  'elicitation/complete': 'zCompleteElicitationNotification',
  'session/update': 'zSessionNotification',
  '$/cancel_request': 'zCancelRequestNotification',
}
const ANSWERS = {
  initialize: 'zInitializeResponse',
  'session/new': 'zNewSessionResponse',
  'session/load': 'zLoadSessionResponse',
  'session/resume': 'zResumeSessionResponse',
  'session/list': 'zListSessionsResponse',
  'session/close': 'zCloseSessionResponse',
  'session/delete': 'zDeleteSessionResponse',
  'session/set_config_option': 'zSetSessionConfigOptionResponse',
  'session/prompt': 'zPromptResponse',
}

/** Where the SDK's parse of `raw` lost or changed something (a default it adds is no loss). */
function losses(raw, parsed, where = '$') {
  if (isDeepStrictEqual(raw, parsed)) return []
  if (raw === null || typeof raw !== 'object' || parsed === null || typeof parsed !== 'object') {
    return [`${where}: ${JSON.stringify(raw)} became ${JSON.stringify(parsed)}`]
  }
  if (Array.isArray(raw) && (!Array.isArray(parsed) || raw.length !== parsed.length)) {
    return [`${where}: ${raw.length} items became ${JSON.stringify(parsed)?.slice(0, 200)}`]
  }
  return Object.keys(raw).flatMap((key) =>
    !(key in parsed) ? (raw[key] === null ? [] : [`${where}.${key} dropped`]) : losses(raw[key], parsed[key], `${where}.${key}`),
  )
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Starts `command` in a fresh folder and connects the SDK's client (`entry`: 'stable' or
 * 'unstable') to it; `session(ctx, run)` is the workflow. Returns what was seen.
 */
async function drive(command, entry, workflow) {
  const acp = entry === 'stable' ? stable : unstable
  const work = mkdtempSync(join(tmpdir(), 'acp-sdk2-'))
  const agent = spawn(command[0], command.slice(1), { cwd: work, stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  agent.stderr.on('data', (data) => (stderr += data))
  const seen = { received: [], updates: [], requests: [], problems: [], terminals: new Map(), work }
  const sentMethods = new Map()
  const base = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout))
  const writer = base.writable.getWriter()
  const stream = {
    readable: base.readable.pipeThrough(
      new TransformStream({
        transform(message, controller) {
          seen.received.push(message)
          check(message)
          controller.enqueue(message)
        },
      }),
    ),
    writable: new WritableStream({
      write(message) {
        if (message.method !== undefined && message.id !== undefined) sentMethods.set(JSON.stringify(message.id), message.method)
        return writer.write(message)
      },
      close: () => writer.close(),
    }),
  }
  function check(message) {
    try {
      validateAgentMessage(message, sentMethods)
    } catch (error) {
      seen.problems.push(`v1 schema: ${error.message}`)
    }
    if ('error' in message) return // a JSON-RPC error: no result to parse (the v1 schema checked it)
    const method = message.method ?? sentMethods.get(JSON.stringify(message.id))
    const name = message.method !== undefined ? SENT_BY_AGENT[message.method] : ANSWERS[method]
    const parser = PARSERS[entry][name]
    if (parser === undefined) {
      seen.problems.push(`${method}: no parser of the SDK's to check it with (add it to the tables above)`)
      return
    }
    const value = message.method !== undefined ? message.params : message.result
    const parsed = parser.safeParse(value)
    if (!parsed.success) {
      seen.problems.push(`${method}: the SDK refused ${JSON.stringify(value)}: ${parsed.error.message}`)
      return
    }
    let lost = losses(value, parsed.data)
    // The newest stable v1 (issue 34: the wire types' crate, agent-client-protocol-schema 1.20.0)
    // has fields that SDK 2.4.0 still ships behind its unstable entrypoint only — the demos'
    // `sessionCapabilities.systemPrompt` — which its stable parser drops: such a message must then
    // be parsed whole by the unstable one.
    if (lost.length > 0 && entry === 'stable') {
      const again = PARSERS.unstable[name].safeParse(value)
      if (again.success && losses(value, again.data).length === 0) lost = []
    }
    for (const loss of lost) seen.problems.push(`${method}: ${loss}`)
  }

  const { methods } = acp
  let app = acp
    .client({ name: 'acp-facade sdk2 test' })
    .onNotification(methods.client.session.update, ({ params }) => seen.updates.push(params))
    .onRequest(methods.client.session.requestPermission, ({ params }) => {
      seen.requests.push({ method: 'session/request_permission', params })
      return { outcome: { outcome: 'selected', optionId: params.options.find((o) => o.kind === 'allow_once').optionId } }
    })
    .onRequest(methods.client.fs.readTextFile, ({ params }) => {
      seen.requests.push({ method: 'fs/read_text_file', params })
      return { content: readFileSync(params.path, 'utf8') }
    })
    .onRequest(methods.client.fs.writeTextFile, ({ params }) => {
      seen.requests.push({ method: 'fs/write_text_file', params })
      writeFileSync(params.path, params.content)
      return {}
    })
    .onRequest(methods.client.terminal.create, ({ params }) => {
      seen.requests.push({ method: 'terminal/create', params })
      const id = `term-${seen.terminals.size + 1}`
      const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? work, stdio: ['ignore', 'pipe', 'pipe'] })
      const terminal = { child, output: '', exit: new Promise((resolve) => child.on('close', (exitCode, signal) => resolve({ exitCode, signal }))) }
      child.stdout.on('data', (data) => (terminal.output += data))
      child.stderr.on('data', (data) => (terminal.output += data))
      seen.terminals.set(id, terminal)
      return { terminalId: id }
    })
    .onRequest(methods.client.terminal.waitForExit, async ({ params }) => {
      seen.requests.push({ method: 'terminal/wait_for_exit', params })
      return await seen.terminals.get(params.terminalId).exit
    })
    .onRequest(methods.client.terminal.output, async ({ params }) => {
      seen.requests.push({ method: 'terminal/output', params })
      const terminal = seen.terminals.get(params.terminalId)
      return { output: terminal.output, truncated: false, exitStatus: await terminal.exit }
    })
    .onRequest(methods.client.terminal.kill, ({ params }) => {
      seen.requests.push({ method: 'terminal/kill', params })
      seen.terminals.get(params.terminalId).child.kill('SIGKILL')
      return {}
    })
    .onRequest(methods.client.terminal.release, ({ params }) => {
      seen.requests.push({ method: 'terminal/release', params })
      seen.terminals.get(params.terminalId).child.kill('SIGKILL')
      return {}
    })
  if (entry === 'unstable') {
    app = app
      .onNotification(methods.client.elicitation.complete, ({ params }) => seen.updates.push({ elicitationComplete: params }))
      .onRequest(methods.client.elicitation.create, ({ params }) => {
        seen.requests.push({ method: 'elicitation/create', params })
        return params.mode === 'url' ? { action: 'accept' } : { action: 'accept', content: { answer: '42' } }
      })
  }
  try {
    await app.connectWith(stream, (ctx) => workflow(ctx, methods, seen))
  } catch (error) {
    error.message += `\nthe agent's stderr:\n${stderr.slice(-4000)}`
    throw error
  } finally {
    agent.kill()
    for (const { child } of seen.terminals.values()) child.kill('SIGKILL')
    rmSync(work, { recursive: true, force: true })
  }
  assert.deepEqual(seen.problems, [], 'every message the agent sent, as the SDK read it')
  return seen
}

/** The text of the `agent_message_chunk`s among `updates`. */
const said = (updates) =>
  updates
    .filter((u) => u.update?.sessionUpdate === 'agent_message_chunk' && u.update.content.type === 'text')
    .map((u) => u.update.content.text)
    .join('')

async function session(ctx, methods, seen, clientCapabilities) {
  const init = await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities, clientInfo: { name: 'sdk2', version: '2' } })
  assert.equal(init.protocolVersion, 1)
  const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: seen.work, mcpServers: [] })
  const prompt = async (text, options) => {
    const from = seen.updates.length
    const answer = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] }, options)
    return { stopReason: answer.stopReason, text: said(seen.updates.slice(from)), updates: seen.updates.slice(from) }
  }
  return { sessionId, prompt }
}

let RUST_DEMO

before(() => {
  RUST_DEMO = rustDemo()
})

const AGENTS = {
  rust: () => [RUST_DEMO, '--store', ':memory:'],
  node: () => [process.execPath, DEMO_HOST, '--store', ':memory:'],
}

describe('the newest official TypeScript client (@agentclientprotocol/sdk 2.x)', () => {
  for (const [language, command] of Object.entries(AGENTS)) {
    test(`the ${language} demo: the editor's files and terminals, cancellation, the session methods`, async () => {
      await drive(command(), 'stable', async (ctx, methods, seen) => {
        const capabilities = { fs: { readTextFile: true, writeTextFile: true }, terminal: true }
        const { sessionId, prompt } = await session(ctx, methods, seen, capabilities)

        const echo = await prompt('hello world')
        assert.deepEqual([echo.stopReason, echo.text.replace(/\s+/g, ' ').trim()], ['end_turn', 'hello world'])

        const tool = await prompt('tool deploy')
        assert.equal(tool.text, 'deploy: done')
        assert.equal(seen.requests.filter((r) => r.method === 'session/request_permission').length, 1)

        writeFileSync(join(seen.work, 'notes.txt'), 'from the editor\n')
        const read = await prompt('read notes.txt')
        assert.equal(read.text, 'from the editor\n')
        assert.equal(seen.requests.find((r) => r.method === 'fs/read_text_file').params.path, join(seen.work, 'notes.txt'))

        const write = await prompt('write out.txt some text')
        assert.deepEqual([write.text, readFileSync(join(seen.work, 'out.txt'), 'utf8')], ['write: ok', 'some text'])

        const run = await prompt('run echo hi')
        assert.equal(run.text, 'exit: 0')
        const terminalMethods = seen.requests.map((r) => r.method).filter((m) => m.startsWith('terminal/'))
        assert.deepEqual(terminalMethods, ['terminal/create', 'terminal/wait_for_exit', 'terminal/output', 'terminal/release'])
        const embedded = run.updates.find((u) => u.update.sessionUpdate === 'tool_call').update.content
        assert.deepEqual(embedded, [{ type: 'terminal', terminalId: 'term-1' }])

        const plan = await prompt('plan 2')
        assert.equal(plan.updates.filter((u) => u.update.sessionUpdate === 'plan').length, 3)

        // session/cancel, then the SDK's own cancellation of the request ($/cancel_request)
        const slept = prompt('sleep 5000')
        await sleep(200)
        await ctx.notify(methods.agent.session.cancel, { sessionId })
        assert.equal((await slept).stopReason, 'cancelled')
        // (The SDK still waits for the agent's answer to a request it cancelled.)
        const abort = new AbortController()
        const started = Date.now()
        const aborted = prompt('sleep 5000', { cancellationSignal: abort.signal })
        await sleep(200)
        abort.abort()
        assert.equal((await aborted).stopReason, 'cancelled')
        assert.ok(Date.now() - started < 4000, 'answered at the cancellation, not after the sleep')

        await assert.rejects(prompt('fail'), (error) => error.code === -32603)
        await ctx.request(methods.agent.session.setConfigOption, { sessionId, configId: 'model', value: 'smart' })

        const listed = await ctx.request(methods.agent.session.list, {})
        assert.ok(listed.sessions.some((s) => s.sessionId === sessionId))
        const before = seen.updates.length
        await ctx.request(methods.agent.session.load, { sessionId, cwd: seen.work, mcpServers: [] })
        assert.ok(seen.updates.slice(before).some((u) => u.update.sessionUpdate === 'user_message_chunk'), 'the history is replayed')
        await ctx.request(methods.agent.session.resume, { sessionId, cwd: seen.work })
        await ctx.request(methods.agent.session.close, { sessionId })
        await ctx.request(methods.agent.session.delete, { sessionId })
        const after = await ctx.request(methods.agent.session.list, {})
        assert.ok(!after.sessions.some((s) => s.sessionId === sessionId))
      })
    })

    test(`the ${language} demo: questions and links through elicitation (the unstable entrypoint)`, async () => {
      await drive(command(), 'unstable', async (ctx, methods, seen) => {
        const { prompt } = await session(ctx, methods, seen, { elicitation: { form: {}, url: {} } })
        const asked = await prompt('ask what is the answer?')
        assert.deepEqual([asked.stopReason, asked.text], ['end_turn', 'answer: 42'])
        const opened = await prompt('open https://example.com/login')
        assert.equal(opened.text, 'opened')
        const link = seen.requests.find((r) => r.params.mode === 'url').params
        assert.equal(link.url, 'https://example.com/login')
        const completed = opened.updates.find((u) => u.elicitationComplete)
        assert.equal(completed?.elicitationComplete.elicitationId, link.elicitationId)
      })
    })
  }
})
