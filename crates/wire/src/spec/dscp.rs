//! `--dscp`: the Differentiated Services code point a stream's packets carry (RFC 2474: the upper
//! six bits of IPv4's TOS byte and IPv6's traffic class). A class by name (`EF`, `CS5`, `AF41`,
//! `BK` for CS1 as flent's RRUL names it, `BE` for 0) or a number 0 to 63; a list gives the
//! streams their classes in turn. The type, its parsing and its words; the socket-option base
//! (core's `engine::sockopt`) sets it and reads it back.

use super::{SpecError, check};
use serde::{Deserialize, Serialize};

/// A DSCP value, 0 to 63 (written in documents as its number).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Dscp(pub u8);

/// The named classes: RFC 4594's class selectors and assured forwarding, EF (RFC 3246), VOICE-ADMIT
/// (RFC 5865) and LE (RFC 8622). CS1 is written BK, as flent's RRUL labels its background class.
const NAMES: [(&str, u8); 23] = [
    ("BE", 0),
    ("LE", 1),
    ("BK", 8),
    ("AF11", 10),
    ("AF12", 12),
    ("AF13", 14),
    ("CS2", 16),
    ("AF21", 18),
    ("AF22", 20),
    ("AF23", 22),
    ("CS3", 24),
    ("AF31", 26),
    ("AF32", 28),
    ("AF33", 30),
    ("CS4", 32),
    ("AF41", 34),
    ("AF42", 36),
    ("AF43", 38),
    ("CS5", 40),
    ("VA", 44),
    ("EF", 46),
    ("CS6", 48),
    ("CS7", 56),
];

/// Spellings read but never written.
const ALIASES: [(&str, u8); 3] = [("CS1", 8), ("DF", 0), ("CS0", 0)];

impl Dscp {
    /// Best effort (CS0): the default class.
    pub const BE: Dscp = Dscp(0);
    /// Background (CS1), flent's BK.
    pub const BK: Dscp = Dscp(8);
    /// CS5, flent's video class.
    pub const CS5: Dscp = Dscp(40);
    /// Expedited forwarding, flent's voice class.
    pub const EF: Dscp = Dscp(46);
    /// The four classes flent's RRUL loads and probes, in its order.
    pub const RRUL: [Dscp; 4] = [Dscp::BE, Dscp::BK, Dscp::CS5, Dscp::EF];

    /// The byte IP_TOS and IPV6_TCLASS take: the code point above the two ECN bits.
    pub fn tos(self) -> u8 {
        self.0 << 2
    }

    /// The code point in a TOS or traffic-class byte (its ECN bits dropped).
    pub fn of_tos(tos: u8) -> Dscp {
        Dscp(tos >> 2)
    }

    /// The class's name, or None for a code point without one.
    pub fn name(self) -> Option<&'static str> {
        NAMES.iter().find(|(_, v)| *v == self.0).map(|(n, _)| *n)
    }

    /// A comma-separated list of classes (`EF`, `BE,BK,CS5,EF`, `46`).
    pub fn parse_list(s: &str) -> Result<Vec<Dscp>, String> {
        s.split(',').map(|one| one.trim().parse()).collect()
    }

    pub fn validate(self) -> Result<(), SpecError> {
        check("DSCP (--dscp)", f64::from(self.0), 0.0, 63.0)
    }
}

impl std::fmt::Display for Dscp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "{}", self.0),
        }
    }
}

impl std::str::FromStr for Dscp {
    type Err = String;
    fn from_str(s: &str) -> Result<Dscp, String> {
        let upper = s.to_ascii_uppercase();
        if let Some((_, v)) = NAMES.iter().chain(&ALIASES).find(|(n, _)| *n == upper) {
            return Ok(Dscp(*v));
        }
        match s.parse::<u8>() {
            Ok(v) if v <= 63 => Ok(Dscp(v)),
            _ => Err(format!(
                "{s:?} is not a DSCP class: a number 0 to 63 or a name (BE, BK, CS2 to CS7, AF11 to AF43, EF, VA, LE)"
            )),
        }
    }
}

/// The class of stream `index` of `per_direction` streams each way under `classes` given in
/// turn: each direction's streams take the list from its start, so the upload and the download
/// streams of one number share a class. None without classes.
pub fn class_of(classes: &[Dscp], index: usize, per_direction: usize) -> Option<Dscp> {
    if classes.is_empty() {
        return None;
    }
    Some(classes[(index % per_direction.max(1)) % classes.len()])
}

/// Checks every class of a list.
pub fn validate_all(classes: &[Dscp]) -> Result<(), SpecError> {
    classes.iter().try_for_each(|d| d.validate())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_numbers_and_tos_bytes() {
        assert_eq!("ef".parse::<Dscp>(), Ok(Dscp::EF));
        assert_eq!(Dscp::EF.tos(), 0xb8, "EF's TOS byte, as netperf -Y EF sets it");
        assert_eq!(Dscp::BK.tos(), 0x20);
        assert_eq!(Dscp::CS5.tos(), 0xa0);
        assert_eq!(Dscp::of_tos(0xb9), Dscp::EF, "the ECN bits are not the class");
        assert_eq!("CS1".parse::<Dscp>(), Ok(Dscp::BK));
        assert_eq!("cs0".parse::<Dscp>(), Ok(Dscp::BE));
        assert_eq!("AF41".parse::<Dscp>(), Ok(Dscp(34)));
        assert_eq!("63".parse::<Dscp>(), Ok(Dscp(63)));
        assert_eq!(Dscp(63).to_string(), "63", "no name: its number");
        assert_eq!(Dscp(0).to_string(), "BE");
        assert_eq!(Dscp(8).to_string(), "BK");
        let e = "64".parse::<Dscp>().unwrap_err();
        assert!(e.contains("0 to 63"), "{e}");
        assert!("XX".parse::<Dscp>().is_err());
        assert_eq!(Dscp::parse_list("BE, BK,CS5,EF"), Ok(Dscp::RRUL.to_vec()));
        assert!(Dscp::parse_list("BE,,EF").is_err());
        assert!(Dscp(64).validate().is_err(), "a document's number past 63");
        for (n, v) in NAMES {
            assert_eq!(n.parse::<Dscp>(), Ok(Dscp(v)), "{n}");
        }
    }

    #[test]
    fn streams_take_the_classes_in_turn_each_direction_from_the_start() {
        let c = Dscp::RRUL;
        let of = |i| class_of(&c, i, 4);
        assert_eq!(
            (of(0), of(3), of(4), of(7)),
            (Some(Dscp::BE), Some(Dscp::EF), Some(Dscp::BE), Some(Dscp::EF))
        );
        assert_eq!(class_of(&[Dscp::EF], 5, 3), Some(Dscp::EF));
        assert_eq!(class_of(&c[..2], 3, 8), Some(Dscp::BK));
        assert_eq!(class_of(&[], 0, 1), None);
    }
}
