// A short host written against the host interfaces directly (no runner): every session echoes its
// prompt back, sessions live in memory, and `session/list` lists them. Run it with any TypeScript
// runner (e.g. `node --experimental-strip-types examples/node/host_example.mts` on Node 22.6+); it
// serves ACP on stdio.

import { AcpError, Agent, ErrorCode, EventHub } from 'acp-facade'
import type { ContentBlock, GateResponse, Host, LiveSession, SessionCatalogEntry, Setup } from 'acp-facade'

class EchoSession implements LiveSession {
  readonly events = new EventHub()
  private turns = 0

  constructor(
    readonly id: string,
    readonly cwd: string,
  ) {}

  async submit(prompt: ContentBlock[]): Promise<string> {
    const n = ++this.turns
    const commandId = `${this.id}/c${n}`
    const at = { loopId: 'main', turnId: `t${n}` }
    const text = prompt.map((b) => (b.type === 'text' ? b.text : '')).join('')
    // Publishing is a cheap call into a Rust queue; await it to follow the client's pace.
    await this.events.publish({ ...at, commandId, class: 'enduring', kind: { type: 'turnStarted', message: { content: prompt } } })
    await this.events.publish({ ...at, kind: { type: 'tokenDelta', text, channel: 'message' } })
    await this.events.publish({ ...at, class: 'enduring', kind: { type: 'turnDone', stop: 'end_turn' } })
    return commandId
  }

  async interrupt(): Promise<void> {}

  async respondGate(gateId: string, _response: GateResponse): Promise<void> {
    throw new AcpError(ErrorCode.INVALID_PARAMS, `no open gate ${gateId}`)
  }
}

class EchoHost implements Host {
  private sessions = new Map<string, EchoSession>()

  newSession(setup: Setup): LiveSession {
    const session = new EchoSession(`echo-${this.sessions.size + 1}`, setup.cwd)
    this.sessions.set(session.id, session)
    return session
  }

  async listSessions(): Promise<SessionCatalogEntry[]> {
    return [...this.sessions.values()].map((s) => ({ sessionId: s.id, cwd: s.cwd, title: null }))
  }
}

const agent = new Agent(new EchoHost(), { agentName: 'echo-host', agentVersion: '1.0.0' })
await agent.serveStdio()
