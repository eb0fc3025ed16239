// The Node binding controls a job of a `ptyjobs` server process on the same state directory:
// write, sendKeys, resize, screen, wait (input, pattern) and kill go to that server over its
// attach socket, and the effect is checked through the server itself (MCP over stdio). The
// binary is the host package's (npm run build:host) or else the workspace's debug build; the
// binding is the built addon (npm run build:node).
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, HOST_BINARY, Cleanup, McpClient, cleanEnv, waitUntil, structured } from './helpers/npm.mjs'
import { manager } from './helpers/binding.mjs'

const DEBUG = join(ROOT, 'target', 'debug', 'ptyjobs')
const BINARY = existsSync(HOST_BINARY) ? HOST_BINARY : DEBUG
const skip = (process.platform === 'win32' && 'no attach socket on Windows') ||
  (!existsSync(BINARY) && 'no ptyjobs binary: build it (cargo build --bin ptyjobs)')

const cleanup = new Cleanup()
after(() => cleanup.run())

test("a Node manager types into, resizes, waits on and kills a ptyjobs server's job", { skip }, async (t) => {
  const dir = cleanup.dir()
  const child = cleanup.spawn(BINARY, ['--state-dir', dir], { env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] })
  const server = new McpClient(child)
  await server.initialize(20_000)
  const call = async (tool, args) => structured(await server.callTool(tool, args))
  const { job_id: id } = await call('execute_command', { command: 'exec python3 -i -q' })

  const m = manager(t, { stateDir: dir })
  assert.equal(m.status(id).thisServer, false)
  // Input: the server's REPL waits at its prompt (only the server can tell), then answers.
  const asked = await m.wait(id, { input: true, timeoutMs: 20_000 })
  assert.equal(asked.reason, 'input_wanted')
  assert.ok(m.write(id, 'print(6 * 7)\r') > 0)
  const matched = await m.wait(id, { pattern: '^42$', fromStart: true, timeoutMs: 20_000 })
  assert.equal(matched.reason, 'matched')
  await waitUntil(async () => (await call('get_job_screen', { job_id: id })).rows.includes('42'), 10_000, '42 on the server')

  // Keys, encoded by the server for its terminal.
  assert.ok(m.write(id, "print('k' + 'eys')") > 0)
  assert.ok(await m.sendKeys(id, ['Enter']) > 0)
  await waitUntil(() => m.screen(id).rows.includes('keys'), 10_000, 'keys on the live screen')

  // Resize: the server's job has the size.
  assert.equal(m.resize(id, 90, 20), true)
  const screen = await call('get_job_screen', { job_id: id })
  assert.deepEqual([screen.cols, screen.height], [90, 20])

  // Kill, through the server's kill path.
  const report = await m.kill(id)
  assert.equal(report.outcome, 'killed')
  const st = await call('get_job_status', { job_id: id })
  assert.equal(st.status, 'killed')
  assert.equal((await m.kill(id)).outcome, 'already_terminated')
})
