//! The resolver: answers a guest query, forwarding only names the policy
//! allows, and remembers the addresses those names resolved to.
//!
//! A query goes through [`Resolver::begin`], which answers at once what
//! needs no upstream (malformed, refused, denied names); an allowed name
//! comes back as a [`Pending`] whose [`Pending::exchange`] blocks on the
//! caller's [`Transport`], on whichever thread the caller likes, and
//! [`Resolver::finish`] turns the result into the guest's reply.
//! [`Resolver::resolve`] does all three in turn.

use super::policy::{NamePolicy, Ports};
use super::rule::NameRule;
use super::table::AddressTable;
use super::wire::{self, GuestQuery, Invalid, Rejected};
use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr::Name;
use parking_lot::Mutex;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The longest wait or lifetime the resolver computes with: any longer
/// configured one is as good as forever, and an `Instant` this far ahead
/// does not overflow.
const FOREVER: Duration = Duration::from_secs(1 << 32);

/// The transport a DNS message travels over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Udp,
    /// Each message framed by its 16-bit length (RFC 1035 §4.2.2); the
    /// framing is the transport's.
    Tcp,
}

/// Carries one query to an upstream server and brings back its answer;
/// the sentry implements it with host sockets in the outer namespace.
pub trait Transport {
    /// Sends `query` (one DNS message) to `upstream` over `proto` and
    /// returns the one message that answers it, giving up at `deadline`.
    /// Over UDP, a datagram from another address than `upstream` is not
    /// the answer; the resolver checks the rest. An implementation bounds
    /// what it reads: [`super::MAX_UDP_ANSWER`] + 1 bytes over UDP, a
    /// length prefix's worth over TCP.
    fn exchange(
        &self,
        upstream: SocketAddr,
        proto: Proto,
        query: &[u8],
        deadline: Instant,
    ) -> Result<Vec<u8>, TransportError>;
}

/// Why a transport brought back no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    #[error("timed out")]
    TimedOut,
    #[error("{0}")]
    Io(std::io::ErrorKind),
}

impl From<std::io::Error> for TransportError {
    fn from(e: std::io::Error) -> TransportError {
        match e.kind() {
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => TransportError::TimedOut,
            kind => TransportError::Io(kind),
        }
    }
}

/// The resolver's limits.
#[derive(Clone, Debug)]
pub struct Config {
    /// How long one query may wait on the upstreams in all, shared evenly
    /// between them; under glibc's 5 s so the guest sees SERVFAIL rather
    /// than its own timeout.
    pub timeout: Duration,
    /// The longest TTL passed to the guest and kept in the address table.
    pub ttl_cap: Duration,
    /// The shortest time an address is kept: a program connects right
    /// after resolving, even when the TTL is 0.
    pub ttl_floor: Duration,
    /// How many address → name bindings the table keeps.
    pub table_capacity: usize,
    /// How many records of one answer reach the guest (and the table).
    pub max_records: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            timeout: Duration::from_secs(4),
            ttl_cap: Duration::from_secs(3600),
            ttl_floor: Duration::from_secs(30),
            table_capacity: 4096,
            max_records: 64,
        }
    }
}

/// What the resolver did with a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// An allowed name, answered by the upstream.
    Allowed,
    /// A name the policy does not allow: NXDOMAIN, the upstream never asked.
    Denied,
    /// A query the resolver does not serve (zone transfer, class other
    /// than IN, opcode other than QUERY).
    Refused,
    /// Not a DNS query: FORMERR, or no reply at all.
    Malformed,
    /// An allowed name whose upstream gave no valid answer: SERVFAIL.
    Failed,
}

impl Verdict {
    /// The verdict as the audit log spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allowed => "allowed",
            Verdict::Denied => "denied",
            Verdict::Refused => "refused",
            Verdict::Malformed => "malformed",
            Verdict::Failed => "failed",
        }
    }
}

/// One query, for the audit log's `net.dns` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryRecord {
    /// The name asked, lowercase without the trailing dot; empty when the
    /// query could not be read.
    pub name: String,
    /// The type asked (`A`, `AAAA`, `TYPE65280`…); empty when unread.
    pub qtype: String,
    pub verdict: Verdict,
    /// The reply's rcode (`NOERROR`, `NXDOMAIN`…); empty when none was sent.
    pub rcode: String,
    /// The answer records the guest got, as `TYPE DATA`.
    pub answers: Vec<String>,
    /// The upstream that answered, or the last one tried.
    pub upstream: Option<SocketAddr>,
    /// Why an upstream exchange failed.
    pub reason: Option<String>,
}

/// The resolver's reply to a query, and its record.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The message to send back to the guest, from the address and port it
    /// sent the query to; `None` to send nothing.
    pub message: Option<Vec<u8>>,
    pub record: QueryRecord,
}

