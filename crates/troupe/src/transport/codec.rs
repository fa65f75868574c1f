//! The [`Codec`] a transport installs for one encode or decode, and the
//! thread-local it lives in (not a stable API, hidden from the docs: its
//! one user is `troupe-remote`, and it changes with it).

use std::cell::RefCell;
use std::rc::Rc;

use super::refs::{ExportedRef, ImportedRef};
use super::reply::{ExportedReply, ImportedReply};

/// What a transport installs for one encode or decode. Each method has a
/// default that refuses, for a codec that only encodes or only decodes.
pub trait Codec {
    /// A reply handle is being sent: keep `reply` until the answer (or
    /// word that none will come) arrives, and return what goes on the wire
    /// in the handle's place.
    fn export_reply(
        &self,
        reply: ExportedReply,
    ) -> Result<Box<dyn erased_serde::Serialize>, String> {
        drop(reply);
        Err("this transport scope does not send reply handles".into())
    }

    /// A reply handle is being received: read what
    /// [`export_reply`](Codec::export_reply) wrote on the sending side and
    /// say where the answer goes.
    fn import_reply(
        &self,
        wire: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<ImportedReply, erased_serde::Error> {
        let _ = wire;
        Err(serde::de::Error::custom(
            "this transport scope does not receive reply handles",
        ))
    }

    /// An actor ref is being sent: return what goes on the wire in its
    /// place (see [`ExportedRef`]).
    fn export_ref(
        &self,
        actor: ExportedRef<'_>,
    ) -> Result<Box<dyn erased_serde::Serialize>, String> {
        let _ = actor;
        Err("this transport scope does not send actor refs".into())
    }

    /// An actor ref of message type `tag` is being received: read what
    /// [`export_ref`](Codec::export_ref) wrote and say what it reaches.
    fn import_ref(
        &self,
        wire: &mut dyn erased_serde::Deserializer<'_>,
        tag: &'static str,
    ) -> Result<ImportedRef, erased_serde::Error> {
        let _ = (wire, tag);
        Err(serde::de::Error::custom(
            "this transport scope does not receive actor refs",
        ))
    }
}

thread_local! {
    /// The codec of the encode or decode running on this thread. Serde
    /// calls the impls in `transport.rs` with no way to pass it, hence a thread-local.
    static CODEC: RefCell<Option<Rc<dyn Codec>>> = const { RefCell::new(None) };
}

/// Runs `f` (one encode or decode of a message) with `codec` installed for
/// the `ReplyTo` fields it meets; the previous codec, if any, is back
/// afterwards (also if `f` panics).
pub fn with_codec<T>(codec: Rc<dyn Codec>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Rc<dyn Codec>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CODEC.with(|c| *c.borrow_mut() = previous);
        }
    }
    let _restore = Restore(CODEC.with(|c| c.replace(Some(codec))));
    f()
}

/// The installed codec, cloned so that it is not borrowed while it runs
/// (it may encode or decode nested values itself).
pub(super) fn current() -> Option<Rc<dyn Codec>> {
    CODEC.with(|c| c.borrow().clone())
}
