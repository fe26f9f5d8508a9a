// The README's Node snippets — the quick start, "read a file and run a command through the
// editor", and the remote agent (`agent.serveHttp`) — each typechecked as TypeScript (`tsc
// --noEmit --strict` against the package's types), and each run as an agent under the official
// ACP TypeScript client, from a project of its own whose node_modules/acp-facade is this checkout
// (as `npm install` of it would link it): the first two here, the remote one by
// serve_http.test.mjs. The other README snippets are checked in their own languages: bindings-python/tests/
// test_readme.py says where.

import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
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
function allBlocks(language) {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  return [...readme.matchAll(/^```([\w-]+)[^\n]*\n([\s\S]*?)^```$/gm)].filter((m) => m[1] === language).map((m) => m[2])
}

/** Whether a snippet is a client of a remote agent (run by remote_sdk.test.mjs, not here). */
const isRemoteClient = (text) => text.includes("from '@agentclientprotocol/sdk")

/** The fenced blocks of the README in `language` that use this package. */
function blocks(language) {
  return allBlocks(language).filter((text) => !isRemoteClient(text))
}

/** Whether a snippet serves an agent remotely (run by serve_http.test.mjs; typechecked here). */
const isRemoteServer = (text) => text.includes('.serveHttp(')

test('every js snippet of the README is checked: this file, the remote clients test or the serveHttp test', () => {
  const remote = allBlocks('js').filter(isRemoteClient)
  assert.equal(remote.length, 1, 'one remote client snippet (bindings-node/test/remote_sdk.test.mjs runs it)')
  assert.equal(blocks('js').length, 3)
  assert.equal(blocks('js').filter(isRemoteServer).length, 1, 'one remote server snippet (serve_http.test.mjs runs it)')
})

/** `tsc --noEmit` (strict) over `files` (name -> text) in a project of its own; tsc's status and output. */
function typecheck(files) {
  const dir = mkdtempSync(join(tmpdir(), 'acp-facade-readme-tsc-'))
  try {
    mkdirSync(join(dir, 'node_modules'))
    symlinkSync(ROOT, join(dir, 'node_modules', 'acp-facade'), 'dir')
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'readme-types', private: true, type: 'module' }))
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
    const compilerOptions = {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      noEmit: true,
      skipLibCheck: true, // the package's declarations: tsc -p tsconfig.json checks them
      lib: ['ES2022'],
      types: ['node'],
      typeRoots: [join(ROOT, 'node_modules/@types')],
    }
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: Object.keys(files) }))
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
    const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir, encoding: 'utf8' })
    return { status: result.status, output: `${result.stdout}${result.stderr}` }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

test('the Node snippets typecheck as TypeScript against the package types', () => {
  const snippets = blocks('js')
  assert.equal(snippets.length, 3)
  // As .mts files: TypeScript, with the snippets' JavaScript as it stands (a runner's `turn` typed
  // by `new Runner`'s parameter).
  const files = Object.fromEntries(snippets.map((text, i) => [`snippet${i}.mts`, text]))
  const { status, output } = typecheck(files)
  assert.equal(status, 0, output)
  // The check has teeth: a misspelt Turn method in each snippet is an error, at its line.
  const broken = Object.fromEntries(Object.entries(files).map(([name, text]) => [name, text.replace('turn.text(', 'turn.txt(')]))
  const misspelt = typecheck(broken)
  assert.notEqual(misspelt.status, 0, 'a misspelt method went unnoticed')
  for (const [name, text] of Object.entries(files)) {
    assert.ok(text.includes('turn.text('), name)
    const line = text.slice(0, text.indexOf('turn.text(')).split('\n').length
    assert.match(misspelt.output, new RegExp(`${name}\\(${line},\\d+\\): error TS2551: Property 'txt' does not exist on type 'Turn'`))
  }
  // And the remote server's options and handle are typed: a misspelt option, a misspelt getter.
  const [[serverName, serverText]] = Object.entries(files).filter(([, text]) => isRemoteServer(text))
  for (const [from, to, error] of [
    ['allowedOrigins:', 'allowedOrigin:', /error TS2561: Object literal may only specify known properties, but 'allowedOrigin' does not exist in type 'ServeHttpOptions'/],
    ['server.url', 'server.uri', /error TS2339: Property 'uri' does not exist on type 'RemoteServer'/],
    ['(token) => tokens.get(token)', '(token) => tokens.size', /error TS2322/],
  ]) {
    assert.ok(serverText.includes(from), from)
    const wrong = typecheck({ ...files, [serverName]: serverText.replace(from, to) })
    assert.notEqual(wrong.status, 0, `${to} went unnoticed`)
    assert.match(wrong.output, error)
  }
})

test('the Node quick start serves the official client', async () => {
  const [snippet, editorSnippet, ...more] = blocks('js')
  assert.ok(snippet && editorSnippet, 'the README has two js blocks before the remote agent')
  assert.ok(more.length === 1 && isRemoteServer(more[0]), 'then the remote agent, run by serve_http.test.mjs')
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
