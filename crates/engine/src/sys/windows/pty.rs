//! The pseudo console side of a job: the pipes ConPTY reads input from and writes its rendering
//! to, the reader thread, writes and resizes. Starting the shell on it is in [`super::spawn`].
//!
//! Reading: one thread per job (Windows has no readiness polling for anonymous pipes). It reads
//! what the output pipe holds (`PeekNamedPipe`, then `ReadFile`), and between reads waits on
//! the shell's process handle for a few milliseconds, so an exit is seen at once. The output
//! pipe reaches EOF only when the pseudo console is closed, so once the shell has exited the
//! console is closed (on a helper thread: `ClosePseudoConsole` may wait until its output is
//! read) and the pipe is drained to EOF before the job is reported final.

use std::os::windows::io::{AsRawHandle, OwnedHandle};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{ERROR_NO_DATA, WAIT_OBJECT_0};
use windows_sys::Win32::Storage::FileSystem::{ReadFile, WriteFile};
use windows_sys::Win32::System::Console::{COORD, ClosePseudoConsole, HPCON, ResizePseudoConsole};
use windows_sys::Win32::System::Pipes::PeekNamedPipe;
use windows_sys::Win32::System::Threading::{GetExitCodeProcess, WaitForSingleObject};

use super::lane::LaneReader;
pub(crate) use crate::pipeline::ExitInfo;
use crate::pipeline::{IDLE, Lane};

use crate::error::{Error, Result};
use crate::sys::Leader;

const READ_BUF: usize = 64 * 1024;
/// How long the reader waits on the shell between looks at the output pipe.
const POLL: Duration = Duration::from_millis(10);

/// A job's pseudo console; closed once (by the reader after the shell exits, or when the last
/// holder drops it).
#[derive(Debug)]
pub(crate) struct Console(Mutex<Option<HPCON>>);

impl Console {
    pub(crate) fn new(hpc: HPCON) -> Self {
        Self(Mutex::new(Some(hpc)))
    }

