//! The demo on `--store postgres://…?sslmode=verify-full&sslrootcert=…`: sessions kept in
//! `PostgreSQL` over TLS, the server's certificate checked against the test root — one created
//! over stdio is listed by the process that made it and by the next one — and a demo whose roots
//! do not know the server's certificate refuses to start, saying why.
//!
//! The server is the test one (scripts/lib/postgres.sh: `ACP_FACADE_TEST_POSTGRES_TCP_URL` and
//! `ACP_FACADE_TEST_POSTGRES_ROOT_CERT`); without it the test says so and does nothing — a failure
//! when `ACP_FACADE_TEST_POSTGRES_REQUIRED=1`.

mod common;

use std::process::{Command, Stdio};

use common::{DEMO, Demo};
use serde_json::{Value, json};

/// The test server over TCP and the PEM file of its certificate's root, or `None` (announced).
fn server() -> Option<(String, String)> {
    const TCP_URL_VAR: &str = "ACP_FACADE_TEST_POSTGRES_TCP_URL";
    const ROOT_CERT_VAR: &str = "ACP_FACADE_TEST_POSTGRES_ROOT_CERT";
    let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
    if let (Some(url), Some(root)) = (var(TCP_URL_VAR), var(ROOT_CERT_VAR)) {
        return Some((url, root));
    }
    assert!(
        std::env::var("ACP_FACADE_TEST_POSTGRES_REQUIRED").as_deref() != Ok("1"),
        "ACP_FACADE_TEST_POSTGRES_REQUIRED=1 but {TCP_URL_VAR} or {ROOT_CERT_VAR} is not set"
    );
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("\n!! {TCP_URL_VAR} is not set: the demo over PostgreSQL with TLS is NOT tested\n\n").as_bytes(),
    );
    None
}

/// A schema of its own for this run, created by the store on first use (named so that the
/// runner's tests drop it once it is an hour old).
fn schema_param() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
    format!("options=-c%20search_path%3Dacp_test_{now}_{}_0", std::process::id())
}

fn listed_ids(demo: &mut Demo) -> Vec<String> {
    let list = demo.call_ok("session/list", json!({}));
    list["sessions"].as_array().expect("sessions").iter().map(|s| s["sessionId"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn the_demo_keeps_its_sessions_in_postgres_over_verified_tls() {
    let Some((url, root)) = server() else { return };
    let store = format!("{url}?sslmode=verify-full&sslrootcert={root}&{}", schema_param());
    let mut demo = Demo::initialized(&["--store", &store]);
    let id = demo.new_session();
    let (response, _) = demo.prompt_done(&id, "hello over tls");
    assert_eq!(response["result"]["stopReason"], Value::from("end_turn"), "{response}");
    assert_eq!(listed_ids(&mut demo), std::slice::from_ref(&id));
    assert!(demo.hang_up(), "the demo exits cleanly");
    // The next process on the same store lists it too.
    let mut next = Demo::initialized(&["--store", &store]);
    assert_eq!(listed_ids(&mut next), [id]);
    assert!(next.hang_up());
}

#[test]
fn the_demo_refuses_a_server_its_roots_do_not_vouch_for() {
    let Some((url, _)) = server() else { return };
    // Without sslrootcert, verify-full checks against the built-in (Mozilla) roots, which do not
    // know the test root.
    let store = format!("{url}?sslmode=verify-full&{}", schema_param());
    let out = Command::new(DEMO)
        .args(["--store", &store])
        .stdin(Stdio::null())
        .env_remove("ACP_FACADE_LOG")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {DEMO}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing but protocol on stdout");
    assert!(stderr.contains("cannot open the session store"), "{stderr}");
    assert!(stderr.contains("invalid peer certificate: UnknownIssuer"), "{stderr}");
    assert!(stderr.contains("sslmode=verify-full"), "{stderr}");
}
