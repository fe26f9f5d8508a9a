#!/usr/bin/env node
// The acp-facade demo agent on the Node turn runner: an ACP agent over stdio with a scripted
// "model" and an SQLite store (or PostgreSQL, for a postgres:// URL). It behaves exactly like the
// Rust one (examples/demo-agent) on the wire, as docs/DEMO.md describes:
//   stream N | think TEXT | tool NAME | sleep MS | ask QUESTION | fail | /compact | plan N |
//   switch MODE | mcp | edit PATH | /shout TEXT | an image, audio, embedded resource or resource link first |
//   notice TEXT | system | subagent TEXT | drip N MS |
//   anything else echoed, and the lines that call the client: read PATH | write PATH TEXT… |
//   run CMD ARG… | open URL, plus the benchmark's readloop N PATH [PARALLEL]
// It accepts image, audio and embedded-resource prompts, http MCP servers and the client's system
// prompt, echoes a prompt's `_meta.traceparent` on its response, and answers the extension method
// `_demo/echo`.
// Options: --store PATH (default $XDG_DATA_HOME/acp-facade/demo.sqlite; `:memory:` keeps nothing;
//          a postgres:// URL keeps them in PostgreSQL, shared by every process using it),
//          --page-size N (the largest session/list page, default 50),
//          --auth (every session method needs `authenticate` with demo-login first),
//          --listen HOST:PORT (serve ACP remotely, over Streamable HTTP and WebSocket at /acp,
//          instead of stdio; SIGTERM shuts it down gracefully), --token NAME:SECRET (a bearer
//          token a remote client must present; repeatable), --allow-origin ORIGIN (a browser
//          origin allowed to call it; repeatable), --tls-cert FILE --tls-key FILE (serve HTTPS
//          and WSS with this PEM certificate chain and key; both or neither), --help.
// The npm package ships this file as its command `acp-facade-demo` (node_modules/.bin/).
// Nothing but protocol goes to stdout; diagnostics go to stderr.

import { lookup } from 'node:dns/promises'
import { createRequire } from 'node:module'
import { isIPv6 } from 'node:net'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

import { ClientError, PostgresStore, Runner, SqliteStore, UnsupportedError } from 'acp-facade'

const USAGE = `usage: acp-facade-demo [--store PATH|:memory:|postgres://...] [--page-size N] [--auth]
                       [--listen HOST:PORT [--token NAME:SECRET]... [--allow-origin ORIGIN]...
                        [--tls-cert FILE --tls-key FILE]]
   or: node demo_host.mjs [...]

An Agent Client Protocol agent over stdio, or remotely with --listen (the acp-facade demo on Node; docs/DEMO.md).
  --store PATH     where sessions are kept (SQLite); default: $XDG_DATA_HOME/acp-facade/demo.sqlite
  --store URL      a postgres:// (or postgresql://) URL: sessions kept in PostgreSQL, shared by every
                   process using the same database
  --page-size N    the largest session/list page (default 50)
  --auth           require \`authenticate\` with method demo-login before any session method
  --listen HOST:PORT
                   serve ACP over Streamable HTTP and WebSocket at http://HOST:PORT/acp instead of
                   stdio (port 0: a free port); prints \`listening on http://HOST:PORT/acp\` on
                   stderr when ready; SIGTERM shuts down gracefully
  --token NAME:SECRET
                   with --listen: clients must send \`Authorization: Bearer SECRET\` (they act as
                   NAME); repeatable; required for a HOST that is not loopback
  --allow-origin ORIGIN
                   with --listen: allow browser requests from ORIGIN (e.g. https://app.example);
                   repeatable
  --tls-cert FILE --tls-key FILE
                   with --listen: serve HTTPS and WSS with this PEM certificate chain and PEM
                   private key (both or neither); the URL printed is then https://
  -h, --help       this text`

/** `--help` was asked for: the usage goes to stdout, exit 0. */
class Help extends Error {}

/** The context window the demo reports. */
const CONTEXT_SIZE = 200000

