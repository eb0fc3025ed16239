//! Every answer fits its byte budget (64 KiB of content) and says what it left out: lists are
//! paginated, long commands cut, and a huge screen is fitted row by row.

use std::collections::BTreeSet;

use rmcp::model::PaginatedRequestParams;
use serde_json::{Value, json};

use crate::util::{DEADLINE, Server, wait_until};

const BUDGET: usize = 64 * 1024;

fn size(v: &impl serde::Serialize) -> usize {
    serde_json::to_vec(v).expect("json").len()
}

#[tokio::test]
async fn fifty_jobs_with_120_kb_commands_list_in_pages_within_budget() {
    let s = Server::start(&[]).await;
    let long = format!("exit 0 # {}", "x".repeat(120_000));
    let mut ids = BTreeSet::new();
    for _ in 0..50 {
        ids.insert(s.exec(&long).await.0);
    }
    // list_jobs: page by page, each page within budget, every job exactly once.
    let (mut seen, mut cursor, mut pages) = (BTreeSet::new(), None::<String>, 0);
    loop {
        let mut args = json!({ "max_bytes": 8192 });
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = s.ok("list_jobs", args).await;
        pages += 1;
        assert!(
            size(&page) <= 8192,
            "list_jobs page of {} bytes",
            size(&page)
        );
        assert_eq!(page["total_jobs"], 50);
        let jobs = page["jobs"].as_array().expect("jobs");
        assert!(!jobs.is_empty());
        assert_eq!(
            page["omitted_jobs"].as_u64(),
            Some(50 - jobs.len() as u64),
            "{}",
            page["omitted_jobs"]
        );
        for j in jobs {
            assert!(
                j["command"]
                    .as_str()
                    .expect("command")
                    .contains("bytes cut]")
            );
            assert!(
                seen.insert(j["job_id"].as_str().expect("id").to_owned()),
                "twice"
            );
        }
        match page.get("next_cursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, ids);
    assert!(pages > 1, "one page cannot hold 50 such jobs in 8 KiB");
    // The default budget: within 64 KiB.
    let all = s.ok("list_jobs", json!({})).await;
    assert!(
        size(&all) <= BUDGET,
        "list_jobs answer of {} bytes",
        size(&all)
    );
    // A made-up cursor is a clear error.
    let msg = s.tool_error("list_jobs", json!({ "cursor": "abc" })).await;
    assert!(msg.contains("next_cursor"), "{msg}");
    // get_job_status cuts the command too.
    let status = s.status(ids.iter().next().expect("a job")).await;
    assert!(size(&status) <= BUDGET, "{}", size(&status));

    // resources/list: the same, through its cursor.
    let (mut uris, mut cursor) = (BTreeSet::new(), None);
    loop {
        let page = s
            .client()
            .list_resources(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .expect("resources/list");
        assert!(
            size(&page) <= BUDGET,
            "resources/list page of {} bytes",
            size(&page)
        );
        assert!(!page.resources.is_empty());
        for r in &page.resources {
            assert!(uris.insert(r.uri.clone()), "twice: {}", r.uri);
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(uris.len(), 100, "an output and a screen resource per job");
}

#[tokio::test]
async fn a_1000_by_1000_screen_of_combining_characters_fits_and_says_what_it_left_out() {
    let s = Server::start(&[]).await;
    // 999 cells per row, each `e` with four combining accents (9 bytes): ~9 MB of screen.
    let command = r"l=$(printf 'e\314\201\314\202\314\203\314\204%.0s' $(seq 1 999)); yes $l | head -n 999; echo end; sleep 1000";
    let (id, _) = s
        .exec_with(json!({ "command": command, "cols": 1000, "rows": 1000 }))
        .await;
    s.wait_output(&id, "end").await;
    let screen = wait_until("a full screen", DEADLINE, || async {
        let r = s.ok("get_job_screen", json!({ "job_id": id })).await;
        (r["truncated"] == true).then_some(r)
    })
    .await;
    assert!(
        size(&screen) <= BUDGET + 2048,
        "screen answer of {} bytes",
        size(&screen)
    );
    assert!(
        screen["cut_rows"].as_u64() > Some(0),
        "{}",
        screen["cut_rows"]
    );
    assert!(screen["omitted_bytes"].as_u64() > Some(1_000_000));
    let rows = screen["rows"].as_array().expect("rows");
    assert!(rows[0].as_str().expect("row").starts_with("e\u{301}"));
    // With a smaller budget, smaller still.
    let small = s
        .ok("get_job_screen", json!({ "job_id": id, "max_bytes": 4096 }))
        .await;
    assert!(size(&small) <= 4096 + 2048, "{}", size(&small));
    assert!(small["omitted_rows"].as_u64() > Some(0));
    // The screen resource is bounded the same way.
    let r = s
        .client()
        .read_resource(rmcp::model::ReadResourceRequestParams::new(format!(
            "ptyjobs://jobs/{id}/screen"
        )))
        .await
        .expect("resources/read");
    assert!(
        size(&r) <= BUDGET + 2048,
        "screen resource of {} bytes",
        size(&r)
    );
}
