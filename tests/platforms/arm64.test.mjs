// The Linux arm64 server, run: built here for aarch64-unknown-linux-musl (static, so qemu
// needs no arm64 sysroot) through cargo-zigbuild, in the dev profile without debug info (a
// release build of a second target would cost minutes of the test command's budget; without
// debug info the cold build took 158 s of CPU instead of ~258 s, and 352 MB of target/ instead
// of 763 MB), then started under
// qemu-user and spoken to over its stdio: an MCP handshake, `echo hello` under its PTY, and
// a sleeping job killed with its process gone.
//
// Under qemu-user the server's own instructions are arm64, emulated; the syscalls are the
// host kernel's, and the jobs (`/bin/sh` and what it starts) are the host's own binaries run
// natively (qemu-user's execve runs an x86-64 program as it is). So this shows the arm64
// build of the server, its PTY, spawn, reactor and kill paths working; an arm64 /bin/sh is
// shown only on an arm64 machine.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { ROOT, Cleanup, McpClient, platform, processesWith, structured, waitUntil } from '../helpers/npm.mjs'
import { checkBinary } from '../../scripts/binfmt.mjs'

const TARGET = 'aarch64-unknown-linux-musl'

function capture (cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  return r.status === 0 ? r.stdout : null
}

/** The qemu-user binary for arm64, or null. */
function qemu () {
  for (const cmd of ['qemu-aarch64-static', 'qemu-aarch64']) {
    if (spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0) return cmd
  }
  return null
}

/** Why the test cannot run here, or null. */
function missing () {
  if (process.platform !== 'linux' || process.arch !== 'x64') return `runs on Linux x64 only (this is ${process.platform}-${process.arch})`
  if (!qemu()) return 'qemu-user is not installed (apt-get install qemu-user-static; .ci/run installs it)'
  const installed = capture('rustup', ['target', 'list', '--installed'])
  if (installed === null) return 'rustup is not available'
  if (!installed.split('\n').includes(TARGET)) return `the Rust target ${TARGET} is not installed (rustup target add ${TARGET})`
  if (spawnSync('cargo', ['zigbuild', '--help'], { stdio: 'ignore' }).status !== 0) return 'cargo-zigbuild is not installed (pip install ziglang cargo-zigbuild)'
  return null
}

const skip = missing() || false
if (skip) console.log(`# skipping the arm64 test: ${skip}`)

const cleanup = new Cleanup()
after(() => cleanup.run())

test('the linux-arm64 (musl) server runs under qemu: handshake, echo under its PTY, a killed job', { skip, timeout: 15 * 60_000 }, async (t) => {
  const started = Date.now()
  const build = spawnSync('cargo', ['zigbuild', '--target', TARGET, '-p', 'ptyjobs-mcp', '--bin', 'ptyjobs', '--message-format', 'json'],
    { cwd: ROOT, encoding: 'utf8', maxBuffer: 256 << 20, env: { ...process.env, CARGO_PROFILE_DEV_DEBUG: '0' } })
  assert.equal(build.status, 0, `cargo zigbuild --target ${TARGET} failed:\n${(build.stderr || '').slice(-8000)}`)
  t.diagnostic(`cargo zigbuild --target ${TARGET} (dev, no debug info): ${((Date.now() - started) / 1000).toFixed(0)} s`)
  const exe = build.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
    .find((m) => m.reason === 'compiler-artifact' && m.target?.name === 'ptyjobs' && m.executable)?.executable
  assert.ok(exe, 'no ptyjobs executable in cargo\'s output')
  const got = checkBinary(exe, platform.TARGETS['linux-arm64-musl'], 'server')
  assert.deepEqual([got.format, got.cpu], ['elf', 'arm64'])

  const state = cleanup.dir('ptyjobs-arm64-')
  const child = cleanup.spawn(qemu(), [exe], {
    env: { ...process.env, PTYJOBS_STATE_DIR: join(state, 'state'), PTYJOBS_KILL_GRACE_MS: '2000' },
    stdio: ['pipe', 'pipe', 'pipe']
  })
  const client = new McpClient(child)
  const init = await client.initialize(120_000)
  assert.equal(init.serverInfo.name, 'ptyjobs')

  // echo under the server's PTY: completed, exit 0, clean text.
  const echo = structured(await client.callTool('execute_command', { command: 'echo hello', wait: true }, 120_000))
  const done = await waitUntil(async () => {
    const s = structured(await client.callTool('get_job_status', { job_id: echo.job_id }))
    return s.status !== 'running' && s
  }, 60_000, 'echo to end')
  assert.equal(done.status, 'completed', JSON.stringify(done))
  assert.equal(done.exit_code, 0)
  const out = structured(await client.callTool('get_job_output', { job_id: echo.job_id })).output
  assert.equal(out.trim(), 'hello', JSON.stringify(out))
  // eslint-disable-next-line no-control-regex
  assert.doesNotMatch(out, /[\x00-\x08\x0b-\x1f\x7f]/)

  // A sleeping job (a shell with a child of its own) is killed: status killed, nothing left.
  const marker = `${3000 + Math.floor(Math.random() * 5000)}`
  const sleeper = structured(await client.callTool('execute_command', { command: `sleep ${marker} & sleep ${marker}; wait` }))
  await waitUntil(() => processesWith(`sleep ${marker}`).length >= 2, 60_000, 'both sleeps to run')
  const killed = structured(await client.callTool('kill_job', { job_id: sleeper.job_id }, 60_000))
  assert.equal(killed.status, 'killed', JSON.stringify(killed))
  assert.deepEqual(killed.survivors ?? [], [], JSON.stringify(killed))
  await waitUntil(() => processesWith(`sleep ${marker}`).length === 0, 30_000, `the job's processes to be gone: ${JSON.stringify(processesWith(`sleep ${marker}`))}`)
  const listed = structured(await client.callTool('list_jobs', {})).jobs
  assert.equal(listed.find((j) => j.job_id === sleeper.job_id)?.status, 'killed', JSON.stringify(listed))

  child.stdin.end()
  assert.equal((await child.exited).code, 0, child.stderrText)
})
