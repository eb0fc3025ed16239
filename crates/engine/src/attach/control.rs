//! A control request on the attach socket (see [`super::AttachServer`]): another server, a Node
//! program or the CLI has this server do one thing to a job it runs, through this server's own
//! paths (the job's input queue, its kill path, its terminal model). The client is
//! `crate::control`.

use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::attach::AttachHello;
use crate::control::{ControlOp, ControlWait, reply_line};
use crate::error::{Error, Result};
use crate::job::JobId;
use crate::manager::{Found, JobManager};
use crate::signal::Signal;
use crate::sync::lock;
use crate::wait::WaitSpec;

/// How long a connection kept open for further requests may sit idle before it is closed
/// (its client forgets idle connections sooner, see `sys::control`).
const IDLE_OPEN: Duration = Duration::from_secs(30);

/// Answers the control request `hello` and, while its client asks to keep the connection open
/// (`keep_open`), each further control request on it, one at a time. The connection closes
/// after an answer without `keep_open`, after a wait (its client's going is what cancels it),
/// at the client's end, or after [`IDLE_OPEN`] without a request.
pub(super) async fn serve<R: AsyncBufRead + AsyncRead + Unpin>(
    jobs: &JobManager,
    mut hello: AttachHello,
    rd: &mut R,
    wr: &mut (impl AsyncWriteExt + Unpin),
) -> std::io::Result<()> {
    loop {
        let Some(op) = hello.control.take() else {
            let why = "only control requests may follow a control request";
            return super::session::refuse(rd, wr, why).await;
        };
        let open = hello.keep_open && !matches!(op, ControlOp::Wait(_));
        answer(jobs, &hello.job_id, op, &mut *rd, wr, open).await?;
        if !open {
            return Ok(());
        }
        match tokio::time::timeout(IDLE_OPEN, rd.fill_buf()).await {
            Ok(Ok(next)) if !next.is_empty() => {}
            // The client's end, a broken connection, or idle for too long.
            _ => return Ok(()),
        }
        hello = match super::session::read_hello(rd).await {
            Ok(next) => next,
            Err(why) => return super::session::refuse(rd, wr, why).await,
        };
    }
}

/// Does `op` on the job `job_id` names and writes the one answer line (saying `open` when the
/// connection stays open; else the write side is shut). A wait is cancelled when the client
/// closes the connection (it is gone: nobody would read the answer).
async fn answer(
    jobs: &JobManager,
    job_id: &str,
    op: ControlOp,
    rd: &mut (impl AsyncRead + Unpin),
    wr: &mut (impl AsyncWriteExt + Unpin),
    open: bool,
) -> std::io::Result<()> {
    let done = if matches!(op, ControlOp::Wait(_)) {
        let gone = async {
            let mut sink = [0u8; 256];
            while let Ok(n) = rd.read(&mut sink).await {
                if n == 0 {
                    break;
                }
            }
        };
        tokio::select! {
            r = run(jobs, job_id, op) => r,
            () = gone => return Ok(()),
        }
    } else {
        run(jobs, job_id, op).await
    };
    let line = reply_line(done, open);
    wr.write_all(&line).await?;
    wr.flush().await?;
    if open {
        return Ok(());
    }
    wr.shutdown().await
}

fn json(v: impl serde::Serialize) -> Result<Vec<u8>> {
    serde_json::to_vec(&v).map_err(|e| Error::Io(std::io::Error::other(e)))
}

/// `op` on job `job_id`, which must be this server's and running: a request is never passed
/// on to a third server.
async fn run(jobs: &JobManager, job_id: &str, op: ControlOp) -> Result<Vec<u8>> {
    let id: JobId = job_id.parse()?;
    // In memory, at once; anything else (for its error) from the state directory.
    if !lock(&jobs.inner.table).jobs.contains_key(&id) {
        let jobs = jobs.clone();
        blocking(move || jobs.inner.job(id).map(|_| ())).await?;
    }
    match op {
        ControlOp::Write { data } => json(jobs.write(id, &data.0)?),
        ControlOp::WriteAll { data, deadline_ms } => json(
            jobs.write_all(id, &data.0, Duration::from_millis(deadline_ms))
                .await?,
        ),
        ControlOp::Interact {
            input,
            keys,
            wait_ms,
        } => json(
            jobs.interact_with(id, &input.0, &keys, Duration::from_millis(wait_ms))
                .await?,
        ),
        ControlOp::Keys { keys } => json(jobs.send_keys(id, &keys).await?),
        ControlOp::Resize { cols, rows } => {
            let resized = jobs.resize(id, cols, rows)?;
            if resized {
                let jobs = jobs.clone();
                blocking(move || {
                    persist_size(&jobs, id);
                    Ok(())
                })
                .await?;
            }
            json(resized)
        }
        ControlOp::Kill { signal, grace_ms } => {
            let signal: Signal = signal.to_string().parse()?;
            json(
                jobs.kill(id, signal, grace_ms.map(Duration::from_millis))
                    .await?,
            )
        }
        // This server's job (looked up above): its screen is a lock and a copy, taken here.
        ControlOp::Screen => json(jobs.held_screen_status(id)?),
        ControlOp::Wait(w) => {
            let spec = spec(w)?;
            json(jobs.wait_for(id, &spec, |_| {}).await?)
        }
    }
}

