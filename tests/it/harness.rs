//! The shared harness's own checks (tests/harness/util.rs).

use crate::util::*;

#[test]
fn a_test_says_what_it_lacks() {
    let yes = |_: &str| true;
    let no = |_: &str| false;
    let ring = || true;
    let no_ring = || false;
    let all = Machine {
        root: true,
        on_path: &yes,
        io_uring: &ring,
    };
    let needs = [
        Need::Root { why: NAMESPACES },
        Need::Program {
            name: "nginx",
            package: "nginx-light",
        },
        Need::IoUring,
    ];
    assert_eq!(unmet(&needs, &all), None);
    assert_eq!(
        unmet(
            &[],
            &Machine {
                root: false,
                on_path: &no,
                io_uring: &no_ring
            }
        ),
        None
    );
    let user = Machine { root: false, ..all };
    assert!(unmet(&needs, &user).is_some_and(|r| r.contains("root")));
    let bare = Machine {
        root: true,
        on_path: &no,
        io_uring: &ring,
    };
    assert_eq!(
        unmet(&needs, &bare).as_deref(),
        Some("needs 'nginx' on PATH (Debian: apt-get install nginx-light)")
    );
    let old = Machine {
        root: true,
        on_path: &yes,
        io_uring: &no_ring,
    };
    assert!(unmet(&needs, &old).is_some_and(|r| r.contains("io_uring")));
    assert!(on_path("sh") && !on_path("linerate-no-such-program"));
    assert_eq!(port_of("[::1]:5201"), 5201);
}
