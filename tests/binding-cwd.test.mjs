// The Node binding's `cwd` option on every method that takes a jobId (issue 22, point 1): with
// a name live in two directories, each method reaches the job of the directory given, and
// without `cwd` is an INVALID_ARGUMENT that lists the candidates. Real jobs under real PTYs;
// every wait polls with a deadline.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { relative } from 'node:path'
import { waitUntil } from './helpers/common.mjs'
import { manager, assertCode, tempDir } from './helpers/binding.mjs'

/** Every method that takes a job: a call with the options `o` (`cwd` or none). */
const calls = {
  status: (m, o) => m.status('web', o),
  statusAsync: (m, o) => m.statusAsync('web', o),
  output: (m, o) => m.output('web', o),
  outputAsync: (m, o) => m.outputAsync('web', o),
  tail: (m, o) => m.tail('web', 50, o),
  tailAsync: (m, o) => m.tailAsync('web', 50, o),
  search: (m, o) => m.search('web', 'marker', o),
  searchAsync: (m, o) => m.searchAsync('web', 'marker', o),
  screen: (m, o) => m.screen('web', o),
  screenAsync: (m, o) => m.screenAsync('web', o),
  wait: (m, o) => m.wait('web', { pattern: 'marker', fromStart: true, ...o }),
  write: (m, o) => m.write('web', 'typed-w\r', o),
  sendKeys: (m, o) => m.sendKeys('web', ['Z', 'Enter'], o),
  resize: (m, o) => m.resize('web', 100, 30, o),
  onData: (m, o, seen) => m.onData('web', (d) => { seen.data += d }, o),
  onExit: (m, o, seen) => m.onExit('web', (info) => { seen.exit = info }, o),
  restart: (m, o) => m.restart('web', o),
  kill: (m, o) => m.kill('web', o),
  killReport: (m, o) => m.killReport('web', o),
  removeJob: (m, o) => m.removeJob('web', o)
}

test('every method that takes a jobId takes the cwd of a name live in several directories', async (t) => {
  const m = manager(t)
  const [a, b] = [tempDir(t), tempDir(t)]
  const inA = m.execute('echo marker-A; exec cat', { name: 'web', cwd: a })
  let inB = m.execute('echo marker-B; exec cat', { name: 'web', cwd: b })
  await waitUntil(() => m.output(inA.jobId).output.includes('marker-A'))
  await waitUntil(() => m.output(inB.jobId).output.includes('marker-B'))

  // Without cwd: each method answers the candidates (id, directory, command), touching none.
  for (const [method, call] of Object.entries(calls)) {
    await assert.rejects(async () => call(m, undefined, {}), (e) => {
      assert.equal(e.code, 'INVALID_ARGUMENT', `${method}: ${e.message}`)
      for (const part of [inA.jobId, inB.jobId, a, b, 'marker-A', 'marker-B']) {
        assert.ok(e.message.includes(part), `${method}: ${part} missing: ${e.message}`)
      }
      return true
    })
  }
  assert.equal(m.status(inA.jobId).status, 'running')
  assert.equal(m.status(inB.jobId).status, 'running')

  // With cwd (relative to this process's directory): b's job each time, a's left alone.
  const cwd = relative(process.cwd(), b)
  const seen = { data: '' }
  const onlyB = (method, text) => {
    assert.ok(text.includes('marker-B') && !text.includes('marker-A'), `${method}: ${text}`)
  }
  for (const [method, call] of Object.entries(calls)) {
    const r = await call(m, { cwd }, seen)
    switch (method) {
      case 'status': case 'statusAsync':
        assert.equal(r.jobId, inB.jobId); break
      case 'output': case 'outputAsync': case 'tail': case 'tailAsync':
        onlyB(method, r.output); break
      case 'search': case 'searchAsync':
        onlyB(method, JSON.stringify(r.matches)); break
      case 'screen': case 'screenAsync':
        onlyB(method, r.rows.join('\n')); break
      case 'wait':
        assert.equal(r.matchedLine, 'marker-B', JSON.stringify(r)); break
      case 'write': case 'sendKeys': {
        const typed = method === 'write' ? 'typed-w' : 'Z'
        await waitUntil(() => m.output(inB.jobId).output.includes(typed), 10_000, `${method} reaches b`)
        assert.ok(!m.output(inA.jobId).output.includes(typed), method)
        break
      }
      case 'resize':
        assert.equal(r, true)
        assert.equal(m.screen(inB.jobId).cols, 100)
        assert.equal(m.screen(inA.jobId).cols, 120)
        break
      case 'onData': case 'onExit':
        break
      case 'restart':
        assert.equal(r.replaces, inB.jobId)
        // The listeners were on the old job: it ended, with its lines.
        await waitUntil(() => seen.exit !== undefined, 10_000, 'onExit of b')
        assert.equal(seen.exit.jobId, inB.jobId)
        onlyB('onData', seen.data)
        inB = r
        break
      case 'kill':
        assert.equal(r.outcome, 'killed')
        assert.equal(m.status(inB.jobId).status, 'killed')
        assert.equal(m.status(inA.jobId).status, 'running')
        break
      case 'killReport':
        // The name in b is now its ended job.
        assert.equal(r.outcome, 'already_terminated'); break
      case 'removeJob':
        await assertCode(() => m.status(inB.jobId), 'JOB_NOT_FOUND'); break
      default:
        assert.fail(method)
    }
  }
  assert.equal(m.status(inA.jobId).status, 'running')

  // A cwd that does not exist, or holds no job of the name: an error that says which.
  await assert.rejects(async () => m.status('web', { cwd: `${b}/not-there` }), (e) => {
    assert.equal(e.code, 'INVALID_JOB_ID')
    assert.match(e.message, /no job is named "web" in .*not-there \(no such directory\)/)
    return true
  })
  const empty = tempDir(t)
  await assert.rejects(async () => m.kill('web', { cwd: empty }), (e) => {
    assert.equal(e.code, 'INVALID_JOB_ID')
    assert.ok(e.message.includes(empty) && !e.message.includes('no such directory'), e.message)
    return true
  })
})
