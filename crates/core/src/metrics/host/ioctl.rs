//! SIOCETHTOOL and SIOCGIFMTU ioctls on an AF_INET datagram socket, which act on the socket's
//! network namespace. ethtool's netlink has no message for driver information.

use std::io;
use std::os::fd::AsRawFd;

// include/uapi/linux/ethtool.h
const ETHTOOL_GDRVINFO: u32 = 0x03;
const ETHTOOL_GSG: u32 = 0x18;

/// struct ethtool_drvinfo.
#[repr(C)]
struct EthtoolDrvinfo {
    cmd: u32,
    driver: [u8; 32],
    version: [u8; 32],
    fw_version: [u8; 32],
    bus_info: [u8; 32],
    erom_version: [u8; 32],
    reserved2: [u8; 12],
    n_priv_flags: u32,
    n_stats: u32,
    testinfo_len: u32,
    eedump_len: u32,
    regdump_len: u32,
}

/// struct ethtool_value.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

#[derive(Debug, Default)]
pub(super) struct Drvinfo {
    pub driver: Option<String>,
    pub version: Option<String>,
    pub firmware_version: Option<String>,
    pub bus_address: Option<String>,
}

fn text(field: &[u8]) -> Option<String> {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    let s = String::from_utf8_lossy(&field[..end]).trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// An ifreq naming `name`. Callers check the name is shorter than IFNAMSIZ.
fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    if name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "interface name too long"));
    }
    // SAFETY: ifreq is plain old data (a name array and a union of integers and pointers),
    // for which all-zero bytes are a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

fn socket() -> io::Result<socket2::Socket> {
    socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)
}

/// SIOCETHTOOL with `data` (a struct starting with its u32 command).
fn ethtool<T>(name: &str, data: &mut T) -> io::Result<()> {
    let mut req = ifreq(name)?;
    req.ifr_ifru.ifru_data = (data as *mut T).cast();
    let socket = socket()?;
    // SAFETY: `req` names the interface and points to `data`, a live, writable repr(C)
    // struct of the layout the command in its first field expects; both outlive the call.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCETHTOOL as _, &mut req) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

pub(super) fn drvinfo(name: &str) -> io::Result<Drvinfo> {
    // SAFETY: EthtoolDrvinfo is integers and byte arrays: all-zero bytes are a valid value.
    let mut d: EthtoolDrvinfo = unsafe { std::mem::zeroed() };
    d.cmd = ETHTOOL_GDRVINFO;
    ethtool(name, &mut d)?;
    Ok(Drvinfo {
        driver: text(&d.driver),
        version: text(&d.version),
        firmware_version: text(&d.fw_version),
        bus_address: text(&d.bus_info),
    })
}

/// Whether scatter-gather (NETIF_F_SG) is on.
pub(super) fn scatter_gather(name: &str) -> io::Result<bool> {
    let mut v = EthtoolValue {
        cmd: ETHTOOL_GSG,
        data: 0,
    };
    ethtool(name, &mut v)?;
    Ok(v.data != 0)
}

pub(super) fn mtu(name: &str) -> io::Result<u32> {
    let mut req = ifreq(name)?;
    let socket = socket()?;
    // SAFETY: `req` is a valid ifreq naming the interface; SIOCGIFMTU writes ifru_mtu.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFMTU as _, &mut req) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel filled ifru_mtu, an int, for SIOCGIFMTU.
    let mtu = unsafe { req.ifr_ifru.ifru_mtu };
    u32::try_from(mtu).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "negative MTU"))
}
