//! The stdio boundary: one JSON-RPC message per line in, one per line out, as rmcp's
//! [`Transport`] (no relay task, no second parse: each line is read once, judged once and
//! handed to rmcp already decoded).
//!
//! rmcp drops a line it cannot parse without a word (the client then waits forever for that
//! id) and answers a request whose `params` has the wrong shape with an id-less "invalid
//! request", or as an unknown method. So every line from stdin is checked here first: a line
//! that is not JSON gets a parse error (-32700), a request whose `params` (or `tools/call`
//! `arguments`) is not an object gets invalid params (-32602), anything else rmcp cannot read
//! gets invalid request (-32600) — each carrying the request's id whenever one can be read,
//! even from a truncated line. Both rmcp's answers and these errors reach stdout through one
//! writer, a whole line at a time, so they never interleave.
//!
//! Over pipes (every MCP client) stdin and stdout are reopened non-blocking and polled by the
//! runtime (rmcp's `stdio_pipes`); a terminal falls back to tokio's blocking stdio. Tokio's
//! blocking stdin hands every read to a pool thread: two thread hand-offs per request.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

mod tool_call;

/// Longest accepted line: a request larger than this is answered with an error and skipped.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// The MCP server's transport over stdin/stdout.
pub fn stdio() -> Lines<rmcp::transport::StdioReader, rmcp::transport::StdioWriter> {
    let (input, output) = rmcp::transport::stdio_pipes();
    Lines::new(input, output)
}

/// Newline-delimited JSON-RPC over `input`/`output`, with the checks above.
pub struct Lines<R, W> {
    input: BufReader<R>,
    /// The line being read. Kept here, not in a local: `receive` is polled in a `select!` and
    /// may be dropped between two reads, and the next call must go on with the same line.
    line: Vec<u8>,
    /// The line being read went past [`MAX_LINE_BYTES`] (the rest is read and dropped).
    too_long: bool,
    output: Arc<tokio::sync::Mutex<W>>,
}

impl<R, W> Lines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// The transport over `input` and `output`.
    pub fn new(input: R, output: W) -> Self {
        Self {
            input: BufReader::with_capacity(64 << 10, input),
            line: Vec::new(),
            too_long: false,
            output: Arc::new(tokio::sync::Mutex::new(output)),
        }
    }

    /// Reads the rest of one line (without its newline) into `self.line`, keeping at most
    /// [`MAX_LINE_BYTES`]; `false` at EOF with nothing read. Cancel-safe: what was read stays
    /// in `self.line` for the next call.
    async fn read_line(&mut self) -> std::io::Result<bool> {
        loop {
            let buf = self.input.fill_buf().await?;
            if buf.is_empty() {
                return Ok(!self.line.is_empty() || self.too_long);
            }
            let (chunk, done) = match memchr(b'\n', buf) {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            let room = MAX_LINE_BYTES.saturating_sub(self.line.len());
            if chunk.len() > room {
                self.too_long = true;
                // Keep the head: it is where the id usually is.
                self.line.extend_from_slice(&chunk[..room]);
            } else {
                self.line.extend_from_slice(chunk);
            }
            let used = done.unwrap_or(buf.len());
            self.input.consume(used);
            if done.is_some() {
                return Ok(true);
            }
        }
    }

    /// Writes `answer` (one line) to the output in the background: `receive` must not wait
    /// on the output (it is cancelled whenever rmcp has something else to do).
    fn answer(&self, mut answer: String) {
        answer.push('\n');
        let output = Arc::clone(&self.output);
        tokio::spawn(async move { write_line(&output, answer.as_bytes()).await });
    }
}

/// Writes one whole line and flushes it.
async fn write_line<W: AsyncWrite + Unpin>(
    output: &tokio::sync::Mutex<W>,
    line: &[u8],
) -> std::io::Result<()> {
    let mut output = output.lock().await;
    output.write_all(line).await?;
    output.flush().await
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Encoded here, once, straight into the line that is written.
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        let output = Arc::clone(&self.output);
        async move {
            let line = line.map_err(std::io::Error::other)?;
            write_line(&output, &line).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            match self.read_line().await {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    tracing::info!("reading stdin: {e}");
                    return None;
                }
            }
            // A whole line is in: from here to the end of the turn nothing awaits, so a
            // cancelled `receive` never loses a judged line.
            let verdict = if self.too_long {
                Err(error(
                    scan_id(&self.line),
                    -32600,
                    &format!("request too large (over {MAX_LINE_BYTES} bytes)"),
                ))
            } else {
                check(&self.line)
            };
            self.line.clear();
            self.too_long = false;
            match verdict {
                Ok(Some(message)) => return Some(message),
                Ok(None) => {}
                Err(answer) => self.answer(answer),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.output.lock().await.flush().await
    }
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

/// Judges one line: `Ok(Some(message))` to pass it to rmcp, `Ok(None)` to skip it silently
/// (blank, or a bad notification, which has nobody to answer), `Err(answer)` to answer it here.
pub fn check(line: &[u8]) -> Result<Option<ClientJsonRpcMessage>, String> {
    let text = line.strip_suffix(b"\r").unwrap_or(line);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
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
    if is_request && let Some(message) = tool_call::decode(&value) {
        return Ok(Some(message));
    }
    // From here on the value is given away (its strings move into rmcp's message instead of
    // being copied): keep what the errors below need.
    let (id, has_method) = (id.cloned(), msg.contains_key("method"));
    let id = id.as_ref();
    match ClientJsonRpcMessage::deserialize(value) {
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
        Ok(message) => Ok(Some(message)),
        Err(e) if has_method => answer_or_drop(id, -32602, &format!("invalid params: {e}")),
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
fn answer_or_drop<T>(id: Option<&Value>, code: i64, message: &str) -> Result<Option<T>, String> {
    match id {
        Some(id) => Err(error(Some(id.clone()), code, message)),
        None => {
            tracing::info!("dropped a malformed notification: {message}");
            Ok(None)
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
        assert!(matches!(
            check(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Some(ClientJsonRpcMessage::Request(_)))
        ));
        assert!(matches!(check(b"   "), Ok(None)));
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
        assert!(matches!(
            check(br#"{"jsonrpc":"2.0","method":"notifications/x","params":3}"#),
            Ok(None)
        ));
        assert_eq!(answer("[1]")["error"]["code"], -32600);
    }
}