/** The summary `/compact` reports (`compaction_summary_chunk`). */
const COMPACTION_SUMMARY = 'The conversation so far, compacted.'

/** The demo's own system prompt (`system`), to which a client's `systemPrompt` applies. */
const SYSTEM_PROMPT = 'You are the acp-facade demo.'

/** The id of the plan `plan N` builds. */
const PLAN_ID = 'plan'

// Read with `require`, not `import … from 'node:fs'`: importing `node:fs` as an ES module evaluates
// every export of it, which loads Node's file streams (and with them `node:stream`) — about 2 ms of
// start-up that nothing here uses (docs/BENCHMARKS.md, start-up).
const VERSION = createRequire(import.meta.url)('../../package.json').version

function fail(message, code) {
  process.stderr.write(`${message}\n`)
  process.exitCode = code
}

function parseArgs(argv) {
  let store
  let pageSize = 50
  let auth = false
  let listen
  const tokens = []
  const origins = []
  let tlsCert
  let tlsKey
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--store') {
      if (i + 1 >= argv.length) throw new Error('--store needs a path')
      store = argv[++i]
    } else if (arg === '--page-size') {
      if (i + 1 >= argv.length) throw new Error('--page-size needs a number')
      const value = argv[++i]
      const n = /^\+?\d+$/.test(value) ? Number(value) : NaN
      if (!(n > 0) || !Number.isSafeInteger(n)) throw new Error(`--page-size must be a positive number, got ${JSON.stringify(value)}`)
      pageSize = n
    } else if (arg === '--auth') {
      auth = true
    } else if (arg === '--listen') {
      if (i + 1 >= argv.length) throw new Error('--listen needs HOST:PORT')
      listen = argv[++i]
    } else if (arg === '--token') {
      if (i + 1 >= argv.length) throw new Error('--token needs NAME:SECRET')
      tokens.push(parseToken(argv[++i]))
    } else if (arg === '--allow-origin') {
      if (i + 1 >= argv.length) throw new Error('--allow-origin needs an origin')
      origins.push(argv[++i])
    } else if (arg === '--tls-cert') {
      if (i + 1 >= argv.length) throw new Error('--tls-cert needs a file')
      tlsCert = argv[++i]
    } else if (arg === '--tls-key') {
      if (i + 1 >= argv.length) throw new Error('--tls-key needs a file')
      tlsKey = argv[++i]
    } else if (arg === '--help' || arg === '-h') {
      throw new Help()
    } else {
      throw new Error(`unknown argument ${JSON.stringify(arg)}`)
    }
  }
  if ((tlsCert === undefined) !== (tlsKey === undefined)) throw new Error('--tls-cert and --tls-key go together: give both or neither')
  const tls = tlsCert === undefined ? undefined : { cert: tlsCert, key: tlsKey }
  if (listen === undefined && (tokens.length > 0 || origins.length > 0 || tls !== undefined)) {
    throw new Error('--token, --allow-origin and --tls-cert/--tls-key need --listen')
  }
  const remote = listen === undefined ? undefined : { listen, tokens, origins, tls }
  return { store: store ?? defaultStore(), pageSize, auth, remote }
}

/** `NAME:SECRET`, both non-empty. */
function parseToken(value) {
  const colon = value.indexOf(':')
  const [name, secret] = colon < 0 ? ['', ''] : [value.slice(0, colon), value.slice(colon + 1)]
  if (name === '' || secret === '') throw new Error(`--token must be NAME:SECRET, got ${JSON.stringify(value)}`)
  return { name, secret }
}

/**
 * `--listen HOST:PORT` resolved (its first address, as `HOST:PORT` with an IPv6 host in brackets),
 * refused when it is not loopback and no token is given: an agent open to the network must know
 * who calls it.
 */
