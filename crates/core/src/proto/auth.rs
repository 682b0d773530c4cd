//! Challenge-response on a shared secret (HMAC-SHA256): the agent sends a random nonce, the
//! client answers with its own nonce and a MAC over both, and the agent answers with a MAC the
//! other way round, so each end proves it knows the secret without sending it.
//!
//! Before all that, in its first flight, a client that holds the secret proves it
//! in one message, in the spirit of WireGuard's mac1: after its preamble, its clock, a fresh
//! nonce, and `mac1 = HMAC-SHA256(K, "linerate mac1" | preamble | time | nonce)` where
//! `K = HMAC-SHA256(secret, "linerate v4 mac1 key")`. The agent checks it from the bytes
//! already in at accept, before it spends a slot on the connection (`check_first_flight`):
//! the MAC, then the time within [`MAC1_WINDOW`] of its own clock, then the nonce against the
//! ones it has seen in that window (`ReplayCache`). A proof buys a reserved opening slot,
//! nothing more: the challenge-response still follows, and proves the agent to the client.

use super::frame::{self, FIRST_FLIGHT_LEN, PREAMBLE_LEN};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::collections::BTreeSet;
use std::time::Duration;

pub(crate) const NONCE_LEN: usize = 32;
const CLIENT_LABEL: &[u8] = b"linerate v1 client";
const AGENT_LABEL: &[u8] = b"linerate v1 agent";

/// Bytes of a first flight's nonce.
pub(crate) const MAC1_NONCE_LEN: usize = 16;
/// How far a first flight's time may be from the agent's clock, either way: older is stale
/// (a replay of a flight the cache has forgotten would be), newer is from a clock too far ahead.
pub const MAC1_WINDOW: Duration = Duration::from_secs(30);
/// The most first-flight nonces an agent remembers: those of valid proofs whose time is within
/// the window (a proof stays replayable only that long). Past it a proof is not taken, and its
/// connection is treated as one without (about 270 proofs a second sustained over the 60 s the
/// window spans; each entry 24 bytes, about 0.6 MiB in all with the tree's overhead).
pub const REPLAY_CACHE_ENTRIES: usize = 16_384;
const MAC1_KEY_LABEL: &[u8] = b"linerate v4 mac1 key";
const MAC1_LABEL: &[u8] = b"linerate mac1";

/// A shared secret's bytes, read once from `--secret-file` or `LINERATE_SECRET`: they go to
/// the HMACs here (through [`Secret::as_bytes`] or `Deref<Target = [u8]>`) and nowhere else.
/// `Debug` prints only how many there are, so an options struct printed with `{:?}` shows no
/// byte of it, and the bytes are zeroed when the value is dropped (best effort: the
/// environment and the file's page cache still hold their copies).
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl Secret {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl From<Vec<u8>> for Secret {
    fn from(bytes: Vec<u8>) -> Secret {
        Secret(bytes)
    }
}

impl From<&[u8]> for Secret {
    fn from(bytes: &[u8]) -> Secret {
        Secret(bytes.to_vec())
    }
}

impl std::ops::Deref for Secret {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.0);
    }
}

/// A fresh random nonce.
/// Bytes of a fresh fleet secret (`linerate secret new`): 256 bits.
pub const SECRET_BYTES: usize = 32;

/// A fresh shared secret as the agents and clients read it: [`SECRET_BYTES`] random bytes
/// (the OS's generator, like every nonce here) as 64 hex digits.
pub fn fresh_secret() -> String {
    let mut s = [0u8; SECRET_BYTES];
    rand::fill(&mut s);
    crate::codec::to_hex(&s)
}

pub fn nonce() -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    rand::fill(&mut n);
    n
}

fn mac(secret: &[u8], label: &[u8], first: &[u8], second: &[u8]) -> Hmac<Sha256> {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes keys of any length");
    m.update(label);
    m.update(first);
    m.update(second);
    m
}

/// The client's proof: MAC(secret, label | agent nonce | client nonce).
pub(crate) fn client_proof(secret: &[u8], agent_nonce: &[u8], client_nonce: &[u8]) -> Vec<u8> {
    mac(secret, CLIENT_LABEL, agent_nonce, client_nonce)
        .finalize()
        .into_bytes()
        .to_vec()
}

/// The agent's proof: MAC(secret, label | client nonce | agent nonce).
pub(crate) fn agent_proof(secret: &[u8], agent_nonce: &[u8], client_nonce: &[u8]) -> Vec<u8> {
    mac(secret, AGENT_LABEL, client_nonce, agent_nonce)
        .finalize()
        .into_bytes()
        .to_vec()
}

