//! The `PostgreSQL` store over TLS, against the test server's TCP port (which serves TLS with a
//! certificate for `localhost` and `127.0.0.1`, signed by a root made for the run; see
//! scripts/lib/postgres.sh): each `sslmode` connects — or refuses to — as libpq's does, and the
//! server's own view (`pg_stat_ssl`) says whether the store's connections are encrypted. Without
//! a test server each test says so and does nothing (a failure when it is required).

use crate::common;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use acp_facade_runner::{PostgresOptions, PostgresStore, Store, StoreError};
use common::stores::{TempDir, postgres_base_url, postgres_tls, raw_client};

use super::store::{record, sid};

/// `url` with `params` (`k=v&k=v`) added: to its query, or for a `key=value` string to its end.
fn with(url: &str, params: &str) -> String {
    if url.starts_with("postgres://") {
        let separator = if url.contains('?') { '&' } else { '?' };
        format!("{url}{separator}{params}")
    } else {
        format!("{url} {}", params.replace('&', " "))
    }
}

/// An `application_name` no other connection uses, to find the store's connections on the server.
fn application_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!("acp_tls_{}_{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

async fn open(url: &str) -> Result<PostgresStore, StoreError> {
    PostgresStore::connect_with(
        url,
        PostgresOptions::default().lease(Duration::from_secs(1)).timeout(Duration::from_secs(10)),
    )
    .await
}

/// Opens a store on `url`, writes and reads a session through it, and returns whether each of
/// its connections is encrypted, by the server's account (at least one connection).
async fn encrypted(url: &str) -> bool {
    let name = application_name();
    let store = open(&with(url, &format!("application_name={name}")))
        .await
        .unwrap_or_else(|e| panic!("cannot open the store on {url}: {e}"));
    store.create_session(&record(&name)).await.expect("create a session");
    assert!(store.session(&sid(&name)).await.expect("read it").is_some());
    let base = postgres_base_url().expect("the test server");
    let rows = raw_client(&base)
        .await
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = $1",
            &[&name],
        )
        .await
        .expect("pg_stat_ssl");
    store.close().await.expect("close");
    let ssl: Vec<bool> = rows.iter().map(|row| row.get(0)).collect();
    assert!(!ssl.is_empty(), "no connection of the store's on the server");
    assert!(ssl.iter().all(|&s| s == ssl[0]), "some connections encrypted, some not: {ssl:?}");
    ssl[0]
}

/// The error of opening a store on `url`.
async fn refused(url: &str) -> String {
    match open(url).await {
        Ok(_) => panic!("the store opened on {url}"),
        Err(e) => e.to_string(),
    }
}

/// The TCP URL with `localhost` replaced: `host=HOST hostaddr=127.0.0.1`, in the `key=value` form.
fn reached_as(url: &str, host: &str) -> String {
    let (_, rest) = url.split_once("@localhost:").expect("postgres://acp@localhost:PORT/postgres?…");
    let (port, rest) = rest.split_once('/').expect("a database");
    let (dbname, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut text = format!("user=acp host={host} hostaddr=127.0.0.1 port={port} dbname={dbname}");
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').expect("key=value");
        let value = value.replace("%20", " ").replace("%3D", "=");
        let _ = write!(text, " {key}='{value}'");
    }
    text
}

#[tokio::test]
async fn require_encrypts_without_checking_the_certificate() {
    let Some((url, _)) = postgres_tls().await else { return };
    assert!(encrypted(&with(&url, "sslmode=require")).await);
    // Not even its name: the server is reached as a host its certificate does not name.
    assert!(encrypted(&with(&reached_as(&url, "wrong.example"), "sslmode=require")).await);
}

#[tokio::test]
async fn prefer_the_default_encrypts_when_the_server_offers_tls() {
    let Some((url, _)) = postgres_tls().await else { return };
    assert!(encrypted(&url).await);
    assert!(encrypted(&with(&url, "sslmode=prefer")).await);
}

#[tokio::test]
async fn disable_connects_in_plain_text() {
    let Some((url, _)) = postgres_tls().await else { return };
    assert!(!encrypted(&with(&url, "sslmode=disable")).await);
}

