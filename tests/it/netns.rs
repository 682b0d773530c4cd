//! TCP across lab hosts: network namespaces joined by veth (the shaped links are in
//! tests/timed/netns.rs).

use crate::util::*;

#[test]
fn reverse_and_bidir_cross_the_lab() {
    let Some(lab) = Lab::up(2, &[]) else { return };
    let v = lab.tcp("h1", "h2", &["-n", "50", "--bidir", "-P", "2"]);
    assert_eq!(u(&v, "/summary/directions/forward/received/bytes"), 2 * 50 * 131_072);
    assert_eq!(u(&v, "/summary/directions/reverse/received/bytes"), 2 * 50 * 131_072);
}
