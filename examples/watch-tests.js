// Runs a test watcher under ptyjobs, reads what it shows as clean text, quits it with `q`.
//   node examples/watch-tests.js                  # the bundled stand-in watcher
//   node examples/watch-tests.js "npx vitest"     # a real one
const { JobManager } = require('ptyjobs')

async function main () {
  const command = process.argv[2] ?? `sh ${__dirname}/fake-watcher.sh`
  const jobs = new JobManager({ cols: 100, rows: 30 })
  const job = jobs.execute(command, { name: 'tests' })

  // One server-side wait instead of a polling loop: until the watcher asks for a key.
  const seen = await jobs.wait(job.jobId, { pattern: 'press q to quit', fromStart: true, timeoutMs: 60_000 })
  if (seen.reason !== 'matched') throw new Error(`the watcher did not get ready: ${seen.reason}`)
  console.log(jobs.tail(job.jobId, 20).output) // no colour codes, the progress line at its final state

  jobs.write(job.jobId, 'q')
  const done = await jobs.wait(job.jobId, { timeoutMs: 10_000 })
  console.log(`watcher ${done.status}, exit code ${done.exitCode}`)
  await jobs.close()
}

main().catch((err) => { console.error(err); process.exitCode = 1 })
