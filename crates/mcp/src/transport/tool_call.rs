//! `tools/call` read straight into rmcp's own request type.
//!
//! rmcp reads a client message through untagged enums: the whole request is buffered, then
//! each message shape and each of the ~20 request types is tried in turn (a `tools/call` is
//! the 14th), every miss building an error. A tool call is the message an agent sends most,
//! so when its line has exactly the four members of a request, it is read here with rmcp's
//! own `CallToolRequest` deserializer (which moves `_meta` into the request's extensions as
//! rmcp does) and wrapped in the same message rmcp would have built. Anything else — another
//! member, a `jsonrpc` that is not "2.0", params rmcp's type does not accept — returns `None`
//! and takes rmcp's generic path, so its answer (or error) is exactly rmcp's.

use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientRequest, JsonRpcRequest, RequestId,
};
use serde::Deserialize;
use serde_json::Value;

/// The `tools/call` request in `value`, decoded as rmcp's generic path would decode it, or
/// `None` when `value` is anything else or anything unusual (then rmcp's path decides).
pub fn decode(value: &Value) -> Option<ClientJsonRpcMessage> {
    let msg = value.as_object()?;
    let plain = msg.len() == 4
        && msg.get("jsonrpc")?.as_str() == Some("2.0")
        && msg.get("method")?.as_str() == Some("tools/call")
        && msg.get("params")?.is_object();
    if !plain {
        return None;
    }
    let id = RequestId::deserialize(msg.get("id")?).ok()?;
    // The deserializer reads `method` and `params` and ignores the two other members.
    let request = CallToolRequest::deserialize(value).ok()?;
    Some(ClientJsonRpcMessage::Request(JsonRpcRequest::new(
        id,
        ClientRequest::CallToolRequest(request),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What rmcp's generic path makes of `line`.
    fn generic(line: &str) -> Result<ClientJsonRpcMessage, String> {
        serde_json::from_str(line).map_err(|e| e.to_string())
    }

    /// The tool calls a client sends, and the odd ones: each is decoded here exactly as rmcp
    /// decodes it (compared on the wire form, which carries `_meta` back out of the
    /// extensions), or left to rmcp.
    #[test]
    fn tool_calls_decode_as_rmcp_decodes_them() {
        let same = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_job_status","arguments":{"job_id":"abc"}}}"#,
            r#"{"id":"x-1","method":"tools/call","params":{"name":"t"},"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"progressToken":7,"x":[1]}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t","arguments":{"a":"é\u0000"},"task":{"ttl":1000}}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","requestState":"s","unknown":true}}"#,
            r#"{"jsonrpc":"2.0","id":6.0,"method":"tools/call","params":{"name":"t"}}"#,
        ];
        for line in same {
            let value: Value = serde_json::from_str(line).expect("json");
            let fast = decode(&value).unwrap_or_else(|| panic!("not decoded: {line}"));
            let rmcp = generic(line).expect("rmcp reads it");
            assert_eq!(
                serde_json::to_value(&fast).expect("encode"),
                serde_json::to_value(&rmcp).expect("encode"),
                "{line}"
            );
        }
    }

    #[test]
    fn anything_unusual_is_left_to_rmcp() {
        let left = [
            // Not a tool call, or not a plain request.
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
            // Ids and params rmcp's types refuse.
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
        ];
        for line in left {
            let value: Value = serde_json::from_str(line).expect("json");
            assert!(decode(&value).is_none(), "{line}");
        }
    }
}
