package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A move is one redrive the console runs, reported as SQS reports a
// message-move task (ListMessageMoveTasks): a status, the messages moved
// against the messages to move, the rate cap, and a failure reason.
type move struct {
	ID         string     `json:"task_handle"`
	Queue      string     `json:"destination"`
	DLQ        string     `json:"source"`
	Status     string     `json:"status"`
	Moved      int        `json:"approximate_number_of_messages_moved"`
	ToMove     int        `json:"approximate_number_of_messages_to_move"`
	Rate       float64    `json:"max_number_of_messages_per_second"`
	Started    time.Time  `json:"started_timestamp"`
	Finished   *time.Time `json:"finished_timestamp,omitempty"`
	Failure    string     `json:"failure_reason,omitempty"`
	By         string     `json:"by"`
	Reason     string     `json:"reason"`
	cancelFunc context.CancelFunc
}

// The statuses of a move, as SQS names those of a message-move task.
const (
	moveRunning    = "RUNNING"
	moveCompleted  = "COMPLETED"
	moveCancelling = "CANCELLING"
	moveCancelled  = "CANCELLED"
	moveFailed     = "FAILED"
)

type moves struct {
	mu   sync.Mutex
	seq  int
	byID map[string]*move
}

func newMoves() *moves { return &moves{byID: map[string]*move{}} }

func (ms *moves) list() []move {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	out := make([]move, 0, len(ms.byID))
	for _, m := range ms.byID {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b move) int { return b.Started.Compare(a.Started) })
	return out
}

func (ms *moves) get(id string) (move, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m, ok := ms.byID[id]
	if !ok {
		return move{}, NotFound(fmt.Errorf("no redrive %s", id))
	}
	return *m, nil
}

// startRedrive starts a move in the background. Like SQS, one move at a
// time per queue: a second answers 409 conflict.
func (c *Console) startRedrive(r *http.Request) (int, any, error) {
	var req RedriveRequest
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	req.Queue = r.PathValue("queue")
	switch {
	case strings.TrimSpace(req.Reason) == "":
		return 0, nil, Invalid(errors.New("reason is required: the audit log keeps why"))
	case req.Max < 0:
		return 0, nil, Invalid(fmt.Errorf("max %d must not be negative", req.Max))
	case req.Rate < 0:
		return 0, nil, Invalid(fmt.Errorf("rate_per_second %g must not be negative", req.Rate))
	}
	plan, err := c.src.PlanRedrive(r.Context(), req)
	if err != nil {
		c.audit("redrive", req.Queue, req.Reason, map[string]string{"error": err.Error()})
		return 0, nil, err
	}
	ms := c.moves
	ms.mu.Lock()
	for _, m := range ms.byID {
		if m.Queue == plan.Queue && (m.Status == moveRunning || m.Status == moveCancelling) {
			ms.mu.Unlock()
			return 0, nil, &Error{Status: http.StatusConflict, Code: CodeConflict, Err: fmt.Errorf("redrive %s of %s is still running", m.ID, plan.Queue)}
		}
	}
	ms.seq++
	ctx, cancel := context.WithCancel(c.ctx)
	m := &move{
		ID: "redrive-" + strconv.Itoa(ms.seq), Queue: plan.Queue, DLQ: plan.DLQ, Status: moveRunning, ToMove: plan.ToMove,
		Rate: req.Rate, Started: c.opts.Now().UTC(), By: c.opts.By, Reason: req.Reason, cancelFunc: cancel,
	}
	ms.byID[m.ID] = m
	started := *m
	ms.mu.Unlock()
	c.audit("redrive start", plan.Queue, req.Reason, started)

	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		moved, err := plan.Run(ctx, func(n int) {
			ms.mu.Lock()
			m.Moved = n
			ms.mu.Unlock()
		})
		ms.mu.Lock()
		now := c.opts.Now().UTC()
		m.Moved, m.Finished = moved, &now
		switch {
		case ctx.Err() != nil:
			m.Status = moveCancelled
		case err != nil:
			m.Status, m.Failure = moveFailed, err.Error()
		default:
			m.Status = moveCompleted
		}
		done := *m
		ms.mu.Unlock()
		c.audit("redrive "+strings.ToLower(done.Status), done.Queue, done.Reason, done)
	}()
	return http.StatusAccepted, started, nil
}

// cancelRedrive stops a running move after the batch in hand: every
// message is then either back in its queue once or still in the DLQ.
func (c *Console) cancelRedrive(r *http.Request) (int, any, error) {
	ms := c.moves
	ms.mu.Lock()
	m, ok := ms.byID[r.PathValue("id")]
	if !ok {
		ms.mu.Unlock()
		return 0, nil, NotFound(fmt.Errorf("no redrive %s", r.PathValue("id")))
	}
	if m.Status != moveRunning {
		status := m.Status
		ms.mu.Unlock()
		return 0, nil, &Error{Status: http.StatusConflict, Code: CodeConflict, Err: fmt.Errorf("redrive %s is %s, not running", m.ID, status)}
	}
	m.Status = moveCancelling
	out, cancel := *m, m.cancelFunc
	ms.mu.Unlock()
	c.audit("redrive cancel", out.Queue, out.Reason, out)
	cancel()
	return http.StatusAccepted, out, nil
}
