//! Background threads lowering their own CPU priority, so that a request
//! preempts them instead of waiting out their time slice.

/// Lowers the calling thread's nice value to `nice` (Linux gives each
/// thread its own); false where that is not possible or was refused, and
/// the thread then runs as it was.
pub fn lower(nice: i32) -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority takes no pointers; `who` 0 is the calling thread.
    let done = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } == 0;
    #[cfg(not(target_os = "linux"))]
    let done = {
        let _ = nice;
        false
    };
    if !done {
        tracing::debug!(nice, "a background thread keeps its CPU priority");
    }
    done
}
