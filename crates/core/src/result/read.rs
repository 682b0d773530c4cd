//! Reading a [`Summary`] back from its document. The kind's figures are flattened into
//! `summary` beside the common ones, and serde's derived reading of several flattened
//! `Option`s hands each the fields it knows and consumes them even when it then fails: a UDP
//! reading tried first took rr's `lost`, an rr reading took http's `errors`, so rr and http
//! documents read back without their kind's figures. Here each kind is read from its own copy
//! of the remaining fields, chosen by a field only that kind has. And a histogram's open last
//! bin, whose end is infinite and so written as null, reads back.

use super::{HttpSummary, RrSummary, Summary, UdpSummary};
use serde::de::Error;
use serde::{Deserialize, Deserializer};

impl<'de> Deserialize<'de> for Summary {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Summary, D::Error> {
        #[derive(Deserialize)]
        struct Common {
            sent: super::SideSummary,
            received: super::SideSummary,
            directions: Option<std::collections::BTreeMap<String, super::DirectionSummary>>,
            agents: Vec<super::AgentSummary>,
            streams: Vec<super::StreamSummary>,
            #[serde(default)]
            server: Option<super::SideSummary>,
            #[serde(flatten)]
            rest: serde_json::Map<String, serde_json::Value>,
        }
        let c = Common::deserialize(d)?;
        fn kind<T: for<'a> Deserialize<'a>, E: Error>(
            rest: &serde_json::Map<String, serde_json::Value>,
            marker: &str,
        ) -> Result<Option<T>, E> {
            if !rest.contains_key(marker) {
                return Ok(None);
            }
            serde_json::from_value(serde_json::Value::Object(rest.clone()))
                .map(Some)
                .map_err(|e| E::custom(format_args!("summary ({marker}): {e}")))
        }
        Ok(Summary {
            udp: kind::<UdpSummary, D::Error>(&c.rest, "datagrams_sent")?,
            rr: kind::<RrSummary, D::Error>(&c.rest, "transactions_per_second")?,
            http: kind::<HttpSummary, D::Error>(&c.rest, "responses_per_second")?,
            sent: c.sent,
            received: c.received,
            directions: c.directions,
            agents: c.agents,
            streams: c.streams,
            server: c.server,
        })
    }
}

/// A bin's end written as null (JSON has no infinity: serde_json writes it as null) read back
/// as the infinity it was.
pub(super) fn infinite_if_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Bin;

    #[test]
    fn an_open_bin_reads_back_as_infinite() {
        let open = Bin {
            from_us: 5.0,
            to_us: f64::INFINITY,
            count: 2,
        };
        let text = serde_json::to_string(&open).expect("serialises");
        assert_eq!(text, r#"{"from_us":5.0,"to_us":null,"count":2}"#);
        assert_eq!(serde_json::from_str::<Bin>(&text).expect("reads back"), open);
    }

    fn round_trip(s: Summary) -> Summary {
        serde_json::from_str(&serde_json::to_string(&s).expect("serialises")).expect("reads back")
    }

    #[test]
    fn each_kind_reads_back_with_its_figures() {
        let rr = Summary {
            rr: Some(RrSummary {
                transactions: 7,
                lost: 2,
                errors: 1,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(round_trip(rr.clone()), rr);
        let http = Summary {
            http: Some(HttpSummary {
                responses: 9,
                users: 4,
                ..Default::default()
            }),
            server: Some(Default::default()),
            ..Default::default()
        };
        assert_eq!(round_trip(http.clone()), http);
        let udp = Summary {
            udp: Some(UdpSummary {
                lost: 3,
                datagrams_sent: 10,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(round_trip(udp.clone()), udp);
        assert_eq!(round_trip(Summary::default()), Summary::default());
    }
}
