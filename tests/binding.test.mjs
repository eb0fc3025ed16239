// The Node binding (crates/node): every method of JobManager against real jobs under real PTYs.
// Build first: `npm run build:node`. Every test polls with a deadline; every manager is closed
// (its jobs killed) when the test ends, pass or fail.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync, readdirSync, readFileSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { waitUntil, sessionProcesses } from './helpers/common.mjs'
import { JobManager, manager, assertCode } from './helpers/binding.mjs'


test('execute, status, list and wait: the job info', async (t) => {
  const m = manager(t)
  const job = m.execute('echo hello', { name: 'greeting' })
  assert.match(job.jobId, /^[0-9a-f-]{36}$/)
  assert.ok(job.pid > 0)
  assert.ok(['running', 'completed'].includes(job.status))
  assert.equal(job.name, 'greeting')
  assert.equal(job.command, 'echo hello')
  assert.equal(m.status(job.jobId).jobId, job.jobId)
  assert.ok(m.list().some((j) => j.jobId === job.jobId))
  const done = await m.wait(job.jobId)
  assert.equal(done.status, 'completed')
  assert.equal(done.exitCode, 0)
  assert.equal(done.signal, undefined)
  assert.ok(!Number.isNaN(Date.parse(done.started)))
  assert.ok(Date.parse(done.finished) >= Date.parse(done.started))
  assert.equal(typeof done.durationMs, 'number')
  assert.equal(m.output(job.jobId).output, 'hello')
})

test('list is newest first', async (t) => {
  const m = manager(t)
  const a = m.execute('true')
  const b = m.execute('true')
  const ids = m.list().map((j) => j.jobId)
  assert.ok(ids.indexOf(b.jobId) < ids.indexOf(a.jobId))
})

test('the job runs on a terminal (isatty)', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('test -t 0 && test -t 1 && echo tty')
  assert.equal((await m.wait(jobId)).exitCode, 0)
  assert.equal(m.output(jobId).output, 'tty')
})

test('output is free of ANSI escapes', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute("printf '\\033[31mred\\033[0m \\033[1;4mbold\\033[0m\\n\\033[2K\\033[32mgreen\\033[0m\\n'")
  await m.wait(jobId)
  const out = m.output(jobId).output
  assert.equal(out, 'red bold\ngreen')
  assert.ok(!out.includes('\x1b'))
})

test('\\r rewrites collapse to their final state', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute("printf 'progress 10%%\\rprogress 50%%\\rprogress 100%%\\n'; echo done")
  await m.wait(jobId)
  assert.equal(m.output(jobId).output, 'progress 100%\ndone')
})

test('a prompt answered with write (string and Buffer, no newline added)', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('printf "name? "; read n; printf "again? "; read a; echo "hello $n$a"')
  await waitUntil(() => m.tail(jobId).output.includes('name?'), 10_000, 'the prompt')
  assert.equal(m.write(jobId, 'bob'), 3)
  assert.equal(m.write(jobId, '\n'), 1)
  await waitUntil(() => m.tail(jobId).output.includes('again?'), 10_000, 'the second prompt')
  assert.equal(m.write(jobId, Buffer.from('by\r')), 3)
  const done = await m.wait(jobId, { timeoutMs: 10_000 })
  assert.equal(done.status, 'completed')
  assert.match(m.output(jobId).output, /hello bobby$/)
})

test('wait with a timeout resolves with the running info; without one, with the final info', async (t) => {
  const m = manager(t)
  const sleeper = m.execute('sleep 30')
  const t0 = Date.now()
  const info = await m.wait(sleeper.jobId, { timeoutMs: 150 })
  assert.equal(info.status, 'running')
  assert.ok(Date.now() - t0 >= 140)
  assert.equal((await m.kill(sleeper.jobId)).outcome, 'killed')
  const failing = m.execute('echo oops; exit 3')
  const done = await m.wait(failing.jobId)
  assert.equal(done.status, 'failed')
  assert.equal(done.exitCode, 3)
  assert.equal(done.reason, 'exited with code 3')
})

