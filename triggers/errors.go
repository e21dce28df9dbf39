package triggers

import (
	"errors"
	"fmt"

	"hm/internal/ground/status"
)

// ErrReject is wrapped by every error that refuses a trigger file for good:
// the watcher moves such a file to rejected/ with a reason file.
var ErrReject = errors.New("trigger rejected")

// ErrEmpty is returned by Decode for a file with no printable content.
// It wraps ErrReject with code empty_content.
var ErrEmpty error = &RejectError{code: status.CodeEmptyContent, reason: "the file has no printable content"}

// RejectError is a refusal with a machine-readable code (for example
// invalid_target or owner_binding_violation) and a human explanation. Create
// one with Reject.
type RejectError struct {
	code   status.Code
	reason string
}

// Error implements error.
func (e *RejectError) Error() string {
	if e.reason == "" {
		return "trigger rejected: " + string(e.code)
	}
	return "trigger rejected: " + string(e.code) + ": " + e.reason
}

// Unwrap makes errors.Is(err, ErrReject) true.
func (e *RejectError) Unwrap() error { return ErrReject }

// Code returns the refusal code, e.g. "invalid_target".
func (e *RejectError) Code() status.Code { return e.code }

// Reason returns the human explanation.
func (e *RejectError) Reason() string { return e.reason }

// Reject returns an error wrapping ErrReject that carries code and a
// formatted explanation. Sinks return it to move a file to rejected/.
func Reject(code status.Code, format string, args ...any) error {
	if code == "" {
		code = status.CodeRejected
	}
	return &RejectError{code: code, reason: fmt.Sprintf(format, args...)}
}

// CodeOf returns the refusal code carried by err: the Code of a wrapped
// *RejectError, "rejected" for any other error wrapping ErrReject, and "" for
// errors that are not refusals.
func CodeOf(err error) status.Code {
	var re *RejectError
	if errors.As(err, &re) && re.code != "" {
		return re.code
	}
	if errors.Is(err, ErrReject) {
		return status.CodeRejected
	}
	return ""
}

// reasonText returns the human explanation for err: the Reason of a wrapped
// *RejectError, else the error text.
func reasonText(err error) string {
	var re *RejectError
	if errors.As(err, &re) && re.reason != "" {
		return re.reason
	}
	return err.Error()
}
