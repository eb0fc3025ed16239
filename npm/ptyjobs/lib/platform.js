'use strict'
// Which prebuilt ptyjobs package serves this machine, and where its server binary is.
// Plain CommonJS, no dependencies: the launcher (bin/ptyjobs.js) and the build script
// (scripts/build-packages.mjs) both read TARGETS, so the platform table exists once.

const fs = require('fs')
const path = require('path')

/**
 * Every platform ptyjobs knows about, keyed by napi-rs's platform name.
 * `server` / `addon`: the Rust targets of the server binary and of the .node addon.
 * On Linux the server is one static musl build that runs on glibc and musl alike,
 * so the -gnu and -musl packages carry the same server binary.
 * Windows is built with the GNU toolchain (mingw), so its package is napi-rs's `win32-x64-gnu`;
 * the addon loads in the usual (MSVC-built) Node all the same (see docs/RELEASE.md).
 * `supported: false` would mean: no package is built or published for it.
 */
const TARGETS = {
  'linux-x64-gnu': { os: 'linux', cpu: 'x64', libc: 'glibc', server: 'x86_64-unknown-linux-musl', addon: 'x86_64-unknown-linux-gnu', supported: true },
  'linux-x64-musl': { os: 'linux', cpu: 'x64', libc: 'musl', server: 'x86_64-unknown-linux-musl', addon: 'x86_64-unknown-linux-musl', supported: true },
  'linux-arm64-gnu': { os: 'linux', cpu: 'arm64', libc: 'glibc', server: 'aarch64-unknown-linux-musl', addon: 'aarch64-unknown-linux-gnu', supported: true },
  'linux-arm64-musl': { os: 'linux', cpu: 'arm64', libc: 'musl', server: 'aarch64-unknown-linux-musl', addon: 'aarch64-unknown-linux-musl', supported: true },
  'darwin-x64': { os: 'darwin', cpu: 'x64', libc: null, server: 'x86_64-apple-darwin', addon: 'x86_64-apple-darwin', supported: true },
  'darwin-arm64': { os: 'darwin', cpu: 'arm64', libc: null, server: 'aarch64-apple-darwin', addon: 'aarch64-apple-darwin', supported: true },
  'win32-x64-gnu': { os: 'win32', cpu: 'x64', libc: null, server: 'x86_64-pc-windows-gnu', addon: 'x86_64-pc-windows-gnu', supported: true }
}

const SCOPE_PREFIX = 'ptyjobs-'

function packageName (triple) {
  return SCOPE_PREFIX + triple
}

function binaryName (platform) {
  return platform === 'win32' ? 'ptyjobs.exe' : 'ptyjobs'
}

/** 'gnu' or 'musl' on Linux (a guess is fine: both packages carry the same static server). */
function detectLibc (readFile) {
  const read = readFile || ((p) => fs.readFileSync(p, 'latin1'))
  try {
    const ldd = read('/usr/bin/ldd')
    if (ldd.includes('musl')) return 'musl'
    if (/GNU C Library|glibc|GLIBC/.test(ldd)) return 'gnu'
  } catch (_) {}
  try {
    const header = process.report.getReport().header
    return header.glibcVersionRuntime ? 'gnu' : 'musl'
  } catch (_) {}
  return 'gnu'
}

/** Triples that can serve this machine, best first. Empty when none can. */
function candidateTriples ({ platform, arch, libc }) {
  if (platform === 'linux') {
    const own = libc === 'musl' ? 'musl' : 'gnu'
    const other = own === 'musl' ? 'gnu' : 'musl'
    return [`linux-${arch}-${own}`, `linux-${arch}-${other}`].filter((t) => TARGETS[t] && TARGETS[t].supported)
  }
  return Object.keys(TARGETS).filter((t) => TARGETS[t].os === platform && TARGETS[t].cpu === arch && TARGETS[t].supported)
}

function supportedList () {
  return Object.keys(TARGETS).filter((t) => TARGETS[t].supported).join(', ')
}

class LauncherError extends Error {
  constructor (code, message) {
    super(message)
    this.code = code
  }
}

function defaultResolvePackage (name) {
  return path.dirname(require.resolve(name + '/package.json'))
}

/**
 * Find the server binary. Returns { binary, source, triple? } or throws a LauncherError
 * whose message says what to do (code: BAD_OVERRIDE, UNSUPPORTED_PLATFORM, PACKAGE_MISSING).
 */
function resolveBinary (opts) {
  const o = opts || {}
  const env = o.env || process.env
  const platform = o.platform || process.platform
  const arch = o.arch || process.arch
  const exists = o.exists || fs.existsSync
  const resolvePackage = o.resolvePackage || defaultResolvePackage

  const override = env.PTYJOBS_BINARY
  if (override) {
    if (!exists(override)) {
      throw new LauncherError('BAD_OVERRIDE', `PTYJOBS_BINARY is set to "${override}", but no file is there. Point it at a ptyjobs server binary, or unset it to use the prebuilt one.`)
    }
    return { binary: override, source: 'PTYJOBS_BINARY' }
  }

  const libc = platform === 'linux' ? (o.libc || detectLibc(o.readFile)) : null
  const triples = candidateTriples({ platform, arch, libc })
  const where = platform === 'linux' ? `${platform}-${arch} (${libc === 'musl' ? 'musl' : 'glibc'})` : `${platform}-${arch}`
  if (triples.length === 0) {
    throw new LauncherError('UNSUPPORTED_PLATFORM', `ptyjobs has no prebuilt server for ${where}. Prebuilt platforms: ${supportedList()}. Elsewhere, build the server from source (cargo build --release --bin ptyjobs) and set PTYJOBS_BINARY to it.`)
  }

  for (const triple of triples) {
    let dir
    try {
      dir = resolvePackage(packageName(triple))
    } catch (_) {
      continue
    }
    const binary = path.join(dir, binaryName(platform))
    if (exists(binary)) return { binary, source: packageName(triple), triple }
  }
  const wanted = packageName(triples[0])
  throw new LauncherError('PACKAGE_MISSING', `the package "${wanted}", which carries the ptyjobs server for ${where}, is not installed. It is an optional dependency of "ptyjobs": it was left out by --omit=optional / --no-optional, or by a lockfile made on another platform. Reinstall without omitting optional dependencies (npm install ptyjobs, or npx -y ptyjobs@latest), or set PTYJOBS_BINARY to a ptyjobs server binary.`)
}

module.exports = { TARGETS, packageName, binaryName, detectLibc, candidateTriples, resolveBinary, LauncherError }
