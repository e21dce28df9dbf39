package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// maxResponseBytes bounds a Bot API response body.
const maxResponseBytes = 64 << 20

// apiError is a failed Bot API request.
type apiError struct {
	Method      string
	Status      int    // HTTP status or error_code; 0 when no response arrived
	Description string // the API's description, when it gave one
	RetryAfter  int    // seconds, from a 429's parameters
	Err         error  // transport, decoding or library error
}

func (e *apiError) Error() string {
	s := e.Method + ": "
	if e.Status != 0 {
		s += "HTTP " + strconv.Itoa(e.Status)
		if e.Description != "" || e.Err != nil {
			s += ": "
		}
	}
	if e.Description != "" {
		s += e.Description
	} else if e.Err != nil {
		s += e.Err.Error()
	}
	if e.RetryAfter > 0 {
		s += " (retry after " + strconv.Itoa(e.RetryAfter) + "s)"
	}
	return s
}

func (e *apiError) Unwrap() error { return e.Err }

// rejected reports an answer that means the token is not valid.
func (e *apiError) rejected() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusNotFound
}

// statusKey carries a *statusCapture in a request context.
type statusKey struct{}

// statusCapture receives the HTTP status of a library request.
type statusCapture struct{ status int }

// statusClient wraps the HTTP client given to the library so that the caller
// learns the HTTP status of each request (the library folds 5xx and other
// codes into untyped errors).
type statusClient struct{ c *http.Client }

// Do implements bot.HttpClient.
func (s statusClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := s.c.Do(req)
	if c, ok := req.Context().Value(statusKey{}).(*statusCapture); ok && resp != nil {
		c.status = resp.StatusCode
	}
	return resp, err
}

// libraryError turns an error of a library call into an apiError.
func (r *Relay) libraryError(method string, sc *statusCapture, err error) *apiError {
	e := &apiError{Method: method, Status: sc.status, Err: r.redact(err)}
	var tm *bot.TooManyRequestsError
	if errors.As(err, &tm) {
		e.Status = http.StatusTooManyRequests
		e.RetryAfter = tm.RetryAfter
	}
	return e
}

// getMe checks the token.
func (r *Relay) getMe(ctx context.Context) (*models.User, error) {
	sc := &statusCapture{}
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, statusKey{}, sc), r.cfg.RequestTimeout)
	defer cancel()
	me, err := r.api.GetMe(cctx)
	if err != nil {
		return nil, r.libraryError("getMe", sc, err)
	}
	return me, nil
}

// getUpdatesRequest is the JSON body of getUpdates.
type getUpdatesRequest struct {
	Offset         int64    `json:"offset,omitempty"`
	Limit          int      `json:"limit"`
	Timeout        int      `json:"timeout"`
	AllowedUpdates []string `json:"allowed_updates"`
}

// apiResponse is the Bot API response envelope.
type apiResponse struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// getUpdates long-polls for updates with id >= offset (which also confirms
// every earlier update to the server). It is done here rather than through
// the library's poller so that the offset only moves when the relay says so.
func (r *Relay) getUpdates(ctx context.Context, offset int64) ([]update, error) {
	const method = "getUpdates"
	body, err := json.Marshal(getUpdatesRequest{
		Offset:         offset,
		Limit:          100,
		Timeout:        int(r.cfg.PollTimeout / time.Second),
		AllowedUpdates: allowedUpdates,
	})
	if err != nil {
		return nil, &apiError{Method: method, Err: err}
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.PollTimeout+r.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, r.base+"/bot"+r.cfg.Token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return nil, &apiError{Method: method, Err: r.redact(err)}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, &apiError{Method: method, Err: r.redact(err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, &apiError{Method: method, Status: resp.StatusCode, Err: r.redact(err)}
	}
	var ar apiResponse
	if err := json.Unmarshal(data, &ar); err != nil {
		return nil, &apiError{Method: method, Status: resp.StatusCode, Err: fmt.Errorf("malformed response: %w", err)}
	}
	if !ar.OK {
		status := ar.ErrorCode
		if status == 0 {
			status = resp.StatusCode
		}
		return nil, &apiError{Method: method, Status: status, Description: ar.Description, RetryAfter: ar.Parameters.RetryAfter}
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(ar.Result, &raws); err != nil {
		return nil, &apiError{Method: method, Status: resp.StatusCode, Err: fmt.Errorf("malformed result: %w", err)}
	}
	ups := make([]update, 0, len(raws))
	for _, raw := range raws {
		u, err := decodeUpdate(raw)
		if err != nil {
			r.log.Warn("ignoring telegram update without an id", "err", err)
			continue
		}
		ups = append(ups, u)
	}
	if len(ups) == 0 && len(raws) > 0 {
		return nil, &apiError{Method: method, Status: resp.StatusCode, Err: errors.New("malformed result: no update has an update_id")}
	}
	sort.SliceStable(ups, func(i, j int) bool { return ups[i].ID < ups[j].ID })
	return ups, nil
}
