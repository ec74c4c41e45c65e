//! The resolver against a fake upstream: policy verdicts, forwarding,
//! hostile answers, TCP retry, the address table, and random bytes.

use super::*;
use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA, CNAME, SOA};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};
use std::cell::RefCell;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

type Answerer = Box<dyn Fn(&Message, Proto) -> Result<Vec<u8>, TransportError>>;
/// One exchange the fake saw: server, transport, query bytes, deadline.
type Call = (SocketAddr, Proto, Vec<u8>, Instant);

/// An upstream that answers each query with `answer`, keeping every call.
struct Fake {
    calls: RefCell<Vec<Call>>,
    answer: Answerer,
}

impl Fake {
    fn new(answer: impl Fn(&Message, Proto) -> Result<Vec<u8>, TransportError> + 'static) -> Fake {
        Fake { calls: RefCell::new(Vec::new()), answer: Box::new(answer) }
    }

    /// An upstream that answers with these records (built per query).
    fn records(records: impl Fn(&Message) -> Vec<Record> + 'static) -> Fake {
        Fake::new(move |q, _| Ok(answer(q, records(q)).to_vec().unwrap()))
    }

    fn protos(&self) -> Vec<Proto> {
        self.calls.borrow().iter().map(|c| c.1).collect()
    }
}

impl Transport for Fake {
    fn exchange(
        &self,
        upstream: SocketAddr,
        proto: Proto,
        query: &[u8],
        deadline: Instant,
    ) -> Result<Vec<u8>, TransportError> {
        self.calls.borrow_mut().push((upstream, proto, query.to_vec(), deadline));
        let query = Message::from_vec(query).unwrap();
        (self.answer)(&query, proto)
    }
}

