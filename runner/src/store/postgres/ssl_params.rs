//! The TLS parameters of a connection string, taken out of it before `tokio-postgres` parses the
//! rest: that crate knows `sslmode` only as `disable`, `prefer` and `require`, and refuses
//! `sslrootcert` as an unknown option.
//!
//! Invariants: both forms libpq accepts are read — a `postgres://` (or `postgresql://`) URL's query
//! parameters, percent-decoded, and a `key=value` string, its quoted values and backslash escapes
//! read as `tokio-postgres` reads them. Every other parameter is handed on as it was written. The
//! last occurrence of a parameter wins, as in libpq. A value that does not decode is an error
//! naming its parameter. A `key=value` string this reader cannot follow is handed on whole, for
//! `tokio-postgres` to report.

/// The parameter naming the TLS mode.
pub(crate) const SSLMODE: &str = "sslmode";
/// The parameter naming the file of root certificates.
pub(crate) const SSLROOTCERT: &str = "sslrootcert";

/// The TLS parameters a connection string named, undecided (see `tls` for their meaning).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SslParams {
    /// `sslmode`, as written.
    pub(crate) mode: Option<String>,
    /// `sslrootcert`, as written.
    pub(crate) root_cert: Option<String>,
}

impl SslParams {
    /// Keeps `value` when `key` is one of the TLS parameters; says whether it was.
    fn take(&mut self, key: &str, value: String) -> bool {
        match key {
            SSLMODE => self.mode = Some(value),
            SSLROOTCERT => self.root_cert = Some(value),
            _ => return false,
        }
        true
    }
}

/// `url` without its TLS parameters, and those parameters. Fails (with a message naming the
/// parameter) only when a URL's TLS parameter does not percent-decode to UTF-8.
pub(crate) fn take_ssl_params(url: &str) -> Result<(String, SslParams), String> {
    match ["postgres://", "postgresql://"].iter().find(|prefix| url.starts_with(*prefix)) {
        Some(prefix) => from_url(url, prefix.len()),
        None => Ok(from_key_values(url)),
    }
}

/// A URL: its query is what follows the first `?` after the credentials (which end at the first
/// `@`), parameters separated by `&`.
fn from_url(url: &str, prefix: usize) -> Result<(String, SslParams), String> {
    let after_credentials = url[prefix..].find('@').map_or(prefix, |at| prefix + at + 1);
    let Some(question) = url[after_credentials..].find('?').map(|q| after_credentials + q) else {
        return Ok((url.to_owned(), SslParams::default()));
    };
    let mut params = SslParams::default();
    let mut kept = Vec::new();
    for pair in url[question + 1..].split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = percent_decode(key).unwrap_or_default();
        if name == SSLMODE || name == SSLROOTCERT {
            let value = percent_decode(value).ok_or_else(|| format!("{name} is not percent-encoded UTF-8"))?;
            params.take(&name, value);
        } else {
            kept.push(pair);
        }
    }
    let mut rest = url[..question].to_owned();
    if !kept.is_empty() {
        rest.push('?');
        rest.push_str(&kept.join("&"));
    }
    Ok((rest, params))
}

/// A `key=value` string: the text of each TLS parameter is cut out, the rest kept as written.
fn from_key_values(text: &str) -> (String, SslParams) {
    let Some(pairs) = key_values(text) else {
        return (text.to_owned(), SslParams::default());
    };
    let mut params = SslParams::default();
    let mut rest = String::with_capacity(text.len());
    let mut from = 0;
    for (key, value, span) in pairs {
        if params.take(key, value) {
            rest.push_str(&text[from..span.start]);
            from = span.end;
        }
    }
    rest.push_str(&text[from..]);
    (rest, params)
}

