'use strict'
// This process's platform in the napi-rs naming (`linux-x64-gnu`, `darwin-arm64`, ...): the suffix
// of the addon file (acp-facade.<platform>.node) and of its package (acp-facade-<platform>).

function currentPlatform() {
  const base = `${process.platform}-${process.arch}`
  if (process.platform !== 'linux') return base
  return `${base}-${linuxLibc()}`
}

/**
 * `gnu` or `musl`: the C library this process runs on. Read from the libraries mapped into the
 * process (a fraction of a millisecond) rather than from a diagnostic report, which gathers CPU,
 * memory and network information first (about 5 ms, on the start path of every agent process);
 * the report remains the answer when the maps name neither (a statically linked Node).
 */
function linuxLibc() {
  let maps = ''
  try {
    maps = require('node:fs').readFileSync('/proc/self/maps', 'latin1')
  } catch {
    // No /proc: ask the report.
  }
  if (/\/ld-musl-[^/\n]*\.so/.test(maps)) return 'musl'
  if (/\/libc(?:\.so\.6|-2\.\d+\.so)$/m.test(maps)) return 'gnu'
  const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : undefined
  return report?.header?.glibcVersionRuntime ? 'gnu' : 'musl'
}

module.exports = { currentPlatform }
