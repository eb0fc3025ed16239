// Kept jobs through the binding: execute(cmd, { keep: true }) has the state directory's keeper
// (the ptyjobs binary: PTYJOBS_BIN here, the platform package's when installed) run the job, so
// it outlives the manager that asked; a job that was not kept still ends with its manager.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { waitUntil } from './helpers/common.mjs'
import { JobManager, assertCode, tempDir } from './helpers/binding.mjs'
import { HOST_BINARY as BIN } from './helpers/npm.mjs'

function alive (pid) {
  try { process.kill(pid, 0); return true } catch (_) { return false }
}

test('a kept job outlives its manager; a plain one does not', { skip: process.platform === 'win32' }, async (t) => {
  process.env.PTYJOBS_BIN = BIN
  process.env.PTYJOBS_KEEPER_IDLE_MS = '1000'
  const stateDir = tempDir(t)
  t.after(() => { try { execFileSync(BIN, ['--state-dir', stateDir, 'kill', '--kept', '--grace-ms', '200']) } catch (_) {} })
  const m = new JobManager({ stateDir, killGraceMs: 500 })
  const plain = m.execute('sleep 1000')
  const kept = m.execute('sleep 1001', { keep: true, name: 'nap', keepTtlSecs: 600 })
  assert.equal(kept.kept, true)
  assert.equal(typeof kept.keepUntil, 'string')
  assert.equal(kept.thisServer, false, 'the keeper runs it')
  assert.equal(plain.kept, false)
  await m.close()
  await waitUntil(() => !alive(plain.pid), 10_000, 'the plain job ends with its manager')
  assert.ok(alive(kept.pid), 'the kept job runs on')

  const m2 = new JobManager({ stateDir, killGraceMs: 500 })
  t.after(() => m2.close())
  const seen = m2.status('nap')
  assert.equal(seen.jobId, kept.jobId)
  assert.equal(seen.status, 'running')
  assert.equal(seen.kept, true)
  execFileSync(BIN, ['--state-dir', stateDir, 'kill', 'nap', '--grace-ms', '500'])
  await waitUntil(() => !alive(kept.pid), 10_000, 'the kept job is killed')
})

test('keep without a state directory is refused', { skip: process.platform === 'win32' }, async (t) => {
  const m = new JobManager({ persist: false })
  t.after(() => m.close())
  await assertCode(() => m.execute('true', { keep: true }), 'INVALID_ARGUMENT')
})
