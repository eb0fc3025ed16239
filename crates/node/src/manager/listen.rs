//! `onData` and `onExit`: a job's final lines and its end, pushed to JS callbacks.

use napi::bindgen_prelude::{Function, JsValuesTupleIntoVec};
use napi::threadsafe_function::UnknownReturnValue;
use napi_derive::napi;
use ptyjobs_engine::JobId;

use super::{JobManager, named, napi_err};
use crate::error::{Result, from_engine};
use crate::options::NameOptions;
use crate::stream::Callback;
use crate::types::JobInfo;

#[napi]
impl JobManager {
    /// Calls `callback` with the job's clean text as it becomes final: each line once, followed
    /// by a line feed, once it scrolled off the terminal's screen or was cleared from it (see
    /// `finalLines`); when the job ends, the lines still on screen, without a trailing newline.
    /// All chunks joined equal `output(jobId).output` read after the end (unless
    /// `transcriptBytes` evicted lines first).
    /// A late listener starts from the first line held. Like a child process's listeners, it
    /// keeps the process alive while the job runs, never after the job ended or the manager was
    /// closed.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `NOT_OWNER` (a running job of another
    /// process sharing the state directory: it cannot be followed from here).
    #[napi(
        catch_unwind,
        ts_args_type = "jobId: string, callback: (data: string) => void, options?: NameOptions"
    )]
    pub fn on_data(
        &self,
        job_id: String,
        callback: Function<'_, String, UnknownReturnValue>,
        options: Option<NameOptions>,
    ) -> Result<()> {
        let (id, cb) = self.listener(&job_id, options.as_ref(), callback)?;
        self.streams.on_data(&self.jobs, &self.runtime, id, cb);
        Ok(())
    }

    /// Calls `callback` once with the job's final info (`exitCode`, `signal`, `status`, ...)
    /// when it has ended, strictly after the last `onData` chunk was delivered. Registered on
    /// an ended job, it is called at once (asynchronously). It keeps the process alive while
    /// the job runs, never after the job ended or the manager was closed.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `NOT_OWNER` (as `onData`).
    #[napi(
        catch_unwind,
        ts_args_type = "jobId: string, callback: (info: JobInfo) => void, options?: NameOptions"
    )]
    pub fn on_exit(
        &self,
        job_id: String,
        callback: Function<'_, JobInfo, UnknownReturnValue>,
        options: Option<NameOptions>,
    ) -> Result<()> {
        let (id, cb) = self.listener(&job_id, options.as_ref(), callback)?;
        self.streams.on_exit(&self.jobs, &self.runtime, id, cb);
        Ok(())
    }
}

impl JobManager {
    /// The job a listener is for (it must exist) and its callback as a thread-safe function
    /// (released by the stream when the job has ended).
    fn listener<T: 'static + JsValuesTupleIntoVec>(
        &self,
        job_id: &str,
        options: Option<&NameOptions>,
        callback: Function<'_, T, UnknownReturnValue>,
    ) -> Result<(JobId, Callback<T>)> {
        let id = named(&self.jobs, job_id, options)?;
        let info = self.jobs.status(id).map_err(from_engine)?;
        if !info.status.is_final() {
            // A running job of another process sharing the state directory has no events
            // here: NOT_OWNER rather than a listener that would take it for ended.
            self.jobs.subscribe(id).map_err(from_engine)?;
        }
        let cb = callback
            .build_threadsafe_function()
            .weak::<false>()
            .build()
            .map_err(napi_err)?;
        Ok((id, cb))
    }
}
