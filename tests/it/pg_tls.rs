//! TLS to Postgres (issue 43) against a real server that requires it:
//! pgbouncer with a certificate made for the run (`scripts/postgres tls`),
//! in front of the registry's Postgres. Each `sslmode` does what libpq's
//! does, and each refusal says what to change. (Every other Postgres test
//! in CI connects through the same TLS front with `verify-full`.)

use crate::common;

use common::postgres::{tls_pair, with_database};
use mnemo_host::storage::connect_postgres;

/// `url` with its host and query replaced.
fn variant(tls_url: &str, host: &str, query: &str) -> String {
    let (path, _) = tls_url.split_once('?').expect("the TLS URL has a query");
    let port = path
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.split_once('/'))
        .map(|(port, _)| port)
        .expect("the TLS URL has a port");
    let url = format!("postgres://mnemo@{host}:{port}/postgres");
    if query.is_empty() {
        url
    } else {
        format!("{url}?{query}")
    }
}

fn root_cert(tls_url: &str) -> String {
    tls_url
        .split('&')
        .find_map(|kv| kv.strip_prefix("sslrootcert="))
        .map(str::to_string)
        .expect("the TLS URL names its root certificate")
}

fn error_of(url: &str) -> String {
    match connect_postgres(url) {
        Ok(_) => panic!("{url} connected"),
        Err(e) => format!("{e:#}"),
    }
}

fn works(url: &str) {
    let mut client = connect_postgres(url).unwrap_or_else(|e| panic!("{url}: {e:#}"));
    let one: i32 = client.query_one("SELECT 1", &[]).unwrap().get(0);
    assert_eq!(one, 1);
}

#[test]
fn each_sslmode_does_what_libpq_does() {
    let (tls, plain) = tls_pair();
    let ca = root_cert(&tls);
    // verify-full by the certificate's name, through a store on it.
    works(&tls);
    let fresh = common::postgres::fresh_database();
    let (_, name) = fresh.split('?').next().unwrap().rsplit_once('/').unwrap();
    let store = mnemo_host::storage::PgStore::open(&with_database(&tls, name));
    drop(store.expect("a store (its schema migrated) over verify-full"));

    // The certificate names `localhost` only: by address, verify-full refuses …
    let by_address = variant(
        &tls,
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let e = error_of(&by_address);
    assert!(e.contains("not issued for the host name"), "{e}");
    // … verify-ca (the chain only) and require (no check) accept.
    works(&variant(
        &tls,
        "127.0.0.1",
        &format!("sslmode=verify-ca&sslrootcert={ca}"),
    ));
    works(&variant(&tls, "127.0.0.1", "sslmode=require"));
    // A root store without this CA (the system's) refuses the chain.
    let e = error_of(&variant(
        &tls,
        "localhost",
        "sslmode=verify-full&sslrootcert=system",
    ));
    assert!(e.contains("not signed by a trusted root"), "{e}");

    // Clear text to a server that requires TLS is refused, saying so.
    let e = error_of(&variant(&tls, "localhost", "sslmode=disable"));
    assert!(e.contains("accepts only TLS"), "{e}");
    // prefer (libpq's default) takes TLS where offered and clear text where not.
    works(&variant(&tls, "localhost", "sslmode=prefer"));
    works(&variant(&tls, "localhost", ""));
    works(&plain);
    // require against a server without TLS is refused, saying so.
    let plain_required = format!(
        "{}{}sslmode=require",
        plain,
        if plain.contains('?') { "&" } else { "?" }
    );
    let e = error_of(&plain_required);
    assert!(e.contains("does not offer"), "{e}");

    // A mode libpq does not have, or a root file that is not there.
    let e = error_of(&variant(&tls, "localhost", "sslmode=verify"));
    assert!(e.contains("sslmode=verify is not one of"), "{e}");
    let e = error_of(&variant(
        &tls,
        "localhost",
        "sslmode=verify-full&sslrootcert=/nonexistent/ca.crt",
    ));
    assert!(e.contains("reading sslrootcert /nonexistent/ca.crt"), "{e}");
}
