// Start-up. `serveStdio()` answers what needs no host code on the core's thread while the JS thread
// is still busy (loading the rest of an agent, say); what needs the host waits for the JS thread,
// the notifications in arrival order (ARCHITECTURE.md, "Start-up (Node)"). Not timed: the JS
// thread is held by the test itself (fixtures/late_host.mjs waits on fd 3). And the platform
// suffix native.js loads the addon by, read cheaply (docs/BENCHMARKS.md, Node start-up).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { test } from 'node:test'

test('initialize is answered before the host code runs; later requests are served in order', async () => {
  const child = spawn(process.execPath, [new URL('./fixtures/late_host.mjs', import.meta.url).pathname], {
    stdio: ['pipe', 'pipe', 'inherit', 'pipe'],
  })
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const seen = []
  const send = (id, method, params) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`)
  const response = async (id) => {
    const earlier = seen.find((m) => m.id === id && m.method === undefined)
    if (earlier) return earlier
    for (;;) {
      const { value, done } = await lines.next()
      assert.ok(!done, 'the agent closed stdout')
      const message = JSON.parse(value)
      seen.push(message)
      if (message.id === id && message.method === undefined) return message
    }
  }
  try {
    send(1, 'initialize', { protocolVersion: 1, clientCapabilities: {} })
    assert.equal((await response(1)).result.protocolVersion, 1)
    send(2, 'session/new', { cwd: '/tmp', mcpServers: [] })
    const sessionId = (await response(2)).result.sessionId
    const note = (n) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: '_late/note', params: { n } })}\n`)
    note(1)
    send(3, 'session/prompt', { sessionId, prompt: [{ type: 'text', text: 'one' }] })
    note(2)
    note(3)
    // Answered by the core alone, after it has read everything above: a second initialize is
    // answered as the first was.
    send(4, 'initialize', { protocolVersion: 1, clientCapabilities: {} })
    assert.equal((await response(4)).result.protocolVersion, 1)
    assert.deepEqual(
      seen.filter((m) => m.id === 3 || m.method === 'session/update'),
      [],
      'nothing of the turn before the host code runs',
    )

    child.stdio[3].end('go')
    assert.equal((await response(3)).result.stopReason, 'end_turn')
    const texts = seen
      .filter((m) => m.method === 'session/update' && m.params.update.sessionUpdate === 'agent_message_chunk')
      .map((m) => m.params.update.content.text)
    assert.deepEqual(texts, ['turn: one'])
    send(5, '_late/notes', { count: 3 })
    assert.deepEqual((await response(5)).result.notes, [1, 2, 3], 'the notifications that waited, in arrival order')
  } finally {
    child.stdin.end()
    child.stdio[3].destroy()
  }
  const code = await new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.on('exit', resolve)))
  assert.equal(code, 0)
})

test("the addon's platform suffix, read from the mapped libraries, is the diagnostic report's", async () => {
  const { createRequire } = await import('node:module')
  const { currentPlatform } = createRequire(import.meta.url)('../platform.js')
  const base = `${process.platform}-${process.arch}`
  const report = process.platform === 'linux' ? process.report.getReport() : undefined
  const expected = report ? `${base}-${report.header.glibcVersionRuntime ? 'gnu' : 'musl'}` : base
  assert.equal(currentPlatform(), expected)
})
