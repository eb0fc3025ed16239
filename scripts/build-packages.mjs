#!/usr/bin/env node
// Build the npm platform packages this machine can build, and fill the main package.
//
//   node scripts/build-packages.mjs --host-only         the host's platform package (release builds)
//   node scripts/build-packages.mjs --host-only --dev   the host's package from dev builds (what `npm test` uses)
//   node scripts/build-packages.mjs                     every package this machine can build
//   node scripts/build-packages.mjs --targets linux-x64-gnu,linux-x64-musl
//   node scripts/build-packages.mjs --main-only         only copy the binding loader into npm/ptyjobs
//   node scripts/build-packages.mjs --verify            check every package is complete (before publishing)
//
// Per package npm/<triple>/: the server binary (`cargo build --release --bin ptyjobs`, static
// musl on Linux, mode 0755) and the addon crates/node/ptyjobs.<triple>.node (`npm run
// build:node`, i.e. napi build --platform --release, with --target for a foreign target).
// Targets the host cannot build natively go through cargo-zigbuild (zig from the PyPI package
// ziglang) when it is installed, and are skipped with a reason when not: the Linux ones and
// macOS (zig carries the libSystem stubs a Mach-O links against, no SDK needed; the minimum
// macOS is pinned with MACOSX_DEPLOYMENT_TARGET, as zig would otherwise stamp its newest).
// Windows is x86_64-pc-windows-gnu, linked by mingw (x86_64-w64-mingw32-gcc).
// Every file copied into a package is checked by its header (scripts/binfmt.mjs: ELF / Mach-O /
// PE, CPU, executable or library); a target that fails to build is reported and the others
// still build (the script then exits 1). --host-only reuses the host addon when the root `npm
// run build` has just built it. --dev (with --host-only) is the test command's build: one `cargo
// build --workspace --all-targets --exclude ptyjobs-bench` in the dev profile — the selection
// `cargo test` then runs, so the dependencies get the same features (dev-dependencies add some:
// without --all-targets every crate was compiled twice) and `cargo test` finds it all built —
// makes the test binaries, the server and the addon (the binding crate's cdylib) from one
// compilation of everything. The tests so need no second, optimised build (3 of `npm test`'s
// 9 minutes); the published binaries (static musl server, release addon) are built and tested
// by `npm run test:platforms`. Respects CARGO_TARGET_DIR (the target dir comes from `cargo
// metadata`).
import { spawnSync } from 'node:child_process'
import { copyFileSync, chmodSync, existsSync, statSync, mkdirSync, rmSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, NPM_DIR, platform, stamp, workspaceVersion, publishedTriples } from './version.mjs'
import { mcpSmoke } from './mcp-smoke.mjs'
import { checkBinary } from './binfmt.mjs'
import { buildEnv, cannotCrossBuild, windowsGnuAddonEnv, MACOS_DEPLOYMENT_TARGET } from './cross.mjs'

const NODE_CRATE = join(ROOT, 'crates', 'node')

function log (msg) { process.stderr.write(`build-packages: ${msg}\n`) }

function run (cmd, args, opts = {}) {
  const env = opts.env ? Object.entries(opts.env).filter(([k, v]) => process.env[k] !== v).map(([k, v]) => `${k}=${v} `).join('') : ''
  log(`$ ${env}${[cmd, ...args].join(' ')}${opts.cwd ? `   (in ${opts.cwd.slice(ROOT.length + 1) || '.'})` : ''}`)
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'], ...opts })
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`)
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status ?? r.signal}`)
}

function capture (cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...opts })
  return r.status === 0 ? r.stdout : null
}

function has (cmd, args = ['--version']) {
  return spawnSync(cmd, args, { stdio: 'ignore' }).status === 0
}

const host = (() => {
  const libc = process.platform === 'linux' ? platform.detectLibc() : null
  const triple = platform.candidateTriples({ platform: process.platform, arch: process.arch, libc })[0]
  if (!triple) throw new Error(`no ptyjobs platform package for ${process.platform}-${process.arch}`)
  return { triple, ...platform.TARGETS[triple] }
})()

let targetDirCache
function targetDir () {
  if (!targetDirCache) {
    if (process.env.CARGO_TARGET_DIR) targetDirCache = process.env.CARGO_TARGET_DIR
    else {
      const meta = capture('cargo', ['metadata', '--format-version', '1', '--no-deps'], { cwd: ROOT, maxBuffer: 64 << 20 })
      targetDirCache = meta ? JSON.parse(meta).target_directory : join(ROOT, 'target')
    }
  }
  return targetDirCache
}

function rustTargetInstalled (target) {
  const list = capture('rustup', ['target', 'list', '--installed'])
  if (list === null) return true // no rustup: let cargo say what is missing
  if (list.split('\n').includes(target)) return true
  run('rustup', ['target', 'add', target])
  return true
}