/// Each `key = value` of `text` with the byte range it spans, or `None` when `text` is not such
/// a string.
fn key_values(text: &str) -> Option<Vec<(&str, String, std::ops::Range<usize>)>> {
    let mut pairs = Vec::new();
    let mut it = text.char_indices().peekable();
    let skip_ws = |it: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
    };
    loop {
        skip_ws(&mut it);
        let Some(&(start, _)) = it.peek() else { return Some(pairs) };
        while it.next_if(|&(_, c)| !c.is_whitespace() && c != '=').is_some() {}
        let key_end = it.peek().map_or(text.len(), |&(i, _)| i);
        skip_ws(&mut it);
        it.next_if(|&(_, c)| c == '=')?;
        skip_ws(&mut it);
        let mut value = String::new();
        if it.next_if(|&(_, c)| c == '\'').is_some() {
            loop {
                match it.next()? {
                    (_, '\'') => break,
                    (_, '\\') => value.push(it.next()?.1),
                    (_, c) => value.push(c),
                }
            }
        } else {
            while let Some((_, c)) = it.next_if(|(_, c)| !c.is_whitespace()) {
                if c == '\\' {
                    if let Some((_, escaped)) = it.next() {
                        value.push(escaped);
                    }
                } else {
                    value.push(c);
                }
            }
        }
        let end = it.peek().map_or(text.len(), |&(i, _)| i);
        pairs.push((&text[start..key_end], value, start..end));
    }
}

/// `text` with its `%XX` escapes decoded, or `None` when that is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::{SslParams, take_ssl_params};

    fn params(mode: Option<&str>, root_cert: Option<&str>) -> SslParams {
        SslParams { mode: mode.map(str::to_owned), root_cert: root_cert.map(str::to_owned) }
    }

    #[test]
    fn a_urls_tls_parameters_are_taken_out_and_the_rest_kept() {
        let (rest, taken) = take_ssl_params(
            "postgres://u:p%3Fw@db.example:5432/sessions?sslmode=verify-full&options=-c%20x%3Dy&sslrootcert=%2Fetc%2Froot.pem",
        )
        .expect("url");
        assert_eq!(rest, "postgres://u:p%3Fw@db.example:5432/sessions?options=-c%20x%3Dy");
        assert_eq!(taken, params(Some("verify-full"), Some("/etc/root.pem")));
        let (rest, taken) = take_ssl_params("postgresql://db/x?sslmode=require").expect("url");
        assert_eq!((rest.as_str(), taken), ("postgresql://db/x", params(Some("require"), None)));
        // The last one wins; a `?` in the password is not the query.
        let (rest, taken) = take_ssl_params("postgres://u:a?b@db/x?sslmode=disable&sslmode=prefer").expect("url");
        assert_eq!((rest.as_str(), taken), ("postgres://u:a?b@db/x", params(Some("prefer"), None)));
        let (rest, taken) = take_ssl_params("postgres://db/x").expect("url");
        assert_eq!((rest.as_str(), taken), ("postgres://db/x", SslParams::default()));
        let err = take_ssl_params("postgres://db/x?sslrootcert=%FF").expect_err("not UTF-8");
        assert!(err.starts_with("sslrootcert "), "{err}");
    }

    #[test]
    fn a_key_value_strings_tls_parameters_are_taken_out_and_the_rest_kept() {
        let (rest, taken) =
            take_ssl_params("host=db.example sslmode = verify-ca  sslrootcert='/my certs/it\\'s.pem' dbname=x")
                .expect("key=value");
        assert_eq!(rest, "host=db.example    dbname=x");
        assert_eq!(taken, params(Some("verify-ca"), Some("/my certs/it's.pem")));
        let (rest, taken) = take_ssl_params("sslrootcert=a\\ b").expect("key=value");
        assert_eq!((rest.as_str(), taken), ("", params(None, Some("a b"))));
        // Not a key=value string: handed on whole, for tokio-postgres to report.
        let (rest, taken) = take_ssl_params("host='db sslmode=require").expect("unterminated");
        assert_eq!((rest.as_str(), taken), ("host='db sslmode=require", SslParams::default()));
    }
}
