//! A `from` agent that lies: it speaks the control protocol by hand with the fleet's
//! secret (its handshake, `clock` and `relay`) so that a controller takes it for an agent, and
//! answers a `relay` as its test says: with a frame of any size, or by passing the request on
//! to a real agent and changing the document that comes back. Listeners that are no agent (a
//! silent one, one that drips bytes) for the relay's reach.
#![allow(dead_code)]

use linerate_core::proto::auth::testing::{agent_proof, client_proof};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What the fake does with a `relay` request: the controller's connection and the request.
pub type OnRelay = dyn Fn(&mut TcpStream, &Value) + Send + Sync;

/// A fake agent on 127.0.0.1, served by a thread per connection until dropped.
pub struct FakeAgent {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Drop for FakeAgent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn unix_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos() as i64
}

pub fn send(s: &mut TcpStream, v: &Value) -> std::io::Result<()> {
    s.write_all(&crate::attack::frame(v))
}

pub fn recv(s: &mut TcpStream) -> std::io::Result<Value> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body)?;
    serde_json::from_slice(&body).map_err(std::io::Error::other)
}

/// The agent's half of the handshake with `secret`: the client's first flight, the preamble,
/// a hello with a challenge, the client's proof (not checked) and this end's.
fn agent_handshake(s: &mut TcpStream, secret: &[u8]) -> std::io::Result<()> {
    let mut pre = [0u8; 8];
    s.read_exact(&mut pre)?;
    if pre[6] & 1 != 0 {
        let mut proof = [0u8; 56];
        s.read_exact(&mut proof)?;
    }
    s.write_all(&crate::attack::preamble())?;
    let nonce: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(37) ^ (unix_ns() as u8)).collect();
    send(
        s,
        &json!({"type": "hello", "software": "linerate fake", "challenge": hex(&nonce)}),
    )?;
    let auth = recv(s)?;
    let client_nonce = unhex(auth["client_nonce"].as_str().unwrap_or(""));
    let mac = agent_proof(secret, &nonce, &client_nonce);
    send(s, &json!({"type": "auth_ok", "mac": hex(&mac)}))
}

/// The client's half of the handshake with `secret`, to a real agent at `to`: a plain preamble,
/// the challenge answered.
pub fn client_handshake(to: SocketAddr, secret: &[u8]) -> std::io::Result<TcpStream> {
    let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    s.write_all(&crate::attack::preamble())?;
    let mut pre = [0u8; 8];
    s.read_exact(&mut pre)?;
    let hello = recv(&mut s)?;
    let challenge = unhex(hello["challenge"].as_str().unwrap_or(""));
    let mine = [7u8; 32];
    let mac = client_proof(secret, &challenge, &mine);
    send(
        &mut s,
        &json!({"type": "auth", "client_nonce": hex(&mine), "mac": hex(&mac)}),
    )?;
    let ok = recv(&mut s)?;
    if ok["type"] != "auth_ok" {
        return Err(std::io::Error::other(format!("not authenticated: {ok}")));
    }
    Ok(s)
}

fn serve(mut s: TcpStream, secret: &[u8], on_relay: &OnRelay) -> std::io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    agent_handshake(&mut s, secret)?;
    loop {
        let m = recv(&mut s)?;
        match m["type"].as_str() {
            Some("clock") => send(
                &mut s,
                &json!({"type": "clock_reading", "unix_ns": unix_ns(), "host_name": "fake"}),
            )?,
            Some("profiles") => return send(&mut s, &json!({"type": "profile_list", "names": []})),
            Some("relay") => {
                on_relay(&mut s, &m);
                return Ok(());
            }
            _ => return Ok(()),
        }
    }
}

impl FakeAgent {
    /// A fake holding `secret`, answering each `relay` with `on_relay`.
    pub fn start(secret: &str, on_relay: Arc<OnRelay>) -> FakeAgent {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("address");
        let stop = Arc::new(AtomicBool::new(false));
        let (stopping, secret) = (Arc::clone(&stop), secret.as_bytes().to_vec());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (secret, on_relay) = (secret.clone(), Arc::clone(&on_relay));
                std::thread::spawn(move || {
                    let _ = serve(conn, &secret, &*on_relay);
                });
            }
        });
        FakeAgent { addr, stop }
    }

    /// A fake that passes each `relay` on to the real agent at `real` (with `secret`) and sends
    /// back what came, changed by `tamper` (the `relay_result` message whole).
    pub fn proxy(secret: &str, real: SocketAddr, tamper: impl Fn(&mut Value) + Send + Sync + 'static) -> FakeAgent {
        let key = secret.as_bytes().to_vec();
        FakeAgent::start(
            secret,
            Arc::new(move |s: &mut TcpStream, relay: &Value| {
                let Ok(mut up) = client_handshake(real, &key) else {
                    return;
                };
                if send(&mut up, relay).is_err() {
                    return;
                }
                let Ok(mut answer) = recv(&mut up) else { return };
                if answer["type"] == "relay_result" {
                    tamper(&mut answer);
                }
                let _ = send(s, &answer);
                let _ = s.flush();
                // Let the controller read it before the connection closes.
                std::thread::sleep(Duration::from_millis(500));
            }),
        )
    }
}

/// What a listener that is no agent received on each connection (its first bytes).
pub type Heard = Arc<Mutex<Vec<Vec<u8>>>>;

/// A listener that accepts and says nothing; `drip`: it sends a byte a second instead. Each
/// connection's first bytes (up to 256, within 3 s) are kept.
pub fn not_an_agent(drip: bool) -> (SocketAddr, Heard, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    let heard: Heard = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let (h, st) = (Arc::clone(&heard), Arc::clone(&stop));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            if st.load(Ordering::Relaxed) {
                return;
            }
            let Ok(mut conn) = conn else { continue };
            let (h, st) = (Arc::clone(&h), Arc::clone(&st));
            std::thread::spawn(move || {
                let _ = conn.set_read_timeout(Some(Duration::from_millis(100)));
                let (mut got, mut kept) = (Vec::new(), false);
                let began = std::time::Instant::now();
                let mut buf = [0u8; 256];
                while began.elapsed() < Duration::from_secs(30) && !st.load(Ordering::Relaxed) {
                    match conn.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) if !kept => got.extend_from_slice(&buf[..n]),
                        _ => {}
                    }
                    if !kept && began.elapsed() > Duration::from_secs(3) {
                        h.lock().expect("lock").push(std::mem::take(&mut got));
                        kept = true;
                    }
                    if drip {
                        if conn.write_all(b"L").is_err() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(900));
                    }
                }
                if !kept {
                    h.lock().expect("lock").push(got);
                }
            });
        }
    });
    (addr, heard, stop)
}

/// A port on 127.0.0.1 that nothing listens on (bound, then closed).
pub fn closed_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("address")
}
