//! Request routing and validation, shared by every server in this crate so
//! that they answer bad input identically: a 4xx status with a JSON body
//! `{"error": "..."}`.

use std::fmt;

/// The longest path served; longer ones get 414.
pub const MAX_PATH: usize = 256;

/// A request the service understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `GET /primes/{n}`.
    Primes(usize),
    /// `GET /health`.
    Health,
    /// `GET /metrics`.
    Metrics,
}

/// A request refused with a status and a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    /// The HTTP status code.
    pub status: u16,
    /// Why, in words, for the JSON body.
    pub message: String,
}

impl HttpError {
    fn new(status: u16, message: impl Into<String>) -> Self {
        HttpError {
            status,
            message: message.into(),
        }
    }

    /// The JSON body: `{"error":"..."}`.
    pub fn body(&self) -> String {
        serde_json::json!({ "error": self.message }).to_string()
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.status, self.message)
    }
}

/// Routes a request line's method and path (query strings are ignored).
///
/// ```
/// use primes::route::{route, Route};
/// assert_eq!(route("GET", "/primes/20", 1000), Ok(Route::Primes(20)));
/// assert_eq!(route("GET", "/primes/abc", 1000).unwrap_err().status, 400);
/// assert_eq!(route("POST", "/primes/20", 1000).unwrap_err().status, 405);
/// ```
pub fn route(method: &str, path: &str, max_n: usize) -> Result<Route, HttpError> {
    if path.len() > MAX_PATH {
        return Err(HttpError::new(
            414,
            format!("path longer than {MAX_PATH} bytes"),
        ));
    }
    let path = path.split('?').next().unwrap_or(path);
    let found = if path == "/health" {
        Route::Health
    } else if path == "/metrics" {
        Route::Metrics
    } else if let Some(n) = path.strip_prefix("/primes/") {
        Route::Primes(parse_n(n, max_n)?)
    } else {
        return Err(HttpError::new(404, format!("no such resource: {path}")));
    };
    if method != "GET" {
        return Err(HttpError::new(
            405,
            format!("method {method} not allowed; use GET"),
        ));
    }
    Ok(found)
}

fn parse_n(text: &str, max_n: usize) -> Result<usize, HttpError> {
    let bad = || {
        HttpError::new(
            400,
            format!("n must be a whole number from 1 to {max_n}, got {text:?}"),
        )
    };
    if text.starts_with('-') && text[1..].chars().all(|c| c.is_ascii_digit()) && text.len() > 1 {
        return Err(bad());
    }
    if text.is_empty() || !text.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    match text.parse::<usize>() {
        Ok(0) => Err(bad()),
        Ok(n) if n <= max_n => Ok(n),
        _ => Err(HttpError::new(
            400,
            format!("n must be at most {max_n}, got {text}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_gets_the_right_status() {
        let max = 1000;
        assert_eq!(route("GET", "/primes/1000", max), Ok(Route::Primes(1000)));
        assert_eq!(route("GET", "/primes/20?x=1", max), Ok(Route::Primes(20)));
        for (path, status) in [
            ("/primes/abc", 400),
            ("/primes/", 400),
            ("/primes/0", 400),
            ("/primes/-5", 400),
            ("/primes/1001", 400),
            ("/primes/99999999999999999999999", 400),
            ("/primes/2.5", 400),
            ("/nope", 404),
            ("/", 404),
        ] {
            assert_eq!(
                route("GET", path, max).unwrap_err().status,
                status,
                "{path}"
            );
        }
        let long = format!("/primes/{}", "1".repeat(300));
        assert_eq!(route("GET", &long, max).unwrap_err().status, 414);
        assert_eq!(route("DELETE", "/health", max).unwrap_err().status, 405);
        assert_eq!(route("GET", "/health", max), Ok(Route::Health));
        let body = route("GET", "/primes/x", max).unwrap_err().body();
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(json["error"].as_str().unwrap().contains("whole number"));
    }
}