test('output with offset and limit, tail, stable line numbers', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('seq 1 10')
  await m.wait(jobId)
  const all = m.output(jobId)
  assert.equal(all.output, '1\n2\n3\n4\n5\n6\n7\n8\n9\n10')
  assert.equal(all.firstLine, 0)
  assert.equal(all.nextOffset, 10)
  assert.equal(all.totalLines, 10)
  assert.equal(all.droppedLines, 0)
  assert.equal(all.truncated, false)
  assert.equal(all.status, 'completed')
  const part = m.output(jobId, { offset: 2, limit: 3 })
  assert.equal(part.output, '3\n4\n5')
  assert.equal(part.firstLine, 2)
  assert.equal(part.lineCount, 3)
  assert.equal(part.nextOffset, 5)
  assert.equal(part.truncated, true)
  assert.equal(m.output(jobId, { offset: 10 }).output, '')
  assert.equal(m.tail(jobId, 2).output, '9\n10')
  assert.equal(m.tail(jobId).output, all.output)
})

test('transcriptBytes bounds the transcript and reports dropped lines', async (t) => {
  const m = manager(t, { transcriptBytes: 1000 })
  const { jobId } = m.execute('seq 1 2000')
  await m.wait(jobId)
  const out = m.output(jobId)
  assert.ok(out.droppedLines > 0)
  assert.ok(out.output.length <= 1000 + 200)
  assert.match(out.output, /\n2000$/)
  assert.equal(out.totalLines, 2000)
})

test('cwd, env, name and terminal size reach the job', async (t) => {
  const m = manager(t)
  const dir = mkdtempSync(join(tmpdir(), 'ptyjobs-binding-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const { jobId } = m.execute('pwd; echo "$GREETING"; stty size', { cwd: dir, env: { GREETING: 'hi there' }, cols: 91, rows: 17 })
  await m.wait(jobId)
  assert.equal(m.output(jobId).output, `${realpathSync(dir)}\nhi there\n17 91`)
  const info = m.status(jobId)
  assert.equal(info.cols, 91)
  assert.equal(info.rows, 17)
})

test('manager defaults: cols, rows and shell', async (t) => {
  const m = manager(t, { cols: 100, rows: 20, shell: '/bin/bash' })
  const { jobId } = m.execute('stty size; echo "$BASH_VERSION" | cut -c1')
  await m.wait(jobId)
  assert.match(m.output(jobId).output, /^20 100\n\d$/)
})

test('resize: the program sees the new size; a finished job is a no-op', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('read x; stty size')
  await waitUntil(() => m.status(jobId).status === 'running', 5000, 'running')
  assert.equal(m.resize(jobId, 100, 30), true)
  assert.equal(m.status(jobId).cols, 100)
  m.write(jobId, '\n')
  await m.wait(jobId)
  assert.match(m.output(jobId).output, /30 100$/)
  assert.equal(m.resize(jobId, 80, 24), false)
  assert.equal(m.status(jobId).cols, 100)
})

test('timeoutMs kills a job that runs too long', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('sleep 30', { timeoutMs: 200 })
  const done = await m.wait(jobId, { timeoutMs: 10_000 })
  assert.equal(done.status, 'killed')
  assert.equal(done.reason, 'timeout')
})

test('kill takes the whole process group down, a SIGTERM-ignoring child included', async (t) => {
  const m = manager(t)
  const { jobId, pid } = m.execute("(trap '' TERM; exec sleep 300) & (trap '' TERM; exec sleep 301) & sleep 302")
  await waitUntil(() => sessionProcesses(pid).length >= 4, 10_000, 'the job and its children')
  const t0 = Date.now()
  assert.equal((await m.kill(jobId, { signal: 'TERM', graceMs: 300 })).outcome, 'killed')
  assert.ok(Date.now() - t0 < 5000)
  assert.deepEqual(sessionProcesses(pid), [])
  const info = m.status(jobId)
  assert.equal(info.status, 'killed')
  assert.equal((await m.kill(jobId)).outcome, 'already_terminated')
  assert.equal((await m.kill(randomUUID())).outcome, 'not_found')
})

test('kill with another signal', async (t) => {
  const m = manager(t)
  const { jobId, pid } = m.execute('sleep 300')
  assert.equal((await m.kill(jobId, { signal: 'SIGINT' })).outcome, 'killed')
  assert.equal(m.status(jobId).status, 'killed')
  assert.deepEqual(sessionProcesses(pid), [])
})

