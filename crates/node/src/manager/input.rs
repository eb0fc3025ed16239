//! What reaches a job's terminal: `write` (text or bytes), `sendKeys` (named keys), `resize`.

use napi::bindgen_prelude::{Buffer, Either, Env, PromiseRaw};
use napi_derive::napi;
use ptyjobs_engine::{self as engine, JobId};

use super::{JobManager, named};
use crate::error::{Result, from_engine};
use crate::options::NameOptions;
use crate::types::dimension;

#[napi]
impl JobManager {
    /// Writes `data` to the job's terminal as typed (no newline is added: end a line with a
    /// carriage return or a line feed to press Enter). Returns the number of bytes the terminal
    /// accepted, which is less than the data only when the terminal's input buffer is full.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `NOT_RUNNING`.
    #[napi(
        catch_unwind,
        ts_args_type = "jobId: string, data: string | Buffer, options?: NameOptions"
    )]
    pub fn write(
        &self,
        job_id: String,
        data: Either<String, Buffer>,
        options: Option<NameOptions>,
    ) -> Result<u32> {
        let id = named(&self.jobs, &job_id, options.as_ref())?;
        let bytes: &[u8] = match &data {
            Either::A(s) => s.as_bytes(),
            Either::B(b) => b.as_ref(),
        };
        let n = self.jobs.write(id, bytes).map_err(from_engine)?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// Presses named keys and chords on the job's terminal, in order, encoded as a terminal
    /// would for the program's current mode (cursor keys follow application cursor mode):
    /// `Enter`, `Tab`, `Escape`, `Backspace`, `Delete`, `Space`, `Up`/`Down`/`Left`/`Right`,
    /// `Home`/`End`, `PageUp`/`PageDown`, `F1`-`F12`, a single character (`q`), and chords
    /// `C-c`, `C-d`, `M-x`, `C-Up`, `S-Tab` (names are case-insensitive). Resolves with the
    /// number of bytes written. For text, use `write`.
    ///
    /// Rejects with `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `NOT_RUNNING`, `INVALID_ARGUMENT` (an
    /// unknown key, named in the message; nothing is sent then).
    #[napi(catch_unwind, ts_return_type = "Promise<number>")]
    pub fn send_keys<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        keys: Vec<String>,
        options: Option<NameOptions>,
    ) -> napi::Result<PromiseRaw<'env, u32>> {
        let args = (|| -> Result<JobId> {
            let id = named(&self.jobs, &job_id, options.as_ref())?;
            // Validity does not depend on the cursor mode: reject before anything is sent.
            engine::encode_keys(&keys, false).map_err(from_engine)?;
            Ok(id)
        })();
        self.promise(env, args, |jobs, id| async move {
            let n = jobs.send_keys(id, &keys).await?;
            Ok(u32::try_from(n).unwrap_or(u32::MAX))
        })
    }

    /// Resizes the job's terminal (the program gets SIGWINCH). Returns `false`, changing
    /// nothing, when the job has already ended.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `INVALID_ARGUMENT` (size outside 1..=1000).
    #[napi(catch_unwind)]
    pub fn resize(
        &self,
        job_id: String,
        cols: f64,
        rows: f64,
        options: Option<NameOptions>,
    ) -> Result<bool> {
        let id = named(&self.jobs, &job_id, options.as_ref())?;
        let (cols, rows) = (dimension("cols", cols)?, dimension("rows", rows)?);
        self.jobs.resize(id, cols, rows).map_err(from_engine)
    }
}
