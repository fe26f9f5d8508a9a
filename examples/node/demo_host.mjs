#!/usr/bin/env node
// The acp-facade demo agent on the Node turn runner: an ACP agent over stdio with a scripted
// "model" and an SQLite store (or PostgreSQL, for a postgres:// URL). It behaves exactly like the
// Rust one (examples/demo-agent) on the wire, as docs/DEMO.md describes:
//   stream N | think TEXT | tool NAME | sleep MS | ask QUESTION | fail | /compact | plan N |
//   switch MODE | mcp | edit PATH | /shout TEXT | an image, audio, embedded resource or resource link first |
//   anything else echoed
// It accepts image, audio and embedded-resource prompts and http MCP servers, echoes a prompt's
// `_meta.traceparent` on its response, and answers the extension method `_demo/echo`.
// Options: --store PATH (default $XDG_DATA_HOME/acp-facade/demo.sqlite; `:memory:` keeps nothing;
//          a postgres:// URL keeps them in PostgreSQL, shared by every process using it),
//          --page-size N (the largest session/list page, default 50),
//          --auth (every session method needs `authenticate` with demo-login first), --help.
// The npm package ships this file as its command `acp-facade-demo` (node_modules/.bin/).
// Nothing but protocol goes to stdout; diagnostics go to stderr.

import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

import { PostgresStore, Runner, SqliteStore } from 'acp-facade'

const USAGE = `usage: acp-facade-demo [--store PATH|:memory:|postgres://...] [--page-size N] [--auth]
   or: node demo_host.mjs [...]

An Agent Client Protocol agent over stdio (the acp-facade demo on Node; docs/DEMO.md).
  --store PATH     where sessions are kept (SQLite); default: $XDG_DATA_HOME/acp-facade/demo.sqlite
  --store URL      a postgres:// (or postgresql://) URL: sessions kept in PostgreSQL, shared by every
                   process using the same database
  --page-size N    the largest session/list page (default 50)
  --auth           require \`authenticate\` with method demo-login before any session method
  -h, --help       this text`

/** `--help` was asked for: the usage goes to stdout, exit 0. */
class Help extends Error {}

/** The context window the demo reports. */
const CONTEXT_SIZE = 200000

const VERSION = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version

function fail(message, code) {
  process.stderr.write(`${message}\n`)
  process.exitCode = code
}

function parseArgs(argv) {
  let store
  let pageSize = 50
  let auth = false
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
    } else if (arg === '--help' || arg === '-h') {
      throw new Help()
    } else {
      throw new Error(`unknown argument ${JSON.stringify(arg)}`)
    }
  }
  return { store: store ?? defaultStore(), pageSize, auth }
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

/** A plan of `steps` entries (`step 1` …), the first `done` completed, the rest pending. */
function demoPlan(steps, done) {
  const entries = []
  for (let i = 1; i <= steps; i++) {
    entries.push({ content: `step ${i}`, priority: 'medium', status: i <= done ? 'completed' : 'pending' })
  }
  return { entries }
}

/**
 * `path` as typed when absolute, else under `cwd` with `.` and empty parts dropped (as Rust's
 * `Path::components` does; `..` is kept, unlike `path.join`).
 */
function absolute(cwd, path) {
  if (path.startsWith('/')) return path
  const parts = `${cwd}/${path}`.split('/').filter((p) => p !== '' && p !== '.')
  return `/${parts.join('/')}`
}

/** `mcp: NAME(TRANSPORT) …`, or `mcp: none`. */
function mcpLine(servers) {
  if (servers.length === 0) return 'mcp: none'
  return `mcp: ${servers.map((s) => `${s.name}(${s.type ?? 'stdio'})`).join(' ')}`
}

const utf8Length = (s) => Buffer.byteLength(s, 'utf8')

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
    const signal = turn.signal
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
        const call = await turn.startToolCall(name, 'execute', { name })
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
          await sleepMs(ms, signal)
        } catch {
          return 'cancelled'
        }
        await say('slept')
        break
      }
      case 'ask': {
        const answer = await turn.askUser(rest)
        if (answer === null || answer === undefined) return 'cancelled'
        await say(JSON.stringify(answer))
        break
      }
      case 'fail':
        throw new Error('the demo turn failed, as asked')
      case 'plan': {
        const steps = parseU64(rest)
        for (let done = 0; done <= steps; done++) {
          if (signal.aborted) return 'cancelled'
          const wait = turn.plan(demoPlan(steps, done))
          if (wait) await wait
        }
        await say('planned')
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
      case 'edit': {
        const file = absolute(turn.cwd, rest)
        const call = await turn.startTool({
          title: `edit ${rest}`,
          kind: 'edit',
          status: 'in_progress',
          locations: [{ path: file, line: 1 }],
          content: [{ type: 'diff', path: file, oldText: 'old\n', newText: 'new\n' }],
        })
        await turn.updateTool(call, { status: 'completed', rawOutput: { ok: true } })
        await say(`edited ${rest}`)
        break
      }
      default: {
        const words = text.split(WS_RUN).filter((w) => w !== '')
        for (let i = 0; i < words.length; i++) {
          await say(i + 1 < words.length ? `${words[i]} ` : words[i])
        }
      }
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

  async compact() {},
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
      // What the demo accepts beyond text: image, audio and embedded-resource prompts, http MCP
      // servers (not sse), and the extension method `_demo/echo` (its params back as its result).
      promptCapabilities: { image: true, audio: true, embeddedContext: true },
      mcpCapabilities: { http: true },
      extensionMethods: { '_demo/echo': async (params) => params ?? {} },
    },
    args.auth ? demoLogin : undefined,
  )
  try {
    await agent.serveStdio()
  } catch (e) {
    fail(`serving failed: ${e.message}`, 1)
  }
  if (postgres) {
    // This process's sessions are free at once.
    await store.close().catch((e) => process.stderr.write(`could not retire this process's lease: ${e.message}\n`))
  }
}

await main()
