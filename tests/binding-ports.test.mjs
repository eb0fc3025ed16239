// The Node binding's ports and readiness: `execute(..., { autoPort })`, `wait` with `listening`,
// `url`/`expectStatus` and `port` (port_taken with the holder), and `ports` in status and list.
// Real servers (a Node HTTP server, tests/fixtures/serve.py) under real PTYs. Linux and macOS.
// Build first: `npm run build:node`.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { manager, assertCode } from './helpers/binding.mjs'

const SERVE = fileURLToPath(new URL('./fixtures/serve.py', import.meta.url))
const NODE_SERVER = `${JSON.stringify(process.execPath)} -e "require('http').createServer((q, s) => s.end('hi')).listen(process.env.PORT, '127.0.0.1')"`

test('autoPort, a listening wait, and ports in status and list', { skip: process.platform === 'win32' }, async (t) => {
  const m = manager(t)
  const job = m.execute(NODE_SERVER, { autoPort: true, name: 'web' })
  assert.ok(Number.isInteger(job.port) && job.port > 0, `port: ${job.port}`)
  const w = await m.wait(job.jobId, { listening: true, timeoutMs: 20_000 })
  assert.equal(w.reason, 'listening')
  assert.deepEqual(w.ports.map((p) => [p.port, p.address]), [[job.port, '127.0.0.1']])
  assert.deepEqual(w.urls, [`http://localhost:${job.port}/`])
  const info = m.status(job.jobId)
  assert.equal(info.port, job.port)
  assert.deepEqual(info.ports, w.ports)
  assert.deepEqual((await m.statusAsync(job.jobId)).ports, w.ports)
  assert.deepEqual(m.list().find((j) => j.jobId === job.jobId).ports, w.ports)
  const r = await m.wait(job.jobId, { url: `http://localhost:${job.port}/`, expectStatus: 200, timeoutMs: 20_000 })
  assert.equal(r.reason, 'http_ready')
  assert.equal(r.httpStatus, 200)
  await m.kill(job.jobId)
  assert.deepEqual(m.status(job.jobId).ports, [])
})

test('a port held by a process that is not a job ends the wait with port_taken', { skip: process.platform === 'win32' }, async (t) => {
  const outsider = createServer()
  outsider.listen(0, '127.0.0.1')
  await once(outsider, 'listening')
  t.after(() => outsider.close())
  const port = outsider.address().port
  const m = manager(t)
  const job = m.execute('sleep 30')
  const w = await m.wait(job.jobId, { port, timeoutMs: 20_000 })
  assert.equal(w.reason, 'port_taken')
  assert.equal(w.holder.pid, process.pid)
  assert.equal(w.holder.jobId, undefined)
})

test('a server that moves to the next port is found where it listens', { skip: process.platform === 'win32' }, async (t) => {
  const outsider = spawn('python3', [SERVE, '--host', '0.0.0.0'], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.after(() => outsider.kill())
  const [line] = await once(outsider.stdout, 'data')
  const taken = Number(String(line).trim().split(':').pop())
  const m = manager(t)
  const job = m.execute(`python3 ${SERVE} --port ${taken} --next`)
  const w = await m.wait(job.jobId, { listening: true, timeoutMs: 20_000 })
  assert.equal(w.reason, 'listening')
  assert.notEqual(w.ports[0].port, taken)
})

test('bad readiness options are refused', async (t) => {
  const m = manager(t)
  const job = m.execute('sleep 30')
  await assertCode(() => m.wait(job.jobId, { url: 'https://localhost:1/' }), 'INVALID_ARGUMENT')
  await assertCode(() => m.wait(job.jobId, { expectStatus: 200 }), 'INVALID_ARGUMENT')
  await assertCode(() => m.wait(job.jobId, { url: 'http://localhost:1/', expectStatus: 99 }), 'INVALID_ARGUMENT')
})
