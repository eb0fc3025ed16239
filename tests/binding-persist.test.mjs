// The Node binding's persistence (crates/node, `stateDir` / `persist`): jobs outlive their
// manager in a state directory, a later manager lists them (`thisServer: false`) and reads
// their output, a dead manager's running job reads `killed` (`server stopped`), `removeJob`
// forgets finished jobs, and nothing is written unless asked. Real processes under real PTYs;
// every wait polls with a deadline. Build first: `npm run build:node`.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { waitUntil, sessionProcesses } from './helpers/common.mjs'
import { JobManager, assertCode, tempDir } from './helpers/binding.mjs'

const INDEX = join(dirname(fileURLToPath(import.meta.url)), '..', 'crates', 'node', 'index.js')

/** A manager on `options`, closed when the test ends (if the test did not close it first). */

/** The job directories under `dir` that hold a record (a manager also keeps one spare
 *  directory, made ahead for its next job, which no reader ever sees). */
function recordDirs (dir) {
  const jobs = join(dir, 'jobs')
  return readdirSync(jobs).filter((d) => existsSync(join(jobs, d, 'meta.json')))
}
function open (t, options) {
  const m = new JobManager({ killGraceMs: 300, ...options })
  t.after(() => m.close())
  return m
}

/**
 * Starts `node -e <body>` with `JobManager` in scope. `report()` is the first JSON line the
 * child printed (or undefined); `exited` resolves with `{ code, signal }`. The child, and the
 * process groups of the job pids it reported, are SIGKILLed when the test ends.
 */
