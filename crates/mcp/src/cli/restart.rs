//! `ptyjobs restart <id|name>`: the CLI has no job manager (a job it started would die with
//! it), so it asks a live server on the state directory to restart the job, over that
//! server's attach socket (a restart request, see `ptyjobs_engine::AttachServer`): the job's
//! own server when it still runs, else any other live one. The new job is that server's.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use ptyjobs_engine::{
    ATTACH_RESTART_VERSION, AttachHello, AttachReply, AttachRestart, JobId, Store,
    attach_socket_path,
};

use super::out::Out;
use super::{CmdResult, Failure};

/// Longest answer read: a job's record (its command may be long).
const ANSWER_MAX: usize = 1 << 20;

/// Restarts the job `text` names (id, prefix or name; `cwd` picks among names live in
/// several directories), with a new `command` or `env` when given.
pub(crate) fn run(
    store: &Store,
    text: &str,
    cwd: Option<&Path>,
    command: Option<String>,
    env: &[String],
    json: bool,
) -> CmdResult {
    let env = parse_env(env)?;
    let id = store.resolve_job(text, cwd)?;
    let job = store.load(id)?;
    // The job's own server first, then every other live server of the state directory.
    let mut servers = Vec::new();
    if job.owner_alive {
        servers.push(job.record.server.instance.clone());
    }
    for other in store.records() {
        let instance = &other.record.server.instance;
        if other.owner_alive && !servers.contains(instance) {
            servers.push(instance.clone());
        }
    }
    if servers.is_empty() {
        return Err(Failure::msg(format!(
            "no ptyjobs server runs on {} to start the new job (a job started by this command \
             would end with it): start the server, or restart the job from your MCP client \
             (restart_job)",
            store.config().dir.display()
        )));
    }
    let change = AttachRestart { command, env };
    let mut last = String::new();
    for instance in &servers {
        let path = attach_socket_path(&store.config().dir, instance);
        let Ok(mut sock) = UnixStream::connect(&path) else {
            last = format!("cannot reach the server at {}", path.display());
            continue;
        };
        let reply = ask(&mut sock, id, &change)?;
        let Some(new) = reply.job.filter(|_| reply.ok) else {
            return Err(Failure::msg(
                reply.error.unwrap_or_else(|| "the server refused".into()),
            ));
        };
        let mut out = Out::new();
        if json {
            let text =
                serde_json::to_string_pretty(&new).map_err(|e| Failure::msg(e.to_string()))?;
            out.line(&text)?;
        } else {
            out.line(&format!("{} (replaces {id}, pid {})", new.id, new.pid))?;
        }
        out.flush()?;
        return Ok(());
    }
    Err(Failure::msg(format!(
        "no live server could be reached to restart job {id}: {last}"
    )))
}

/// `KEY=VALUE` arguments as an environment; none given is `None` (the job's own).
fn parse_env(env: &[String]) -> Result<Option<BTreeMap<String, String>>, Failure> {
    if env.is_empty() {
        return Ok(None);
    }
    env.iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
            _ => Err(Failure::msg(format!("--env {kv:?} is not KEY=VALUE"))),
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

/// Sends the restart request and reads the one-line answer.
fn ask(sock: &mut UnixStream, id: JobId, change: &AttachRestart) -> Result<AttachReply, Failure> {
    let hello = AttachHello {
        version: ATTACH_RESTART_VERSION,
        job_id: id.to_string(),
        cols: 0,
        rows: 0,
        restart: Some(change.clone()),
        start: None,
        control: None,
        keep_open: false,
    };
    let mut line = serde_json::to_vec(&hello).map_err(|e| Failure::msg(e.to_string()))?;
    line.push(b'\n');
    sock.write_all(&line)
        .map_err(|e| Failure::msg(format!("cannot talk to the server: {e}")))?;
    let mut answer = Vec::new();
    sock.take(ANSWER_MAX as u64)
        .read_to_end(&mut answer)
        .map_err(|e| Failure::msg(format!("reading the server's answer: {e}")))?;
    let line = answer.split(|&b| b == b'\n').next().unwrap_or_default();
    serde_json::from_slice(line).map_err(|e| {
        Failure::msg(format!(
            "the server's answer is not valid ({e}): is it a ptyjobs that predates restart?"
        ))
    })
}
