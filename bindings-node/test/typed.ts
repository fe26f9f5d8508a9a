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
    for (const entry of await turn.history(10)) {
      if (entry.type === 'tool_call') {
        const status: 'pending' | 'in_progress' | 'completed' | 'failed' = entry.status
        const text: string = entry.text
        void [status, text, entry.name?.length, entry.content.length]
      } else if (entry.type === 'user') {
        void entry.content.map((block) => block.type)
      } else {
        const text: string = entry.text
        void text
      }
    }
    void turn.history()
    // @ts-expect-error: a user entry has no status
    void (await turn.history()).map((entry) => entry.type === 'user' && entry.status)
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

const event: HarnessEvent = { kind: { type: 'tokenDelta', text: 'x', channel: 'message' }, turnId: 't1' }
const hub = new EventHub()
const paced: Promise<void> = hub.publish(event)
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

// ---- The rich turn ----
import type { AvailableCommand, ContentBlock, LiveSession, McpServer, Meta, Plan, Prompt, SessionControl, Setup, SlashCommand, ToolCallFields } from 'acp-facade'

const shout: AvailableCommand = { name: 'shout', description: 'Shout', input: { hint: 'text' } }
const richTurns: TurnRunner = {
  async runTurn(turn: Turn) {
    const blocks: ContentBlock[] = turn.prompt
    const command: SlashCommand | null = turn.command
    const meta: Meta | null = turn.meta
    const servers: McpServer[] = turn.mcpServers
    for (const server of servers) {
      if (server.type === 'http' || server.type === 'sse') void server.url
      else void server.command
    }
    const plan: Plan = { entries: [{ content: 'read', priority: 'high', status: 'in_progress' }] }
    await turn.plan(plan)
    await turn.setResponseMeta({ traceparent: 'x' })
    await turn.usage(1, 2, { amount: 0.5, currency: 'USD' })
    await turn.setMode('code')
    await turn.setConfigOption('mode', 'ask')
    await turn.setCommands([shout])
    const fields: ToolCallFields = {
      kind: 'edit',
      status: 'in_progress',
      content: [
        { type: 'diff', path: '/a', oldText: null, newText: 'x' },
        { type: 'terminal', terminalId: 't' },
        { type: 'content', content: { type: 'text', text: 'hi' } },
        { type: 'image', data: 'AA==', mimeType: 'image/png' },
      ],
      locations: [{ path: '/a', line: 1 }],
      rawInput: {},
      rawOutput: null,
    }
    const id: string = await turn.startTool({ ...fields, title: 'edit /a' })
    await turn.updateTool(id, { status: 'completed', rawOutput: { ok: true } })
    // @ts-expect-error: a tool call is announced with a title
    void turn.startTool({ kind: 'edit' })
    // @ts-expect-error: not a tool call field
    void turn.updateTool(id, { colour: 'red' })
    // @ts-expect-error: a plan entry's status
    void turn.plan({ entries: [{ content: 'x', priority: 'low', status: 'done' }] })
    void [blocks, command, meta]
    return undefined
  },
  commands: () => [shout],
}
new Runner(new MemoryStore(), richTurns).agent({
  promptCapabilities: { image: true, audio: true, embeddedContext: true },
  mcpCapabilities: { http: true, sse: false },
  extensionMethods: { '_x/echo': async (params: unknown) => params },
  extensionNotifications: { '_x/note': (params: unknown) => void params },
})

const richSession = (setup: Setup): LiveSession => ({
  id: 'r',
  events: new EventHub(),
  submit: () => 'c',
  submitPrompt: (prompt: Prompt) => `${prompt.command?.name ?? ''}${setup.mcpServers.length}`,
  commands: () => [shout],
  setControl: (control: SessionControl) => void control.setMode('code'),
  interrupt: () => {},
  respondGate: () => {},
})
const toolEvents: HarnessEvent[] = [
  { kind: { type: 'toolCallStarted', callId: 'c', name: 'edit', kind: 'edit', input: null, status: 'in_progress', content: [{ type: 'diff', path: '/a', newText: 'x' }], locations: [{ path: '/a' }] } },
  { kind: { type: 'toolCallProgress', callId: 'c', title: 'renamed', kind: 'read', rawOutput: 1 } },
  { kind: { type: 'toolCallCompleted', callId: 'c', output: [], isError: false, rawOutput: { ok: true } } },
  { kind: { type: 'planUpdated', plan: { entries: [] } } },
  { kind: { type: 'responseMeta', meta: { traceparent: 'x' } } },
  { kind: { type: 'contextMeasured', used: 1, size: 2, cost: { amount: 1, currency: 'EUR' } } },
]
void [richSession, toolEvents]