fn name(s: &str) -> Name {
    Name::from_ascii(s).unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn a(owner: &str, addr: &str, ttl: u32) -> Record {
    Record::from_rdata(name(owner), ttl, RData::A(A(addr.parse().unwrap())))
}

fn cname(owner: &str, target: &str) -> Record {
    Record::from_rdata(name(owner), 300, RData::CNAME(CNAME(name(target))))
}

/// A guest query for `qname`/`qtype` with ID `id`.
fn query_msg(id: u16, qname: &str, qtype: RecordType) -> Message {
    let mut m = Message::new(id, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(name(qname), qtype));
    m
}

fn query(id: u16, qname: &str, qtype: RecordType) -> Vec<u8> {
    query_msg(id, qname, qtype).to_vec().unwrap()
}

/// A NOERROR answer to `q` holding `records`.
fn answer(q: &Message, records: Vec<Record>) -> Message {
    let mut m = Message::response(q.metadata.id, OpCode::Query);
    m.metadata.recursion_available = true;
    m.add_queries(q.queries.iter().cloned());
    m.insert_answers(records);
    m
}

fn upstream() -> SocketAddr {
    "192.0.2.53:53".parse().unwrap()
}

fn resolver(allow: &[&str]) -> Resolver {
    let policy = NamePolicy::from_rules(allow.iter().copied(), []).unwrap();
    Resolver::new(policy, vec![upstream()], Config::default())
}

fn resolve(r: &Resolver, bytes: &[u8], fake: &Fake, now: Instant) -> Reply {
    r.resolve(bytes, Proto::Udp, fake, &|| now)
}

/// The guest's reply, decoded.
fn decoded(reply: &Reply) -> Message {
    Message::from_vec(reply.message.as_ref().expect("a reply")).unwrap()
}

fn servfail(reply: &Reply, id: u16) {
    let m = decoded(reply);
    assert_eq!(m.metadata.id, id);
    assert_eq!(m.metadata.response_code, ResponseCode::ServFail);
    assert!(m.answers.is_empty());
    assert_eq!(reply.record.verdict, Verdict::Failed);
}

#[test]
fn denied_names_get_nxdomain_without_the_upstream() {
    let r = resolver(&["api.test:8080", "*.pkg.test"]);
    let fake = Fake::records(|_| panic!("the upstream was asked"));
    let now = Instant::now();
    for qname in ["secret-data.exfil.test.", "other.test.", "pkg.test.", "api.test.evil.", "x.api.test.", "."] {
        let reply = resolve(&r, &query(0x4242, qname, RecordType::A), &fake, now);
        let m = decoded(&reply);
        assert_eq!(m.metadata.id, 0x4242);
        assert_eq!(m.metadata.message_type, MessageType::Response);
        assert_eq!(m.metadata.response_code, ResponseCode::NXDomain, "{qname}");
        assert_eq!(m.queries[0].name(), &name(qname));
        assert!(m.answers.is_empty());
        assert_eq!(reply.record.verdict, Verdict::Denied);
        assert_eq!(reply.record.rcode, "NXDOMAIN");
        assert_eq!(reply.record.upstream, None);
    }
    assert!(fake.calls.borrow().is_empty());
}

#[test]
fn allowed_names_are_forwarded_and_answered_with_the_guests_id() {
    let r = resolver(&["api.test:8080", "*.pkg.test"]);
    let fake = Fake::records(|q| vec![a(&q.queries[0].name().to_ascii(), "198.18.0.10", 300)]);
    let now = Instant::now();
    for qname in ["API.Test.", "files.pkg.test.", "a.b.PKG.test."] {
        let reply = resolve(&r, &query(0x1234, qname, RecordType::A), &fake, now);
        let m = decoded(&reply);
        assert_eq!(m.metadata.id, 0x1234);
        assert_eq!(m.metadata.response_code, ResponseCode::NoError);
        assert!(m.queries[0].name().eq_case(&name(qname)), "the guest's question is echoed as asked");
        assert_eq!(m.answers.len(), 1);
        assert_eq!(m.answers[0].data.ip_addr(), Some(ip("198.18.0.10")));
        assert_eq!(reply.record.verdict, Verdict::Allowed);
        assert_eq!(reply.record.name, qname.trim_end_matches('.').to_ascii_lowercase());
        assert_eq!(reply.record.qtype, "A");
        assert_eq!(reply.record.answers, vec!["A 198.18.0.10"]);
        assert_eq!(reply.record.upstream, Some(upstream()));
    }
    assert_eq!(fake.calls.borrow().len(), 3);
}

#[test]
fn the_upstream_query_is_built_afresh() {
    let r = resolver(&["api.test"]);
    let fake = Fake::records(|_| Vec::new());
    let mut guest = query_msg(7, "ApI.TeSt.", RecordType::AAAA);
    guest.add_additional(a("smuggled.exfil.test.", "192.0.2.1", 1));
    let mut edns = Edns::new();
    edns.set_max_payload(4000);
    guest.set_edns(edns);
    let now = Instant::now();
    resolve(&r, &guest.to_vec().unwrap(), &fake, now);
    let calls = fake.calls.borrow();
    let (to, proto, bytes, deadline) = &calls[0];
    assert_eq!((*to, *proto), (upstream(), Proto::Udp));
    assert_eq!(*deadline, now + Config::default().timeout);
    let sent = Message::from_vec(bytes).unwrap();
    assert!(sent.queries[0].name().eq_case(&name("api.test.")), "lowercase: letter case carries no data out");
    assert_eq!(sent.queries[0].query_type(), RecordType::AAAA);
    assert!(sent.metadata.recursion_desired);
    assert!(sent.answers.is_empty() && sent.authorities.is_empty() && sent.additionals.is_empty());
    let edns = sent.edns.unwrap();
    assert_eq!(edns.max_payload(), 1232);
    assert!(edns.options().as_ref().is_empty());
}

#[test]
fn cname_chains_are_followed_and_unrelated_records_dropped() {
    let r = resolver(&["api.test:8080"]);
    let fake = Fake::records(|_| {
        vec![
            cname("api.test.", "lb.cdn.example."),
            a("lb.cdn.example.", "198.18.0.20", 300),
            a("evil.example.", "198.18.0.66", 300),
            Record::from_rdata(name("api.test."), 300, RData::AAAA(AAAA("2001:db8::1".parse().unwrap()))),
        ]
    });
    let now = Instant::now();
    let reply = resolve(&r, &query(1, "api.test.", RecordType::A), &fake, now);
    let m = decoded(&reply);
    assert_eq!(m.answers.len(), 2);
    assert_eq!(reply.record.answers, vec!["CNAME lb.cdn.example.", "A 198.18.0.20"]);
    let (n, rule) = r.name_allowing(ip("198.18.0.20"), 8080, now).unwrap();
    assert_eq!((n.as_str(), rule.to_string().as_str()), ("api.test", "api.test:8080"));
    assert_eq!(r.name_for(ip("198.18.0.66"), now), None);
    assert_eq!(r.name_for(ip("2001:db8::1"), now), None);
}

#[test]
fn answers_for_another_name_teach_nothing() {
    let r = resolver(&["api.test"]);
    let fake = Fake::records(|_| vec![a("evil.example.", "198.18.0.66", 300), cname("x.test.", "api.test.")]);
    let now = Instant::now();
    let reply = resolve(&r, &query(9, "api.test.", RecordType::A), &fake, now);
    let m = decoded(&reply);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert!(m.answers.is_empty());
    assert_eq!(r.name_for(ip("198.18.0.66"), now), None);
}

#[test]
fn the_address_table_learns_and_expires() {
    let r = resolver(&["api.test:8080", "*.pkg.test"]);
    let fake = Fake::records(|q| {
        let owner = q.queries[0].name().to_ascii();
        if owner.starts_with("api") {
            vec![a(&owner, "198.18.0.10", 300)]
        } else {
            vec![a(&owner, "198.18.0.11", 0)]
        }
    });
    let t0 = Instant::now();
    resolve(&r, &query(1, "api.test.", RecordType::A), &fake, t0);
    let (n, ports) = r.name_for(ip("198.18.0.10"), t0).unwrap();
    assert_eq!(n, "api.test");
    assert!(ports.allows(8080) && !ports.allows(80));
    assert_eq!(r.name_allowing(ip("198.18.0.10"), 8080, t0 + Duration::from_secs(299)).unwrap().0, "api.test");
    assert_eq!(r.name_allowing(ip("198.18.0.10"), 80, t0), None);
    assert_eq!(r.name_for(ip("198.18.0.10"), t0 + Duration::from_secs(300)), None);
    assert_eq!(r.name_for(ip("198.18.0.99"), t0), None);

    // TTL 0 still lets the program connect right after resolving.
    resolve(&r, &query(2, "w.pkg.test.", RecordType::A), &fake, t0);
    assert!(r.name_allowing(ip("198.18.0.11"), 443, t0 + Duration::from_secs(29)).is_some());
    assert!(r.name_allowing(ip("198.18.0.11"), 443, t0 + Duration::from_secs(30)).is_none());
}

#[test]
fn huge_ttls_are_capped() {
    let r = resolver(&["*.test"]);
    let fake = Fake::records(|q| {
        let owner = q.queries[0].name().to_ascii();
        vec![a(&owner, "198.18.0.1", 4_000_000), a(&owner, "198.18.0.2", 0xffff_fff0)]
    });
    let t0 = Instant::now();
    let reply = resolve(&r, &query(3, "big.test.", RecordType::A), &fake, t0);
    let ttls: Vec<u32> = decoded(&reply).answers.iter().map(|r| r.ttl).collect();
    assert_eq!(ttls, vec![3600, 0]);
    assert!(r.name_for(ip("198.18.0.1"), t0 + Duration::from_secs(3599)).is_some());
    assert!(r.name_for(ip("198.18.0.1"), t0 + Duration::from_secs(3600)).is_none());
    assert!(r.name_for(ip("198.18.0.2"), t0 + Duration::from_secs(31)).is_none());
}

#[test]
fn many_records_are_bounded_and_truncated_for_small_guests() {
    let r = resolver(&["*.test"]);
    let fake = Fake::records(|q| {
        let owner = q.queries[0].name().to_ascii();
        (0..200u8).map(|i| a(&owner, &format!("198.18.1.{i}"), 60)).collect()
    });
    let now = Instant::now();
    let small = resolve(&r, &query(5, "many.test.", RecordType::A), &fake, now);
    let m = decoded(&small);
    assert!(m.metadata.truncation, "512 bytes cannot hold 64 records");
    assert!(m.answers.is_empty());
    let big = r.resolve(&query(6, "many.test.", RecordType::A), Proto::Tcp, &fake, &|| now);
    let m = decoded(&big);
    assert!(!m.metadata.truncation);
    assert_eq!(m.answers.len(), Config::default().max_records);
    assert!(r.name_for(ip("198.18.1.63"), now).is_some());
    assert!(r.name_for(ip("198.18.1.64"), now).is_none());
}

#[test]
fn hostile_answers_get_servfail() {
    let r = resolver(&["*.test"]);
    let now = Instant::now();
    let good = |q: &Message| answer(q, vec![a(&q.queries[0].name().to_ascii(), "198.18.0.1", 60)]);
    let cases: Vec<(&str, Fake)> = vec![
        (
            "truncated bytes",
            Fake::new(move |q, _| {
                let b = good(q).to_vec().unwrap();
                Ok(b[..b.len() - 3].to_vec())
            }),
        ),
        ("header only", Fake::new(move |q, _| Ok(good(q).to_vec().unwrap()[..12].to_vec()))),
        ("short", Fake::new(|_, _| Ok(vec![0x12]))),
        ("empty", Fake::new(|_, _| Ok(Vec::new()))),
        ("garbage", Fake::new(|_, _| Ok((0..300u32).map(|i| u8::try_from(i * 7 % 251).unwrap()).collect()))),
        (
            "oversized",
            Fake::new(move |q, _| {
                let mut b = good(q).to_vec().unwrap();
                b.resize(MAX_UDP_ANSWER + 1, 0);
                Ok(b)
            }),
        ),
        (
            "wrong id",
            Fake::new(move |q, _| {
                let mut m = good(q);
                m.metadata.id = m.metadata.id.wrapping_add(1);
                Ok(m.to_vec().unwrap())
            }),
        ),
        (
            "wrong question",
            Fake::new(|q, _| {
                let mut other = query_msg(q.metadata.id, "other.test.", RecordType::A);
                other.metadata.message_type = MessageType::Response;
                Ok(answer(&other, vec![a("other.test.", "198.18.0.1", 60)]).to_vec().unwrap())
            }),
        ),
        (
            "wrong type",
            Fake::new(|q, _| {
                let other = query_msg(q.metadata.id, &q.queries[0].name().to_ascii(), RecordType::TXT);
                Ok(answer(&other, Vec::new()).to_vec().unwrap())
            }),
        ),
        ("no question", Fake::new(|q, _| Ok(Message::response(q.metadata.id, OpCode::Query).to_vec().unwrap()))),
        (
            "two questions",
            Fake::new(move |q, _| {
                let mut m = good(q);
                m.add_query(Query::query(name("x.test."), RecordType::A));
                Ok(m.to_vec().unwrap())
            }),
        ),
        ("a query, not an answer", Fake::new(|q, _| Ok(q.to_vec().unwrap()))),
        (
            "upstream error",
            Fake::new(|q, _| {
                Ok(Message::error_msg(q.metadata.id, OpCode::Query, ResponseCode::Refused)
                    .add_queries(q.queries.clone())
                    .to_vec()
                    .unwrap())
            }),
        ),
        (
            "truncated over TCP too",
            Fake::new(move |q, _| {
                let mut m = good(q);
                m.metadata.truncation = true;
                Ok(m.to_vec().unwrap())
            }),
        ),
        ("timeout", Fake::new(|_, _| Err(TransportError::TimedOut))),
        ("refused", Fake::new(|_, _| Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused).into()))),
    ];
    for (what, fake) in cases {
        let reply = resolve(&r, &query(0x7777, "host.test.", RecordType::A), &fake, now);
        servfail(&reply, 0x7777);
        assert_eq!(reply.record.upstream, Some(upstream()), "{what}");
        assert!(reply.record.reason.is_some(), "{what}");
        if what == "upstream error" {
            assert_eq!(reply.record.reason.as_deref(), Some("upstream answered REFUSED"));
        }
        assert!(r.name_for(ip("198.18.0.1"), now).is_none(), "{what}");
    }
}

