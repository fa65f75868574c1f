//! The async runtime that actors' futures run on (`Context::pipe_to_self`,
//! feature `tokio`): one the system was given, or a multi-thread tokio
//! runtime the system starts on first use and shuts down when it
//! terminates.

use std::sync::{Mutex, OnceLock};

use tokio::runtime::{Handle, Runtime};

/// Where actors' futures run.
pub(crate) struct AsyncRuntime {
    /// Set when given, or once the own runtime is started.
    handle: OnceLock<Handle>,
    /// Worker threads of a runtime started here.
    threads: usize,
    /// The runtime started here, kept to be shut down with the system.
    own: Mutex<Option<Runtime>>,
}

impl AsyncRuntime {
    pub(crate) fn new(given: Option<Handle>, threads: usize) -> Self {
        let handle = OnceLock::new();
        if let Some(given) = given {
            let _ = handle.set(given);
        }
        AsyncRuntime {
            handle,
            threads,
            own: Mutex::new(None),
        }
    }

    /// The runtime's handle, starting the system's own runtime on first use.
    pub(crate) fn handle(&self, system: &str) -> std::io::Result<Handle> {
        if let Some(handle) = self.handle.get() {
            return Ok(handle.clone());
        }
        let mut own = self.own.lock().unwrap_or_else(|e| e.into_inner());
        // Another thread may have started it while this one waited.
        if let Some(handle) = self.handle.get() {
            return Ok(handle.clone());
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(self.threads)
            .thread_name(format!("{system}-async"))
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        *own = Some(runtime);
        let _ = self.handle.set(handle.clone());
        Ok(handle)
    }

    /// Stops the runtime started here, if any, without waiting for its
    /// tasks (every actor has stopped and aborted its own already). Safe to
    /// call from a thread of that runtime or of another one.
    pub(crate) fn shutdown(&self) {
        if let Some(runtime) = self.own.lock().unwrap_or_else(|e| e.into_inner()).take() {
            runtime.shutdown_background();
        }
    }
}
