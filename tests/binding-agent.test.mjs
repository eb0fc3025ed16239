// The Node binding's agent-ergonomics methods (issue 5): wait with a pattern, idle time or
// port; screen; sendKeys; search; maxBytes and nextOffset reads; onData's exact final-line
// boundary. Build first: `npm run build:node`. Every test polls with a deadline; every manager
// is closed (its jobs killed) when the test ends, pass or fail.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:net'
import { waitUntil } from './helpers/common.mjs'
import { JobManager, manager, assertCode } from './helpers/binding.mjs'


/** A TCP port on localhost that nothing listens on right now. */
async function freePort () {
  const server = createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

test('wait with a pattern matches only new lines unless fromStart', async (t) => {
  const m = manager(t)
  // The loop paces itself; the test synchronises on what it sees, never on time.
  const { jobId } = m.execute('echo ready-old; while :; do echo ready-new; sleep 0.1; done')
  await waitUntil(() => m.tail(jobId).output.includes('ready-old'), 10_000, 'the first line')
  const old = await m.wait(jobId, { pattern: '^ready-', fromStart: true, timeoutMs: 10_000 })
  assert.equal(old.reason, 'matched')
  assert.equal(old.matchedLine, 'ready-old')
  assert.equal(old.lineNumber, 0)
  assert.equal(old.capped, false)
  assert.equal(old.info.status, 'running')
  assert.equal(typeof old.waitedMs, 'number')
  assert.equal(typeof old.tail.output, 'string')
  const fresh = await m.wait(jobId, { pattern: '^ready-', timeoutMs: 10_000 })
  assert.equal(fresh.reason, 'matched')
  assert.equal(fresh.matchedLine, 'ready-new')
  assert.ok(fresh.lineNumber >= 1)
  assert.equal(m.output(jobId, { offset: fresh.lineNumber, limit: 1 }).output, 'ready-new')
})

test('wait with a pattern: exit ends it, and a pattern already printed does not match', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('echo done-here; exit 5')
  await m.wait(jobId)
  const r = await m.wait(jobId, { pattern: 'done', timeoutMs: 10_000 })
  assert.equal(r.reason, 'exited')
  assert.equal(r.matchedLine, undefined)
  assert.equal(r.lineNumber, undefined)
  assert.equal(r.info.status, 'failed')
  assert.equal(r.info.exitCode, 5)
  assert.equal(r.tail.output, 'done-here')
  const again = await m.wait(jobId, { pattern: 'done', fromStart: true })
  assert.equal(again.reason, 'matched')
  assert.equal(again.lineNumber, 0)
})

test('wait with idleMs ends at a prompt waiting for input', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('printf "name? "; read n; echo "hello $n"')
  const r = await m.wait(jobId, { idleMs: 300, timeoutMs: 20_000 })
  assert.equal(r.reason, 'idle')
  assert.equal(r.info.status, 'running')
  assert.match(r.tail.output, /name\? $/)
  assert.ok(r.waitedMs >= 250, `waited ${r.waitedMs} ms`)
  m.write(jobId, 'bob\r')
  const done = await m.wait(jobId, { timeoutMs: 10_000 })
  assert.equal(done.status, 'completed')
  assert.match(m.output(jobId).output, /hello bob$/)
})

test('wait with a port resolves port_open once a server listens', async (t) => {
  const m = manager(t)
  const port = await freePort()
  const server = `require("net").createServer((s) => s.end()).listen(${port}, "127.0.0.1", () => console.log("listening"))`
  const { jobId } = m.execute(`exec '${process.execPath}' -e '${server}'`)
  const r = await m.wait(jobId, { port, timeoutMs: 20_000 })
  assert.equal(r.reason, 'port_open', `tail: ${r.tail.output}`)
  assert.equal(r.info.status, 'running')
  assert.equal((await m.kill(jobId)).outcome, 'killed')
})

test('wait times out, and a timeout beyond maxWaitMs is capped', async (t) => {
  const m = manager(t, { maxWaitMs: 300 })
  const { jobId } = m.execute('sleep 300')
  const t0 = Date.now()
  const r = await m.wait(jobId, { pattern: 'never', port: await freePort(), timeoutMs: 150 })
  assert.equal(r.reason, 'timeout')
  assert.equal(r.capped, false)
  assert.ok(r.waitedMs >= 140 && Date.now() - t0 >= 140, `waited ${r.waitedMs} ms`)
  const capped = await m.wait(jobId, { idleMs: 100_000, timeoutMs: 60_000 })
  assert.equal(capped.reason, 'timeout')
  assert.equal(capped.capped, true)
  assert.ok(capped.waitedMs < 10_000)
  // without a condition, wait keeps its own contract: the job info, no cap
  const plain = await m.wait(jobId, { timeoutMs: 400 })
  assert.equal(plain.status, 'running')
  assert.equal(plain.jobId, jobId)
  assert.equal(plain.info, undefined)
  assert.equal((await m.kill(jobId)).outcome, 'killed')
})