#[test]
fn a_truncated_udp_answer_is_asked_again_over_tcp() {
    let r = resolver(&["*.test"]);
    let fake = Fake::new(|q, proto| {
        let mut m = answer(q, vec![a(&q.queries[0].name().to_ascii(), "198.18.0.5", 60)]);
        if proto == Proto::Udp {
            m.answers.clear();
            m.metadata.truncation = true;
        }
        Ok(m.to_vec().unwrap())
    });
    let now = Instant::now();
    let reply = resolve(&r, &query(11, "big.test.", RecordType::A), &fake, now);
    assert_eq!(fake.protos(), vec![Proto::Udp, Proto::Tcp]);
    let m = decoded(&reply);
    assert_eq!(m.metadata.id, 11);
    assert_eq!(m.answers[0].data.ip_addr(), Some(ip("198.18.0.5")));
    assert!(r.name_for(ip("198.18.0.5"), now).is_some());
}

#[test]
fn a_failing_upstream_gives_way_to_the_next() {
    let second: SocketAddr = "[2001:db8::53]:53".parse().unwrap();
    let policy = NamePolicy::from_rules(["*.test"], []).unwrap();
    let r = Resolver::new(policy, vec![upstream(), second], Config::default());
    let fake = Fake::new(move |q, _| {
        let _ = q;
        Err(TransportError::TimedOut)
    });
    let now = Instant::now();
    let reply = resolve(&r, &query(12, "x.test.", RecordType::A), &fake, now);
    servfail(&reply, 12);
    let deadlines: Vec<(SocketAddr, Instant)> = fake.calls.borrow().iter().map(|c| (c.0, c.3)).collect();
    assert_eq!(deadlines, vec![(upstream(), now + Duration::from_secs(2)), (second, now + Duration::from_secs(4))]);

    let calls = RefCell::new(0);
    let fake = Fake::new(move |q, _| {
        *calls.borrow_mut() += 1;
        if *calls.borrow() == 1 {
            return Ok(vec![0; 5]);
        }
        Ok(answer(q, vec![a("x.test.", "198.18.0.7", 60)]).to_vec().unwrap())
    });
    let reply = resolve(&r, &query(13, "x.test.", RecordType::A), &fake, now);
    assert_eq!(decoded(&reply).answers.len(), 1);
    assert_eq!(reply.record.upstream, Some(second));
}

