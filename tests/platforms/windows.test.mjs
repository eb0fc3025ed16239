// The Windows server (target x86_64-pc-windows-gnu, built by `npm run build:windows`) under
// Wine: one MCP session over its stdio, as a Windows MCP client would hold it, then a second
// server on the same state directory. Jobs run under ConPTY in Job Objects.
//
// Wine is a stand-in for Windows: what it cannot show (resize, real Ctrl-C delivery, the
// console host of a given Windows build) is tested on real Windows in the release workflow.
// Wine 8 lacks ProcessPrng, which Rust's std needs (rust-lang/rust#128066): a shim DLL built
// here from tests/wine/bcryptprimitives.c sits next to the .exe in a temporary directory.
// wineserver itself crashes now and then (~4 % of runs measured): a failed run is retried
// once, from a fresh prefix, and the first failure is printed.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { ROOT, Cleanup, McpClient, processesWith, runAsync, runSync, structured, waitUntil } from '../helpers/npm.mjs'

const EXE = process.env.PTYJOBS_WINDOWS_EXE || join(ROOT, 'target', 'x86_64-pc-windows-gnu', 'release', 'ptyjobs.exe')
const SHIM = join(ROOT, 'tests', 'wine', 'bcryptprimitives.c')
const MINGW = 'x86_64-w64-mingw32-gcc'

function have (cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).status === 0
}

const skip = !have('wine')
  ? 'wine is not installed (apt-get install wine wine64 gcc-mingw-w64-x86-64; see docs/WINDOWS.md)'
  : false
if (skip) console.log(`# skipping the Windows tests: ${skip}`)

const cleanup = new Cleanup()
after(() => cleanup.run())

/** A fresh Wine prefix and a directory holding ptyjobs.exe and the ProcessPrng shim. */
function setUp () {
  const dir = cleanup.dir('ptyjobs-wine-')
  const exe = join(dir, 'ptyjobs.exe')
  copyFileSync(EXE, exe)
  const cc = runSync(MINGW, ['-shared', '-O2', '-s', '-o', join(dir, 'bcryptprimitives.dll'), SHIM])
  assert.equal(cc.status, 0, `building the ProcessPrng shim: ${cc.stderr}`)
  const env = {
    ...process.env,
    WINEPREFIX: join(dir, 'prefix'),
    WINEDEBUG: '-all',
    // No display: Wine runs console programs headless.
    DISPLAY: '',
    WAYLAND_DISPLAY: ''
  }
  cleanup.add(() => spawnSync('wineserver', ['-k'], { env, timeout: 30_000 }))
  return { dir, exe, env }
}

/** Starts the server under Wine and initializes an MCP session with it. */
async function startServer (wine) {
  const child = cleanup.spawn('wine', [wine.exe], { env: wine.env, stdio: ['pipe', 'pipe', 'pipe'] })
  const client = new McpClient(child)
  // The first start creates the prefix: slow.
  const init = await client.initialize(180_000)
  assert.equal(init.serverInfo.name, 'ptyjobs')
  return { child, client }
}

