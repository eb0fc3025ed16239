// The referee for portable tool schemas: the official MCP Inspector CLI (a devDependency) lists
// the server's tools with --strict and must report no portability problem at all, neither
// error nor warning. Runs the host's release binary (npm/<host>/ptyjobs, made by the root
// `npm run build`).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT, HOST_BINARY } from './helpers/npm.mjs'

const INSPECTOR = join(ROOT, 'node_modules', '@modelcontextprotocol', 'inspector', 'package.json')

test('the MCP Inspector --strict finds 0 errors and 0 warnings in tools/list', (t) => {
  assert.ok(existsSync(HOST_BINARY), `${HOST_BINARY} is missing: run npm run build`)
  assert.ok(existsSync(INSPECTOR), 'the Inspector is missing: run npm install (it is a devDependency)')
  const state = mkdtempSync(join(tmpdir(), 'ptyjobs-inspector-'))
  t.after(() => rmSync(state, { recursive: true, force: true }))
  const r = spawnSync('npx', ['--no-install', 'mcp-inspector', '--cli', HOST_BINARY, '--state-dir', state,
    '--method', 'tools/list', '--strict'], {
    cwd: ROOT, encoding: 'utf8', timeout: 120_000, maxBuffer: 64 << 20
  })
  assert.equal(r.error, undefined, String(r.error))
  const report = r.stderr.split('\n').filter((l) => !/^npm warn/i.test(l)).join('\n')
  assert.equal(r.status, 0, report)
  // --strict prints each problem ("Warning: tool ..." / "Error: tool ...") and a count line
  // only when there is something to count.
  assert.doesNotMatch(report, /^(Warning|Error):/m, report)
  const count = report.match(/(\d+) errors?, (\d+) warnings?/)
  if (count) assert.deepEqual([count[1], count[2]], ['0', '0'], report)
  const tools = JSON.parse(r.stdout).tools
  assert.ok(tools.length >= 11, `${tools.length} tools`)
  // The list comes in a stable order: by name.
  const names = tools.map((t) => t.name)
  assert.deepEqual(names, [...names].sort())
})
