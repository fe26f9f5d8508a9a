// The README's Node quick start, run as an agent under the official ACP TypeScript client, from a
// project of its own whose node_modules/acp-facade is this checkout (as `npm install` of it would
// link it). The other README snippets are checked in their own languages: bindings-python/tests/
// test_readme.py says where.

import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'

import { ROOT, chunkText, spawnAgent, textPrompt } from './support/client.mjs'

/** The fenced blocks of the README in `language`. */
function blocks(language) {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  return [...readme.matchAll(/^```([\w-]+)[^\n]*\n([\s\S]*?)^```$/gm)].filter((m) => m[1] === language).map((m) => m[2])
}

test('the Node quick start serves the official client', async () => {
  const [snippet, ...more] = blocks('js')
  assert.ok(snippet, 'the README has a js block')
  assert.equal(more.length, 0, 'one js block: the quick start')
  const project = mkdtempSync(join(tmpdir(), 'acp-facade-readme-'))
  try {
    mkdirSync(join(project, 'node_modules'))
    symlinkSync(ROOT, join(project, 'node_modules', 'acp-facade'), 'dir')
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'quick-start', private: true, type: 'module' }))
    writeFileSync(join(project, 'quick_start.mjs'), snippet)
    const agent = spawnAgent([], { script: join(project, 'quick_start.mjs'), cwd: project })
    const init = await agent.initialize()
    assert.deepEqual([init.agentInfo?.name, init.agentInfo?.version], ['echo', '1.0.0'])
    const { sessionId } = await agent.connection.newSession({ cwd: project, mcpServers: [] })
    const reply = await agent.connection.prompt(textPrompt(sessionId, 'hello brave  world'))
    assert.equal(reply.stopReason, 'end_turn')
    const updates = agent.updatesOf(sessionId)
    assert.deepEqual(
      updates.filter((u) => u.sessionUpdate === 'agent_message_chunk').map((u) => u.content.text),
      ['hello ', 'brave ', 'world '],
    )
    assert.equal(chunkText(updates), 'hello brave world ')
    const usage = updates.filter((u) => u.sessionUpdate === 'usage_update')
    assert.deepEqual(usage.map((u) => [u.used, u.size]), [[42, 200000]])
    agent.assertValid()
    assert.deepEqual(await agent.hangUp(), { code: 0, signal: null }, agent.stderr())
    assert.ok(existsSync(join(project, 'sessions.sqlite')), 'the quick start keeps its sessions in SQLite')
  } finally {
    rmSync(project, { recursive: true, force: true })
  }
})