test('screen of a program drawing on the alternate screen with cursor addressing', async (t) => {
  const m = manager(t)
  const draw = "printf 'before\\n\\033[?1049h\\033[2J\\033[H\\033]0;my title\\007\\033[3;5Hhello\\033[10;1Hbottom\\033[5;7H'; read x"
  const { jobId } = m.execute(draw, { cols: 80, rows: 24 })
  const s = await waitUntil(() => {
    const s = m.screen(jobId)
    return s.rows[9] === 'bottom' && s.cursorRow === 4 ? s : null
  }, 10_000, 'the drawing')
  assert.equal(s.rows.length, 24)
  assert.equal(s.rows[2], '    hello')
  assert.equal(s.rows[0], '')
  assert.equal(s.cursorRow, 4)
  assert.equal(s.cursorCol, 6)
  assert.equal(s.cols, 80)
  assert.equal(s.height, 24)
  assert.equal(s.alternateScreen, true)
  assert.equal(s.title, 'my title')
  // what is drawn on the alternate screen never enters the transcript
  const transcript = m.output(jobId).output
  assert.match(transcript, /^before/)
  assert.doesNotMatch(transcript, /hello|bottom/)
  assert.equal(m.resize(jobId, 100, 30), true)
  const resized = m.screen(jobId)
  assert.equal(resized.cols, 100)
  assert.equal(resized.height, 30)
  assert.equal(resized.rows.length, 30)
  m.write(jobId, '\r')
  assert.equal((await m.wait(jobId, { timeoutMs: 10_000 })).status, 'completed')
})

test('screen of a plain job: main screen, no title', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('printf "one\\ntwo"; read x', { cols: 40, rows: 5 })
  const s = await waitUntil(() => {
    const s = m.screen(jobId)
    return s.rows[1] === 'two' ? s : null
  }, 10_000, 'the text')
  assert.deepEqual(s.rows, ['one', 'two', '', '', ''])
  assert.equal(s.cursorRow, 1)
  assert.equal(s.cursorCol, 3)
  assert.equal(s.alternateScreen, false)
  assert.equal(s.title, undefined)
})

test('sendKeys C-c interrupts a sleep under the terminal (SIGINT)', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('exec sleep 100')
  assert.equal(await m.sendKeys(jobId, ['C-c']), 1)
  const done = await m.wait(jobId, { timeoutMs: 10_000 })
  assert.equal(done.status, 'failed')
  assert.equal(done.signal, 'SIGINT')
  await assertCode(() => m.sendKeys(jobId, ['Enter']), 'NOT_RUNNING')
})

