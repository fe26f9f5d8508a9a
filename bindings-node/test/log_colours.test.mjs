// Logs on stderr carry ANSI colour codes only for a person at a terminal: the Node binding's log
// set-up (at the addon's load) writes plain text to a pipe, as an editor's agent log or a file gets
// it, and honours NO_COLOR on a terminal.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'

const DEMO = new URL('../../examples/node/demo_host.mjs', import.meta.url).pathname
const ESC = '\x1b['

// A stray response (logged as a warning by the protocol layer), then a session (an info line),
// then the end of input: the demo exits.
const STDIN = [
  { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } },
  { jsonrpc: '2.0', id: 'never-sent', result: {} },
  { jsonrpc: '2.0', id: 2, method: 'session/new', params: { cwd: '/tmp', mcpServers: [] } },
]
  .map((m) => `${JSON.stringify(m)}\n`)
  .join('')

function env(noColor) {
  const env = { ...process.env, ACP_FACADE_LOG: 'info' }
  delete env.NO_COLOR
  if (noColor !== undefined) env.NO_COLOR = noColor
  return env
}

test('logs reach a pipe without colour codes', () => {
  const done = spawnSync(process.execPath, [DEMO, '--store', ':memory:'], {
    input: STDIN,
    encoding: 'utf8',
    timeout: 60_000,
    env: env(undefined),
  })
  assert.equal(done.status, 0, done.stderr)
  assert.match(done.stderr, /WARN .*never sent/)
  assert.match(done.stderr, /INFO .*session created/)
  assert.ok(!done.stderr.includes(ESC), JSON.stringify(done.stderr))
})

/** What the demo writes to a pseudo-terminal (`script` from util-linux) for the same input. */
function onATerminal(noColor) {
  const command = `${process.execPath} ${DEMO} --store :memory: 2>&1 >/dev/null`
  const done = spawnSync('script', ['--quiet', '--return', '--command', command, '/dev/null'], {
    input: STDIN,
    encoding: 'utf8',
    timeout: 60_000,
    env: env(noColor),
  })
  assert.equal(done.error, undefined, 'script (util-linux) runs the demo on a pseudo-terminal')
  assert.match(done.stdout, /never sent/)
  return done.stdout
}

test('a terminal gets colours unless NO_COLOR is set', () => {
  assert.ok(onATerminal(undefined).includes(ESC), 'a person at a terminal sees colours')
  assert.ok(!onATerminal('1').includes(ESC), 'NO_COLOR=1 turns them off')
})
