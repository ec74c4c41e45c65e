//! DNS messages, read and written by hickory-proto: the guest's query, the
//! query the resolver sends upstream (built afresh, never the guest's
//! bytes), the checks an upstream answer must pass, and the replies.

use super::Proto;
use hickory_proto::op::{Edns, Header, Message, MessageType, Metadata, OpCode, Query, ResponseCode};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};
use std::net::IpAddr;

/// The largest upstream answer over UDP the resolver accepts; a transport
/// should receive into a buffer one byte larger, so a bigger datagram
/// shows as oversized rather than cut short.
pub const MAX_UDP_ANSWER: usize = 4096;
/// The largest DNS message over TCP (its length prefix is 16 bits).
pub const MAX_TCP_MESSAGE: usize = 65535;
/// The UDP payload size the resolver advertises upstream and to guests
/// (the DNS flag day 2020 value, which avoids IP fragmentation).
const EDNS_PAYLOAD: u16 = 1232;
/// The UDP reply size every DNS client takes (RFC 1035 §4.2.1).
const MIN_UDP_REPLY: usize = 512;
/// How many CNAMEs the resolver follows from the question's name.
const MAX_CHAIN: usize = 8;
/// A TTL above this is read as 0 (RFC 2181 §8).
const MAX_TTL: u32 = 0x7fff_ffff;

/// A guest query the resolver acts on.
#[derive(Clone, Debug)]
pub(crate) struct GuestQuery {
    pub id: u16,
    /// The question as asked (its case is echoed back).
    pub query: Query,
    /// The question's name in lowercase: what the policy judges and the
    /// upstream is asked, so letter case cannot carry data out.
    pub name: Name,
    recursion_desired: bool,
    checking_disabled: bool,
    edns: bool,
    /// The largest reply the guest takes.
    limit: usize,
}

/// A guest message the resolver does not forward.
#[derive(Debug)]
pub(crate) enum Rejected {
    /// No reply: too short for a header, or itself a response (answering
    /// one could loop).
    Drop,
    /// Reply `rcode`; `question` when it was read.
    Reply { message: Option<Vec<u8>>, rcode: ResponseCode, question: Option<Query> },
}

/// An upstream answer that failed a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Invalid {
    #[error("oversized answer")]
    Oversized,
    #[error("malformed answer")]
    Malformed,
    #[error("not a response")]
    NotAResponse,
    #[error("answer with the wrong ID")]
    WrongId,
    #[error("answer to another question")]
    WrongQuestion,
    #[error("truncated answer")]
    Truncated,
}

/// What of an upstream answer reaches the guest.
#[derive(Debug, Default)]
pub(crate) struct Filtered {
    pub rcode: ResponseCode,
    pub answers: Vec<Record>,
    pub authorities: Vec<Record>,
    /// The A/AAAA addresses among `answers`, with their (capped) TTLs.
    pub addresses: Vec<(IpAddr, u32)>,
}

/// Reads a guest query.
pub(crate) fn read_query(bytes: &[u8], proto: Proto) -> Result<GuestQuery, Rejected> {
    let Ok(header) = Header::read(&mut BinDecoder::new(bytes)) else { return Err(Rejected::Drop) };
    if header.message_type == MessageType::Response {
        return Err(Rejected::Drop);
    }
    let meta = header.metadata;
    let reject = |rcode, question: Option<Query>| {
        let message = error_reply(&meta, rcode, question.as_ref());
        Rejected::Reply { message, rcode, question }
    };
    if meta.op_code != OpCode::Query {
        return Err(reject(ResponseCode::NotImp, None));
    }
    // Checked before decoding the rest, which would reserve room for as
    // many questions as the header claims.
    if header.counts.queries != 1 {
        return Err(reject(ResponseCode::FormErr, None));
    }
    let Ok(message) = Message::from_vec(bytes) else { return Err(reject(ResponseCode::FormErr, None)) };
    let Some(query) = message.queries.first().cloned() else { return Err(reject(ResponseCode::FormErr, None)) };
    let refused = matches!(
        query.query_type(),
        RecordType::AXFR | RecordType::IXFR | RecordType::OPT | RecordType::TSIG | RecordType::ZERO
    );
    if query.query_class() != DNSClass::IN || refused {
        return Err(reject(ResponseCode::Refused, Some(query)));
    }
    let limit = match proto {
        Proto::Udp => usize::from(message.max_payload()).clamp(MIN_UDP_REPLY, MAX_UDP_ANSWER),
        Proto::Tcp => MAX_TCP_MESSAGE,
    };
    Ok(GuestQuery {
        id: meta.id,
        name: query.name().to_lowercase(),
        query,
        recursion_desired: meta.recursion_desired,
        checking_disabled: meta.checking_disabled,
        edns: message.edns.is_some(),
        limit,
    })
}

