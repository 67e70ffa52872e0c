package queues

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/clubdev/club/internal/ops/cwmetric"
)

// AgeSource says where an age came from.
type AgeSource string

const (
	// AgeEmpty: the queue holds no visible or in-flight message; the age is 0.
	AgeEmpty AgeSource = "empty"
	// AgeCloudWatch: CloudWatch's ApproximateAgeOfOldestMessage, a minute
	// or a few old.
	AgeCloudWatch AgeSource = "cloudwatch"
	// AgeLocal: the local cloud's own record of the messages it holds
	// (LocalAges), read without receiving.
	AgeLocal AgeSource = "local"
	// AgePeek: the oldest SentTimestamp among the messages a peek saw.
	AgePeek AgeSource = "peek"
	// AgeInFlight: the peek saw no message: every one is leased by a
	// consumer or delayed, so none is waiting, but their age is not known.
	AgeInFlight AgeSource = "in-flight"
	// AgeUnknown: no metric and no peek; see Age.Note.
	AgeUnknown AgeSource = "unknown"
)

// Age is the age of a queue's oldest message.
type Age struct {
	Oldest time.Duration
	Source AgeSource
	// Sampled is how many messages the peek looked at; Complete is false
	// when it stopped at its limit, so the true age may be greater.
	Sampled  int
	Complete bool
	// Note explains an unknown or partial age.
	Note string
}

// Known reports whether Oldest means something.
func (a Age) Known() bool { return a.Source != AgeUnknown && a.Source != AgeInFlight }

// String is the age for people, e.g. "1m12s (peek)".
func (a Age) String() string {
	switch a.Source {
	case AgeUnknown:
		return "unknown"
	case AgeInFlight:
		return "all in flight"
	case AgeEmpty:
		return "-"
	}
	s := a.Oldest.Round(time.Second).String()
	if (a.Source == AgePeek || a.Source == AgeLocal) && !a.Complete {
		s = "≥" + s
	}
	return s + " (" + string(a.Source) + ")"
}

// AgeProber finds the age of a queue's oldest message: from CloudWatch where
// the endpoint serves the metric, else from the local cloud's own record
// when Local is set (neither receives anything), else, when Peek is set,
// from the SentTimestamp of the messages themselves (see Peek for what a
// peek costs: a receive per message).
type AgeProber struct {
	SQS PeekAPI
	// CloudWatch may be nil (no metrics to ask).
	CloudWatch cwmetric.CloudWatch
	// Local, when set, reads the local cloud's ages (LocalAges).
	Local *LocalAges
	// Peek allows the fallback to a peek.
	Peek        bool
	PeekOptions PeekOptions
	Now         func() time.Time
}

// OldestAge returns the age of the oldest message of the queue at url, whose
// depth the caller has just read.
func (p *AgeProber) OldestAge(ctx context.Context, url string, d Depth) (Age, error) {
	if d.Visible+d.InFlight == 0 {
		return Age{Source: AgeEmpty, Complete: true}, nil
	}
	now := p.Now()
	if p.CloudWatch != nil {
		points, err := cwmetric.Latest(ctx, p.CloudWatch, now, []cwmetric.Query{cwmetric.QueueAge(NameOf(url))})
		if err != nil {
			return Age{}, err
		}
		if pt, ok := points[0]; ok {
			// The metric describes the moment it was taken: add the time since.
			age := time.Duration(pt.Value*float64(time.Second)) + max(now.Sub(pt.At), 0)
			return Age{Oldest: age, Source: AgeCloudWatch, Complete: true}, nil
		}
	}
	if p.Local != nil {
		return p.Local.Oldest(ctx, url, now)
	}
	if !p.Peek {
		return Age{Source: AgeUnknown, Note: "no CloudWatch datapoint; --peek reads message timestamps (costs one receive per message)"}, nil
	}
	// Peek even when no message is counted visible: emulators may keep
	// counting a restored message as in flight until the next receive.
	peeked, err := Peek(ctx, p.SQS, url, p.PeekOptions)
	if err != nil {
		return Age{}, err
	}
	if len(peeked.Messages) == 0 {
		return Age{Source: AgeInFlight, Note: fmt.Sprintf("the peek saw none of the %d messages: all are in flight or delayed", d.Total())}, nil
	}
	age := Age{
		Oldest: peeked.Messages[0].Age(p.Now()), Source: AgePeek,
		Sampled: len(peeked.Messages), Complete: peeked.Complete,
	}
	switch unseen := d.Visible + d.InFlight - int64(age.Sampled); {
	case !peeked.Complete:
		age.Note = fmt.Sprintf("looked at %d of about %d messages", age.Sampled, d.Visible+d.InFlight)
	case unseen > 0:
		age.Note = fmt.Sprintf("%d in-flight messages not seen", unseen)
	}
	return age, nil
}

// NameOf is the last part of a queue URL, the name CloudWatch knows (its
// QueueName dimension).
func NameOf(url string) string {
	return url[strings.LastIndexByte(url, '/')+1:]
}