test('sendKeys encodes arrow keys for the cursor mode the program asked for', async (t) => {
  const m = manager(t)
  const program = (mode) => `stty raw -echo; printf '${mode}READY'; head -c 6 | od -An -c; stty sane`
  // application cursor mode (ESC[?1h): ESC O A
  const app = m.execute(program('\\033[?1h'))
  await waitUntil(() => m.tail(app.jobId).output.includes('READY'), 10_000, 'the program to be ready')
  assert.equal(await m.sendKeys(app.jobId, ['Up', 'Left']), 6)
  await m.wait(app.jobId, { timeoutMs: 10_000 })
  assert.match(m.output(app.jobId).output, /033\s+O\s+A\s+033\s+O\s+D/)
  // normal mode: ESC [ A
  const normal = m.execute(program(''))
  await waitUntil(() => m.tail(normal.jobId).output.includes('READY'), 10_000, 'the program to be ready')
  assert.equal(await m.sendKeys(normal.jobId, ['up', 'LEFT']), 6)
  await m.wait(normal.jobId, { timeoutMs: 10_000 })
  assert.match(m.output(normal.jobId).output, /033\s+\[\s+A\s+033\s+\[\s+D/)
})

test('sendKeys answers a prompt with text keys and Enter', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('printf "continue? "; read a; echo "answer=$a"')
  await m.wait(jobId, { pattern: 'continue\\?', fromStart: true, timeoutMs: 10_000 })
  assert.equal(await m.sendKeys(jobId, ['y', 'e', 's', 'Enter']), 4)
  const done = await m.wait(jobId, { timeoutMs: 10_000 })
  assert.equal(done.exitCode, 0)
  assert.match(m.output(jobId).output, /answer=yes$/)
})

test('search: matches with absolute line numbers, context, maxMatches and the total', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('for i in $(seq 1 30); do if [ $((i % 10)) = 5 ]; then echo "error $i"; else echo "ok $i"; fi; done')
  await m.wait(jobId)
  const r = m.search(jobId, '^error', { context: 1, maxMatches: 2 })
  assert.equal(r.totalMatches, 3)
  assert.deepEqual(r.matches, [
    { line: 4, text: 'error 5', before: ['ok 4'], after: ['ok 6'] },
    { line: 14, text: 'error 15', before: ['ok 14'], after: ['ok 16'] }
  ])
  assert.equal(r.firstLine, 0)
  assert.equal(r.nextOffset, 30)
  assert.equal(r.status, 'completed')
  const all = m.search(jobId, '(?i)ERROR 2\\d')
  assert.deepEqual(all.matches, [{ line: 24, text: 'error 25', before: [], after: [] }])
  const none = m.search(jobId, 'nothing')
  assert.equal(none.totalMatches, 0)
  assert.deepEqual(none.matches, [])
  const context3 = m.search(jobId, 'error 5$', { context: 3 })
  assert.deepEqual(context3.matches[0].before, ['ok 2', 'ok 3', 'ok 4'])
  assert.deepEqual(context3.matches[0].after, ['ok 6', 'ok 7', 'ok 8'])
  // non-destructive: the transcript is unchanged
  assert.equal(m.output(jobId).totalLines, 30)
})

test('maxBytes keeps the head and the tail of output and tail, and says what it left out', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('seq 1 1000')
  await m.wait(jobId)
  const whole = m.output(jobId)
  assert.equal(whole.omittedLines, 0)
  assert.equal(whole.omittedBytes, 0)
  assert.equal(whole.bytes, Buffer.byteLength(whole.output))
  const out = m.output(jobId, { maxBytes: 200 })
  assert.ok(out.bytes <= 200, `${out.bytes} bytes`)
  assert.equal(out.bytes, Buffer.byteLength(out.output))
  assert.ok(out.omittedLines > 900, `${out.omittedLines} lines omitted`)
  assert.ok(out.omittedBytes > 0)
  assert.match(out.output, /^1\n2\n3\n/)
  assert.match(out.output, /\n999\n1000$/)
  assert.match(out.output, /omitted/)
  assert.equal(out.firstLine, 0)
  assert.equal(out.nextOffset, 1000)
  const tail = m.tail(jobId, 500, { maxBytes: 100 })
  assert.ok(tail.bytes <= 100, `${tail.bytes} bytes`)
  assert.match(tail.output, /^501\n/)
  assert.match(tail.output, /\n1000$/)
  assert.ok(tail.omittedLines > 0)
  assert.equal(tail.firstLine, 500)
  assert.equal(tail.nextOffset, 1000)
  assert.equal(m.tail(jobId, 3, { maxBytes: 100 }).output, '998\n999\n1000')
  assert.equal(m.output(jobId, { offset: 10, limit: 5, maxBytes: 1000 }).output, '11\n12\n13\n14\n15')
})

test('nextOffset reads return exactly the new lines; finalLines marks what can no longer change', async (t) => {
  const m = manager(t)
  const { jobId } = m.execute('stty -echo; echo a; echo b; read x; echo c; echo d; read y; echo e')
  const first = await waitUntil(() => {
    const r = m.output(jobId)
    return r.output === 'a\nb' ? r : null
  }, 10_000, 'the first lines')
  assert.equal(first.nextOffset, 2)
  assert.equal(first.finalLines, 0) // still on the 40-row screen
  m.write(jobId, '\r')
  const second = await waitUntil(() => {
    const r = m.output(jobId, { offset: first.nextOffset })
    return r.output === 'c\nd' ? r : null
  }, 10_000, 'the new lines')
  assert.equal(second.firstLine, 2)
  assert.equal(second.nextOffset, 4)
  m.write(jobId, '\r')
  await m.wait(jobId, { timeoutMs: 10_000 })
  const third = m.output(jobId, { offset: second.nextOffset })
  assert.equal(third.output, 'e')
  assert.equal(third.nextOffset, 5)
  assert.equal(m.output(jobId, { offset: third.nextOffset }).output, '')
})

