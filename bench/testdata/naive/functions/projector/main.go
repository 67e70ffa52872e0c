// Command projector is the naive design's analytics or roster consumer
// (CONSUMER=analytics|roster), measured beside the product by the requests
// benchmark: it keeps a separate idempotency record, read before and written
// after the effect, each its own request, where the product commits the
// inbox row and the effect in one transaction. (It is also not safe: a crash
// between the effect and the record applies the event twice.)
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/projection"
)

type consumer struct {
	name    string
	table   string
	db      *dynamodb.Client
	effects func(events.Envelope) ([]projection.Effect, error)
}

func main() {
	c := &consumer{name: os.Getenv("CONSUMER"), table: os.Getenv("CLUB_TABLE")}
	switch c.name {
	case projection.ConsumerAnalytics:
		c.effects = projection.StatsEffects
	case projection.ConsumerRoster:
		c.effects = projection.RosterEffects
	default:
		log.Fatalf("CONSUMER must be %s or %s", projection.ConsumerAnalytics, projection.ConsumerRoster)
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	c.db = dynamodb.NewFromConfig(cfg)
	lambda.Start(c.handle)
}

func (c *consumer) handle(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	resp := lambdaevents.SQSEventResponse{}
	for _, r := range ev.Records {
		if err := c.apply(ctx, r.Body); err != nil {
			log.Printf("message %s: %v", r.MessageId, err)
			resp.BatchItemFailures = append(resp.BatchItemFailures, lambdaevents.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
	}
	return resp, nil
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": s(pk), "sk": s(sk)}
}

// apply: read the idempotency record, apply each effect, write the record.
func (c *consumer) apply(ctx context.Context, body string) error {
	env, err := events.Decode([]byte(body))
	if err != nil {
		return err
	}
	effects, err := c.effects(env)
	if err != nil || len(effects) == 0 {
		return err
	}
	inbox := key("INBOX#"+c.name+"#"+env.EventID, "INBOX")
	got, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: inbox, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return err
	}
	if len(got.Item) > 0 {
		return nil // seen before
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for _, e := range effects {
		var updates []*dynamodb.UpdateItemInput
		switch e := e.(type) {
		case projection.AddToRoster:
			updates = append(updates, &dynamodb.UpdateItemInput{
				Key:              key("CLASS#"+e.ClassID, "ROSTER#"+e.EnrollmentID),
				UpdateExpression: aws.String("SET entity = :entity, class_id = :class, enrollment_id = :enrollment, student_id = :student, enrolled_at = :at"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":entity": s("roster_entry"), ":class": s(e.ClassID), ":enrollment": s(e.EnrollmentID),
					":student": s(e.StudentID), ":at": s(e.EnrolledAt.UTC().Format(time.RFC3339Nano)),
				},
			}, &dynamodb.UpdateItemInput{
				Key:                       key("CLASS#"+e.ClassID, "ROSTER"),
				UpdateExpression:          aws.String("SET entity = :entity, class_id = :class, as_of = :at"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":entity": s("roster"), ":class": s(e.ClassID), ":at": s(now)},
			})
		case projection.CountStats:
			updates = append(updates, &dynamodb.UpdateItemInput{
				Key:              key("CLASS#"+e.ClassID, "STATS"),
				UpdateExpression: aws.String("SET entity = :entity, class_id = :class ADD enrollments_total :e, cancellations_total :c"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":entity": s("stats"), ":class": s(e.ClassID),
					":e": &types.AttributeValueMemberN{Value: fmt.Sprint(e.Enrollments)},
					":c": &types.AttributeValueMemberN{Value: fmt.Sprint(e.Cancellations)},
				},
			})
		default:
			return errors.New("unsupported effect")
		}
		for _, u := range updates {
			u.TableName = aws.String(c.table)
			if _, err := c.db.UpdateItem(ctx, u); err != nil {
				return err
			}
		}
	}
	_, err = c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.table), Item: map[string]types.AttributeValue{
		"pk": inbox["pk"], "sk": inbox["sk"], "entity": s("inbox"), "consumer": s(c.name),
		"event_id": s(env.EventID), "processed_at": s(now),
	}})
	return err
}
