// docs/first-agent-node.md: both of its programs run as agents under the official ACP TypeScript
// client, from a project whose node_modules/acp-facade is this checkout, doing what the guide says
// the client sees.

import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'

import { ROOT, spawnAgent, textPrompt } from './support/client.mjs'

const guide = readFileSync(join(ROOT, 'docs/first-agent-node.md'), 'utf8')
const snippets = (language) => [...guide.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((m) => m[1])

const project = mkdtempSync(join(tmpdir(), 'acp-facade-guide-'))
mkdirSync(join(project, 'node_modules'))
symlinkSync(ROOT, join(project, 'node_modules', 'acp-facade'), 'dir')
writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'guide', private: true, type: 'module' }))
const workspace = join(project, 'workspace')
mkdirSync(workspace)
for (const name of ['b.txt', 'a.txt']) writeFileSync(join(workspace, name), name)
after(() => rmSync(project, { recursive: true, force: true }))

/** Runs program `index` of the guide as an agent; `body(agent, sessionId)`; then hangs up. */
async function withProgram(index, options, body) {
  const file = join(project, `program${index}.mjs`)
  writeFileSync(file, snippets('js')[index])
  const agent = spawnAgent([], { script: file, cwd: project, ...options })
  try {
    await agent.initialize()
    const { sessionId } = await agent.connection.newSession({ cwd: workspace, mcpServers: [] })
    await body(agent, sessionId)
    agent.assertValid()
    assert.deepEqual(await agent.hangUp(), { code: 0, signal: null }, agent.stderr())
  } finally {
    agent.child.kill()
  }
}

const chunks = (agent, sessionId) =>
  agent.updatesOf(sessionId).filter((u) => u.sessionUpdate === 'agent_message_chunk').map((u) => u.content.text)
const toolStatuses = (agent, sessionId) =>
  agent.updatesOf(sessionId).filter((u) => u.sessionUpdate === 'tool_call_update' && u.status).map((u) => u.status)

test('the guide has two programs and a Zed entry', () => {
  assert.equal(snippets('js').length, 2)
  const [zed] = snippets('json').map((s) => JSON.parse(s))
  assert.match(zed.agent_servers.files.args[0], /files_agent\.mjs$/)
})

test('list, allowed: the tool runs and the names stream', async () => {
  await withProgram(0, { permission: 'allow_once' }, async (agent, sessionId) => {
    const reply = await agent.connection.prompt(textPrompt(sessionId, 'list'))
    assert.equal(reply.stopReason, 'end_turn')
    assert.deepEqual(agent.permissionRequests.map((p) => p.options.map((o) => o.kind)), [['allow_once', 'reject_once']])
    assert.deepEqual(toolStatuses(agent, sessionId), ['completed'])
    assert.deepEqual(chunks(agent, sessionId), ['a.txt\n', 'b.txt\n'])
  })
})

test('list, rejected: the tool call fails', async () => {
  await withProgram(0, { permission: 'reject_once' }, async (agent, sessionId) => {
    const reply = await agent.connection.prompt(textPrompt(sessionId, 'list'))
    assert.equal(reply.stopReason, 'end_turn')
    assert.deepEqual(toolStatuses(agent, sessionId), ['failed'])
    assert.deepEqual(chunks(agent, sessionId), ['I was not allowed to look.'])
  })
})

test('count streams, and stops when cancelled', async () => {
  await withProgram(0, {}, async (agent, sessionId) => {
    const reply = await agent.connection.prompt(textPrompt(sessionId, 'count 5'))
    assert.equal(reply.stopReason, 'end_turn')
    assert.equal(chunks(agent, sessionId).join(''), '1 2 3 4 5 ')
    const before = chunks(agent, sessionId).length
    const long = agent.connection.prompt(textPrompt(sessionId, 'count 100000'))
    while (chunks(agent, sessionId).length === before) await new Promise((r) => setTimeout(r, 10))
    await agent.connection.cancel({ sessionId })
    assert.equal((await long).stopReason, 'cancelled')
    assert.ok(chunks(agent, sessionId).length < before + 100000)
  })
})

test('recap tells the earlier turns', async () => {
  await withProgram(0, { permission: 'allow_once' }, async (agent, sessionId) => {
    await agent.connection.prompt(textPrompt(sessionId, 'list'))
    const before = chunks(agent, sessionId).length
    const reply = await agent.connection.prompt(textPrompt(sessionId, 'recap'))
    assert.equal(reply.stopReason, 'end_turn')
    const recap = chunks(agent, sessionId).slice(before).join('')
    assert.match(recap, /^you: list\nme: a\.txt\nb\.txt\n\ntool: List .*: a\.txt\nb\.txt\n$/)
  })
})

test('the custom host echoes word by word', async () => {
  await withProgram(1, {}, async (agent, sessionId) => {
    const reply = await agent.connection.prompt(textPrompt(sessionId, 'hello brave world'))
    assert.equal(reply.stopReason, 'end_turn')
    assert.deepEqual(chunks(agent, sessionId), ['hello ', 'brave ', 'world '])
  })
})
