// A small program against the binding's typings (crates/node/index.d.ts), checked with
// `tsc --noEmit` by tests/binding-process.test.mjs. It is type-checked, never run.
import { JobManager } from '../../crates/node/index.js'
import type { JobInfo, JobStatus, KillResult, Output } from '../../crates/node/index.js'

async function main (): Promise<void> {
  const jobs = new JobManager({ maxJobs: 4, transcriptBytes: 1 << 20, killGraceMs: 500, cols: 100, rows: 30, shell: '/bin/sh' })
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
  const killed: KillResult = await jobs.kill(id, { signal: 'INT', graceMs: 1_000 })
  const literal: 'killed' | 'already_terminated' | 'not_found' = killed
  if (waited.status === 'running' || status === 'completed') console.log(literal)
  await jobs.close()

  // @ts-expect-error execute needs a command
  jobs.execute()
  // @ts-expect-error unknown option
  jobs.execute('true', { colums: 80 })
  // @ts-expect-error write takes a string or a Buffer
  jobs.write(id, 42)
  // @ts-expect-error kill resolves with a KillResult, not a boolean
  const wrong: boolean = await jobs.kill(id)
  // @ts-expect-error 'finished' is not a status
  const badStatus: JobStatus = 'finished'
  // @ts-expect-error onData callbacks get a string
  jobs.onData(id, (n: number) => n)
  console.log(pid, code, signal, started, next, last, accepted, resized, all, wrong, badStatus)
}

main().catch((e: Error & { code?: string }) => { console.error(e.code, e.message) })