    fn close(&self) {
        let hpc = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(hpc) = hpc {
            // SAFETY: a pseudo console handle created by CreatePseudoConsole, closed once.
            unsafe { ClosePseudoConsole(hpc) };
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.close();
    }
}

/// A job's console as its holders see it: the input pipe (writes), the output pipe (the
/// reader's) and the console itself (resizes; closed by the reader once the shell exited).
#[derive(Debug)]
pub(crate) struct Master {
    pub(crate) input: OwnedHandle,
    pub(crate) output: OwnedHandle,
    pub(crate) console: Arc<Console>,
}

/// Resizes the pseudo console. Wine answers `E_NOTIMPL`: tolerated (the emulated screen is
/// resized all the same).
pub(crate) fn set_size(master: &Master, cols: u16, rows: u16) -> Result<()> {
    let guard = master
        .console
        .0
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(hpc) = *guard else {
        return Ok(());
    };
    let size = COORD {
        X: i16::try_from(cols).unwrap_or(i16::MAX),
        Y: i16::try_from(rows).unwrap_or(i16::MAX),
    };
    // SAFETY: a live pseudo console handle (the lock keeps it from being closed meanwhile).
    let hr = unsafe { ResizePseudoConsole(hpc, size) };
    const E_NOTIMPL: i32 = 0x8000_4001_u32 as i32;
    if hr < 0 && hr != E_NOTIMPL {
        return Err(Error::Io(std::io::Error::from_raw_os_error(hr)));
    }
    Ok(())
}

/// Starts the reader thread of a job (see the module docs): it hands what it reads to `lane`
/// (waiting while the lane is full: back-pressure), and the exit last. After the shell exits,
/// output is drained for at most `drain`; then the drain timeout is reported to `lane`, whose
/// sink ends what is left of the tree.
pub(crate) fn start_reader(
    leader: Arc<Leader>,
    master: Arc<Master>,
    drain: Duration,
    lane: Arc<Lane>,
) -> Result<()> {
    crate::pipeline::start_workers()?;
    std::thread::Builder::new()
        .name(format!("ptyjobs-job-{}", leader.pid))
        .stack_size(256 * 1024)
        .spawn(move || read_loop(&leader, &master, drain, LaneReader::new(lane)))?;
    Ok(())
}

/// Bytes waiting in the pipe; `None` at EOF (the write side is closed and the pipe empty).
fn available(pipe: &OwnedHandle) -> Option<u32> {
    let mut avail = 0u32;
    // SAFETY: a valid pipe handle; only the count is asked for.
    let ok = unsafe {
        PeekNamedPipe(
            pipe.as_raw_handle(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            &mut avail,
            std::ptr::null_mut(),
        )
    };
    (ok != 0).then_some(avail)
}

/// Reads up to `buf.len()` bytes; `None` at EOF or on an error.
fn read(pipe: &OwnedHandle, buf: &mut [u8]) -> Option<usize> {
    let mut n = 0u32;
    let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
    // SAFETY: a valid pipe handle and a buffer of `len` bytes that outlives the call.
    let ok = unsafe {
        ReadFile(
            pipe.as_raw_handle(),
            buf.as_mut_ptr(),
            len,
            &mut n,
            std::ptr::null_mut(),
        )
    };
    (ok != 0 && n > 0).then_some(n as usize)
}

/// The shell's exit code, if it has exited (waiting up to `wait`).
fn exited(leader: &Leader, wait: Duration) -> Option<ExitInfo> {
    let ms = u32::try_from(wait.as_millis()).unwrap_or(u32::MAX);
    let process = leader.tree.process();
    // SAFETY: the process handle is owned by the leader, which outlives the call.
    if unsafe { WaitForSingleObject(process, ms) } != WAIT_OBJECT_0 {
        return None;
    }
    let mut code = 0u32;
    // SAFETY: as above, with a u32 that outlives the call.
    unsafe { GetExitCodeProcess(process, &mut code) };
    ExitInfo::from_status(Some(code as i32), None)
}

fn read_loop(leader: &Arc<Leader>, reader: &Master, drain: Duration, mut lane: LaneReader) {
    let mut buf = vec![0u8; READ_BUF];
    let mut exit: Option<ExitInfo> = None;
    let mut drain_until: Option<Instant> = None;
    let mut ended_leftovers = false;
    let mut last_data: Option<Instant> = None;
    loop {
        let eof = match available(&reader.output) {
            None => true,
            Some(0) => false,
            Some(n) => {
                let want = (n as usize).min(buf.len());
                match read(&reader.output, &mut buf[..want]) {
                    Some(got) => {
                        lane.push(&buf[..got]);
                        last_data = Some(Instant::now());
                        continue;
                    }
                    None => true,
                }
            }
        };
        if eof && exit.is_some() {
            break;
        }
        if exit.is_none() {
            // The wait doubles as the pause between looks at the pipe.
            exit = exited(leader, if eof { Duration::from_secs(3600) } else { POLL });
            if exit.is_some() {
                drain_until = Some(Instant::now() + drain);
                let console = reader.console.clone();
                // EOF comes only once the console is closed; the close may wait for its
                // output to be read, which this thread does meanwhile.
                std::thread::spawn(move || console.close());
            }
            if eof {
                continue;
            }
        } else {
            std::thread::sleep(POLL);
        }
        if let Some(until) = drain_until
            && Instant::now() >= until
        {
            if ended_leftovers {
                break; // give up on a console that never closes
            }
            // The lane's sink ends what is left of the job (through the kill path, which
            // ends the Job Object while the shell is unreaped).
            lane.lane().drain_timeout();
            ended_leftovers = true;
            drain_until = Some(Instant::now() + Duration::from_secs(1));
        }
        // Quiet probes as the lane's sink asks for them: none here today (a console does not
        // tell which process waits for input, so its `quiet_delay` is `None`).
        lane.tick();
        if let Some(at) = last_data
            && at.elapsed() >= IDLE
        {
            last_data = None;
            lane.lane().idle();
        }
    }
    let exit = exit.unwrap_or(ExitInfo::Code(-1));
    // The job is over when its shell is: what it left running in its Job Object ends with it.
    leader.reap(|| {
        if leader.tree.alive() {
            leader.tree.signal(crate::sys::sig::SIGKILL);
        }
        Some(())
    });
    lane.lane().exit(exit);
}

/// What a console is typed: a newline (`\n` or `\r\n`) becomes Enter (`\r`), which is what
/// a console's Enter key sends (ConPTY would show a bare `\n` as `^J`). Returns the bytes and,
/// for each, the length of `data` consumed once it is written.
fn typed(data: &[u8]) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::with_capacity(data.len());
    let mut ends = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < data.len() {
        match data[i] {
            b'\r' if data.get(i + 1) == Some(&b'\n') => {
                out.push(b'\r');
                i += 2;
            }
            b'\n' => {
                out.push(b'\r');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
        ends.push(i);
    }
    (out, ends)
}

/// Writes as much of `data` as the console's input pipe takes (the pipe is in no-wait mode,
/// so a job that does not read never blocks the caller), newlines typed as Enter (see
/// [`typed`]). Returns how much of `data` was written.
pub(crate) fn write_some(master: &Master, data: &[u8]) -> std::io::Result<usize> {
    let (bytes, ends) = typed(data);
    let mut n = 0u32;
    let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    // SAFETY: a valid pipe handle and `len` bytes that outlive the call.
    let ok = unsafe {
        WriteFile(
            master.input.as_raw_handle(),
            bytes.as_ptr(),
            len,
            &mut n,
            std::ptr::null_mut(),
        )
    };
    let consumed = |n: u32| match n as usize {
        0 => 0,
        n => ends.get(n - 1).copied().unwrap_or(data.len()),
    };
    if ok == 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(ERROR_NO_DATA as i32) && n == 0 {
            return Err(e); // the console is gone
        }
        return if n > 0 { Ok(consumed(n)) } else { Err(e) };
    }
    Ok(consumed(n))
}

/// Whether the terminal echoes input: a console in its default (cooked) mode does, and
/// whether a program turned echo off cannot be read from outside it.
pub(crate) fn echoes(_master: &Master) -> bool {
    true
}

/// The foreground group, echo and line mode: not something a pseudo console tells.
pub(crate) fn foreground(_master: &Master) -> Option<(u32, bool, bool)> {
    None
}

#[cfg(test)]
mod tests {
    use super::typed;

    #[test]
    fn newlines_are_typed_as_enter() {
        assert_eq!(typed(b"a\nb\r\nc\r").0, b"a\rb\rc\r");
        assert_eq!(typed(b"a\r\n").1, [1, 3]);
    }
}
