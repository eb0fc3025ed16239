//! The record's JSON stays readable both ways: records of an older ptyjobs load, and an older
//! ptyjobs reads the records this one writes.

use serde::Deserialize;

use super::*;

/// `meta.json` as ptyjobs wrote it before the record embedded the job's info.
const OLD_RECORD: &str = r#"{
  "format": 1,
  "id": "6f0c2a4e-8a51-4b0e-9d51-0f6a3c1d2b7e",
  "name": "build",
  "command": "make -j2",
  "cwd": "/tmp/work",
  "env_names": ["CI"],
  "process": { "pid": 4242, "start_ticks": 987654 },
  "status": "failed",
  "exit_code": 2,
  "signal": null,
  "started": "2026-11-26T14:00:00Z",
  "finished": "2026-11-26T14:00:05Z",
  "duration_ms": 5000,
  "reason": "exited with code 2",
  "size": [120, 40],
  "server": { "instance": "abc", "process": { "pid": 7, "start_ticks": 11 } },
  "log_truncated": true,
  "screen": {
    "rows": ["make: *** [all] Error 2"], "cursor_row": 1, "cursor_col": 0,
    "cols": 120, "height": 40, "alternate_screen": false, "title": null
  }
}"#;

/// The fields the older ptyjobs required of a record (it ignores any other).
#[derive(Debug, Deserialize, PartialEq)]
struct OldShape {
    format: u32,
    id: crate::job::JobId,
    name: Option<String>,
    command: String,
    cwd: std::path::PathBuf,
    env_names: Vec<String>,
    process: ProcessRef,
    status: JobStatus,
    exit_code: Option<i32>,
    signal: Option<String>,
    started: DateTime<Utc>,
    finished: Option<DateTime<Utc>>,
    duration_ms: u64,
    reason: Option<String>,
    size: (u16, u16),
    server: ServerRef,
    log_truncated: bool,
    screen: Option<ScreenSnapshot>,
}

#[test]
fn a_record_of_the_older_shape_loads() {
    let record = JobRecord::from_json(OLD_RECORD.as_bytes()).expect("the old record loads");
    assert_eq!(record.format, FORMAT);
    assert_eq!(
        record.id.to_string(),
        "6f0c2a4e-8a51-4b0e-9d51-0f6a3c1d2b7e"
    );
    assert_eq!(record.name.as_deref(), Some("build"));
    assert_eq!(record.command, "make -j2");
    assert_eq!(record.status, JobStatus::Failed);
    assert_eq!(record.exit_code, Some(2));
    assert_eq!(record.reason.as_deref(), Some("exited with code 2"));
    assert_eq!(record.size, (120, 40));
    assert_eq!(record.env_names, ["CI"]);
    assert_eq!(record.process.start_ticks, Some(987_654));
    assert!(record.log_truncated);
    let info = record.info(false);
    assert_eq!(
        info.pid, 4242,
        "the pid comes from the process of an old record"
    );
    assert_eq!(info.duration_ms, 5000);
    assert!(!info.this_server);
    assert_eq!(info.input, None);
    assert!(record.info(true).this_server);
}

#[test]
fn a_record_written_now_reads_as_the_older_shape_and_back() {
    let old: OldShape = serde_json::from_str(OLD_RECORD).expect("the literal is the old shape");
    let record = JobRecord::from_json(OLD_RECORD.as_bytes()).expect("the old record loads");
    let json = serde_json::to_vec(&record).expect("a record serializes");
    let read_by_old: OldShape = serde_json::from_slice(&json).expect("the older ptyjobs reads it");
    assert_eq!(read_by_old, old);
    let again = JobRecord::from_json(&json).expect("this ptyjobs reads it back");
    assert_eq!(again, record);
}

#[test]
fn a_running_record_stores_no_duration_and_no_reader() {
    let mut record = JobRecord::from_json(OLD_RECORD.as_bytes()).expect("the old record loads");
    let mut info = record.info(true);
    info.status = JobStatus::Running;
    info.finished = None;
    info.duration_ms = 1234;
    record.update(&info);
    assert_eq!(record.duration_ms, 0);
    assert!(!record.this_server);
    assert_eq!(record.pid, 4242);
}