async function resolveListen({ listen, tokens }) {
  const invalid = () => new Error(`--listen must be HOST:PORT, got ${JSON.stringify(listen)}`)
  const colon = listen.lastIndexOf(':')
  const port = listen.slice(colon + 1)
  let host = listen.slice(0, colon)
  if (colon < 0 || !/^\d{1,5}$/.test(port) || Number(port) > 65535 || host === '') throw invalid()
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1)
  let address
  try {
    ;({ address } = await lookup(host))
  } catch {
    throw invalid()
  }
  const loopback = isIPv6(address) ? address === '::1' : address.startsWith('127.')
  if (!loopback && tokens.length === 0) throw new Error(`--listen ${listen} is not a loopback address: give at least one --token`)
  return isIPv6(address) ? `[${address}]:${Number(port)}` : `${address}:${Number(port)}`
}

/** Serves `agent` remotely (over TLS with `tls`) until SIGTERM (or Ctrl-C), then shuts down gracefully. */
async function serveRemote(agent, { tokens, origins, tls }, address) {
  const secrets = new Map(tokens.map(({ name, secret }) => [secret, name]))
  const server = await agent.serveHttp({
    address,
    tokenVerifier: secrets.size > 0 ? (token) => secrets.get(token) : undefined,
    allowedOrigins: origins,
    tls,
    // Above the default (1024), so that one process can be measured holding ten thousand idle
    // connections (scripts/bench remote); the process's limit of open files bounds it too.
    maxConnections: 16384,
  })
  let stop
  const stopped = new Promise((resolve) => {
    stop = resolve
    process.on('SIGTERM', stop)
    process.on('SIGINT', stop)
  })
  // Announced once the signals are handled: a SIGTERM right after the line shuts down gracefully.
  process.stderr.write(`listening on ${server.url}\n`)
  await stopped
  process.off('SIGTERM', stop)
  process.off('SIGINT', stop)
  await server.shutdown()
}

/** `$XDG_DATA_HOME/acp-facade/demo.sqlite`, else `~/.local/share/acp-facade/demo.sqlite`. */
function defaultStore() {
  const xdg = process.env.XDG_DATA_HOME
  const home = process.env.HOME || homedir()
  const base = xdg ? xdg : home ? join(home, '.local/share') : undefined
  if (!base) throw new Error('cannot find a data directory: set XDG_DATA_HOME or HOME, or pass --store')
  return join(base, 'acp-facade', 'demo.sqlite')
}

// Rust's `char::is_whitespace` is Unicode White_Space; JS `\s` and `trim()` differ from it
// (they include U+FEFF and miss U+0085), so the demo uses the property itself.
const WS_EDGES = /^\p{White_Space}+|\p{White_Space}+$/gu
const WS_RUN = /\p{White_Space}+/u
const WS_ONE = /\p{White_Space}/u
const WS_START = /^\p{White_Space}+/u
const trimWs = (s) => s.replace(WS_EDGES, '')
const U64_MAX = 2n ** 64n - 1n

/** Rust's `text.parse::<u64>().unwrap_or(0)`. */
function parseU64(text) {
  if (!/^\+?[0-9]+$/.test(text)) return 0
  const value = BigInt(text.replace(/^\+/, ''))
  return value <= U64_MAX ? Number(value) : 0
}

/** Sleeps `ms` milliseconds (beyond setTimeout's 2^31-1 limit too), or rejects when aborted. */
async function sleepMs(ms, signal) {
  let left = ms
  do {
    const step = Math.min(left, 2 ** 31 - 1)
    await sleep(step, undefined, { signal })
    left -= step
  } while (left > 0)
}

/** The first text content block of the prompt, trimmed. */
function commandText(prompt) {
  const block = prompt.find((b) => b.type === 'text')
  return block ? trimWs(block.text) : ''
}

/** The demo's host-defined slash command. */
const SHOUT = { name: 'shout', description: 'Repeat the input in capitals', input: { hint: 'text' } }

/** The length of base64 `data` once decoded; 0 unless it is canonical base64 (padded, no stray bits), as the Rust demo's decoder has it. */
function decodedLength(data) {
  if (data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) return 0
  const bytes = Buffer.from(data, 'base64')
  return bytes.toString('base64') === data ? bytes.length : 0
}