/// The query sent upstream for `guest`: ID `id`, recursion desired, the
/// lowercase question, EDNS with the resolver's payload size, and nothing
/// else of the guest's message (no options, no extra records).
pub(crate) fn upstream_query(guest: &GuestQuery, id: u16) -> Option<Vec<u8>> {
    let mut message = Message::new(id, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.metadata.checking_disabled = guest.checking_disabled;
    let mut query = Query::query(guest.name.clone(), guest.query.query_type());
    query.set_query_class(DNSClass::IN);
    message.add_query(query);
    let mut edns = Edns::new();
    edns.set_max_payload(EDNS_PAYLOAD);
    message.set_edns(edns);
    message.to_vec().ok()
}

/// Checks an upstream answer to the query with ID `id` for `guest`, sent
/// over `proto`.
pub(crate) fn check_answer(bytes: &[u8], proto: Proto, id: u16, guest: &GuestQuery) -> Result<Message, Invalid> {
    let limit = match proto {
        Proto::Udp => MAX_UDP_ANSWER,
        Proto::Tcp => MAX_TCP_MESSAGE,
    };
    if bytes.len() > limit {
        return Err(Invalid::Oversized);
    }
    let header = Header::read(&mut BinDecoder::new(bytes)).map_err(|_| Invalid::Malformed)?;
    if header.message_type != MessageType::Response {
        return Err(Invalid::NotAResponse);
    }
    if header.id != id {
        return Err(Invalid::WrongId);
    }
    if header.counts.queries != 1 {
        return Err(Invalid::WrongQuestion);
    }
    if header.truncation {
        return Err(Invalid::Truncated);
    }
    let message = Message::from_vec(bytes).map_err(|_| Invalid::Malformed)?;
    if message.metadata.op_code != OpCode::Query {
        return Err(Invalid::Malformed);
    }
    let asked = message.queries.first().ok_or(Invalid::WrongQuestion)?;
    if asked.name() != &guest.name
        || asked.query_type() != guest.query.query_type()
        || asked.query_class() != DNSClass::IN
    {
        return Err(Invalid::WrongQuestion);
    }
    Ok(message)
}

/// Keeps of a checked answer only what answers the guest's question: the
/// CNAME chain from its name and the records of the asked type at the
/// chain's names, at most `max_records` of them, and for an empty answer
/// the zone's SOA (for negative caching). TTLs are capped at `ttl_cap`
/// seconds. An rcode other than NOERROR and NXDOMAIN becomes SERVFAIL.
pub(crate) fn filter(message: Message, guest: &GuestQuery, ttl_cap: u32, max_records: usize) -> Filtered {
    let rcode = message.metadata.response_code;
    if rcode != ResponseCode::NoError && rcode != ResponseCode::NXDomain {
        return Filtered { rcode: ResponseCode::ServFail, ..Filtered::default() };
    }
    let qtype = guest.query.query_type();
    let mut chain = vec![guest.name.clone()];
    while chain.len() <= MAX_CHAIN {
        let next = chain.last().and_then(|last| {
            message.answers.iter().find_map(|r| match &r.data {
                RData::CNAME(target) if r.dns_class == DNSClass::IN && &r.name == last => Some(target.0.to_lowercase()),
                _ => None,
            })
        });
        match next {
            Some(target) if !chain.contains(&target) => chain.push(target),
            _ => break,
        }
    }
    let mut answers: Vec<Record> = message
        .answers
        .into_iter()
        .filter(|r| {
            let rtype = r.record_type();
            r.dns_class == DNSClass::IN
                && chain.contains(&r.name)
                && (rtype == qtype || rtype == RecordType::CNAME || qtype == RecordType::ANY)
        })
        .take(max_records)
        .collect();
    let mut authorities = Vec::new();
    if answers.iter().all(|r| r.record_type() == RecordType::CNAME) {
        let end = chain.last().unwrap_or(&guest.name);
        authorities.extend(
            message
                .authorities
                .into_iter()
                .filter(|r| r.dns_class == DNSClass::IN && matches!(r.data, RData::SOA(_)) && r.name.zone_of(end))
                .take(1),
        );
    }
    for r in answers.iter_mut().chain(authorities.iter_mut()) {
        r.ttl = capped_ttl(r.ttl, ttl_cap);
    }
    let addresses = answers.iter().filter_map(|r| r.data.ip_addr().map(|ip| (ip, r.ttl))).collect();
    Filtered { rcode, answers, authorities, addresses }
}

/// `ttl` capped at `cap`, and 0 for a TTL with its top bit set.
pub(crate) fn capped_ttl(ttl: u32, cap: u32) -> u32 {
    if ttl > MAX_TTL {
        0
    } else {
        ttl.min(cap)
    }
}

/// The reply to `guest`: `rcode` with these records, or with none and the
/// TC bit when they do not fit the guest's size (it retries over TCP).
pub(crate) fn reply(
    guest: &GuestQuery,
    rcode: ResponseCode,
    answers: Vec<Record>,
    authorities: Vec<Record>,
) -> Option<Vec<u8>> {
    let mut message = Message::response(guest.id, OpCode::Query);
    message.metadata.recursion_desired = guest.recursion_desired;
    message.metadata.recursion_available = true;
    message.metadata.checking_disabled = guest.checking_disabled;
    message.metadata.response_code = rcode;
    message.add_query(guest.query.clone());
    if guest.edns {
        let mut edns = Edns::new();
        edns.set_max_payload(EDNS_PAYLOAD);
        message.set_edns(edns);
    }
    let empty = message.clone();
    message.insert_answers(answers);
    message.insert_authorities(authorities);
    match message.to_vec() {
        Ok(bytes) if bytes.len() <= guest.limit => Some(bytes),
        _ => {
            let mut truncated = empty;
            truncated.metadata.truncation = true;
            truncated.to_vec().ok()
        }
    }
}

/// An error reply for a query whose header is `meta`.
fn error_reply(meta: &Metadata, rcode: ResponseCode, question: Option<&Query>) -> Option<Vec<u8>> {
    let mut message = Message::response(meta.id, meta.op_code);
    message.metadata.recursion_desired = meta.recursion_desired;
    message.metadata.recursion_available = true;
    message.metadata.response_code = rcode;
    if let Some(q) = question {
        message.add_query(q.clone());
    }
    message.to_vec().ok()
}

/// `name` in lowercase presentation form without the trailing dot (`.`
/// for the root), bytes outside printable ASCII escaped.
pub(crate) fn presentation(name: &Name) -> String {
    let text = name.to_lowercase().to_ascii();
    match text.strip_suffix('.') {
        Some(trimmed) if !trimmed.is_empty() => trimmed.to_owned(),
        _ => text,
    }
}

/// A record as the audit log shows it: `TYPE DATA`.
pub(crate) fn describe(record: &Record) -> String {
    format!("{} {}", type_name(record.record_type()), record.data)
}

/// A record type as dig spells it; an unknown one as `TYPEn` (RFC 3597).
pub(crate) fn type_name(rtype: RecordType) -> String {
    match rtype {
        RecordType::Unknown(n) => format!("TYPE{n}"),
        known => known.to_string(),
    }
}

/// An rcode as dig spells it (`NOERROR`, `NXDOMAIN`…), `RCODEn` otherwise.
pub(crate) fn rcode_name(rcode: ResponseCode) -> String {
    let name = match rcode {
        ResponseCode::NoError => "NOERROR",
        ResponseCode::FormErr => "FORMERR",
        ResponseCode::ServFail => "SERVFAIL",
        ResponseCode::NXDomain => "NXDOMAIN",
        ResponseCode::NotImp => "NOTIMP",
        ResponseCode::Refused => "REFUSED",
        other => return format!("RCODE{}", u16::from(other)),
    };
    name.to_owned()
}
