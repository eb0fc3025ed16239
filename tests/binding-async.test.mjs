// The Node binding's async reads (`statusAsync`, `listAsync`, `outputAsync`, `tailAsync`,
// `screenAsync`, `searchAsync`): they answer exactly what their sync forms answer, for a job
// of an earlier manager read from the state directory (the reads that touch the disk) and for
// a job in memory, and reject with the same coded errors. Build first: `npm run build:node`.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { JobManager, assertCode, manager, tempDir } from './helpers/binding.mjs'

const SCRIPT = 'for i in $(seq 1 300); do echo "line $i"; done; echo "error: at the end"'

test('async reads of a stored job (from disk) answer what the sync reads answer', async (t) => {
  const dir = join(tempDir(t), 'state')
  const a = new JobManager({ stateDir: dir, killGraceMs: 300 })
  const job = a.execute(SCRIPT, { name: 'stored' })
  await a.wait(job.jobId)
  await a.close()

  const b = manager(t, { stateDir: dir })
  const id = job.jobId
  const info = await b.statusAsync(id)
  assert.equal(info.thisServer, false)
  assert.equal(info.status, 'completed')
  assert.deepEqual(info, b.status(id))
  const listed = await b.listAsync()
  assert.deepEqual(listed, b.list())
  assert.ok(listed.some((j) => j.jobId === id))

  const all = await b.outputAsync(id)
  assert.deepEqual(all, b.output(id))
  assert.match(all.output, /^line 1\n/)
  assert.match(all.output, /error: at the end$/)
  const some = await b.outputAsync(id, { offset: 10, limit: 5 })
  assert.deepEqual(some, b.output(id, { offset: 10, limit: 5 }))
  assert.equal(some.output, 'line 11\nline 12\nline 13\nline 14\nline 15')
  const budgeted = await b.outputAsync(id, { maxBytes: 300 })
  assert.deepEqual(budgeted, b.output(id, { maxBytes: 300 }))
  assert.ok(budgeted.omittedLines > 0)

  const tail = await b.tailAsync(id, 2)
  assert.deepEqual(tail, b.tail(id, 2))
  assert.equal(tail.output, 'line 300\nerror: at the end')
  assert.deepEqual(await b.tailAsync(id, 50, { maxBytes: 256 }), b.tail(id, 50, { maxBytes: 256 }))

  const screen = await b.screenAsync(id)
  assert.deepEqual(screen, b.screen(id))
  assert.ok(screen.rows.some((r) => r.includes('error: at the end')))

  const found = await b.searchAsync(id, '^error', { context: 1 })
  assert.deepEqual(found, b.search(id, '^error', { context: 1 }))
  assert.equal(found.totalMatches, 1)
  assert.equal(found.matches[0].before[0], 'line 300')
})

test('async reads of a job in memory, and their coded rejections', async (t) => {
  const m = manager(t)
  const job = m.execute('echo one; echo two')
  await m.wait(job.jobId)
  assert.deepEqual(await m.outputAsync(job.jobId), m.output(job.jobId))
  assert.deepEqual(await m.tailAsync(job.jobId, 1), m.tail(job.jobId, 1))
  assert.deepEqual(await m.screenAsync(job.jobId), m.screen(job.jobId))
  assert.deepEqual(await m.statusAsync(job.jobId), m.status(job.jobId))

  const unknown = '00000000-0000-4000-8000-000000000000'
  await assertCode(() => m.outputAsync(unknown), 'JOB_NOT_FOUND')
  await assertCode(() => m.tailAsync(unknown), 'JOB_NOT_FOUND')
  await assertCode(() => m.screenAsync(unknown), 'JOB_NOT_FOUND')
  await assertCode(() => m.statusAsync(unknown), 'JOB_NOT_FOUND')
  await assertCode(() => m.searchAsync(unknown, 'x'), 'JOB_NOT_FOUND')
  await assertCode(() => m.outputAsync('nope'), 'INVALID_JOB_ID')
  await assertCode(() => m.outputAsync(job.jobId, { limit: -1 }), 'INVALID_ARGUMENT')
  await assertCode(() => m.searchAsync(job.jobId, '(unclosed'), 'INVALID_ARGUMENT')
})