/// What [`Resolver::begin`] leaves to do.
#[derive(Debug)]
pub enum Step {
    /// The reply is ready.
    Done(Reply),
    /// An allowed name: ask the upstream, then [`Resolver::finish`].
    Forward(Pending),
}

/// An allowed query waiting for its upstream exchange; it holds nothing of
/// the resolver, so it can move to another thread.
#[derive(Debug)]
pub struct Pending {
    guest: GuestQuery,
    id: u16,
    request: Vec<u8>,
    upstreams: Vec<SocketAddr>,
    start: Instant,
    timeout: Duration,
}

/// A [`Pending`] query with its upstream's answer or failure.
#[derive(Debug)]
pub struct Answered {
    pending: Pending,
    upstream: Option<SocketAddr>,
    answer: Result<Message, String>,
}

impl Pending {
    /// Asks the upstreams in turn, each until its share of the timeout is
    /// over, until one answers validly; an answer with the TC bit is asked
    /// again over TCP of the same upstream.
    pub fn exchange(self, transport: &dyn Transport) -> Answered {
        let mut upstream = None;
        let mut answer = Err(Failure::NoUpstream);
        let slice = self.timeout.min(FOREVER) / u32::try_from(self.upstreams.len().max(1)).unwrap_or(u32::MAX);
        let mut deadline = self.start;
        for &server in &self.upstreams {
            deadline = deadline.checked_add(slice).unwrap_or(deadline);
            upstream = Some(server);
            answer = self.ask(transport, server, Proto::Udp, deadline);
            if matches!(answer, Err(Failure::Invalid(Invalid::Truncated))) {
                answer = self.ask(transport, server, Proto::Tcp, deadline);
            }
            if answer.is_ok() {
                break;
            }
        }
        let answer = answer.map_err(|f| f.to_string());
        Answered { pending: self, upstream, answer }
    }

    fn ask(
        &self,
        transport: &dyn Transport,
        server: SocketAddr,
        proto: Proto,
        deadline: Instant,
    ) -> Result<Message, Failure> {
        let bytes = transport.exchange(server, proto, &self.request, deadline).map_err(Failure::Transport)?;
        wire::check_answer(&bytes, proto, self.id, &self.guest).map_err(Failure::Invalid)
    }
}

/// Why one upstream exchange failed.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("no DNS upstream")]
    NoUpstream,
    #[error("{0}")]
    Transport(TransportError),
    #[error("{0}")]
    Invalid(Invalid),
}

/// One sandbox's resolver.
pub struct Resolver {
    policy: NamePolicy,
    upstreams: Vec<SocketAddr>,
    config: Config,
    table: Mutex<AddressTable>,
    /// Upstream query IDs: a keyed hash (random keys from the host) of a
    /// counter, so an off-path spoofer cannot guess them.
    id_keys: RandomState,
    id_counter: AtomicU64,
}

impl Resolver {
    pub fn new(policy: NamePolicy, upstreams: Vec<SocketAddr>, config: Config) -> Resolver {
        let table = Mutex::new(AddressTable::new(config.table_capacity));
        Resolver { policy, upstreams, config, table, id_keys: RandomState::new(), id_counter: AtomicU64::new(0) }
    }

    pub fn policy(&self) -> &NamePolicy {
        &self.policy
    }

    /// Reads a query from the guest, sent over `proto`, and answers it
    /// unless it is for an allowed name.
    pub fn begin(&self, query: &[u8], proto: Proto, now: Instant) -> Step {
        let guest = match wire::read_query(query, proto) {
            Ok(guest) => guest,
            Err(Rejected::Drop) => {
                return Step::Done(Reply { message: None, record: record(None, Verdict::Malformed, "") })
            }
            Err(Rejected::Reply { message, rcode, question }) => {
                let verdict = if rcode == ResponseCode::Refused { Verdict::Refused } else { Verdict::Malformed };
                let rcode = if message.is_some() { wire::rcode_name(rcode) } else { String::new() };
                return Step::Done(Reply { message, record: record(question.as_ref(), verdict, &rcode) });
            }
        };
        let labels: Vec<&[u8]> = guest.name.iter().collect();
        if self.policy.ports_for_labels(&labels).is_none() {
            let message = wire::reply(&guest, ResponseCode::NXDomain, Vec::new(), Vec::new());
            let rcode = wire::rcode_name(ResponseCode::NXDomain);
            return Step::Done(Reply { message, record: record(Some(&guest.query), Verdict::Denied, &rcode) });
        }
        let id = self.next_id();
        let Some(request) = wire::upstream_query(&guest, id) else {
            return Step::Done(self.fail(&guest, None, "query could not be encoded".to_owned()));
        };
        Step::Forward(Pending {
            guest,
            id,
            request,
            upstreams: self.upstreams.clone(),
            start: now,
            timeout: self.config.timeout,
        })
    }

