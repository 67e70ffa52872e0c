package main

import (
	"context"
	"errors"
	"log/slog"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/relay"
	"github.com/clubdev/club/internal/store"
)

// Relayer publishes and marks outbox rows; *relay.Relay implements it.
type Relayer interface {
	Publish(ctx context.Context, rows []outbox.Row) (int, error)
}

// Handler turns an outbox stream batch into relay work and reports the first
// record that could not be relayed.
type Handler struct {
	relay  Relayer
	logger *slog.Logger
}

// Handle relays the batch's INSERT records in stream order. It stops at the
// first record it cannot decode, publish or mark and reports that record's
// sequence number as the only batch item failure: Lambda retries the batch
// from there (stream order), bisects it, and after its retries sends its
// metadata to the on-failure destination; the row stays pending for the
// sweeper. Records before it are done; records after it are retried.
//
// Records other than INSERT (the relay's own "published" marks, TTL
// deletions) are acknowledged without work: the event source's filter
// normally keeps them out.
func (h *Handler) Handle(ctx context.Context, ev lambdaevents.DynamoDBEvent) (lambdaevents.DynamoDBEventResponse, error) {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		ctx = obs.WithAttrs(ctx, obs.RequestID(lc.AwsRequestID))
	}
	rows := make([]outbox.Row, 0, len(ev.Records))
	seqs := make([]string, 0, len(ev.Records))
	var badRecord *lambdaevents.DynamoDBEventRecord
	var decodeErr error
	skipped := 0
	for i := range ev.Records {
		rec := &ev.Records[i]
		if rec.EventName != string(lambdaevents.DynamoDBOperationTypeInsert) {
			skipped++
			continue
		}
		row, err := store.OutboxRowFromStreamImage(rec.Change.NewImage)
		if err != nil {
			badRecord, decodeErr = rec, err
			break
		}
		rows = append(rows, row)
		seqs = append(seqs, rec.Change.SequenceNumber)
	}

	n, err := h.relay.Publish(ctx, rows)
	if err != nil {
		row := rows[n]
		level := slog.LevelWarn
		if errors.Is(err, relay.ErrNoRoute) {
			level = slog.LevelError // retrying cannot help: a route is missing
		}
		h.logger.Log(ctx, level, "outbox record not relayed; the stream retries from it",
			obs.EventID(row.EventID), obs.EventType(string(row.Type)),
			slog.String("sequence_number", seqs[n]), slog.Int("relayed", n), obs.Err(err))
		return failure(seqs[n]), nil
	}
	if decodeErr != nil {
		h.logger.ErrorContext(ctx, "outbox stream record is not an outbox row; the stream retries from it",
			slog.String("sequence_number", badRecord.Change.SequenceNumber),
			slog.String("stream_event_id", badRecord.EventID), slog.Int("relayed", n), obs.Err(decodeErr))
		return failure(badRecord.Change.SequenceNumber), nil
	}
	h.logger.DebugContext(ctx, "outbox records relayed", slog.Int("relayed", n), slog.Int("skipped", skipped))
	return lambdaevents.DynamoDBEventResponse{}, nil
}

func failure(sequenceNumber string) lambdaevents.DynamoDBEventResponse {
	return lambdaevents.DynamoDBEventResponse{
		BatchItemFailures: []lambdaevents.DynamoDBBatchItemFailure{{ItemIdentifier: sequenceNumber}},
	}
}
