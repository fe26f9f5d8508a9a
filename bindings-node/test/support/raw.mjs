// Test support: a raw newline-delimited JSON-RPC driver, for byte-level comparisons between agents.

import { spawn } from 'node:child_process'

/**
 * Runs `steps` (JSON-RPC requests `{ method, params }`, with `$SID` standing for the session made
 * first) against an agent command and returns every line it wrote, parsed, in order.
 * Permission requests are answered with the option of kind `permission` (or `cancelled`).
 * `clientCapabilities` is what `initialize` advertises; `session` adds to the first `session/new`'s
 * params (e.g. a `systemPrompt`); with `validate` (`(message, sent) => void`, throwing on a
 * violation) every line is checked, and what it threw is returned as `violations`.
 */
export async function transcript(command, args, steps, { permission = 'allow_once', clientCapabilities = {}, session = {}, validate } = {}) {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] })
  const out = []
  const sent = new Map()
  const violations = []
  let buffer = ''
  let waiting = null
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (data) => {
    buffer += data
    let nl
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const message = JSON.parse(buffer.slice(0, nl))
      buffer = buffer.slice(nl + 1)
      out.push(message)
      if (validate) {
        try {
          validate(message, sent)
        } catch (e) {
          violations.push(e.message)
        }
      }
      if (message.method === 'session/request_permission') {
        const option = message.params.options.find((o) => o.kind === permission)
        const outcome = option ? { outcome: 'selected', optionId: option.optionId } : { outcome: 'cancelled' }
        child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { outcome } }) + '\n')
      } else if (waiting && message.method === undefined && message.id === waiting.id) {
        const w = waiting
        waiting = null
        w.resolve(message)
      }
    }
  })
  let id = 0
  const request = (method, params) =>
    new Promise((resolve) => {
      waiting = { id: ++id, resolve }
      sent.set(JSON.stringify(id), method)
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n')
    })
  await request('initialize', { protocolVersion: 1, clientCapabilities })
  const sid = (await request('session/new', { cwd: '/tmp', mcpServers: [], ...session })).result.sessionId
  for (const step of steps) {
    await request(step.method, JSON.parse(JSON.stringify(step.params).replaceAll('$SID', sid)))
  }
  child.stdin.end()
  const code = await new Promise((resolve) => child.once('exit', resolve))
  return { code, messages: normalize(out, sid), violations }
}

/** Replaces what differs between two runs by nature: the session id and timestamps. */
function normalize(messages, sid) {
  return JSON.parse(
    JSON.stringify(messages)
      .replaceAll(sid, '$SID')
      .replace(/"updatedAt":"[^"]*"/g, '"updatedAt":"$TIME"'),
  )
}
