// The Node demo agent and the Rust one (examples/demo-agent) write the same bytes for the same
// transcript, but for session ids and timestamps (docs/DEMO.md: "behaving identically on
// the wire"). Builds the Rust demo with cargo first (incremental after `cargo test`).

import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'

import { DEMO_HOST, rustDemo } from './support/client.mjs'
import { transcript } from './support/raw.mjs'
import { validateAgentMessage } from './support/schema.mjs'

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

// The lines of issue 34 (docs/DEMO.md), each only to a client that advertised what it needs:
// with and without each client capability, with and without a client system prompt given at
// session/new; then the connection re-attaches the live session (a resume carrying a system
// prompt, a load replaying the session) and asks `system` again. Every message of both agents
// validates against the generated v1 schema. Not here: a bare `notice`, which both send to a
// client with notices as a `notice` with an empty title, which the schema refuses.
const ALL_FOUR = { session: { notices: {}, compaction: {} }, subagents: {}, plan: {} }
const CAPABILITIES = {
  'no capability': {},
  'session.notices': { session: { notices: {} } },
  'session.compaction': { session: { compaction: {} } },
  subagents: { subagents: {} },
  'plan operations': { plan: {} },
  'all four': ALL_FOUR,
}
const SYSTEM_PROMPTS = {
  'no system prompt': undefined,
  'an appended system prompt': { mode: 'append', content: [{ type: 'text', text: 'Answer ' }, { type: 'text', text: 'briefly.' }] },
  'an overriding system prompt': { mode: 'override', content: [{ type: 'text', text: 'You review code.' }] },
}
const LINES = [
  prompt('notice the index is stale'),
  prompt('system'),
  prompt('subagent find  the bug'),
  prompt('subagent'),
  prompt('plan 3'),
  prompt('plan 0'),
  prompt('tool deploy'),
  prompt('drip 3 5'),
  prompt('drip'),
  prompt('/compact'),
  { method: 'session/resume', params: { sessionId: '$SID', cwd: '/tmp', mcpServers: [], systemPrompt: { mode: 'append', content: [{ type: 'text', text: 'Resumed.' }] } } },
  prompt('system'),
  { method: 'session/load', params: { sessionId: '$SID', cwd: '/tmp', mcpServers: [] } },
  prompt('system'),
]

describe('parity with the Rust demo agent: the lines of issue 34', () => {
  const cases = [
    ...Object.entries(CAPABILITIES).map(([name, caps]) => [name, caps, 'no system prompt']),
    ...['no capability', 'all four'].flatMap((name) =>
      ['an appended system prompt', 'an overriding system prompt'].map((sp) => [name, CAPABILITIES[name], sp]),
    ),
  ]
  for (const [name, clientCapabilities, sp] of cases) {
    test(`${name}, ${sp}`, async () => {
      const options = {
        clientCapabilities,
        session: SYSTEM_PROMPTS[sp] ? { systemPrompt: SYSTEM_PROMPTS[sp] } : {},
        validate: validateAgentMessage,
      }
      const rust = await transcript(RUST_DEMO, ['--store', ':memory:'], LINES, options)
      const node = await transcript(process.execPath, [DEMO_HOST, '--store', ':memory:'], LINES, options)
      assert.equal(node.code, 0)
      assert.deepEqual(node.violations, [])
      assert.deepEqual(rust.violations, [])
      assert.deepEqual(node.messages, rust.messages)
    })
  }
})