#[test]
fn extreme_limits_do_not_overflow() {
    let policy = NamePolicy::from_rules(["*"], []).unwrap();
    let config =
        Config { timeout: Duration::MAX, ttl_floor: Duration::MAX, ttl_cap: Duration::MAX, ..Config::default() };
    let r = Resolver::new(policy, vec![upstream()], config);
    let fake = Fake::records(|_| vec![a("x.test.", "198.18.0.40", u32::MAX / 2)]);
    let now = Instant::now();
    let reply = resolve(&r, &query(16, "x.test.", RecordType::A), &fake, now);
    assert_eq!(decoded(&reply).answers[0].ttl, u32::MAX / 2);
    assert!(fake.calls.borrow()[0].3 > now + Duration::from_secs(1 << 31));
    assert!(r.name_for(ip("198.18.0.40"), now + Duration::from_secs(1 << 31)).is_some());
}

#[test]
fn no_upstream_means_servfail() {
    let policy = NamePolicy::from_rules(["*"], []).unwrap();
    let r = Resolver::new(policy, Vec::new(), Config::default());
    let fake = Fake::records(|_| panic!("no upstream to ask"));
    let reply = resolve(&r, &query(14, "x.test.", RecordType::A), &fake, Instant::now());
    servfail(&reply, 14);
    assert_eq!(reply.record.reason.as_deref(), Some("no DNS upstream"));
}

