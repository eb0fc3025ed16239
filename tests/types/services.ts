// The services part of the binding's typings (crates/node/index.d.ts), checked with
// `tsc --noEmit` by tests/binding-process.test.mjs beside example.ts. Type-checked, never run.
import { JobManager } from '../../crates/node/index.js'
import type { JobInfo, Service, StartedService, WaitReason } from '../../crates/node/index.js'

async function services (): Promise<void> {
  const jobs = new JobManager()
  const listed: Service[] = jobs.services('/proj')
  const here: Service[] = jobs.services()
  const running: JobInfo | undefined = listed[0].job
  const port: number | undefined = listed[0].port
  const auto: boolean = listed[0].autoPort
  const env: Record<string, string> = listed[0].env
  const started: StartedService = await jobs.startService('web', { cwd: '/proj', timeoutMs: 10_000 })
  const job: JobInfo = started.job
  const reused: boolean = started.reused
  const ready: WaitReason | undefined = started.ready?.reason
  await jobs.startService('web')
  // @ts-expect-error the name is required
  await jobs.startService()
  // @ts-expect-error unknown option (the project directory is cwd)
  await jobs.startService('web', { dir: '/proj' })
  // @ts-expect-error services() is synchronous
  const notArray: Service[] = await jobs.services().then((s: Service[]) => s)
  console.log(here, running, port, auto, env, job, reused, ready, notArray)
}

services().catch((e: Error & { code?: string }) => { console.error(e.code, e.message) })