/** Can this host build Rust `target` with plain cargo (no zig)? */
function nativeFor (target) {
  if (process.platform === 'darwin') return target.endsWith('-apple-darwin')
  if (process.platform === 'linux') {
    const arch = process.arch === 'x64' ? 'x86_64' : process.arch === 'arm64' ? 'aarch64' : process.arch
    return target === `${arch}-unknown-linux-musl` || target === `${arch}-unknown-linux-gnu`
  }
  // On Windows, with the windows-gnu Rust toolchain (self-contained mingw) for the gnu target.
  if (process.platform === 'win32') return target.endsWith('-pc-windows-msvc') || target.endsWith('-pc-windows-gnu')
  return false
}

/** Whether cargo-zigbuild must link `target` here (a Windows target never goes through zig). */
function viaZig (target) {
  return !nativeFor(target) && !target.includes('-windows-')
}

const zigbuild = () => has('cargo', ['zigbuild', '--help'])

/** Why this host cannot build `triple`, or null when it can. */
function cannotBuild (triple) {
  const t = platform.TARGETS[triple]
  if (!t.supported) return 'not supported'
  if (t.server.endsWith('-msvc') && process.platform !== 'win32') return 'MSVC targets build only on Windows'
  const windows = cannotCrossBuild(t.server, { has })
  if (windows) return windows
  const cross = [t.server, t.addon].filter(viaZig)
  if (cross.length && !zigbuild()) return `needs cargo-zigbuild + zig for ${cross.join(', ')} (cargo install cargo-zigbuild; pip install ziglang)`
  return null
}

const builtServers = new Map()
function buildServer (target) {
  if (builtServers.has(target)) return builtServers.get(target)
  rustTargetInstalled(target)
  const args = ['--release', '--bin', 'ptyjobs', '--target', target]
  const env = { ...process.env, ...buildEnv(target) }
  run('cargo', [viaZig(target) ? 'zigbuild' : 'build', ...args], { cwd: ROOT, env })
  const exe = join(targetDir(), target, 'release', target.includes('windows') ? 'ptyjobs.exe' : 'ptyjobs')
  if (!existsSync(exe)) throw new Error(`cargo finished but ${exe} is missing`)
  builtServers.set(target, exe)
  return exe
}

