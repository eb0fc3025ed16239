//! The number checks of the binding's arguments: JS numbers are doubles, the engine wants
//! whole numbers in a range (shared by the options and the methods).

use std::time::Duration;

use crate::error::{Result, invalid};

/// A whole number in `min..=max` from a JS number, or `INVALID_ARGUMENT` naming `what`.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
pub fn whole(what: &str, v: f64, min: u64, max: u64) -> Result<u64> {
    if v.is_finite() && v.fract() == 0.0 && v >= min as f64 && v <= max as f64 {
        Ok(v as u64)
    } else {
        Err(invalid(format!(
            "{what} must be a whole number between {min} and {max}, got {v}"
        )))
    }
}

/// A terminal dimension (1..=1000).
pub fn dimension(what: &str, v: f64) -> Result<u16> {
    let n = whole(what, v, 1, 1000)?;
    u16::try_from(n).map_err(|_| invalid(format!("{what} out of range")))
}

/// Milliseconds (0 ..= about 31 years) as a duration.
pub fn millis(what: &str, v: f64) -> Result<Duration> {
    Ok(Duration::from_millis(whole(what, v, 0, 1 << 50)?))
}

/// The largest whole number a JS number holds exactly.
pub const MAX_SAFE: u64 = (1 << 53) - 1;

/// A count or size (0 ..= 2^53 - 1) as a `usize`.
pub fn count(what: &str, v: f64) -> Result<usize> {
    Ok(usize::try_from(whole(what, v, 0, MAX_SAFE)?).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_only_within_range() {
        assert_eq!(whole("n", 0.0, 0, 10).ok(), Some(0));
        assert_eq!(whole("n", 10.0, 0, 10).ok(), Some(10));
        for bad in [-1.0, 10.5, 11.0, f64::NAN, f64::INFINITY, -0.5] {
            let e = whole("n", bad, 0, 10).err().map(|e| e.status);
            assert_eq!(e, Some(crate::error::Code::InvalidArgument), "{bad}");
        }
    }

    #[test]
    fn dimensions_and_millis() {
        assert_eq!(dimension("cols", 1000.0).ok(), Some(1000));
        assert!(dimension("cols", 0.0).is_err());
        assert_eq!(millis("ms", 1500.0).ok(), Some(Duration::from_millis(1500)));
        assert!(millis("ms", -1.0).is_err());
    }
}
