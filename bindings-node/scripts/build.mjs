// Builds the addon into bindings-node/generated/ (the root package.json "prepare" script, so
// `npm install` builds it). Release by default; ACP_FACADE_NODE_DEBUG=1 builds the debug profile
// instead (quicker, e.g. for the test command right after `cargo test`).
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))
const debug = process.env.ACP_FACADE_NODE_DEBUG === '1'
const napi = fileURLToPath(new URL('../../node_modules/@napi-rs/cli/dist/cli.js', import.meta.url))
const args = [
  napi, 'build', '--platform',
  ...(debug ? [] : ['--release']),
  '--manifest-path', 'bindings-node/Cargo.toml',
  '--package-json-path', 'package.json',
  '--output-dir', 'bindings-node/generated',
  '--js', 'index.js',
  '--dts', 'index.d.ts',
]
// The addon build's output goes to stderr: stdout stays clean for whatever runs npm.
const result = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 2, 2] })
process.exit(result.status ?? 1)
