//! The Windows reader's side of a job's lane (see `crate::pipeline`): the reader is a thread
//! per job, so where the Unix reactor stops watching a full terminal until the lane's
//! [`Notice::Resume`], this thread waits for it; and it asks the lane's quiet probes when they
//! are due, as the reactor does (none are due where nothing can be looked at: the sink's
//! `quiet_delay` is `None` then).

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::pipeline::{Lane, Notice};
use crate::sync::lock;

/// What the lane told the reader.
#[derive(Default)]
struct Heard {
    /// A [`Notice::Resume`] came since the last push.
    resumed: bool,
    /// The answer to the last quiet request, not acted on yet.
    quiet: Option<Option<Duration>>,
}

/// A blocking reader's handle on its lane.
pub(super) struct LaneReader {
    lane: Arc<Lane>,
    heard: Arc<(Mutex<Heard>, Condvar)>,
    quiet_first: Option<Duration>,
    quiet_since: Instant,
    quiet_due: Option<Instant>,
    /// A quiet request is with the lane; its answer is awaited before another is made.
    quiet_asked: bool,
    /// Output came while a quiet request was out: its answer is out of date.
    quiet_stale: bool,
}

impl LaneReader {
    pub(super) fn new(lane: Arc<Lane>) -> Self {
        let heard = Arc::new((Mutex::new(Heard::default()), Condvar::new()));
        let told = Arc::clone(&heard);
        lane.set_notify(move |n| {
            let mut h = lock(&told.0);
            match n {
                Notice::Resume => h.resumed = true,
                Notice::Quiet(next) => h.quiet = Some(next),
            }
            told.1.notify_all();
        });
        let quiet_first = lane.quiet_delay();
        let now = Instant::now();
        Self {
            lane,
            heard,
            quiet_first,
            quiet_since: now,
            quiet_due: quiet_first.map(|d| now + d),
            quiet_asked: false,
            quiet_stale: false,
        }
    }

    /// The lane.
    pub(super) fn lane(&self) -> &Arc<Lane> {
        &self.lane
    }

    /// Queues bytes read from the terminal, then waits while the lane is full (until its
    /// [`Notice::Resume`]): the producer blocks, as on a real terminal.
    pub(super) fn push(&mut self, bytes: &[u8]) {
        lock(&self.heard.0).resumed = false;
        if !self.lane.push(bytes) {
            let mut h = lock(&self.heard.0);
            while !h.resumed {
                h = self
                    .heard
                    .1
                    .wait(h)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }
        let now = Instant::now();
        self.quiet_since = now;
        self.quiet_due = self.quiet_first.map(|d| now + d);
        self.quiet_stale = self.quiet_asked;
    }

    /// Asks the lane's quiet probe when it is due (call between reads).
    pub(super) fn tick(&mut self) {
        let answer = lock(&self.heard.0).quiet.take();
        let now = Instant::now();
        if let Some(next) = answer {
            self.quiet_asked = false;
            if !std::mem::take(&mut self.quiet_stale) {
                self.quiet_due = next.map(|d| now + d);
            }
        }
        if let Some(at) = self.quiet_due
            && at <= now
            && !self.quiet_asked
        {
            self.quiet_due = None;
            self.quiet_asked = true;
            self.lane
                .quiet(now.saturating_duration_since(self.quiet_since));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{ExitInfo, Sink, start_workers};

    struct Record(Arc<Mutex<Vec<u8>>>);

    impl Sink for Record {
        fn data(&self, bytes: &[u8]) {
            lock(&self.0).extend_from_slice(bytes);
        }
        fn exited(&self, _exit: ExitInfo) {}
        fn drain_timeout(&self) {}
    }

    #[test]
    fn a_full_lane_holds_the_reader_until_it_is_parsed_and_loses_nothing() {
        start_workers().expect("workers");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let lane = Lane::new(Record(seen.clone()));
        let chunk: Vec<u8> = (0..64 * 1024).map(|i| (i % 251) as u8).collect();
        let rounds = 3 * crate::pipeline::LANE_CAP / chunk.len();
        let (pushed, reader_lane) = (Arc::new(Mutex::new(0usize)), lane.clone());
        let (count, bytes) = (pushed.clone(), chunk.clone());
        let reader = std::thread::spawn(move || {
            let mut r = LaneReader::new(reader_lane);
            for _ in 0..rounds {
                r.push(&bytes);
                *lock(&count) += 1;
            }
        });
        // Closed, the lane takes one cap's worth and then holds the reader (in its last push,
        // not counted yet).
        let deadline = Instant::now() + Duration::from_secs(20);
        while *lock(&pushed) < crate::pipeline::LANE_CAP / chunk.len() - 1 {
            assert!(
                Instant::now() < deadline,
                "the reader never filled the lane"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(
            *lock(&pushed) < crate::pipeline::LANE_CAP / chunk.len(),
            "a full lane holds the reader"
        );
        lane.open();
        reader
            .join()
            .expect("the reader finishes once the lane is parsed");
        let deadline = Instant::now() + Duration::from_secs(20);
        while lock(&seen).len() < rounds * chunk.len() {
            assert!(Instant::now() < deadline, "not everything was parsed");
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(*lock(&seen), chunk.repeat(rounds));
    }
}
