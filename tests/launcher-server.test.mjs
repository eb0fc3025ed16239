// The launcher in front of the real server binary of the host's platform package
// (npm/<host>/ptyjobs, made by `npm run build:packages:host`), laid out as npm installs it.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  ROOT, VERSION, HOST_TRIPLE, HOST_BINARY, Cleanup, McpClient, cleanEnv, localLayout, runSync,
  runJobThroughMcp, processesWith, sessionMembers, waitUntil
} from './helpers/npm.mjs'

const cleanup = new Cleanup()
let launcher
before(() => {
  assert.ok(existsSync(HOST_BINARY), `${HOST_BINARY} is missing: run npm run build:packages:host (the root build does)`)
  launcher = localLayout(cleanup.dir(), [HOST_TRIPLE])
})
after(() => cleanup.run())

test('ptyjobs --version through the launcher equals the package and workspace version', () => {
  const cargo = readFileSync(join(ROOT, 'Cargo.toml'), 'utf8')
  assert.match(cargo, new RegExp(`\\[workspace\\.package\\][^[]*\\nversion = "${VERSION.replace(/\./g, '\\.')}"`))
  const r = runSync(process.execPath, [launcher, '--version'], { env: cleanEnv() })
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), `ptyjobs ${VERSION}`)
})

test('an MCP round trip through the launcher: initialize, tools/list, execute_command, get_job_output', async () => {
  const child = cleanup.spawn(process.execPath, [launcher], { env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] })
  const client = new McpClient(child)
  const init = await client.initialize(20_000)
  assert.equal(init.serverInfo.name, 'ptyjobs')
  assert.equal(init.serverInfo.version, VERSION)
  const { output } = await runJobThroughMcp(client, 'echo launcher-$((6*7))', 'launcher-42')
  assert.ok(!output.isError)
  child.stdin.end() // EOF: the server shuts down and the launcher mirrors its exit
  const { code, signal } = await child.exited
  assert.deepEqual({ code, signal }, { code: 0, signal: null }, child.stderrText)
})

test('SIGTERM to the launcher reaches the server, which kills its jobs and exits', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const child = cleanup.spawn(process.execPath, [launcher], { env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] })
  const client = new McpClient(child)
  await client.initialize(20_000)
  const marker = `ptyjobs-sigterm-${process.pid}-${Date.now()}`
  // A job with a grandchild that ignores SIGTERM: the server must escalate to SIGKILL.
  const exec = await client.callTool('execute_command', { command: `sh -c 'trap "" TERM; sleep 300' ${marker} & sleep 300; : ${marker}` })
  assert.ok(!exec.isError, JSON.stringify(exec))
  const [{ sid }] = await waitUntil(() => { const p = processesWith(marker); return p.length ? p : null }, 10_000, 'the job to start')
  await waitUntil(() => sessionMembers(sid).length >= 3, 10_000, 'the job\'s processes')
  cleanup.add(() => { for (const pid of sessionMembers(sid)) try { process.kill(pid, 'SIGKILL') } catch (_) {} })

  child.kill('SIGTERM') // the launcher only; the server learns it from the launcher
  const { code, signal } = await child.exited
  // However the server chooses to end on SIGTERM (exit 0, 143, or the signal), the launcher mirrors it.
  assert.ok(code === 0 || code === 143 || signal === 'SIGTERM', `code ${code} signal ${signal}; stderr ${child.stderrText}`)
  await waitUntil(() => sessionMembers(sid).length === 0, 10_000, 'every process of the job to be gone')
})