function buildAddon (triple, { reuse }) {
  const t = platform.TARGETS[triple]
  const file = join(NODE_CRATE, `ptyjobs.${triple}.node`)
  if (!existsSync(join(NODE_CRATE, 'package.json'))) {
    log(`WARNING: crates/node/package.json (the binding's napi config) does not exist yet: ${triple} gets no addon`)
    return null
  }
  if (reuse && existsSync(file)) {
    log(`reusing ${file.slice(ROOT.length + 1)} (built by the root build)`)
    return file
  }
  rustTargetInstalled(t.addon)
  // The binding's own build command (root package.json `build:node`, napi build --platform
  // --release ... --output-dir crates/node), so its flags live in one place. The host's own
  // target is built without --target, into the target/release the root build uses.
  rmSync(file, { force: true }) // so a stale addon can never pass for a fresh one
  const extra = []
  if (triple !== host.triple) extra.push('--target', t.addon)
  // A musl cdylib and every foreign target but Windows (mingw links it) go through cargo-zigbuild.
  if (viaZig(t.addon) || (t.addon.endsWith('-musl') && process.platform === 'linux')) extra.push('--cross-compile')
  const env = { ...process.env, ...buildEnv(t.addon) }
  if (t.addon === 'x86_64-pc-windows-gnu') Object.assign(env, windowsGnuAddonEnv(targetDir()))
  run(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', '--silent', 'build:node', ...(extra.length ? ['--', ...extra] : [])], { cwd: ROOT, env })
  if (!existsSync(file)) throw new Error(`napi build finished but ${file} is missing`)
  return file
}

function qemuFor (triple) {
  const t = platform.TARGETS[triple]
  if (t.os !== process.platform) return undefined
  if (t.cpu === process.arch) return []
  if (process.platform === 'linux' && t.cpu === 'arm64') {
    for (const q of ['qemu-aarch64-static', 'qemu-aarch64']) if (has(q, ['--version'])) return [q]
  }
  return undefined
}

/** esbuild's check: the binary we ship says the version we publish. */
function checkServerVersion (triple, exe, version) {
  const runner = qemuFor(triple)
  if (!runner) { log(`(cannot run ${triple} binaries here: --version not checked)`); return }
  const [cmd, ...pre] = [...runner, exe]
  const out = capture(cmd, [...pre, '--version'])
  const want = `ptyjobs ${version}`
  if (out === null || out.trim() !== want) {
    throw new Error(`${exe} --version printed ${JSON.stringify(out && out.trim())}, expected "${want}"`)
  }
  log(`${triple}: ${want}${runner.length ? ` (under ${runner[0]})` : ''}`)
  smokes.push(mcpSmoke(runner, exe).then(() => log(`${triple}: MCP job ran${runner.length ? ` under ${runner[0]}` : ''}`)))
}

/** MCP sessions with the built servers (a short job each), awaited before the script ends. */
const smokes = []

/** The host's server and addon from one dev-profile build of the workspace (see the top). */
function buildDev () {
  run('cargo', ['build', '--workspace', '--all-targets', '--exclude', 'ptyjobs-bench'], { cwd: ROOT })
  const dir = join(targetDir(), 'debug')
  const lib = { win32: 'ptyjobs_node.dll', darwin: 'libptyjobs_node.dylib' }[process.platform] ?? 'libptyjobs_node.so'
  const server = join(dir, platform.binaryName(process.platform))
  const cdylib = join(dir, lib)
  for (const f of [server, cdylib]) if (!existsSync(f)) throw new Error(`cargo finished but ${f} is missing`)
  const addon = join(NODE_CRATE, `ptyjobs.${host.triple}.node`)
  rmSync(addon, { force: true }) // a hard link or copy of a loaded library must be a new file
  copyFileSync(cdylib, addon)
  log(`dev build (the tests'): ${server.slice(ROOT.length + 1)} and ${addon.slice(ROOT.length + 1)}, not the published binaries (npm run build:host)`)
  return { server, addon }
}

function buildPackage (triple, opts, version) {
  const t = platform.TARGETS[triple]
  const dir = join(NPM_DIR, triple)
  mkdirSync(dir, { recursive: true })
  const dev = opts.dev ? buildDev() : null
  const exe = dev ? dev.server : buildServer(t.server)
  const server = checkBinary(exe, t, 'server', { maxMinOs: MACOS_DEPLOYMENT_TARGET[t.server] })
  log(`${triple}: server is ${describe(server)}`)
  checkServerVersion(triple, exe, version)
  const bin = join(dir, platform.binaryName(t.os))
  copyFileSync(exe, bin)
  chmodSync(bin, 0o755)
  const addon = dev ? dev.addon : buildAddon(triple, { reuse: opts.hostOnly })
  if (addon) {
    log(`${triple}: addon is ${describe(checkBinary(addon, t, 'addon', { maxMinOs: MACOS_DEPLOYMENT_TARGET[t.addon] }))}`)
    copyFileSync(addon, join(dir, `ptyjobs.${triple}.node`))
  }
  return { triple, files: [bin, addon && join(dir, `ptyjobs.${triple}.node`)].filter(Boolean) }
}

function describe (d) {
  return `${d.format} ${d.cpu} ${d.kind}${d.minOs ? `, macOS ${d.minOs}+` : ''}${d.dylibs ? `, loads ${d.dylibs.join(' ') || 'nothing'}` : ''}`
}

/**
 * Put in front of napi's loader in the main package. napi-rs's loader looks on Windows x64 for
 * `-win32-x64-gnu` only when Node itself was built with MinGW, and for `-win32-x64-msvc`
 * otherwise; ours is built with the GNU toolchain (no MSVC here) and loads in the usual
 * MSVC-built Node as well (napi-rs resolves the N-API symbols from the running node.exe).
 * So point the loader at it through its documented override, NAPI_RS_NATIVE_LIBRARY_PATH, for
 * the duration of the load only (the jobs must not inherit it). Kept outside the loader's code,
 * not wrapped around it, so its exports stay visible to Node's ESM named-export detection.
 */
export const WIN32_GNU_PRELUDE = `// ptyjobs (scripts/build-packages.mjs): load the win32-x64-gnu addon on Windows x64, see there.
const __ptyjobsWin32Gnu = (() => {
  if (process.platform !== 'win32' || process.arch !== 'x64' || process.env.NAPI_RS_NATIVE_LIBRARY_PATH) return null
  for (const candidate of ['./ptyjobs.win32-x64-gnu.node', 'ptyjobs-win32-x64-gnu']) {
    try { return require.resolve(candidate) } catch (_) {}
  }
  return null
})()
if (__ptyjobsWin32Gnu) process.env.NAPI_RS_NATIVE_LIBRARY_PATH = __ptyjobsWin32Gnu
`
export const WIN32_GNU_POSTLUDE = `
// ptyjobs: the override was ours, for this load only.
if (__ptyjobsWin32Gnu) delete process.env.NAPI_RS_NATIVE_LIBRARY_PATH
`

/** Kept jobs (`execute(cmd, { keep: true })`) run in `ptyjobs keeper`: the server binary of the
 *  platform package, next to the addon. The engine finds it through PTYJOBS_BIN (a user's own
 *  setting wins); a platform without a binary leaves it unset, and `keep` then says so. */
export const KEEPER_POSTLUDE = `
// ptyjobs: where kept jobs' keeper is (the platform package's server binary).
if (!process.env.PTYJOBS_BIN) {
  try { process.env.PTYJOBS_BIN = require('./lib/platform.js').resolveBinary().binary } catch (_) {}
}
`

/** The main package's `main` is napi's generated loader, committed in crates/node. */
function fillMain () {
  let copied = 0
  for (const f of ['index.js', 'index.d.ts']) {
    const src = join(NODE_CRATE, f)
    if (!existsSync(src)) { log(`WARNING: ${src.slice(ROOT.length + 1)} is missing: require('ptyjobs') will not load until the binding lands`); continue }
    const text = readFileSync(src, 'utf8')
    writeFileSync(join(NPM_DIR, 'ptyjobs', f), f === 'index.js' ? WIN32_GNU_PRELUDE + text + WIN32_GNU_POSTLUDE + KEEPER_POSTLUDE : text)
    copied++
  }
  return copied
}

/** Before publishing: every published package has its files, binaries executable. */
function verify () {
  const problems = []
  for (const triple of publishedTriples()) {
    const t = platform.TARGETS[triple]
    const bin = join(NPM_DIR, triple, platform.binaryName(t.os))
    const addon = join(NPM_DIR, triple, `ptyjobs.${triple}.node`)
    if (!existsSync(bin)) problems.push(`${bin} is missing`)
    else if (t.os !== 'win32' && !(statSync(bin).mode & 0o111)) problems.push(`${bin} is not executable (chmod +x)`)
    if (!existsSync(addon)) problems.push(`${addon} is missing`)
    for (const [file, role] of [[bin, 'server'], [addon, 'addon']]) {
      if (!existsSync(file)) continue
      try { checkBinary(file, t, role, { maxMinOs: MACOS_DEPLOYMENT_TARGET[t.server] }) } catch (err) { problems.push(err.message) }
    }
  }
  for (const f of ['index.js', 'index.d.ts']) if (!existsSync(join(NPM_DIR, 'ptyjobs', f))) problems.push(`npm/ptyjobs/${f} is missing`)
  const stale = stamp({ check: true })
  if (stale.length) problems.push(`package.json out of date: ${stale.join(', ')}`)
  for (const p of problems) log(`NOT READY: ${p}`)
  if (problems.length) throw new Error(`${problems.length} problem(s); nothing may be published`)
  log(`every package is complete: ${publishedTriples().join(', ')}, ptyjobs`)
}

function size (file) {
  const bytes = statSync(file).size
  const kib = bytes / 1024
  return `${kib > 1024 ? `${(kib / 1024).toFixed(1)} MiB` : `${kib.toFixed(0)} KiB`} (${bytes} bytes)`
}

function main () {
  const args = process.argv.slice(2)
  const opt = (name) => { const i = args.indexOf(name); return i === -1 ? null : args[i + 1] }
  const hostOnly = args.includes('--host-only')
  const dev = args.includes('--dev')
  if (dev && !hostOnly) throw new Error('--dev builds the host package only: add --host-only')
  if (args.includes('--verify')) return verify()
  const version = workspaceVersion()
  stamp({ version })
  fillMain()
  if (args.includes('--main-only')) return

  let wanted
  if (opt('--targets')) wanted = opt('--targets').split(',').filter(Boolean)
  else if (hostOnly) wanted = [host.triple]
  else wanted = publishedTriples()
  for (const w of wanted) if (!platform.TARGETS[w]) throw new Error(`unknown target ${w}; known: ${Object.keys(platform.TARGETS).join(', ')}`)

  const built = []
  const skipped = []
  const failed = []
  for (const triple of wanted) {
    const why = cannotBuild(triple)
    if (why) {
      if (opt('--targets')) throw new Error(`${triple}: ${why}`)
      skipped.push([triple, why])
      continue
    }
    try {
      built.push(buildPackage(triple, { hostOnly, dev }, version))
    } catch (err) {
      log(`ERROR: ${triple}: ${err.message}`)
      failed.push([triple, err.message])
    }
  }
  log(`version ${version}`)
  for (const b of built) log(`built npm/${b.triple}: ${b.files.map((f) => `${f.slice(NPM_DIR.length + 1)} ${size(f)}`).join(', ')}`)
  for (const [t, why] of skipped) log(`skipped ${t}: ${why}`)
  for (const [t, why] of failed) log(`FAILED ${t}: ${why}`)
  if (failed.length) throw new Error(`${failed.length} package(s) failed to build: ${failed.map(([t]) => t).join(', ')}`)
}

try {
  main()
  await Promise.all(smokes)
} catch (err) {
  log(`ERROR: ${err.message}`)
  process.exit(1)
}
