// How this machine builds for another OS: the environment cargo needs per Rust target.
// Shared by scripts/build-packages.mjs and the tests that cross-build (tests/platforms/cross.test.mjs).
import { spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync, copyFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The oldest macOS each Apple target supports: Rust's own defaults for the two targets.
 * Without it zig stamps the newest macOS it knows as the minimum (a binary built here said
 * "15.0"), and an older Mac would refuse to start it.
 */
export const MACOS_DEPLOYMENT_TARGET = { 'aarch64-apple-darwin': '11.0', 'x86_64-apple-darwin': '10.12' }

/** The mingw linker of the x86_64-pc-windows-gnu target. */
export const MINGW_LINKER = 'x86_64-w64-mingw32-gcc'

const WINDOWS_GNU_LINKER_ENV = 'CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER'

/** Extra environment variables for building `target` (each only when the caller set none). */
export function buildEnv (target, env = process.env) {
  const extra = {}
  if (MACOS_DEPLOYMENT_TARGET[target] && !env.MACOSX_DEPLOYMENT_TARGET) extra.MACOSX_DEPLOYMENT_TARGET = MACOS_DEPLOYMENT_TARGET[target]
  if (target === 'x86_64-pc-windows-gnu' && process.platform !== 'win32' && !env[WINDOWS_GNU_LINKER_ENV]) extra[WINDOWS_GNU_LINKER_ENV] = MINGW_LINKER
  return extra
}

function defaultHas (cmd, args = ['--version']) {
  return spawnSync(cmd, args, { stdio: 'ignore' }).status === 0
}

/** Why the Windows GNU target cannot be linked here (no mingw), or null (also for other targets). */
export function cannotCrossBuild (target, { has = defaultHas, env = process.env } = {}) {
  if (target !== 'x86_64-pc-windows-gnu' || process.platform === 'win32') return null
  const linker = env[WINDOWS_GNU_LINKER_ENV] || MINGW_LINKER
  if (!has(linker, ['--version'])) return `needs the mingw-w64 linker ${linker} (apt-get install gcc-mingw-w64-x86-64)`
  return null
}

/**
 * The environment a Node addon for x86_64-pc-windows-gnu needs from a non-Windows host:
 * napi-build insists on linking against `libnode.dll` (LIBNODE_PATH), although napi-rs resolves
 * Node's functions from the running node.exe at load time on Windows. An empty import library
 * made with mingw's dlltool (nothing is imported from it) satisfies it; it lives in the target
 * dir and is never shipped. Used by scripts/build-packages.mjs and scripts/build-windows.mjs.
 */
export function windowsGnuAddonEnv (targetDir, env = process.env) {
  if (process.platform === 'win32' || env.LIBNODE_PATH) return {}
  const lib = join(targetDir, 'x86_64-pc-windows-gnu', 'libnode')
  mkdirSync(lib, { recursive: true })
  writeFileSync(join(lib, 'node.def'), 'LIBRARY node.exe\nEXPORTS\n')
  const r = spawnSync('x86_64-w64-mingw32-dlltool', ['-d', join(lib, 'node.def'), '-l', join(lib, 'libnode.dll.a')], { stdio: 'inherit' })
  if (r.status !== 0) throw new Error('x86_64-w64-mingw32-dlltool could not make the empty libnode import library')
  // napi-build checks that libnode.dll exists; the linker takes libnode.dll.a first.
  copyFileSync(join(lib, 'libnode.dll.a'), join(lib, 'libnode.dll'))
  return { LIBNODE_PATH: lib }
}
