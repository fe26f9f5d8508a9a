'use strict'
// acp-facade for Node.js: the native addon (native.js finds it: a source build in a checkout, or
// the prebuilt platform package) plus the few pieces that are JavaScript by nature: the AcpError
// class and `agent.serve(input, output)` over Node streams. All protocol logic is in Rust.

const native = require('./native.js')

/** JSON-RPC error codes the agent answers with. */
const ErrorCode = Object.freeze({
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  AUTH_REQUIRED: -32000,
  RESOURCE_NOT_FOUND: -32002,
  REQUEST_CANCELLED: -32800,
})

/**
 * A JSON-RPC error a host method throws (or rejects with) to answer with this code, message and
 * data. Any other error answers -32603 (internal error) with its message.
 */
class AcpError extends Error {
  constructor(code, message, data) {
    super(message)
    if (!Number.isInteger(code)) throw new TypeError('AcpError: `code` must be an integer')
    this.code = code
    if (data !== undefined) this.data = data
  }
}
Object.defineProperty(AcpError.prototype, 'name', { value: 'AcpError', writable: true, configurable: true })

/**
 * Serves this agent over a pair of Node streams (e.g. a child's stdio, a socket, PassThroughs in a
 * test) until `input` ends; resolves when every session is closed and all output written.
 */
native.Agent.prototype.serve = function serve(input, output) {
  const connection = new native.Connection()
  const write = (chunk) => {
    if (output.write(chunk)) return undefined
    return new Promise((resolve) => output.once('drain', resolve))
  }
  const done = this.serveConnection(connection, write)
  const onData = (chunk) => connection.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)
  const onEnd = () => connection.end()
  input.on('data', onData)
  input.once('end', onEnd)
  input.once('close', onEnd)
  input.once('error', onEnd)
  return done.finally(() => {
    input.off('data', onData)
    input.off('end', onEnd)
    input.off('close', onEnd)
    input.off('error', onEnd)
  })
}

exports.AcpError = AcpError
exports.ErrorCode = ErrorCode
exports.Agent = native.Agent
exports.Connection = native.Connection
exports.EventHub = native.EventHub
exports.MemoryStore = native.MemoryStore
exports.PostgresStore = native.PostgresStore
exports.Runner = native.Runner
exports.SessionControl = native.SessionControl
exports.SqliteStore = native.SqliteStore
exports.Turn = native.Turn
