//! `Props`: everything needed to create an actor, and to create it again on
//! restart.

use std::fmt;
use std::sync::Arc;

use crate::mailbox::bound::MailboxConfig;
use crate::supervision::SupervisorStrategy;

/// The factory that builds (and on restart rebuilds) an actor instance.
pub(crate) type Factory<A> = Arc<dyn Fn() -> A + Send + Sync>;

/// How to create an actor: its factory, and optionally a name, a dispatcher
/// and the supervisor strategy its parent applies to its failures.
///
/// ```
/// use troupe::{Actor, Context, Props, SupervisorStrategy};
///
/// struct Echo;
/// impl Actor for Echo {
///     type Msg = String;
///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: String) {
///         println!("{msg}");
///     }
/// }
///
/// let props = Props::new(|| Echo)
///     .name("echo")
///     .dispatcher("default")
///     .supervisor(SupervisorStrategy::stop());
/// # let _ = props;
/// ```
pub struct Props<A> {
    pub(crate) factory: Factory<A>,
    pub(crate) name: Option<String>,
    pub(crate) dispatcher: Option<String>,
    pub(crate) strategy: Option<Arc<SupervisorStrategy>>,
    pub(crate) mailbox: MailboxConfig,
    pub(crate) stash_capacity: usize,
}

impl<A> Props<A> {
    /// Props whose actor is built by `factory` (called again on every restart).
    pub fn new(factory: impl Fn() -> A + Send + Sync + 'static) -> Self {
        Props {
            factory: Arc::new(factory),
            name: None,
            dispatcher: None,
            strategy: None,
            mailbox: MailboxConfig::Unbounded,
            stash_capacity: 0,
        }
    }

    /// How many messages the actor may stash (`Context::stash`); 0, the
    /// default, refuses every stash.
    pub fn stash_capacity(mut self, capacity: usize) -> Self {
        self.stash_capacity = capacity;
        self
    }

    /// The actor's name, unique among its siblings. Unnamed actors are shown
    /// as `$<id>`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The dispatcher to run on (default: `"default"`; `"pinned"` gives the
    /// actor a thread of its own).
    pub fn dispatcher(mut self, dispatcher: impl Into<String>) -> Self {
        self.dispatcher = Some(dispatcher.into());
        self
    }

    /// The actor's mailbox: unbounded (the default) or bounded with an
    /// overflow policy (see [`MailboxConfig`]).
    pub fn mailbox(mut self, mailbox: MailboxConfig) -> Self {
        self.mailbox = mailbox;
        self
    }

    /// The strategy applied when this actor fails (default: restart).
    pub fn supervisor(mut self, strategy: SupervisorStrategy) -> Self {
        self.strategy = Some(Arc::new(strategy));
        self
    }
}

impl<A> Clone for Props<A> {
    fn clone(&self) -> Self {
        Props {
            factory: self.factory.clone(),
            name: self.name.clone(),
            dispatcher: self.dispatcher.clone(),
            strategy: self.strategy.clone(),
            mailbox: self.mailbox,
            stash_capacity: self.stash_capacity,
        }
    }
}

impl<A> fmt::Debug for Props<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Props")
            .field("actor", &std::any::type_name::<A>())
            .field("name", &self.name)
            .field("dispatcher", &self.dispatcher)
            .field("strategy", &self.strategy)
            .field("mailbox", &self.mailbox)
            .finish()
    }
}
