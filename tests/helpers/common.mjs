// The helpers every JS test suite shares: one poll-with-a-deadline, the process census, and the
// reading of a tool result.
import assert from 'node:assert/strict'
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

/**
 * Live (non-zombie) processes whose command line holds `marker`, other than this one, as
 * `{ pid, sid, cmdline }` (Linux /proc; under Wine every Windows process is a Linux process).
 */
export function processesWith (marker) {
  const found = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim()
      if (!cmdline.includes(marker)) continue
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (fields[0] !== 'Z') found.push({ pid: Number(entry), sid: Number(fields[3]), cmdline })
    } catch (_) {}
  }
  return found
}

/** The structured content of a successful tool result (fails the test on an error result). */
export function structured (result) {
  assert.ok(!result.isError, JSON.stringify(result))
  assert.ok(result.structuredContent, `no structured content in ${JSON.stringify(result)}`)
  return result.structuredContent
}
