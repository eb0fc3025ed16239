//! How often a job's input state is written to its record on disk: only when it differs from
//! what the record holds, and at most once per [`MIN_INTERVAL`]. A job that flips between
//! waiting and printing many times a second (a prompt loop, a watcher that asks between runs)
//! costs at most one record write a second; the state it settles in is written at the next look
//! after the interval (the parse worker looks after every pause of output and on every quiet
//! probe), so the disk lags the job by at most about a second, plus the probe schedule of a
//! long-quiet job. The write itself is `crate::input_record`'s.

use std::time::{Duration, Instant};

use crate::job::InputWait;

/// Shortest time between two record writes for the input state.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// What the record on disk says about input, and when that was written.
#[derive(Debug, Default)]
pub(crate) struct Pace {
    /// The input state the record holds (`None`: not waiting, also a fresh record's).
    written: Option<InputWait>,
    /// When it was last written; `None`: never.
    last: Option<Instant>,
}

impl Pace {
    /// Whether `wait` should be written to the record `now`: it differs from what the record
    /// holds and the last write is [`MIN_INTERVAL`] old. When it returns true the caller writes,
    /// and the pace counts the write as done.
    pub(crate) fn due(&mut self, wait: &Option<InputWait>, now: Instant) -> bool {
        if *wait == self.written {
            return false;
        }
        if self
            .last
            .is_some_and(|last| now.saturating_duration_since(last) < MIN_INTERVAL)
        {
            return false;
        }
        self.written.clone_from(wait);
        self.last = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(prompt: &str) -> Option<InputWait> {
        Some(InputWait {
            echo: true,
            mode: crate::job::InputMode::Line,
            prompt: prompt.into(),
            pid: 42,
        })
    }

    #[test]
    fn a_change_is_written_at_once_and_an_unchanged_state_never() {
        let mut pace = Pace::default();
        let t0 = Instant::now();
        assert!(
            !pace.due(&None, t0),
            "a fresh record already says not waiting"
        );
        assert!(pace.due(&waiting("Name?"), t0));
        assert!(!pace.due(&waiting("Name?"), t0 + Duration::from_secs(10)));
        assert!(pace.due(&None, t0 + Duration::from_secs(10)));
    }

    #[test]
    fn a_job_that_keeps_toggling_writes_at_most_once_per_interval_and_its_last_state() {
        let mut pace = Pace::default();
        let t0 = Instant::now();
        let mut writes = 0;
        let mut last = None;
        // Ten seconds of a job flipping every 50 ms, looked at on every flip.
        for i in 0..200u32 {
            let wait = if i % 2 == 0 { waiting("> ") } else { None };
            if pace.due(&wait, t0 + Duration::from_millis(50) * i) {
                writes += 1;
            }
            last = wait;
        }
        assert!(writes <= 11, "{writes} writes in 10 s");
        assert!(
            writes >= 5,
            "the record follows the job at all: {writes} writes"
        );
        // The state it settles in reaches the record at the next look after the interval.
        let settled = t0 + Duration::from_millis(50 * 200) + MIN_INTERVAL;
        let written = pace.due(&last, settled) || pace.written == last;
        assert!(written, "the settled state is written");
        assert_eq!(pace.written, last);
    }
}
