// acp-facade for ES modules: the very CommonJS module index.js, loaded with `require` and its
// exports named here. Importing index.js directly would work too, but Node would first compile
// and run its CommonJS export scanner (cjs-module-lexer, WebAssembly) — about 10 ms of a demo's
// start-up, more than the rest of loading acp-facade. One module instance either way: `import`
// and `require` give the same classes.
import { createRequire } from 'node:module'

const cjs = createRequire(import.meta.url)('./index.js')

export const {
  AcpError,
  ClientError,
  UnsupportedError,
  RelativePathError,
  InvalidArgumentError,
  NotEstablishedError,
  RejectedError,
  ProtocolError,
  ReleasedError,
  Client,
  Terminal,
  ErrorCode,
  Agent,
  Connection,
  EventHub,
  MemoryStore,
  PostgresStore,
  RemoteServer,
  Runner,
  SessionControl,
  SqliteStore,
  Subagent,
  Turn,
} = cjs
export default cjs
