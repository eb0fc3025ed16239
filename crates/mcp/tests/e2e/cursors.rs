//! Cursors and budgets (next_offset, max_bytes), search, names and filters, and resources.

#![allow(deprecated)] // resources/subscribe: what clients on 2025 protocol versions use.

use rmcp::model::{ReadResourceRequestParams, ResourceContents, SubscribeRequestParams};
use serde_json::{Value, json};

use crate::util::{DEADLINE, Server, wait_until};

/// Checks that every line of `out` is the number of its absolute line plus one (`seq 1 N`).
fn assert_numbered(out: &Value) {
    let first = out["first_line"].as_u64().expect("first_line");
    let text = out["output"].as_str().expect("output");
    for (i, line) in text.lines().enumerate() {
        assert_eq!(
            line,
            (first + i as u64 + 1).to_string(),
            "line {i} of {out}"
        );
    }
}

/// `next_offset` reads return exactly the new lines, also after the oldest were evicted from
/// memory with no disk log to read them back from (with one, see `persist.rs`).
#[tokio::test]
async fn next_offset_reads_return_exactly_the_new_lines_across_eviction() {
    let s = Server::start(&["--transcript-bytes", "1024", "--no-persist"]).await;
    let (id, _) = s
        .exec("stty -echo; seq 1 5; read x; seq 6 600; read x; seq 601 605; read x")
        .await;
    let first = s
        .ok(
            "wait_for_job",
            json!({ "job_id": id, "pattern": "^5$", "from_start": true }),
        )
        .await;
    let out = s.ok("get_job_output", json!({ "job_id": id })).await;
    assert_eq!(out["output"], "1\n2\n3\n4\n5", "{first}");
    assert_eq!(out["next_offset"], 5);
    assert_eq!(out["line_count"], 5);
    assert_eq!(out["bytes"], 9);
    assert_eq!(out["remaining_lines"], 0);

    s.ok("interact_with_job", json!({ "job_id": id, "input": "" }))
        .await;
    s.ok(
        "wait_for_job",
        json!({ "job_id": id, "pattern": "^600$", "from_start": true }),
    )
    .await;
    let new = s
        .ok("get_job_output", json!({ "job_id": id, "offset": 5 }))
        .await;
    assert!(new["dropped_lines"].as_u64() > Some(5), "{new}");
    assert_eq!(
        new["truncated"], true,
        "evicted lines of the range are reported"
    );
    assert_numbered(&new);
    assert!(new["output"].as_str().unwrap_or("").ends_with("\n600"));
    assert_eq!(new["next_offset"], 600);

    s.ok("interact_with_job", json!({ "job_id": id, "input": "" }))
        .await;
    s.ok(
        "wait_for_job",
        json!({ "job_id": id, "pattern": "^605$", "from_start": true }),
    )
    .await;
    let newer = s
        .ok("get_job_output", json!({ "job_id": id, "offset": 600 }))
        .await;
    assert_eq!(newer["output"], "601\n602\n603\n604\n605");
    assert_eq!(newer["first_line"], 600);
    assert_eq!(newer["truncated"], false);
}

/// `max_bytes` bounds output and tail: head and tail kept, the omission named.
#[tokio::test]
async fn max_bytes_is_respected_with_head_tail_and_marker() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("seq 1 5000").await;
    s.wait_done(&id).await;
    let out = s
        .ok("get_job_output", json!({ "job_id": id, "max_bytes": 1000 }))
        .await;
    let text = out["output"].as_str().expect("output");
    assert!(text.len() <= 1000, "{} bytes", text.len());
    assert_eq!(out["bytes"], text.len());
    assert!(
        text.starts_with("1\n2\n") && text.ends_with("\n1000"),
        "{text}"
    );
    assert_eq!(out["line_count"], 1000, "the default limit");
    assert_eq!(out["next_offset"], 1000);
    assert_eq!(out["remaining_lines"], 4000);
    assert_eq!(out["truncated"], true);
    let from = out["omitted_from"].as_u64().expect("omitted_from");
    let omitted = out["omitted_lines"].as_u64().expect("omitted_lines");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[from as usize - 1],
        from.to_string(),
        "the last line kept"
    );
    assert!(
        lines[from as usize].contains("omitted"),
        "{}",
        lines[from as usize]
    );
    assert_eq!(lines[from as usize + 1], (from + omitted + 1).to_string());
    // The omitted lines are where omitted_from says.
    let gap = s
        .ok(
            "get_job_output",
            json!({ "job_id": id, "offset": from, "limit": omitted }),
        )
        .await;
    assert_numbered(&gap);
    assert_eq!(gap["line_count"], omitted);

    let tail = s
        .ok(
            "tail_job_output",
            json!({ "job_id": id, "lines": 1000, "max_bytes": 300 }),
        )
        .await;
    let t = tail["output"].as_str().expect("output");
    assert!(t.len() <= 300 && t.ends_with("4999\n5000"), "{t}");
    assert_eq!(tail["first_line"], 4000);
    assert_eq!(tail["next_offset"], 5000);
    assert!(tail["omitted_lines"].as_u64() > Some(0));
    let small = s
        .ok("tail_job_output", json!({ "job_id": id, "lines": 2 }))
        .await;
    assert_eq!(small["output"], "4999\n5000");
    assert_eq!(
        (
            small["omitted_lines"].as_u64(),
            small["truncated"].as_bool()
        ),
        (Some(0), Some(false))
    );
}