/** The chunk answering a prompt whose first block is not text (`undefined` for text). */
function blockLine(block) {
  switch (block.type) {
    case 'image':
    case 'audio':
      return `${block.type} ${block.mimeType} ${decodedLength(block.data)}`
    case 'resource': {
      const { resource } = block
      return `resource ${resource.uri} ${'text' in resource ? [...resource.text].length : 0}`
    }
    case 'resource_link':
      return `link ${block.uri}`
    default:
      return undefined
  }
}

/** The entries of a plan of `steps` (`step 1` …), the first `done` completed, the rest pending. */
function planEntries(steps, done) {
  const entries = []
  for (let i = 1; i <= steps; i++) {
    entries.push({ content: `step ${i}`, priority: 'medium', status: i <= done ? 'completed' : 'pending' })
  }
  return entries
}

/** The words of `text`, each but the last with a space after it. */
function words(text) {
  const all = text.split(WS_RUN).filter((w) => w !== '')
  return all.map((word, i) => (i + 1 < all.length ? `${word} ` : word))
}

/** `mcp: NAME(TRANSPORT) …`, or `mcp: none`. */
function mcpLine(servers) {
  if (servers.length === 0) return 'mcp: none'
  return `mcp: ${servers.map((s) => `${s.name}(${s.type ?? 'stdio'})`).join(' ')}`
}

const utf8Length = (s) => Buffer.byteLength(s, 'utf8')

// ---- the lines that call the client (DEMO.md: read, write, run, open; edit; readloop) ----------
// Each takes `say` (the turn's text, counted for the usage report) and returns the turn's stop
// reason. A client that did not advertise the capability gets no request: `VERB: not supported by
// the client`; a client error: `VERB: error CODE MESSAGE`; both end `end_turn`. A call cancelled
// with the turn rejects with an AbortError: the turn ends `cancelled`.

/** `path` as the client must see it: absolute, relative ones taken from the session's cwd (`.`
 * and repeated separators dropped, as Rust's `Path::components` does; `..` kept). */
function absolute(turn, path) {
  if (path.startsWith('/')) return path
  const parts = `${turn.cwd}/${path}`.split('/').filter((part) => part !== '' && part !== '.')
  return `/${parts.join('/')}`
}

const isAbort = (error) => error instanceof Error && error.name === 'AbortError'

/** Says why a call of `verb` failed; `cancelled` when it was cancelled; rethrows anything else. */
async function failed(say, verb, error) {
  if (isAbort(error)) return 'cancelled'
  if (error instanceof UnsupportedError) await say(`${verb}: not supported by the client`)
  else if (error instanceof ClientError) await say(`${verb}: error ${error.code} ${error.message}`)
  else throw error
  return 'end_turn'
}

/** `read PATH`: the file's content through the client, as one message chunk. */
async function read(turn, say, path) {
  let content
  try {
    content = await turn.client.readTextFile(absolute(turn, path))
  } catch (e) {
    return failed(say, 'read', e)
  }
  await say(content)
  return 'end_turn'
}

/** `write PATH TEXT…`: the rest of the line written to PATH through the client. */
async function write(turn, say, rest) {
  const space = WS_ONE.exec(rest)
  const path = space ? rest.slice(0, space.index) : rest
  const content = space ? rest.slice(space.index + space[0].length).replace(WS_START, '') : ''
  try {
    await turn.client.writeTextFile(absolute(turn, path), content)
  } catch (e) {
    return failed(say, 'write', e)
  }
  await say('write: ok')
  return 'end_turn'
}

/** `run CMD ARG…`: the command in a client terminal (cwd the session's), shown in an `execute`
 * tool call; its exit code as a message chunk. Cancelled while it runs: the handle kills and
 * releases the terminal. */
