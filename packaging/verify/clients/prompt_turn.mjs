// Prompt turns of an installed demo agent under the official ACP TypeScript client
// (@agentclientprotocol/sdk). The release verification copies this file into a fresh npm project
// where the packed packages and the SDK are installed, and runs it there.
//
// usage: node prompt_turn.mjs COMMAND [ARG...]   (the agent's command line)
//
// It initializes the agent, opens a session, runs `stream 3` and `tool build` (the permission
// allowed once), and checks what docs/DEMO.md says each turn sends. Exit status 0 and one summary
// line on stdout when every check holds.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'

import { ClientSideConnection, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk'

const [command, ...args] = process.argv.slice(2)
if (!command) {
  process.stderr.write('usage: node prompt_turn.mjs COMMAND [ARG...]\n')
  process.exit(2)
}

const cwd = mkdtempSync(join(tmpdir(), 'acp-facade-verify-'))
const child = spawn(command, args, { cwd, stdio: ['pipe', 'pipe', 'inherit'] })
const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)))

const updates = []
const permissionRequests = []
const client = {
  async requestPermission(params) {
    permissionRequests.push(params)
    const allow = params.options.find((o) => o.kind === 'allow_once')
    return { outcome: { outcome: 'selected', optionId: allow.optionId } }
  },
  async sessionUpdate(params) {
    updates.push(params.update)
  },
}
const connection = new ClientSideConnection(
  () => client,
  ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)),
)
const text = () =>
  updates
    .filter((u) => u.sessionUpdate === 'agent_message_chunk')
    .map((u) => u.content.text)
    .join('')

try {
  const init = await connection.initialize({ protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} })
  assert.equal(init.protocolVersion, 1)
  assert.equal(init.agentInfo?.name, 'acp-facade-demo')
  const { sessionId } = await connection.newSession({ cwd, mcpServers: [] })

  let reply = await connection.prompt({ sessionId, prompt: [{ type: 'text', text: 'stream 3' }] })
  assert.equal(reply.stopReason, 'end_turn')
  assert.equal(text(), 't1 t2 t3 ')
  assert.equal(updates.at(-1).sessionUpdate, 'usage_update')

  updates.length = 0
  reply = await connection.prompt({ sessionId, prompt: [{ type: 'text', text: 'tool build' }] })
  assert.equal(reply.stopReason, 'end_turn')
  assert.equal(permissionRequests.length, 1)
  const kinds = updates.map((u) => u.sessionUpdate)
  assert.ok(kinds.includes('tool_call') && kinds.includes('tool_call_update'), kinds.join(' '))
  assert.equal(text(), 'build: done')

  child.stdin.end()
  assert.equal(await exited, 0, 'the agent exits 0 after the client hangs up')
  process.stdout.write(`ok: ${init.agentInfo.name} ${init.agentInfo.version}: stream and tool turns as documented\n`)
} finally {
  child.kill()
  rmSync(cwd, { recursive: true, force: true })
}
