// A short MCP session with a built server binary, run directly or under an emulator (qemu for
// linux-arm64 on an x64 host): initialize, start a job, wait for it, read its output.
// Used by build-packages.mjs for every server binary this machine can run.
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

/**
 * Resolves when `[...runner, exe]` answered a job's output correctly over MCP; rejects with
 * what went wrong otherwise. Bounded by `timeoutMs`; the child is always killed.
 */
export async function mcpSmoke (runner, exe, timeoutMs = 60_000) {
  const [cmd, ...pre] = [...runner, exe]
  const child = spawn(cmd, pre, { stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const pending = new Map()
  createInterface({ input: child.stdout }).on('line', (line) => {
    const msg = JSON.parse(line)
    if (msg.id !== undefined && pending.has(msg.id)) pending.get(msg.id)(msg)
  })
  // A server that exits (or is killed by the timeout) fails the session with a message, not
  // with an unhandled EPIPE on its stdin or a call that never resolves.
  let gone = null
  const rejects = new Set()
  child.stdin.on('error', () => {})
  child.on('exit', (code, signal) => {
    gone = new Error(`the server exited (code ${code}, signal ${signal})`)
    for (const reject of rejects) reject(gone)
  })
  let next = 1
  const call = (method, params) => new Promise((resolve, reject) => {
    if (gone) return reject(gone)
    const id = next++
    pending.set(id, resolve)
    rejects.add(reject)
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n')
  })
  const tool = async (name, args) => {
    const reply = await call('tools/call', { name, arguments: args })
    if (reply.error || reply.result.isError) throw new Error(`${name}: ${JSON.stringify(reply)}`)
    return reply.result.structuredContent
  }
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  try {
    await call('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'smoke', version: '0' } })
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n')
    const job = await tool('execute_command', { command: 'echo smoke-$((40+2))' })
    await tool('wait_for_job', { job_id: job.job_id, timeout_secs: 30 })
    const out = await tool('get_job_output', { job_id: job.job_id })
    if (out.output !== 'smoke-42') throw new Error(`job output was ${JSON.stringify(out.output)}`)
  } catch (e) {
    throw new Error(`${e.message}\n${stderr}`)
  } finally {
    clearTimeout(timer)
    child.stdin.end()
    child.kill('SIGKILL')
  }
}
