// The Node binding's services (crates/node/src/manager/services.rs): `services(dir?)` lists a
// project's Procfile and .claude/launch.json services beside the jobs that run them;
// `startService(name, { cwd })` starts one as an ensure of its definition and waits for its
// port. Real HTTP servers under real PTYs. Build first: `npm run build:node`.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { join } from 'node:path'
import { assertCode, manager, tempDir } from './helpers/binding.mjs'

/** A TCP port nobody listens on right now (the kernel's pick, released at once). */
async function freePort () {
  const server = createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** A project: Procfile `web` (HTTP on webPort, no port declared), launch.json `api` (declared). */
function project (t, webPort, apiPort) {
  const dir = tempDir(t, 'ptyjobs-services-')
  writeFileSync(join(dir, 'Procfile'), `web: exec python3 -m http.server ${webPort} --bind 127.0.0.1\n`)
  mkdirSync(join(dir, '.claude'))
  writeFileSync(join(dir, '.claude', 'launch.json'), JSON.stringify({
    version: '0.2.0',
    configurations: [{
      name: 'api',
      runtimeExecutable: 'python3',
      runtimeArgs: ['-m', 'http.server', String(apiPort), '--bind', '127.0.0.1'],
      port: apiPort,
      env: { GREETING: "it's $HOME" }
    }]
  }))
  return dir
}

test('services are listed, started by name, ready on their port, and found beside their jobs', async (t) => {
  const m = manager(t)
  const [webPort, apiPort] = [await freePort(), await freePort()]
  const dir = project(t, webPort, apiPort)
  const root = realpathSync(dir)

  const before = m.services(dir)
  assert.deepEqual(before.map((s) => s.name), ['web', 'api'])
  assert.equal(before[0].source, join(root, 'Procfile'))
  assert.equal(before[0].at, 'line 1')
  assert.equal(before[1].port, apiPort)
  assert.deepEqual(before[1].env, { GREETING: "it's $HOME" })
  assert.ok(before.every((s) => s.job === undefined), 'nothing runs yet')
  assert.equal(m.list().length, 0, 'listing ran nothing')

  const api = await m.startService('api', { cwd: dir, timeoutMs: 20_000 })
  assert.equal(api.ready.reason, 'port_open')
  assert.equal(api.port, apiPort)
  assert.equal(api.reused, false)
  assert.equal(api.job.name, 'api')
  assert.equal(api.job.cwd, root)
  assert.equal(api.service.name, 'api')
  await new Promise((resolve, reject) => {
    const socket = connect(apiPort, '127.0.0.1', () => { socket.end(); resolve() })
    socket.on('error', reject)
  })

  const web = await m.startService('web', { cwd: dir })
  assert.equal(web.ready, undefined, 'a Procfile service names no port')
  assert.equal(web.job.status, 'running')

  const after = m.services(dir)
  assert.equal(after[0].job.jobId, web.job.jobId)
  assert.equal(after[1].job.jobId, api.job.jobId)
  assert.equal(after[1].job.status, 'running')
})

test('unknown services and malformed files reject with INVALID_ARGUMENT naming the place', async (t) => {
  const m = manager(t)
  const dir = project(t, await freePort(), await freePort())
  await assertCode(() => m.startService('wbe', { cwd: dir }), 'INVALID_ARGUMENT')
  await assert.rejects(m.startService('wbe', { cwd: dir }), /"web", "api"/)
  writeFileSync(join(dir, '.claude', 'launch.json'), '{"configurations": [{"name": "api", "runtimeExecutable": "x", "port": "3000"}]}')
  await assertCode(() => m.services(dir), 'INVALID_ARGUMENT')
  assert.throws(() => m.services(dir), /launch\.json: configurations\[0\]\.port: expected a port number 1-65535, found the string "3000"/)
  writeFileSync(join(dir, 'Procfile'), 'web a\n')
  await assert.rejects(m.startService('web', { cwd: dir }), /Procfile: line 1: expected `name: command`/)
  await assertCode(() => m.services(join(dir, 'missing')), 'INVALID_ARGUMENT')
  await assertCode(() => m.startService('web', { cwd: dir, timeoutMs: -1 }), 'INVALID_ARGUMENT')
  assert.equal(m.list().length, 0, 'nothing ran')
})
