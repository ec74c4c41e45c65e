//! Malformed frames close the connection; the server never panics.

use std::os::fd::AsFd;

use nix::sys::socket::{setsockopt, sockopt};

use super::{spawn_server, RawPeer, TempDir};
use crate::protocol::{Encoder, Opcode, Reply, Request, Response, MAX_FRAME};
use crate::{transport, Error};

/// Sends `frame` to a fresh server after one good request and checks that
/// the server answers nothing more, closes, and reports a protocol error.
fn assert_closes_on(frame: &[u8]) {
    let dir = TempDir::new();
    let (sock, server) = spawn_server(dir.path(), false);
    let mut peer = RawPeer::new(sock);
    let (response, fd) = peer.call(&Request::Attach);
    assert!(matches!(response, Response::Ok(Reply::FidStat { .. })));
    assert!(fd.is_none());
    peer.send(frame);
    assert!(peer.recv(&Request::Attach).is_none(), "connection closed");
    match server.join().expect("the server thread must not panic") {
        Err(Error::Protocol(_)) => {}
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

fn frame(op: u16, payload: &[u8]) -> Vec<u8> {
    let mut frame = Encoder::new(op).finish().unwrap();
    frame.extend_from_slice(payload);
    let rest = u32::try_from(frame.len() - 4).unwrap();
    frame[..4].copy_from_slice(&rest.to_le_bytes());
    frame
}

#[test]
fn garbage_closes_the_connection() {
    assert_closes_on(b"\xde\xad\xbe\xef garbage");
    assert_closes_on(&[0xff; 3]);
}

#[test]
fn wrong_length_field_closes_the_connection() {
    let mut bad = Request::Stat { fid: 1 }.encode().unwrap();
    bad[0] = bad[0].wrapping_add(1);
    assert_closes_on(&bad);
}

#[test]
fn unknown_opcode_closes_the_connection() {
    assert_closes_on(&frame(0, &[]));
    assert_closes_on(&frame(4242, &1u64.to_le_bytes()));
}

#[test]
fn truncated_payload_closes_the_connection() {
    assert_closes_on(&frame(Opcode::Walk as u16, &1u64.to_le_bytes()[..5]));
    let mut walk = 1u64.to_le_bytes().to_vec();
    walk.extend_from_slice(&100u32.to_le_bytes());
    walk.extend_from_slice(b"short");
    assert_closes_on(&frame(Opcode::Walk as u16, &walk));
}

#[test]
fn trailing_bytes_close_the_connection() {
    let mut stat = 1u64.to_le_bytes().to_vec();
    stat.push(0);
    assert_closes_on(&frame(Opcode::Stat as u16, &stat));
}

#[test]
fn bad_field_closes_the_connection() {
    let mut setattr = 1u64.to_le_bytes().to_vec();
    setattr.push(7);
    assert_closes_on(&frame(Opcode::SetAttr as u16, &setattr));
}

#[test]
fn oversized_frame_closes_the_connection() {
    let dir = TempDir::new();
    let (sock, server) = spawn_server(dir.path(), false);
    setsockopt(&sock, sockopt::SndBufForce, &(4 * MAX_FRAME)).unwrap();
    let big = frame(Opcode::Walk as u16, &vec![0u8; MAX_FRAME]);
    transport::send(sock.as_fd(), &big, None).unwrap();
    let mut peer = RawPeer::new(sock);
    assert!(peer.recv(&Request::Attach).is_none());
    assert!(matches!(server.join().unwrap(), Err(Error::Protocol(_))));
}

#[test]
fn donated_fds_are_refused() {
    let dir = TempDir::new();
    let (sock, server) = spawn_server(dir.path(), false);
    let stray = std::fs::File::open("/dev/null").unwrap();
    let req = Request::Attach.encode().unwrap();
    transport::send(sock.as_fd(), &req, Some(stray.as_fd())).unwrap();
    let mut peer = RawPeer::new(sock);
    assert!(peer.recv(&Request::Attach).is_none());
    let result = server.join().unwrap();
    assert!(matches!(result, Err(Error::Protocol(_))), "{result:?}");
}

#[test]
fn clean_close_is_ok() {
    let dir = TempDir::new();
    let (sock, server) = spawn_server(dir.path(), false);
    drop(sock);
    server.join().unwrap().unwrap();
}
