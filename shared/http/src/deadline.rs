//! An invocation's deadline, as the calls to the platforms see it.
//!
//! Lambda ends an invocation at its timeout whatever it is doing, and API
//! Gateway stops waiting for the API after 30 seconds: a call still
//! waiting on Meta then is cut together with the writes that were to
//! follow it, and the caller gets API Gateway's bare `503`. A client bound
//! to a [`Deadline`] gives each call the shorter of its configured timeout
//! and the time left, and starts none with less than [`MIN_CALL`] left, so
//! the handler gets the failure back while it still has time to answer
//! it.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The least time a call is started with: with less, its answer could
/// not come back and be used.
pub const MIN_CALL: Duration = Duration::from_millis(250);

/// When the calls must be over, on the monotonic clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(Instant);

impl Deadline {
    /// The calls end at `instant`.
    pub fn at(instant: Instant) -> Self {
        Self(instant)
    }

    /// From a Lambda context's `deadline` (Unix milliseconds), less
    /// `reserve`: the time kept for what the handler does after its
    /// calls. `None` when the context has no deadline (0, outside Lambda).
    pub fn from_lambda_ms(deadline_ms: u64, reserve: Duration) -> Option<Self> {
        if deadline_ms == 0 {
            return None;
        }
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let left = Duration::from_millis(deadline_ms.saturating_sub(now_ms));
        Some(Self(Instant::now() + left.saturating_sub(reserve)))
    }

    /// The instant itself.
    pub fn instant(self) -> Instant {
        self.0
    }

    /// The time left, zero once it passed.
    pub fn left(self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }
}

/// The timeout of a call configured to wait `configured`, within
/// `deadline` if there is one; `None` when less than [`MIN_CALL`] is
/// left, and the call should not start.
pub fn call_timeout(configured: Duration, deadline: Option<Deadline>) -> Option<Duration> {
    match deadline {
        None => Some(configured),
        Some(d) => {
            let left = d.left();
            (left >= MIN_CALL).then(|| configured.min(left))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_waits_the_shorter_of_its_timeout_and_the_time_left() {
        let thirty = Duration::from_secs(30);
        assert_eq!(call_timeout(thirty, None), Some(thirty));
        let soon = Deadline::at(Instant::now() + Duration::from_secs(5));
        let t = call_timeout(thirty, Some(soon)).expect("time left");
        assert!(t <= Duration::from_secs(5) && t > Duration::from_secs(4));
        let later = Deadline::at(Instant::now() + Duration::from_secs(60));
        assert_eq!(call_timeout(thirty, Some(later)), Some(thirty));
    }

    #[test]
    fn no_call_starts_with_less_than_the_least_time() {
        let thirty = Duration::from_secs(30);
        let now = Deadline::at(Instant::now() + Duration::from_millis(100));
        assert_eq!(call_timeout(thirty, Some(now)), None);
        let past = Deadline::at(Instant::now() - Duration::from_secs(1));
        assert_eq!(past.left(), Duration::ZERO);
        assert_eq!(call_timeout(thirty, Some(past)), None);
    }

    #[test]
    fn lambdas_deadline_is_read_less_the_reserve() {
        assert_eq!(Deadline::from_lambda_ms(0, Duration::ZERO), None);
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_millis() as u64;
        let d =
            Deadline::from_lambda_ms(now_ms + 30_000, Duration::from_secs(5)).expect("a deadline");
        let left = d.left();
        assert!(left <= Duration::from_secs(25) && left > Duration::from_secs(24));
        // Past already, or nearer than the reserve: no time left.
        let gone = Deadline::from_lambda_ms(now_ms + 1_000, Duration::from_secs(5)).expect("one");
        assert_eq!(gone.left(), Duration::ZERO);
    }
}