#[test]
fn negative_answers_keep_the_zones_soa() {
    let r = resolver(&["*.test"]);
    let fake = Fake::new(|q, _| {
        let mut m = Message::error_msg(q.metadata.id, OpCode::Query, ResponseCode::NXDomain);
        m.add_queries(q.queries.clone());
        let soa = SOA::new(name("ns.test."), name("admin.test."), 1, 2, 3, 4, 5);
        m.insert_authorities(vec![
            Record::from_rdata(name("test."), 900_000, RData::SOA(soa.clone())),
            Record::from_rdata(name("elsewhere."), 60, RData::SOA(soa)),
        ]);
        Ok(m.to_vec().unwrap())
    });
    let reply = resolve(&r, &query(15, "gone.test.", RecordType::A), &fake, Instant::now());
    let m = decoded(&reply);
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    assert_eq!(m.authorities.len(), 1);
    assert_eq!(m.authorities[0].name, name("test."));
    assert_eq!(m.authorities[0].ttl, 3600);
    assert_eq!(reply.record.verdict, Verdict::Allowed);
}

#[test]
fn malformed_and_unserved_queries() {
    let r = resolver(&["*"]);
    let fake = Fake::records(|_| panic!("the upstream was asked"));
    let now = Instant::now();
    for bytes in [&[][..], &[1, 2, 3, 4, 5][..]] {
        let reply = resolve(&r, bytes, &fake, now);
        assert!(reply.message.is_none());
        assert_eq!(reply.record.verdict, Verdict::Malformed);
    }
    let mut response = query_msg(1, "x.test.", RecordType::A);
    response.metadata.message_type = MessageType::Response;
    assert!(resolve(&r, &response.to_vec().unwrap(), &fake, now).message.is_none(), "responses are never answered");

    let mut no_question = Message::new(0x0102, MessageType::Query, OpCode::Query);
    let reply = resolve(&r, &no_question.to_vec().unwrap(), &fake, now);
    assert_eq!(decoded(&reply).metadata.response_code, ResponseCode::FormErr);
    assert_eq!(decoded(&reply).metadata.id, 0x0102);
    no_question
        .add_queries([Query::query(name("a.test."), RecordType::A), Query::query(name("b.test."), RecordType::A)]);
    let reply = resolve(&r, &no_question.to_vec().unwrap(), &fake, now);
    assert_eq!(decoded(&reply).metadata.response_code, ResponseCode::FormErr);

    let mut cut = query(0x0203, "x.test.", RecordType::A);
    cut.truncate(cut.len() - 2);
    let reply = resolve(&r, &cut, &fake, now);
    assert_eq!(decoded(&reply).metadata.response_code, ResponseCode::FormErr);
    assert_eq!(reply.record.verdict, Verdict::Malformed);

    let mut notify = query_msg(3, "x.test.", RecordType::SOA);
    notify.metadata.op_code = OpCode::Notify;
    assert_eq!(
        decoded(&resolve(&r, &notify.to_vec().unwrap(), &fake, now)).metadata.response_code,
        ResponseCode::NotImp
    );

    let axfr = query(4, "x.test.", RecordType::AXFR);
    let reply = resolve(&r, &axfr, &fake, now);
    assert_eq!(decoded(&reply).metadata.response_code, ResponseCode::Refused);
    assert_eq!(reply.record.verdict, Verdict::Refused);
    assert_eq!((reply.record.qtype.as_str(), reply.record.rcode.as_str()), ("AXFR", "REFUSED"));

    let mut chaos = query_msg(5, "version.bind.", RecordType::TXT);
    chaos.queries[0].set_query_class(DNSClass::CH);
    assert_eq!(
        decoded(&resolve(&r, &chaos.to_vec().unwrap(), &fake, now)).metadata.response_code,
        ResponseCode::Refused
    );
    assert!(fake.calls.borrow().is_empty());
}

