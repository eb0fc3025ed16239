// The binding's `policy` option (docs/POLICY.md): every job runs in the kernel sandbox of a
// profile, the info says which, a job may not name a profile the file does not allow, and a bad
// file throws at construction. Linux only; the sandbox's trampoline is the `ptyjobs` binary
// that `cargo test` builds (target/debug), given as `sandboxProgram` (a published package
// ships it beside the addon).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, writeFileSync, realpathSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { manager, assertCode, tempDir, JobManager } from './helpers/binding.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const program = join(process.env.CARGO_TARGET_DIR || join(root, 'target'), 'debug', 'ptyjobs')
const skip = process.platform !== 'linux'
  ? 'a policy is enforced on Linux only'
  : !existsSync(program) ? `no ${program}: run cargo build -p ptyjobs-mcp first` : false

function world (t) {
  const dir = realpathSync(tempDir(t, 'ptyjobs-policy-'))
  const proj = join(dir, 'proj')
  const out = join(dir, 'out')
  mkdirSync(proj)
  mkdirSync(out)
  const policy = join(dir, 'policy.toml')
  writeFileSync(policy, `agent_profiles = ["dev"]\n[profiles.default]\nwrite = [${JSON.stringify(proj)}]\n` +
    `[profiles.dev]\nwrite = [${JSON.stringify(proj)}]\nnetwork = { bind = [5173] }\n` +
    `[profiles.open]\nwrite = [${JSON.stringify(proj)}]\nnetwork = "on"\n`)
  return { dir, proj, out, policy }
}

test('a job under the policy cannot write outside its roots, and its info says so', { skip }, async (t) => {
  const w = world(t)
  const m = manager(t, { policy: w.policy, sandboxProgram: program })
  const job = m.execute(`echo x > ${w.out}/no; echo y > ${w.proj}/yes; echo "$PTYJOBS_PROFILE"`)
  assert.equal(job.policy.profile, 'default')
  assert.ok(job.policy.enforced.some((e) => e.includes('writes, deletes and renames only under')))
  await m.wait(job.jobId)
  assert.ok(!existsSync(join(w.out, 'no')), 'the write outside the roots was refused')
  assert.ok(existsSync(join(w.proj, 'yes')), 'the write inside a root worked')
  assert.match(m.output(job.jobId).output, /default$/)
  // The same command without a policy writes there: the test above tests something.
  const plain = manager(t)
  const free = plain.execute(`echo x > ${w.out}/no`)
  assert.equal(free.policy, undefined)
  await plain.wait(free.jobId)
  assert.ok(existsSync(join(w.out, 'no')))
})

test('a job may name only default and agent_profiles', { skip }, async (t) => {
  const w = world(t)
  const m = manager(t, { policy: w.policy, sandboxProgram: program })
  assert.equal(m.execute('true', { profile: 'dev' }).policy.profile, 'dev')
  await assertCode(() => m.execute('true', { profile: 'open' }), 'INVALID_ARGUMENT')
})

test('a bad policy file throws at construction, naming the line and the key', { skip }, async (t) => {
  const w = world(t)
  writeFileSync(w.policy, '[profiles.default]\nwrite = []\nnetwrk = "on"\n')
  assert.throws(() => new JobManager({ policy: w.policy, sandboxProgram: program }), (e) => {
    assert.equal(e.code, 'INVALID_ARGUMENT')
    assert.match(e.message, /line 3/)
    assert.match(e.message, /netwrk/)
    return true
  })
})

test('calls the sandbox refused are counted in the job info, with a hint naming the key', { skip }, async (t) => {
  const w = world(t)
  const m = manager(t, { policy: w.policy, sandboxProgram: program })
  const udp = "import socket\nfor _ in range(2):\n  try: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n  except OSError: pass"
  const job = m.execute(`/usr/bin/python3 -c '${udp}'`)
  await m.wait(job.jobId)
  const policy = m.status(job.jobId).policy
  const refused = policy.refused.find((r) => r.syscall === 'socket(AF_INET, SOCK_DGRAM)')
  assert.ok(refused, JSON.stringify(policy))
  assert.equal(refused.command, 'python3')
  assert.equal(refused.count, 2)
  assert.ok(policy.hints.some((h) => h.includes('network = "on" in [profiles.default]')), JSON.stringify(policy))
})
