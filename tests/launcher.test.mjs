// The npx launcher (npm/ptyjobs/bin/ptyjobs.js) and its platform resolution, with a fake
// server binary: resolution table, PTYJOBS_BINARY, error messages, exit codes, signals.
import { test, describe, after } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { writeFileSync } from 'node:fs'
import { platform, NPM_DIR, Cleanup, runSync, fakeBinary, cleanEnv, localLayout, waitUntil } from './helpers/npm.mjs'

const LAUNCHER = join(NPM_DIR, 'ptyjobs', 'bin', 'ptyjobs.js')
const cleanup = new Cleanup()
after(() => cleanup.run())

describe('platform resolution', () => {
  const table = [
    // platform, arch, libc, candidate packages (best first)
    ['linux', 'x64', 'gnu', ['linux-x64-gnu', 'linux-x64-musl']],
    ['linux', 'x64', 'musl', ['linux-x64-musl', 'linux-x64-gnu']],
    ['linux', 'arm64', 'gnu', ['linux-arm64-gnu', 'linux-arm64-musl']],
    ['linux', 'arm64', 'musl', ['linux-arm64-musl', 'linux-arm64-gnu']],
    ['darwin', 'x64', null, ['darwin-x64']],
    ['darwin', 'arm64', null, ['darwin-arm64']],
    ['win32', 'x64', null, ['win32-x64-gnu']], // built with mingw: napi-rs's gnu name
    ['win32', 'arm64', null, []],
    ['win32', 'ia32', null, []],
    ['linux', 'ia32', 'gnu', []],
    ['linux', 'riscv64', 'gnu', []],
    ['freebsd', 'x64', null, []],
    ['darwin', 'ppc64', null, []]
  ]
  for (const [p, a, l, want] of table) {
    test(`${p}-${a}${l ? '-' + l : ''} -> ${want.join(', ') || 'unsupported'}`, () => {
      assert.deepEqual(platform.candidateTriples({ platform: p, arch: a, libc: l }), want)
    })
  }

  test('every supported triple has a package dir whose os/cpu/libc match the table', async () => {
    const { readFileSync } = await import('node:fs')
    for (const [triple, t] of Object.entries(platform.TARGETS)) {
      if (!t.supported) continue
      const pkg = JSON.parse(readFileSync(join(NPM_DIR, triple, 'package.json'), 'utf8'))
      assert.equal(pkg.name, platform.packageName(triple))
      assert.deepEqual(pkg.os, [t.os])
      assert.deepEqual(pkg.cpu, [t.cpu])
      assert.deepEqual(pkg.libc, t.libc ? [t.libc] : undefined)
      assert.deepEqual(pkg.files.sort(), [platform.binaryName(t.os), `ptyjobs.${triple}.node`].sort())
      assert.equal(pkg.main, `ptyjobs.${triple}.node`)
    }
  })

  test('resolveBinary takes the first installed candidate, falls back to the other libc', () => {
    const installed = { 'ptyjobs-linux-x64-musl': '/nm/ptyjobs-linux-x64-musl' }
    const r = platform.resolveBinary({
      env: {}, platform: 'linux', arch: 'x64', libc: 'gnu',
      resolvePackage: (name) => { if (installed[name]) return installed[name]; throw new Error('MODULE_NOT_FOUND') },
      exists: (f) => f === '/nm/ptyjobs-linux-x64-musl/ptyjobs'
    })
    assert.deepEqual(r, { binary: '/nm/ptyjobs-linux-x64-musl/ptyjobs', source: 'ptyjobs-linux-x64-musl', triple: 'linux-x64-musl' })
  })

  test('a package without its binary counts as missing', () => {
    assert.throws(() => platform.resolveBinary({
      env: {}, platform: 'darwin', arch: 'arm64',
      resolvePackage: () => '/nm/ptyjobs-darwin-arm64',
      exists: () => false
    }), (e) => e.code === 'PACKAGE_MISSING' && /ptyjobs-darwin-arm64/.test(e.message))
  })

  test('each platform runs its own binary: ptyjobs.exe on Windows, ptyjobs elsewhere', () => {
    const cases = [
      ['win32', 'x64', null, 'C:\\nm\\ptyjobs-win32-x64-gnu', 'ptyjobs.exe', 'win32-x64-gnu'],
      ['darwin', 'arm64', null, '/nm/ptyjobs-darwin-arm64', 'ptyjobs', 'darwin-arm64'],
      ['darwin', 'x64', null, '/nm/ptyjobs-darwin-x64', 'ptyjobs', 'darwin-x64'],
      ['linux', 'arm64', 'musl', '/nm/ptyjobs-linux-arm64-musl', 'ptyjobs', 'linux-arm64-musl']
    ]
    for (const [p, a, l, dir, bin, triple] of cases) {
      const binary = join(dir, bin)
      const asked = []
      const r = platform.resolveBinary({
        env: {}, platform: p, arch: a, libc: l,
        resolvePackage: (name) => { asked.push(name); if (name === `ptyjobs-${triple}`) return dir; throw new Error('MODULE_NOT_FOUND') },
        exists: (f) => f === binary
      })
      assert.deepEqual(r, { binary, source: `ptyjobs-${triple}`, triple }, `${p}-${a}`)
      assert.deepEqual(asked, [`ptyjobs-${triple}`], `${p}-${a} asks for its own package first`)
    }
    assert.equal(platform.binaryName('win32'), 'ptyjobs.exe')
  })

  test('a Windows package without ptyjobs.exe counts as missing, and the message names it', () => {
    assert.throws(() => platform.resolveBinary({
      env: {}, platform: 'win32', arch: 'x64',
      resolvePackage: () => 'C:\\nm\\ptyjobs-win32-x64-gnu',
      exists: (f) => !f.endsWith('ptyjobs.exe')
    }), (e) => e.code === 'PACKAGE_MISSING' && /"ptyjobs-win32-x64-gnu"/.test(e.message) && /win32-x64/.test(e.message))
  })

  test('PTYJOBS_BINARY wins over the packages, and must exist', () => {
    const r = platform.resolveBinary({ env: { PTYJOBS_BINARY: '/opt/ptyjobs' }, platform: 'win32', arch: 'x64', exists: (f) => f === '/opt/ptyjobs' })
    assert.deepEqual(r, { binary: '/opt/ptyjobs', source: 'PTYJOBS_BINARY' })
    assert.throws(() => platform.resolveBinary({ env: { PTYJOBS_BINARY: '/nope' }, exists: () => false }),
      (e) => e.code === 'BAD_OVERRIDE' && e.message.includes('/nope'))
  })

  test('unsupported platforms get a message that says what to do', () => {
    assert.throws(() => platform.resolveBinary({ env: {}, platform: 'win32', arch: 'arm64' }),
      (e) => e.code === 'UNSUPPORTED_PLATFORM' && /no prebuilt server for win32-arm64\./.test(e.message) && /win32-x64-gnu/.test(e.message) && /darwin-arm64/.test(e.message) && /cargo build --release --bin ptyjobs/.test(e.message) && /PTYJOBS_BINARY/.test(e.message))
    assert.throws(() => platform.resolveBinary({ env: {}, platform: 'linux', arch: 'riscv64', libc: 'gnu' }),
      (e) => e.code === 'UNSUPPORTED_PLATFORM' && /linux-riscv64 \(glibc\)/.test(e.message) && /linux-x64-gnu/.test(e.message))
  })

  test('libc detection reads ldd, and guesses glibc when it cannot tell', () => {
    assert.equal(platform.detectLibc(() => '#!/bin/sh\n# musl libc ldd\nexec /lib/ld-musl-x86_64.so.1 --list "$@"'), 'musl')
    assert.equal(platform.detectLibc(() => '#! /bin/bash\n# This file is part of the GNU C Library.'), 'gnu')
  })
})