/// The two proofs of the challenge-response, for a test's hand-made peer (a fake agent that
/// speaks the protocol to a controller); not an API.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing {
    /// [`super::client_proof`].
    pub fn client_proof(secret: &[u8], agent_nonce: &[u8], client_nonce: &[u8]) -> Vec<u8> {
        super::client_proof(secret, agent_nonce, client_nonce)
    }

    /// [`super::agent_proof`].
    pub fn agent_proof(secret: &[u8], agent_nonce: &[u8], client_nonce: &[u8]) -> Vec<u8> {
        super::agent_proof(secret, agent_nonce, client_nonce)
    }
}

/// Checks a client's proof in constant time.
pub(crate) fn verify_client(secret: &[u8], agent_nonce: &[u8], client_nonce: &[u8], proof: &[u8]) -> bool {
    mac(secret, CLIENT_LABEL, agent_nonce, client_nonce)
        .verify_slice(proof)
        .is_ok()
}

/// Checks an agent's proof in constant time.
pub(crate) fn verify_agent(secret: &[u8], agent_nonce: &[u8], client_nonce: &[u8], proof: &[u8]) -> bool {
    mac(secret, AGENT_LABEL, client_nonce, agent_nonce)
        .verify_slice(proof)
        .is_ok()
}

fn mac1(secret: &[u8], signed: &[u8]) -> Hmac<Sha256> {
    let key = mac(secret, MAC1_KEY_LABEL, &[], &[]).finalize().into_bytes();
    mac(&key, MAC1_LABEL, signed, &[])
}

/// A client's first flight proving it holds `secret`: its preamble (this `version`, the proof
/// flag), its clock `unix_ms`, `nonce`, and mac1 over all of them.
pub(crate) fn first_flight(
    secret: &[u8],
    version: u16,
    unix_ms: u64,
    nonce: [u8; MAC1_NONCE_LEN],
) -> [u8; FIRST_FLIGHT_LEN] {
    let mut f = [0u8; FIRST_FLIGHT_LEN];
    f[..PREAMBLE_LEN].copy_from_slice(&frame::preamble_with(version, frame::FLAG_PROOF));
    f[PREAMBLE_LEN..PREAMBLE_LEN + 8].copy_from_slice(&unix_ms.to_be_bytes());
    f[PREAMBLE_LEN + 8..PREAMBLE_LEN + 24].copy_from_slice(&nonce);
    let tag = mac1(secret, &f[..PREAMBLE_LEN + 24]).finalize().into_bytes();
    f[PREAMBLE_LEN + 24..].copy_from_slice(&tag);
    f
}

/// What a first flight's proof is worth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Proof {
    /// The MAC is right, the time within the window, the nonce new: remembered as seen.
    Valid,
    /// The MAC is not made with this secret (or the bytes were changed): refused at once.
    WrongMac,
    /// Right MAC, but its time is outside the window around the agent's clock (or before what
    /// the cache forgot): treated as a connection without a proof (a skewed clock is no crime).
    Stale,
    /// Right MAC and time, but its nonce was seen within the window: a copy, refused at once.
    Replayed,
    /// Right MAC and time, but the cache is full: treated as a connection without a proof.
    CacheFull,
}

/// Checks the proof in a first flight (a preamble with the proof flag, then the proof) against
/// `secret` and the agent's clock `now_ms`: the MAC first (constant time; only a right one is
/// remembered, so a stranger cannot fill the cache), then the window, then the replay cache.
pub(crate) fn check_first_flight(
    secret: &[u8],
    flight: &[u8; FIRST_FLIGHT_LEN],
    now_ms: u64,
    cache: &mut ReplayCache,
) -> Proof {
    let (signed, tag) = flight.split_at(PREAMBLE_LEN + 24);
    if mac1(secret, signed).verify_slice(tag).is_err() {
        return Proof::WrongMac;
    }
    let time_ms = u64::from_be_bytes(signed[PREAMBLE_LEN..PREAMBLE_LEN + 8].try_into().expect("eight bytes"));
    let nonce: [u8; MAC1_NONCE_LEN] = signed[PREAMBLE_LEN + 8..].try_into().expect("sixteen bytes");
    cache.admit(time_ms, nonce, now_ms)
}

