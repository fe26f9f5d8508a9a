#!/usr/bin/env node
// A model-backed ACP agent in Node: any OpenAI-compatible Chat Completions server (OpenAI, vLLM,
// llama.cpp, Ollama, …) behind the acp-facade turn runner, with durable, resumable sessions.
//
// Each turn sends the model the system prompt (the agent's, with the client's applied), the
// session's conversation so far (`turn.history`: from the journal, so it survives a restart) and
// the prompt; streams the answer to the editor (text as message chunks, `reasoning_content` as
// thoughts); runs the tools the model calls through the editor (`read_file`; `write_file` and
// `edit_file` shown as a diff and written only with the user's permission; `run_command` in the
// editor's terminal, with permission) and sends their results back, until the model answers
// without a tool call (at most MAX_STEPS model calls). Cancelling the turn aborts `turn.signal`,
// which aborts the HTTP request. A model or HTTP error fails the prompt with the error's message.
//
// Environment: OPENAI_MODEL (required), OPENAI_BASE_URL (default https://api.openai.com/v1),
// OPENAI_API_KEY (optional for local servers), MODEL_AGENT_STORE (the SQLite file; default
// $XDG_DATA_HOME/acp-facade/model-agent.sqlite). Only Node's built-in fetch: no dependency.
// Guide: docs/calling-a-real-model-node.md. Nothing but protocol goes to stdout.

import { mkdirSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'

import { Runner, SqliteStore } from 'acp-facade'

const MAX_STEPS = 10 // the most model calls one turn makes: then it stops with `max_turn_requests`
const HISTORY = 100 // how many entries of the session's conversation each model call sees
const SYSTEM = (cwd) =>
  `You are a coding agent. The user's project is in ${cwd}. Use the tools to read, change and run things there.`

const fn = (name, description, params) => ({
  type: 'function',
  function: {
    name,
    description,
    parameters: {
      type: 'object',
      properties: Object.fromEntries(Object.entries(params).map(([p, d]) => [p, { type: 'string', description: d }])),
      required: Object.keys(params),
    },
  },
})

const TOOLS = [
  fn('read_file', 'Read a text file.', { path: 'absolute, or relative to the project' }),
  fn('write_file', 'Create or overwrite a text file.', { path: 'the file', content: 'its new text' }),
  fn('edit_file', 'Replace text in a file.', { path: 'the file', old_text: 'text to find', new_text: 'its new text' }),
  fn('run_command', 'Run a shell command in the project directory.', { command: 'the command line' }),
]

/** The session's conversation (`turn.history`) as Chat Completions messages. */
function historyMessages(entries) {
  const messages = []
  for (const entry of entries) {
    if (entry.type === 'user') messages.push({ role: 'user', content: entry.text })
    else if (entry.type === 'assistant') messages.push({ role: 'assistant', content: entry.text })
    else if (entry.type === 'summary') {
      messages.push({ role: 'user', content: `Summary of the conversation so far:\n${entry.text}` })
    } else if (entry.type === 'tool_call' && entry.name) {
      const called = { name: entry.name, arguments: JSON.stringify(entry.input ?? {}) }
      const call = { id: entry.id, type: 'function', function: called }
      messages.push({ role: 'assistant', content: null, tool_calls: [call] })
      messages.push({ role: 'tool', tool_call_id: entry.id, content: entry.text || '(no output)' })
    }
    // Thoughts stay out: models do not take their reasoning back.
  }
  return messages
}

class ModelAgent {
  model = process.env.OPENAI_MODEL ?? ''
  url = `${(process.env.OPENAI_BASE_URL || 'https://api.openai.com/v1').replace(/\/+$/, '')}/chat/completions`
  headers = {
    'content-type': 'application/json',
    ...(process.env.OPENAI_API_KEY ? { authorization: `Bearer ${process.env.OPENAI_API_KEY}` } : {}),
  }
  acceptsSystemPrompt = true

  async runTurn(turn) {
    if (!this.model) throw new Error('OPENAI_MODEL is not set: start the agent with the model\'s name in OPENAI_MODEL')
    const messages = [
      { role: 'system', content: turn.composeSystemPrompt(SYSTEM(turn.cwd)) },
      ...historyMessages(await turn.history(HISTORY)),
      { role: 'user', content: turn.promptText },
    ]
    try {
      for (let step = 0; step < MAX_STEPS; step++) {
        const { text, calls } = await this.stream(turn, messages)
        if (calls.length === 0) return 'end_turn'
        messages.push({ role: 'assistant', content: text || null, tool_calls: calls })
        for (const call of calls) {
          const result = await runTool(turn, call.function.name, call.function.arguments)
          if (result === null) return 'cancelled'
          messages.push({ role: 'tool', tool_call_id: call.id, content: result })
        }
        await turn.endStep()
      }
    } catch (e) {
      if (turn.isCancelled) return 'cancelled' // the aborted request (or client call) rejected
      throw e
    }
    await turn.text(`\n\n(Stopped: ${MAX_STEPS} model calls in one turn.)`)
    return 'max_turn_requests'
  }

  /** One model call, streamed to the editor: the answer's text and its tool calls. */
  async stream(turn, messages) {
    const body = JSON.stringify({ model: this.model, messages, tools: TOOLS, stream: true })
    let response
    try {
      response = await fetch(this.url, { method: 'POST', headers: this.headers, body, signal: turn.signal })
    } catch (e) {
      if (turn.isCancelled) throw e
      throw new Error(`cannot talk to the model server at ${this.url}: ${e.cause?.message ?? e.message}`)
    }
    if (!response.ok) throw new Error(`the model server answered ${response.status}: ${await errorText(response)}`)
    let text = ''
    const calls = [] // by their stream index
    for await (const line of lines(response.body)) {
      if (!line.startsWith('data:')) continue // blank lines, SSE comments, `event:` lines
      const data = line.slice(5).trim()
      if (data === '[DONE]') break
      let chunk
      try {
        chunk = JSON.parse(data)
      } catch {
        throw new Error(`the model server sent a malformed stream line: ${data.slice(0, 200)}`)
      }
      // A failure after the stream started.
      if (chunk.error) {
        throw new Error(`the model server failed mid-stream: ${chunk.error.message ?? JSON.stringify(chunk.error)}`)
      }
      for (const { delta = {} } of chunk.choices ?? []) {
        if (delta.reasoning_content) await turn.thought(delta.reasoning_content)
        if (delta.content) {
          text += delta.content
          await turn.text(delta.content)
        }
        for (const part of delta.tool_calls ?? []) {
          const call = (calls[part.index ?? 0] ??= { id: '', type: 'function', function: { name: '', arguments: '' } })
          call.id = part.id || call.id
          call.function.name += part.function?.name ?? ''
          call.function.arguments += part.function?.arguments ?? ''
        }
      }
    }
    return { text, calls: calls.filter(Boolean) }
  }
}

/** The lines of a streamed body; a body that breaks off (the server or the network failed) throws
 * saying so. */
async function* lines(body) {
  let pending = ''
  const reader = body.pipeThrough(new TextDecoderStream()).getReader()
  for (;;) {
    let read
    try {
      read = await reader.read()
    } catch (e) {
      throw new Error(`the model server's stream broke off: ${e.cause?.message ?? e.message}`)
    }
    if (read.done) break
    pending += read.value
    const parts = pending.split(/\r?\n/)
    pending = parts.pop()
    yield* parts
  }
  if (pending) yield pending
}

/** The message of an OpenAI-style error body, else the body itself. */
async function errorText(response) {
  const body = await response.text()
  try {
    return String(JSON.parse(body).error.message)
  } catch {
    return body.slice(0, 500) || response.statusText
  }
}

/** Runs one tool call through the editor: what the model is told, or null if the user cancelled. */
async function runTool(turn, name, argumentsJson) {
  let args
  try {
    args = JSON.parse(argumentsJson || '{}')
  } catch {
    args = null
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return `error: the arguments of ${name} are not a JSON object: ${argumentsJson}`
  }
  const path = 'path' in args ? resolve(turn.cwd, String(args.path)) : ''
  if (name === 'read_file') {
    const call = await turn.startTool({ title: `Read ${path}`, name, kind: 'read', rawInput: args })
    let content
    try {
      content = await turn.client.readTextFile(path)
    } catch (e) {
      if (turn.isCancelled) throw e
      await turn.failToolCall(call, `error: ${e.message}`) // a missing file, the editor refused: the model is told
      return `error: ${e.message}`
    }
    await turn.completeToolCall(call, content)
    return content
  }
  if (name === 'write_file' || name === 'edit_file') return changeFile(turn, name, path, args)
  if (name === 'run_command') return runCommand(turn, args)
  return `error: there is no tool ${name}`
}

const text = (t) => ({ type: 'content', content: { type: 'text', text: t } })

/** `write_file` / `edit_file`: the change shown as a diff, written only when allowed. */
async function changeFile(turn, name, path, args) {
  let old = null // a new file
  try {
    old = await turn.client.readTextFile(path)
  } catch (e) {
    if (turn.isCancelled) throw e
  }
  let next
  if (name === 'write_file') next = String(args.content ?? '')
  else if (old === null || !args.old_text || !old.includes(args.old_text)) {
    return `error: the text to replace is not in ${path}`
  }
  else next = old.replace(args.old_text, () => String(args.new_text ?? ''))
  const diff = { type: 'diff', path, oldText: old, newText: next }
  const call = await turn.startTool({ title: `Edit ${path}`, name, kind: 'edit', content: [diff], rawInput: args })
  const answer = await turn.requestPermission(call, `Write ${path}?`, ['approve', 'deny'])
  if (answer === 'cancelled') return null
  if (answer === 'denied') {
    await turn.updateTool(call, { status: 'failed', content: [diff, text('rejected by the user')] })
    return 'The user rejected this change: the file was not written.'
  }
  try {
    await turn.client.writeTextFile(path, next)
  } catch (e) {
    if (turn.isCancelled) throw e
    await turn.updateTool(call, { status: 'failed', content: [diff, text(`error: ${e.message}`)] })
    return `error: ${e.message}`
  }
  await turn.updateTool(call, { status: 'completed', content: [diff, text(`wrote ${path}`)] })
  return `wrote ${path}`
}

/** `run_command`: with permission, in a terminal of the editor shown in the tool call. */
async function runCommand(turn, args) {
  const command = String(args.command ?? '')
  const call = await turn.startTool({ title: command, name: 'run_command', kind: 'execute', rawInput: args })
  const answer = await turn.requestPermission(call, `Run \`${command}\`?`, ['approve', 'deny'])
  if (answer === 'cancelled') return null
  if (answer === 'denied') {
    await turn.failToolCall(call, 'rejected by the user')
    return 'The user rejected this command: it did not run.'
  }
  let terminal
  try {
    terminal = await turn.client.createTerminal('sh', ['-c', command], null, turn.cwd, 64_000)
  } catch (e) {
    if (turn.isCancelled) throw e
    await turn.failToolCall(call, `error: ${e.message}`) // the editor has no terminals, or refused
    return `error: ${e.message}`
  }
  let status, output
  try {
    await turn.updateTool(call, { status: 'in_progress', content: [terminal.content] })
    status = await terminal.waitForExit()
    output = (await terminal.output()).output
  } finally {
    await terminal.release()
  }
  const ended = status.exitCode != null ? `exit code ${status.exitCode}` : `killed by ${status.signal}`
  const result = `$ ${command}\n${output}\n(${ended})`
  const done = status.exitCode === 0 ? 'completed' : 'failed'
  await turn.updateTool(call, { status: done, content: [terminal.content, text(result)] })
  return result
}

function defaultStore() {
  const data = process.env.XDG_DATA_HOME || join(homedir(), '.local', 'share')
  mkdirSync(join(data, 'acp-facade'), { recursive: true })
  return join(data, 'acp-facade', 'model-agent.sqlite')
}

if (!process.env.OPENAI_MODEL) console.error('model-agent: OPENAI_MODEL is not set: every prompt will fail until it is')
const runner = new Runner(SqliteStore.open(process.env.MODEL_AGENT_STORE || defaultStore()), new ModelAgent())
await runner.agent({ agentName: 'model-agent', agentVersion: '0.1.0' }).serveStdio()
