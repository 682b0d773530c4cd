//! Challenge-response on a shared secret (HMAC-SHA256): the agent sends a random nonce, the
//! client answers with its own nonce and a MAC over both, and the agent answers with a MAC the
//! other way round, so each end proves it knows the secret without sending it.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

pub(crate) const NONCE_LEN: usize = 32;
const CLIENT_LABEL: &[u8] = b"linerate v1 client";
const AGENT_LABEL: &[u8] = b"linerate v1 agent";

/// A fresh random nonce.
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

#[cfg(test)]
mod tests {
    use super::*;

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
