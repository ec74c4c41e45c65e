//! `husk audit export --format ocsf`: each record of a log as an OCSF
//! 1.1 event. Processes map to Process Activity (1007), file records to
//! File System Activity (1001), connections to Network Activity (4001),
//! resolver queries to DNS Activity (4003), and the rest (the sandbox's
//! lifecycle, packages, limits, refusals) to Application Lifecycle
//! (6002). Every event carries the base attributes (class_uid,
//! category_uid, activity_id, type_uid, time, severity_id, metadata with
//! version and product) and its class's required objects; the record as
//! husk wrote it is kept under `unmapped`.

use serde_json::{json, Value};

/// The OCSF schema version the events follow.
pub(crate) const VERSION: &str = "1.1.0";

const INFORMATIONAL: u64 = 1;
const MEDIUM: u64 = 3;
const OTHER: u64 = 99;

/// The event of one record (a log line, parsed); None for a line that is
/// not a record (no `type`).
pub fn event(record: &Value) -> Option<Value> {
    let kind = record["type"].as_str()?;
    let ts = record["ts"].as_str().and_then(super::epoch_millis).unwrap_or_default();
    let sandbox = record["sandbox"].as_str().unwrap_or_default();
    let pid = record["pid"].as_i64().unwrap_or_default();
    let (class_uid, activity_id, severity_id, mut event) = match kind {
        "process.exec" | "process.fork" | "process.exit" => process(kind, record),
        k if k.starts_with("file.") => file(k, record),
        "net.connect" | "net.denied" | "net.close" => network(kind, record),
        "net.dns" => dns(record),
        _ => application(kind, record),
    };
    let category_uid = class_uid / 1000;
    let base = json!({
        "class_uid": class_uid,
        "category_uid": category_uid,
        "activity_id": activity_id,
        "type_uid": class_uid * 100 + activity_id,
        "time": ts,
        "severity_id": severity_id,
        "message": kind,
        "metadata": {
            "version": VERSION,
            "product": {"name": "husk", "vendor_name": "husk", "version": env!("CARGO_PKG_VERSION")},
            "log_name": "audit",
            "sequence": record["seq"],
            "uid": record["prev"],
        },
        "device": {"type_id": 6, "hostname": sandbox, "uid": sandbox},
        "actor": {"process": {"pid": pid}},
        "unmapped": record,
    });
    if let (Some(e), Value::Object(b)) = (event.as_object_mut(), base) {
        for (k, v) in b {
            e.entry(k).or_insert(v);
        }
    }
    Some(event)
}

fn process(kind: &str, r: &Value) -> (u64, u64, u64, Value) {
    let argv: Vec<&str> =
        r["argv"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let (activity, pid, parent) = match kind {
        "process.exec" => (1, &r["pid"], &r["ppid"]),
        // A fork launches the child, by the parent.
        "process.fork" => (1, &r["child"], &r["pid"]),
        _ => (2, &r["pid"], &Value::Null),
    };
    let mut process = json!({"pid": pid});
    if kind == "process.exec" {
        process["cmd_line"] = json!(argv.join(" "));
        process["file"] =
            json!({"path": r["exe"], "name": r["exe"].as_str().and_then(|p| p.rsplit('/').next()), "type_id": 1});
        process["user"] = json!({"uid": r["uid"].to_string()});
        process["parent_process"] = json!({"pid": parent});
    }
    let mut e = json!({"process": process});
    if kind == "process.fork" {
        e["actor"] = json!({"process": {"pid": parent}});
    }
    if kind == "process.exit" {
        e["exit_code"] = r.get("status").cloned().unwrap_or(Value::Null);
    }
    (1007, activity, INFORMATIONAL, e)
}

fn file(kind: &str, r: &Value) -> (u64, u64, u64, Value) {
    // Create 1, Read 2, Update 3, Delete 4, Rename 5, Set Attributes 6,
    // Set Security 7.
    let activity = match kind {
        "file.create" | "file.link" | "file.symlink" => 1,
        "file.read" => 2,
        "file.write" | "file.truncate" => 3,
        "file.unlink" => 4,
        "file.rename" => 5,
        "file.chmod" | "file.chown" => 7,
        _ => OTHER,
    };
    let path = r["path"].as_str().or(r["from"].as_str()).unwrap_or_default();
    let name = path.rsplit('/').next().unwrap_or_default();
    let mut e = json!({"file": {"path": path, "name": name, "type_id": 1}});
    if let Some(to) = r["to"].as_str() {
        e["file_result"] = json!({"path": to, "name": to.rsplit('/').next(), "type_id": 1});
    }
    (1001, activity, INFORMATIONAL, e)
}

fn endpoint(r: &Value) -> Value {
    let mut ep = json!({"ip": r["address"], "port": r["port"]});
    if let Some(name) = r["name"].as_str() {
        ep["hostname"] = json!(name);
    }
    ep
}

fn network(kind: &str, r: &Value) -> (u64, u64, u64, Value) {
    // Open 1, Close 2, Refuse 5.
    let (activity, severity) = match kind {
        "net.connect" => (1, INFORMATIONAL),
        "net.close" => (2, INFORMATIONAL),
        _ => (5, MEDIUM),
    };
    let e = json!({
        "src_endpoint": {"uid": r["sandbox"]},
        "dst_endpoint": endpoint(r),
        "connection_info": {"protocol_name": r["protocol"], "direction_id": 2},
    });
    (4001, activity, severity, e)
}

fn dns(r: &Value) -> (u64, u64, u64, Value) {
    let answers: Vec<Value> = r["answers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(|t| {
                    let (ty, data) = t.split_once(' ').unwrap_or((t, ""));
                    json!({"type": ty, "rdata": data})
                })
                .collect()
        })
        .unwrap_or_default();
    let severity = if r["verdict"] == "allowed" { INFORMATIONAL } else { MEDIUM };
    // Response 2: the record is the resolver's answer to the query.
    let e = json!({
        "query": {"hostname": r["name"], "type": r["qtype"], "class": "IN"},
        "answers": answers,
        "rcode": r["rcode"],
        "src_endpoint": {"uid": r["sandbox"]},
        "dst_endpoint": {"hostname": "sandbox resolver"},
    });
    (4003, 2, severity, e)
}

