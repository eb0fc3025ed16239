// The Node binding and job names (issue 22): names as keys per directory, ensure, every
// method taking a name, restart. Real jobs under real PTYs; every wait polls with a deadline.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { waitUntil, sessionProcesses } from './helpers/common.mjs'
import { manager, assertCode, tempDir } from './helpers/binding.mjs'

test('one live job per name and directory; ensure reuses it; methods take the name', async (t) => {
  const m = manager(t)
  const [a, b] = [tempDir(t), tempDir(t)]
  const web = m.execute('echo up; exec sleep 100', { name: 'web', cwd: a, ensure: true })
  assert.equal(web.reused, undefined)
  // The same name in another directory is another service.
  const other = m.execute('exec sleep 100', { name: 'web', cwd: b })
  assert.notEqual(other.jobId, web.jobId)
  const again = m.execute('echo up; exec sleep 100', { name: 'web', cwd: a, ensure: true })
  assert.equal(again.jobId, web.jobId)
  assert.equal(again.reused, true)
  await assertCode(() => m.execute('exec sleep 5', { name: 'web', cwd: a, ensure: true }), 'NAME_TAKEN')
  await assertCode(() => m.execute('exec sleep 5', { name: 'web', cwd: a }), 'NAME_TAKEN')
  // Ambiguous without a directory: the message lists both.
  try {
    m.status('web')
    assert.fail('expected an error')
  } catch (e) {
    assert.equal(e.code, 'INVALID_ARGUMENT')
    assert.ok(e.message.includes(web.jobId) && e.message.includes(other.jobId), e.message)
  }
  await m.kill(other.jobId)
  assert.equal(m.status('web').jobId, web.jobId)
  await waitUntil(() => m.tail('web', 5).output.includes('up'))
  await assertCode(() => m.status('nope'), 'INVALID_JOB_ID')
  await assertCode(() => m.execute('true', { name: 'a\nb' }), 'INVALID_ARGUMENT')
  await assertCode(() => m.execute('true', { name: 'x'.repeat(10240) }), 'INVALID_ARGUMENT')
})

test('restart ends the whole tree and starts the job again, even one ignoring SIGTERM', async (t) => {
  const m = manager(t, { killGraceMs: 300 })
  const old = m.execute("trap '' TERM; echo \"armed $WHO\"; sleep 1000 & wait",
    { name: 'svc', env: { WHO: 'me' }, cols: 90, rows: 20 })
  await waitUntil(() => m.output(old.jobId).output.includes('armed me'))
  const fresh = await m.restart('svc')
  assert.notEqual(fresh.jobId, old.jobId)
  assert.equal(fresh.replaces, old.jobId)
  assert.equal(fresh.name, 'svc')
  assert.deepEqual([fresh.cols, fresh.rows], [90, 20])
  assert.deepEqual(sessionProcesses(old.pid), [])
  assert.equal(m.status(old.jobId).status, 'killed')
  await waitUntil(() => m.output(fresh.jobId).output.includes('armed me'))
  const changed = await m.restart(fresh.jobId, { command: 'echo "now $WHO"', env: { WHO: 'you' } })
  assert.equal(changed.replaces, fresh.jobId)
  const done = await m.wait('svc')
  assert.equal(done.jobId, changed.jobId)
  assert.equal(m.output('svc').output, 'now you')
  // A finished job starts again.
  const third = await m.restart('svc')
  assert.equal(third.replaces, changed.jobId)
  await waitUntil(() => m.output(third.jobId).output.includes('now you'))
  await assertCode(() => m.restart('nope'), 'INVALID_JOB_ID')
})
