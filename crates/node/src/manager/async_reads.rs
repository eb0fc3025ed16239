//! The Promise forms of the reads (`statusAsync`, `outputAsync`, ...): the same arguments and
//! answers as in `reads`, the read itself off the JS thread, for reads that can touch the disk.

use napi::bindgen_prelude::{Env, PromiseRaw};
use napi_derive::napi;

use super::reads::{output_args, search_args, tail_args};
use super::{JobManager, named};
use crate::options::{NameOptions, OutputOptions, SearchOptions, TailOptions};
use crate::types::{JobInfo, Output, ScreenSnapshot, SearchResult, fitted};

#[napi]
impl JobManager {
    /// `status()` off the JS thread: a job of the state directory is read from disk on a
    /// worker thread, and the promise resolves with its info.
    ///
    /// Rejects as `status()` throws.
    #[napi(catch_unwind, ts_return_type = "Promise<JobInfo>")]
    pub fn status_async<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        options: Option<NameOptions>,
    ) -> napi::Result<PromiseRaw<'env, JobInfo>> {
        let id = named(&self.jobs, &job_id, options.as_ref());
        self.promise(env, id, |jobs, id| async move {
            jobs.status_async(id).await.map(JobInfo::from)
        })
    }

    /// `list()` off the JS thread (the state directory's records are read on a worker thread).
    #[napi(catch_unwind, ts_return_type = "Promise<JobInfo[]>")]
    pub fn list_async<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Vec<JobInfo>>> {
        self.promise(env, Ok(()), |jobs, ()| async move {
            let list = jobs.list_async().await?;
            Ok(list.into_iter().map(JobInfo::from).collect())
        })
    }

    /// `output()` off the JS thread: a read of the job's transcript on disk (a job of an
    /// earlier run, or lines memory no longer holds) runs on a worker thread.
    ///
    /// Rejects as `output()` throws.
    #[napi(catch_unwind, ts_return_type = "Promise<Output>")]
    pub fn output_async<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        options: Option<OutputOptions>,
    ) -> napi::Result<PromiseRaw<'env, Output>> {
        let args = output_args(&self.jobs, &job_id, options);
        self.promise(
            env,
            args,
            |jobs, (id, offset, limit, max_bytes)| async move {
                let budget = max_bytes.unwrap_or(usize::MAX);
                let slice = jobs.output_async(id, offset, limit, budget).await?;
                Ok(fitted(slice, max_bytes))
            },
        )
    }

    /// `tail()` off the JS thread (see `outputAsync`).
    ///
    /// Rejects as `tail()` throws.
    #[napi(catch_unwind, ts_return_type = "Promise<Output>")]
    pub fn tail_async<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        lines: Option<f64>,
        options: Option<TailOptions>,
    ) -> napi::Result<PromiseRaw<'env, Output>> {
        let args = tail_args(&self.jobs, &job_id, lines, options);
        self.promise(env, args, |jobs, (id, n, max_bytes)| async move {
            let slice = jobs
                .tail_async(id, n, max_bytes.unwrap_or(usize::MAX))
                .await?;
            Ok(fitted(slice, max_bytes))
        })
    }

    /// `screen()` off the JS thread (a job of an earlier run has its last screen read from
    /// disk).
    ///
    /// Rejects as `screen()` throws.
    #[napi(catch_unwind, ts_return_type = "Promise<ScreenSnapshot>")]
    pub fn screen_async<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        options: Option<NameOptions>,
    ) -> napi::Result<PromiseRaw<'env, ScreenSnapshot>> {
        let id = named(&self.jobs, &job_id, options.as_ref());
        self.promise(env, id, |jobs, id| async move {
            jobs.screen_async(id).await.map(ScreenSnapshot::from)
        })
    }

    /// `search()` off the JS thread: a search over a large transcript on disk takes its time
    /// on a worker thread.
    ///
    /// Rejects as `search()` throws.
    #[napi(catch_unwind, ts_return_type = "Promise<SearchResult>")]
    pub fn search_async<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        pattern: String,
        options: Option<SearchOptions>,
    ) -> napi::Result<PromiseRaw<'env, SearchResult>> {
        let args = search_args(&self.jobs, &job_id, &pattern, options);
        self.promise(env, args, |jobs, (id, re, context, max)| async move {
            jobs.search_async(id, re, context, max)
                .await
                .map(SearchResult::from)
        })
    }
}
