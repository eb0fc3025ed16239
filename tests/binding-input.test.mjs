// The Node binding's input awareness: `waitingForInput`, `echo`, `mode` and `prompt` in the job info,
// and `wait(id, { input: true })` resolving with `input_wanted` (Linux: read from /proc).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { waitUntil } from './helpers/common.mjs'
import { manager } from './helpers/binding.mjs'

const linux = process.platform === 'linux'
const python = (() => {
  try { execFileSync('python3', ['--version']); return true } catch { return false }
})()

test('a password prompt: waitingForInput with echo false, and wait({ input: true })', { skip: !(linux && python) && 'needs Linux and python3' }, async (t) => {
  const m = manager(t)
  const { jobId } = m.execute(`python3 -c "import getpass; p=getpass.getpass(); print('length', len(p))"`)
  const w = await m.wait(jobId, { input: true, timeoutMs: 20_000 })
  assert.equal(w.reason, 'input_wanted')
  assert.equal(w.prompt, 'Password:')
  assert.equal(w.echo, false)
  assert.equal(w.mode, 'line')
  const info = m.status(jobId)
  assert.equal(info.waitingForInput, true)
  assert.equal(info.echo, false)
  assert.equal(info.mode, 'line')
  assert.equal(info.prompt, 'Password:')
  assert.equal(m.list().find((j) => j.jobId === jobId).waitingForInput, true)
  m.write(jobId, 'secret-word\n')
  const done = await m.wait(jobId, { timeoutMs: 20_000 })
  assert.equal(done.status, 'completed')
  assert.equal(done.waitingForInput, false)
  assert.equal(done.prompt, undefined)
  assert.ok(m.output(jobId).output.includes('length 11'))
  assert.ok(!m.output(jobId).output.includes('secret-word'))
})

test('read -p waits with echo on; sleep never waits', { skip: !linux && 'needs Linux' }, async (t) => {
  const m = manager(t)
  const asking = m.execute("read -p 'Continue? ' x; echo answer=$x").jobId
  const sleeping = m.execute('sleep 100').jobId
  await waitUntil(() => m.status(asking).waitingForInput, 10_000, 'read -p to wait for input')
  assert.equal(m.status(asking).echo, true)
  assert.equal(m.status(asking).prompt, 'Continue?')
  for (let i = 0; i < 6; i++) {
    assert.equal(m.status(sleeping).waitingForInput, false)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  const w = await m.wait(sleeping, { input: true, timeoutMs: 500 })
  assert.equal(w.reason, 'timeout')
})

test('a raw-mode menu: mode raw, echo true (no password); a redrawn question moves the read back', { skip: !(linux && python) && 'needs Linux and python3' }, async (t) => {
  const m = manager(t)
  const { jobId } = m.execute(`python3 '${fileURLToPath(new URL('./fixtures/raw_menu.py', import.meta.url))}'`)
  const w = await m.wait(jobId, { input: true, timeoutMs: 20_000 })
  assert.equal(w.reason, 'input_wanted')
  assert.equal(w.mode, 'raw')
  assert.equal(w.echo, true)
  assert.equal(w.prompt, 'Pick one:\n> apple\npear')
  assert.equal(m.status(jobId).mode, 'raw')
  const seen = m.output(jobId, { offset: 0 })
  m.write(jobId, '\r')
  await waitUntil(() => m.screen(jobId).rows[2].startsWith('Name?'), 10_000, 'the next question')
  const next = m.output(jobId, { offset: seen.nextOffset })
  assert.equal(next.rewrittenFrom, 1)
  assert.equal(next.firstLine, 1)
  assert.equal(next.output, 'Picked: apple\nName? ')
})