/// A wait's conditions as this server runs them.
fn spec(w: ControlWait) -> Result<WaitSpec> {
    Ok(WaitSpec {
        pattern: w
            .pattern
            .as_deref()
            .map(crate::search::compile_pattern)
            .transpose()?,
        from_start: w.from_start,
        idle: w.idle_ms.map(Duration::from_millis),
        port: w.port,
        listening: w.listening,
        url: w.url,
        expect_status: w.expect_status,
        input: w.input,
        timeout: w.timeout_ms.map(Duration::from_millis),
    })
}

/// Writes the job's new size to its record, so that readers of the state directory (the
/// server that asked, `ptyjobs status`) see it. Under the job's lock, as every record write
/// of a running job, so it never lands after the final record.
fn persist_size(jobs: &JobManager, id: JobId) {
    let (Some(store), Ok(Found::Live(job))) = (jobs.inner.store.as_deref(), jobs.inner.find(id))
    else {
        return;
    };
    let mut s = lock(&job.state);
    if s.is_final() {
        return;
    }
    let size = s.size;
    let Some(record) = s.record.as_mut() else {
        return;
    };
    record.info.size = size;
    if let Err(e) = store.write_record(record) {
        tracing::warn!("cannot save the size of job {id}: {e}");
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Io(std::io::Error::other(format!("control task failed: {e}"))))?
}

// The test speaks to the socket itself: a Unix socket (attaching is offered on Unix only).
#[cfg(all(test, unix))]
mod tests {
    use std::time::Instant;

    use tokio::io::AsyncWriteExt;

    use crate::config::EngineConfig;
    use crate::job::JobSpec;
    use crate::manager::JobManager;
    use crate::store::StoreConfig;
    use crate::sync::lock;

    /// Polls `check` every 10 ms for up to 10 s.
    async fn eventually(mut check: impl FnMut() -> bool) -> bool {
        let until = Instant::now() + std::time::Duration::from_secs(10);
        while Instant::now() < until {
            if check() {
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        false
    }

    /// A manager on a state directory of its own, serving its attach socket, running `sleep`.
    fn serving_a_sleep() -> (
        tempfile::TempDir,
        JobManager,
        crate::AttachServer,
        crate::job::JobInfo,
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let jobs = JobManager::new(EngineConfig {
            store: Some(StoreConfig::new(dir.path())),
            ..EngineConfig::default()
        })
        .expect("manager");
        let server = jobs.serve_attach().expect("attach socket");
        let info = jobs
            .execute(JobSpec {
                command: "sleep 100".into(),
                ..JobSpec::default()
            })
            .expect("sleep");
        (dir, jobs, server, info)
    }

    /// A forwarded wait holds the job's watchers only while its client is connected: the client
    /// going away (its process dead, its future dropped) ends the wait at the owner.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_wait_ends_when_its_client_goes() {
        let (_dir, jobs, server, info) = serving_a_sleep();
        let job = lock(&jobs.inner.table).jobs.get(&info.id).cloned().unwrap();
        let watchers = || job.events.receiver_count();
        let before = watchers();
        let mut client = tokio::net::UnixStream::connect(server.path())
            .await
            .unwrap();
        let hello = format!(
            r#"{{"version":4,"job_id":"{}","cols":0,"rows":0,"control":{{"op":"wait","pattern":"never","timeout_ms":600000}}}}"#,
            info.id
        );
        client
            .write_all(format!("{hello}\n").as_bytes())
            .await
            .unwrap();
        assert!(eventually(|| watchers() > before).await, "the wait began");
        drop(client);
        assert!(eventually(|| watchers() == before).await, "the wait ended");
        jobs.shutdown().await;
    }

    /// A client that asks to keep the connection open sends request after request on it,
    /// each answered `open`; a request without `keep_open`, or a wait, is the last one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_follow_one_another_on_a_connection_kept_open() {
        use tokio::io::{AsyncBufReadExt, BufReader};
        let (_dir, jobs, server, info) = serving_a_sleep();
        let hello = |op: &str, keep: bool| {
            let keep = if keep { r#","keep_open":true"# } else { "" };
            format!(
                r#"{{"version":4,"job_id":"{}","cols":0,"rows":0,"control":{op}{keep}}}"#,
                info.id
            ) + "\n"
        };
        let screen = r#"{"op":"screen"}"#;
        let wait = r#"{"op":"wait","pattern":"never","timeout_ms":10}"#;
        // Each case: the requests sent on one connection, and whether each answer says open.
        for requests in [
            vec![(screen, true), (screen, true), (screen, false)],
            vec![(screen, true), (wait, true)],
        ] {
            let client = tokio::net::UnixStream::connect(server.path())
                .await
                .unwrap();
            let (rd, mut wr) = client.into_split();
            let mut rd = BufReader::new(rd);
            for (i, (op, keep)) in requests.iter().enumerate() {
                wr.write_all(hello(op, *keep).as_bytes()).await.unwrap();
                let mut line = String::new();
                rd.read_line(&mut line).await.unwrap();
                let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
                let last = i + 1 == requests.len();
                assert_eq!(reply["ok"], true, "{line}");
                assert_eq!(reply["open"] == true, !last, "{line}");
            }
            // After the last answer the server closes the connection.
            let mut rest = String::new();
            assert_eq!(rd.read_line(&mut rest).await.unwrap(), 0, "{rest}");
        }
        jobs.shutdown().await;
    }
}
