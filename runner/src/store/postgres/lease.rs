//! This process's lease: its row in `acp_owners`, renewed by a heartbeat.
//!
//! Invariants:
//! - Every process using the store has one owner row, with a random id, registered when the store
//!   opens. The sessions it has live name it in `acp_sessions.owner`.
//! - A heartbeat task renews the row every `lease / 5` (an upsert: a row removed meanwhile comes
//!   back). Expiry is computed by the database (`now()`), so clocks of the fleet's machines never
//!   matter.
//! - An owner whose row has expired is dead to everyone else: its sessions may be claimed. After a
//!   `SIGKILL` (or a machine lost) that takes at most `lease` from the last renewal; a process
//!   that exits through [`Lease::retire`] frees its sessions at once.
//! - Rows expired for over an hour are deleted when a store opens (their sessions' `owner`
//!   becomes NULL: nobody has them live).

use std::sync::Arc;
use std::time::Duration;

use tokio::task::AbortHandle;

use super::db::Db;
use crate::store::StoreError;

/// Deletes the rows of owners dead for over an hour (kept that long for messages and for a
/// process that was only stalled).
const FORGET: &str = "DELETE FROM acp_owners WHERE expires_at < now() - interval '1 hour'";

/// One process's owner identity.
#[derive(Debug)]
pub(crate) struct Owner {
    /// The row's key: random, never reused.
    pub(crate) id: String,
    pub(crate) pid: i64,
    pub(crate) host: String,
}

impl Owner {
    pub(crate) fn new() -> Self {
        let mut random = [0u8; 16];
        rand::TryRng::try_fill_bytes(&mut rand::rngs::SysRng, &mut random)
            .expect("the operating system's random source");
        let id = random.iter().fold(String::with_capacity(32), |mut hex, b| {
            use std::fmt::Write as _;
            let _ = write!(hex, "{b:02x}");
            hex
        });
        Self { id, pid: i64::from(std::process::id()), host: host_name() }
    }
}

/// The machine's name, for messages naming a session's holder.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "an unnamed host".to_owned())
}

/// The registered owner row and its heartbeat; dropping it stops the heartbeat (the row then
/// expires within the lease).
pub(crate) struct Lease {
    heartbeat: AbortHandle,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

const RENEW: &str = "INSERT INTO acp_owners (id, expires_at, pid, host)
     VALUES ($1, now() + make_interval(secs => $2), $3, $4)
     ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at";

impl Lease {
    /// Registers `owner` for `lease`, forgets long-dead owners, and starts the heartbeat (on the
    /// current Tokio runtime).
    pub(crate) async fn register(db: &Arc<Db>, owner: &Arc<Owner>, lease: Duration) -> Result<Self, StoreError> {
        renew(db, owner, lease).await?;
        db.run("forget dead owners", &(), |c, ()| Box::pin(async move { c.execute(FORGET, &[]).await })).await?;
        let heartbeat = tokio::spawn(beat(db.clone(), owner.clone(), lease)).abort_handle();
        Ok(Self { heartbeat })
    }

    /// Stops the heartbeat and deletes the owner row: every session this process still owns is
    /// free at once (`ON DELETE SET NULL`).
    pub(crate) async fn retire(&self, db: &Db, owner: &Owner) -> Result<(), StoreError> {
        self.heartbeat.abort();
        db.run("retire this process's lease", owner, |c, owner| {
            Box::pin(async move { c.execute("DELETE FROM acp_owners WHERE id = $1", &[&owner.id]).await })
        })
        .await
        .map(drop)
    }
}

async fn renew(db: &Db, owner: &Owner, lease: Duration) -> Result<(), StoreError> {
    let env = (owner, lease.as_secs_f64());
    db.run("renew this process's lease", &env, |c, (owner, seconds)| {
        Box::pin(async move {
            let statement = c.prepare_cached(RENEW).await?;
            c.execute(&statement, &[&owner.id, seconds, &owner.pid, &owner.host]).await
        })
    })
    .await
    .map(drop)
}

/// Renews the lease every `lease / 5` until aborted; says so (once) when it cannot, and when it
/// can again.
async fn beat(db: Arc<Db>, owner: Arc<Owner>, lease: Duration) {
    let mut interval = tokio::time::interval(lease / 5);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    interval.tick().await;
    let mut failing = false;
    loop {
        interval.tick().await;
        match renew(&db, &owner, lease).await {
            Ok(()) if failing => {
                failing = false;
                tracing::info!(owner = owner.id, "the session store is back: this process's lease is renewed");
            }
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(
                    owner = owner.id,
                    error = %e,
                    "cannot renew this process's lease: its sessions may be taken over by another process \
                     once it expires"
                );
            }
            Ok(()) | Err(_) => {}
        }
    }
}
