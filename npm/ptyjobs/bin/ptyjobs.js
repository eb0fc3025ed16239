#!/usr/bin/env node
'use strict'
// `npx -y ptyjobs`: start the prebuilt ptyjobs MCP server for this platform.
// The server talks MCP over stdio, so the child inherits our stdio and no byte passes
// through Node; this file itself never writes to stdout.

const { spawn } = require('child_process')
const os = require('os')
const { resolveBinary } = require('../lib/platform')

function fail (message, code) {
  process.stderr.write(`ptyjobs: ${message}\n`)
  process.exit(code || 1)
}

let found
try {
  found = resolveBinary()
} catch (err) {
  fail(err.message)
}

// Handlers first, so no signal can slip in between the spawn and their installation.
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP']
let child = null
function forward (signal) {
  // On Windows a Ctrl-C reaches every process of the console, the server included, which then
  // shuts down in order; "forwarding" it would be TerminateProcess. So wait for its exit.
  if (signal === 'SIGINT' && process.platform === 'win32') return
  if (child && child.exitCode === null && child.signalCode === null) {
    try { child.kill(signal) } catch (_) {}
  }
}
for (const signal of FORWARDED) process.on(signal, forward)

child = spawn(found.binary, process.argv.slice(2), { stdio: 'inherit', windowsHide: true })

child.on('error', (err) => {
  const hint = err.code === 'EACCES' ? ` (is it executable? chmod +x "${found.binary}")` : ''
  fail(`could not start ${found.binary}: ${err.message}${hint}`)
})

child.on('exit', (code, signal) => {
  for (const s of FORWARDED) process.removeListener(s, forward)
  if (signal) {
    // Die by the same signal; if it is one Node ignores (SIGPIPE), exit as a shell would.
    process.exitCode = 128 + (os.constants.signals[signal] || 0)
    try { process.kill(process.pid, signal) } catch (_) {}
    return
  }
  process.exit(code === null ? 1 : code)
})