function startChild (t, body, env = {}) {
  const script = `const { JobManager } = require(${JSON.stringify(INDEX)});\n${body}`
  const child = spawn(process.execPath, ['-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env }
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  const report = () => {
    const line = stdout.split('\n').find((l) => l.startsWith('{'))
    return line && stdout.includes(`${line}\n`) ? JSON.parse(line) : undefined
  }
  t.after(() => {
    child.kill('SIGKILL')
    for (const m of stdout.matchAll(/"pid":(\d+)/g)) {
      try { process.kill(-Number(m[1]), 'SIGKILL') } catch {}
    }
  })
  return { child, exited, report, output: () => `stdout: ${stdout}\nstderr: ${stderr}` }
}

/** Every field of a JobInfo but `thisServer`. */
function withoutOwner (info) {
  const { thisServer, ...rest } = info
  return rest
}

/** Paths of every directory and file under `dir`, `dir` included. */
function walk (dir) {
  const found = [dir]
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    if (e.isDirectory()) found.push(...walk(p))
    else found.push(p)
  }
  return found
}

// The three jobs every scenario runs: one completes, one fails, one keeps running.
const COMPLETED = 'echo alpha; echo beta'
const FAILED = 'echo oops; exit 3'
const RUNNING = 'echo started; sleep 1000'

test('after close(), a new manager on the stateDir lists the jobs (thisServer: false) with their status and output', async (t) => {
  const dir = join(tempDir(t), 'state')
  const a = open(t, { stateDir: dir })
  const ok = a.execute(COMPLETED, { name: 'ok' })
  const bad = a.execute(FAILED)
  const run = a.execute(RUNNING)
  await a.wait(ok.jobId)
  await a.wait(bad.jobId)
  await a.wait(run.jobId, { pattern: 'started', fromStart: true, timeoutMs: 10_000 })
  for (const j of [ok, bad, run]) assert.equal(a.status(j.jobId).thisServer, true)
  // removeJob refuses a running job of this manager
  await assertCode(() => a.removeJob(run.jobId), 'INVALID_ARGUMENT')
  await a.close()
  const killed = a.status(run.jobId)
  assert.equal(killed.status, 'killed')
  assert.equal(killed.reason, 'shutdown')
  assert.deepEqual(sessionProcesses(run.pid), [])

  const b = open(t, { stateDir: dir })
  const listed = new Map(b.list().map((j) => [j.jobId, j]))
  assert.equal(listed.size, 3)
  for (const j of [ok, bad, run]) {
    const info = listed.get(j.jobId)
    assert.equal(info.thisServer, false, j.command)
    assert.deepEqual(withoutOwner(info), withoutOwner(a.status(j.jobId)), j.command)
    assert.deepEqual(b.status(j.jobId), info)
    assert.equal(b.output(j.jobId).output, a.output(j.jobId).output, j.command)
    assert.equal(b.tail(j.jobId, 1).output, a.tail(j.jobId, 1).output, j.command)
    assert.deepEqual(b.screen(j.jobId).rows, a.screen(j.jobId).rows, j.command)
  }
  assert.equal(listed.get(ok.jobId).status, 'completed')
  assert.equal(listed.get(ok.jobId).name, 'ok')
  assert.equal(b.output(ok.jobId).output, 'alpha\nbeta')
  assert.equal(listed.get(bad.jobId).status, 'failed')
  assert.equal(listed.get(bad.jobId).exitCode, 3)
  assert.equal(listed.get(bad.jobId).reason, 'exited with code 3')
  assert.equal(b.output(bad.jobId).output, 'oops')
  assert.equal(listed.get(run.jobId).status, 'killed')
  assert.equal(listed.get(run.jobId).reason, 'shutdown')
  assert.equal(b.output(run.jobId).output, 'started')
  // search reads the transcript on disk; a wait on an ended job resolves at once
  const found = b.search(ok.jobId, 'beta')
  assert.deepEqual(found.matches.map((x) => [x.line, x.text]), [[1, 'beta']])
  assert.equal(found.totalMatches, 1)
  assert.equal((await b.wait(bad.jobId)).exitCode, 3)
  const exited = await b.wait(ok.jobId, { pattern: 'never', timeoutMs: 10_000 })
  assert.equal(exited.reason, 'exited')
  assert.equal(exited.info.status, 'completed')
  // jobs of an earlier manager have ended: a kill has nothing to do
  assert.equal((await b.kill(run.jobId)).outcome, 'already_terminated')
  // a new job of b is b's, listed before the older ones
  const mine = b.execute('echo mine')
  assert.equal(mine.thisServer, true)
  await b.wait(mine.jobId)
  assert.equal(b.list()[0].jobId, mine.jobId)

  // removeJob through the manager that ran the job: gone from memory and from disk
  a.removeJob(ok.jobId)
  assert.equal(existsSync(join(dir, 'jobs', ok.jobId)), false)
  await assertCode(() => a.status(ok.jobId), 'JOB_NOT_FOUND')
  await assertCode(() => b.status(ok.jobId), 'JOB_NOT_FOUND')
  assert.ok(!b.list().some((j) => j.jobId === ok.jobId))
  await assertCode(() => a.removeJob(ok.jobId), 'JOB_NOT_FOUND')
  await b.close()
})

test('a process holding a manager is SIGKILLed: its running job reads killed (server stopped), output intact, no process left', async (t) => {
  const dir = join(tempDir(t), 'state')
  const child = startChild(t, `
    const jobs = new JobManager({ stateDir: ${JSON.stringify(dir)}, killGraceMs: 300 })
    const ok = jobs.execute(${JSON.stringify(COMPLETED)})
    const bad = jobs.execute(${JSON.stringify(FAILED)})
    const run = jobs.execute(${JSON.stringify(RUNNING)})
    setInterval(() => {}, 1 << 30) // stays alive until killed
    ;(async () => {
      await jobs.wait(ok.jobId)
      await jobs.wait(bad.jobId)
      await jobs.wait(run.jobId, { pattern: 'started', fromStart: true, timeoutMs: 10000 })
      const seen = (j) => ({ pid: j.pid, info: jobs.status(j.jobId), output: jobs.output(j.jobId).output, tail: jobs.tail(j.jobId, 1).output })
      console.log(JSON.stringify({ ok: seen(ok), bad: seen(bad), run: seen(run) }))
    })()
  `)
  const seen = await waitUntil(child.report, 20_000, "the child's report").catch((e) => {
    throw new Error(`${e.message}\n${child.output()}`)
  })
  const ids = { ok: seen.ok.info.jobId, bad: seen.bad.info.jobId, run: seen.run.info.jobId }
  assert.equal(seen.ok.output, 'alpha\nbeta')
  assert.equal(seen.bad.output, 'oops')
  assert.equal(seen.run.info.status, 'running')
  assert.equal(seen.run.info.thisServer, true)

  // While the child lives, its jobs are visible here; the child forgets them and streams
  // their data, and it does what is asked of its running job (over its attach socket).
  const m = open(t, { stateDir: dir })
  const live = new Map(m.list().map((j) => [j.jobId, j]))
  for (const id of Object.values(ids)) assert.equal(live.get(id)?.thisServer, false, id)
  assert.equal(live.get(ids.run).status, 'running')
  assert.deepEqual(withoutOwner(live.get(ids.ok)), withoutOwner(seen.ok.info))
  await waitUntil(() => m.output(ids.run).output === 'started', 10_000, "the running job's screen on disk")
  await assertCode(() => m.removeJob(ids.run), 'NOT_OWNER')
  await assertCode(() => m.removeJob(ids.ok), 'NOT_OWNER')
  await assertCode(() => m.onData(ids.run, () => {}), 'NOT_OWNER')
  await assertCode(() => m.onExit(ids.run, () => {}), 'NOT_OWNER')
  assert.equal(m.write(ids.run, 'x'), 1, "typed into the child's job by the child")
  assert.equal((await m.wait(ids.run, { timeoutMs: 50 })).status, 'running')
  // a condition only the child can see is waited for by the child
  assert.equal((await m.wait(ids.run, { pattern: 'started', fromStart: true, timeoutMs: 5000 })).reason, 'matched')
  assert.ok(sessionProcesses(seen.run.pid).length > 0, 'the running job is alive')

  child.child.kill('SIGKILL')
  assert.deepEqual(await child.exited, { code: null, signal: 'SIGKILL' })
  // Its jobs die with it (the PTY hang-up), and their records say so.
  await waitUntil(() => sessionProcesses(seen.run.pid).length === 0, 10_000, 'the job to die with its manager')
  for (const s of [seen.ok, seen.bad, seen.run]) assert.deepEqual(sessionProcesses(s.pid), [])
  const stopped = await waitUntil(() => {
    const info = m.status(ids.run)
    return info.status === 'killed' && info
  }, 10_000, 'the orphaned job to read killed')
  assert.equal(stopped.reason, 'server stopped')
  assert.equal(stopped.thisServer, false)
  assert.ok(Date.parse(stopped.finished) >= Date.parse(stopped.started))

  const n = open(t, { stateDir: dir })
  const listed = new Map(n.list().map((j) => [j.jobId, j]))
  assert.equal(listed.size, 3)
  assert.equal(listed.get(ids.ok).status, 'completed')
  assert.equal(listed.get(ids.bad).status, 'failed')
  assert.equal(listed.get(ids.bad).exitCode, 3)
  assert.equal(listed.get(ids.run).status, 'killed')
  assert.equal(listed.get(ids.run).reason, 'server stopped')
  assert.deepEqual(withoutOwner(listed.get(ids.ok)), withoutOwner(seen.ok.info))
  assert.deepEqual(withoutOwner(listed.get(ids.bad)), withoutOwner(seen.bad.info))
  for (const [key, id] of Object.entries(ids)) {
    assert.equal(listed.get(id).thisServer, false)
    assert.equal(listed.get(id).pid, seen[key].pid)
    assert.equal(listed.get(id).command, seen[key].info.command)
    assert.equal(n.output(id).output, seen[key].output, key)
    assert.equal(n.tail(id, 1).output, seen[key].tail, key)
    assert.equal(m.output(id).output, seen[key].output, key)
  }
  assert.equal((await n.kill(ids.run)).outcome, 'already_terminated')

  // The owner is gone: any manager may forget its jobs now.
  n.removeJob(ids.ok)
  n.removeJob(ids.run)
  for (const id of [ids.ok, ids.run]) {
    assert.equal(existsSync(join(dir, 'jobs', id)), false, id)
    await assertCode(() => n.status(id), 'JOB_NOT_FOUND')
    await assertCode(() => m.output(id), 'JOB_NOT_FOUND')
    await assertCode(() => n.removeJob(id), 'JOB_NOT_FOUND')
  }
  assert.deepEqual(n.list().map((j) => j.jobId), [ids.bad])
  assert.deepEqual(recordDirs(dir), [ids.bad])
  await m.close()
  await n.close()
})

test('removeJob: coded errors; without a stateDir it forgets the job from memory', async (t) => {
  const m = open(t, {})
  const done = m.execute('echo x')
  await m.wait(done.jobId)
  const run = m.execute('sleep 1000')
  assert.equal(done.thisServer, true)
  await assertCode(() => m.removeJob('nope'), 'INVALID_JOB_ID')
  await assertCode(() => m.removeJob(randomUUID()), 'JOB_NOT_FOUND')
  await assertCode(() => m.removeJob(run.jobId), 'INVALID_ARGUMENT')
  assert.equal(m.removeJob(done.jobId), undefined)
  await assertCode(() => m.status(done.jobId), 'JOB_NOT_FOUND')
  assert.deepEqual(m.list().map((j) => j.jobId), [run.jobId])
  assert.equal((await m.kill(run.jobId)).outcome, 'killed')
  m.removeJob(run.jobId)
  assert.deepEqual(m.list(), [])
  await m.close()
})

test('the state directory is private: directories 0700, files 0600 (whatever the umask)', async (t) => {
  const dir = join(tempDir(t), 'state', 'nested')
  const umask = process.umask(0)
  t.after(() => process.umask(umask))
  const m = open(t, { stateDir: dir })
  const done = m.execute('echo hi')
  await m.wait(done.jobId)
  const run = m.execute(RUNNING)
  await m.wait(run.jobId, { pattern: 'started', fromStart: true, timeoutMs: 10_000 })
  await m.wait(run.jobId, { idleMs: 500 }) // quiet: its screen is saved too
  const paths = walk(dir)
  for (const f of ['meta.json', 'output.log']) {
    assert.ok(paths.includes(join(dir, 'jobs', done.jobId, f)), f)
  }
  for (const p of paths) {
    const st = statSync(p)
    assert.equal(st.mode & 0o777, st.isDirectory() ? 0o700 : 0o600, p)
  }
  await m.close()
})

test('nothing is written without stateDir or persist: true; persist: true uses $XDG_STATE_HOME/ptyjobs', async (t) => {
  const root = tempDir(t)
  const xdg = join(root, 'xdg-state')
  const home = join(root, 'home')
  const other = join(root, 'other')
  mkdirSync(xdg)
  mkdirSync(home)
  const env = { XDG_STATE_HOME: xdg, HOME: home }
  const run = async (options) => {
    const child = startChild(t, `
      const jobs = new JobManager(${JSON.stringify(options)})
      const j = jobs.execute('echo hi')
      jobs.wait(j.jobId).then(async (info) => {
        console.log(JSON.stringify({ jobId: j.jobId, output: jobs.output(j.jobId).output, status: info.status }))
        await jobs.close()
      })
    `, env)
    const exit = await child.exited
    assert.deepEqual(exit, { code: 0, signal: null }, child.output())
    const r = child.report()
    assert.equal(r?.output, 'hi', child.output())
    return r.jobId
  }
  await run({})
  await run({ persist: false })
  await run({ stateDir: other, persist: false })
  assert.deepEqual(walk(root).map((p) => p.slice(root.length)).sort(), ['', '/home', '/xdg-state'])

  const id = await run({ persist: true })
  assert.ok(existsSync(join(xdg, 'ptyjobs', 'jobs', id, 'meta.json')))
  const fromDefault = open(t, { stateDir: join(xdg, 'ptyjobs') })
  assert.equal(fromDefault.output(id).output, 'hi')
  await fromDefault.close()

  const elsewhere = await run({ persist: true, stateDir: other })
  assert.ok(existsSync(join(other, 'jobs', elsewhere, 'meta.json')))
  assert.ok(!existsSync(join(xdg, 'ptyjobs', 'jobs', elsewhere)))
  assert.deepEqual(readdirSync(home), [])
})

test('output with an old offset reads lines memory evicted from the log on disk; jobLogBytes caps that log', async (t) => {
  const root = tempDir(t)
  const seq = (n) => Array.from({ length: n }, (_, i) => i + 1).join('\n')
  const m = open(t, { stateDir: join(root, 'a'), transcriptBytes: 1000 })
  const { jobId } = m.execute('seq 1 2000')
  await m.wait(jobId)
  const held = m.output(jobId)
  assert.ok(held.droppedLines > 0)
  assert.equal(held.totalLines, 2000)
  assert.equal(m.output(jobId, { offset: 0, limit: 3 }).output, '1\n2\n3')
  const all = m.output(jobId, { offset: 0 })
  assert.equal(all.output, seq(2000))
  assert.equal(all.firstLine, 0)
  assert.equal(all.nextOffset, 2000)
  await m.close()
  const later = open(t, { stateDir: join(root, 'a') })
  assert.equal(later.output(jobId).output, seq(2000))
  assert.equal(later.output(jobId, { offset: 1990, limit: 5 }).output, '1991\n1992\n1993\n1994\n1995')
  assert.equal(later.tail(jobId, 2).output, '1999\n2000')
  await later.close()

  const capped = open(t, { stateDir: join(root, 'b'), jobLogBytes: 100 })
  const big = capped.execute('seq 1 1000')
  await capped.wait(big.jobId)
  assert.equal(capped.output(big.jobId).output, seq(1000), 'memory keeps every line')
  await capped.close()
  const reader = open(t, { stateDir: join(root, 'b') })
  const fromDisk = reader.output(big.jobId).output.split('\n')
  assert.deepEqual(fromDisk.slice(0, 3), ['1', '2', '3'])
  assert.match(fromDisk.at(-1), /disk log reached its cap of 100 bytes/)
  assert.ok(fromDisk.length < 100, `${fromDisk.length} lines on disk`)
  await reader.close()
})

test('retention: keepJobs and keepDays prune the finished jobs of earlier runs when a manager opens', async (t) => {
  const dir = join(tempDir(t), 'state')
  const child = startChild(t, `
    const jobs = new JobManager({ stateDir: ${JSON.stringify(dir)} })
    ;(async () => {
      const ids = []
      for (const n of [1, 2, 3]) { const j = jobs.execute('echo ' + n); ids.push(j.jobId); await jobs.wait(j.jobId) }
      console.log(JSON.stringify({ ids }))
      await jobs.close()
    })()
  `)
  assert.deepEqual(await child.exited, { code: 0, signal: null }, child.output())
  const { ids } = child.report()
  // Pruning runs as the manager opens, in the background.
  const keep2 = open(t, { stateDir: dir, keepJobs: 2 })
  await waitUntil(() => keep2.list().length === 2, 10_000, 'the prune at open')
  assert.deepEqual(keep2.list().map((j) => j.jobId), [ids[2], ids[1]])
  assert.deepEqual(recordDirs(dir).sort(), [ids[1], ids[2]].sort())
  await assertCode(() => keep2.status(ids[0]), 'JOB_NOT_FOUND')
  await keep2.close()
  // The two left are still the dead child's: keepDays: 0 prunes every finished job.
  const none = open(t, { stateDir: dir, keepDays: 0 })
  await waitUntil(() => none.list().length === 0, 10_000, 'the prune at open')
  assert.deepEqual(recordDirs(dir), [])
  await none.close()
})

test('bad persistence options: INVALID_ARGUMENT; a stateDir that cannot be created: IO_ERROR', async (t) => {
  const root = tempDir(t)
  const stateDir = join(root, 'state')
  for (const options of [
    { stateDir: '' },
    { stateDir, keepJobs: -1 },
    { stateDir, keepJobs: 1.5 },
    { stateDir, keepDays: -1 },
    { stateDir, keepDays: Number.NaN },
    { stateDir, keepDays: Infinity },
    { stateDir, keepBytes: -1 },
    { stateDir, jobLogBytes: 2 ** 53 },
    { keepJobs: -1 } // checked even without persistence
  ]) {
    await assertCode(() => new JobManager(options), 'INVALID_ARGUMENT')
  }
  assert.ok(!existsSync(stateDir), 'a rejected manager creates nothing')
  const file = join(root, 'a-file')
  writeFileSync(file, 'not a directory')
  await assertCode(() => new JobManager({ stateDir: join(file, 'state') }), 'IO_ERROR')
  assert.throws(() => new JobManager({ stateDir: join(file, 'state') }), (e) => e.message.includes(join(file, 'state')))
})
