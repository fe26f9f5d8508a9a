// Test support: a fresh schema on the test PostgreSQL server (scripts/test starts one and sets
// ACP_FACADE_TEST_POSTGRES_URL; see scripts/lib/postgres.sh), created with `psql`.

import { execFileSync } from 'node:child_process'

let counter = 0

/**
 * A URL for a new, empty schema on the test server (every store opened on it shares its
 * sessions), or `null` when no server is configured — a failure when
 * ACP_FACADE_TEST_POSTGRES_REQUIRED=1 (scripts/test sets it).
 */
export function postgresUrl() {
  const base = process.env.ACP_FACADE_TEST_POSTGRES_URL
  if (!base) {
    if (process.env.ACP_FACADE_TEST_POSTGRES_REQUIRED === '1') {
      throw new Error('ACP_FACADE_TEST_POSTGRES_REQUIRED=1 but ACP_FACADE_TEST_POSTGRES_URL is not set')
    }
    return null
  }
  const schema = `acp_test_${Math.floor(Date.now() / 1000)}_${process.pid}_${counter++}`
  execFileSync('psql', [base, '-q', '-c', `CREATE SCHEMA ${schema}`], { stdio: ['ignore', 'ignore', 'inherit'] })
  return `${base}${base.includes('?') ? '&' : '?'}options=-c%20search_path%3D${schema}`
}

export const NO_POSTGRES =
  'ACP_FACADE_TEST_POSTGRES_URL is not set: the PostgreSQL store is NOT tested (scripts/test starts a server)'