async function run(turn, say, line, command) {
  const [program = '', ...args] = command.split(WS_RUN).filter((w) => w !== '')
  let terminal
  try {
    terminal = await turn.client.createTerminal(program, args, null, turn.cwd)
  } catch (e) {
    return failed(say, 'run', e)
  }
  const call = await turn.startTool({ title: line, kind: 'execute', status: 'in_progress', content: [terminal.content] })
  let exited
  try {
    exited = await terminal.waitForExit()
    await terminal.output()
  } catch (e) {
    if (!isAbort(e)) await turn.updateTool(call, { status: 'failed' })
    return failed(say, 'run', e)
  }
  const code = exited.exitCode ?? exited.signal ?? 'unknown'
  await turn.updateTool(call, { status: exited.exitCode === 0 ? 'completed' : 'failed' })
  await say(`exit: ${code}`)
  try {
    await terminal.release()
  } catch (e) {
    process.stderr.write(`the client failed to release a terminal: ${e.message}\n`)
  }
  return 'end_turn'
}

/** `open URL`: a URL elicitation; accepted, it is completed at once (`elicitation/complete`). */
async function open(turn, say, url) {
  const client = turn.client
  let opened
  try {
    opened = await client.elicitUrl(`Open ${url}`, url)
    if (opened.answer.action === 'accept') await client.completeElicitation(opened.elicitationId)
  } catch (e) {
    return failed(say, 'open', e)
  }
  if (opened.answer.action === 'accept') await say('opened')
  else if (opened.answer.action === 'decline') await say('declined')
  else return 'cancelled'
  return 'end_turn'
}

/** `edit PATH`: an `edit` tool call proposing a diff of PATH, completed with a raw output. */
async function edit(turn, say, path) {
  const file = absolute(turn, path)
  const call = await turn.startTool({
    title: `edit ${path}`,
    kind: 'edit',
    status: 'in_progress',
    locations: [{ path: file, line: 1 }],
    content: [{ type: 'diff', path: file, oldText: 'old\n', newText: 'new\n' }],
  })
  await turn.updateTool(call, { status: 'completed', rawOutput: { ok: true } })
  await say(`edited ${path}`)
  return 'end_turn'
}

/** `readloop N PATH [PARALLEL]` (the benchmark's helper): `fs/read_text_file` of PATH N times, at
 * most PARALLEL (1 when absent or 0) in flight at once; then the chunk `readloop: N`. */
async function readLoop(turn, say, rest) {
  const words = rest.split(WS_RUN).filter((w) => w !== '')
  const count = words.length > 0 ? parseU64(words[0]) : 0
  const path = absolute(turn, words[1] ?? '')
  const parallel = (words.length > 2 ? parseU64(words[2]) : 0) || 1
  const client = turn.client
  let started = 0
  let failure = false
  const worker = async () => {
    while (started < count && !failure) {
      started += 1
      try {
        await client.readTextFile(path)
      } catch (e) {
        failure = true
        throw e
      }
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.min(parallel, Math.max(count, 1)) }, worker))
  } catch (e) {
    return failed(say, 'readloop', e)
  }
  await say(`readloop: ${count}`)
  return 'end_turn'
}

/** The lines that call the client (and `edit`), by verb: `(turn, say, text, rest) => stop`. */
const CLIENT_LINES = {
  read: (turn, say, text, rest) => read(turn, say, rest),
  write: (turn, say, text, rest) => write(turn, say, rest),
  run,
  open: (turn, say, text, rest) => open(turn, say, rest),
  edit: (turn, say, text, rest) => edit(turn, say, rest),
  readloop: (turn, say, text, rest) => readLoop(turn, say, rest),
}

