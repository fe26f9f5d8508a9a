// Validation of every agent message against the pinned ACP schema (v1.21.0), the Node twin of
// runner/tests/common/schema.rs: requests and notifications by method, responses by the method of
// the request they answer, errors against `Error`. A violation throws.

import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const Ajv2020 = require('ajv/dist/2020').default

const SCHEMA_ID = 'acp-v1.21.0'
const schema = JSON.parse(readFileSync(new URL('../../../schema/acp-v1.21.0.schema.json', import.meta.url), 'utf8'))
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false })
ajv.addSchema({ ...schema, $id: SCHEMA_ID })

const validators = new Map()
function validator(def) {
  let v = validators.get(def)
  if (!v) {
    v = ajv.getSchema(`${SCHEMA_ID}#/$defs/${def}`)
    if (!v) throw new Error(`no schema definition ${def}`)
    validators.set(def, v)
  }
  return v
}

export function validateDef(def, instance, whole) {
  const v = validator(def)
  if (!v(instance)) {
    throw new Error(`schema violation (${def}) in ${JSON.stringify(whole)}:\n${ajv.errorsText(v.errors, { separator: '\n' })}`)
  }
}

const RESPONSES = {
  initialize: 'InitializeResponse',
  authenticate: 'AuthenticateResponse',
  logout: 'LogoutResponse',
  'session/new': 'NewSessionResponse',
  'session/load': 'LoadSessionResponse',
  'session/resume': 'ResumeSessionResponse',
  'session/list': 'ListSessionsResponse',
  'session/delete': 'DeleteSessionResponse',
  'session/close': 'CloseSessionResponse',
  'session/set_mode': 'SetSessionModeResponse',
  'session/set_config_option': 'SetSessionConfigOptionResponse',
  'session/prompt': 'PromptResponse',
}

/** The requests an agent sends the client, by method. */
const REQUESTS = {
  'session/request_permission': 'RequestPermissionRequest',
  'fs/read_text_file': 'ReadTextFileRequest',
  'fs/write_text_file': 'WriteTextFileRequest',
  'terminal/create': 'CreateTerminalRequest',
  'terminal/output': 'TerminalOutputRequest',
  'terminal/wait_for_exit': 'WaitForTerminalExitRequest',
  'terminal/kill': 'KillTerminalRequest',
  'terminal/release': 'ReleaseTerminalRequest',
  'elicitation/create': 'CreateElicitationRequest',
}

/** Validates one message the agent sent; `sent` maps the client's request ids to methods. */
export function validateAgentMessage(message, sent) {
  if (message?.jsonrpc !== '2.0') throw new Error(`bad envelope: ${JSON.stringify(message)}`)
  const { method, id } = message
  if (method !== undefined && id !== undefined) {
    const def = REQUESTS[method]
    if (!def) throw new Error(`unexpected agent request ${method}`)
    validateDef(def, message.params, message)
  } else if (method !== undefined) {
    if (method === 'session/update') validateDef('SessionNotification', message.params, message)
    else if (method === '$/cancel_request') validateDef('CancelRequestNotification', message.params, message)
    else if (method === 'elicitation/complete') validateDef('CompleteElicitationNotification', message.params, message)
    else throw new Error(`unexpected agent notification ${method}`)
  } else if (id !== undefined) {
    const hasResult = 'result' in message
    const hasError = 'error' in message
    if (hasResult === hasError) throw new Error(`a response needs exactly one of result/error: ${JSON.stringify(message)}`)
    if (hasError) validateDef('Error', message.error, message)
    else {
      const def = RESPONSES[sent.get(JSON.stringify(id))]
      if (def) validateDef(def, message.result, message)
    }
  } else {
    throw new Error(`neither a request, a notification nor a response: ${JSON.stringify(message)}`)
  }
}
