// The host's built binaries and the platform packages, checked by their headers, without
// building for another platform (that is tests/platforms/, run by `npm run test:platforms`):
// - the header reader (scripts/binfmt.mjs) knows the host's server and addon.
// - whatever platform packages `npm run build:packages` left in npm/ are of their platform.
// - the main package's binding loader finds the win32-x64-gnu addon on Windows x64.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync, cpSync } from 'node:fs'
import { join } from 'node:path'
import { NPM_DIR, HOST_TRIPLE, HOST_BINARY, platform, Cleanup } from './helpers/npm.mjs'
import { describeBinary, checkBinary, expectedFormat } from '../scripts/binfmt.mjs'
import { MACOS_DEPLOYMENT_TARGET } from '../scripts/cross.mjs'

test('the header reader knows the host binary', () => {
  assert.ok(existsSync(HOST_BINARY), `${HOST_BINARY} is missing: run npm run build:packages:host (the root build does)`)
  const host = platform.TARGETS[HOST_TRIPLE]
  const got = checkBinary(HOST_BINARY, host, 'server')
  assert.equal(got.cpu, process.arch)
  const addon = join(NPM_DIR, HOST_TRIPLE, `ptyjobs.${HOST_TRIPLE}.node`)
  assert.ok(expectedFormat(host, 'addon').kinds.includes(checkBinary(addon, host, 'addon').kind))
  assert.match(describeBinary(join(NPM_DIR, 'ptyjobs', 'package.json')).format, /^unknown/)
})

test('every platform package in npm/ is of its own platform', (t) => {
  const seen = []
  const absent = []
  for (const [triple, target] of Object.entries(platform.TARGETS)) {
    for (const [file, role] of [[platform.binaryName(target.os), 'server'], [`ptyjobs.${triple}.node`, 'addon']]) {
      const path = join(NPM_DIR, triple, file)
      if (!existsSync(path)) { absent.push(`${triple}/${file}`); continue }
      const got = checkBinary(path, target, role, { maxMinOs: MACOS_DEPLOYMENT_TARGET[target.server] })
      seen.push(`${triple}/${file}: ${got.format} ${got.cpu} ${got.kind}`)
    }
  }
  t.diagnostic(`checked: ${seen.join('; ')}`)
  if (absent.length) t.diagnostic(`not built here (npm run build:packages builds them): ${absent.join(', ')}`)
  assert.ok(seen.length >= 2, 'at least the host package is built (npm run build:packages:host)')
})

test('the binding loader loads the win32-x64-gnu package on Windows x64, and leaves no override behind', async () => {
  const cleanup = new Cleanup()
  try {
    const dir = cleanup.dir('ptyjobs-win32-loader-')
    const nm = join(dir, 'node_modules')
    assert.ok(existsSync(join(NPM_DIR, 'ptyjobs', 'index.js')), 'npm/ptyjobs/index.js is missing: run npm run build:packages:host')
    cpSync(join(NPM_DIR, 'ptyjobs'), join(nm, 'ptyjobs'), { recursive: true })
    // A stand-in for the addon (a real .node cannot be loaded here): a module with the exports.
    const gnu = join(nm, 'ptyjobs-win32-x64-gnu')
    mkdirSync(gnu)
    writeFileSync(join(gnu, 'package.json'), JSON.stringify({ name: 'ptyjobs-win32-x64-gnu', version: '0.0.0', main: 'fake.js' }))
    writeFileSync(join(gnu, 'fake.js'), "module.exports = { JobManager: class JobManager {}, fromGnuPackage: true }\n")
    const preload = join(dir, 'windows.cjs')
    writeFileSync(preload, "Object.defineProperty(process, 'platform', { value: 'win32' }); Object.defineProperty(process, 'arch', { value: 'x64' })\n")
    const script = "const b = require('ptyjobs'); process.stdout.write(JSON.stringify({ gnu: b.fromGnuPackage === true, manager: typeof b.JobManager, override: process.env.NAPI_RS_NATIVE_LIBRARY_PATH ?? null }))"
    const env = { ...process.env }
    delete env.NAPI_RS_NATIVE_LIBRARY_PATH
    const r = spawnSync(process.execPath, ['--require', preload, '-e', script], { cwd: dir, encoding: 'utf8', env })
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), { gnu: true, manager: 'function', override: null })
  } finally {
    await cleanup.run()
  }
})
