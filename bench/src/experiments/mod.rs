//! The experiments, one folder each: the workload, its rows, its settings and
//! its peer rows live together under `experiments/<name>/`.

pub mod chameneos;
pub mod delayed;
pub mod micro;
pub mod pingpong;
pub mod primes;
pub mod soak;
pub mod trading;
