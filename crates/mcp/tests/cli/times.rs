//! Times are shown to people in their own time zone (chrono's local zone: `TZ`, else the
//! system's), with the offset where a status line prints one.

use std::process::{Command, Stdio};

use crate::harness::{BIN, Fixture};

/// `ptyjobs status <id>` on `dir` with `TZ` set to `tz`: its "started" line.
fn started_line(f: &Fixture, id: &str, tz: &str) -> String {
    let out = Command::new(BIN)
        .arg("--state-dir")
        .arg(f.dir())
        .args(["status", id])
        .env("TZ", tz)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run ptyjobs status");
    assert!(out.status.success(), "status failed: {out:?}");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    text.lines()
        .find(|l| l.trim_start().starts_with("started"))
        .unwrap_or_else(|| panic!("no started line in {text:?}"))
        .to_owned()
}

#[test]
fn status_shows_the_start_in_the_time_zone_of_the_person() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("echo hi");
    // No daylight saving in either zone: the offsets are fixed whatever the date.
    let india = started_line(&f, &id, "Asia/Kolkata");
    let utc = started_line(&f, &id, "UTC");
    assert!(india.contains("+05:30"), "{india}");
    assert!(utc.contains("+00:00"), "{utc}");
    let clock = |l: &str| {
        l.split_whitespace()
            .find(|w| w.len() == 8 && w.as_bytes()[2] == b':')
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no time in {l:?}"))
    };
    let (h_in, h_utc) = (clock(&india), clock(&utc));
    let minutes = |t: &str| {
        let p: Vec<i32> = t.split(':').map(|x| x.parse().expect("number")).collect();
        p[0] * 60 + p[1]
    };
    // The same instant, 5 h 30 min apart on the clock (modulo a day).
    assert_eq!(
        (minutes(&h_in) - minutes(&h_utc)).rem_euclid(24 * 60),
        330,
        "{india} / {utc}"
    );
}
