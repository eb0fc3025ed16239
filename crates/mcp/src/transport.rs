//! The stdio boundary: one JSON-RPC message per line in, one per line out.
//!
//! rmcp drops a line it cannot parse without a word (the client then waits forever for that
//! id) and answers a request whose `params` has the wrong shape with an id-less "invalid
//! request", or as an unknown method. So every line from stdin is checked here first: a line
//! that is not JSON gets a parse error (-32700), a request whose `params` (or `tools/call`
//! `arguments`) is not an object gets invalid params (-32602), anything else rmcp cannot read
//! gets invalid request (-32600) — each carrying the request's id whenever one can be read,
//! even from a truncated line. Good lines go to rmcp unchanged. Both rmcp's answers and these
//! errors reach stdout through one writer, a whole line at a time, so they never interleave.

use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// Longest accepted line: a request larger than this is answered with an error and skipped.
pub const MAX_LINE_BYTES: usize = 64 << 20;
/// Buffer between the boundary and rmcp.
const PIPE_BYTES: usize = 1 << 20;

/// Starts the boundary over stdin/stdout and returns the pair rmcp serves on.
pub fn stdio() -> (DuplexStream, DuplexStream) {
    boundary(tokio::io::stdin(), tokio::io::stdout())
}

/// Starts the boundary between `input`/`output` and the returned `(reader, writer)` pair.
pub fn boundary<R, W>(input: R, output: W) -> (DuplexStream, DuplexStream)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (rmcp_in, feed) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (errors_tx, errors_rx) = mpsc::unbounded_channel::<String>();
    tokio::spawn(read_lines(input, feed, errors_tx));
    tokio::spawn(write_lines(from_rmcp, errors_rx, output));
    (rmcp_in, rmcp_out)
}

/// Reads stdin line by line; good lines go to rmcp, bad ones are answered. Dropping `feed` at
/// EOF ends rmcp's session like a closed stdin.
async fn read_lines<R: AsyncRead + Unpin>(
    input: R,
    mut feed: DuplexStream,
    errors: mpsc::UnboundedSender<String>,
) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let too_long = match read_line(&mut input, &mut line).await {
            Ok(None) => return,
            Ok(Some(too_long)) => too_long,
            Err(e) => {
                tracing::info!("reading stdin: {e}");
                return;
            }
        };
        let verdict = if too_long {
            Err(error(
                scan_id(&line),
                -32600,
                &format!("request too large (over {MAX_LINE_BYTES} bytes)"),
            ))
        } else {
            check(&line)
        };
        match verdict {
            Ok(true) => {
                line.push(b'\n');
                if feed.write_all(&line).await.is_err() {
                    return;
                }
            }
            Ok(false) => {}
            Err(answer) => {
                if errors.send(answer).is_err() {
                    return;
                }
            }
        }
    }
}

/// Reads one line (without its newline) into `line`, keeping at most [`MAX_LINE_BYTES`];
/// `None` at EOF, `Some(true)` when the line was longer (the rest was read and dropped).
async fn read_line<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    let mut too_long = false;
    let mut any = false;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok(any.then_some(too_long));
        }
        any = true;
        let (chunk, done) = match memchr(b'\n', buf) {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        if chunk.len() > room {
            too_long = true;
            // Keep the head: it is where the id usually is.
            line.extend_from_slice(&chunk[..room]);
        } else {
            line.extend_from_slice(chunk);
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        if done.is_some() {
            return Ok(Some(too_long));
        }
    }
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

/// Copies rmcp's output lines and the boundary's error answers to `output`, one whole line at
/// a time, until both are done.
async fn write_lines<W: AsyncWrite + Unpin>(
    from_rmcp: DuplexStream,
    mut errors: mpsc::UnboundedReceiver<String>,
    mut output: W,
) {
    let mut from_rmcp = BufReader::new(from_rmcp);
    let mut line = Vec::new();
    let (mut rmcp_open, mut errors_open) = (true, true);
    while rmcp_open || errors_open {
        tokio::select! {
            n = from_rmcp.read_until(b'\n', &mut line), if rmcp_open => {
                match n {
                    Ok(0) | Err(_) => rmcp_open = false,
                    Ok(_) => {
                        if output.write_all(&line).await.is_err() { return; }
                        line.clear();
                    }
                }
            }
            e = errors.recv(), if errors_open => match e {
                Some(mut answer) => {
                    answer.push('\n');
                    if output.write_all(answer.as_bytes()).await.is_err() { return; }
                }
                None => errors_open = false,
            },
        }
        let _ = output.flush().await;
    }
}

/// Judges one line: `Ok(true)` to pass it to rmcp, `Ok(false)` to skip it silently (blank, or
/// a bad notification, which has nobody to answer), `Err(answer)` to answer it here.
pub fn check(line: &[u8]) -> Result<bool, String> {
    let text = line.strip_suffix(b"\r").unwrap_or(line);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(false);
    }
    let value: Value = match serde_json::from_slice(text) {
        Ok(v) => v,
        Err(e) => return Err(error(scan_id(text), -32700, &format!("parse error: {e}"))),
    };
    let Value::Object(msg) = &value else {
        let what = if value.is_array() {
            "batches are not supported: send one JSON-RPC message per line"
        } else {
            "a JSON-RPC message must be an object"
        };
        return Err(error(None, -32600, what));
    };
    let id = msg.get("id").filter(|id| id.is_string() || id.is_number());
    let is_request = id.is_some();
    if let Some(method) = msg.get("method") {
        let Some(method) = method.as_str() else {
            return answer_or_drop(id, -32600, "`method` must be a string");
        };
        match msg.get("params") {
            None | Some(Value::Object(_)) => {}
            Some(_) => {
                return answer_or_drop(id, -32602, "invalid params: `params` must be an object");
            }
        }
        if method == "tools/call" && is_request {
            let params = msg.get("params").and_then(Value::as_object);
            if !params.is_some_and(|p| p.get("name").is_some_and(Value::is_string)) {
                return answer_or_drop(
                    id,
                    -32602,
                    "invalid params: tools/call needs `name`, the tool's name as a string",
                );
            }
            match params.and_then(|p| p.get("arguments")) {
                None | Some(Value::Object(_)) | Some(Value::Null) => {}
                Some(_) => {
                    return answer_or_drop(
                        id,
                        -32602,
                        "invalid params: `arguments` must be an object",
                    );
                }
            }
        }
    }
    match serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
        // rmcp reads a known method whose params do not fit as an unknown one ("method not
        // found"): the method exists, its params are wrong.
        Ok(ClientJsonRpcMessage::Request(r))
            if matches!(&r.request, ClientRequest::CustomRequest(c)
                if KNOWN_METHODS.contains(&c.method.as_str())) =>
        {
            let method = r.request.method().to_owned();
            answer_or_drop(
                id,
                -32602,
                &format!("invalid params: the params of {method} do not have the expected shape"),
            )
        }
        Ok(_) => Ok(true),
        Err(e) if msg.contains_key("method") => {
            answer_or_drop(id, -32602, &format!("invalid params: {e}"))
        }
        Err(e) => answer_or_drop(id, -32600, &format!("invalid request: {e}")),
    }
}

