// Benchmark (not a test): `stream N` notifications per second through the Node demo agent, the
// Rust demo agent and a minimal agent on the official TypeScript SDK, measured the same way: a
// raw client that counts newline-delimited messages until the prompt's response.
// Usage: node bindings-node/bench/stream.mjs [N=100000] [runs=3]   (after a release build)
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))
const N = Number(process.argv[2] ?? 100000)
const RUNS = Number(process.argv[3] ?? 3)

async function measure(command, args) {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] })
  let buffer = ''
  let chunks = 0
  let waiting
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (data) => {
    buffer += data
    let nl
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl)
      buffer = buffer.slice(nl + 1)
      if (line.includes('"agent_message_chunk"')) chunks++
      else if (waiting && line.includes(`"id":${waiting.id}`) && !line.includes('"method"')) waiting.resolve(JSON.parse(line))
    }
  })
  let id = 0
  const request = (method, params) =>
    new Promise((resolve) => {
      waiting = { id: ++id, resolve }
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n')
    })
  await request('initialize', { protocolVersion: 1, clientCapabilities: {} })
  const { result } = await request('session/new', { cwd: '/tmp', mcpServers: [] })
  const started = process.hrtime.bigint()
  await request('session/prompt', { sessionId: result.sessionId, prompt: [{ type: 'text', text: `stream ${N}` }] })
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  child.stdin.end()
  await new Promise((r) => child.once('exit', r))
  if (chunks !== N) throw new Error(`${command}: ${chunks} chunks, expected ${N}`)
  return N / seconds
}

const agents = [
  ['node demo (acp-facade)', process.execPath, [`${root}examples/node/demo_host.mjs`, '--store', ':memory:']],
  ['official TS SDK agent', process.execPath, [`${root}bindings-node/bench/sdk_agent.mjs`]],
]
if (existsSync(`${root}target/release/acp-facade-demo`)) agents.push(['rust demo (release)', `${root}target/release/acp-facade-demo`, ['--store', ':memory:']])
for (const [name, command, args] of agents) {
  const rates = []
  for (let i = 0; i < RUNS; i++) rates.push(await measure(command, args))
  rates.sort((a, b) => a - b)
  process.stdout.write(`${name.padEnd(26)} median ${Math.round(rates[Math.floor(RUNS / 2)]).toLocaleString('en')} notifications/s  (runs: ${rates.map((r) => Math.round(r)).join(', ')})\n`)
}
