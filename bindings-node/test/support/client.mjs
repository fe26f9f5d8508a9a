// Test support: the OFFICIAL ACP TypeScript client (@agentclientprotocol/sdk) driving an agent,
// with every agent message validated against the generated v1 schema and recorded.

import { execFileSync, spawn } from 'node:child_process'
import { PassThrough, Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'

import { ClientSideConnection, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk'

import { validateAgentMessage } from './schema.mjs'

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
export const DEMO_HOST = `${ROOT}examples/node/demo_host.mjs`

/**
 * The Rust demo agent (examples/demo-agent): the binary ACP_FACADE_RUST_DEMO names (the test
 * command's, built by `cargo test`), else built here with cargo and found wherever cargo builds
 * (CARGO_TARGET_DIR, or the workspace's target/).
 */
export function rustDemo() {
  // The test command passes the binary `cargo test` built: building it here would compile the
  // crates again with other features, while other test files (and builds) wait on cargo's lock.
  const given = process.env.ACP_FACADE_RUST_DEMO
  if (given) return given
  execFileSync('cargo', ['build', '--quiet', '-p', 'acp-facade-demo'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'], timeout: 600_000 })
  const metadata = execFileSync('cargo', ['metadata', '--format-version', '1', '--no-deps'], { cwd: ROOT, maxBuffer: 64 << 20 })
  return `${JSON.parse(metadata).target_directory}/debug/acp-facade-demo`
}

/** Splits a byte stream into lines, calling `onLine` for each complete one; passes bytes through. */
function lineTap(onLine) {
  let pending = ''
  const decoder = new TextDecoder()
  return new TransformStream({
    transform(chunk, controller) {
      pending += decoder.decode(chunk, { stream: true })
      let nl
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl)
        pending = pending.slice(nl + 1)
        if (line.trim() !== '') onLine(line)
      }
      controller.enqueue(chunk)
    },
  })
}

/**
 * A client connection over a pair of byte streams: `toAgent` (Writable side, web stream) and
 * `fromAgent` (web ReadableStream). Options: `permission` answers permission requests
 * (`'allow_once' | 'allow_always' | 'reject_once' | 'cancelled'` or a function of the params);
 * `handlers` adds the client methods the agent may call (`readTextFile`, `createTerminal`,
 * `createElicitation`, …), `clientCapabilities` is what `initialize` advertises.
 */
export function connect(toAgent, fromAgent, { permission = 'allow_once', handlers = {}, clientCapabilities = {} } = {}) {
  const sent = new Map()
  const transcript = []
  const violations = []
  const updates = []
  const permissionRequests = []
  const outgoing = lineTap((line) => {
    const message = JSON.parse(line)
    if (message.method !== undefined && message.id !== undefined) sent.set(JSON.stringify(message.id), message.method)
  })
  outgoing.readable.pipeTo(toAgent).catch(() => {})
  const incoming = fromAgent.pipeThrough(
    lineTap((line) => {
      let message
      try {
        message = JSON.parse(line)
        validateAgentMessage(message, sent)
      } catch (e) {
        violations.push(e)
      }
      transcript.push(message ?? line)
    }),
  )
  const client = {
    async requestPermission(params) {
      permissionRequests.push(params)
      const answer = typeof permission === 'function' ? await permission(params) : permission
      if (answer === 'cancelled') return { outcome: { outcome: 'cancelled' } }
      const option = params.options.find((o) => o.kind === answer) ?? params.options[0]
      return { outcome: { outcome: 'selected', optionId: option.optionId } }
    },
    async sessionUpdate(params) {
      updates.push(params)
    },
    ...handlers,
  }
  const connection = new ClientSideConnection(() => client, ndJsonStream(outgoing.writable, incoming))
  return {
    connection,
    transcript,
    violations,
    updates,
    permissionRequests,
    /** Updates of one session, in order. */
    updatesOf(sessionId) {
      return updates.filter((u) => u.sessionId === sessionId).map((u) => u.update)
    },
    /** Throws if any agent message broke the schema. */
    assertValid() {
      if (violations.length > 0) throw violations[0]
    },
    async initialize() {
      return connection.initialize({ protocolVersion: PROTOCOL_VERSION, clientCapabilities })
    },
  }
}

/** Spawns the Node demo host (or any agent command) and connects the official client to it. */
export function spawnAgent(args = [], { command = process.execPath, script = DEMO_HOST, permission, env, cwd, handlers, clientCapabilities } = {}) {
  const argv = script ? [script, ...args] : args
  const child = spawn(command, argv, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env }, cwd })
  let stderr = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  const client = connect(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout), { permission, handlers, clientCapabilities })
  return {
    ...client,
    child,
    exited,
    stderr: () => stderr,
    /** Hangs up (closes the agent's stdin) and waits for the process to exit on its own. */
    async hangUp() {
      child.stdin.end()
      return exited
    },
  }
}

/** Serves `agent` in this process over caller-supplied streams (`agent.serve`) to the official
 * client, which reads on this very thread. */
export function serveInProcess(agent, options) {
  const toAgent = new PassThrough()
  const fromAgent = new PassThrough()
  const done = agent.serve(toAgent, fromAgent)
  const client = connect(Writable.toWeb(toAgent), Readable.toWeb(fromAgent), options)
  return {
    ...client,
    done,
    async end() {
      toAgent.end()
      await done
      client.assertValid()
    },
  }
}

/** The concatenated text of the message (or thought) chunks among `updates`. */
export function chunkText(updates, kind = 'agent_message_chunk') {
  return updates
    .filter((u) => u.sessionUpdate === kind)
    .map((u) => u.content.text)
    .join('')
}

export function textPrompt(sessionId, text) {
  return { sessionId, prompt: [{ type: 'text', text }] }
}
