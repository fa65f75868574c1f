//! The wheel's integration tests as one test binary, a module per concern:
//! [`wheel_properties`] (random operation sequences against a model),
//! [`wheel_firing`] (order, exactness and cancellation of firings) and
//! [`wheel_memory`] (the size budget of an entry). One binary links the
//! crate once instead of once per file.

mod wheel_firing;
mod wheel_memory;
mod wheel_properties;