#[tokio::test]
async fn search_finds_lines_with_context_and_counts_all() {
    let s = Server::start(&[]).await;
    let (id, _) = s
        .exec(r"printf 'a\nerror one\nb\nc\nerror two\nd\nERROR three\n'")
        .await;
    s.wait_done(&id).await;
    let r = s
        .ok(
            "search_job_output",
            json!({ "job_id": id, "pattern": "^error", "context": 1 }),
        )
        .await;
    assert_eq!(r["total_matches"], 2, "{r}");
    assert_eq!(r["returned"], 2);
    let m = &r["matches"];
    assert_eq!(m[0]["line"], 1);
    assert_eq!(m[0]["text"], "error one");
    assert_eq!(m[0]["before"], json!(["a"]));
    assert_eq!(m[0]["after"], json!(["b"]));
    assert_eq!(m[1]["line"], 4);
    assert_eq!(m[1]["before"], json!(["c"]));
    assert_eq!(r["next_offset"], 7);
    let r = s
        .ok(
            "search_job_output",
            json!({ "job_id": id, "pattern": "(?i)error", "max_matches": 1, "context": 0 }),
        )
        .await;
    assert_eq!(
        (r["returned"].as_u64(), r["total_matches"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(r["omitted_matches"], 2);
    assert_eq!(r["matches"][0]["before"], json!([]));
    let msg = s
        .tool_error("search_job_output", json!({ "job_id": id, "pattern": "(" }))
        .await;
    assert!(msg.contains("pattern"), "{msg}");
}

#[tokio::test]
async fn names_are_listed_and_list_jobs_filters_by_status() {
    let s = Server::start(&[]).await;
    let (done, _) = s
        .exec_with(json!({ "command": "true", "name": "quick" }))
        .await;
    s.wait_done(&done).await;
    let (running, _) = s
        .exec_with(json!({ "command": "exec sleep 30", "name": "slow" }))
        .await;
    let all = s.ok("list_jobs", json!({})).await;
    assert_eq!(all["jobs"][0]["name"], "slow");
    assert_eq!(all["jobs"][1]["name"], "quick");
    let r = s.ok("list_jobs", json!({ "status": "running" })).await;
    let ids: Vec<&str> = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|j| j["job_id"].as_str())
        .collect();
    assert_eq!(ids, [running.as_str()]);
    let r = s.ok("list_jobs", json!({ "status": "completed" })).await;
    assert_eq!(r["jobs"][0]["job_id"], done.as_str());
    assert_eq!(r["jobs"].as_array().map(Vec::len), Some(1));
    s.refused("list_jobs", json!({ "status": "sleepy" })).await;
    assert_eq!(s.status(&running).await["name"], "slow");
}

/// A resource's text and its `_meta` (empty when it has none).
async fn read_contents(s: &Server, uri: &str) -> (String, serde_json::Map<String, Value>) {
    let r = s
        .client()
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .expect("resources/read");
    match &r.contents[0] {
        ResourceContents::TextResourceContents { text, meta, .. } => {
            (text.clone(), meta.clone().map(|m| m.0).unwrap_or_default())
        }
        other => panic!("not text: {other:?}"),
    }
}

async fn read_text(s: &Server, uri: &str) -> String {
    read_contents(s, uri).await.0
}

/// Job resources: listed, readable, and subscribed clients hear about new output and the exit.
#[tokio::test]
async fn resources_are_listed_read_and_updated() {
    let s = Server::start(&[]).await;
    let (id, _) = s
        .exec("stty -echo; echo first; read x; echo second; read x")
        .await;
    let output = format!("ptyjobs://jobs/{id}/output");
    let screen = format!("ptyjobs://jobs/{id}/screen");
    let listed = s
        .client()
        .list_all_resources()
        .await
        .expect("resources/list");
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    assert!(
        uris.contains(&output.as_str()) && uris.contains(&screen.as_str()),
        "{uris:?}"
    );
    let templates = s
        .client()
        .list_all_resource_templates()
        .await
        .expect("resources/templates/list");
    assert_eq!(templates.len(), 2);
    wait_until("the list-changed notification", DEADLINE, || async {
        (s.heard
            .list_changed
            .load(std::sync::atomic::Ordering::SeqCst)
            > 0)
        .then_some(())
    })
    .await;

    s.wait_output(&id, "first").await;
    assert_eq!(read_text(&s, &output).await, "first");
    assert!(read_text(&s, &screen).await.starts_with("first"));

    s.client()
        .subscribe(SubscribeRequestParams::new(&output))
        .await
        .expect("resources/subscribe");
    s.ok("interact_with_job", json!({ "job_id": id, "input": "" }))
        .await;
    wait_until("an update notification", DEADLINE, || async {
        (s.heard.updates_of(&output) > 0).then_some(())
    })
    .await;
    assert_eq!(read_text(&s, &output).await, "first\nsecond");

    // The exit is announced too.
    let before = s.heard.updates_of(&output);
    s.ok("kill_job", json!({ "job_id": id })).await;
    wait_until("an update notification for the exit", DEADLINE, || async {
        (s.heard.updates_of(&output) > before).then_some(())
    })
    .await;

    let e = s
        .client()
        .read_resource(ReadResourceRequestParams::new("ptyjobs://jobs/nope/output"))
        .await
        .expect_err("unknown resource");
    assert!(e.to_string().contains("resources/list"), "{e}");
    s.assert_serving().await;
}

/// Update notifications of a busy job are throttled to at most 4 a second.
#[tokio::test]
async fn resource_updates_are_throttled() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("while :; do echo tick; sleep 0.01; done").await;
    let uri = format!("ptyjobs://jobs/{id}/output");
    let t = std::time::Instant::now();
    s.client()
        .subscribe(SubscribeRequestParams::new(&uri))
        .await
        .expect("resources/subscribe");
    wait_until("four update notifications", DEADLINE, || async {
        (s.heard.updates_of(&uri) >= 4).then_some(())
    })
    .await;
    // The first comes at once, each later one at least 250 ms after the one before.
    let took = t.elapsed();
    assert!(took >= std::time::Duration::from_millis(750), "{took:?}");
    s.client()
        .unsubscribe(rmcp::model::UnsubscribeRequestParams::new(&uri))
        .await
        .expect("resources/unsubscribe");
}

/// `…/output?from=N` reads the job's final lines from N on (the engine's follow) and says in
/// `_meta.next` where the next read starts: reads chained so see every line exactly once.
#[tokio::test]
async fn the_output_resource_reads_as_a_stream_of_new_lines() {
    let s = Server::start(&[]).await;
    let (id, _) = s
        .exec("stty -echo; seq 1 100; read x; seq 101 150; read x")
        .await;
    let read = |from: u64| {
        let uri = format!("ptyjobs://jobs/{id}/output?from={from}");
        let s = &s;
        async move { read_contents(s, &uri).await }
    };
    let mut seen: Vec<String> = Vec::new();
    let mut from = 0;
    let mut take = |text: String, meta: serde_json::Map<String, Value>, from: &mut u64| {
        assert_eq!(meta["first_line"].as_u64(), Some(*from), "{meta:?}");
        let next = meta["next"].as_u64().expect("next");
        assert_eq!(
            next - *from,
            text.lines().count() as u64,
            "{text:?} {meta:?}"
        );
        seen.extend(text.lines().map(str::to_owned));
        *from = next;
        meta["ended"].as_bool().expect("ended")
    };
    s.wait_output(&id, "100").await;
    // 100 lines on a 24-row screen: the ones scrolled off are final, the rest not yet.
    let (text, meta) = wait_until("final lines", DEADLINE, || async {
        let (t, m) = read(0).await;
        (!t.is_empty()).then_some((t, m))
    })
    .await;
    assert!(!take(text, meta, &mut from));
    assert!(from > 50 && from < 100, "{from}");
    // Nothing new: an empty read that stays where it is.
    let (text, meta) = read(from).await;
    assert_eq!((text.as_str(), meta["next"].as_u64()), ("", Some(from)));
    s.ok("interact_with_job", json!({ "job_id": id, "input": "" }))
        .await;
    s.wait_output(&id, "150").await;
    let (text, meta) = read(from).await;
    assert!(text.starts_with(&format!("{}\n", from + 1)), "{text:?}");
    assert!(!take(text, meta, &mut from));
    s.ok("kill_job", json!({ "job_id": id })).await;
    s.wait_done(&id).await;
    let (text, meta) = read(from).await;
    assert!(
        take(text, meta, &mut from),
        "the last read says the job ended"
    );
    let numbers: Vec<String> = (1..=150).map(|n| n.to_string()).collect();
    seen.retain(|l| !l.is_empty());
    assert_eq!(seen, numbers);
    let bad = s
        .client()
        .read_resource(ReadResourceRequestParams::new(format!(
            "ptyjobs://jobs/{id}/output?from=soon"
        )))
        .await
        .expect_err("a from that is not a number");
    assert!(bad.to_string().contains("not a line number"), "{bad}");
}