#[tokio::test]
async fn verify_ca_checks_the_chain_but_not_the_name() {
    let Some((url, root)) = postgres_tls().await else { return };
    assert!(encrypted(&with(&url, &format!("sslmode=verify-ca&sslrootcert={root}"))).await);
    // The key=value form, reached by a name the certificate does not hold.
    let other_name = with(&reached_as(&url, "wrong.example"), &format!("sslmode=verify-ca&sslrootcert={root}"));
    assert!(encrypted(&other_name).await);
}

#[tokio::test]
async fn verify_full_checks_the_chain_and_the_name() {
    let Some((url, root)) = postgres_tls().await else { return };
    assert!(encrypted(&with(&url, &format!("sslmode=verify-full&sslrootcert={root}"))).await);
    // The certificate names 127.0.0.1 too.
    let by_address = url.replace("@localhost:", "@127.0.0.1:");
    assert!(encrypted(&with(&by_address, &format!("sslmode=verify-full&sslrootcert={root}"))).await);
}

#[tokio::test]
async fn verify_full_refuses_a_certificate_for_another_name() {
    let Some((url, root)) = postgres_tls().await else { return };
    let wrong = with(&reached_as(&url, "wrong.example"), &format!("sslmode=verify-full&sslrootcert={root}"));
    let err = refused(&wrong).await;
    assert!(err.contains("certificate not valid for name \"wrong.example\""), "{err}");
    assert!(err.contains("host=wrong.example") && err.contains("sslmode=verify-full"), "{err}");
}

#[tokio::test]
async fn verify_ca_and_verify_full_refuse_a_certificate_of_another_root() {
    let Some((url, _)) = postgres_tls().await else { return };
    let dir = TempDir::new("tls-root");
    let other = dir.path().join("other-root.pem");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().expect("key");
    std::fs::write(&other, params.self_signed(&key).expect("root").pem()).expect("write the root");
    for mode in ["verify-ca", "verify-full"] {
        let err = refused(&with(&url, &format!("sslmode={mode}&sslrootcert={}", other.display()))).await;
        assert!(err.contains("invalid peer certificate: UnknownIssuer"), "{mode}: {err}");
    }
    // Without sslrootcert the built-in (Mozilla) roots are used: they do not know the test root.
    let err = refused(&with(&url, "sslmode=verify-full")).await;
    assert!(err.contains("invalid peer certificate: UnknownIssuer"), "{err}");
    // A root file given with require is checked, as by verify-ca (libpq's rule).
    let err = refused(&with(&url, &format!("sslmode=require&sslrootcert={}", other.display()))).await;
    assert!(err.contains("invalid peer certificate: UnknownIssuer"), "{err}");
}

#[tokio::test]
async fn a_unix_socket_needs_no_tls_whatever_the_mode() {
    let Some(_) = postgres_tls().await else { return };
    let Some(base) = common::stores::postgres_url().await else { return };
    assert!(!encrypted(&with(&base, "sslmode=verify-full&sslrootcert=system")).await);
}

#[tokio::test]
async fn bad_tls_parameters_are_refused_naming_them_and_never_the_password() {
    let Some((url, _)) = postgres_tls().await else { return };
    let with_password = url.replace("acp@", "acp:s3cret@");
    for (params, expected) in [
        (
            "sslmode=verify",
            "invalid PostgreSQL URL: sslmode \"verify\" is not one of disable, prefer, require, verify-ca, verify-full",
        ),
        ("sslmode=allow", "invalid PostgreSQL URL: sslmode \"allow\""),
        ("sslmode=require&sslrootcert=system", "invalid PostgreSQL URL: sslrootcert=system needs sslmode=verify-full"),
        (
            "sslmode=verify-ca&sslrootcert=/nonexistent/root.pem",
            "sslrootcert /nonexistent/root.pem: not a readable PEM file",
        ),
    ] {
        let err = refused(&with(&with_password, params)).await;
        assert!(err.contains(expected), "{params}: {err}");
        assert!(!err.contains("s3cret"), "{params}: {err}");
    }
}
