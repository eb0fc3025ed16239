// A job started from the Node binding can be attached to (`ptyjobs attach`): a persisting
// manager serves the same attach socket as the MCP server, with the same protections. Spoken
// to here at the socket, as `ptyjobs attach` speaks (protocol version 2 on
// crates/engine/src/attach/mod.rs): the first screen with its colours, keys reaching the job,
// the person's size given to the job and taken back when they leave, the socket gone with
// the manager. Build first: `npm run build:node`.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { waitUntil } from './helpers/common.mjs'
import { JobManager, tempDir } from './helpers/binding.mjs'

/** A keys frame: kind 0, big-endian u16 length, the bytes. */
function keys (text) {
  const body = Buffer.from(text)
  return Buffer.concat([Buffer.from([0, body.length >> 8, body.length & 0xff]), body])
}

/** A resize frame: kind 1, length 4, cols and rows as big-endian u16. */
function resize (cols, rows) {
  const b = Buffer.from([1, 0, 4, 0, 0, 0, 0])
  b.writeUInt16BE(cols, 3)
  b.writeUInt16BE(rows, 5)
  return b
}

test('a job started from Node can be attached to through its manager\'s socket', { skip: process.platform === 'win32' }, async (t) => {
  const dir = tempDir(t, 'ptyjobs-attach-')
  const m = new JobManager({ stateDir: dir, killGraceMs: 300 })
  t.after(() => m.close())
  const { jobId } = m.execute(
    "printf '\\033[32mgreen-ready\\033[0m\\n'; while read x; do echo \"got $x size=$(stty size)\"; done",
    { cols: 90, rows: 20 }
  )
  await waitUntil(() => m.screen(jobId).rows.join('\n').includes('green-ready'), 10_000, 'the job\'s first line')

  const sockDir = join(dir, 'sock')
  const sockets = readdirSync(sockDir).filter((f) => f.endsWith('.sock'))
  assert.equal(sockets.length, 1, `one socket: ${sockets}`)
  const path = join(sockDir, sockets[0])
  assert.equal(statSync(path).mode & 0o777, 0o600, 'the socket is private')
  assert.equal(statSync(sockDir).mode & 0o777, 0o700, 'its directory too')

  const s = connect(path)
  let seen = ''
  s.on('data', (d) => { seen += d.toString('latin1') })
  const closed = new Promise((resolve) => s.on('close', resolve))
  t.after(() => s.destroy())
  s.write(JSON.stringify({ version: 2, job_id: jobId, cols: 100, rows: 30 }) + '\n')
  await waitUntil(() => seen.includes('\n') && seen.includes('green-ready'), 10_000, 'the reply and the first screen')
  const reply = JSON.parse(seen.slice(0, seen.indexOf('\n')))
  assert.equal(reply.ok, true, JSON.stringify(reply))
  assert.deepEqual(reply.size, [100, 30], 'the job takes the person\'s size')
  const screen = seen.slice(seen.indexOf('\n') + 1)
  assert.match(screen, /\x1b\[32mgreen-ready/, 'the first screen keeps its colours')

  s.write(keys('hi\r'))
  await waitUntil(() => seen.includes('got hi size=30 100'), 10_000, 'the job\'s answer at the person\'s size')
  s.write(resize(120, 40))
  s.write(keys('again\r'))
  await waitUntil(() => seen.includes('got again size=40 120'), 10_000, 'the job at the new size')

  // The person leaves: the job has its own size again and keeps running.
  s.end()
  await closed
  await waitUntil(() => m.status(jobId).cols === 90 && m.status(jobId).rows === 20, 10_000, 'the size restored')
  assert.equal(m.status(jobId).status, 'running')

  await m.close()
  assert.equal(existsSync(path), false, 'the socket is gone with the manager')
})

test('a manager that persists nothing serves no socket', async (t) => {
  const dir = tempDir(t, 'ptyjobs-attach-')
  const m = new JobManager({ stateDir: dir, persist: false })
  t.after(() => m.close())
  m.execute('true')
  assert.equal(existsSync(join(dir, 'sock')), false)
})
