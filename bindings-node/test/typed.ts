// Type-level tests of the public declarations: `tsc --noEmit` checks this file (it is not run).
// A line marked @ts-expect-error must fail to type-check, or tsc reports it.

import { AcpError, Agent, EventHub, MemoryStore, PostgresStore, Runner, SqliteStore } from 'acp-facade'
import type { AgentOptions, HarnessEvent, Host, Permission, StopReason, Turn, TurnRunner } from 'acp-facade'

const turns: TurnRunner = {
  async runTurn(turn: Turn): Promise<StopReason> {
    const signal: AbortSignal = turn.signal
    await turn.text('hi')
    await turn.thought('hmm')
    const call: string = await turn.startToolCall('Run', 'execute', { cmd: 'ls' })
    await turn.toolProgress(call, 'in_progress', 'working')
    const answer: Permission = await turn.requestPermission(call, 'Run ls?', ['approve', 'deny'])
    if (answer === 'cancelled' || signal.aborted) return 'cancelled'
    await turn.completeToolCall(call, [{ type: 'text', text: 'ok' }])
    await turn.usage(1, 2)
    // @ts-expect-error: not a tool kind
    void turn.startToolCall('x', 'launch')
    return 'end_turn'
  },
  configOptions: () => [{ id: 'mode', name: 'Mode', type: 'select', currentValue: 'a', options: [{ value: 'a', name: 'A' }] }],
  title: (first: string) => first.slice(0, 10),
  compact: async ({ sessionId }) => void sessionId,
}

const options: AgentOptions = { agentName: 'x', maxPageSize: 10, cancelGraceMs: 100 }
const runner = new Runner(SqliteStore.open(':memory:'), turns)
const fromRunner: Agent = runner.agent(options)
new Runner(new MemoryStore(), { runTurn: () => undefined })
const postgres = new PostgresStore('postgres://acp@/sessions?host=/run/postgresql')
new Runner(postgres, turns)
const closed: Promise<void> = postgres.close()
// @ts-expect-error: the PostgreSQL store takes a URL
new PostgresStore()
// @ts-expect-error: a turn runner needs runTurn
new Runner(new MemoryStore(), {})

const event: HarnessEvent = { kind: { type: 'token_delta', text: 'x', channel: 'message' }, turnId: 't1' }
const hub = new EventHub()
const paced: Promise<void> | null = hub.publish(event)
// @ts-expect-error: unknown event type
hub.publish({ kind: { type: 'nope' } })

const host: Host = {
  newSession: async () => ({
    id: 's',
    events: hub,
    submit: () => 'c1',
    interrupt: () => {},
    respondGate: () => {},
  }),
  deleteSession: async () => {
    throw new AcpError(-32002, 'gone', { sessionId: 's' })
  },
}
const agent = new Agent(host)
const served: Promise<void> = agent.serveStdio()
void [fromRunner, paced, served, agent.serve(process.stdin, process.stdout)]
