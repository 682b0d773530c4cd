//! ethtool's generic netlink through the `ethtool` crate (async, on tokio): a current-thread
//! runtime for the duration of one query.

use super::QUERY_TIMEOUT;
use super::config::{ChannelCounts, RingSizes};
use super::offloads::FeatureState;
use super::pieces::{EthtoolPieces, LinkSettings, Reply};
use ethtool::{
    EthtoolAttr, EthtoolChannelAttr, EthtoolError, EthtoolFeatureAttr, EthtoolHandle, EthtoolLinkModeAttr,
    EthtoolLinkModeDuplex, EthtoolMessage, EthtoolRingAttr,
};
use futures_util::{Stream, StreamExt};
use netlink_packet_generic::GenlMessage;
use std::collections::BTreeMap;

/// Asks about each of `names`, in order. `Err` when netlink cannot be reached at all.
pub(super) fn query(names: &[String]) -> Result<Vec<EthtoolPieces>, String> {
    if tokio::runtime::Handle::try_current().is_ok() {
        // Starting a runtime inside a runtime panics, so ask from a thread of our own. A new
        // thread starts in its creator's network namespace (clone copies the thread's
        // nsproxy), so the answer is still about the caller's namespace.
        return std::thread::scope(|s| {
            let thread = std::thread::Builder::new()
                .name("linerate-ethtool".into())
                .spawn_scoped(s, || query_here(names))
                .map_err(|e| format!("starting a thread: {e}"))?;
            thread
                .join()
                .unwrap_or_else(|_| Err("the netlink thread panicked".into()))
        });
    }
    query_here(names)
}

fn query_here(names: &[String]) -> Result<Vec<EthtoolPieces>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting a tokio runtime: {e}"))?;
    runtime.block_on(async {
        let (connection, mut handle, _) = ethtool::new_connection().map_err(|e| format!("netlink socket: {e}"))?;
        let connection = tokio::spawn(connection);
        let mut all = Vec::with_capacity(names.len());
        for name in names {
            all.push(query_one(&mut handle, name).await);
        }
        connection.abort();
        Ok(all)
    })
}

async fn query_one(handle: &mut EthtoolHandle, name: &str) -> EthtoolPieces {
    let link = collect(handle.link_mode().get(Some(name)).execute()).await;
    let features = collect(handle.feature().get(Some(name)).execute()).await;
    let rings = collect(handle.ring().get(Some(name)).execute()).await;
    let channels = collect(handle.channel().get(Some(name)).execute()).await;
    EthtoolPieces {
        link: map(link, link_settings),
        features: map(features, feature_states),
        rings: map(rings, ring_sizes),
        channels: map(channels, channel_counts),
    }
}

fn map<T>(reply: Reply<Vec<EthtoolAttr>>, f: fn(Vec<EthtoolAttr>) -> T) -> Reply<T> {
    match reply {
        Reply::Got(attrs) => Reply::Got(f(attrs)),
        Reply::Unsupported => Reply::Unsupported,
        Reply::Failed(e) => Reply::Failed(e),
    }
}

/// Runs one request and gathers the attributes of its replies.
async fn collect<S>(request: impl Future<Output = Result<S, EthtoolError>>) -> Reply<Vec<EthtoolAttr>>
where
    S: Stream<Item = Result<GenlMessage<EthtoolMessage>, EthtoolError>>,
{
    let run = async {
        let replies = request.await?;
        let mut replies = std::pin::pin!(replies);
        let mut attrs = Vec::new();
        while let Some(reply) = replies.next().await {
            attrs.extend(reply?.payload.nlas);
        }
        Ok::<_, EthtoolError>(attrs)
    };
    match tokio::time::timeout(QUERY_TIMEOUT, run).await {
        Ok(Ok(attrs)) => Reply::Got(attrs),
        Ok(Err(EthtoolError::NetlinkError(e))) => match e.code.map(|c| -c.get()) {
            Some(libc::EOPNOTSUPP) => Reply::Unsupported,
            Some(errno) => Reply::Failed(std::io::Error::from_raw_os_error(errno).to_string()),
            None => Reply::Failed("an empty netlink error".into()),
        },
        Ok(Err(e)) => Reply::Failed(e.to_string()),
        Err(_) => Reply::Failed(format!("no answer within {} s", QUERY_TIMEOUT.as_secs())),
    }
}

