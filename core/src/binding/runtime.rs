//! The Tokio runtime a language binding runs the core on, beside the host language's event loop
//! (see ARCHITECTURE.md, "The bindings' threads"). Both bindings build it here, so that what the
//! measurements chose holds for both:
//!
//! - **One worker thread.** Every turn is a relay between the host's loop thread and the core;
//!   with a worker per CPU (Tokio's default), a task woken from the loop's thread also wakes an
//!   idle worker to look for work to steal, and the core's work hops between workers.
//! - **`SCHED_BATCH`** (Linux) for the runtime's threads: the same share of the CPU, but a wake-up
//!   never preempts the running thread. The loop's thread wakes the worker at every call it queues
//!   (a turn's `text`, `usage`, a client call); on a shared CPU the worker would preempt it at
//!   each, and a turn would bounce between the two threads once per call instead of once per
//!   turn. Where the policy cannot be set, or `ACP_FACADE_NO_SCHED_BATCH=1`
//!   ([`switches::sched_batch`]), the threads keep the policy they inherit.

use std::io;

use tokio::runtime::{Builder, Runtime};

use super::switches;

/// Builds the runtime a binding runs the core on (see the module doc); its threads are named
/// `acp-facade`.
///
/// # Errors
/// The runtime's I/O driver or threads could not be created.
pub fn binding_runtime() -> io::Result<Runtime> {
    runtime(switches::sched_batch())
}

/// The runtime of [`binding_runtime`], its threads in `SCHED_BATCH` when `batch`.
fn runtime(batch: bool) -> io::Result<Runtime> {
    let mut builder = Builder::new_multi_thread();
    builder.worker_threads(1).thread_name("acp-facade").enable_all();
    if batch {
        builder.on_thread_start(batch_policy);
    }
    builder.build()
}

/// Puts the calling thread in the `SCHED_BATCH` scheduling policy (Linux; elsewhere nothing).
#[allow(unsafe_code, reason = "sched_setscheduler has no safe wrapper in std or tokio")]
fn batch_policy() {
    #[cfg(target_os = "linux")]
    {
        // Priority 0, the only one of `SCHED_BATCH` (musl's `sched_param` has more fields, all 0).
        // SAFETY: `sched_param` is plain integers, for which all zeros is a valid value.
        let param: libc::sched_param = unsafe { std::mem::zeroed() };
        // SAFETY: `sched_setscheduler` on the calling thread (0) with a valid parameter.
        let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &raw const param) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name and scheduling policy of the runtime's worker thread.
    #[allow(unsafe_code, reason = "sched_getscheduler has no safe wrapper")]
    fn worker(runtime: &Runtime) -> (Option<String>, i32) {
        runtime.block_on(async {
            tokio::spawn(async {
                // SAFETY: `sched_getscheduler` of the calling thread.
                let policy = unsafe { libc::sched_getscheduler(0) };
                (std::thread::current().name().map(str::to_owned), policy)
            })
            .await
            .expect("task")
        })
    }

    #[test]
    fn the_worker_runs_in_sched_batch() {
        let (name, policy) = worker(&runtime(true).expect("runtime"));
        assert_eq!(name.as_deref(), Some("acp-facade"));
        #[cfg(target_os = "linux")]
        assert_eq!(policy, libc::SCHED_BATCH);
        let _ = policy;
    }

    #[test]
    fn switched_off_the_worker_keeps_the_inherited_policy() {
        #[allow(unsafe_code, reason = "sched_getscheduler has no safe wrapper")]
        // SAFETY: `sched_getscheduler` of the calling thread.
        let inherited = unsafe { libc::sched_getscheduler(0) };
        let (name, policy) = worker(&runtime(false).expect("runtime"));
        assert_eq!(name.as_deref(), Some("acp-facade"));
        assert_eq!(policy, inherited);
    }
}
