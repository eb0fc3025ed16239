//! Escape strings are bounded (issue 11, finding 4): a job writing a 200 MB unterminated OSC, or
//! a 30 MB window title, does not grow the process. Alone in its test binary so the process's
//! peak RSS is this test's.

mod common;

use std::time::Duration;

use common::*;
use ptyjobs_engine::{JobSpec, StoreConfig};

/// This process's peak resident set (VmHWM) in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn huge_escape_strings_stay_bounded() {
    if !std::path::Path::new("/proc/self/status").exists() {
        eprintln!("skipped: no /proc/self/status to read the RSS from");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let m = manager_with(|c| c.store = Some(StoreConfig::new(dir.path())));
    let before = peak_rss_kib();
    // 200 MB inside an OSC that is terminated only at the end, then a 30 MB title.
    let cmd = "printf '\\033]0;'; head -c 200000000 /dev/zero | tr '\\0' x; printf '\\007'; \
               echo after; printf '\\033]2;'; head -c 30000000 /dev/zero | tr '\\0' t; \
               printf '\\007'; echo end";
    let job = m.execute(JobSpec::new(cmd)).unwrap();
    let info = m
        .wait(job.id, Some(Duration::from_secs(240)))
        .await
        .unwrap();
    assert!(info.status.is_final(), "{info:?}");
    let grown_mb = peak_rss_kib().saturating_sub(before) / 1024;
    eprintln!("peak RSS grew by {grown_mb} MB for 230 MB of escape strings");
    assert!(grown_mb < 40, "peak RSS grew by {grown_mb} MB");
    assert_eq!(m.output(job.id, None, None).unwrap().output, "after\nend");
    let screen = m.screen(job.id).unwrap();
    let title = screen.title.unwrap_or_default();
    assert!(
        title.len() <= 4096 && title.starts_with("ttt"),
        "{}",
        title.len()
    );
    // Nothing on disk holds the strings either.
    let mut biggest = 0;
    for entry in walk(dir.path()) {
        biggest = biggest.max(std::fs::metadata(&entry).map_or(0, |m| m.len()));
    }
    assert!(biggest < 64 * 1024, "a state file of {biggest} bytes");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
