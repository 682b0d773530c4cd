//! Where and how worker threads run: pinned to CPUs (sched_setaffinity(2)) and their scheduling
//! policy (sched_setscheduler(2)).

use super::EngineError;
use crate::spec::Sched;
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

/// Gives the calling thread the policy `sched` (SCHED_BATCH needs no privilege).
pub(crate) fn schedule_current_thread(sched: Sched) -> std::io::Result<()> {
    let policy = match sched {
        Sched::Normal => libc::SCHED_OTHER,
        Sched::Batch => libc::SCHED_BATCH,
    };
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; the parameter is ours and only read.
    match unsafe { libc::sched_setscheduler(0, policy, &param) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
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

    #[test]
    fn a_thread_takes_the_batch_policy_and_back() {
        // SAFETY: sched_getscheduler takes no pointer; pid 0 is the calling thread.
        let policy = || unsafe { libc::sched_getscheduler(0) };
        std::thread::spawn(move || {
            schedule_current_thread(Sched::Batch).expect("batch");
            assert_eq!(policy(), libc::SCHED_BATCH);
            schedule_current_thread(Sched::Normal).expect("normal");
            assert_eq!(policy(), libc::SCHED_OTHER);
        })
        .join()
        .expect("thread");
    }
}
