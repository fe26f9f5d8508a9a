//! The server's local socket (a Unix-domain socket directory), where libpq looks first when a URL
//! names no server.
//!
//! Invariant: a host of the store's [`Config`] is either a TCP host name or, on Unix only, a
//! socket directory; [`host_name`] names either. On Unix, a URL naming no server reaches the
//! local socket directory of Debian's packages when it exists. Fallback: elsewhere (Windows,
//! where `tokio-postgres` has no Unix-domain sockets) [`local_socket`] finds none, and such a
//! URL goes to `localhost` over TCP, as libpq does there.

use tokio_postgres::Config;
use tokio_postgres::config::Host;

/// Points `config` at the local socket directory when this platform has one and it exists;
/// returns whether it did.
#[cfg(unix)]
pub(super) fn local_socket(config: &mut Config) -> bool {
    const SOCKET_DIR: &str = "/var/run/postgresql";
    let exists = std::path::Path::new(SOCKET_DIR).is_dir();
    if exists {
        config.host_path(SOCKET_DIR);
    }
    exists
}

/// No local socket here (see the module doc).
#[cfg(not(unix))]
pub(super) fn local_socket(_config: &mut Config) -> bool {
    false
}

/// A host as `host=` names it: the host name, or the socket directory.
pub(super) fn host_name(host: &Host) -> String {
    match host {
        Host::Tcp(name) => name.clone(),
        #[cfg(unix)]
        Host::Unix(path) => path.display().to_string(),
    }
}
