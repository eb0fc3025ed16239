//! Protocol revisions: a client offering 2026-07-28 gets it (`server/discover`, per-request
//! metadata, `subscriptions/listen`); a client on a 2025 revision keeps the `initialize`
//! handshake and `resources/subscribe`.

use std::time::Duration;

use rmcp::model::{
    ProtocolVersion, ServerNotification, SubscribeRequestParams, SubscriptionFilter,
};
use serde_json::json;

use crate::util::{DEADLINE, Dialect, Server};

const V2026: Dialect = Dialect {
    tasks: false,
    protocol_2026: true,
};

#[tokio::test]
async fn a_client_offering_2026_07_28_gets_it_and_every_tool_works() {
    let s = Server::start_as(&[], V2026).await;
    let info = s.client().peer_info().expect("server info");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    let tools = s.client().list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "execute_command"));
    let (id, _) = s.exec("echo from-2026").await;
    s.wait_done(&id).await;
    assert!(s.output(&id).await.contains("from-2026"));
    let w = s.ok("wait_for_job", json!({ "job_id": id })).await;
    assert_eq!(w["reason"], "exited");
}

#[tokio::test]
async fn a_2025_client_keeps_the_initialize_handshake() {
    let s = Server::start(&[]).await;
    let info = s.client().peer_info().expect("server info");
    assert!(info.protocol_version.has_initialize(), "{info:?}");
    let (id, _) = s.exec("sleep 1000").await;
    // resources/subscribe is the 2025 way, and still answered.
    #[allow(deprecated)]
    s.client()
        .subscribe(SubscribeRequestParams::new(format!(
            "ptyjobs://jobs/{id}/output"
        )))
        .await
        .expect("resources/subscribe on 2025");
}

#[tokio::test]
async fn subscriptions_listen_streams_job_updates_and_list_changes() {
    let s = Server::start_as(&[], V2026).await;
    let (id, _) = s.exec("read line; echo got-$line; sleep 1000").await;
    let uri = format!("ptyjobs://jobs/{id}/output");
    let filter = SubscriptionFilter::builder()
        .resource_subscription(uri.clone())
        .resource_subscription("ptyjobs://jobs/123e4567-e89b-42d3-a456-426614174000/output")
        .resources_list_changed()
        .build();
    let mut sub = s
        .client()
        .peer()
        .listen(filter)
        .await
        .expect("subscriptions/listen");
    // Only resources of known jobs are accepted.
    assert_eq!(
        sub.acknowledged().resource_subscriptions,
        Some(vec![uri.clone()])
    );
    assert_eq!(sub.acknowledged().resources_list_changed, Some(true));

    // Once registered, the stream says so with one notification of each kind (a change
    // between the acknowledgement and the registration is not lost).
    expect_both(&mut sub, &uri).await;

    // The job prints: an update of its output resource.
    s.ok(
        "interact_with_job",
        json!({ "job_id": id, "input": "x", "wait_ms": 200 }),
    )
    .await;
    // A job appears: the list changed.
    let (other, _) = s.exec("sleep 1000").await;
    assert_ne!(other, id);
    expect_both(&mut sub, &uri).await;
    // resources/subscribe is not part of 2026-07-28.
    #[allow(deprecated)]
    let legacy = s
        .client()
        .subscribe(SubscribeRequestParams::new(uri.clone()))
        .await;
    assert!(legacy.is_err(), "resources/subscribe on 2026: {legacy:?}");
    s.assert_serving().await;
}

/// Waits (bounded) until `sub` has brought an update of `uri` and a resource-list change.
async fn expect_both(sub: &mut rmcp::service::Subscription, uri: &str) {
    let (mut updated, mut listed) = (false, false);
    let end = tokio::time::Instant::now() + DEADLINE;
    while !(updated && listed) {
        let left = end.saturating_duration_since(tokio::time::Instant::now());
        let n = tokio::time::timeout(left.max(Duration::from_millis(1)), sub.next())
            .await
            .expect("notifications before the deadline")
            .expect("a live stream")
            .expect("the stream is open");
        match n {
            ServerNotification::ResourceUpdatedNotification(u) => {
                assert_eq!(u.params.uri, uri);
                updated = true;
            }
            ServerNotification::ResourceListChangedNotification(_) => listed = true,
            _ => {}
        }
    }
}
