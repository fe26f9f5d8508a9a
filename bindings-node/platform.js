'use strict'
// This process's platform in the napi-rs naming (`linux-x64-gnu`, `darwin-arm64`, ...): the suffix
// of the addon file (acp-facade.<platform>.node) and of its package (acp-facade-<platform>).

function currentPlatform() {
  const base = `${process.platform}-${process.arch}`
  if (process.platform !== 'linux') return base
  const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : undefined
  return `${base}-${report?.header?.glibcVersionRuntime ? 'gnu' : 'musl'}`
}

module.exports = { currentPlatform }
