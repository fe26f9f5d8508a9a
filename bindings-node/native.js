'use strict'
// Loads the native addon (its declarations: native.d.ts). From, in this order:
//
// 0. NAPI_RS_NATIVE_LIBRARY_PATH, when set: that file (as napi-rs loaders do; scripts/bench runs a
//    private copy of the addon this way).
// 1. A source build in this checkout: bindings-node/generated/acp-facade.<platform>.node, made by
//    `npm install` with Rust installed (the package.json "prepare" script). The published package
//    has no generated/ directory, so this applies to checkouts only.
// 2. The prebuilt platform package acp-facade-<platform> (the napi-rs convention): an optional
//    dependency of the published package, which npm installs on the platform it was built for.
//
// Anything else is an error that names what is missing and how to get it.

// On the start path of every agent process: each step requires only what it uses (platform.js and
// package.json are read only when no explicit path is given; see docs/BENCHMARKS.md, start-up).

/** The platforms a prebuilt addon package is published for. */
const PREBUILT = ['linux-x64-gnu']

function load() {
  const explicit = process.env.NAPI_RS_NATIVE_LIBRARY_PATH
  if (explicit) return require(explicit)
  const { existsSync } = require('node:fs')
  const { join } = require('node:path')
  const { currentPlatform } = require('./platform.js')
  const { version } = require('../package.json')
  const platform = currentPlatform()
  const local = join(__dirname, 'generated', `acp-facade.${platform}.node`)
  if (existsSync(local)) return require(local)

  const name = `acp-facade-${platform}`
  if (!PREBUILT.includes(platform)) {
    throw new Error(
      `acp-facade: no prebuilt native addon exists for ${platform} (prebuilt: ${PREBUILT.join(', ')}); ` +
        'build it from source: `npm install` in a checkout of acp-facade, with Rust installed',
    )
  }
  let addonVersion
  try {
    addonVersion = require(`${name}/package.json`).version
  } catch (e) {
    if (e?.code !== 'MODULE_NOT_FOUND') throw e
    throw new Error(
      `acp-facade: the native addon package ${name} is not installed; install it next to ` +
        `acp-facade: npm install ${name}@${version} (or its .tgz from a release build). npm skips ` +
        `this optional dependency with --omit=optional, or when it cannot fetch it`,
      { cause: e },
    )
  }
  if (addonVersion !== version) {
    throw new Error(
      `acp-facade: the native addon package ${name} is version ${addonVersion}, ` +
        `but acp-facade is ${version}; install the same version: npm install ${name}@${version}`,
    )
  }
  return require(name)
}

module.exports = load()
