// The schema support of support/schema.mjs: what it reads from the generated schemas (schema/v1,
// schema/v2) is what an agent may send, and a violation throws.

import assert from 'node:assert/strict'
import { test } from 'node:test'

import { V1, V2, validateAgentMessage, validateAgentMessageV2 } from './support/schema.mjs'

const chunk = (update) => ({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: 's1', update } })
const text = { type: 'text', text: 'hi' }

test('the v1 methods are read from the schema', () => {
  assert.deepEqual(
    Object.fromEntries(V1.notifications),
    {
      'session/update': 'SessionNotification',
      'elicitation/complete': 'CompleteElicitationNotification',
      '$/cancel_request': 'CancelRequestNotification',
    },
  )
  assert.equal(V1.requests.get('session/request_permission'), 'RequestPermissionRequest')
  assert.equal(V1.requests.size, 9)
  assert.equal(V1.responses.get('session/prompt'), 'PromptResponse')
  assert.equal(V1.responses.size, 12)
})

test('v1 and v2 messages are each validated against their own schema', () => {
  const sent = new Map([['1', 'session/prompt']])
  validateAgentMessage(chunk({ sessionUpdate: 'agent_message_chunk', content: text }), sent)
  validateAgentMessage({ jsonrpc: '2.0', id: 1, result: { stopReason: 'end_turn' } }, sent)
  assert.throws(() => validateAgentMessage({ jsonrpc: '2.0', id: 1, result: { stopReason: 'done' } }, sent), /schema violation/)

  assert.equal(V2.notifications.get('session/update'), 'UpdateSessionNotification')
  validateAgentMessageV2(chunk({ sessionUpdate: 'agent_message_chunk', messageId: 'm1', content: text }), sent)
  assert.throws(() => validateAgentMessageV2(chunk({ sessionUpdate: 'agent_message_chunk', content: text }), sent), /schema violation/)
  validateAgentMessageV2({ jsonrpc: '2.0', id: 1, result: { messageId: 'm1' } }, sent)
  assert.throws(() => validateAgentMessageV2({ jsonrpc: '2.0', id: 1, result: { stopReason: 'end_turn' } }, sent), /schema violation/)
})
