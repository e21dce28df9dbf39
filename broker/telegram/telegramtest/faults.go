// This file holds the injectable faults: rate limits, server errors, refusals,
// slow and malformed answers.

package telegramtest

import (
	"net/http"
	"time"
)

// Fault is an injected answer for one call of a method.
type Fault struct {
	Status      int           // HTTP status and error_code of the answer; 0 answers normally
	RetryAfter  int           // parameters.retry_after (seconds), for 429
	Description string        // the error description; a default per status when empty
	Delay       time.Duration // wait before answering (ends early if the client gives up)
	Malformed   bool          // answer 200 with a body that is not JSON
}

// RateLimited is a 429 asking to retry after the given seconds.
func RateLimited(retryAfter int) Fault {
	return Fault{Status: http.StatusTooManyRequests, RetryAfter: retryAfter}
}

// ServerError is a 500.
func ServerError() Fault { return Fault{Status: http.StatusInternalServerError} }

// BadGateway is a 502.
func BadGateway() Fault { return Fault{Status: http.StatusBadGateway} }

// Forbidden is the 403 Telegram sends when the user blocked the bot.
func Forbidden() Fault {
	return Fault{Status: http.StatusForbidden, Description: "Forbidden: bot was blocked by the user"}
}

// Unauthorized is the 401 of a revoked token.
func Unauthorized() Fault { return Fault{Status: http.StatusUnauthorized} }

// Slow delays the answer by d.
func Slow(d time.Duration) Fault { return Fault{Delay: d} }

// Malformed answers 200 with a body that is not JSON.
func Malformed() Fault { return Fault{Malformed: true} }
