//! The text of /proc/net's socket tables (tcp, tcp6, udp, udp6, unix), as
//! pure functions of plain rows, in Linux's exact layouts
//! (net/ipv4/tcp_ipv4.c, udp.c, net/ipv6/, net/unix/af_unix.c). Kernel
//! addresses (`%pK`) show as zeros, as Linux shows them to a reader
//! without CAP_SYSLOG under kptr_restrict.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

/// One TCP or UDP socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct InetRow {
    pub local: SocketAddr,
    /// The peer, or None (shown as the unspecified address, port 0).
    pub remote: Option<SocketAddr>,
    /// Linux's TCP state number (TCP_ESTABLISHED = 1 … TCP_LISTEN = 10).
    pub state: u8,
    pub uid: u32,
    pub ino: u64,
}

/// `addr` as /proc/net/tcp prints it: the 32-bit words of the address in
/// host byte order (little-endian here), in hex.
fn hex_ip(addr: IpAddr) -> String {
    let word = |b: &[u8]| format!("{:08X}", u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    match addr {
        IpAddr::V4(a) => word(&a.octets()),
        IpAddr::V6(a) => a.octets().chunks(4).map(word).collect(),
    }
}

fn hex_endpoint(addr: Option<SocketAddr>, v6: bool) -> String {
    let unspecified = if v6 { IpAddr::from([0u16; 8]) } else { IpAddr::from([0u8; 4]) };
    let (ip, port) = addr.map_or((unspecified, 0), |a| (a.ip(), a.port()));
    format!("{}:{port:04X}", hex_ip(ip))
}

/// Ends `line` in `out`: an IPv4 table pads it with spaces to `width - 1`
/// characters (Linux's `seq_pad`), an IPv6 one does not.
fn push_line(out: &mut String, line: &str, v6: bool, width: usize) {
    if v6 {
        let _ = writeln!(out, "{line}");
    } else {
        let _ = writeln!(out, "{line:<w$}", w = width - 1);
    }
}

/// /proc/net/tcp (`v6` false) or /proc/net/tcp6.
pub(super) fn format_tcp(rows: &[InetRow], v6: bool) -> String {
    let header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";
    let header6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";
    let mut out = String::new();
    push_line(&mut out, if v6 { header6 } else { header }, v6, 150);
    for (i, r) in rows.iter().enumerate() {
        // Retransmission timeout, delayed-ACK timeout (clock ticks), quick
        // ACK mode, congestion window and slow-start threshold: Linux's
        // initial values (a connection in slow start shows -1).
        let (refs, tail) = if r.state == 10 { (1, "100 0 0 10 0") } else { (2, "20 4 0 10 -1") };
        let line = format!(
            "{i:4}: {} {} {:02X} 00000000:00000000 00:00000000 00000000 {:5} {:8} {} {refs} 0000000000000000 {tail}",
            hex_endpoint(Some(r.local), v6),
            hex_endpoint(r.remote, v6),
            r.state,
            r.uid,
            0,
            r.ino,
        );
        push_line(&mut out, &line, v6, 150);
    }
    out
}

/// /proc/net/udp (`v6` false) or /proc/net/udp6.
pub(super) fn format_udp(rows: &[InetRow], v6: bool) -> String {
    let header = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops";
    let header6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops";
    let mut out = String::new();
    push_line(&mut out, if v6 { header6 } else { header }, v6, 128);
    for (i, r) in rows.iter().enumerate() {
        let line = format!(
            "{i:5}: {} {} {:02X} 00000000:00000000 00:00000000 00000000 {:5} {:8} {} 2 0000000000000000 0",
            hex_endpoint(Some(r.local), v6),
            hex_endpoint(r.remote, v6),
            r.state,
            r.uid,
            0,
            r.ino,
        );
        push_line(&mut out, &line, v6, 128);
    }
    out
}

/// One Unix socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct UnixRow {
    /// SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET.
    pub ty: i32,
    pub listening: bool,
    pub connected: bool,
    pub ino: u64,
    /// The bound name as getsockname's `sun_path` (a leading NUL for an
    /// abstract name, a trailing one for a path), if any.
    pub name: Option<Vec<u8>>,
}

