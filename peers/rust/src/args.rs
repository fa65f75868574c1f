//! The command line: `<library> <experiment> --key value ...`. The first
//! occurrence of an option wins, so a caller's own options come before the
//! protocol options the bench appends to every run (as the Pekko peer's).

use std::collections::HashMap;

/// The `--key value` options of one run.
pub struct Args {
    options: HashMap<String, String>,
}

impl Args {
    /// Parses `--key value` pairs; anything else is an error naming it.
    pub fn parse(words: &[String]) -> Result<Args, String> {
        let mut options = HashMap::new();
        let mut it = words.iter();
        while let Some(key) = it.next() {
            let Some(name) = key.strip_prefix("--") else {
                return Err(format!("expected --key value, found {key}"));
            };
            let value = it
                .next()
                .ok_or_else(|| format!("option {key} has no value"))?;
            options
                .entry(name.to_string())
                .or_insert_with(|| value.clone());
        }
        Ok(Args { options })
    }

    /// The option `name` as a number, or `default` when absent.
    pub fn num(&self, name: &str, default: u64) -> Result<u64, String> {
        match self.options.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{name} {v}: not a whole number")),
        }
    }

    /// The option `name` as a real number, or `default` when absent.
    pub fn real(&self, name: &str, default: f64) -> Result<f64, String> {
        match self.options.get(name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("--{name} {v}: not a number")),
        }
    }

    /// The option `name` as text, or `default` when absent.
    pub fn text<'a>(&'a self, name: &str, default: &'a str) -> &'a str {
        self.options.get(name).map_or(default, String::as_str)
    }

    /// `--threads`: 1 or 2 (the machine's cores), the threads the
    /// library's runtime runs the actors on.
    pub fn threads(&self) -> Result<usize, String> {
        match self.num("threads", 2)? {
            n @ 1..=64 => Ok(n as usize),
            n => Err(format!("--threads {n}: between 1 and 64")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_first_occurrence_of_an_option_wins_and_strays_are_refused() {
        let a = Args::parse(&words("--repeats 1 --msgs 10 --repeats 5")).unwrap();
        assert_eq!(a.num("repeats", 0), Ok(1));
        assert_eq!(a.num("absent", 7), Ok(7));
        assert!(a.num("msgs", 0).is_ok());
        assert!(Args::parse(&words("msgs 10")).is_err());
        assert!(Args::parse(&words("--msgs")).is_err());
        assert!(Args::parse(&words("--msgs ten"))
            .unwrap()
            .num("msgs", 0)
            .is_err());
    }
}
