// Builds the addon from source into bindings-node/generated/acp-facade.<platform>.node: the root
// package.json "prepare" script, so `npm install` in a checkout (and `npm install
// /path/to/checkout` from another project) builds it. Release by default; ACP_FACADE_NODE_DEBUG=1
// builds the debug profile instead (quicker, e.g. for the test command right after `cargo test`).
//
// With the checkout's dev dependencies installed, @napi-rs/cli builds it and also writes the
// declarations the build generates (generated/index.d.ts, compared with native.d.ts by a test).
// Without them (a checkout installed from another project), cargo builds it directly: the
// committed declarations already describe it. Either way Rust is needed, and without `cargo` this
// says so in one sentence. (Prebuilt addons, for installs without Rust: packaging/README.md.)
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const { currentPlatform } = require('../platform.js')

const root = fileURLToPath(new URL('../../', import.meta.url))
const debug = process.env.ACP_FACADE_NODE_DEBUG === '1'
const cargo = process.env.CARGO || 'cargo'
// The build's output goes to stderr: stdout stays clean for whatever runs npm.
const quiet = { cwd: root, stdio: ['ignore', 2, 2] }

const probe = spawnSync(cargo, ['--version'], { stdio: 'ignore' })
if (probe.error || probe.status !== 0) {
  process.stderr.write(
    'acp-facade: building the native addon from source needs Rust, and `cargo` is not on PATH; ' +
      'install Rust (https://rustup.rs) and run npm install again, or install the prebuilt packages ' +
      '(acp-facade and acp-facade-linux-x64-gnu).\n',
  )
  process.exit(1)
}

const napi = join(root, 'node_modules/@napi-rs/cli/dist/cli.js')
if (existsSync(napi)) {
  const args = [
    napi, 'build', '--platform', '--no-js',
    ...(debug ? [] : ['--release']),
    '--manifest-path', 'bindings-node/Cargo.toml',
    '--package-json-path', 'package.json',
    '--output-dir', 'bindings-node/generated',
    '--dts', 'index.d.ts',
  ]
  const result = spawnSync(process.execPath, args, quiet)
  process.exit(result.status ?? 1)
}

// No @napi-rs/cli: cargo itself, the artifact's path read from its JSON messages.
const build = spawnSync(
  cargo,
  ['build', '--locked', '-p', 'acp-facade-node', ...(debug ? [] : ['--release']), '--message-format=json-render-diagnostics'],
  { cwd: root, stdio: ['ignore', 'pipe', 2], maxBuffer: 256 * 1024 * 1024, encoding: 'utf8' },
)
if (build.status !== 0) process.exit(build.status ?? 1)
const artifact = build.stdout
  .split('\n')
  .filter((line) => line.startsWith('{'))
  .map((line) => JSON.parse(line))
  .find((m) => m.reason === 'compiler-artifact' && m.target?.name === 'acp_facade_node')
const library = artifact?.filenames?.find((f) => /\.(so|dylib|dll)$/.test(f))
if (!library) {
  process.stderr.write('acp-facade: cargo built no acp_facade_node library\n')
  process.exit(1)
}
mkdirSync(join(root, 'bindings-node/generated'), { recursive: true })
copyFileSync(library, join(root, 'bindings-node/generated', `acp-facade.${currentPlatform()}.node`))
