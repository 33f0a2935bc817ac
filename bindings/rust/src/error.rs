//! Errors: the runtime's status code plus its message, as a Rust error.
//!
//! Every call into the C API returns an `agate_status_t`; on failure the reason
//! is in a thread-local message that the next agate call on the same thread may
//! overwrite. [`check`] therefore copies the message right after the call, on
//! the same thread, into an owned [`Error`].
use std::ffi::CStr;
use std::fmt;

use crate::sys;

/// What went wrong: the values of `agate_status_t` (c_api/include/agate/status.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// A bad input from the caller: wrong shape or dtype, a closed handle.
    InvalidArgument,
    /// A named thing (file, tensor, kernel) does not exist.
    NotFound,
    /// Valid input that this build does not handle.
    Unsupported,
    /// An index or offset outside its bounds.
    OutOfRange,
    /// Malformed data: a truncated or corrupt module.
    Corrupt,
    /// A module built for a newer format, kernel ABI or another target.
    VersionMismatch,
    /// A schedule primitive that would change the result (compiler only).
    IllegalSchedule,
    /// Out of memory.
    ResourceExhausted,
    /// The file system failed.
    Io,
    /// A device or library is missing at run time.
    Unavailable,
    /// A bug in agate, or a kernel that reported a failed check.
    Internal,
    /// A code this crate does not know (a newer runtime).
    Unknown(i32),
}

impl Status {
    /// The status for a non-OK `agate_status_t`.
    pub fn from_code(code: i32) -> Status {
        match code as u32 {
            sys::AGATE_INVALID_ARGUMENT => Status::InvalidArgument,
            sys::AGATE_NOT_FOUND => Status::NotFound,
            sys::AGATE_UNSUPPORTED => Status::Unsupported,
            sys::AGATE_OUT_OF_RANGE => Status::OutOfRange,
            sys::AGATE_CORRUPT => Status::Corrupt,
            sys::AGATE_VERSION_MISMATCH => Status::VersionMismatch,
            sys::AGATE_ILLEGAL_SCHEDULE => Status::IllegalSchedule,
            sys::AGATE_RESOURCE_EXHAUSTED => Status::ResourceExhausted,
            sys::AGATE_IO => Status::Io,
            sys::AGATE_UNAVAILABLE => Status::Unavailable,
            sys::AGATE_INTERNAL => Status::Internal,
            _ => Status::Unknown(code),
        }
    }

    /// The numeric `agate_status_t` value.
    pub fn code(self) -> i32 {
        let code = match self {
            Status::InvalidArgument => sys::AGATE_INVALID_ARGUMENT,
            Status::NotFound => sys::AGATE_NOT_FOUND,
            Status::Unsupported => sys::AGATE_UNSUPPORTED,
            Status::OutOfRange => sys::AGATE_OUT_OF_RANGE,
            Status::Corrupt => sys::AGATE_CORRUPT,
            Status::VersionMismatch => sys::AGATE_VERSION_MISMATCH,
            Status::IllegalSchedule => sys::AGATE_ILLEGAL_SCHEDULE,
            Status::ResourceExhausted => sys::AGATE_RESOURCE_EXHAUSTED,
            Status::Io => sys::AGATE_IO,
            Status::Unavailable => sys::AGATE_UNAVAILABLE,
            Status::Internal => sys::AGATE_INTERNAL,
            Status::Unknown(code) => return code,
        };
        code as i32
    }

    /// The runtime's short name of the status ("corrupt").
    pub fn name(self) -> &'static str {
        // SAFETY: agate_status_name never fails and returns a static string.
        let name = unsafe { CStr::from_ptr(sys::agate_status_name(self.code())) };
        name.to_str().unwrap_or("unknown status")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed agate call: the status and the runtime's message (or, for checks
/// this crate makes before calling the runtime, its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    pub(crate) fn new(status: Status, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }

    /// What kind of failure.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The numeric `agate_status_t`.
    pub fn code(&self) -> i32 {
        self.status.code()
    }

    /// What went wrong, naming the tensor, kernel, file or byte at fault.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "agate {} (status {}): {}", self.status, self.status.code(), self.message)
    }
}

impl std::error::Error for Error {}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Turns a status just returned on this thread into a `Result`, copying the
/// runtime's thread-local message on failure.
pub(crate) fn check(status: sys::agate_status_t) -> Result<()> {
    if status == sys::AGATE_OK as i32 {
        return Ok(());
    }
    // SAFETY: the message is a NUL-terminated string owned by the runtime and
    // valid until the next agate call on this thread; it is copied at once.
    let message = unsafe {
        let raw = sys::agate_last_error_message();
        if raw.is_null() {
            String::new()
        } else {
            CStr::from_ptr(raw).to_string_lossy().into_owned()
        }
    };
    Err(Error::new(Status::from_code(status), message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_match_the_runtime_names() {
        for code in 1..=11 {
            let status = Status::from_code(code);
            assert_ne!(status, Status::Unknown(code));
            assert_eq!(status.code(), code);
        }
        assert_eq!(Status::Corrupt.name(), "corrupt");
        assert_eq!(Status::from_code(99), Status::Unknown(99));
        assert_eq!(Status::Unknown(99).name(), "unknown status");
    }

    #[test]
    fn ok_is_not_an_error() {
        assert!(check(sys::AGATE_OK as i32).is_ok());
    }

    #[test]
    fn display_carries_status_and_message() {
        let e = Error::new(Status::NotFound, "no input named 'q'");
        assert_eq!(e.to_string(), "agate not found (status 2): no input named 'q'");
    }
}
