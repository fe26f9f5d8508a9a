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
  readonly name: 'AcpError'
  readonly code: number
  readonly data?: unknown
}