// ---- Issue 34: notices, plans with ids, subagents, system prompts, tool-call names, compaction summaries ----
import { Subagent } from 'acp-facade'
import type { ClientCapabilities, ClientSystemPrompt, NoticeOptions, PlanEntry, SystemPrompt } from 'acp-facade'

const stableTurns: TurnRunner = {
  async runTurn(turn: Turn) {
    const caps: ClientCapabilities = turn.clientCapabilities
    const flags: boolean[] = [caps.notices, caps.compaction, caps.subagents, caps.planOperations]
    const shown: boolean = await turn.notice('Indexing', { severity: 'warning', description: 'slow' })
    const options: NoticeOptions = { severity: 'error' }
    await turn.notice('Failed', options)
    await turn.notice('Plain')
    // @ts-expect-error: not a notice severity
    void turn.notice('x', { severity: 'loud' })
    const entries: PlanEntry[] = [{ content: 'step 1', priority: 'medium', status: 'pending' }]
    const withId: boolean = await turn.updatePlan('plan', entries)
    await turn.updatePlanMarkdown('notes', '# Notes')
    await turn.removePlan('notes')
    // @ts-expect-error: plan entries, not a plan
    void turn.updatePlan('plan', { entries })
    const child: Subagent = await turn.startSubagent('helper')
    const childId: string = child.sessionId
    const visible: boolean = child.isVisible
    const sent: string = await child.send('go')
    const replied: string = await child.reply(['gone ', 'done'])
    await child.finish()
    await child.finish('cancelled')
    // @ts-expect-error: not a stop reason
    void child.finish('done')
    const prompt: ClientSystemPrompt | null = turn.systemPrompt
    if (prompt !== null) {
      const mode: 'append' | 'override' = prompt.mode
      void [mode, prompt.text, prompt.content]
    }
    const composed: string = turn.composeSystemPrompt('You are helpful.')
    const named: string = await turn.startTool({ title: 'Read a.rs', name: 'read_file', kind: 'read' })
    await turn.updateTool(named, { name: 'read_files', status: 'completed' })
    await turn.startToolCall('Run', 'execute', { cmd: 'ls' }, 'shell')
    void [flags, shown, withId, childId, visible, sent, replied, composed]
    return undefined
  },
  acceptsSystemPrompt: true,
  compact: async () => 'The conversation so far.',
}
new Runner(new MemoryStore(), { runTurn: () => undefined, acceptsSystemPrompt: () => false, compact: async () => undefined })
// @ts-expect-error: a summary is a string
new Runner(new MemoryStore(), { runTurn: () => undefined, compact: async () => 42 })
new Runner(new MemoryStore(), stableTurns)
new Agent(host, { systemPrompt: true, compaction: true })
const systemPromptHost: Host = {
  newSession: async (setup: Setup) => {
    const given: SystemPrompt | undefined = setup.systemPrompt
    void given?.mode
    return { id: 's', events: hub, submit: () => 'c', interrupt: () => {}, respondGate: () => {} }
  },
}
const stableEvents: HarnessEvent[] = [
  { kind: { type: 'toolCallStarted', callId: 'c', name: 'Read a.rs', toolName: 'read_file', kind: 'read', input: null } },
  { kind: { type: 'toolCallProgress', callId: 'c', toolName: 'read_files' } },
  { kind: { type: 'notice', notice: { severity: 'info', title: 'hi' } } },
  { kind: { type: 'planChanged', update: { plan: { type: 'items', planId: 'p', entries: [] } } }, class: 'enduring' },
  { kind: { type: 'planRemoved', removed: { planId: 'p' } }, class: 'enduring' },
  { kind: { type: 'subagentChanged', update: { sessionId: 's/a', title: 'helper', state: { state: 'idle', stopReason: 'end_turn' } } } },
  { kind: { type: 'sessionMessage', message: { messageId: 'm', senderSessionId: 's', recipientSessionId: 's/a' } } },
  { kind: { type: 'sessionMessageChunk', chunk: { messageId: 'm', content: { type: 'text', text: 'x' } } } },
  { kind: { type: 'compactionChanged', update: { compactionId: 'k', status: 'completed' } } },
  { kind: { type: 'compactionSummary', chunk: { compactionId: 'k', content: { type: 'text', text: 'sum' } } } },
]
void [systemPromptHost, stableEvents]