#[test]
fn begin_and_finish_split_across_threads() {
    let r = resolver(&["*.test"]);
    let now = Instant::now();
    let Step::Forward(pending) = r.begin(&query(21, "t.test.", RecordType::A), Proto::Udp, now) else {
        panic!("an allowed name is forwarded")
    };
    let answered = std::thread::spawn(move || {
        let fake = Fake::records(|_| vec![a("t.test.", "198.18.0.30", 60)]);
        pending.exchange(&fake)
    })
    .join()
    .unwrap();
    let reply = r.finish(answered, now);
    assert_eq!(decoded(&reply).metadata.id, 21);
    assert!(r.name_for(ip("198.18.0.30"), now).is_some());
    assert!(matches!(r.begin(&query(22, "t.other.", RecordType::A), Proto::Udp, now), Step::Done(_)));
}

#[test]
fn records_spell_types_and_rcodes_as_dig_does() {
    let r = resolver(&["*.test"]);
    let fake = Fake::records(|_| Vec::new());
    let reply = resolve(&r, &query(30, "x.test.", RecordType::Unknown(65280)), &fake, Instant::now());
    assert_eq!((reply.record.qtype.as_str(), reply.record.rcode.as_str()), ("TYPE65280", "NOERROR"));
    assert_eq!(reply.record.verdict.as_str(), "allowed");
}

