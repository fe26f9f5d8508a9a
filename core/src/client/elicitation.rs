//! `elicitation/create` and `elicitation/complete` (schema v1.21.0): asking the user, through a
//! form the editor renders or a URL it opens.
//!
//! Form mode must not collect secrets (passwords, API keys, tokens, payment data): sensitive input
//! goes through URL mode, and when the client has no URL mode the agent takes another safe route —
//! it never falls back to a form. A form answer is checked against the schema that was asked for
//! (required fields present, values of their property's type); one that does not match is a
//! [`ClientError::Protocol`] error.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::ClientError;
use super::handle::{Client, require};
use super::method::{ELICITATION_COMPLETE, ELICITATION_CREATE};
use crate::acp::{
    CompleteElicitationNotification, CreateElicitationRequest, CreateElicitationResponse, ElicitationAction,
    ElicitationContentValue, ElicitationFormMode, ElicitationId, ElicitationPropertySchema, ElicitationSchema,
    ElicitationSessionScope, ElicitationUrlMode,
};

/// How the user answered an elicitation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitationAnswer {
    /// `accept`: the form's values by field name (none for a URL: accepting only means the
    /// user agreed to open it).
    Accept(BTreeMap<String, ElicitationContentValue>),
    /// `decline`: the user said no.
    Decline,
    /// `cancel`: the user dismissed the question without answering.
    Cancel,
    /// An action this schema version does not define (never to be taken as a known one).
    Other(String),
}

impl ElicitationAnswer {
    fn from_action(action: ElicitationAction) -> Self {
        match action {
            ElicitationAction::Accept(accept) => Self::Accept(accept.content.unwrap_or_default()),
            ElicitationAction::Decline => Self::Decline,
            ElicitationAction::Cancel => Self::Cancel,
            ElicitationAction::Other(other) => Self::Other(other.action),
            // A future variant of the crate: as unknown as `Other`.
            _ => Self::Other(String::from("unknown")),
        }
    }
}

/// The outcome of a URL elicitation: its id (for [`Client::complete_elicitation`]) and the
/// user's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct UrlElicitation {
    /// The elicitation's id, unique on the connection.
    pub elicitation_id: ElicitationId,
    /// How the user answered.
    pub answer: ElicitationAnswer,
}

impl Client {
    /// Asks the user to fill in a form (`elicitation/create`, form mode) described by `schema`;
    /// waits for the answer. Never for secrets (see the module doc).
    ///
    /// Fails at once, sending nothing, when the client did not advertise `elicitation.form`
    /// ([`ClientError::Unsupported`]).
    ///
    /// ```no_run
    /// # async fn demo(client: &acp_facade::client::Client) -> Result<(), acp_facade::client::ClientError> {
    /// use acp_facade::acp::ElicitationSchema;
    /// use acp_facade::client::ElicitationAnswer;
    ///
    /// let schema = ElicitationSchema::new().string("branch", true);
    /// match client.elicit_form("Which branch should I push to?", schema).await? {
    ///     ElicitationAnswer::Accept(values) => println!("{:?}", values.get("branch")),
    ///     _ => println!("no answer"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn elicit_form(
        &self,
        message: impl Into<String>,
        schema: ElicitationSchema,
    ) -> Result<ElicitationAnswer, ClientError> {
        require(self.capabilities().elicitation_form(), ELICITATION_CREATE, "elicitation.form")?;
        let message = message.into();
        let checked = schema.clone();
        let response: CreateElicitationResponse = self
            .call(ELICITATION_CREATE, |session| {
                CreateElicitationRequest::new(
                    ElicitationFormMode::new(ElicitationSessionScope::new(session.clone()), schema),
                    message,
                )
            })
            .await?;
        let answer = ElicitationAnswer::from_action(response.action);
        if let ElicitationAnswer::Accept(values) = &answer {
            check_form_answer(&checked, values)
                .map_err(|detail| ClientError::Protocol { method: ELICITATION_CREATE, detail })?;
        }
        Ok(answer)
    }

    /// Asks the user to open `url` (`elicitation/create`, URL mode) under a fresh elicitation id;
    /// waits for the answer. `accept` only means the user agreed to open it: when the step behind
    /// it is done, tell the client with [`Client::complete_elicitation`]. No credentials or
    /// personal data in the URL.
    ///
    /// Fails at once, sending nothing, when the client did not advertise `elicitation.url`
    /// ([`ClientError::Unsupported`]) or `url` is not an absolute URL
    /// ([`ClientError::InvalidArgument`]).
    pub async fn elicit_url(
        &self,
        message: impl Into<String>,
        url: impl Into<String>,
    ) -> Result<UrlElicitation, ClientError> {
        require(self.capabilities().elicitation_url(), ELICITATION_CREATE, "elicitation.url")?;
        let url = url.into();
        check_url(&url)?;
        let message = message.into();
        let (_, session) = self.ready(ELICITATION_CREATE)?;
        let elicitation_id = fresh_elicitation_id(session.0.as_ref());
        let id = elicitation_id.clone();
        let response: CreateElicitationResponse = self
            .call(ELICITATION_CREATE, |session| {
                CreateElicitationRequest::new(
                    ElicitationUrlMode::new(ElicitationSessionScope::new(session.clone()), id, url),
                    message,
                )
            })
            .await?;
        Ok(UrlElicitation { elicitation_id, answer: ElicitationAnswer::from_action(response.action) })
    }

    /// Tells the client that the step behind a URL elicitation is done (`elicitation/complete`).
    ///
    /// Fails at once, sending nothing, when the client did not advertise `elicitation.url`.
    pub async fn complete_elicitation(&self, elicitation_id: &ElicitationId) -> Result<(), ClientError> {
        require(self.capabilities().elicitation_url(), ELICITATION_COMPLETE, "elicitation.url")?;
        let (peer, _) = self.ready(ELICITATION_COMPLETE)?;
        self.in_order().await;
        peer.notify(ELICITATION_COMPLETE, &CompleteElicitationNotification::new(elicitation_id.clone()))
            .await
            .map_err(|_| ClientError::Cancelled { method: ELICITATION_COMPLETE })
    }
}

