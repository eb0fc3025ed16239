//! MCP tasks (`io.modelcontextprotocol/tasks`): a job that runs to its end as one tool call.
//!
//! A client that declares the tasks extension and calls execute_command with `"wait": true` is
//! answered at once with a task whose id *is the job id*; the job is the task. So there is no
//! task table: `tasks/get` reads the job (from memory, or from the state directory after a
//! restart — tasks are as durable as jobs), `tasks/cancel` kills it. While the job runs the task
//! is `working` (poll every [`POLL_INTERVAL_MS`]); when it has ended the task is `completed`
//! and its result is what execute_command with `wait` answers a client without tasks: the
//! job's status, exit code or signal, and the last lines of its output. A job ended by
//! `tasks/cancel` (on this server run) is `cancelled`. A job that exits non-zero is data,
//! not a failed task.
//!
//! Clients without the extension never see a task: rmcp refuses `tasks/*` for them, and
//! execute_command waits in the call instead (capped like wait_for_job).

use std::collections::HashSet;
use std::sync::Mutex;

use chrono::Utc;
use ptyjobs_engine::{JobId, JobInfo, JobManager, JobStatus, Signal, WaitOutcome, WaitReason};
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use crate::params::{ExecuteResult, WaitResult};

/// How often a client should poll `tasks/get`.
pub const POLL_INTERVAL_MS: u64 = 1000;
/// Lines of output a finished task's result carries (within the wait tail's byte budget).
const TAIL_LINES: usize = 50;

/// Whether the client declared the tasks extension (at `initialize` or in this request).
pub fn client_supports(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|caps| caps.supports_tasks())
}

/// Jobs ended by `tasks/cancel` on this server run: their task reads `cancelled`.
#[derive(Default)]
pub struct Cancelled(Mutex<HashSet<JobId>>);

impl Cancelled {
    fn insert(&self, id: JobId) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
    }

    fn contains(&self, id: JobId) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&id)
    }
}

/// The task handle answering a call that started job `id`.
pub fn created(info: &JobInfo) -> CreateTaskResult {
    CreateTaskResult::new(task(info, TaskStatus::Working))
}

fn task(info: &JobInfo, status: TaskStatus) -> Task {
    let updated = info.finished.unwrap_or_else(Utc::now);
    let mut task = Task::new(
        info.id.to_string(),
        status,
        info.started.to_rfc3339(),
        updated.to_rfc3339(),
    )
    .with_poll_interval_ms(POLL_INTERVAL_MS);
    if info.status == JobStatus::Running {
        task = task.with_status_message(format!(
            "running for {} s: {}",
            info.duration_ms / 1000,
            info.command
        ));
    }
    task
}

fn unknown(task_id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("no task {task_id:?}: a task id is the job id execute_command returned"),
        None,
    )
}

fn job_of(jobs: &JobManager, task_id: &str) -> Result<JobInfo, ErrorData> {
    let id: JobId = task_id.parse().map_err(|_| unknown(task_id))?;
    jobs.status(id).map_err(|_| unknown(task_id))
}

/// `tasks/get`: the job's state as a task.
pub fn get(
    jobs: &JobManager,
    cancelled: &Cancelled,
    task_id: &str,
) -> Result<GetTaskResult, ErrorData> {
    let info = job_of(jobs, task_id)?;
    let payload = if info.status == JobStatus::Running {
        TaskPayload::Working
    } else if info.status == JobStatus::Killed && cancelled.contains(info.id) {
        TaskPayload::Cancelled
    } else {
        TaskPayload::Completed {
            result: final_result(jobs, info.clone())?,
        }
    };
    let status = payload.status();
    Ok(GetTaskResult::new(DetailedTask::new(
        task(&info, status),
        payload,
    )))
}

/// `tasks/cancel`: kill the job (TERM, grace, KILL) in the background; the task reads
/// `cancelled` once it has ended.
pub fn cancel(jobs: &JobManager, cancelled: &Cancelled, task_id: &str) -> Result<(), ErrorData> {
    let info = job_of(jobs, task_id)?;
    if info.status != JobStatus::Running {
        return Ok(());
    }
    cancelled.insert(info.id);
    let jobs = jobs.clone();
    tokio::spawn(async move {
        if let Err(e) = jobs.kill(info.id, Signal::TERM, None).await {
            tracing::warn!(job = %info.id, "tasks/cancel: {e}");
        }
    });
    Ok(())
}

/// What execute_command with `wait` answers once the job has ended, as a tool result object.
fn final_result(jobs: &JobManager, info: JobInfo) -> Result<JsonObject, ErrorData> {
    let tail = jobs
        .tail(info.id, TAIL_LINES)
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let outcome = WaitOutcome {
        reason: WaitReason::Exited,
        matched_line: None,
        line_number: None,
        input: None,
        ports: Vec::new(),
        urls: Vec::new(),
        holder: None,
        http_status: None,
        capped: false,
        waited_ms: info.duration_ms,
        info: info.clone(),
        tail,
    };
    let result = ExecuteResult::from(info).with_outcome(WaitResult::from(outcome));
    let value = serde_json::to_value(&result)
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    match serde_json::to_value(CallToolResult::structured(value)) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        _ => Err(ErrorData::internal_error(
            "a tool result is an object",
            None,
        )),
    }
}