/** Text as a person reads it: no escape sequences or other control characters. */
function assertClean (text) {
  // eslint-disable-next-line no-control-regex
  assert.doesNotMatch(text, /[\x00-\x08\x0b-\x1f\x7f]/, `control characters in ${JSON.stringify(text)}`)
  assert.doesNotMatch(text, /\[\?(25|9001|1004)[hl]/, `ConPTY start-up noise in ${JSON.stringify(text)}`)
}

async function status (client, jobId) {
  return structured(await client.callTool('get_job_status', { job_id: jobId }))
}

async function output (client, jobId) {
  return structured(await client.callTool('get_job_output', { job_id: jobId })).output
}

async function waitFinal (client, jobId, ms = 60_000) {
  return waitUntil(async () => {
    const s = await status(client, jobId)
    return s.status !== 'running' && s
  }, ms, `job ${jobId} to end`)
}

async function scenario () {
  const wine = setUp()
  let { child, client } = await startServer(wine)

  // A command's output comes back as clean text: no ConPTY start-up sequences.
  const echo = structured(await client.callTool('execute_command', { command: 'echo hello', wait: true }))
  const echoed = await waitFinal(client, echo.job_id)
  assert.equal(echoed.status, 'completed', JSON.stringify(echoed))
  assert.equal(echoed.exit_code, 0)
  const hello = await output(client, echo.job_id)
  assert.equal(hello.trim(), 'hello')
  assertClean(hello)

  // The job environment is the same policy as on Unix: a capable terminal, no pager, the
  // editor guard and the job's marker (cmd.exe leaves an unset %VAR% as it is).
  const envJob = structured(await client.callTool('execute_command', { command: 'echo [%TERM%^|%COLORTERM%^|%PAGER%^|%GIT_PAGER%^|%PTYJOBS_JOB_ID%]', wait: true }))
  await waitFinal(client, envJob.job_id)
  const envLine = await output(client, envJob.job_id)
  assert.match(envLine, new RegExp(`\\[xterm-256color\\|truecolor\\|cat\\|cat\\|${envJob.job_id}\\]`), envLine)

  // A non-zero exit is a failed job with its code.
  const three = structured(await client.callTool('execute_command', { command: 'exit /b 3', wait: true }))
  const failed = await waitFinal(client, three.job_id)
  assert.equal(failed.status, 'failed', JSON.stringify(failed))
  assert.equal(failed.exit_code, 3)

  // A prompt answered through interact_with_job: the newline it appends is typed as Enter
  // (\r on a console). `call` expands %name% once more, after set /p has set it.
  const ask = structured(await client.callTool('execute_command', { command: 'set /p name=Name? & call echo hi %name%' }))
  await waitUntil(async () => (await output(client, ask.job_id)).includes('Name?'), 60_000, 'the prompt')
  const answer = structured(await client.callTool('interact_with_job', { job_id: ask.job_id, input: 'world', wait_ms: 5000 }))
  assert.ok(answer.bytes_written > 0, JSON.stringify(answer))
  const asked = await waitFinal(client, ask.job_id)
  assert.equal(asked.status, 'completed', JSON.stringify(asked))
  const dialogue = await output(client, ask.job_id)
  assert.match(dialogue, /^Name\? ?world$/m)
  assert.match(dialogue, /^hi world$/m)
  assertClean(dialogue)

  // Names are keys here too: the check and the start hold the state directory's names.lock
  // (LockFileEx); a second ensure of the running job answers it, and every tool takes the name.
  const pinger = { command: 'ping -n 120 127.0.0.1', name: 'pinger', ensure: true }
  const first = structured(await client.callTool('execute_command', pinger))
  const reused = structured(await client.callTool('execute_command', pinger))
  assert.equal(reused.reused, true, JSON.stringify(reused))
  assert.equal(reused.job_id, first.job_id)
  assert.equal((await status(client, 'pinger')).job_id, first.job_id)
  const taken = await client.callTool('execute_command', { command: 'echo other', name: 'pinger' })
  assert.ok(taken.isError, JSON.stringify(taken))
  const pingerKilled = structured(await client.callTool('kill_job', { job_id: 'pinger' }))
  assert.equal(pingerKilled.status, 'killed', JSON.stringify(pingerKilled))
  // Kept jobs are not offered on Windows: a clear error, and nothing starts.
  const kept = await client.callTool('execute_command', { command: 'echo kept', keep: true })
  assert.ok(kept.isError, JSON.stringify(kept))
  assert.match(JSON.stringify(kept.content), /keep|kept/i, JSON.stringify(kept))

  // A long runner with a child of its own (cmd → cmd → ping): kill_job ends the whole Job
  // Object, and nothing of it is left.
  const marker = `-n ${4000 + Math.floor(Math.random() * 5000)} 127.0.0.1`
  const long = structured(await client.callTool('execute_command', { command: `cmd /d /c ping ${marker}` }))
  await waitUntil(() => processesWith(marker).some((p) => /(^|\\)ping(\.exe)? /i.test(p.cmdline)), 60_000, 'ping.exe to run')
  await waitUntil(async () => (await output(client, long.job_id)).includes('Reply from'), 60_000, 'ping\'s replies')
  assert.ok(processesWith(marker).length >= 2, `the job's tree: ${JSON.stringify(processesWith(marker))}`)
  assert.equal((await status(client, long.job_id)).status, 'running')
  // Wine's ResizePseudoConsole answers E_NOTIMPL: the resize is still taken (the emulated
  // screen), not an error. (That the program sees the new size shows only on real Windows.)
  const resized = await client.callTool('resize_job', { job_id: long.job_id, cols: 100, rows: 30 })
  assert.ok(!resized.isError, JSON.stringify(resized))
  const screen = structured(await client.callTool('get_job_screen', { job_id: long.job_id }))
  assert.equal(screen.cols, 100, JSON.stringify(screen))
  const killed = structured(await client.callTool('kill_job', { job_id: long.job_id }))
  assert.equal(killed.status, 'killed', JSON.stringify(killed))
  assert.deepEqual(killed.survivors ?? [], [])
  const ended = await waitFinal(client, long.job_id)
  assert.equal(ended.status, 'killed', JSON.stringify(ended))
  assert.equal(ended.exit_code, 128 + 15, 'TERM ends the Job Object with exit code 128 + 15')
  await waitUntil(() => processesWith(marker).length === 0, 30_000, `the job's processes to be gone: ${JSON.stringify(processesWith(marker))}`)

  // C-c is the byte 0x03 through the console, which interrupts the program.
  const stop = structured(await client.callTool('execute_command', { command: 'ping -n 1000 127.0.0.1' }))
  await waitUntil(async () => (await output(client, stop.job_id)).includes('Reply from'), 60_000, 'ping\'s replies')
  structured(await client.callTool('interact_with_job', { job_id: stop.job_id, keys: ['C-c'], wait_ms: 2000 }))
  const stopped = await waitFinal(client, stop.job_id, 30_000)
  assert.notEqual(stopped.status, 'killed', JSON.stringify(stopped))

  // list_jobs knows all four.
  const listed = structured(await client.callTool('list_jobs', {})).jobs
  const byId = new Map(listed.map((j) => [j.job_id, j.status]))
  assert.deepEqual(
    [echo.job_id, three.job_id, ask.job_id, long.job_id].map((id) => byId.get(id)),
    ['completed', 'failed', 'completed', 'killed'],
    JSON.stringify(listed)
  )

  // Stdin closes: the server kills its running jobs and exits; a new one on the same state
  // directory (%LOCALAPPDATA%\ptyjobs in the prefix) sees the old jobs and their output.
  const marker2 = `-n ${4000 + Math.floor(Math.random() * 5000)} 127.0.0.2`
  const left = structured(await client.callTool('execute_command', { command: `ping ${marker2}` }))
  await waitUntil(() => processesWith(marker2).some((p) => /(^|\\)ping(\.exe)? /i.test(p.cmdline)), 60_000, 'the last ping to run')
  child.stdin.end()
  const { code } = await child.exited
  assert.equal(code, 0, child.stderrText)
  await waitUntil(() => processesWith(marker2).length === 0, 30_000, `the last job's processes to be gone: ${JSON.stringify(processesWith(marker2))}`)
  const users = join(wine.env.WINEPREFIX, 'drive_c', 'users')
  const stateDirs = readdirSync(users).map((u) => join(users, u, 'AppData', 'Local', 'ptyjobs', 'jobs')).filter((d) => existsSync(d))
  assert.equal(stateDirs.length, 1, 'the state directory is %LOCALAPPDATA%\\ptyjobs')
  assert.ok(existsSync(join(stateDirs[0], echo.job_id, 'meta.json')), `no record of ${echo.job_id} in ${stateDirs[0]}`)
  ;({ child, client } = await startServer(wine))
  const again = structured(await client.callTool('list_jobs', {})).jobs
  const seen = new Map(again.map((j) => [j.job_id, j]))
  assert.equal(seen.get(echo.job_id)?.status, 'completed', JSON.stringify(again))
  assert.equal(seen.get(three.job_id)?.exit_code, 3)
  assert.equal(seen.get(long.job_id)?.status, 'killed')
  assert.equal(seen.get(left.job_id)?.status, 'killed', JSON.stringify(again))
  assert.equal(seen.get(echo.job_id)?.this_server, false)
  assert.equal((await output(client, echo.job_id)).trim(), 'hello')
  child.stdin.end()
  assert.equal((await child.exited).code, 0, child.stderrText)
  // stdout carried nothing but JSON-RPC (McpClient fails on any other line).

  // A policy is enforced on Linux only: elsewhere the server refuses to start with one (fail
  // closed), before it reads the file.
  const policy = await runAsync('wine', [wine.exe, '--policy', 'C:\\policy.toml'], { env: wine.env })
  assert.notEqual(policy.status, 0, policy.stderr)
  assert.match(policy.stderr, /enforced only on Linux/, policy.stderr)

  // The state directory is the user's alone; one others may use is refused (the server then
  // keeps its jobs in memory and says so on stderr). Wine 8 keeps no DACL: it reads one back
  // from the Unix mode and owner, so a planted directory is made from this side. (The exact
  // DACL ptyjobs sets shows on real Windows only; the engine's unit tests check the one built.)
  const state = dirname(stateDirs[0])
  assert.equal(statSync(state).mode & 0o007, 0, 'the DACL ptyjobs set leaves "other" no mode bit')
  await assertRefused(wine, () => chmodSync(state, 0o755), /grants S-1-1-0 access/, echo.job_id)
  if (process.getuid?.() === 0) {
    // Owned by another Unix user: Wine reports the owner as ANONYMOUS LOGON.
    await assertRefused(wine, () => { chmodSync(state, 0o700); chownSync(state, 65534, 65534) }, /owned by S-1-5-7, not by this user/, echo.job_id)
  } else {
    console.log('# not root: the foreign-owner case is checked by the engine\'s unit tests only')
  }
}

/** After `plant` spoils the state directory, a server refuses it and keeps jobs in memory. */
async function assertRefused (wine, plant, why, oldJob) {
  plant()
  const { child, client } = await startServer(wine)
  await waitUntil(() => /cannot use the state directory .*refusing/.test(child.stderrText), 60_000, `the refusal on stderr: ${child.stderrText}`)
  assert.match(child.stderrText, why)
  assert.match(child.stderrText, /jobs are kept in memory only/)
  const jobs = structured(await client.callTool('list_jobs', {})).jobs
  assert.ok(!jobs.some((j) => j.job_id === oldJob), `the refused directory's jobs are not read: ${JSON.stringify(jobs)}`)
  child.stdin.end()
  assert.equal((await child.exited).code, 0, child.stderrText)
}

test('the Windows server under Wine: echo, exit code, a prompt, a killed tree, list, restart, a state directory others may use refused', { skip, timeout: 15 * 60_000 }, async () => {
  assert.ok(existsSync(EXE), `${EXE} is missing: run npm run build:windows (npm run build does)`)
  assert.ok(have(MINGW), `${MINGW} is missing: apt-get install gcc-mingw-w64-x86-64`)
  try {
    await scenario()
  } catch (first) {
    // wineserver crashes now and then; one more run from a fresh prefix decides.
    console.log(`# the Windows run under Wine failed once; retrying from a fresh prefix: ${first.stack || first}`)
    await cleanup.run()
    await scenario()
  }
})

test('the engine\'s unit tests, built for Windows, pass under Wine (sys/windows: quoting, typed Enter, the state directory)', { skip, timeout: 15 * 60_000 }, async () => {
  assert.ok(have(MINGW), `${MINGW} is missing: apt-get install gcc-mingw-w64-x86-64`)
  const build = runSync('cargo', ['test', '--target', 'x86_64-pc-windows-gnu', '-p', 'ptyjobs-engine', '--lib', '--no-run', '--message-format', 'json'], { cwd: ROOT, timeout: 14 * 60_000, maxBuffer: 64 << 20 })
  assert.equal(build.status, 0, build.stderr.slice(-4000))
  const exe = build.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l))
    .find((m) => m.reason === 'compiler-artifact' && m.target?.name === 'ptyjobs_engine' && m.profile?.test)?.executable
  assert.ok(exe, 'no test executable in cargo\'s output')
  const run = async () => {
    const wine = setUp()
    const dir = join(wine.dir, 'unit')
    mkdirSync(dir)
    copyFileSync(exe, join(dir, 'engine-tests.exe'))
    copyFileSync(join(wine.dir, 'bcryptprimitives.dll'), join(dir, 'bcryptprimitives.dll'))
    const r = await runAsync('wine', [join(dir, 'engine-tests.exe')], { env: wine.env, cwd: dir }, 5 * 60_000)
    assert.equal(r.status, 0, `${r.stdout.slice(-4000)}\n${r.stderr.slice(-2000)}`)
    assert.match(r.stdout, /test result: ok\. [1-9]\d* passed; 0 failed/)
    assert.match(r.stdout, /sys::windows::fs::tests::\S+ \.\.\. ok/)
    assert.match(r.stdout, /sys::windows::acl::tests::\S+ \.\.\. ok/)
  }
  try {
    await run()
  } catch (first) {
    console.log(`# the engine's tests under Wine failed once; retrying from a fresh prefix: ${first.stack || first}`)
    await cleanup.run()
    await run()
  }
})
