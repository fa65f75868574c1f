//! Message spans (feature `tracing-spans`): each handled message runs in a
//! `receive` span naming the actor and the message type, whose parent is
//! the span the message was sent from, so a request can be followed from
//! the code that sent it through every actor it passed.

use std::sync::{Arc, Mutex, OnceLock};

use crate::support::PATIENCE;
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context as LayerContext, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;
use troupe::{Actor, ActorRef, ActorSystem, Context, Props};
use troupe_testkit::{terminate, TestProbe};

/// One span as it was opened: its name, its `actor` field, and its
/// parent's name and `actor` field.
#[derive(Debug, Clone, PartialEq)]
struct Opened {
    name: String,
    actor: Option<String>,
    message: Option<String>,
    parent: Option<(String, Option<String>)>,
}

/// The fields of a span, kept in its extensions for its children to read.
#[derive(Default, Clone)]
struct Fields {
    actor: Option<String>,
    message: Option<String>,
}

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "actor" => self.actor = Some(format!("{value:?}")),
            "message_type" => self.message = Some(format!("{value:?}")),
            _ => {}
        }
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "actor" => self.actor = Some(value.to_string()),
            "message_type" => self.message = Some(value.to_string()),
            _ => {}
        }
    }
}

struct Recorder(Arc<Mutex<Vec<Opened>>>);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: LayerContext<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let span = ctx.span(id).expect("a new span is registered");
        let parent = span.parent().map(|p| {
            let actor = p.extensions().get::<Fields>().and_then(|f| f.actor.clone());
            (p.name().to_string(), actor)
        });
        self.0.lock().unwrap().push(Opened {
            name: span.name().to_string(),
            actor: fields.actor.clone(),
            message: fields.message.clone(),
            parent,
        });
        span.extensions_mut().insert(fields);
    }
}

/// The spans opened in this process, recorded by a global subscriber
/// installed once (actors run on the dispatchers' threads).
fn opened() -> &'static Arc<Mutex<Vec<Opened>>> {
    static OPENED: OnceLock<Arc<Mutex<Vec<Opened>>>> = OnceLock::new();
    OPENED.get_or_init(|| {
        let log = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Recorder(log.clone()));
        tracing::subscriber::set_global_default(subscriber).expect("no other global subscriber");
        log
    })
}

/// Passes each number on to the next hop, or to the probe at the end.
struct Hop {
    next: Option<ActorRef<u32>>,
    end: ActorRef<u32>,
}

impl Actor for Hop {
    type Msg = u32;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, n: u32) {
        match &self.next {
            Some(next) => next.tell(n + 1),
            None => self.end.tell(n),
        }
    }
}

#[test]
fn a_request_is_followed_through_every_actor_it_passes() {
    let log = opened();
    let system = ActorSystem::builder()
        .name("spans")
        .threads(2)
        .build()
        .unwrap();
    let probe = TestProbe::new(&system, "end");
    let end = probe.actor_ref();
    let e = end.clone();
    let second = system
        .spawn(
            Props::new(move || Hop {
                next: None,
                end: e.clone(),
            })
            .name("span-second"),
        )
        .unwrap();
    let first = system
        .spawn(
            Props::new(move || Hop {
                next: Some(second.clone()),
                end: end.clone(),
            })
            .name("span-first"),
        )
        .unwrap();
    {
        let request = tracing::info_span!("request", actor = "span-client");
        let _entered = request.enter();
        first.tell(1);
    }
    probe.expect_msg_eq(2, PATIENCE);
    terminate(&system, PATIENCE);

    let spans = log.lock().unwrap().clone();
    let receive_of = |actor: &str| {
        spans
            .iter()
            .find(|s| {
                s.name == "receive" && s.actor.as_deref().is_some_and(|a| a.starts_with(actor))
            })
            .unwrap_or_else(|| panic!("no receive span of {actor} in {spans:#?}"))
            .clone()
    };
    let first = receive_of("span-first");
    assert!(
        first.message.as_deref().is_some_and(|m| m.contains("u32")),
        "{first:?}"
    );
    assert_eq!(
        first.parent,
        Some(("request".to_string(), Some("span-client".to_string()))),
        "the first hop runs inside the request"
    );
    let second = receive_of("span-second");
    let (parent_name, parent_actor) = second.parent.clone().expect("the second hop has a parent");
    assert_eq!(parent_name, "receive");
    assert!(
        parent_actor.is_some_and(|a| a.starts_with("span-first")),
        "{second:?}"
    );
}