/// A fresh elicitation id for a session: unique on the connection (on the whole process, in fact).
pub(crate) fn fresh_elicitation_id(session: &str) -> ElicitationId {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    ElicitationId::new(format!("{session}/url-{}", NEXT.fetch_add(1, Ordering::Relaxed)))
}

/// Fails unless `url` looks like an absolute URL (`scheme:rest`, as the schema's `format: uri`).
pub(crate) fn check_url(url: &str) -> Result<(), ClientError> {
    let scheme_ok = url.split_once(':').is_some_and(|(scheme, rest)| {
        !rest.is_empty()
            && scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if scheme_ok && !url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Ok(())
    } else {
        Err(ClientError::InvalidArgument { field: "url", reason: format!("{url:?} is not an absolute URL") })
    }
}

/// Checks a form answer against the schema asked for: every required field present, every value
/// of its property's type (fields the schema does not name, and custom property types, pass).
pub(crate) fn check_form_answer(
    schema: &ElicitationSchema,
    values: &BTreeMap<String, ElicitationContentValue>,
) -> Result<(), String> {
    for name in schema.required.iter().flatten() {
        if !values.contains_key(name) {
            return Err(format!("the required field `{name}` is missing"));
        }
    }
    for (name, value) in values {
        let Some(property) = schema.properties.get(name) else { continue };
        let fits = match (property, value) {
            (ElicitationPropertySchema::String(p), ElicitationContentValue::String(s)) => {
                p.enum_values.as_ref().is_none_or(|allowed| allowed.contains(s))
            }
            (
                ElicitationPropertySchema::Number(_),
                ElicitationContentValue::Number(_) | ElicitationContentValue::Integer(_),
            )
            | (ElicitationPropertySchema::Integer(_), ElicitationContentValue::Integer(_))
            | (ElicitationPropertySchema::Boolean(_), ElicitationContentValue::Boolean(_))
            | (ElicitationPropertySchema::Array(_), ElicitationContentValue::StringArray(_)) => true,
            (
                ElicitationPropertySchema::String(_)
                | ElicitationPropertySchema::Number(_)
                | ElicitationPropertySchema::Integer(_)
                | ElicitationPropertySchema::Boolean(_)
                | ElicitationPropertySchema::Array(_),
                _,
            ) => false,
            _ => true,
        };
        if !fits {
            return Err(format!("the value of `{name}` does not fit its schema"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_absolute() {
        for good in ["https://example.com/login?x=1", "http://localhost:8080", "vscode:extension/x", "a+b.c-d:x"] {
            assert!(check_url(good).is_ok(), "{good}");
        }
        for bad in ["", "/relative", "example.com", "https://exa mple.com", "1http://x", "https:", ":x"] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn form_answers_are_checked_against_their_schema() {
        let schema = ElicitationSchema::new().string("name", true).integer("age", 0, 150, false).boolean("ok", false);
        let answer = |pairs: &[(&str, ElicitationContentValue)]| -> BTreeMap<String, ElicitationContentValue> {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
        };
        assert!(check_form_answer(&schema, &answer(&[("name", "x".into())])).is_ok());
        assert!(
            check_form_answer(&schema, &answer(&[("name", "x".into()), ("age", 3.into()), ("ok", true.into())]))
                .is_ok()
        );
        assert!(check_form_answer(&schema, &answer(&[("age", 3.into())])).is_err(), "name is required");
        assert!(check_form_answer(&schema, &answer(&[("name", 3.into())])).is_err(), "name is a string");
        assert!(check_form_answer(&schema, &answer(&[("name", "x".into()), ("age", 1.5.into())])).is_err());
        assert!(check_form_answer(&schema, &answer(&[("name", "x".into()), ("extra", true.into())])).is_ok());
    }
}
