// What a built file is, read from its header: ELF, Mach-O or PE, for which CPU, executable or
// shared library. Cross-built packages cannot be run here (macOS, Windows), so this is how the
// build script and the tests prove each package carries a binary for its own platform.
//
//   import { describeBinary, expectedFormat, checkBinary } from './binfmt.mjs'
//   describeBinary('npm/darwin-arm64/ptyjobs')
//     → { format: 'mach-o', cpu: 'arm64', kind: 'executable', dylibs: ['/usr/lib/libSystem.B.dylib'], minOs: '11.0' }
import { openSync, readSync, closeSync, fstatSync } from 'node:fs'

const ELF_MACHINES = { 0x3e: 'x64', 0xb7: 'arm64' }
const MACHO_CPUS = { 0x01000007: 'x64', 0x0100000c: 'arm64' }
const MACHO_FILETYPES = { 2: 'executable', 6: 'dylib', 8: 'bundle' }
const PE_MACHINES = { 0x8664: 'x64', 0xaa64: 'arm64' }
const LC_LOAD_DYLIB = 0x0c
const LC_LOAD_WEAK_DYLIB = 0x80000018
const LC_BUILD_VERSION = 0x32
const LC_VERSION_MIN_MACOSX = 0x24

/** The first `max` bytes of `file` (a Mach-O's load commands sit right after its header). */
function head (file, max = 64 * 1024) {
  const fd = openSync(file, 'r')
  try {
    const len = Math.min(max, fstatSync(fd).size)
    const buf = Buffer.alloc(len)
    readSync(fd, buf, 0, len, 0)
    return buf
  } finally {
    closeSync(fd)
  }
}

function machO (buf) {
  const cputype = buf.readUInt32LE(4)
  const filetype = buf.readUInt32LE(12)
  const ncmds = buf.readUInt32LE(16)
  const out = { format: 'mach-o', cpu: MACHO_CPUS[cputype] ?? `cputype 0x${cputype.toString(16)}`, kind: MACHO_FILETYPES[filetype] ?? `filetype ${filetype}`, dylibs: [], minOs: null }
  let at = 32 // sizeof(mach_header_64)
  for (let i = 0; i < ncmds && at + 8 <= buf.length; i++) {
    const cmd = buf.readUInt32LE(at)
    const size = buf.readUInt32LE(at + 4)
    if (size < 8) break
    if ((cmd === LC_LOAD_DYLIB || cmd === LC_LOAD_WEAK_DYLIB) && at + size <= buf.length) {
      const nameAt = at + buf.readUInt32LE(at + 8)
      out.dylibs.push(buf.toString('latin1', nameAt, at + size).replace(/\0.*$/s, ''))
    }
    // minos, encoded xxxx.yy.zz in nibbles
    const minos = cmd === LC_BUILD_VERSION ? at + 12 : cmd === LC_VERSION_MIN_MACOSX ? at + 8 : -1
    if (minos > 0 && minos + 4 <= buf.length) {
      const v = buf.readUInt32LE(minos)
      out.minOs = `${v >>> 16}.${(v >>> 8) & 0xff}`
    }
    at += size
  }
  return out
}

function elf (buf) {
  if (buf[4] !== 2 || buf[5] !== 1) return { format: 'elf', cpu: 'not 64-bit little-endian', kind: null }
  const type = buf.readUInt16LE(16)
  const machine = buf.readUInt16LE(18)
  // ET_EXEC, or ET_DYN (a shared library, and also a position-independent executable).
  return { format: 'elf', cpu: ELF_MACHINES[machine] ?? `e_machine 0x${machine.toString(16)}`, kind: type === 2 ? 'executable' : type === 3 ? 'shared' : `e_type ${type}` }
}

function pe (buf) {
  const at = buf.readUInt32LE(0x3c)
  if (at + 24 > buf.length || buf.readUInt32LE(at) !== 0x00004550) return { format: 'not PE (MZ without a PE header)' }
  const machine = buf.readUInt16LE(at + 4)
  const characteristics = buf.readUInt16LE(at + 22)
  return { format: 'pe', cpu: PE_MACHINES[machine] ?? `machine 0x${machine.toString(16)}`, kind: characteristics & 0x2000 ? 'dll' : 'executable' }
}

/** The format, CPU and kind of `file` (for Mach-O also the dylibs it loads and its minimum macOS). */
export function describeBinary (file) {
  const buf = head(file)
  if (buf.length >= 32 && buf.readUInt32LE(0) === 0xfeedfacf) return machO(buf)
  if (buf.length >= 64 && buf.readUInt32BE(0) === 0x7f454c46) return elf(buf)
  if (buf.length >= 64 && buf.toString('latin1', 0, 2) === 'MZ') return pe(buf)
  if (buf.length >= 4 && buf.readUInt32BE(0) === 0xcafebabe) return { format: 'mach-o universal (fat)' }
  return { format: `unknown (first bytes ${buf.subarray(0, 4).toString('hex')})` }
}

/**
 * What the `role` ('server' or 'addon') file of a package for `target` (an entry of
 * platform.TARGETS) must be: its format, CPU, and the kinds that are acceptable.
 */
export function expectedFormat (target, role) {
  const format = { linux: 'elf', darwin: 'mach-o', win32: 'pe' }[target.os]
  const kinds = {
    elf: { server: ['executable', 'shared'], addon: ['shared'] }, // a static-pie server is ET_DYN
    'mach-o': { server: ['executable'], addon: ['dylib', 'bundle'] },
    pe: { server: ['executable'], addon: ['dll'] }
  }[format][role]
  return { format, cpu: target.cpu, kinds }
}

function versionAbove (a, b) {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number))
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if ((x[i] || 0) !== (y[i] || 0)) return (x[i] || 0) > (y[i] || 0)
  }
  return false
}

/**
 * Throws unless `file` is what a package for `target` must carry as its `role`; returns the
 * description. A Mach-O may load only system libraries (a Homebrew path would not exist on a
 * user's Mac), and with `maxMinOs` must not require a newer macOS than that.
 */
export function checkBinary (file, target, role, { maxMinOs } = {}) {
  const got = describeBinary(file)
  const want = expectedFormat(target, role)
  const problems = []
  if (got.format !== want.format) problems.push(`format ${got.format}, expected ${want.format}`)
  else {
    if (got.cpu !== want.cpu) problems.push(`CPU ${got.cpu}, expected ${want.cpu}`)
    if (!want.kinds.includes(got.kind)) problems.push(`kind ${got.kind}, expected ${want.kinds.join(' or ')}`)
    if (maxMinOs && got.minOs && versionAbove(got.minOs, maxMinOs)) problems.push(`needs macOS ${got.minOs}, expected ${maxMinOs} or older (set MACOSX_DEPLOYMENT_TARGET)`)
    if (got.format === 'mach-o' && maxMinOs && !got.minOs) problems.push('no minimum macOS version in its load commands')
    for (const lib of got.dylibs ?? []) if (!/^\/(usr\/lib|System\/Library)\//.test(lib)) problems.push(`loads ${lib}, which is not a system library`)
  }
  if (problems.length) throw new Error(`${file}: ${problems.join('; ')}`)
  return got
}
