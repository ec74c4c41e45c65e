"""husk-bench's Python workload: a little of what agent-written scripts do
(JSON, regular expressions, SQLite, hashing), a few hundred milliseconds
natively. Asserts its own results so a broken run cannot pass as fast."""
import hashlib
import json
import re
import sqlite3

records = [{"id": i, "name": f"item-{i}", "tags": ["a", "b", str(i % 7)], "price": i * 1.25} for i in range(20000)]
text = json.dumps(records)
assert json.loads(text) == records

words = re.findall(r"item-(\d+)", text)
assert len(words) == len(records)
assert len(re.sub(r"\d", "#", text)) == len(text)

db = sqlite3.connect(":memory:")
db.execute("create table t (id integer primary key, name text, price real)")
db.executemany("insert into t values (?, ?, ?)", ((r["id"], r["name"], r["price"]) for r in records))
(total,) = db.execute("select sum(price) from t where id % 3 = 0").fetchone()
assert total > 0

h = hashlib.sha256()
for _ in range(64):
    h.update(text.encode()[: 1 << 16])
assert len(h.hexdigest()) == 64