fn application(kind: &str, r: &Value) -> (u64, u64, u64, Value) {
    // Install 1, Start 3, Stop 4, Other 99.
    let (activity, severity) = match kind {
        "sandbox.create" | "sandbox.resume" => (3, INFORMATIONAL),
        "sandbox.start" => (3, INFORMATIONAL),
        "sandbox.exit" | "sandbox.pause" | "sandbox.delete" => (4, INFORMATIONAL),
        "package.install" => (1, INFORMATIONAL),
        _ => (OTHER, MEDIUM),
    };
    let app = match kind {
        "package.install" => json!({"name": r["package"], "version": r["version"], "vendor_name": r["manager"]}),
        _ => json!({"name": "husk sandbox", "uid": r["sandbox"], "vendor_name": "husk"}),
    };
    (6002, activity, severity, json!({"app": app}))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The attributes every event has, and those its class requires.
    fn assert_required(e: &Value) {
        for k in ["class_uid", "category_uid", "activity_id", "type_uid", "time", "severity_id"] {
            assert!(e[k].is_u64(), "{k}: {e}");
        }
        assert_eq!(e["type_uid"], e["class_uid"].as_u64().unwrap() * 100 + e["activity_id"].as_u64().unwrap());
        assert_eq!(e["metadata"]["version"], VERSION);
        assert_eq!(e["metadata"]["product"]["name"], "husk");
        let class: &[&str] = match e["class_uid"].as_u64().unwrap() {
            1007 => &["actor", "device", "process"],
            1001 => &["actor", "device", "file"],
            4001 => &["src_endpoint", "dst_endpoint"],
            4003 => &["query"],
            6002 => &["app"],
            other => panic!("class {other}"),
        };
        for k in class {
            assert!(e[k].is_object(), "{k}: {e}");
        }
    }

    #[test]
    fn each_kind_of_record_maps_to_its_class_with_the_required_attributes() {
        let base = |t: &str, extra: Value| {
            let mut r = json!({"ts": "2026-01-01T00:00:00.5Z", "sandbox": "sb", "seq": 1, "type": t, "prev": "00"});
            r.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            r
        };
        let cases = [
            (
                base(
                    "process.exec",
                    json!({"pid": 2, "ppid": 1, "uid": 0, "exe": "/bin/sh", "argv": ["sh", "-c", "x"]}),
                ),
                1007,
                1,
            ),
            (base("process.exit", json!({"pid": 2, "status": 3})), 1007, 2),
            (base("process.fork", json!({"pid": 1, "child": 2})), 1007, 1),
            (base("file.rename", json!({"pid": 2, "from": "/etc/a", "to": "/etc/b"})), 1001, 5),
            (base("file.chown", json!({"pid": 2, "path": "/etc/a", "uid": 1})), 1001, 7),
            (base("net.connect", json!({"pid": 2, "protocol": "tcp", "address": "198.18.0.2", "port": 80})), 4001, 1),
            (base("net.denied", json!({"pid": 2, "protocol": "tcp", "address": "10.0.0.1", "port": 80})), 4001, 5),
            (
                base(
                    "net.dns",
                    json!({"name": "a.test", "qtype": "A", "verdict": "allowed", "rcode": "NOERROR", "answers": ["A 1.2.3.4"]}),
                ),
                4003,
                2,
            ),
            (base("sandbox.exit", json!({"reason": "exited", "status": 0})), 6002, 4),
            (base("package.install", json!({"package": "p", "version": "1", "manager": "pip"})), 6002, 1),
            (base("limit.memory", json!({"pid": 2})), 6002, 99),
        ];
        for (record, class, activity) in cases {
            let e = event(&record).unwrap();
            assert_required(&e);
            assert_eq!((e["class_uid"].as_u64(), e["activity_id"].as_u64()), (Some(class), Some(activity)), "{e}");
            assert_eq!(e["time"], 1_767_225_600_500u64);
            assert_eq!(e["unmapped"], record);
        }
        assert!(event(&json!({"no": "type"})).is_none());
    }
}
