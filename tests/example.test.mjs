// The README's Node example (examples/watch-tests.js) runs as written, against the built addon.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, mkdirSync, symlinkSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')

test('the Node example runs a watcher, reads its clean output and quits it with q', () => {
  // `require('ptyjobs')` resolves to the binding as an installed package would.
  const modules = mkdtempSync(join(tmpdir(), 'ptyjobs-example-'))
  try {
    mkdirSync(join(modules, 'node_modules'))
    symlinkSync(join(ROOT, 'crates', 'node'), join(modules, 'node_modules', 'ptyjobs'))
    const r = spawnSync(process.execPath, [join(ROOT, 'examples', 'watch-tests.js')], {
      env: { ...process.env, NODE_PATH: join(modules, 'node_modules') },
      encoding: 'utf8',
      timeout: 60_000
    })
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /✓ math\.test\.js \(3 tests\)/)
    assert.match(r.stdout, /Tests {2}1 failed \| 3 passed/)
    assert.doesNotMatch(r.stdout, /running tests/, 'the progress line was cleared')
    assert.doesNotMatch(r.stdout, /\x1b/, 'no escape codes')
    assert.match(r.stdout, /watcher completed, exit code 0/)
  } finally {
    rmSync(modules, { recursive: true, force: true })
  }
})
