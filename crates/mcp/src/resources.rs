//! Each job as two MCP resources, `ptyjobs://jobs/{job_id}/output` (the clean transcript) and
//! `ptyjobs://jobs/{job_id}/screen` (the visible screen), listed while the job is known.
//!
//! The output resource also reads as a stream of lines: `ptyjobs://jobs/{job_id}/output?from=N`
//! answers the job's final lines from line `N` on (the engine's `follow`, as `ptyjobs logs -f`
//! and Node's `stream` read), and its `_meta.next` is the `from` of the next read — so a
//! subscribed client reads only what is new after each update.
//!
//! A subscribed resource gets `notifications/resources/updated` when the job prints (at most
//! [`MIN_INTERVAL`] apart, changes in between coalesced) and when it ends. The tools stay the
//! primary interface: many clients ignore resources.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use ptyjobs_engine::{JobId, JobManager};
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, ResourceUpdatedNotificationParam,
};
use rmcp::{ErrorData, Peer, RoleServer};
use tokio::task::AbortHandle;

use crate::budget::{self, OUTPUT_BUDGET};

/// Shortest time between two update notifications of one resource (at most 4 a second).
pub const MIN_INTERVAL: Duration = Duration::from_millis(250);

const PREFIX: &str = "ptyjobs://jobs/";
/// Lines of an output resource (and at most [`OUTPUT_BUDGET`] bytes of them).
const OUTPUT_LINES: usize = 1000;

/// Which view of a job a resource shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    Output,
    Screen,
}

impl View {
    fn name(self) -> &'static str {
        match self {
            Self::Output => "output",
            Self::Screen => "screen",
        }
    }
}

fn uri(id: JobId, view: View) -> String {
    format!("{PREFIX}{id}/{}", view.name())
}

/// Parses one of our resource URIs, with the `from` of an output stream read; anything else
/// is a "resource not found" error.
fn parse_from(uri: &str) -> Result<(JobId, View, Option<u64>), ErrorData> {
    let (base, from) = match uri.split_once("?from=") {
        Some((base, n)) if base.ends_with("/output") => (base, Some(n)),
        _ => (uri, None),
    };
    let (id, view) = parse(base)?;
    let from = from
        .map(|n| {
            n.parse::<u64>().map_err(|_| {
                ErrorData::invalid_params(
                    format!("from={n:?} in {uri:?} is not a line number"),
                    None,
                )
            })
        })
        .transpose()?;
    Ok((id, view, from))
}

/// Parses one of our resource URIs; anything else is a "resource not found" error.
fn parse(uri: &str) -> Result<(JobId, View), ErrorData> {
    let not_found = || {
        ErrorData::resource_not_found(
            format!(
                "no resource {uri:?}: job resources are ptyjobs://jobs/{{job_id}}/output and \
                 ptyjobs://jobs/{{job_id}}/screen (see resources/list)"
            ),
            None,
        )
    };
    let rest = uri.strip_prefix(PREFIX).ok_or_else(not_found)?;
    let (id, view) = rest.split_once('/').ok_or_else(not_found)?;
    let view = match view {
        "output" => View::Output,
        "screen" => View::Screen,
        _ => return Err(not_found()),
    };
    Ok((id.parse().map_err(|_| not_found())?, view))
}

