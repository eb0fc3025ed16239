// Helpers of the binding's test suites: the built addon, managers that clean up, error codes.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const require = createRequire(import.meta.url)
export const { JobManager } = require('../../crates/node/index.js')

/** A manager closed (jobs killed) when the test ends. */
export function manager (t, options = {}) {
  const m = new JobManager({ killGraceMs: 500, ...options })
  t.after(() => m.close())
  return m
}

/** Asserts that `fn` throws (or rejects with) an Error whose code is `code`. */
export async function assertCode (fn, code) {
  await assert.rejects(async () => fn(), (e) => {
    assert.ok(e instanceof Error, `expected an Error, got ${e}`)
    assert.equal(e.code, code, `code of: ${e.message}`)
    return true
  })
}

/**
 * A fresh temporary directory, removed when the test ends. `t.after` hooks run in the order
 * they were registered: close the managers that write into it before the test ends (their own
 * `close` hooks come later).
 */
export function tempDir (t, prefix = 'ptyjobs-persist-') {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.after(() => rmSync(dir, { recursive: true, force: true, maxRetries: 3 }))
  return dir
}
