//! Pinning worker threads to CPUs (sched_setaffinity(2)).

use super::EngineError;
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

/// The CPUs this process may run on now.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    let Ok(set) = sched_getaffinity(Pid::from_raw(0)) else {
        return Vec::new();
    };
    (0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect()
}

/// Checks that every CPU in `cpus` is one this process may use, before any thread starts.
pub fn check_cpus(cpus: &[usize]) -> Result<(), EngineError> {
    let allowed = allowed_cpus();
    for &cpu in cpus {
        if !allowed.contains(&cpu) {
            let online = allowed.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
            return Err(EngineError::NoSuchCpu { cpu, online });
        }
    }
    Ok(())
}

/// Pins the calling thread to one CPU.
pub(crate) fn pin_current_thread(cpu: usize) -> Result<(), EngineError> {
    let mut set = CpuSet::new();
    set.set(cpu).map_err(|e| EngineError::Pin { cpu, source: e.into() })?;
    sched_setaffinity(Pid::from_raw(0), &set).map_err(|e| EngineError::Pin { cpu, source: e.into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_to_an_allowed_cpu_and_refuses_a_missing_one() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        std::thread::spawn(move || pin_current_thread(allowed[0]).expect("pin"))
            .join()
            .expect("thread");
        assert!(matches!(
            check_cpus(&[4000]),
            Err(EngineError::NoSuchCpu { cpu: 4000, .. })
        ));
    }
}