/// The resources of the known jobs, newest job first, from `cursor` (an index a previous page
/// gave) on, at most [`OUTPUT_BUDGET`] bytes of them; `next_cursor` continues.
pub fn list(jobs: &JobManager, cursor: Option<&str>) -> Result<ListResourcesResult, ErrorData> {
    let start = match cursor {
        None => 0,
        Some(c) => c.parse::<usize>().map_err(|_| {
            ErrorData::invalid_params(
                format!("cursor {c:?} is not one resources/list gave: pass its nextCursor"),
                None,
            )
        })?,
    };
    let all: Vec<_> = jobs
        .list()
        .into_iter()
        .flat_map(|j| {
            let label = budget::shorten(
                j.name.clone().unwrap_or_else(|| j.command.clone()),
                budget::LIST_TEXT_BYTES,
            );
            [View::Output, View::Screen].map(|view| (j.id, view, label.clone()))
        })
        .collect();
    let total = all.len();
    let resources = budget::page(
        all.into_iter().skip(start).map(|(id, view, label)| {
            Resource::new(uri(id, view), format!("{label} ({})", view.name()))
                .with_description(match view {
                    View::Output => {
                        "The job's latest output as clean text (last 1000 lines, at most 64 KiB)."
                    }
                    View::Screen => "The job's visible terminal screen right now (at most 64 KiB).",
                })
                .with_mime_type("text/plain")
        }),
        OUTPUT_BUDGET,
    );
    let end = start.saturating_add(resources.len()).min(total);
    let mut result = ListResourcesResult::with_all_items(resources);
    result.next_cursor = (end < total).then(|| end.to_string());
    // Jobs come and go: a client must not cache the list.
    result.ttl_ms = Some(0);
    Ok(result)
}

/// The two URI templates.
pub fn templates() -> ListResourceTemplatesResult {
    let t = |view: View, what: &str| {
        ResourceTemplate::new(
            format!("{PREFIX}{{job_id}}/{}", view.name()),
            format!("job {}", view.name()),
        )
        .with_description(what.to_owned())
        .with_mime_type("text/plain")
    };
    let mut output = t(
        View::Output,
        "A job's latest output as clean text (last 1000 lines, at most 64 KiB). With ?from=N: \
         its final lines from line N on; _meta.next is the from of the next read.",
    );
    output.uri_template = format!("{PREFIX}{{job_id}}/output{{?from}}");
    ListResourceTemplatesResult::with_all_items(vec![
        output,
        t(View::Screen, "A job's visible terminal screen right now."),
    ])
}

/// Reads a resource as text.
pub fn read(jobs: &JobManager, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let (id, view, from) = parse_from(uri)?;
    let gone =
        |e: ptyjobs_engine::Error| ErrorData::resource_not_found(crate::error::message(&e), None);
    if let Some(from) = from {
        return lines_from(jobs, id, from, uri).map_err(gone);
    }
    let text = match view {
        View::Output => {
            // The end is what matters; tail bounds the work, fit bounds the answer.
            let mut slice = jobs.tail(id, OUTPUT_LINES).map_err(gone)?;
            budget::fit(&mut slice, OUTPUT_BUDGET);
            slice.output
        }
        View::Screen => {
            let rows = jobs.screen(id).map_err(gone)?.rows;
            let fitted = crate::params::fit_rows(rows, OUTPUT_BUDGET);
            let mut text = fitted.rows.join("\n");
            if fitted.omitted_rows > 0 || fitted.cut_rows > 0 {
                text.push_str(&format!(
                    "\n[... {} rows cut, {} rows left out, {} bytes omitted to fit 64 KiB]",
                    fitted.cut_rows, fitted.omitted_rows, fitted.omitted_bytes
                ));
            }
            text
        }
    };
    Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri)]).with_ttl_ms(0))
}

/// The job's final lines from line `from` on, as [`JobManager::follow`] hands them out (the
/// rest once the job has ended), whole lines within [`OUTPUT_BUDGET`] (a longer first line is
/// cut); `_meta`: `first_line` (later than `from` when older lines are no longer held), `next`
/// (the `from` of the next read) and `ended` (nothing will follow).
fn lines_from(
    jobs: &JobManager,
    id: JobId,
    from: u64,
    uri: &str,
) -> Result<ReadResourceResult, ptyjobs_engine::Error> {
    let mut follow = jobs.follow(id, Some(from))?;
    let chunk = follow.try_next()?;
    let (mut first, mut next, mut text) = (from, from, String::new());
    let mut ended = follow.ended();
    if let Some(chunk) = chunk {
        first = chunk.first_line;
        let mut kept = 0u64;
        for line in chunk.text.split_inclusive('\n') {
            if kept > 0 && text.len() + line.len() > OUTPUT_BUDGET {
                // The rest is the next read's.
                ended = false;
                break;
            }
            text.push_str(&budget::shorten(line.to_owned(), OUTPUT_BUDGET));
            kept += 1;
        }
        next = first + kept.min(chunk.line_count);
    }
    let mut meta = serde_json::Map::new();
    meta.insert("first_line".into(), first.into());
    meta.insert("next".into(), next.into());
    meta.insert("ended".into(), ended.into());
    let meta = rmcp::model::MetaObject(meta);
    Ok(
        ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_meta(meta)])
            .with_ttl_ms(0),
    )
}

