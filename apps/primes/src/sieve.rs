//! The first n primes: a sieve of Eratosthenes whose result is cached and
//! grown on demand, shared by every worker so that repeated requests cost a
//! slice and a render.

use std::sync::{Arc, RwLock};

/// A growing, shared list of primes in ascending order.
#[derive(Debug, Default)]
pub struct PrimeCache {
    primes: RwLock<Arc<Vec<u32>>>,
}

impl PrimeCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// At least the first `n` primes (the slice `[..n]` of the result).
    pub fn first(&self, n: usize) -> Arc<Vec<u32>> {
        {
            let primes = self.primes.read().unwrap_or_else(|e| e.into_inner());
            if primes.len() >= n {
                return primes.clone();
            }
        }
        let mut primes = self.primes.write().unwrap_or_else(|e| e.into_inner());
        if primes.len() < n {
            *primes = Arc::new(sieve(n));
        }
        primes.clone()
    }
}

/// An upper bound of the n-th prime (Rosser's theorem for n >= 6).
fn bound(n: usize) -> usize {
    if n < 6 {
        return 15;
    }
    let n = n as f64;
    (n * (n.ln() + n.ln().ln())).ceil() as usize + 1
}

/// The first `n` primes.
fn sieve(n: usize) -> Vec<u32> {
    let limit = bound(n);
    let mut composite = vec![false; limit + 1];
    let mut primes = Vec::with_capacity(n);
    for i in 2..=limit {
        if composite[i] {
            continue;
        }
        primes.push(i as u32);
        if primes.len() == n {
            break;
        }
        let mut j = i * i;
        while j <= limit {
            composite[j] = true;
            j += i;
        }
    }
    primes
}

/// The JSON array of `primes`: `[2,3,5]`. On every request's path, so it
/// makes one allocation, its output, sized exactly: the digits are written
/// from a stack buffer, not through a `String` per number.
pub fn render_json(primes: &[u32]) -> String {
    let digits: usize = primes.iter().map(|&p| decimal_len(p)).sum();
    let mut out = String::with_capacity(digits + primes.len().saturating_sub(1) + 2);
    out.push('[');
    for (i, &p) in primes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_decimal(&mut out, p);
    }
    out.push(']');
    out
}

/// How many decimal digits `n` has (1 for 0).
fn decimal_len(n: u32) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// Appends `n` in decimal, without allocating beyond `out`'s capacity.
fn push_decimal(out: &mut String, mut n: u32) {
    // u32::MAX has 10 digits.
    let mut buf = [0u8; 10];
    let mut start = buf.len();
    loop {
        start -= 1;
        buf[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(buf[start..].iter().map(|&d| char::from(d)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_primes_are_right_and_grow() {
        let cache = PrimeCache::new();
        assert_eq!(&cache.first(5)[..5], [2, 3, 5, 7, 11]);
        let many = cache.first(10_000);
        assert_eq!(many[9_999], 104_729, "the 10,000th prime");
        assert!(many.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(render_json(&many[..3]), "[2,3,5]");
        assert_eq!(render_json(&[]), "[]");
    }
}
