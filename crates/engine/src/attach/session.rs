//! The attach socket's accept loop and one attached client's session (protocol on
//! [`super::AttachServer`]).

use std::io;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{broadcast, watch};

use super::frames::{Decoder, Frame};
use super::size::Viewer;
use super::socket::peer_allowed;
use super::{
    ATTACH_CONTROL_VERSION, ATTACH_RESTART_VERSION, ATTACH_VERSION, AttachHello, AttachReply,
};
use crate::error::Error;
use crate::job::JobId;
use crate::manager::{Inner, Job, JobManager};
use crate::sync::lock;
use crate::sys::attach::{Listener, Peer, my_uid};

/// Longest hello line.
const HELLO_MAX: u64 = 4096;
/// How long a client may take to say hello.
const HELLO_WITHIN: Duration = Duration::from_secs(10);
/// How long a keystroke may wait for room in the job's input buffer.
const WRITE_DEADLINE: Duration = Duration::from_secs(2);

/// Accepts clients until `stopped` turns true (or the manager is gone).
pub(super) async fn accept_loop(
    inner: Weak<Inner>,
    listener: Listener,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            _ = stopped.wait_for(|s| *s) => return,
            r = listener.accept() => r,
        };
        match accepted {
            Ok(peer) => {
                let Some(inner) = inner.upgrade() else { return };
                tokio::spawn(async move {
                    if let Err(e) = serve(JobManager { inner }, peer).await {
                        tracing::debug!("attach session ended: {e}");
                    }
                });
            }
            Err(e) => {
                tracing::warn!("attach socket: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn reply(wr: &mut (impl AsyncWriteExt + Unpin), r: &AttachReply) -> io::Result<()> {
    let mut line = serde_json::to_vec(r).map_err(io::Error::other)?;
    line.push(b'\n');
    wr.write_all(&line).await?;
    wr.flush().await
}

/// Answers `ok: false` with `why` and closes. What the client sent is read (briefly) first:
/// closing a socket with unread data would reset the connection and lose the answer.
pub(super) async fn refuse(
    mut rd: impl AsyncRead + Unpin,
    wr: &mut (impl AsyncWriteExt + Unpin),
    why: impl Into<String>,
) -> io::Result<()> {
    let answer = AttachReply {
        ok: false,
        error: Some(why.into()),
        size: None,
        job: None,
    };
    reply(wr, &answer).await?;
    wr.shutdown().await?;
    let mut sink = [0u8; 1024];
    let drain = async {
        let mut left = HELLO_MAX;
        while left > 0 {
            match rd.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n as u64),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
    Ok(())
}

pub(super) async fn read_hello(
    rd: &mut (impl AsyncRead + AsyncBufReadExt + Unpin),
) -> Result<AttachHello, String> {
    let mut line = Vec::new();
    let mut limited = AsyncReadExt::take(&mut *rd, HELLO_MAX);
    let read = limited.read_until(b'\n', &mut line);
    match tokio::time::timeout(HELLO_WITHIN, read).await {
        Ok(Ok(_)) if line.ends_with(b"\n") => {}
        Ok(Ok(_)) => return Err("the hello must be one line of JSON".into()),
        Ok(Err(e)) => return Err(format!("reading the hello: {e}")),
        Err(_) => return Err("no hello within 10 s".into()),
    }
    let hello: AttachHello =
        serde_json::from_slice(&line).map_err(|e| format!("bad hello: {e}"))?;
    if hello.start.is_some() || hello.version == super::ATTACH_START_VERSION {
        return super::start::checked(hello);
    }
    if !(1..=ATTACH_CONTROL_VERSION).contains(&hello.version) {
        return Err(format!(
            "protocol version {} is not supported (this server speaks {ATTACH_VERSION}, \
             {ATTACH_RESTART_VERSION} for restarts and {ATTACH_CONTROL_VERSION} for control)",
            hello.version
        ));
    }
    if (hello.version == ATTACH_CONTROL_VERSION) != hello.control.is_some() {
        return Err(format!(
            "a control request is a hello of version {ATTACH_CONTROL_VERSION} with `control`"
        ));
    }
    if (hello.version == ATTACH_RESTART_VERSION) != hello.restart.is_some() {
        return Err(format!(
            "a restart request is a hello of version {ATTACH_RESTART_VERSION} with `restart`"
        ));
    }
    Ok(hello)
}

/// The job a hello names, if this manager runs it.
fn find(jobs: &JobManager, hello: &AttachHello) -> Result<Arc<Job>, String> {
    let id: JobId = hello.job_id.parse().map_err(|e: Error| e.to_string())?;
    jobs.inner.job(id).map_err(|e| match e {
        Error::NotRunning { status, .. } => format!("job {id} is not running (status: {status})"),
        Error::NotOwner { server_pid, .. } => {
            format!("job {id} belongs to another server (pid {server_pid})")
        }
        Error::JobNotFound(_) => format!("no job {id}"),
        e => e.to_string(),
    })
}

/// A receiver of the job's raw output.
type Output = broadcast::Receiver<Arc<[u8]>>;

/// The job's screen now, drawn with its colours and attributes, and a receiver of every byte
/// after it (taken under one lock).
fn formatted_screen_and_tap(job: &Job) -> Option<(Vec<u8>, Output)> {
    let mut s = lock(&job.state);
    if s.is_final() {
        return None;
    }
    Some((s.term.screen_formatted(), job.tap.subscribe()))
}

/// Acts on every complete frame a version 2 client sent: keys to the job, resizes to the
/// job's terminal. False when the session must end (a bad frame, the job gone).
async fn serve_frames(
    jobs: &JobManager,
    job: &Job,
    frames: &mut Decoder,
    viewer: Option<&Viewer>,
) -> bool {
    loop {
        match frames.next_frame() {
            Ok(None) => return true,
            Ok(Some(Frame::Keys(keys))) => {
                if jobs.write_all(job.id, &keys, WRITE_DEADLINE).await.is_err() {
                    return false;
                }
            }
            Ok(Some(Frame::Resize(cols, rows))) => {
                if let Some(viewer) = viewer {
                    viewer.resize(cols, rows);
                }
            }
            Err(e) => {
                tracing::debug!(job = %job.id, "attach: {e}");
                return false;
            }
        }
    }
}

/// When another person's resize changed the job's size (never without a viewer).
async fn resized_by_another(viewer: Option<&mut Viewer>) {
    match viewer {
        Some(v) => v.resized_by_another().await,
        None => std::future::pending().await,
    }
}

enum Step {
    Output(Arc<[u8]>),
    Lagged,
    /// Another person's resize changed the job's size.
    Resized,
    Keys(usize),
    Detached,
    Ended,
}

async fn serve(jobs: JobManager, (uid, rd, mut wr): Peer) -> io::Result<()> {
    let allowed = uid.is_some_and(|uid| peer_allowed(uid, my_uid()));
    if !allowed {
        let why = "refused: only the user running the ptyjobs server may attach to its jobs";
        return refuse(rd, &mut wr, why).await;
    }
    let mut rd = BufReader::new(rd);
    let hello = match read_hello(&mut rd).await {
        Ok(hello) => hello,
        Err(why) => return refuse(rd, &mut wr, why).await,
    };
    if let Some(change) = hello.restart.clone() {
        return match super::restart::restart(&jobs, &hello.job_id, change).await {
            Ok(answer) => {
                reply(&mut wr, &answer).await?;
                wr.shutdown().await
            }
            Err(why) => refuse(rd, &mut wr, why).await,
        };
    }
    if hello.control.is_some() {
        return super::control::serve(&jobs, hello, &mut rd, &mut wr).await;
    }
    if let Some(start) = hello.start.clone() {
        let answer = super::start::start(&jobs, *start).await;
        let mut line = serde_json::to_vec(&answer).map_err(io::Error::other)?;
        line.push(b'\n');
        wr.write_all(&line).await?;
        return wr.shutdown().await;
    }
    let (hello, job) = match find(&jobs, &hello).map(|job| (hello, job)) {
        Ok(found) => found,
        Err(why) => return refuse(rd, &mut wr, why).await,
    };
    // Version 2: the job takes the person's size for as long as they are attached (and gets
    // its own back when the last person leaves: the viewer's drop, on every way out).
    let framed = hello.version >= 2;
    let mut viewer = framed.then(|| Viewer::attach(&jobs, job.id, Some((hello.cols, hello.rows))));
    let mut frames = Decoder::default();
    let Some((screen, mut tap)) = formatted_screen_and_tap(&job) else {
        return refuse(rd, &mut wr, format!("job {} is not running", job.id)).await;
    };
    let size = lock(&job.state).size;
    let ok = AttachReply {
        ok: true,
        error: None,
        size: Some(size),
        job: None,
    };
    reply(&mut wr, &ok).await?;
    wr.write_all(&screen).await?;
    tracing::info!(job = %job.id, "a person attached");
    let mut done = job.done.subscribe();
    let mut keys = vec![0u8; 4096];
    loop {
        let step = tokio::select! {
            r = tap.recv() => match r {
                Ok(bytes) => Step::Output(bytes),
                Err(broadcast::error::RecvError::Lagged(_)) => Step::Lagged,
                Err(broadcast::error::RecvError::Closed) => Step::Ended,
            },
            n = rd.read(&mut keys) => match n? {
                0 => Step::Detached,
                n => Step::Keys(n),
            },
            _ = done.wait_for(|d| *d) => Step::Ended,
            () = resized_by_another(viewer.as_mut()) => Step::Resized,
        };
        match step {
            Step::Output(bytes) => wr.write_all(&bytes).await?,
            Step::Lagged | Step::Resized => {
                // Too slow for the stream, or another person resized the job (its screen has
                // a new size): start again from the screen.
                let Some((screen, fresh)) = formatted_screen_and_tap(&job) else {
                    break;
                };
                tap = fresh;
                wr.write_all(&screen).await?;
            }
            Step::Keys(n) if !framed => {
                if jobs
                    .write_all(job.id, &keys[..n], WRITE_DEADLINE)
                    .await
                    .is_err()
                {
                    break;
                }
            }
            Step::Keys(n) => {
                frames.push(&keys[..n]);
                if !serve_frames(&jobs, &job, &mut frames, viewer.as_ref()).await {
                    break;
                }
            }
            Step::Detached => {
                tracing::info!(job = %job.id, "the person detached");
                return Ok(());
            }
            Step::Ended => break,
        }
    }
    // Every byte the job wrote reached the tap before it became final.
    while let Ok(bytes) = tap.try_recv() {
        wr.write_all(&bytes).await?;
    }
    let info = job.info();
    let how = match (info.exit_code, &info.signal) {
        (Some(code), _) => format!("{} (exit code {code})", info.status),
        (None, Some(sig)) => format!("{} ({sig})", info.status),
        _ => info.status.to_string(),
    };
    wr.write_all(format!("\r\n[ptyjobs: job {} ended: {how}]\r\n", job.id).as_bytes())
        .await?;
    wr.shutdown().await
}
