//! Why a control session ends early: the error kind and text the client is sent. Below every
//! other file of the agent (it imports none of them), so the profile runner, the toolkit and
//! the handshake can all name it.

use crate::proto::ErrorKind;
use crate::proto::conn::ProtoError;

/// Why a session ends early: the error kind and text the client is sent.
pub(super) type Refusal = (ErrorKind, String);

/// A failed control message as the refusal the client is sent (if it still listens).
pub(super) fn proto_refusal(e: ProtoError) -> Refusal {
    (ErrorKind::Protocol, e.to_string())
}