fn link_settings(attrs: Vec<EthtoolAttr>) -> LinkSettings {
    let mut l = LinkSettings::default();
    for attr in attrs {
        match attr {
            // SPEED_UNKNOWN is u32::MAX (include/uapi/linux/ethtool.h).
            EthtoolAttr::LinkMode(EthtoolLinkModeAttr::Speed(s)) if s != 0 && s != u32::MAX => {
                l.speed_mbit_per_second = Some(s);
            }
            EthtoolAttr::LinkMode(EthtoolLinkModeAttr::Duplex(d)) => {
                l.duplex = match d {
                    EthtoolLinkModeDuplex::Full => Some("full".into()),
                    EthtoolLinkModeDuplex::Half => Some("half".into()),
                    _ => None,
                };
            }
            EthtoolAttr::LinkMode(EthtoolLinkModeAttr::Autoneg(a)) => l.autoneg = Some(a),
            _ => {}
        }
    }
    l
}

/// Features by kernel name. The HW bitset lists every feature the kernel knows, its value
/// telling whether the driver lets it change; ACTIVE lists the features that are on.
fn feature_states(attrs: Vec<EthtoolAttr>) -> BTreeMap<String, FeatureState> {
    let mut states: BTreeMap<String, FeatureState> = BTreeMap::new();
    for attr in attrs {
        match attr {
            EthtoolAttr::Feature(EthtoolFeatureAttr::Hw(bits)) => {
                for bit in bits {
                    states.entry(bit.name).or_default().changeable = bit.value;
                }
            }
            EthtoolAttr::Feature(EthtoolFeatureAttr::Active(bits)) => {
                for bit in bits.into_iter().filter(|b| b.value) {
                    states.entry(bit.name).or_default().active = true;
                }
            }
            _ => {}
        }
    }
    states
}

fn ring_sizes(attrs: Vec<EthtoolAttr>) -> RingSizes {
    let mut r = RingSizes::default();
    for attr in attrs {
        match attr {
            EthtoolAttr::Ring(EthtoolRingAttr::Rx(v)) => r.rx = Some(v),
            EthtoolAttr::Ring(EthtoolRingAttr::RxMax(v)) => r.rx_max = Some(v),
            EthtoolAttr::Ring(EthtoolRingAttr::Tx(v)) => r.tx = Some(v),
            EthtoolAttr::Ring(EthtoolRingAttr::TxMax(v)) => r.tx_max = Some(v),
            _ => {}
        }
    }
    r
}

fn channel_counts(attrs: Vec<EthtoolAttr>) -> ChannelCounts {
    let mut c = ChannelCounts::default();
    for attr in attrs {
        match attr {
            EthtoolAttr::Channel(EthtoolChannelAttr::RxCount(v)) => c.rx = Some(v),
            EthtoolAttr::Channel(EthtoolChannelAttr::TxCount(v)) => c.tx = Some(v),
            EthtoolAttr::Channel(EthtoolChannelAttr::CombinedCount(v)) => c.combined = Some(v),
            EthtoolAttr::Channel(EthtoolChannelAttr::RxMax(v)) => c.rx_max = Some(v),
            EthtoolAttr::Channel(EthtoolChannelAttr::TxMax(v)) => c.tx_max = Some(v),
            EthtoolAttr::Channel(EthtoolChannelAttr::CombinedMax(v)) => c.combined_max = Some(v),
            _ => {}
        }
    }
    c
}