describe('launcher process', () => {
  const launch = (args, env, opts = {}) => runSync(process.execPath, [LAUNCHER, ...args], { env: cleanEnv(env), ...opts })

  test('passes arguments through and mirrors the exit code; writes nothing to stdout itself', () => {
    const dir = cleanup.dir()
    const fake = fakeBinary(dir, 'printf "%s|" "$@"; exit 7')
    const r = launch(['--flag', 'two words', ''], { PTYJOBS_BINARY: fake })
    assert.equal(r.status, 7)
    assert.equal(r.stdout, '--flag|two words||')
    assert.equal(r.stderr, '')
    assert.equal(launch([], { PTYJOBS_BINARY: fakeBinary(dir, 'exit 0') }).status, 0)
  })

  test('stdin is the server\'s own (inherited, not piped through Node)', () => {
    const dir = cleanup.dir()
    const fake = fakeBinary(dir, 'cat')
    const r = launch([], { PTYJOBS_BINARY: fake }, { input: '{"jsonrpc":"2.0"}\n' })
    assert.equal(r.status, 0)
    assert.equal(r.stdout, '{"jsonrpc":"2.0"}\n')
  })

  for (const signal of ['SIGKILL', 'SIGTERM', 'SIGINT', 'SIGSEGV']) {
    test(`mirrors death by ${signal}`, () => {
      const dir = cleanup.dir()
      const fake = fakeBinary(dir, `trap - INT TERM; kill -${signal.slice(3)} $$; sleep 5`)
      const r = launch([], { PTYJOBS_BINARY: fake })
      assert.equal(r.signal, signal, `status ${r.status}, stderr ${r.stderr}`)
      assert.equal(r.stdout, '')
    })
  }

  test('a signal Node ignores (SIGPIPE) still gives a non-zero exit, 128 + signo', () => {
    const dir = cleanup.dir()
    const r = launch([], { PTYJOBS_BINARY: fakeBinary(dir, 'kill -PIPE $$; sleep 5') })
    assert.equal(r.signal, null)
    assert.equal(r.status, 128 + 13)
  })

  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    test(`forwards ${signal} to the server and mirrors how it exits`, async () => {
      const dir = cleanup.dir()
      const name = signal.slice(3)
      const fake = fakeBinary(dir, `trap 'echo "got ${name}" >&2; exit 42' ${name}\necho ready\nwhile :; do sleep 0.02; done`)
      const child = cleanup.spawn(process.execPath, [LAUNCHER], { env: cleanEnv({ PTYJOBS_BINARY: fake }), stdio: ['pipe', 'pipe', 'pipe'] })
      let out = ''
      child.stdout.on('data', (d) => { out += d })
      await waitUntil(() => out.includes('ready'), 10_000, 'the fake server to start')
      child.kill(signal) // the launcher only, not its process group
      const { code, signal: sig } = await child.exited
      assert.equal(sig, null)
      assert.equal(code, 42)
      assert.match(child.stderrText, new RegExp(`got ${name}`))
    })
  }

  test('unsupported platform: clear message, non-zero exit, nothing on stdout', () => {
    const dir = cleanup.dir()
    const preload = join(dir, 'aix.cjs')
    writeFileSync(preload, "Object.defineProperty(process, 'platform', { value: 'aix' })\n")
    const r = runSync(process.execPath, ['--require', preload, LAUNCHER, '--version'], { env: cleanEnv() })
    assert.equal(r.status, 1)
    assert.equal(r.stdout, '')
    assert.match(r.stderr, /^ptyjobs: ptyjobs has no prebuilt server for aix-/)
    assert.match(r.stderr, /PTYJOBS_BINARY/)
  })

  test('missing platform package: names the package and the fix', () => {
    const dir = cleanup.dir()
    const launcher = localLayout(dir, []) // ptyjobs installed without any optional dependency
    const r = runSync(process.execPath, [launcher, '--version'], { env: cleanEnv() })
    assert.equal(r.status, 1)
    assert.equal(r.stdout, '')
    if (process.platform === 'linux') assert.match(r.stderr, new RegExp(`"ptyjobs-linux-${process.arch}-(gnu|musl)"`))
    assert.match(r.stderr, /optional dependency/)
    assert.match(r.stderr, /--omit=optional/)
  })

  test('PTYJOBS_BINARY pointing nowhere: says so', () => {
    const r = launch([], { PTYJOBS_BINARY: '/nonexistent/ptyjobs' })
    assert.equal(r.status, 1)
    assert.equal(r.stdout, '')
    assert.match(r.stderr, /PTYJOBS_BINARY is set to "\/nonexistent\/ptyjobs"/)
  })

  test('a binary that is not executable: says so and how to fix', () => {
    const dir = cleanup.dir()
    const fake = join(dir, 'ptyjobs')
    writeFileSync(fake, '#!/bin/sh\nexit 0\n', { mode: 0o644 })
    const r = launch([], { PTYJOBS_BINARY: fake })
    assert.equal(r.status, 1)
    assert.match(r.stderr, /could not start .*EACCES.*chmod \+x/)
  })
})