/// The nonces of valid first flights whose time is within the window, by time: a copy of one
/// is refused; older ones are forgotten, since their copies are stale anyway.
pub(crate) struct ReplayCache {
    seen: BTreeSet<(u64, [u8; MAC1_NONCE_LEN])>,
    capacity: usize,
    /// Times below this are stale whatever the clock says now: the cache forgot nonces up to
    /// here, so a clock stepped back must not make their copies fresh again.
    horizon_ms: u64,
}

impl Default for ReplayCache {
    fn default() -> Self {
        ReplayCache::with_capacity(REPLAY_CACHE_ENTRIES)
    }
}

impl ReplayCache {
    pub(crate) fn with_capacity(capacity: usize) -> ReplayCache {
        ReplayCache {
            seen: BTreeSet::new(),
            capacity,
            horizon_ms: 0,
        }
    }

    /// A right MAC's time and nonce at the agent's clock `now_ms`: its worth, remembered if valid.
    fn admit(&mut self, time_ms: u64, nonce: [u8; MAC1_NONCE_LEN], now_ms: u64) -> Proof {
        let window = MAC1_WINDOW.as_millis() as u64;
        self.horizon_ms = self.horizon_ms.max(now_ms.saturating_sub(window));
        if time_ms < self.horizon_ms || time_ms > now_ms.saturating_add(window) {
            return Proof::Stale;
        }
        // Forget what is past the horizon: a copy of it is stale now.
        self.seen = self.seen.split_off(&(self.horizon_ms, [0; MAC1_NONCE_LEN]));
        if self.seen.contains(&(time_ms, nonce)) {
            return Proof::Replayed;
        }
        if self.seen.len() >= self.capacity {
            return Proof::CacheFull;
        }
        self.seen.insert((time_ms, nonce));
        Proof::Valid
    }

    /// Nonces remembered now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.seen.len()
    }
}

