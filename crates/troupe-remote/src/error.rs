//! Errors of node operations.

use std::fmt;

/// Why a node operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteError {
    /// A node, cluster or actor name that is not 1-128 letters, digits,
    /// `-` or `_`.
    InvalidName(String),
    /// The first connection to NATS failed.
    Connect(String),
    /// Another actor already answers to this name in the cluster.
    NameTaken(String),
    /// No node publishes this name.
    NotFound(String),
    /// The published actor takes another message type.
    TagMismatch {
        /// The name looked up.
        name: String,
        /// The tag of the type asked for.
        ours: String,
        /// The tag of the published actor's type.
        theirs: String,
    },
    /// No answer within `lookup_timeout`.
    Timeout(String),
    /// NATS refused an operation.
    Nats(String),
    /// A value could not be written or read as bytes
    /// ([`Node::to_bytes`](crate::Node::to_bytes),
    /// [`Node::from_bytes`](crate::Node::from_bytes)).
    Encoding(String),
    /// The node has shut down.
    Stopped,
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteError::InvalidName(n) => write!(
                f,
                "invalid name {n:?}: use 1-128 letters, digits, '-' or '_'"
            ),
            RemoteError::Connect(e) => write!(f, "cannot connect to NATS: {e}"),
            RemoteError::NameTaken(n) => write!(f, "the name {n:?} is already published"),
            RemoteError::NotFound(n) => write!(f, "no node publishes {n:?}"),
            RemoteError::TagMismatch { name, ours, theirs } => {
                write!(f, "{name:?} takes messages tagged {theirs:?}, not {ours:?}")
            }
            RemoteError::Timeout(n) => write!(f, "no answer about {n:?} in time"),
            RemoteError::Nats(e) => write!(f, "NATS: {e}"),
            RemoteError::Encoding(e) => write!(f, "cannot encode or decode: {e}"),
            RemoteError::Stopped => f.write_str("the node has shut down"),
        }
    }
}

impl std::error::Error for RemoteError {}
