package agate

import "fmt"

// Status is a non-OK agate_status_t (c_api/include/agate/status.h).
type Status int32

const (
	StatusInvalidArgument   Status = 1  // a bad input: wrong shape or dtype, a closed handle
	StatusNotFound          Status = 2  // a named thing (file, tensor, kernel) does not exist
	StatusUnsupported       Status = 3  // valid input this build does not handle
	StatusOutOfRange        Status = 4  // an index or offset outside its bounds
	StatusCorrupt           Status = 5  // malformed data: a truncated or corrupt module
	StatusVersionMismatch   Status = 6  // a module for a newer format, kernel ABI or another target
	StatusIllegalSchedule   Status = 7  // compiler only
	StatusResourceExhausted Status = 8  // out of memory
	StatusIO                Status = 9  // the file system failed
	StatusUnavailable       Status = 10 // a device or library is missing at run time
	StatusInternal          Status = 11 // a bug in agate, or a kernel's failed check
)

var statusNames = map[Status]string{
	StatusInvalidArgument: "invalid argument", StatusNotFound: "not found", StatusUnsupported: "unsupported",
	StatusOutOfRange: "out of range", StatusCorrupt: "corrupt", StatusVersionMismatch: "version mismatch",
	StatusIllegalSchedule: "illegal schedule", StatusResourceExhausted: "resource exhausted", StatusIO: "io",
	StatusUnavailable: "unavailable", StatusInternal: "internal",
}

// String is the runtime's short name of the status ("corrupt").
func (s Status) String() string {
	if name, ok := statusNames[s]; ok {
		return name
	}
	return fmt.Sprintf("unknown status %d", int32(s))
}

// Error is a failed agate call: the status and the runtime's message (or, for
// checks this package makes itself, its own).
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("agate %s (status %d): %s", e.Status, int32(e.Status), e.Message)
}

// Is makes errors.Is(err, agate.ErrNotFound) match any error of that status.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Status == e.Status
}

// Sentinels for errors.Is, one per status.
var (
	ErrInvalidArgument   = &Error{Status: StatusInvalidArgument}
	ErrNotFound          = &Error{Status: StatusNotFound}
	ErrUnsupported       = &Error{Status: StatusUnsupported}
	ErrOutOfRange        = &Error{Status: StatusOutOfRange}
	ErrCorrupt           = &Error{Status: StatusCorrupt}
	ErrVersionMismatch   = &Error{Status: StatusVersionMismatch}
	ErrResourceExhausted = &Error{Status: StatusResourceExhausted}
	ErrIO                = &Error{Status: StatusIO}
	ErrUnavailable       = &Error{Status: StatusUnavailable}
	ErrInternal          = &Error{Status: StatusInternal}
)

func newError(status Status, format string, args ...interface{}) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}
