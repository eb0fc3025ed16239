#!/usr/bin/env node
// Builds the Windows server, target/x86_64-pc-windows-gnu/release/ptyjobs.exe, with mingw
// (linker set in .cargo/config.toml); with --addon also the Node addon (ptyjobs_node.dll,
// to be renamed ptyjobs.win32-x64-gnu.node or as the package wants).
//
// The addon: napi-rs resolves Node's functions at run time on Windows (napi-sys's
// dyn-symbols), yet napi-build insists on a libnode.dll to link against for the gnu target:
// scripts/cross.mjs (windowsGnuAddonEnv, shared with build-packages.mjs) makes an empty import
// library for it in the target dir, never shipped.
//
// Without the mingw toolchain or the Rust target this says why and exits 0: the Windows test
// (tests/platforms/windows.test.mjs) then fails or skips with its own reason.
import { spawnSync } from 'node:child_process'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { windowsGnuAddonEnv } from './cross.mjs'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const TARGET = 'x86_64-pc-windows-gnu'
const addon = process.argv.includes('--addon')

function run (cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: ROOT, ...opts })
  if (r.error) throw r.error
  if (r.status !== 0) process.exit(r.status ?? 1)
}

const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0
if (!has('x86_64-w64-mingw32-gcc')) {
  console.error('build-windows: x86_64-w64-mingw32-gcc not found (apt-get install gcc-mingw-w64-x86-64); not building the Windows server')
  process.exit(0)
}
const targets = spawnSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' })
if (targets.status === 0 && !targets.stdout.split('\n').includes(TARGET)) {
  console.error(`build-windows: the Rust target ${TARGET} is not installed (rustup target add ${TARGET}); not building the Windows server`)
  process.exit(0)
}

run('cargo', ['build', '--release', '--target', TARGET, '-p', 'ptyjobs-mcp'])

if (addon) {
  const meta = spawnSync('cargo', ['metadata', '--format-version', '1', '--no-deps'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 })
  if (meta.status !== 0) throw new Error(`cargo metadata failed: ${meta.stderr}`)
  run('cargo', ['build', '--release', '--target', TARGET, '-p', 'ptyjobs-node'], {
    env: { ...process.env, ...windowsGnuAddonEnv(JSON.parse(meta.stdout).target_directory) }
  })
}