    /// The guest's reply for an exchanged query; the addresses of a valid
    /// answer are remembered from `now` for their TTL.
    pub fn finish(&self, answered: Answered, now: Instant) -> Reply {
        let Answered { pending, upstream, answer } = answered;
        let guest = pending.guest;
        let message = match answer {
            Ok(message) => message,
            Err(reason) => return self.fail(&guest, upstream, reason),
        };
        let upstream_rcode = message.metadata.response_code;
        let cap = u32::try_from(self.config.ttl_cap.as_secs()).unwrap_or(u32::MAX);
        let filtered = wire::filter(message, &guest, cap, self.config.max_records);
        if !filtered.addresses.is_empty() {
            let mut table = self.table.lock();
            for &(addr, ttl) in &filtered.addresses {
                let keep = Duration::from_secs(u64::from(ttl)).max(self.config.ttl_floor).min(FOREVER);
                let expires = now.checked_add(keep).unwrap_or(now);
                table.learn(addr, &guest.name, expires, now);
            }
        }
        let answers = filtered.answers.iter().map(wire::describe).collect();
        let verdict = if filtered.rcode == ResponseCode::ServFail { Verdict::Failed } else { Verdict::Allowed };
        let message = wire::reply(&guest, filtered.rcode, filtered.answers, filtered.authorities);
        let mut record = record(Some(&guest.query), verdict, &wire::rcode_name(filtered.rcode));
        record.answers = answers;
        record.upstream = upstream;
        if verdict == Verdict::Failed {
            record.reason = Some(format!("upstream answered {}", wire::rcode_name(upstream_rcode)));
        }
        Reply { message, record }
    }

    /// [`Resolver::begin`], [`Pending::exchange`] and
    /// [`Resolver::finish`] in turn, blocking on `transport`; `now` is the
    /// time of the query, `clock` is read again after the exchange.
    pub fn resolve(&self, query: &[u8], proto: Proto, transport: &dyn Transport, clock: &dyn Fn() -> Instant) -> Reply {
        match self.begin(query, proto, clock()) {
            Step::Done(reply) => reply,
            Step::Forward(pending) => {
                let answered = pending.exchange(transport);
                self.finish(answered, clock())
            }
        }
    }

    /// The most recently valid allowed name `addr` came from, and the ports
    /// its rules allow; `None` when no unexpired answer held `addr`.
    pub fn name_for(&self, addr: IpAddr, now: Instant) -> Option<(String, Ports)> {
        let names = self.table.lock().names(addr, now);
        names.iter().find_map(|name| self.ports(name).map(|p| (wire::presentation(name), p)))
    }

    /// An allowed name `addr` came from whose rules allow `port`, and the
    /// allow rule that does: the gateway's check for a connection no
    /// address rule allows.
    pub fn name_allowing(&self, addr: IpAddr, port: u16, now: Instant) -> Option<(String, NameRule)> {
        let names = self.table.lock().names(addr, now);
        names.iter().find_map(|name| {
            let rule = self.ports(name)?.rule_for(port)?.clone();
            Some((wire::presentation(name), rule))
        })
    }

    fn ports(&self, name: &Name) -> Option<Ports> {
        let labels: Vec<&[u8]> = name.iter().collect();
        self.policy.ports_for_labels(&labels)
    }

    fn fail(&self, guest: &GuestQuery, upstream: Option<SocketAddr>, reason: String) -> Reply {
        let message = wire::reply(guest, ResponseCode::ServFail, Vec::new(), Vec::new());
        let mut record = record(Some(&guest.query), Verdict::Failed, &wire::rcode_name(ResponseCode::ServFail));
        record.upstream = upstream;
        record.reason = Some(reason);
        Reply { message, record }
    }

    fn next_id(&self) -> u16 {
        let n = self.id_counter.fetch_add(1, Ordering::Relaxed);
        let h = self.id_keys.hash_one(n).to_le_bytes();
        u16::from_le_bytes([h[0], h[1]])
    }
}

/// A record of a query with this question (if read), verdict and rcode.
fn record(question: Option<&Query>, verdict: Verdict, rcode: &str) -> QueryRecord {
    QueryRecord {
        name: question.map(|q| wire::presentation(q.name())).unwrap_or_default(),
        qtype: question.map(|q| wire::type_name(q.query_type())).unwrap_or_default(),
        verdict,
        rcode: rcode.to_owned(),
        answers: Vec::new(),
        upstream: None,
        reason: None,
    }
}