/// The client's resource subscriptions: one notifier task per subscribed URI.
#[derive(Default)]
pub struct Subscriptions {
    tasks: Mutex<HashMap<String, AbortHandle>>,
}

impl Subscriptions {
    /// Starts notifying `peer` of changes to `uri` (replacing an earlier subscription to it).
    pub fn subscribe(
        &self,
        jobs: &JobManager,
        uri: String,
        peer: Peer<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (id, _) = parse(&uri)?;
        let rx = jobs
            .subscribe(id)
            .map_err(|e| ErrorData::resource_not_found(crate::error::message(&e), None))?;
        let target = uri.clone();
        let task = tokio::spawn(notify(rx, move || {
            let (peer, uri) = (peer.clone(), target.clone());
            async move {
                peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                    .await
                    .is_ok()
            }
        }))
        .abort_handle();
        if let Some(old) = self.lock().insert(uri, task) {
            old.abort();
        }
        Ok(())
    }

    /// Stops notifying about `uri`.
    pub fn unsubscribe(&self, uri: &str) {
        if let Some(task) = self.lock().remove(uri) {
            task.abort();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, AbortHandle>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        for task in self.lock().values() {
            task.abort();
        }
    }
}

/// Notifies about `uri` on a `subscriptions/listen` stream (protocol 2026-07-28): the same
/// notifier as [`Subscriptions::subscribe`], sent through the stream's sink.
pub fn listen_to(
    jobs: &JobManager,
    uri: &str,
    sink: rmcp::service::SubscriptionSink,
) -> Result<tokio::task::JoinHandle<()>, ErrorData> {
    let (id, _) = parse(uri)?;
    let rx = jobs
        .subscribe(id)
        .map_err(|e| ErrorData::resource_not_found(crate::error::message(&e), None))?;
    let uri = uri.to_owned();
    Ok(tokio::spawn(notify(rx, move || {
        let (sink, uri) = (sink.clone(), uri.clone());
        async move { sink.notify_resource_updated(uri).await.is_ok() }
    })))
}

/// Whether `uri` names a resource of a known job.
pub fn exists(jobs: &JobManager, uri: &str) -> bool {
    parse(uri).is_ok_and(|(id, _)| jobs.status(id).is_ok())
}

/// Calls `send` (which says whether the client is still there) after each change of the job,
/// at most every [`MIN_INTERVAL`], until the job has ended, the job is forgotten or the client
/// is gone.
async fn notify<F, Fut>(mut rx: tokio::sync::watch::Receiver<ptyjobs_engine::JobEvent>, send: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    if rx.borrow().finished {
        return;
    }
    while rx.changed().await.is_ok() {
        let finished = rx.borrow_and_update().finished;
        let sent = send().await;
        if !sent || finished {
            return;
        }
        // Rate limit: changes during the pause are reported by one notification after it.
        tokio::time::sleep(MIN_INTERVAL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_and_strangers_are_not_found() {
        let id = JobId::new();
        assert_eq!(parse(&uri(id, View::Output)).unwrap(), (id, View::Output));
        assert_eq!(parse(&uri(id, View::Screen)).unwrap(), (id, View::Screen));
        for bad in [
            "ptyjobs://jobs/x/output",
            &format!("ptyjobs://jobs/{id}/other"),
            "file:///etc/passwd",
            &format!("ptyjobs://jobs/{id}"),
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(
                e.code,
                ErrorData::resource_not_found("", None).code,
                "{bad}"
            );
        }
    }
}