test('onData delivers exactly the final lines while the job runs: scrolled off or cleared', async (t) => {
  const m = manager(t)
  // 20 lines on a 5-row screen: 16 scrolled off; then a full clear makes the rest final too
  const { jobId } = m.execute("seq 1 20; read x; printf '\\033[2J\\033[Hafter'; read y", { rows: 5 })
  let got = ''
  m.onData(jobId, (data) => { got += data })
  const finalLines = await waitUntil(() => {
    const r = m.output(jobId, { offset: 1e9 })
    return r.finalLines > 0 && m.tail(jobId).output.endsWith('20') ? r.finalLines : 0
  }, 10_000, 'lines to scroll off')
  assert.equal(finalLines, 16)
  await waitUntil(() => got === Array.from({ length: 16 }, (_, i) => `${i + 1}\n`).join(''), 10_000, 'the 16 final lines')
  m.write(jobId, '\r')
  // the cleared rows (17..20 and the answered prompt line) become final at once
  await waitUntil(() => got.includes('\n20\n'), 10_000, 'the cleared lines')
  assert.equal(m.status(jobId).status, 'running')
  assert.ok(!got.includes('after'))
  const exited = new Promise((resolve) => m.onExit(jobId, resolve))
  m.write(jobId, '\r')
  await exited
  assert.equal(got, m.output(jobId).output)
})

test('agent methods: error codes for bad input', async (t) => {
  const m = manager(t)
  const done = m.execute('true')
  await m.wait(done.jobId)
  const unknown = randomUUID()
  // INVALID_JOB_ID, JOB_NOT_FOUND
  await assertCode(() => m.screen('x'), 'INVALID_JOB_ID')
  await assertCode(() => m.search('x', 'a'), 'INVALID_JOB_ID')
  await assertCode(() => m.sendKeys('x', ['Enter']), 'INVALID_JOB_ID')
  await assertCode(() => m.wait('x', { pattern: 'a' }), 'INVALID_JOB_ID')
  await assertCode(() => m.screen(unknown), 'JOB_NOT_FOUND')
  await assertCode(() => m.search(unknown, 'a'), 'JOB_NOT_FOUND')
  await assertCode(() => m.sendKeys(unknown, ['Enter']), 'JOB_NOT_FOUND')
  await assertCode(() => m.wait(unknown, { idleMs: 10 }), 'JOB_NOT_FOUND')
  // NOT_RUNNING
  await assertCode(() => m.sendKeys(done.jobId, ['C-c']), 'NOT_RUNNING')
  // INVALID_ARGUMENT: bad patterns and keys, named in the message
  await assertCode(() => m.wait(done.jobId, { pattern: '(unclosed' }), 'INVALID_ARGUMENT')
  await assertCode(() => m.search(done.jobId, '(unclosed'), 'INVALID_ARGUMENT')
  assert.throws(() => m.search(done.jobId, '[z-a]'), /invalid pattern/)
  await assertCode(() => m.sendKeys(done.jobId, ['Enter', 'NoSuchKey']), 'INVALID_ARGUMENT')
  await assert.rejects(m.sendKeys(done.jobId, ['C-Bogus']), /unknown key "C-Bogus"/)
  const running = m.execute('read x; echo "got [$x]"')
  await assertCode(() => m.sendKeys(running.jobId, ['a', 'F13', 'Enter']), 'INVALID_ARGUMENT')
  m.write(running.jobId, 'b\r')
  await m.wait(running.jobId, { timeoutMs: 10_000 })
  assert.match(m.output(running.jobId).output, /got \[b\]$/, 'nothing of a rejected key list is sent')
  // INVALID_ARGUMENT: options out of range
  for (const options of [{ port: 0 }, { port: 65536 }, { port: 1.5 }, { idleMs: 0 }, { idleMs: -1 }, { pattern: 'a', timeoutMs: -1 }]) {
    await assertCode(() => m.wait(done.jobId, options), 'INVALID_ARGUMENT')
  }
  await assertCode(() => m.output(done.jobId, { maxBytes: -1 }), 'INVALID_ARGUMENT')
  await assertCode(() => m.tail(done.jobId, 5, { maxBytes: Number.NaN }), 'INVALID_ARGUMENT')
  await assertCode(() => m.search(done.jobId, 'a', { context: -1 }), 'INVALID_ARGUMENT')
  await assertCode(() => m.search(done.jobId, 'a', { maxMatches: 0.5 }), 'INVALID_ARGUMENT')
  await assertCode(() => new JobManager({ maxWaitMs: 0 }), 'INVALID_ARGUMENT')
})