/** The scripted "model". */
const script = {
  async runTurn(turn) {
    const meta = turn.meta
    if (meta !== null && 'traceparent' in meta) await turn.setResponseMeta({ traceparent: meta.traceparent })
    const prompt = turn.prompt
    const text = commandText(prompt)
    const command = turn.command
    const line = command !== null && command.name === SHOUT.name
      ? command.input.toUpperCase()
      : prompt.length > 0 ? blockLine(prompt[0]) : undefined
    if (line !== undefined) {
      await turn.text(line)
      await turn.usage(utf8Length(text) + utf8Length(line), CONTEXT_SIZE)
      return 'end_turn'
    }
    const space = WS_RUN.exec(text)
    const verb = space ? text.slice(0, space.index) : text
    const rest = space ? trimWs(text.slice(space.index + space[0].length)) : ''
    // The reply text of this step, for the usage report.
    let reply = ''
    const say = (chunk) => {
      reply += chunk
      return turn.text(chunk)
    }
    let stop = 'end_turn'
    switch (verb) {
      case 'stream': {
        const count = parseU64(rest)
        // Read only where a line uses it: the turn makes its AbortSignal at the first read.
        const signal = turn.signal
        for (let i = 1; i <= count; i++) {
          if (signal.aborted) return 'cancelled'
          const chunk = `t${i} `
          reply += chunk
          const wait = turn.text(chunk)
          if (wait) await wait
        }
        break
      }
      case 'think':
        await turn.thought(rest)
        await say('done thinking')
        break
      case 'tool': {
        const name = rest === '' ? 'tool' : rest
        const call = await turn.startTool({ title: name, name, kind: 'execute', rawInput: { name } })
        const answer = await turn.requestPermission(call, `Run ${name}`, ['approve', 'approve_always', 'deny'])
        if (answer === 'cancelled') return 'cancelled'
        if (answer === 'allowed' || answer === 'allowed_always') {
          await turn.completeToolCall(call, `${name} ran`)
          await say(`${name}: done`)
        } else {
          await turn.failToolCall(call, `${name} was denied`)
          await say(`${name}: denied`)
        }
        break
      }
      case 'sleep': {
        const ms = parseU64(rest)
        try {
          await sleepMs(ms, turn.signal)
        } catch {
          return 'cancelled'
        }
        await say('slept')
        break
      }
      case 'ask': {
        const reply = await turn.ask(rest)
        if (reply.kind === 'answered') {
          await say(`answer: ${typeof reply.value === 'string' ? reply.value : JSON.stringify(reply.value)}`)
        } else if (reply.kind === 'declined') {
          await say('declined')
        } else {
          return 'cancelled'
        }
        break
      }
      case 'read':
      case 'write':
      case 'run':
      case 'open':
      case 'edit':
      case 'readloop':
        if ((await CLIENT_LINES[verb](turn, say, text, rest)) === 'cancelled') return 'cancelled'
        break
      case 'plan': {
        // The plan with an id (a whole `plan` to a client without plan operations), then once
        // more per completed step.
        const steps = parseU64(rest)
        const signal = turn.signal
        for (let done = 0; done <= steps; done++) {
          if (signal.aborted) return 'cancelled'
          await turn.updatePlan(PLAN_ID, planEntries(steps, done))
        }
        await say('planned')
        break
      }
      case 'notice':
        // A notice, or the same as a message chunk for a client without notices.
        if (!(await turn.notice(rest))) await say(`notice: ${rest}`)
        break
      case 'system':
        await say(turn.composeSystemPrompt(SYSTEM_PROMPT))
        break
      case 'subagent': {
        // A child session that is sent the text and answers it, word by word; for a client
        // without subagents, the text as a message chunk.
        if (!turn.clientCapabilities.subagents) {
          await say(`subagent: ${rest}`)
          break
        }
        const child = await turn.startSubagent('subagent')
        await child.send(rest)
        await child.reply(words(rest))
        await child.finish('end_turn')
        await say('subagent: done')
        break
      }
      case 'drip': {
        // N chunks `d1 ` … `dN `, one every MS milliseconds.
        const [count = '', every = ''] = rest.split(WS_RUN).filter((w) => w !== '')
        const n = parseU64(count)
        const ms = parseU64(every)
        for (let i = 1; i <= n; i++) {
          try {
            await sleepMs(ms, turn.signal)
          } catch {
            return 'cancelled'
          }
          await say(`d${i} `)
        }
        break
      }
      case 'switch': {
        let changed = true
        try {
          await turn.setMode(rest)
        } catch {
          changed = false
        }
        await say(changed ? `mode: ${rest}` : `unknown mode ${rest}`)
        break
      }
      case 'mcp':
        await say(mcpLine(turn.mcpServers))
        break
      case 'fail':
        throw new Error('the demo turn failed, as asked')
      default:
        for (const chunk of words(text)) await say(chunk)
    }
    // Context usage: the UTF-8 bytes of the prompt plus those of the reply.
    await turn.usage(utf8Length(text) + utf8Length(reply), CONTEXT_SIZE)
    return stop
  },

  configOptions() {
    return [
      {
        id: 'mode',
        name: 'Mode',
        category: 'mode',
        type: 'select',
        currentValue: 'ask',
        options: [
          { value: 'ask', name: 'Ask', description: 'Ask before changing anything' },
          { value: 'code', name: 'Code', description: 'Write code directly' },
        ],
      },
      {
        id: 'model',
        name: 'Model',
        category: 'model',
        type: 'select',
        currentValue: 'fast',
        options: [
          { value: 'fast', name: 'Fast' },
          { value: 'smart', name: 'Smart' },
        ],
      },
    ]
  },

  commands() {
    return [SHOUT]
  },

  title(firstPrompt) {
    const title = [...trimWs(firstPrompt)].slice(0, 40).join('')
    return title === '' ? null : title
  },

  // `/compact`: done at once, with its summary.
  async compact() {
    return COMPACTION_SUMMARY
  },

  // The client's system prompt applies to the demo's own (`system`).
  acceptsSystemPrompt: true,
}

