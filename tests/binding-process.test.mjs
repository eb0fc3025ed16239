// The binding inside a whole Node process: the process exits by itself after close() (and after
// its jobs ended) with callbacks still registered, and a process that exits leaves no job
// behind. Plus the TypeScript check of tests/types/example.ts against crates/node/index.d.ts.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { waitUntil, sessionProcesses } from './helpers/common.mjs'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const INDEX = join(ROOT, 'crates', 'node', 'index.js')

/**
 * Runs `body` in a fresh `node` process with `jobs` bound to a new JobManager. The body prints
 * `{"pid": <job pid>}` lines; resolves with the exit status, the job pids seen and stdout, or
 * rejects when the process is still alive after `ms`. The child and every job pid it reported
 * are SIGKILLed at the end of the test, whatever happened.
 */
function runChild (t, body, ms = 20_000) {
  const script = `const { JobManager } = require(${JSON.stringify(INDEX)});\nconst jobs = new JobManager({ killGraceMs: 300 });\n${body}`
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  const pids = () => [...stdout.matchAll(/"pid":(\d+)/g)].map((m) => Number(m[1]))
  t.after(() => {
    child.kill('SIGKILL')
    for (const pid of pids()) { try { process.kill(-pid, 'SIGKILL') } catch {} }
  })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the child process did not exit within ${ms} ms; stdout: ${stdout} stderr: ${stderr}`)), ms)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr, pids: pids() })
    })
  })
}

test('the process exits by itself after close() with callbacks still registered', async (t) => {
  const r = await runChild(t, `
    const a = jobs.execute('sleep 300'); console.log(JSON.stringify({ pid: a.pid }))
    const b = jobs.execute("trap '' TERM; sleep 300"); console.log(JSON.stringify({ pid: b.pid }))
    for (const j of [a, b]) { jobs.onData(j.jobId, () => {}); jobs.onExit(j.jobId, (i) => console.log('exit', i.status)) }
    jobs.close()
  `)
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.pids.length, 2)
  assert.equal(r.stdout.match(/exit killed/g)?.length, 2, r.stdout)
  for (const pid of r.pids) assert.deepEqual(sessionProcesses(pid), [])
})

test('the process exits by itself once its jobs ended, callbacks still registered', async (t) => {
  const r = await runChild(t, `
    const j = jobs.execute('echo hi; exit 4'); console.log(JSON.stringify({ pid: j.pid }))
    jobs.onData(j.jobId, (d) => console.log('data', JSON.stringify(d)))
    jobs.onExit(j.jobId, (i) => console.log('exit', i.exitCode))
  `)
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /data "hi"\nexit 4\n/)
})

test('a process that exits leaves no job behind (no close, no callbacks)', async (t) => {
  const r = await runChild(t, `
    const j = jobs.execute("trap '' TERM HUP; sleep 300 & sleep 301"); console.log(JSON.stringify({ pid: j.pid }))
  `)
  assert.equal(r.code, 0, r.stderr)
  await waitUntil(() => sessionProcesses(r.pids[0]).length === 0, 10_000, 'the job to die with its process')
})

test('process.exit() with a running job and callbacks leaves no job behind', async (t) => {
  const r = await runChild(t, `
    const j = jobs.execute('sleep 300'); console.log(JSON.stringify({ pid: j.pid }))
    jobs.onData(j.jobId, () => {}); jobs.onExit(j.jobId, () => {})
    setTimeout(() => process.exit(3), 50)
  `)
  assert.equal(r.code, 3, r.stderr)
  await waitUntil(() => sessionProcesses(r.pids[0]).length === 0, 10_000, 'the job to die with its process')
})

test('an exception thrown by a callback reaches the process as an uncaught exception', async (t) => {
  const r = await runChild(t, `
    process.on('uncaughtException', (e) => { console.log('caught', e.message); process.exitCode = 9 })
    const j = jobs.execute('echo x'); console.log(JSON.stringify({ pid: j.pid }))
    jobs.onExit(j.jobId, () => { throw new Error('boom') })
  `)
  assert.equal(r.code, 9, r.stderr)
  assert.match(r.stdout, /caught boom/)
})

test('the typings compile: tsc --noEmit on tests/types/example.ts', () => {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '-p', join(ROOT, 'tests', 'types', 'tsconfig.json')], { encoding: 'utf8', timeout: 120_000 })
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`)
})