/// How `text` (a `Debug` print) shows `secret`, if it does: as text, as a list of byte values
/// (`Vec<u8>`'s `Debug`), or as hex digits; None: it shows none of its bytes.
#[cfg(test)]
pub(crate) fn shows_secret(text: &str, secret: &[u8]) -> Option<&'static str> {
    let as_list = format!("{secret:?}");
    // Any eight bytes in a row, so a list cut short or a slice of it still counts.
    let run = &as_list[1..as_list.len() - 1]
        .split(", ")
        .take(8)
        .collect::<Vec<_>>()
        .join(", ");
    if text.contains(&*String::from_utf8_lossy(&secret[..8])) {
        Some("as text")
    } else if text.contains(run.as_str()) {
        Some("as a list of bytes")
    } else if text.contains(&crate::codec::to_hex(&secret[..8])) {
        Some("as hex")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_790_000_000_000;

    #[test]
    fn a_secret_prints_its_length_and_none_of_its_bytes() {
        let bytes = b"correct-horse-battery-staple-00".to_vec();
        let secret = Secret::from(bytes.clone());
        assert_eq!(format!("{secret:?}"), "Secret(31 bytes)");
        assert_eq!(
            shows_secret(&format!("{secret:#?} {:?}", Some(secret.clone())), &bytes),
            None
        );
        assert_eq!(secret.as_bytes(), &bytes[..]);
        assert_eq!(&*secret, &bytes[..], "it derefs to its bytes");
        // The check itself sees each way a Vec<u8> would show.
        assert_eq!(shows_secret(&format!("{bytes:?}"), &bytes), Some("as a list of bytes"));
        assert_eq!(shows_secret(&String::from_utf8_lossy(&bytes), &bytes), Some("as text"));
        assert_eq!(shows_secret(&crate::codec::to_hex(&bytes), &bytes), Some("as hex"));
    }

    fn fresh() -> [u8; MAC1_NONCE_LEN] {
        nonce()[..MAC1_NONCE_LEN].try_into().expect("sixteen of thirty-two")
    }

    #[test]
    fn issue_22_a_first_flight_proves_the_secret_once() {
        let mut cache = ReplayCache::default();
        let flight = first_flight(b"s3cret", 4, NOW, fresh());
        assert_eq!(
            check_first_flight(b"s3cret", &flight, NOW + 5, &mut cache),
            Proof::Valid
        );
        // The same bytes again, even a second later: a copy.
        assert_eq!(
            check_first_flight(b"s3cret", &flight, NOW + 1000, &mut cache),
            Proof::Replayed
        );
        // Another nonce is another flight.
        let other = first_flight(b"s3cret", 4, NOW, fresh());
        assert_eq!(check_first_flight(b"s3cret", &other, NOW + 5, &mut cache), Proof::Valid);
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn issue_22_a_first_flight_with_a_wrong_mac_is_refused_and_not_remembered() {
        let mut cache = ReplayCache::default();
        let flight = first_flight(b"wrong", 4, NOW, fresh());
        assert_eq!(check_first_flight(b"s3cret", &flight, NOW, &mut cache), Proof::WrongMac);
        // Any byte changed: the version, the time, the nonce, the tag.
        let good = first_flight(b"s3cret", 4, NOW, fresh());
        for i in [5, 6, 8, 20, 63] {
            let mut bad = good;
            bad[i] ^= 1;
            assert_eq!(
                check_first_flight(b"s3cret", &bad, NOW, &mut cache),
                Proof::WrongMac,
                "byte {i}"
            );
        }
        assert_eq!(cache.len(), 0, "a wrong MAC costs no entry");
    }

    #[test]
    fn issue_22_a_stale_or_future_first_flight_is_refused() {
        let mut cache = ReplayCache::default();
        let window = MAC1_WINDOW.as_millis() as u64;
        let old = first_flight(b"s3cret", 4, NOW - window - 1, fresh());
        assert_eq!(check_first_flight(b"s3cret", &old, NOW, &mut cache), Proof::Stale);
        let ahead = first_flight(b"s3cret", 4, NOW + window + 1, fresh());
        assert_eq!(check_first_flight(b"s3cret", &ahead, NOW, &mut cache), Proof::Stale);
        let edge = first_flight(b"s3cret", 4, NOW - window, fresh());
        assert_eq!(check_first_flight(b"s3cret", &edge, NOW, &mut cache), Proof::Valid);
        // Once forgotten, a copy is stale even if the agent's clock steps back.
        let kept = first_flight(b"s3cret", 4, NOW, fresh());
        assert_eq!(check_first_flight(b"s3cret", &kept, NOW, &mut cache), Proof::Valid);
        let later = NOW + window + 10;
        let fresh_then = first_flight(b"s3cret", 4, later, fresh());
        assert_eq!(
            check_first_flight(b"s3cret", &fresh_then, later, &mut cache),
            Proof::Valid
        );
        assert_eq!(cache.len(), 1, "the two older nonces are forgotten");
        assert_eq!(check_first_flight(b"s3cret", &kept, NOW, &mut cache), Proof::Stale);
    }

    #[test]
    fn issue_22_a_full_replay_cache_takes_no_more_proofs() {
        let mut cache = ReplayCache::with_capacity(2);
        for _ in 0..2 {
            let f = first_flight(b"s3cret", 4, NOW, fresh());
            assert_eq!(check_first_flight(b"s3cret", &f, NOW, &mut cache), Proof::Valid);
        }
        let f = first_flight(b"s3cret", 4, NOW, fresh());
        assert_eq!(check_first_flight(b"s3cret", &f, NOW, &mut cache), Proof::CacheFull);
        // Past the window the old ones are forgotten and room is made.
        let later = NOW + MAC1_WINDOW.as_millis() as u64 + 1;
        let f = first_flight(b"s3cret", 4, later, fresh());
        assert_eq!(check_first_flight(b"s3cret", &f, later, &mut cache), Proof::Valid);
    }

    #[test]
    fn right_secret_verifies_both_ways() {
        let (a, c) = (nonce(), nonce());
        let proof = client_proof(b"s3cret", &a, &c);
        assert!(verify_client(b"s3cret", &a, &c, &proof));
        let back = agent_proof(b"s3cret", &a, &c);
        assert!(verify_agent(b"s3cret", &a, &c, &back));
        assert_ne!(
            proof, back,
            "the two proofs differ, so one cannot be replayed as the other"
        );
    }

    #[test]
    fn wrong_secret_or_nonce_fails() {
        let (a, c) = (nonce(), nonce());
        let proof = client_proof(b"wrong", &a, &c);
        assert!(!verify_client(b"s3cret", &a, &c, &proof));
        let proof = client_proof(b"s3cret", &a, &c);
        assert!(!verify_client(b"s3cret", &nonce(), &c, &proof));
        assert!(!verify_client(b"s3cret", &a, &c, &proof[..8]));
    }

    #[test]
    fn nonces_differ() {
        assert_ne!(nonce(), nonce());
    }
}