/// `__SO_ACCEPTCON`: the flag of a listening socket.
const SO_ACCEPTCON: u32 = 1 << 16;
/// SS_UNCONNECTED, SS_CONNECTED.
const SS_UNCONNECTED: u8 = 1;
const SS_CONNECTED: u8 = 3;

/// /proc/net/unix. An abstract name shows with `@` for its leading NUL
/// (and for any NUL in it), a path as it was bound.
pub(super) fn format_unix(rows: &[UnixRow]) -> Vec<u8> {
    let mut out = b"Num       RefCount Protocol Flags    Type St Inode Path\n".to_vec();
    for r in rows {
        let flags = if r.listening { SO_ACCEPTCON } else { 0 };
        let state = if r.connected { SS_CONNECTED } else { SS_UNCONNECTED };
        out.extend_from_slice(
            format!("0000000000000000: 00000002 00000000 {flags:08X} {:04X} {state:02X} {:5}", r.ty, r.ino).as_bytes(),
        );
        if let Some(name) = &r.name {
            out.push(b' ');
            match name.split_first() {
                Some((0, rest)) => {
                    out.push(b'@');
                    out.extend(rest.iter().map(|&b| if b == 0 { b'@' } else { b }));
                }
                _ => out.extend_from_slice(name.strip_suffix(&[0]).unwrap_or(name)),
            }
        }
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(local: &str, remote: Option<&str>, state: u8) -> InetRow {
        InetRow { local: local.parse().unwrap(), remote: remote.map(|r| r.parse().unwrap()), state, uid: 0, ino: 1234 }
    }

    #[test]
    fn tcp_rows_in_linux_layout() {
        let text = format_tcp(&[row("127.0.0.1:8080", None, 10)], false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0].len(), 149);
        assert!(lines[0].starts_with("  sl  local_address rem_address   st tx_queue"));
        assert_eq!(
            lines[0].trim_end(),
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
        );
        assert_eq!(lines[1].len(), 149);
        assert_eq!(
            lines[1].trim_end(),
            "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1234 1 0000000000000000 100 0 0 10 0"
        );
    }

    #[test]
    fn tcp6_words_are_host_order() {
        let text = format_tcp(&[row("[::1]:80", Some("[::ffff:127.0.0.1]:1"), 1)], true);
        let line = text.lines().nth(1).unwrap();
        assert!(
            line.starts_with("   0: 00000000000000000000000001000000:0050 0000000000000000FFFF00000100007F:0001 01 "),
            "{line}"
        );
    }

    #[test]
    fn udp_rows() {
        let text = format_udp(&[row("0.0.0.0:53", Some("10.0.0.2:1000"), 1)], false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!((lines[0].len(), lines[1].len()), (127, 127));
        assert_eq!(
            lines[1].trim_end(),
            "    0: 00000000:0035 0200000A:03E8 01 00000000:00000000 00:00000000 00000000     0        0 1234 2 0000000000000000 0"
        );
    }

    #[test]
    fn unix_rows_show_names_and_states() {
        let rows = [
            UnixRow { ty: 1, listening: true, connected: false, ino: 77, name: Some(b"/tmp/s\0".to_vec()) },
            UnixRow { ty: 2, listening: false, connected: true, ino: 78, name: Some(b"\0ab\0c".to_vec()) },
            UnixRow { ty: 5, listening: false, connected: false, ino: 123456, name: None },
        ];
        assert_eq!(
            String::from_utf8(format_unix(&rows)).unwrap(),
            "Num       RefCount Protocol Flags    Type St Inode Path\n\
             0000000000000000: 00000002 00000000 00010000 0001 01    77 /tmp/s\n\
             0000000000000000: 00000002 00000000 00000000 0002 03    78 @ab@c\n\
             0000000000000000: 00000002 00000000 00000000 0005 01 123456\n"
        );
    }
}