test('kill resolves a report: the outcome and the survivors, as kill_job answers', async (t) => {
  const m = manager(t)
  const { jobId, pid } = m.execute("(trap '' TERM; exec sleep 300) & sleep 301")
  await waitUntil(() => sessionProcesses(pid).length >= 3, 10_000, 'the job and its children')
  assert.deepEqual(await m.kill(jobId, { graceMs: 300 }), { outcome: 'killed', survivors: [] })
  assert.deepEqual(sessionProcesses(pid), [])
  assert.equal(m.status(jobId).status, 'killed')
  assert.deepEqual(await m.kill(jobId), { outcome: 'already_terminated', survivors: [] })
  assert.deepEqual(await m.kill(randomUUID()), { outcome: 'not_found', survivors: [] })
  // killReport, from when kill resolved the outcome alone, is the same kill.
  const other = m.execute('sleep 300')
  assert.deepEqual(await m.killReport(other.jobId), { outcome: 'killed', survivors: [] })
  await assertCode(() => m.killReport('x'), 'INVALID_JOB_ID')
  await assertCode(() => m.kill(jobId, { signal: 'NOPE' }), 'INVALID_ARGUMENT')
})

test('close kills every running job and refuses new ones', async (t) => {
  const m = new JobManager({ killGraceMs: 300 })
  const a = m.execute('sleep 300')
  const b = m.execute("trap '' TERM; sleep 300")
  await m.close()
  assert.equal(m.status(a.jobId).status, 'killed')
  assert.equal(m.status(b.jobId).status, 'killed')
  assert.deepEqual(sessionProcesses(a.pid), [])
  assert.deepEqual(sessionProcesses(b.pid), [])
  await assertCode(() => m.execute('true'), 'MANAGER_CLOSED')
  await m.close() // idempotent
})

test('error codes for every bad input', async (t) => {
  const m = manager(t)
  const done = m.execute('true')
  await m.wait(done.jobId)
  const unknown = randomUUID()
  // INVALID_JOB_ID
  for (const bad of ['', 'nope', '../etc/passwd', unknown.slice(0, 35)]) {
    await assertCode(() => m.status(bad), 'INVALID_JOB_ID')
  }
  await assertCode(() => m.output('x'), 'INVALID_JOB_ID')
  await assertCode(() => m.tail('x'), 'INVALID_JOB_ID')
  await assertCode(() => m.write('x', 'a'), 'INVALID_JOB_ID')
  await assertCode(() => m.resize('x', 80, 24), 'INVALID_JOB_ID')
  await assertCode(() => m.kill('x'), 'INVALID_JOB_ID')
  await assertCode(() => m.wait('x'), 'INVALID_JOB_ID')
  await assertCode(() => m.onData('x', () => {}), 'INVALID_JOB_ID')
  await assertCode(() => m.onExit('x', () => {}), 'INVALID_JOB_ID')
  // JOB_NOT_FOUND
  await assertCode(() => m.status(unknown), 'JOB_NOT_FOUND')
  await assertCode(() => m.output(unknown), 'JOB_NOT_FOUND')
  await assertCode(() => m.tail(unknown), 'JOB_NOT_FOUND')
  await assertCode(() => m.write(unknown, 'a'), 'JOB_NOT_FOUND')
  await assertCode(() => m.resize(unknown, 80, 24), 'JOB_NOT_FOUND')
  await assertCode(() => m.wait(unknown), 'JOB_NOT_FOUND')
  await assertCode(() => m.onData(unknown, () => {}), 'JOB_NOT_FOUND')
  await assertCode(() => m.onExit(unknown, () => {}), 'JOB_NOT_FOUND')
  // NOT_RUNNING
  await assertCode(() => m.write(done.jobId, 'late'), 'NOT_RUNNING')
  // INVALID_ARGUMENT
  await assertCode(() => m.execute(''), 'INVALID_ARGUMENT')
  await assertCode(() => m.execute('   '), 'INVALID_ARGUMENT')
  await assertCode(() => m.execute('true', { cwd: '/nonexistent/dir' }), 'INVALID_ARGUMENT')
  await assertCode(() => m.execute('true', { cols: 0 }), 'INVALID_ARGUMENT')
  await assertCode(() => m.execute('true', { rows: 1001 }), 'INVALID_ARGUMENT')
  await assertCode(() => m.execute('true', { cols: 1.5 }), 'INVALID_ARGUMENT')
  await assertCode(() => m.execute('true', { env: { 'A=B': 'x' } }), 'INVALID_ARGUMENT')
  await assertCode(() => m.execute('true', { timeoutMs: -1 }), 'INVALID_ARGUMENT')
  await assertCode(() => m.output(done.jobId, { offset: -1 }), 'INVALID_ARGUMENT')
  await assertCode(() => m.output(done.jobId, { limit: Number.NaN }), 'INVALID_ARGUMENT')
  await assertCode(() => m.tail(done.jobId, -5), 'INVALID_ARGUMENT')
  await assertCode(() => m.resize(done.jobId, 0, 24), 'INVALID_ARGUMENT')
  await assertCode(() => m.resize(done.jobId, 80, 5000), 'INVALID_ARGUMENT')
  await assertCode(() => m.kill(done.jobId, { signal: 'NOPE' }), 'INVALID_ARGUMENT')
  await assertCode(() => m.kill(done.jobId, { graceMs: -1 }), 'INVALID_ARGUMENT')
  await assertCode(() => m.wait(done.jobId, { timeoutMs: Infinity }), 'INVALID_ARGUMENT')
  for (const options of [{ maxJobs: 0 }, { cols: 0 }, { rows: -1 }, { killGraceMs: -1 }, { transcriptBytes: 0 }, { shell: '' }]) {
    await assertCode(() => new JobManager(options), 'INVALID_ARGUMENT')
  }
  // LIMIT_REACHED
  const one = manager(t, { maxJobs: 1 })
  one.execute('sleep 30')
  await assertCode(() => one.execute('true'), 'LIMIT_REACHED')
  // SPAWN_FAILED
  const noShell = manager(t, { shell: '/nonexistent/shell' })
  await assertCode(() => noShell.execute('true'), 'SPAWN_FAILED')
})