/// The requests rmcp knows (it reads one whose params do not fit as a custom request).
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "server/discover",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
    "resources/directory/read",
];

/// An error answer for a request, or a silent drop for a notification (JSON-RPC: no answer).
fn answer_or_drop(id: Option<&Value>, code: i64, message: &str) -> Result<bool, String> {
    match id {
        Some(id) => Err(error(Some(id.clone()), code, message)),
        None => {
            tracing::info!("dropped a malformed notification: {message}");
            Ok(false)
        }
    }
}

/// A JSON-RPC error answer.
fn error(id: Option<Value>, code: i64, message: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": { "code": code, "message": message },
    })
    .to_string()
}

/// The `"id"` of a message that did not parse (a truncated line), if it can be read: the
/// first `"id"` key followed by a number or a complete string.
fn scan_id(text: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(text);
    let mut rest = &text[..];
    while let Some(at) = rest.find("\"id\"") {
        let after = rest[at + 4..].trim_start();
        rest = &rest[at + 4..];
        let Some(after) = after.strip_prefix(':') else {
            continue;
        };
        let after = after.trim_start();
        if let Some(s) = after.strip_prefix('"') {
            let end = s.find('"')?;
            let id = &s[..end];
            return (!id.contains('\\')).then(|| Value::String(id.to_owned()));
        }
        let end = after
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(after.len());
        // A number cut off by the end of the line might be missing digits.
        if end == after.len() {
            return None;
        }
        return after[..end].parse::<i64>().ok().map(Value::from);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Value {
        serde_json::from_str(&check(line.as_bytes()).expect_err("answered")).expect("json")
    }

    #[test]
    fn good_lines_pass() {
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(true)
        );
        assert_eq!(check(b"   "), Ok(false));
    }

    #[test]
    fn truncated_json_is_a_parse_error_with_its_id() {
        let a = answer(r#"{"jsonrpc":"2.0","id":7,"method":"tools/li"#);
        assert_eq!(a["id"], 7);
        assert_eq!(a["error"]["code"], -32700);
        let a = answer(r#"{"jsonrpc":"2.0","id":"abc","method":"#);
        assert_eq!(a["id"], "abc");
        let a = answer(r#"{"jsonrpc":"2.0","id":12"#);
        assert_eq!(a["id"], Value::Null, "the number may be cut short");
    }

    #[test]
    fn params_that_are_not_objects_are_invalid_params() {
        let a = answer(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":[1,2]}"#);
        assert_eq!(
            (a["id"].clone(), a["error"]["code"].clone()),
            (2.into(), (-32602).into())
        );
        let a = answer(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":5}}"#,
        );
        assert_eq!(a["error"]["code"], -32602);
        let a = answer(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}"#);
        assert_eq!(a["error"]["code"], -32602);
        let a = answer(r#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{}}"#);
        assert_eq!(
            (a["id"].clone(), a["error"]["code"].clone()),
            (5.into(), (-32602).into())
        );
    }

    #[test]
    fn bad_notifications_are_dropped_and_batches_refused() {
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","method":"notifications/x","params":3}"#),
            Ok(false)
        );
        assert_eq!(answer("[1]")["error"]["code"], -32600);
    }
}
