// The Node demo agent and the Rust one (examples/demo-agent) write the same bytes for the same
// transcript, but for session ids and timestamps (docs/DEMO.md: "behaving identically on
// the wire"). Builds the Rust demo with cargo first (incremental after `cargo test`).

import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'

import { DEMO_HOST, rustDemo } from './support/client.mjs'
import { transcript } from './support/raw.mjs'

let RUST_DEMO

before(() => {
  RUST_DEMO = rustDemo()
})

const prompt = (text) => ({ method: 'session/prompt', params: { sessionId: '$SID', prompt: [{ type: 'text', text }] } })

const SCENARIOS = {
  'echo, title, usage, unicode': [prompt('  hello   wide world  '), prompt('  ünïcödé — 漢字 prompt  '), prompt('')],
  'stream, think, fail, compact, sleep': [prompt('stream 300'), prompt('think it over'), prompt('fail'), prompt('/compact'), prompt('sleep 5'), prompt('think')],
  'config and modes': [
    { method: 'session/set_mode', params: { sessionId: '$SID', modeId: 'code' } },
    { method: 'session/set_config_option', params: { sessionId: '$SID', configId: 'model', value: 'smart' } },
    { method: 'session/set_config_option', params: { sessionId: '$SID', configId: 'model', value: 'nope' } },
    { method: 'session/list', params: {} },
  ],
}

describe('parity with the Rust demo agent', () => {
  for (const [name, steps] of Object.entries(SCENARIOS)) {
    test(name, async () => {
      const rust = await transcript(RUST_DEMO, ['--store', ':memory:'], steps)
      const node = await transcript(process.execPath, [DEMO_HOST, '--store', ':memory:'], steps)
      assert.equal(node.code, 0)
      assert.deepEqual(node.messages, rust.messages)
    })
  }
  for (const permission of ['allow_once', 'allow_always', 'reject_once', 'cancelled']) {
    test(`tool, answered ${permission}`, async () => {
      const steps = [prompt('tool deploy'), prompt('tool')]
      const rust = await transcript(RUST_DEMO, ['--store', ':memory:'], steps, { permission })
      const node = await transcript(process.execPath, [DEMO_HOST, '--store', ':memory:'], steps, { permission })
      assert.deepEqual(node.messages, rust.messages)
    })
  }
})
