// Validation of every agent message against the ACP schemas generated from the agent's wire types
// (schema/v1/schema.json; schema/v2/schema.json for protocol version 2; schema/README.md), the
// Node twin of runner/tests/common/schema.rs: requests and notifications by method, responses by
// the method of the request they answer, errors against `Error`. Which definition a method's
// params or result are is read from the schema: the definitions the envelopes `AgentRequest`,
// `AgentNotification`, `ProtocolLevelNotification` (what an agent sends) and `AgentResponse` (its
// results) may carry each name their method (`x-method`). A violation throws.

import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const Ajv2020 = require('ajv/dist/2020').default

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false })

/** The names of every `#/$defs/...` reference under `schema`. */
function refs(schema, out = []) {
  if (Array.isArray(schema)) for (const item of schema) refs(item, out)
  else if (schema && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) {
      if (key === '$ref' && typeof value === 'string') out.push(value.replace(/^#\/\$defs\//, ''))
      else refs(value, out)
    }
  }
  return out
}

/** One protocol version's schema, and what it says an agent may send. */
class Protocol {
  constructor(id, file) {
    this.id = id
    const schema = JSON.parse(readFileSync(new URL(`../../../schema/${file}`, import.meta.url), 'utf8'))
    this.defs = schema.$defs
    ajv.addSchema({ ...schema, $id: id })
    /** The requests an agent sends: method → the definition of their params. */
    this.requests = this.methods('AgentRequest')
    /** The notifications an agent sends: method → the definition of their params. */
    this.notifications = this.methods('AgentNotification', 'ProtocolLevelNotification')
    /** The results an agent sends: the method of the request answered → their definition. */
    this.responses = this.methods('AgentResponse')
    this.validators = new Map()
  }

  methods(...envelopes) {
    const table = new Map()
    for (const envelope of envelopes) {
      for (const name of refs(this.defs[envelope])) {
        const method = this.defs[name]['x-method']
        if (method === undefined) continue
        if (table.has(method) && table.get(method) !== name) throw new Error(`${this.id}: two definitions for ${method}`)
        table.set(method, name)
      }
    }
    if (table.size === 0) throw new Error(`${this.id}: no method in ${envelopes}`)
    return table
  }

  validateDef(def, instance, whole) {
    let v = this.validators.get(def)
    if (!v) {
      v = ajv.getSchema(`${this.id}#/$defs/${def}`)
      if (!v) throw new Error(`${this.id}: no schema definition ${def}`)
      this.validators.set(def, v)
    }
    if (!v(instance)) {
      throw new Error(`schema violation (${this.id} ${def}) in ${JSON.stringify(whole)}:\n${ajv.errorsText(v.errors, { separator: '\n' })}`)
    }
  }

  validateAgentMessage(message, sent) {
    if (message?.jsonrpc !== '2.0') throw new Error(`bad envelope: ${JSON.stringify(message)}`)
    const { method, id } = message
    if (method !== undefined && id !== undefined) {
      const def = this.requests.get(method)
      if (!def) throw new Error(`unexpected agent request ${method}`)
      this.validateDef(def, message.params, message)
    } else if (method !== undefined) {
      const def = this.notifications.get(method)
      if (!def) throw new Error(`unexpected agent notification ${method}`)
      this.validateDef(def, message.params, message)
    } else if (id !== undefined) {
      const hasResult = 'result' in message
      const hasError = 'error' in message
      if (hasResult === hasError) throw new Error(`a response needs exactly one of result/error: ${JSON.stringify(message)}`)
      if (hasError) this.validateDef('Error', message.error, message)
      else {
        const def = this.responses.get(sent.get(JSON.stringify(id)))
        if (def) this.validateDef(def, message.result, message)
      }
    } else {
      throw new Error(`neither a request, a notification nor a response: ${JSON.stringify(message)}`)
    }
  }
}

/** ACP protocol version 1: the schema every agent message is checked against. */
export const V1 = new Protocol('acp-v1', 'v1/schema.json')
/** ACP protocol version 2 (a preview: nothing speaks it yet). */
export const V2 = new Protocol('acp-v2', 'v2/schema.json')

/** Validates `instance` against `$defs/<def>` of the v1 schema (`whole`: its message, for the error). */
export function validateDef(def, instance, whole) {
  V1.validateDef(def, instance, whole)
}

/** `validateDef` against the v2 schema. */
export function validateDefV2(def, instance, whole) {
  V2.validateDef(def, instance, whole)
}

/** Validates one message the agent sent against the v1 schema; `sent` maps the client's request ids (JSON) to methods. */
export function validateAgentMessage(message, sent) {
  V1.validateAgentMessage(message, sent)
}

/** `validateAgentMessage` against the v2 schema. */
export function validateAgentMessageV2(message, sent) {
  V2.validateAgentMessage(message, sent)
}
