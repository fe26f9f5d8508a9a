//! `fs/read_text_file` and `fs/write_text_file`: the editor's view of files, unsaved edits
//! included.

use std::path::Path;

use futures::future::BoxFuture;

use super::error::ClientError;
use super::handle::{Client, absolute, require};
use super::method::{FS_READ_TEXT_FILE, FS_WRITE_TEXT_FILE};
use crate::acp::{ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest, WriteTextFileResponse};

impl Client {
    /// Reads a text file through the client (`fs/read_text_file`): the editor's buffer when the
    /// file is open, unsaved edits included. `line` is the 1-based first line, `limit` the most
    /// lines to read.
    ///
    /// Fails at once, sending nothing, when the client did not advertise `fs.readTextFile`
    /// ([`ClientError::Unsupported`]) or `path` is relative ([`ClientError::RelativePath`]); a
    /// missing file is conventionally the client's `-32002` ([`ClientError::Rejected`]).
    ///
    /// ```no_run
    /// # async fn demo(client: &acp_facade::client::Client) -> Result<(), acp_facade::client::ClientError> {
    /// // Lines 10 to 29 of the file.
    /// let excerpt = client.read_text_file("/srv/app/main.rs", Some(10), Some(20)).await?;
    /// # let _ = excerpt; Ok(()) }
    /// ```
    pub async fn read_text_file(
        &self,
        path: impl AsRef<Path>,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, ClientError> {
        self.start_read_text_file(path, line, limit)?.await
    }

    /// [`Client::read_text_file`], sent from the calling thread before this returns (when the
    /// updates of what the turn published before are out; else as soon as they are, while the
    /// returned future runs). The future awaits the content; dropping it abandons the call.
    ///
    /// For code that cannot await where it calls — a language binding's synchronous call from
    /// the host's thread, which should not wait for a hand-over to the core's thread to send.
    ///
    /// # Errors
    /// As [`Client::read_text_file`]; the checks made before anything is sent fail here, the
    /// rest in the future.
    pub fn start_read_text_file(
        &self,
        path: impl AsRef<Path>,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<BoxFuture<'static, Result<String, ClientError>>, ClientError> {
        let path = path.as_ref();
        require(self.capabilities().read_text_file(), FS_READ_TEXT_FILE, "fs.readTextFile")?;
        absolute("path", path)?;
        self.begin_call(
            FS_READ_TEXT_FILE,
            |session| ReadTextFileRequest::new(session.clone(), path).line(line).limit(limit),
            |response: ReadTextFileResponse| response.content,
        )
    }

    /// Writes a text file through the client (`fs/write_text_file`); the client creates it when
    /// missing.
    ///
    /// Fails at once, sending nothing, when the client did not advertise `fs.writeTextFile`
    /// ([`ClientError::Unsupported`]) or `path` is relative ([`ClientError::RelativePath`]).
    pub async fn write_text_file(&self, path: impl AsRef<Path>, content: impl Into<String>) -> Result<(), ClientError> {
        self.start_write_text_file(path, content)?.await
    }

    /// [`Client::write_text_file`], sent from the calling thread before this returns, as
    /// [`Client::start_read_text_file`] is.
    ///
    /// # Errors
    /// As [`Client::write_text_file`]; the checks made before anything is sent fail here, the
    /// rest in the future.
    pub fn start_write_text_file(
        &self,
        path: impl AsRef<Path>,
        content: impl Into<String>,
    ) -> Result<BoxFuture<'static, Result<(), ClientError>>, ClientError> {
        let path = path.as_ref();
        require(self.capabilities().write_text_file(), FS_WRITE_TEXT_FILE, "fs.writeTextFile")?;
        absolute("path", path)?;
        let content = content.into();
        self.begin_call(
            FS_WRITE_TEXT_FILE,
            |session| WriteTextFileRequest::new(session.clone(), path, content),
            |_: WriteTextFileResponse| (),
        )
    }
}
