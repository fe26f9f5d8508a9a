//! `fs/read_text_file` and `fs/write_text_file`: the editor's view of files, unsaved edits
//! included.

use std::path::Path;

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
        let path = path.as_ref();
        require(self.capabilities().read_text_file(), FS_READ_TEXT_FILE, "fs.readTextFile")?;
        absolute("path", path)?;
        let response: ReadTextFileResponse = self
            .call(FS_READ_TEXT_FILE, |session| ReadTextFileRequest::new(session.clone(), path).line(line).limit(limit))
            .await?;
        Ok(response.content)
    }

    /// Writes a text file through the client (`fs/write_text_file`); the client creates it when
    /// missing.
    ///
    /// Fails at once, sending nothing, when the client did not advertise `fs.writeTextFile`
    /// ([`ClientError::Unsupported`]) or `path` is relative ([`ClientError::RelativePath`]).
    pub async fn write_text_file(&self, path: impl AsRef<Path>, content: impl Into<String>) -> Result<(), ClientError> {
        let path = path.as_ref();
        require(self.capabilities().write_text_file(), FS_WRITE_TEXT_FILE, "fs.writeTextFile")?;
        absolute("path", path)?;
        let content = content.into();
        let _: WriteTextFileResponse =
            self.call(FS_WRITE_TEXT_FILE, |session| WriteTextFileRequest::new(session.clone(), path, content)).await?;
        Ok(())
    }
}
