// The stdout guard: a host that console.logs during a turn never corrupts the protocol stream.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { test } from 'node:test'

test('console.log in a turn goes to stderr, not the protocol stream', async () => {
  const child = spawn(process.execPath, [new URL('./fixtures/noisy_host.mjs', import.meta.url).pathname], {
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`)
  const until = async (id) => {
    const seen = []
    for (;;) {
      const { value, done } = await lines.next()
      assert.ok(!done, 'the agent closed stdout')
      const message = JSON.parse(value) // a non-protocol line fails here
      seen.push(message)
      if (message.id === id && message.method === undefined) return seen
    }
  }
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } })
  await until(1)
  send({ jsonrpc: '2.0', id: 2, method: 'session/new', params: { cwd: '/tmp', mcpServers: [] } })
  const sessionId = (await until(2)).at(-1).result.sessionId
  send({ jsonrpc: '2.0', id: 3, method: 'session/prompt', params: { sessionId, prompt: [{ type: 'text', text: 'hello' }] } })
  const turn = await until(3)
  assert.equal(turn.at(-1).result.stopReason, 'end_turn')
  assert.ok(turn.some((m) => m.params?.update?.content?.text === 'hello'))
  child.stdin.end()
  const rest = []
  for (;;) {
    const { value, done } = await lines.next()
    if (done) break
    rest.push(value)
  }
  assert.deepEqual(rest.filter((l) => l.trim() !== ''), [], 'nothing but protocol on stdout')
  const code = await new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.on('exit', resolve)))
  assert.equal(code, 0)
  assert.match(stderr, /STRAY OUTPUT from a host: hello/)
  assert.match(stderr, /MORE STRAY OUTPUT/)
})
