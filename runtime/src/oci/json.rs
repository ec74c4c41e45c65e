//! JSON input from users (config.json, process files, resources,
//! daemon.json): one error shape that names the input and where in it
//! the parser stopped (serde_json's message carries the line and column).

use serde::de::DeserializeOwned;

#[derive(Debug, thiserror::Error)]
#[error("{what}: invalid JSON: {err}")]
pub struct JsonError {
    what: String,
    err: serde_json::Error,
}

/// Parses `text`, naming it `what` in the error.
pub fn parse<T: DeserializeOwned>(what: impl std::fmt::Display, text: &str) -> Result<T, JsonError> {
    serde_json::from_str(text).map_err(|err| JsonError { what: what.to_string(), err })
}

#[cfg(test)]
mod tests {
    #[test]
    fn errors_name_the_input_and_the_place() {
        let e = super::parse::<serde_json::Value>("config.json", "{\n  \"a\": [1,\n}").unwrap_err().to_string();
        assert!(e.starts_with("config.json: invalid JSON: "), "{e}");
        assert!(e.contains("line 3 column 1"), "{e}");
    }
}
