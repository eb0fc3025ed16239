// `npx -y ptyjobs wait …`: the launcher in front of the real binary passes the wait's
// arguments, its one JSON line, its exit codes (0, 2, 124) and a SIGTERM through. The binary is
// the host package's (npm run build:host) or else the workspace's debug build.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, NPM_DIR, HOST_BINARY, Cleanup, McpClient, cleanEnv, runAsync, waitUntil, processesWith, structured } from './helpers/npm.mjs'

const LAUNCHER = join(NPM_DIR, 'ptyjobs', 'bin', 'ptyjobs.js')
const DEBUG = join(ROOT, 'target', 'debug', process.platform === 'win32' ? 'ptyjobs.exe' : 'ptyjobs')
const BINARY = existsSync(HOST_BINARY) ? HOST_BINARY : DEBUG
const skip = !existsSync(BINARY) && `no ptyjobs binary: build it (cargo build --bin ptyjobs)`

const cleanup = new Cleanup()
after(() => cleanup.run())

/** A server on a fresh state directory, spoken to over stdio. */
async function server () {
  const dir = cleanup.dir()
  const child = cleanup.spawn(BINARY, ['--state-dir', dir], { env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] })
  const client = new McpClient(child)
  await client.initialize(20_000)
  const start = async (command) => structured(await client.callTool('execute_command', { command })).job_id
  return { dir, start }
}

/** `ptyjobs --state-dir <dir> wait <args>` through the launcher. */
function wait (dir, args) {
  return runAsync(process.execPath, [LAUNCHER, '--state-dir', dir, 'wait', ...args], { env: cleanEnv({ PTYJOBS_BINARY: BINARY }) }, 60_000)
}

test('wait through the launcher: the JSON line and the exit codes 0, 2 and 124', { skip }, async () => {
  const { dir, start } = await server()
  const ended = await start('echo hi; exit 3')
  let r = await wait(dir, [ended, '--exit', '--timeout', '30'])
  assert.equal(r.status, 0, r.stderr)
  const answer = JSON.parse(r.stdout)
  assert.equal(answer.reason, 'exited')
  assert.equal(answer.exit_code, 3)
  assert.deepEqual(answer.last_lines, ['hi'])

  r = await wait(dir, ['0123abcd'])
  assert.equal(r.status, 2)
  assert.equal(r.stdout, '')
  assert.match(r.stderr, /^ptyjobs: no job id starts with "0123abcd", and no job is named "0123abcd"/)

  const sleeping = await start('sleep 300')
  r = await wait(dir, [sleeping, '--pattern', 'never', '--timeout', '0.3'])
  assert.equal(r.status, 124, r.stderr)
  assert.equal(JSON.parse(r.stdout).reason, 'timeout')
})

test('SIGTERM to the launcher ends the wait and leaves no process', { skip: skip || (process.platform !== 'linux' && 'reads /proc') }, async () => {
  const { dir, start } = await server()
  const id = await start('sleep 300')
  const child = cleanup.spawn(process.execPath, [LAUNCHER, '--state-dir', dir, 'wait', id, '--pattern', 'never'], {
    env: cleanEnv({ PTYJOBS_BINARY: BINARY }), stdio: ['ignore', 'pipe', 'pipe']
  })
  // The wait itself (not the launcher, not the job) sleeping between two looks.
  const waiting = () => processesWith(`wait ${id}`).filter((p) => p.pid !== child.pid && p.cmdline.startsWith(BINARY))
  const [{ pid }] = await waitUntil(() => {
    const found = waiting()
    return found.length && readFileSync(`/proc/${found[0].pid}/wchan`, 'utf8').includes('sleep') ? found : null
  }, 20_000, 'the wait to run')
  child.kill('SIGTERM') // the launcher only: it forwards the signal
  const { code, signal } = await child.exited
  assert.ok(signal === 'SIGTERM' || code === 143, `code ${code} signal ${signal}; stderr ${child.stderrText}`)
  assert.equal(existsSync(`/proc/${pid}`), false, 'the wait is gone')
})
