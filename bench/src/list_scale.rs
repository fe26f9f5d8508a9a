//! `acp-facade-bench list`: `session/list` of one page from the Rust demo agent with 1,000 and
//! with 1,000,000 sessions in its store, `SQLite` and `PostgreSQL` side by side. The stdio demo
//! has no principal, so it lists the 1,000 sessions without one; the other 999,000 belong to 999
//! principals (1,000 each), as a fleet serving many users would hold. The goal: a page at a
//! million costs at most twice a page at a thousand (the runner reads one page with a keyset
//! query, never the whole catalog).
//!
//! Usage: `acp-facade-bench list --demo PATH --sqlite FILE --postgres URL [--lists N]
//! [--large N]`. The stores are filled directly (the demo migrates the schema first), then each
//! is measured as the median wall time of `--lists` first-page requests and of following the
//! cursor through the thousand sessions (page size 50). Prints the table on stderr.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::{INITIALIZE, Proc, loadavg, median, micros};

const SMALL: u64 = 1_000;

struct Config {
    demo: String,
    sqlite: String,
    postgres: String,
    lists: u64,
    large: u64,
}

fn parse(mut args: impl Iterator<Item = String>) -> Config {
    let (mut sqlite, mut postgres) = (None, None);
    let mut config = Config {
        demo: super::sibling("acp-facade-demo"),
        sqlite: String::new(),
        postgres: String::new(),
        lists: 200,
        large: 1_000_000,
    };
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--demo" => config.demo = value(),
            "--sqlite" => sqlite = Some(value()),
            "--postgres" => postgres = Some(value()),
            "--lists" => config.lists = value().parse().expect("--lists N"),
            "--large" => config.large = value().parse().expect("--large N"),
            other => panic!("unknown argument {other}"),
        }
    }
    config.sqlite = sqlite.expect("--sqlite FILE");
    config.postgres = postgres.expect("--postgres URL");
    assert!(config.lists > 0 && config.large >= SMALL, "--lists must be positive, --large at least {SMALL}");
    config
}

/// Starts the demo on `store` and hangs up: the schema is then current.
fn migrate(config: &Config, store: &str) {
    let mut p = Proc::spawn(&format!("{} --store {store}", config.demo), Duration::from_secs(60));
    p.send(INITIALIZE);
    p.ok_response();
}

/// `n` sessions: the first 1,000 without principal (the demo's), the rest of 999 principals.
fn fill_sqlite(path: &str, n: u64) {
    let conn = rusqlite::Connection::open(path).expect("open the SQLite file");
    let principals = (n / SMALL).max(2) - 1;
    conn.execute_batch("DELETE FROM journal; DELETE FROM sessions;").expect("empty the store");
    conn.execute(
        "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1)
         INSERT INTO sessions (id, cwd, created_at, updated_at, principal)
         SELECT printf('sess_%016x%x', abs(random()), i), '/tmp', '2026-01-01T00:00:00.000Z',
                '2026-01-01T00:00:00.000Z', CASE WHEN i <= 1000 THEN NULL ELSE 'user' || (i % ?2) END FROM k",
        rusqlite::params![i64::try_from(n).expect("n"), i64::try_from(principals).expect("principals")],
    )
    .expect("fill the SQLite store");
    conn.execute_batch("ANALYZE").expect("analyze");
}

fn fill_postgres(url: &str, n: u64) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect");
        tokio::spawn(connection);
        let principals = i64::try_from((n / SMALL).max(2) - 1).expect("principals");
        client.batch_execute("DELETE FROM acp_journal; DELETE FROM acp_sessions;").await.expect("empty the store");
        client
            .execute(
                "INSERT INTO acp_sessions (id, cwd, created_at, updated_at, principal)
                 SELECT 'sess_' || md5(i::text), '/tmp', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z',
                        CASE WHEN i <= 1000 THEN NULL ELSE 'user' || (i % $2::bigint) END
                 FROM generate_series(1, $1::bigint) i",
                &[&i64::try_from(n).expect("n"), &principals],
            )
            .await
            .expect("fill the PostgreSQL store");
        client.batch_execute("VACUUM ANALYZE acp_sessions").await.expect("analyze");
    });
}

/// The median first page, and the median page while following the cursor to the end.
fn measure(config: &Config, store: &str) -> (Duration, Duration) {
    let mut p = Proc::spawn(&format!("{} --store {store} --page-size 50", config.demo), Duration::from_secs(600));
    p.send(INITIALIZE);
    p.ok_response();
    let mut id = 2;
    let mut first = Vec::new();
    for _ in 0..config.lists {
        id += 1;
        let started = Instant::now();
        p.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/list","params":{{}}}}"#));
        p.ok_response();
        first.push(started.elapsed());
    }
    let mut following = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        id += 1;
        let params = cursor.map_or_else(|| serde_json::json!({}), |c| serde_json::json!({"cursor": c}));
        let request = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "session/list", "params": params});
        let started = Instant::now();
        p.send(&request.to_string());
        let response: serde_json::Value = serde_json::from_str(&p.ok_response()).expect("list response");
        following.push(started.elapsed());
        match response["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(following.len(), 20, "1,000 sessions without principal in pages of 50");
    (median(first).expect("lists"), median(following).expect("pages"))
}

pub(crate) fn main(args: impl Iterator<Item = String>) {
    let config = parse(args);
    let load_before = loadavg();
    let mut rows =
        String::from("| store | sessions | first page | a page, following the cursor |\n|---|---:|---:|---:|\n");
    for (name, store) in [("sqlite", config.sqlite.clone()), ("postgres", config.postgres.clone())] {
        migrate(&config, &store);
        for n in [SMALL, config.large] {
            eprintln!("{name}: filling {n} sessions");
            if name == "sqlite" {
                fill_sqlite(&store, n);
            } else {
                fill_postgres(&store, n);
            }
            eprintln!("{name}: listing");
            let (first, page) = measure(&config, &store);
            let _ = writeln!(rows, "| {name} | {n} | {} µs | {} µs |", micros(Some(first)), micros(Some(page)));
        }
    }
    eprintln!("{rows}\nload before: {load_before}; after: {}", loadavg());
}
