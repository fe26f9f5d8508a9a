'use strict'
// acp-facade for Node.js: the native addon (native.js finds it: a source build in a checkout, or
// the prebuilt platform package) plus the few pieces that are JavaScript by nature: the error
// classes (AcpError and the ClientError family), `agent.serve(input, output)` over Node streams,
// and `await using` for terminals. All protocol logic is in Rust.

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
 * A call to the client failed. `kind` names why (the Rust core's `ClientError::kind`); `code` is
 * the JSON-RPC code the core gives the kind (-32601 unsupported, -32602 bad arguments, -32600
 * released, -32603 otherwise; the client's own for a rejection), so a host method that lets one
 * propagate answers with that code (a runner turn that does fails with -32603 and its message).
 * `method` is the ACP method called, when there is one.
 */
class ClientError extends AcpError {
  constructor(code, message, data, details) {
    super(code, message, data)
    const { kind, ...rest } = details ?? {}
    this.kind = kind ?? new.target.kind ?? 'unknown'
    if (!('method' in rest)) this.method = null
    Object.assign(this, rest)
  }
}

/** Defines a `ClientError` subclass for `kind`, named `name`. */
function clientErrorClass(name, kind, base = ClientError) {
  const cls = { [name]: class extends base {} }[name]
  Object.defineProperty(cls, 'kind', { value: kind })
  Object.defineProperty(cls.prototype, 'name', { value: name, writable: true, configurable: true })
  return cls
}

Object.defineProperty(ClientError.prototype, 'name', { value: 'ClientError', writable: true, configurable: true })
/** The client did not advertise `capability`, which `method` needs; nothing was sent. */
const UnsupportedError = clientErrorClass('UnsupportedError', 'unsupported')
/** The path given as `field` (`path`, `cwd`) is not absolute; nothing was sent. */
const RelativePathError = clientErrorClass('RelativePathError', 'relative_path')
/** The argument `field` is not valid for the call (`reason` says why); nothing was sent. */
const InvalidArgumentError = clientErrorClass('InvalidArgumentError', 'invalid_argument')
/** The session is not established yet (a call made while `newSession` still runs); nothing was sent. */
const NotEstablishedError = clientErrorClass('NotEstablishedError', 'not_established')
/** The client answered with a JSON-RPC error: `code`, `message` and `data` are the client's. */
const RejectedError = clientErrorClass('RejectedError', 'rejected')
/** The client's answer does not match the pinned schema; `detail` says how. */
const ProtocolError = clientErrorClass('ProtocolError', 'protocol')
/** The terminal `terminalId` was already released; nothing was sent. */
const ReleasedError = clientErrorClass('ReleasedError', 'released')

const CLIENT_ERRORS = new Map(
  [UnsupportedError, RelativePathError, InvalidArgumentError, NotEstablishedError, RejectedError, ProtocolError, ReleasedError].map(
    (cls) => [cls.kind, cls],
  ),
)

/**
 * The error of a failed call to the client (called by the native addon): the `ClientError`
 * subclass of its kind, or, for a call cancelled with its turn, an `AbortError` as Node's own
 * cancellations (`name` "AbortError", `code` "ABORT_ERR") carrying `method`.
 */
function clientError({ kind, code, message, data, ...details }) {
  if (kind === 'cancelled') {
    const error = new Error(message)
    error.name = 'AbortError'
    error.code = 'ABORT_ERR'
    error.method = details.method ?? null
    return error
  }
  const cls = CLIENT_ERRORS.get(kind) ?? ClientError
  return new cls(code, message, data ?? undefined, { kind, ...details })
}
// One resolved Promise for every paced call that need not wait (see src/pace.rs).
native.__registerEnv(clientError, Promise.resolve())

/** Leaving `await using` releases the terminal (once; a released terminal sends nothing). */
if (Symbol.asyncDispose) {
  native.Terminal.prototype[Symbol.asyncDispose] = function asyncDispose() {
    return this.release()
  }
}

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
exports.ClientError = ClientError
exports.UnsupportedError = UnsupportedError
exports.RelativePathError = RelativePathError
exports.InvalidArgumentError = InvalidArgumentError
exports.NotEstablishedError = NotEstablishedError
exports.RejectedError = RejectedError
exports.ProtocolError = ProtocolError
exports.ReleasedError = ReleasedError
exports.Client = native.Client
exports.Terminal = native.Terminal
exports.ErrorCode = ErrorCode
exports.Agent = native.Agent
exports.Connection = native.Connection
exports.EventHub = native.EventHub
exports.MemoryStore = native.MemoryStore
exports.PostgresStore = native.PostgresStore
exports.RemoteServer = native.RemoteServer
exports.Runner = native.Runner
exports.SessionControl = native.SessionControl
exports.SqliteStore = native.SqliteStore
exports.Subagent = native.Subagent
exports.Turn = native.Turn
