// The platforms this machine builds for but cannot run: macOS and Windows.
// - clippy for aarch64-apple-darwin (every crate, tests included) is clean: clippy type-checks
//   without linking, so the macOS code paths (`cfg(not(target_os = "linux"))`) are checked here.
// - clippy for x86_64-pc-windows-gnu is clean for the whole workspace and every target (tests
//   included; the Unix-only test binaries are `#![cfg(unix)]`), but the benchmarks, which measure
//   Linux PTYs and are never built for Windows.
// - the macOS arm64 server and addon link here through cargo-zigbuild (no SDK) and are what a
//   Mac loads: Mach-O arm64, an executable and a dylib, system libraries only, macOS 11 or older.
//   Built in the dev profile: a cold release build of one macOS target (server + addon) took
//   ~8 min per binary on the 2-core build machine, the dev build of both ~6 min cold and seconds
//   warm. x86_64-apple-darwin and the release builds are checked by `npm run build:packages`
//   (the same header check, scripts/binfmt.mjs) and on the release workflow's Macs.
// - the host's lint: `cargo fmt --check` and clippy for the whole workspace, the benchmarks
//   included (npm test does not build them: 15 binaries linked twice each cost it a minute).
// Each needs a tool (a rustup target, cargo-zigbuild); without it the test says why it skips.
// Run by `npm run test:platforms`, not by `npm test` (minutes of builds on a small machine).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { ROOT, platform } from '../helpers/npm.mjs'
import { checkBinary } from '../../scripts/binfmt.mjs'
import { buildEnv, windowsGnuAddonEnv, MACOS_DEPLOYMENT_TARGET } from '../../scripts/cross.mjs'

const MAC = 'aarch64-apple-darwin'
const WIN = 'x86_64-pc-windows-gnu'
const CRATES = ['-p', 'ptyjobs-engine', '-p', 'ptyjobs-mcp', '-p', 'ptyjobs-node']

function capture (cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  return r.status === 0 ? r.stdout : null
}

/** Why the Rust target `triple` cannot be checked here, or null. */
function targetMissing (triple) {
  const installed = capture('rustup', ['target', 'list', '--installed'])
  if (installed === null) return 'rustup is not available'
  if (!installed.split('\n').includes(triple)) return `the Rust target ${triple} is not installed (rustup target add ${triple})`
  return null
}
const macTargetMissing = () => targetMissing(MAC)

function cargo (args, env = {}) {
  const r = spawnSync('cargo', args, { cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...env }, maxBuffer: 256 << 20 })
  assert.equal(r.status, 0, `cargo ${args.join(' ')} failed:\n${(r.stderr || '').slice(-8000)}`)
  return r
}

let targetDir
function cargoTargetDir () {
  if (!targetDir) targetDir = process.env.CARGO_TARGET_DIR || JSON.parse(capture('cargo', ['metadata', '--format-version', '1', '--no-deps'])).target_directory
  return targetDir
}

test('the host lint: formatted, and clippy clean for every crate and target, the benchmarks included', (t) => {
  const started = Date.now()
  cargo(['fmt', '--all', '--check'])
  cargo(['clippy', '--workspace', '--all-targets', '--', '-D', 'warnings'])
  t.diagnostic(`fmt + clippy (host): ${((Date.now() - started) / 1000).toFixed(0)} s`)
})

test('clippy is clean for macOS (aarch64-apple-darwin), tests included', (t) => {
  const missing = macTargetMissing()
  if (missing) return t.skip(missing)
  const started = Date.now()
  cargo(['clippy', '--target', MAC, ...CRATES, '--all-targets', '--', '-D', 'warnings'])
  t.diagnostic(`clippy --target ${MAC}: ${((Date.now() - started) / 1000).toFixed(0)} s`)
})

test('clippy is clean for Windows (x86_64-pc-windows-gnu), every crate and target but the benchmarks', (t) => {
  // napi-build wants a libnode import library even to check the addon: the empty stub
  // (scripts/cross.mjs), made with mingw's dlltool.
  const missing = targetMissing(WIN) || (spawnSync('x86_64-w64-mingw32-dlltool', ['--version'], { stdio: 'ignore' }).status === 0 ? null : 'x86_64-w64-mingw32-dlltool is not installed (apt-get install gcc-mingw-w64-x86-64)')
  if (missing) return t.skip(missing)
  const started = Date.now()
  cargo(['clippy', '--target', WIN, '--workspace', '--exclude', 'ptyjobs-bench', '--all-targets', '--', '-D', 'warnings'], windowsGnuAddonEnv(cargoTargetDir()))
  t.diagnostic(`clippy --target ${WIN}: ${((Date.now() - started) / 1000).toFixed(0)} s`)
})

test('the macOS arm64 server and addon link here (zig, no SDK) as what a Mac loads', (t) => {
  const missing = macTargetMissing() || (spawnSync('cargo', ['zigbuild', '--help'], { stdio: 'ignore' }).status === 0 ? null : 'cargo-zigbuild is not installed (cargo install cargo-zigbuild; pip install ziglang)')
  if (missing) return t.skip(missing)
  const started = Date.now()
  cargo(['zigbuild', '--target', MAC, '-p', 'ptyjobs-mcp', '--bin', 'ptyjobs', '-p', 'ptyjobs-node', '--lib'], buildEnv(MAC, {}))
  t.diagnostic(`cargo zigbuild --target ${MAC} (dev): ${((Date.now() - started) / 1000).toFixed(0)} s`)
  const dir = join(cargoTargetDir(), MAC, 'debug')
  const target = platform.TARGETS['darwin-arm64']
  const want = { maxMinOs: MACOS_DEPLOYMENT_TARGET[MAC] }
  const server = checkBinary(join(dir, 'ptyjobs'), target, 'server', want)
  assert.deepEqual([server.format, server.cpu, server.kind], ['mach-o', 'arm64', 'executable'])
  // A Node addon is a dylib whose napi_* symbols are looked up in the node process at load
  // time (-undefined dynamic_lookup, set by napi-build): without it, it would not have linked.
  const addon = checkBinary(join(dir, 'libptyjobs_node.dylib'), target, 'addon', want)
  assert.deepEqual([addon.format, addon.cpu, addon.kind], ['mach-o', 'arm64', 'dylib'])
  assert.ok(server.dylibs.includes('/usr/lib/libSystem.B.dylib'), server.dylibs.join(' '))
  // The same file is refused as the other CPU's, and as a Linux or Windows one.
  assert.throws(() => checkBinary(join(dir, 'ptyjobs'), platform.TARGETS['darwin-x64'], 'server'), /CPU arm64, expected x64/)
  assert.throws(() => checkBinary(join(dir, 'ptyjobs'), platform.TARGETS['linux-arm64-gnu'], 'server'), /format mach-o, expected elf/)
  assert.throws(() => checkBinary(join(dir, 'ptyjobs'), target, 'addon'), /kind executable, expected dylib or bundle/)
})
