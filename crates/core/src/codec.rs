//! Small encodings that both the engines and the protocol use, kept below both so neither
//! imports the other: hex text, HdrHistograms as hex of their V2 encoding (how histograms travel
//! in a result), and the length of the header that opens every data connection.
//!
//! In: bytes and histograms. Out: text, and back. The protocol ([`crate::proto`]) re-exports
//! what it uses; the summaries decode what the engines encoded.

use hdrhistogram::Histogram;

/// Bytes of the header a client writes first on every data connection (magic, cookie, stream
/// index; `crate::proto::frame` writes and parses it).
pub const DATA_HEADER_LEN: usize = 24;

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes from lower- or upper-case hex; `None` if the text is not hex.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A histogram as hex of HdrHistogram's V2 encoding (empty text if it cannot be encoded).
pub fn histogram_to_hex(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    let _ = hdrhistogram::serialization::Serializer::serialize(
        &mut hdrhistogram::serialization::V2Serializer::new(),
        h,
        &mut bytes,
    );
    to_hex(&bytes)
}

/// A histogram from [`histogram_to_hex`]'s text; `None` for text that is not one.
pub fn histogram_from_hex(hex: &str) -> Option<Histogram<u64>> {
    let bytes = from_hex(hex)?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(to_hex(&bytes), "0001abff");
        assert_eq!(from_hex("0001ABff").as_deref(), Some(&bytes[..]));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
    }

    #[test]
    fn histograms_round_trip_as_hex() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds");
        for v in [1, 500, 1_000_000, 59_000_000_000] {
            h.record(v).expect("in range");
        }
        let back = histogram_from_hex(&histogram_to_hex(&h)).expect("decodes");
        assert_eq!(back.len(), 4);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert!(histogram_from_hex("zz").is_none());
    }
}
