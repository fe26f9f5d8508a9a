// The performance mechanisms' switches (docs/internals/): each selects its plain path, so that a
// switch cannot silently do nothing. `ACP_FACADE_NO_UV_RELAY=1`: calls and settles go to the
// threadsafe functions directly, without the libuv relay (the addon's hidden `__usesUvRelay`
// says which); `ACP_FACADE_NO_SCHED_BATCH=1`: the core's threads keep the policy they inherit.
// Each is checked in a fresh process (a switch is read once per process), and this process
// against its own environment (the suite also runs with every switch on).
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { test } from 'node:test'

const SWITCHES = ['ACP_FACADE_NO_EVENTFD', 'ACP_FACADE_NO_SCHED_BATCH', 'ACP_FACADE_NO_UV_RELAY']
const NATIVE = new URL('../native.js', import.meta.url).pathname
const INDEX = new URL('../index.js', import.meta.url).pathname
const linux = process.platform === 'linux'
const SCHED_BATCH = 3

// Every thread of this process: its name, its scheduling policy (field 41 of its `stat`) and
// whether it is the main thread.
function threads() {
  return readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim()
    return [name, Number(fields[41 - 3]), Number(tid) === process.pid]
  })
}

// Serves a connection that ends at once: the core's worker has started (and run its start-up
// hook) by the time this resolves.
async function runTheCore({ Agent, Connection }) {
  const connection = new Connection()
  connection.end()
  await new Agent({ newSession: () => assert.fail('no session is opened') }).serveConnection(connection, () => {})
}

// Loads the addon in a fresh process with `switches` (and none of the others) set; reports its
// relay and its threads once the core has run.
function probe(switches = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !SWITCHES.includes(name)))
  const code = `
    const assert = require('node:assert/strict')
    const { readFileSync, readdirSync } = require('node:fs')
    const native = require(${JSON.stringify(NATIVE)})
    ${threads.toString()}
    ${runTheCore.toString()}
    runTheCore(require(${JSON.stringify(INDEX)})).then(() => {
      process.stdout.write(JSON.stringify({ relay: native.__usesUvRelay(), threads: threads() }))
    })
  `
  return JSON.parse(execFileSync(process.execPath, ['-e', code], { env: { ...env, ...switches }, encoding: 'utf8' }))
}

const corePolicies = (report) => {
  const policies = report.threads.filter(([name]) => name === 'acp-facade').map(([, policy]) => policy)
  assert.ok(policies.length > 0, `no thread of the core's runtime: ${JSON.stringify(report.threads)}`)
  return new Set(policies)
}

test('calls go through the libuv relay unless ACP_FACADE_NO_UV_RELAY=1', { skip: !linux }, () => {
  assert.equal(probe().relay, true)
  assert.equal(probe({ ACP_FACADE_NO_UV_RELAY: '1' }).relay, false)
  // Only `1` switches it off.
  assert.equal(probe({ ACP_FACADE_NO_UV_RELAY: '0' }).relay, true)
})

test("the core's threads run in SCHED_BATCH unless ACP_FACADE_NO_SCHED_BATCH=1", { skip: !linux }, (t) => {
  assert.deepEqual(corePolicies(probe()), new Set([SCHED_BATCH]))
  const off = probe({ ACP_FACADE_NO_SCHED_BATCH: '1' })
  const main = off.threads.find(([, , isMain]) => isMain)[1]
  if (main === SCHED_BATCH) {
    t.skip('this process already runs in SCHED_BATCH: the policy a thread inherits is the same')
    return
  }
  assert.deepEqual(corePolicies(off), new Set([main]))
})

test('this process takes the paths its environment selects', { skip: !linux }, async () => {
  // Under every switch off (scripts/lib/fallbacks.sh) the whole suite runs without the relay.
  const require = createRequire(import.meta.url)
  const native = require(NATIVE)
  await runTheCore(require(INDEX))
  assert.equal(native.__usesUvRelay(), process.env.ACP_FACADE_NO_UV_RELAY !== '1')
  const expected = process.env.ACP_FACADE_NO_SCHED_BATCH === '1' ? threads().find(([, , isMain]) => isMain)[1] : SCHED_BATCH
  assert.deepEqual(corePolicies({ threads: threads() }), new Set([expected]))
})

test('the switches are documented', () => {
  const page = readFileSync(new URL('../../docs/internals/README.md', import.meta.url), 'utf8')
  for (const name of SWITCHES) assert.ok(page.includes(`\`${name}=1\``), name)
})