#[test]
fn the_resolver_is_shared_and_queries_move_between_threads() {
    fn shared<T: Send + Sync>() {}
    fn movable<T: Send>() {}
    shared::<Resolver>();
    movable::<Pending>();
    movable::<Answered>();
}

/// xorshift64*: deterministic bytes without a crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n).unwrap()).unwrap()
    }

    fn byte(&mut self) -> u8 {
        self.next().to_le_bytes()[0]
    }

    /// Random bytes, or `seed` with a few bytes changed, cut or extended.
    fn mutate(&mut self, seed: &[u8]) -> Vec<u8> {
        if self.below(4) == 0 {
            let len = self.below(600);
            return (0..len).map(|_| self.byte()).collect();
        }
        let mut b = seed.to_vec();
        for _ in 0..=self.below(6) {
            match self.below(4) {
                0 if !b.is_empty() => {
                    let i = self.below(b.len());
                    b[i] = self.byte();
                }
                1 => b.truncate(self.below(b.len() + 1)),
                2 => b.push(self.byte()),
                _ if b.len() > 4 => {
                    // Count fields and compression pointers are the
                    // interesting bytes.
                    let i = self.below(b.len().min(14));
                    b[i] = [0, 1, 0xff, 0xc0, 0x0c][self.below(5)];
                }
                _ => {}
            }
        }
        b
    }
}

#[test]
fn random_queries_and_answers_never_panic() {
    let r = resolver(&["*.test", "api.example:443"]);
    let now = Instant::now();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut seed_query = query_msg(0x5555, "Api.Example.", RecordType::AAAA);
    seed_query.set_edns(Edns::new());
    let seed_query = seed_query.to_vec().unwrap();
    let quiet = Fake::records(|_| Vec::new());
    for _ in 0..5000 {
        let bytes = rng.mutate(&seed_query);
        let reply = r.resolve(&bytes, if rng.below(2) == 0 { Proto::Udp } else { Proto::Tcp }, &quiet, &|| now);
        if let Some(m) = &reply.message {
            let m = Message::from_vec(m).unwrap();
            assert_eq!(m.metadata.message_type, MessageType::Response);
        }
    }

    let seed_answer = {
        let q = query_msg(0, "host.test.", RecordType::A);
        let mut m = answer(&q, vec![cname("host.test.", "lb.test."), a("lb.test.", "198.18.2.1", 60)]);
        m.set_edns(Edns::new());
        m.to_vec().unwrap()
    };
    let rng = RefCell::new(rng);
    let hostile = Fake::new(move |q, _| {
        let mut b = seed_answer.clone();
        b[..2].copy_from_slice(&q.metadata.id.to_be_bytes());
        Ok(rng.borrow_mut().mutate(&b))
    });
    for i in 0..5000u16 {
        let reply = resolve(&r, &query(i, "host.test.", RecordType::A), &hostile, now);
        let m = decoded(&reply);
        assert_eq!(m.metadata.id, i);
        assert!(
            [ResponseCode::NoError, ResponseCode::NXDomain, ResponseCode::ServFail].contains(&m.metadata.response_code),
            "{:?}",
            m.metadata.response_code
        );
        assert!(reply.message.as_ref().unwrap().len() <= 512);
    }
}
