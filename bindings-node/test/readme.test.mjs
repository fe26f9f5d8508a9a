// The README's Node snippets — the quick start, and "read a file and run a command through the
// editor" — each run as an agent under the official ACP TypeScript client, from a project of its
// own whose node_modules/acp-facade is this checkout (as `npm install` of it would link it). The other README snippets are checked in their own languages: bindings-python/tests/
// test_readme.py says where.

import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'

import { ROOT, chunkText, spawnAgent, textPrompt } from './support/client.mjs'

/** A project of its own whose node_modules/acp-facade is this checkout, running `snippet`. */
function project(snippet) {
  const dir = mkdtempSync(join(tmpdir(), 'acp-facade-readme-'))
  mkdirSync(join(dir, 'node_modules'))
  symlinkSync(ROOT, join(dir, 'node_modules', 'acp-facade'), 'dir')
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'quick-start', private: true, type: 'module' }))
  writeFileSync(join(dir, 'snippet.mjs'), snippet)
  return dir
}

/** The fenced blocks of the README in `language`. */
function blocks(language) {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  return [...readme.matchAll(/^```([\w-]+)[^\n]*\n([\s\S]*?)^```$/gm)].filter((m) => m[1] === language).map((m) => m[2])
}

test('the Node quick start serves the official client', async () => {
  const [snippet, editorSnippet, ...more] = blocks('js')
  assert.ok(snippet && editorSnippet, 'the README has two js blocks')
  assert.equal(more.length, 0, 'two js blocks: the quick start and the editor calls')
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

test('the Node "read a file, run a command" snippet calls the editor, and says why it cannot', async () => {
  const [, snippet] = blocks('js')
  const dir = project(snippet)
  const calls = []
  const handlers = {
    async readTextFile(params) {
      calls.push(['read', params.path])
      return { content: 'file text' }
    },
    async createTerminal(params) {
      calls.push(['create', params.command, params.args, params.cwd])
      return { terminalId: 't1' }
    },
    async waitForTerminalExit() {
      return { exitCode: 0 }
    },
    async terminalOutput() {
      return { output: 'hi\n', truncated: false }
    },
    async releaseTerminal(params) {
      calls.push(['release', params.terminalId])
      return {}
    },
  }
  try {
    for (const clientCapabilities of [{ fs: { readTextFile: true }, terminal: true }, {}]) {
      calls.length = 0
      const agent = spawnAgent([], { script: join(dir, 'snippet.mjs'), cwd: dir, handlers, clientCapabilities })
      const init = await agent.initialize()
      assert.deepEqual([init.agentInfo?.name, init.agentInfo?.version], ['editor', '1.0.0'])
      const { sessionId } = await agent.connection.newSession({ cwd: dir, mcpServers: [] })
      const chunks = []
      for (const line of ['read /work/a.txt', 'run echo hi', 'read rel']) {
        const before = agent.updatesOf(sessionId).length
        assert.equal((await agent.connection.prompt(textPrompt(sessionId, line))).stopReason, 'end_turn')
        chunks.push(chunkText(agent.updatesOf(sessionId).slice(before)))
      }
      if (clientCapabilities.terminal) {
        assert.deepEqual(chunks.slice(0, 2), ['file text', 'hi\nexit: 0'])
        assert.match(chunks[2], /^read failed: -32602 /)
        assert.deepEqual(calls, [
          ['read', '/work/a.txt'],
          ['create', 'echo', ['hi'], dir],
          ['release', 't1'],
        ])
      } else {
        assert.match(chunks[0], /^read failed: -32601 /)
        assert.match(chunks[1], /^run failed: -32601 /)
        assert.deepEqual(calls, [], 'nothing sent to a client that advertised nothing')
      }
      agent.assertValid()
      assert.deepEqual(await agent.hangUp(), { code: 0, signal: null }, agent.stderr())
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
