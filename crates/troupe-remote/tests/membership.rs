//! Membership from heartbeats: nodes see each other come up, and see a
//! node that shuts down leave (in-process; a SIGKILLed node process going
//! silent is in `processes.rs`).

mod support;

use troupe_remote::{DownReason, MemberEvent};

use support::{await_member_event, node, server, stop, system};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_see_each_other_up_and_see_one_leave() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let mut a_events = a.member_events();
    assert_eq!(a.members(), vec!["a".to_string()]);

    let b = node(&sys_b, &server, "b").await;
    let mut b_events = b.member_events();
    // b beats at once: a hears it.
    await_member_event(&mut a_events, MemberEvent::Up("b".into())).await;
    // b hears a at a's next beat, unless it already has.
    if !b.members().contains(&"a".to_string()) {
        await_member_event(&mut b_events, MemberEvent::Up("a".into())).await;
    }
    assert_eq!(a.members(), vec!["a".to_string(), "b".to_string()]);
    assert_eq!(b.members(), vec!["a".to_string(), "b".to_string()]);

    b.shutdown().await;
    await_member_event(
        &mut a_events,
        MemberEvent::Down {
            node: "b".into(),
            reason: DownReason::Left,
        },
    )
    .await;
    assert_eq!(a.members(), vec!["a".to_string()]);
    a.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}
