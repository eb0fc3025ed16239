//! A scheduling hint for a face's own request threads.

/// The slice asked for: the shortest Linux accepts (0.1 ms; the default grows with the CPU count:
/// 1.4 ms on the 2-core test machine).
#[cfg(target_os = "linux")]
const SLICE_NS: u64 = 100_000;

/// `struct sched_attr` as of Linux 3.14 (`SCHED_ATTR_SIZE_VER0`, 48 bytes), which
/// `sched_getattr`/`sched_setattr` accept on every later kernel.
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// Asks the scheduler to run the calling thread promptly when it wakes, even while a job keeps
/// its CPU busy, without any process or thread it starts inheriting that. Best effort: returns
/// whether the hint was taken (always `false` off Linux).
///
/// Why: `posix_spawn` (a vfork) puts a job's shell on the spawning thread's CPU and wakes that
/// thread there once the shell has exec'd; the shell then starts up for about a millisecond of
/// CPU, and with the default slice the woken thread waited in that CPU's queue until it was
/// done, so on a two-core machine `execute_command` often answered a millisecond late. A short
/// EEVDF slice (`sched_runtime` of a `SCHED_OTHER` thread, Linux ≥ 6.12; older kernels ignore
/// it) lets the woken thread preempt. It asks for shorter turns, not more CPU: a thread that
/// runs long gets no more than its fair share.
///
/// `SCHED_FLAG_RESET_ON_FORK` keeps it from spreading: every child and thread the calling thread
/// creates starts with the default slice. That flag would also reset a negative nice or a
/// real-time policy in children, so the hint is given only to a `SCHED_OTHER` thread with
/// nice ≥ 0, where the flag changes nothing else.
pub(crate) fn prefer_prompt_wakeups() -> bool {
    #[cfg(target_os = "linux")]
    {
        const SIZE: u32 = std::mem::size_of::<SchedAttr>() as u32;
        let mut attr = SchedAttr::default();
        // SAFETY: `attr` is a writable sched_attr of SIZE bytes; pid 0 is the calling thread.
        let got = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &raw mut attr, SIZE, 0) };
        if got != 0 || attr.policy != libc::SCHED_OTHER as u32 || attr.nice < 0 {
            return false;
        }
        let hint = SchedAttr {
            size: SIZE,
            policy: attr.policy,
            flags: libc::SCHED_FLAG_RESET_ON_FORK as u64,
            nice: attr.nice,
            runtime: SLICE_NS,
            ..SchedAttr::default()
        };
        // SAFETY: `hint` is a valid sched_attr of SIZE bytes; pid 0 is the calling thread.
        let set = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &raw const hint, 0) };
        if set != 0 {
            tracing::debug!(
                "no short scheduling slice: {}",
                std::io::Error::last_os_error()
            );
        }
        set == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}
