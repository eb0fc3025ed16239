//! The tool list is context the agent pays for on every turn: names, descriptions and input
//! schemas of every tool, as a model sees them, stay within a fixed budget. A new parameter or
//! tool has to fit, so descriptions are folded and shortened before the budget grows.

use serde_json::{Value, json};

use crate::util::Server;

/// The budget, in bytes of compact JSON (issue 22: about 14 KB for 12 tools, at most 16 KB
/// with the services tools).
const BUDGET: usize = 16 * 1024;

#[tokio::test]
async fn the_tool_list_a_model_sees_fits_the_budget() {
    let s = Server::start(&[]).await;
    let tools = s.client().list_all_tools().await.expect("tools/list");
    // What a client puts in the model's context: the output schemas and annotations are for
    // the client, not the model.
    let seen: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "inputSchema": Value::Object((*t.input_schema).clone()),
            })
        })
        .collect();
    let mut sizes: Vec<(usize, &str)> = seen
        .iter()
        .zip(&tools)
        .map(|(v, t)| (v.to_string().len(), t.name.as_ref()))
        .collect();
    let total = Value::Array(seen.clone()).to_string().len();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    eprintln!(
        "tool list: {total} bytes for {} tools; largest: {sizes:?}",
        tools.len()
    );
    assert!(
        total <= BUDGET,
        "the tool list a model sees is {total} bytes, over the {BUDGET}-byte budget: {sizes:?}"
    );
}
