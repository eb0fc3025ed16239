// The helpers every JS test suite shares: one poll-with-a-deadline, one process census.
import { readdirSync, readFileSync } from 'node:fs'

/** Polls `condition` (sync or async) until it returns a truthy value; throws after `ms`. */
export async function waitUntil (condition, ms = 10_000, what = 'condition') {
  const deadline = Date.now() + ms
  let delay = 5
  for (;;) {
    const v = await condition()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, delay))
    delay = Math.min(delay * 2, 100)
  }
}

/** Pids of live (non-zombie) processes whose session id is `sid` (Linux /proc). */
export function sessionProcesses (sid) {
  const found = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    let stat
    try { stat = readFileSync(`/proc/${name}/stat`, 'utf8') } catch { continue }
    // after the command name: state ppid pgrp session ...
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (fields[0] !== 'Z' && Number(fields[3]) === sid) found.push(Number(name))
  }
  return found
}
