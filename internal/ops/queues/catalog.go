package queues

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clubdev/club/internal/stackfile"
)

// Naming of the template's queues: a consumer queue "<X>Queue" sends what it
// cannot process to "<X>DLQ".
const (
	sourceSuffix = "Queue"
	dlqSuffix    = "DLQ"
)

// Class is a work class (docs/principles.md §1.7): a group of queues with a maximum
// allowed age of the oldest message, after which someone must react.
type Class struct {
	Name string
	// Parameter is the template parameter that sets MaxAge (in seconds); it
	// is also the threshold of the queue's ApproximateAgeOfOldestMessage
	// alarm.
	Parameter string
	// DefaultMaxAge is the parameter's default in the template.
	DefaultMaxAge time.Duration
	// Queues are the logical ids of the class's queues.
	Queues []string
	// MaxAge is the value in force for a stack (see NewCatalog).
	MaxAge time.Duration
}

// WorkClasses are the template's work classes (infra/template.yaml, the
// parameters and the age alarms; a test keeps the two in step).
var WorkClasses = []Class{
	{Name: "urgent", Parameter: "UrgentMaxAgeSeconds", DefaultMaxAge: 60 * time.Second, Queues: []string{"NotificationsQueue"}},
	{Name: "consumer", Parameter: "ConsumerMaxAgeSeconds", DefaultMaxAge: 300 * time.Second, Queues: []string{"AnalyticsQueue", "RosterQueue"}},
	{Name: "bulk", Parameter: "BulkMaxAgeSeconds", DefaultMaxAge: 900 * time.Second, Queues: []string{"ExportsQueue"}},
}

// Queue is one queue of a stack with its dead-letter queue and work class.
type Queue struct {
	Name string // logical id, e.g. "NotificationsQueue"
	URL  string
	// DLQName and DLQURL are empty when the queue has no dead-letter queue.
	DLQName string
	DLQURL  string
	// Class is nil for a queue without a work class (no age limit).
	Class *Class
}

// Breaches reports whether age exceeds the queue's class limit.
func (q Queue) Breaches(age time.Duration) bool {
	return q.Class != nil && q.Class.MaxAge > 0 && age > q.Class.MaxAge
}

// Catalog is the queues of one stack.
type Catalog struct {
	queues []Queue
}

// ErrUnknownQueue is returned (wrapped) by Find for a name that matches no
// queue.
var ErrUnknownQueue = errors.New("unknown queue")

// NewCatalog lists the queues of stack, pairing each "<X>Queue" with its
// "<X>DLQ" and giving it its work class. A class's maximum age is the
// stack's value of the class parameter (the stack file's outputs carry the
// template parameters, see package stackimport) or the template's default.
// A dead-letter queue without a source queue is listed on its own.
func NewCatalog(stack *stackfile.Stack) (*Catalog, error) {
	classes := make(map[string]*Class)
	for _, c := range WorkClasses {
		c.MaxAge = c.DefaultMaxAge
		if v, ok := stack.Outputs[c.Parameter]; ok {
			secs, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || secs <= 0 {
				return nil, fmt.Errorf("stack output %s = %q: want a positive number of seconds", c.Parameter, v)
			}
			c.MaxAge = time.Duration(secs * float64(time.Second))
		}
		for _, q := range c.Queues {
			classes[q] = &c
		}
	}

	paired := map[string]bool{}
	var out []Queue
	for _, name := range slices.Sorted(maps.Keys(stack.Queues)) {
		if strings.HasSuffix(name, dlqSuffix) {
			continue
		}
		q := Queue{Name: name, URL: stack.Queues[name], Class: classes[name]}
		if base, ok := strings.CutSuffix(name, sourceSuffix); ok {
			if url, ok := stack.Queues[base+dlqSuffix]; ok {
				q.DLQName, q.DLQURL = base+dlqSuffix, url
				paired[q.DLQName] = true
			}
		}
		out = append(out, q)
	}
	for _, name := range slices.Sorted(maps.Keys(stack.Queues)) {
		if strings.HasSuffix(name, dlqSuffix) && !paired[name] {
			out = append(out, Queue{Name: name, URL: stack.Queues[name]})
		}
	}
	return &Catalog{queues: out}, nil
}

// Queues returns every queue, sources (with their DLQs) first, by name.
func (c *Catalog) Queues() []Queue { return slices.Clone(c.queues) }

// WithDLQ returns the queues that have a dead-letter queue.
func (c *Catalog) WithDLQ() []Queue {
	var out []Queue
	for _, q := range c.queues {
		if q.DLQURL != "" {
			out = append(out, q)
		}
	}
	return out
}

// Find returns the queue called name: its logical id ("NotificationsQueue"),
// its DLQ's logical id ("NotificationsDLQ", which finds the pair) or its
// short name ("notifications"), ignoring case.
func (c *Catalog) Find(name string) (Queue, error) {
	want := strings.ToLower(strings.TrimSpace(name))
	for _, q := range c.queues {
		short := strings.ToLower(strings.TrimSuffix(q.Name, sourceSuffix))
		if want == strings.ToLower(q.Name) || want == short || (q.DLQName != "" && want == strings.ToLower(q.DLQName)) {
			return q, nil
		}
	}
	names := make([]string, 0, len(c.queues))
	for _, q := range c.queues {
		names = append(names, q.Name)
	}
	if len(names) == 0 {
		return Queue{}, fmt.Errorf("%w %q: the stack file lists no queues", ErrUnknownQueue, name)
	}
	return Queue{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownQueue, name, strings.Join(names, ", "))
}
