// The committed declarations (bindings-node/native.d.ts) are exactly what the build generates
// (bindings-node/generated/index.d.ts). After changing the exported Rust API,
// bindings-node/src/header.d.ts or the wire types it splices in (bindings-node/src/wire.d.ts, from
// scripts/generate-wire), rebuild and run `npm run sync-dts`.

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { test } from 'node:test'

const read = (path) => readFileSync(new URL(path, import.meta.url), 'utf8').replace(/\r\n/g, '\n')

test('native.d.ts matches the declarations of the build', () => {
  const committed = read('../native.d.ts')
  const generated = read('../generated/index.d.ts')
  assert.ok(
    committed === generated,
    'bindings-node/native.d.ts drifted from the build: run `npm run build:debug && npm run sync-dts` and commit it',
  )
})

test('every exported class of the build is exported by the package', async () => {
  const pkg = await import('acp-facade')
  const classes = [...read('../generated/index.d.ts').matchAll(/^export declare class (\w+)/gm)].map((m) => m[1])
  assert.ok(classes.length >= 7)
  for (const name of classes) assert.equal(typeof pkg[name], 'function', `${name} is not exported by bindings-node/index.js`)
})

test('import and require give the same exports (index.mjs names every export of index.js)', async () => {
  const esm = await import('acp-facade')
  const cjs = createRequire(import.meta.url)('acp-facade')
  assert.deepEqual(Object.keys(esm).filter((k) => k !== 'default').sort(), Object.keys(cjs).sort())
  for (const name of Object.keys(cjs)) assert.equal(esm[name], cjs[name], name)
  assert.equal(esm.default, cjs)
})
