/// <reference types="node" />
// The public types of acp-facade for Node.js: the generated declarations of the native addon
// (native.d.ts, committed and checked against the build) plus the JavaScript-side additions.

export * from './native'

declare module './native' {
  interface Agent {
    /**
     * Serves this agent over a pair of Node streams until `input` ends; resolves when every
     * session is closed and all output is written.
     */
    serve(input: NodeJS.ReadableStream, output: NodeJS.WritableStream): Promise<void>
  }
  interface Terminal {
    /** Leaving `await using` releases the terminal (once; a released terminal sends nothing). */
    [Symbol.asyncDispose](): Promise<void>
  }
}

/** JSON-RPC error codes the agent answers with. */
export declare const ErrorCode: Readonly<{
  PARSE_ERROR: -32700
  INVALID_REQUEST: -32600
  METHOD_NOT_FOUND: -32601
  INVALID_PARAMS: -32602
  INTERNAL_ERROR: -32603
  AUTH_REQUIRED: -32000
  RESOURCE_NOT_FOUND: -32002
  REQUEST_CANCELLED: -32800
}>

/**
 * A JSON-RPC error a host method throws (or rejects with) to answer with this code, message and
 * data. Any other error answers -32603 (internal error) with its message.
 */
export declare class AcpError extends Error {
  constructor(code: number, message: string, data?: unknown)
  /** `"AcpError"`, or the name of its `ClientError` subclass. */
  readonly name: string
  readonly code: number
  readonly data?: unknown
}

/** Why a call to the client failed (the Rust core's `ClientError::kind`). */
export type ClientErrorKind =
  | 'unsupported'
  | 'relative_path'
  | 'invalid_argument'
  | 'not_established'
  | 'rejected'
  | 'protocol'
  | 'released'

/**
 * A call to the client failed. `kind` names why; `code` is the JSON-RPC code the core gives the
 * kind (-32601 unsupported, -32602 bad arguments, -32600 released, -32603 otherwise; the client's
 * own for a rejection), so a host method that lets one propagate answers with that code (a runner
 * turn that does fails with -32603 and its message). `method` is the ACP
 * method called, when there is one. A call cancelled with its turn rejects with an `AbortError`
 * instead (`name` "AbortError", `code` "ABORT_ERR"), as Node's own cancellations.
 */
export declare class ClientError extends AcpError {
  constructor(code: number, message: string, data?: unknown, details?: { kind?: string; method?: string | null; [detail: string]: unknown })
  readonly kind: ClientErrorKind | (string & {})
  readonly method: string | null
}

/** The client did not advertise `capability`, which `method` needs; nothing was sent (-32601). */
export declare class UnsupportedError extends ClientError {
  readonly kind: 'unsupported'
  readonly capability: string
}

/** The path given as `field` (`path`, `cwd`) is not absolute; nothing was sent (-32602). */
export declare class RelativePathError extends ClientError {
  readonly kind: 'relative_path'
  readonly field: string
  readonly path: string
}

/** The argument `field` is not valid for the call (`reason` says why); nothing was sent (-32602). */
export declare class InvalidArgumentError extends ClientError {
  readonly kind: 'invalid_argument'
  readonly field: string
  readonly reason: string
}

/** The session is not established yet (a call made while `newSession` still runs); nothing was sent. */
export declare class NotEstablishedError extends ClientError {
  readonly kind: 'not_established'
}

/** The client answered with a JSON-RPC error: `code`, `message` and `data` are the client's (a missing file is conventionally -32002). */
export declare class RejectedError extends ClientError {
  readonly kind: 'rejected'
}

/** The client's answer does not match the pinned schema (or a form answer does not fit the schema asked for); `detail` says how. */
export declare class ProtocolError extends ClientError {
  readonly kind: 'protocol'
  readonly detail: string
}

/** The terminal `terminalId` was already released; nothing was sent (-32600). */
export declare class ReleasedError extends ClientError {
  readonly kind: 'released'
  readonly terminalId: string
}
