// The conformance suite's relay: newline-delimited JSON-RPC on its stdin and stdout, a remote ACP
// agent on the other side, reached through the official TypeScript SDK's remote client streams —
// `createHttpStream` (Streamable HTTP: POSTs, SSE streams) or `createWebSocketStream` (one text
// frame per message). The suite's client talks to this process exactly as it talks to an agent over
// stdio, so every scenario drives the remote agent unchanged.
//
//   node relay.mjs http|ws URL        (URL: http://HOST:PORT/acp, as the agent printed it)
//
// Invariants:
// - every stdin line is one JSON message, written to the SDK stream in order (the SDK serialises
//   writes); every message the SDK stream yields is one stdout line, in the order it yields them;
// - stdout carries nothing else (diagnostics go to stderr);
// - stdin's end closes the SDK stream (HTTP: the connection's DELETE; WebSocket: a close frame)
//   after every earlier message was written, then the relay exits 0;
// - an SDK error (a refused POST, a broken stream, a line that is not JSON) is one line on stderr
//   and exit status 1: the remote connection is gone, as a dead agent's pipe would be.
//
// The one place where the relay restores order (Streamable HTTP only): the agent writes a
// `session/load`'s replay before its answer, as over stdio, but the transport carries the replay
// on the session's SSE stream and the answer on the connection's (the RFD's routing and the SDK's),
// so the answer may overtake the replay's last updates. A client that must know the replay is
// complete when the answer comes — the conformance suite compares transcripts message for message
// — holds the answer and sends a barrier on the session's stream: a request of an unknown
// extension method, `_conformance/barrier` with the session's id, which the agent answers (an
// error) on that stream after everything it wrote before. When that answer arrives, the replay
// has; the held answer is written, and the barrier's answer is not.

import { createInterface } from 'node:readline'

import { createHttpStream } from '@agentclientprotocol/sdk/experimental/http-client'
import { createWebSocketStream } from '@agentclientprotocol/sdk/experimental/ws-client'
import { WebSocket } from 'ws'

const [transport, url] = process.argv.slice(2)
if (!['http', 'ws'].includes(transport) || !/^http:\/\//.test(url ?? '')) {
  process.stderr.write('usage: node relay.mjs http|ws http://HOST:PORT/acp\n')
  process.exit(2)
}

let failed = false
function fail(what, error) {
  if (failed) return
  failed = true
  process.stderr.write(`relay (${transport}): ${what}: ${error?.stack ?? error}\n`)
  process.exitCode = 1
}

const stream =
  transport === 'http'
    ? createHttpStream(url)
    : createWebSocketStream(url.replace(/^http/, 'ws'), { WebSocket })

/** Writes one line to stdout, waiting for the pipe to drain so a slow reader bounds memory. */
function emit(message) {
  const line = `${JSON.stringify(message)}\n`
  if (process.stdout.write(line)) return Promise.resolve()
  return new Promise((resolve) => process.stdout.once('drain', resolve))
}

const writer = stream.writable.getWriter()

/** `session/load` requests in flight (id key → session id), HTTP only. */
const loads = new Map()
/** Barrier id → the held `session/load` answer it releases. */
const held = new Map()
let barriers = 0
const idKey = (id) => JSON.stringify(id)
const isAnswer = (m) => m !== null && typeof m === 'object' && !('method' in m) && 'id' in m

/** A `session/load` answer (HTTP): held behind a barrier on the session's stream. */
function holdLoadAnswer(message) {
  const sessionId = loads.get(idKey(message.id))
  loads.delete(idKey(message.id))
  if (sessionId === undefined || !('result' in message)) return false
  const id = `conformance-barrier-${++barriers}`
  held.set(idKey(id), message)
  writer
    .write({ jsonrpc: '2.0', id, method: '_conformance/barrier', params: { sessionId } })
    .catch((error) => fail('sending the session/load barrier failed', error))
  return true
}

// Agent to client.
const pumped = (async () => {
  const reader = stream.readable.getReader()
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      if (transport === 'http' && isAnswer(value)) {
        const release = held.get(idKey(value.id))
        if (release !== undefined) {
          held.delete(idKey(value.id))
          await emit(release)
          continue
        }
        if (holdLoadAnswer(value)) continue
      }
      await emit(value)
    }
  } catch (error) {
    fail('the remote stream failed', error)
  } finally {
    reader.releaseLock()
  }
})()

// Client to agent.
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
for await (const line of lines) {
  if (failed) break
  if (line.trim() === '') continue
  let message
  try {
    message = JSON.parse(line)
  } catch (error) {
    fail('a line from the client is not JSON (the remote transports carry JSON messages only)', error)
    break
  }
  if (message?.method === 'session/load' && 'id' in message && typeof message.params?.sessionId === 'string') {
    loads.set(idKey(message.id), message.params.sessionId)
  }
  try {
    await writer.write(message)
  } catch (error) {
    fail('sending a message failed', error)
    break
  }
}
// stdin ended (or the stream failed): close the remote connection properly.
try {
  await writer.close()
} catch (error) {
  if (!failed) fail('closing the remote connection failed', error)
}
await pumped
process.exit(process.exitCode ?? 0)
