package bench

import (
	"sort"
	"strings"
)

// Prices are AWS list prices in US dollars (us-east-1, on-demand, standard
// tiers, without free tiers), as used for the cost estimate. They are
// written into the report beside the estimate.
type Prices struct {
	// DynamoDB on-demand: per million write and read request units.
	DynamoDBWriteUnit, DynamoDBReadUnit float64
	// SNS: per million publishes (each 64 KB chunk); deliveries to SQS are free.
	SNSPublish float64
	// SQS standard: per million requests (each 64 KB chunk).
	SQSRequest float64
	// Lambda: per million invocations (duration is not estimated here).
	LambdaInvocation float64
	// API Gateway HTTP API: per million requests.
	HTTPAPIRequest float64
}

// ListPrices are the prices of the estimate (AWS price pages, 2025).
var ListPrices = Prices{
	DynamoDBWriteUnit: 0.625,
	DynamoDBReadUnit:  0.125,
	SNSPublish:        0.50,
	SQSRequest:        0.40,
	LambdaInvocation:  0.20,
	HTTPAPIRequest:    1.00,
}

// CostLine is one priced item of a cost estimate, per enrollment.
type CostLine struct {
	Item  string
	Units float64 // billed units per enrollment
	USD   float64 // per million enrollments
}

// Cost estimates what a million enrollments cost in AWS requests for v:
// DynamoDB by request units (every item ≤ 1 KB: a write is 1 unit, a
// strongly consistent read 1, a transactional item 2 — TransactionItems
// per enrollment — and each item of a BatchGetItem 1 — BatchReadItems per
// enrollment), SNS, SQS and Lambda by request, and the HTTP API request. Data
// transfer, storage, Lambda duration and CloudWatch are not included.
func Cost(v RequestVariant, p Prices) []CostLine {
	if v.Enrollments == 0 {
		return nil
	}
	per := func(n int64) float64 { return float64(n) / float64(v.Enrollments) }
	var wru, rru, sns, sqs float64
	for _, op := range v.Ops {
		switch op.Service {
		case "dynamodb":
			switch op.Operation {
			case "TransactWriteItems":
				// Priced below, by item.
			case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem":
				wru += per(op.Count)
			case "BatchGetItem":
				// Priced below, by item.
			case "GetItem", "Query", "Scan":
				rru += per(op.Count)
			case "TransactGetItems":
				rru += per(op.Count) * 2
			}
		case "sns":
			if op.Operation == "Publish" || op.Operation == "PublishBatch" {
				sns += per(op.Count)
			}
		case "sqs":
			sqs += per(op.Count)
		}
	}
	wru += 2 * v.TransactionItems
	rru += v.BatchReadItems
	lines := []CostLine{
		{Item: "DynamoDB write request units", Units: wru, USD: wru * p.DynamoDBWriteUnit},
		{Item: "DynamoDB read request units", Units: rru, USD: rru * p.DynamoDBReadUnit},
		{Item: "SNS publishes", Units: sns, USD: sns * p.SNSPublish},
		{Item: "SQS requests", Units: sqs, USD: sqs * p.SQSRequest},
		{Item: "Lambda invocations", Units: v.InvocationsPerEnrollment(), USD: v.InvocationsPerEnrollment() * p.LambdaInvocation},
		{Item: "HTTP API requests", Units: 1, USD: p.HTTPAPIRequest},
	}
	return lines
}

// TotalUSD sums a cost estimate.
func TotalUSD(lines []CostLine) float64 {
	var t float64
	for _, l := range lines {
		t += l.USD
	}
	return t
}

// opKey names an operation in tables.
func opKey(o OpCount) string { return o.Service + " " + o.Operation }

// mergeOps lists every operation of the variants, sorted, so that their
// tables line up.
func mergeOps(vs []RequestVariant) []string {
	seen := map[string]bool{}
	for _, v := range vs {
		for _, o := range v.Ops {
			seen[opKey(o)] = true
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return strings.ToLower(keys[i]) < strings.ToLower(keys[j]) })
	return keys
}