/**
 * `--auth`: one method, `demo-login`, with logout. The agent keeps the login state per connection;
 * this only says a login is needed and accepts it.
 */
const demoLogin = {
  authMethods: [{ id: 'demo-login', name: 'Demo login' }],
  requiresAuthentication: true,
  async authenticate() {},
  async logout() {},
}

async function main() {
  // Before any serving: `--help` answers on stdout, a bad command line with one line on stderr.
  let args
  try {
    args = parseArgs(process.argv.slice(2))
  } catch (e) {
    if (e instanceof Help) {
      process.stdout.write(`${USAGE}\n`)
      return undefined
    }
    return fail(`demo_host.mjs: ${e.message} (see --help)`, 2)
  }
  let address
  if (args.remote) {
    try {
      address = await resolveListen(args.remote)
    } catch (e) {
      return fail(`demo_host.mjs: ${e.message} (see --help)`, 2)
    }
  }
  const postgres = /^postgres(ql)?:\/\//.test(args.store)
  let store
  try {
    store = postgres ? new PostgresStore(args.store) : SqliteStore.open(args.store)
  } catch (e) {
    // The message names the server and database, never the URL's password.
    return fail(`cannot open the session store ${postgres ? '(PostgreSQL)' : args.store}: ${e.message}`, 1)
  }
  const runner = new Runner(store, script)
  const agent = runner.agent(
    {
      agentName: 'acp-facade-demo',
      agentVersion: VERSION,
      maxPageSize: args.pageSize,
      protocolV2: true,
      // What the demo accepts beyond text: image, audio and embedded-resource prompts, http MCP
      // servers (not sse), and the extension method `_demo/echo` (its params back as its result).
      promptCapabilities: { image: true, audio: true, embeddedContext: true },
      mcpCapabilities: { http: true },
      extensionMethods: { '_demo/echo': async (params) => params ?? {} },
    },
    args.auth ? demoLogin : undefined,
  )
  try {
    await (args.remote ? serveRemote(agent, args.remote, address) : agent.serveStdio())
  } catch (e) {
    fail(`serving failed: ${e.message}`, 1)
  }
  if (postgres) {
    // This process's sessions are free at once.
    await store.close().catch((e) => process.stderr.write(`could not retire this process's lease: ${e.message}\n`))
  }
}

await main()
