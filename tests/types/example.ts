// A small program against the binding's typings (crates/node/index.d.ts), checked with
// `tsc --noEmit` by tests/binding-process.test.mjs. It is type-checked, never run.
import { JobManager } from '../../crates/node/index.js'
import type { JobInfo, JobStatus, KillReport, KillResult, Output, ScreenSnapshot, SearchResult, WaitOptions, WaitReason, WaitResult } from '../../crates/node/index.js'

async function main (): Promise<void> {
  const jobs = new JobManager({ maxJobs: 4, transcriptBytes: 1 << 20, killGraceMs: 500, cols: 100, rows: 30, shell: '/bin/sh', maxWaitMs: 120_000 })
  const info: JobInfo = jobs.execute('npm test -- --watch', { cwd: '.', env: { CI: '1' }, cols: 120, rows: 40, timeoutMs: 60_000, name: 'watcher' })
  const id: string = info.jobId
  const pid: number = info.pid
  const status: JobStatus = info.status
  const code: number | undefined = info.exitCode
  const signal: string | undefined = info.signal
  const started: Date = new Date(info.started)

  jobs.onData(id, (text: string) => { process.stdout.write(text) })
  jobs.onExit(id, (done: JobInfo) => { console.log(done.exitCode, done.signal, done.status) })

  const out: Output = jobs.output(id, { offset: 0, limit: 100 })
  const next: number = out.nextOffset
  const last: string = jobs.tail(id, 20).output
  const accepted: number = jobs.write(id, 'q') + jobs.write(id, Buffer.from('\r'))
  const resized: boolean = jobs.resize(id, 80, 24)
  const all: JobInfo[] = jobs.list()
  const waited: JobInfo = await jobs.wait(id, { timeoutMs: 5_000 })
  const ended: JobInfo = await jobs.wait(id)

  // agent ergonomics: waits with a condition, the screen, keys, search, byte budgets
  const ready: WaitResult = await jobs.wait(id, { pattern: 'Tests: \\d+ passed', fromStart: true, timeoutMs: 30_000 })
  const why: WaitReason = ready.reason
  const line: number | undefined = ready.lineNumber
  const matched: string | undefined = ready.matchedLine
  if (ready.capped || why === 'port_open' || ready.info.status === 'running') console.log(ready.tail.output, ready.waitedMs)
  const quiet: WaitResult = await jobs.wait(id, { idleMs: 500 })
  const listening: WaitResult = await jobs.wait(id, { port: 8080, timeoutMs: 10_000 })
  const options: WaitOptions = Math.random() > 0.5 ? { pattern: 'x' } : { timeoutMs: 1 }
  const either: JobInfo | WaitResult = await jobs.wait(id, options)
  const screen: ScreenSnapshot = jobs.screen(id)
  const rows: string[] = screen.rows
  const cursor: [number, number] = [screen.cursorRow, screen.cursorCol]
  const fullScreen: boolean = screen.alternateScreen
  const title: string | undefined = screen.title
  const pressed: number = await jobs.sendKeys(id, ['q', 'C-c', 'Up', 'Enter', 'F5'])
  const found: SearchResult = jobs.search(id, '(?i)error|panic', { context: 2, maxMatches: 10 })
  const firstHit: number | undefined = found.matches[0]?.line
  const around: string[] = found.matches.flatMap((m) => [...m.before, m.text, ...m.after])
  const budget: Output = jobs.output(id, { offset: out.nextOffset, limit: 100, maxBytes: 4096 })
  const skipped: number = budget.omittedLines + budget.omittedBytes + budget.bytes + budget.finalLines
  const lastLines: Output = jobs.tail(id, 20, { maxBytes: 2048 })
  console.log(ended, quiet, listening, either, rows, cursor, fullScreen, title, pressed, firstHit, around, skipped, lastLines, line, matched)

  // persistence: a state directory, retention, jobs of earlier runs, forgetting a job
  const kept = new JobManager({ stateDir: '/tmp/ptyjobs-state', persist: true, keepJobs: 100, keepDays: 0.5, keepBytes: 1 << 30, jobLogBytes: 100 << 20 })
  const mine: boolean = kept.status(id).thisServer
  const earlier: JobInfo[] = kept.list().filter((j) => !j.thisServer)
  const forgotten: void = kept.removeJob(earlier[0]?.jobId ?? id)
  console.log(mine, forgotten)
  // a name live in several directories: the cwd option picks one, on every method
  const inB: JobInfo = kept.status('web', { cwd: '../b' })
  const bTail: Output = await kept.tailAsync('web', 5, { cwd: '../b', maxBytes: 1024 })
  const bWait: WaitResult = await kept.wait('web', { pattern: 'ready', cwd: '../b' })
  kept.write('web', 'y\r', { cwd: '../b' })
  kept.onExit('web', (info: JobInfo) => info.jobId, { cwd: '../b' })
  console.log(inB, bTail, bWait)
  // async reads: off the JS thread (a stored job's transcript is read from disk)
  const stored: Output = await kept.outputAsync(id, { offset: 0, limit: 100, maxBytes: 4096 })
  const storedTail: Output = await kept.tailAsync(id, 20, { maxBytes: 2048 })
  const storedScreen: ScreenSnapshot = await kept.screenAsync(id)
  const storedHits: SearchResult = await kept.searchAsync(id, 'error', { context: 1 })
  const storedInfo: JobInfo = await kept.statusAsync(id)
  const storedAll: JobInfo[] = await kept.listAsync()
  console.log(stored, storedTail, storedScreen, storedHits, storedInfo, storedAll)

  const report: KillReport = await jobs.kill(id, { signal: 'INT', graceMs: 1_000 })
  const literal: 'killed' | 'already_terminated' | 'not_found' = report.outcome
  const survivors: number[] = report.survivors
  const outcome: KillResult = (await jobs.killReport(id, { graceMs: 1_000 })).outcome
  console.log(survivors, outcome)
  if (waited.status === 'running' || status === 'completed') console.log(literal)
  await jobs.close()

  // @ts-expect-error execute needs a command
  jobs.execute()
  // @ts-expect-error unknown option
  jobs.execute('true', { colums: 80 })
  // @ts-expect-error write takes a string or a Buffer
  jobs.write(id, 42)
  // @ts-expect-error kill resolves with a report, not a boolean
  const wrong: boolean = await jobs.kill(id)
  // @ts-expect-error kill resolves with an object, not a KillResult
  const flat: KillResult = await jobs.kill(id)
  // @ts-expect-error 'finished' is not a status
  const badStatus: JobStatus = 'finished'
  // @ts-expect-error a wait with a condition resolves with a WaitResult, not a JobInfo
  const notInfo: JobInfo = await jobs.wait(id, { pattern: 'ready' })
  // @ts-expect-error a plain wait resolves with a JobInfo
  const notResult: WaitResult = await jobs.wait(id, { timeoutMs: 100 })
  // @ts-expect-error 'done' is not a wait reason
  const badReason: WaitReason = 'done'
  // @ts-expect-error keys are a list of names
  await jobs.sendKeys(id, 'C-c')
  // @ts-expect-error sendKeys resolves with a number of bytes
  const notBool: boolean = await jobs.sendKeys(id, ['Enter'])
  // @ts-expect-error unknown search option
  jobs.search(id, 'x', { limit: 3 })
  console.log(notInfo, notResult, badReason, notBool)
  // @ts-expect-error persist is a boolean
  new JobManager({ persist: 'yes' })
  // @ts-expect-error unknown option (the option is stateDir)
  new JobManager({ stateDirectory: '/tmp' })
  // @ts-expect-error removeJob returns nothing
  const removedFlag: boolean = kept.removeJob(id)
  // @ts-expect-error thisServer is a boolean
  const owner: string = kept.status(id).thisServer
  console.log(removedFlag, owner)
  // @ts-expect-error cwd is a path
  kept.resize('web', 80, 24, { cwd: 1 })
  // @ts-expect-error onData callbacks get a string
  jobs.onData(id, (n: number) => n)
  console.log(pid, code, signal, started, next, last, accepted, resized, all, wrong, badStatus)
}

main().catch((e: Error & { code?: string }) => { console.error(e.code, e.message) })