test('onData streams final lines while the job runs', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('seq 1 200; sleep 300')
  let got = ''
  m.onData(jobId, (data) => { got += data })
  // lines that scrolled off the 40-row screen arrive before the job ends
  await waitUntil(() => got.startsWith('1\n2\n3\n') && got.includes('\n100\n'), 10_000, 'streamed lines')
  assert.equal(m.status(jobId).status, 'running')
  assert.ok(got.endsWith('\n'))
  await m.kill(jobId)
})

test('onData delivers everything and onExit comes after the last data (seq 1 20000, 30 times)', async (t) => {
  const m = manager(t)
  const expected = Array.from({ length: 20000 }, (_, i) => i + 1).join('\n')
  for (let i = 0; i < 30; i++) {
    const { jobId } = m.execute('seq 1 20000')
    const chunks = []
    let late = 0
    let exitInfo
    const exited = new Promise((resolve) => {
      m.onData(jobId, (data) => { if (exitInfo) late++; chunks.push(data) })
      m.onExit(jobId, (info) => {
        exitInfo = info
        resolve({ info, text: chunks.join('') })
      })
    })
    const { info, text } = await exited
    assert.equal(info.status, 'completed', `run ${i}`)
    assert.equal(info.exitCode, 0)
    const out = m.output(jobId).output
    assert.ok(out === expected, `run ${i}: output() is not seq's output`)
    assert.equal(text, out, `run ${i}: onData text differs from output at exit`)
    assert.equal(late, 0)
  }
})

test('onExit reports the exit code or the signal; a late listener gets everything', async (t) => {
  const m = manager(t)
  const failing = m.execute('echo one; echo two; exit 7')
  const exit = await new Promise((resolve) => m.onExit(failing.jobId, resolve))
  assert.equal(exit.exitCode, 7)
  assert.equal(exit.status, 'failed')
  // registered after the end: called at once, with all the data first
  const order = []
  await new Promise((resolve) => {
    m.onData(failing.jobId, (d) => order.push(['data', d]))
    m.onExit(failing.jobId, (i) => { order.push(['exit', i.exitCode]); resolve() })
  })
  assert.deepEqual(order, [['data', 'one\ntwo'], ['exit', 7]])
  const sleeper = m.execute('sleep 300')
  const exited = new Promise((resolve) => m.onExit(sleeper.jobId, resolve))
  await m.kill(sleeper.jobId, { signal: 'KILL' })
  const info = await exited
  assert.equal(info.status, 'killed')
  assert.equal(info.signal, 'SIGKILL')
  assert.equal(info.exitCode, undefined)
})

test('a job with no output: onExit, no data', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('true')
  const chunks = []
  m.onData(jobId, (d) => chunks.push(d))
  await new Promise((resolve) => m.onExit(jobId, resolve))
  assert.deepEqual(chunks, [])
})
