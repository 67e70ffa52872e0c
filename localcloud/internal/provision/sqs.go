package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/clubdev/club/localcloud/template"
)

type sqsAPI interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	CreateQueue(context.Context, *sqs.CreateQueueInput, ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	SetQueueAttributes(context.Context, *sqs.SetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
}

func (p *provisioner) queues(ctx context.Context) error {
	ordered, err := deadLetterQueuesFirst(p.st.Queues)
	if err != nil {
		return err
	}
	for _, q := range ordered {
		if err := p.queue(ctx, q); err != nil {
			return resourceError("queue", q.Source, q.Name, err)
		}
		p.result.Queues[q.Source] = q.URL
	}
	return nil
}

// queue creates the queue, or brings an existing one to the template's
// attributes: CreateQueue on an existing queue either fails (AWS, when the
// attributes differ) or silently keeps the old ones (the emulator).
func (p *provisioner) queue(ctx context.Context, q template.Queue) error {
	existing, err := p.c.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.Name)})
	switch {
	case err == nil:
		_, err = p.c.sqs.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
			QueueUrl:   existing.QueueUrl,
			Attributes: queueAttributes(q, false),
		})
		if err != nil {
			return fmt.Errorf("update attributes: %w", err)
		}
		return nil
	case isQueueMissing(err):
		_, err = p.c.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{
			QueueName:  aws.String(q.Name),
			Attributes: queueAttributes(q, true),
		})
		return err
	default:
		return fmt.Errorf("look up: %w", err)
	}
}

// queueAttributes are the queue's SQS attributes; the FIFO ones can only be
// given at creation.
func queueAttributes(q template.Queue, create bool) map[string]string {
	attrs := map[string]string{
		"VisibilityTimeout":             seconds(q.VisibilityTimeout.Seconds()),
		"MessageRetentionPeriod":        seconds(q.MessageRetentionPeriod.Seconds()),
		"DelaySeconds":                  seconds(q.Delay.Seconds()),
		"ReceiveMessageWaitTimeSeconds": seconds(q.ReceiveMessageWaitTime.Seconds()),
	}
	if q.MaximumMessageSize > 0 {
		attrs["MaximumMessageSize"] = strconv.Itoa(q.MaximumMessageSize)
	}
	if q.FIFO {
		if create {
			attrs["FifoQueue"] = "true"
		}
		attrs["ContentBasedDeduplication"] = strconv.FormatBool(q.ContentBasedDeduplication)
	}
	if rp := q.RedrivePolicy; rp != nil {
		doc, _ := json.Marshal(struct {
			DeadLetterTargetARN string `json:"deadLetterTargetArn"`
			MaxReceiveCount     int    `json:"maxReceiveCount"`
		}{rp.DeadLetterTargetARN, rp.MaxReceiveCount})
		attrs["RedrivePolicy"] = string(doc)
	}
	return attrs
}

func isQueueMissing(err error) bool {
	var missing *sqstypes.QueueDoesNotExist
	return errors.As(err, &missing) || hasCode(err, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
}

func seconds(s float64) string { return strconv.Itoa(int(s)) }

// deadLetterQueuesFirst orders queues so that every dead-letter queue of the
// stack comes before the queues that redrive to it (AWS requires the target
// to exist). Otherwise the template's order (by logical ID) is kept.
func deadLetterQueuesFirst(queues []template.Queue) ([]template.Queue, error) {
	byARN := make(map[string]int, len(queues))
	for i, q := range queues {
		byARN[q.ARN] = i
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]int, len(queues))
	out := make([]template.Queue, 0, len(queues))
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("provision queue %s: its redrive policy leads back to itself", queues[i].Source)
		}
		state[i] = visiting
		if rp := queues[i].RedrivePolicy; rp != nil {
			if j, ok := byARN[rp.DeadLetterTargetARN]; ok {
				if err := visit(j); err != nil {
					return err
				}
			}
		}
		state[i] = done
		out = append(out, queues[i])
		return nil
	}
	for i := range queues {
		if err := visit(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}
