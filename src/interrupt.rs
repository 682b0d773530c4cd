//! The process's Ctrl-C flag: every test command, repeat and campaign reads the one flag.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The process's Ctrl-C flag, registered once (sweeps run many tests): the first Ctrl-C (or
/// SIGTERM) stops the run and reports what was measured; a second one while stopping exits now.
pub fn interrupt_flag() -> anyhow::Result<Arc<AtomicBool>> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    if let Some(f) = FLAG.get() {
        return Ok(Arc::clone(f));
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register_conditional_shutdown(signal_hook::consts::SIGINT, 130, Arc::clone(&interrupt))?;
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupt))?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&interrupt))?;
    Ok(Arc::clone(FLAG.get_or_init(|| interrupt)))
}
