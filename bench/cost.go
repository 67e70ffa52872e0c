package bench

import (
	"slices"
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
	// Lambda: per million invocations, and per GB-second of duration
	// (arm64, billed per 1 ms).
	LambdaInvocation, LambdaGBSecond float64
	// API Gateway HTTP API: per million requests.
	HTTPAPIRequest float64
	// CloudWatch Logs: per GB (2^30 bytes) ingested (standard class, the
	// first tier of Lambda's logs).
	LogsIngestedGB float64
	// DynamoDB storage (standard table class) and its point-in-time
	// recovery (continuous backups, on the table's size): per GB-month.
	DynamoDBStorageGBMonth, DynamoDBPITRGBMonth float64
}

// ListPrices are the prices of the estimate (AWS price pages, 2025).
var ListPrices = Prices{
	DynamoDBWriteUnit: 0.625,
	DynamoDBReadUnit:  0.125,
	SNSPublish:        0.50,
	SQSRequest:        0.40,
	LambdaInvocation:  0.20,
	LambdaGBSecond:    0.0000133334,
	HTTPAPIRequest:    1.00,
	LogsIngestedGB:    0.50,

	DynamoDBStorageGBMonth: 0.25,
	DynamoDBPITRGBMonth:    0.20,
}

// CostLine is one priced item of a cost estimate, per enrollment.
type CostLine struct {
	Item  string
	Units float64 // billed units per enrollment
	USD   float64 // per million enrollments
}

// The items of a cost estimate, in the order Cost lists them.
const (
	CostWriteUnits  = "DynamoDB write request units"
	CostIndexUnits  = "DynamoDB write request units of index entries"
	CostReadUnits   = "DynamoDB read request units"
	CostSNS         = "SNS publishes (64 KB chunks)"
	CostSQS         = "SQS requests (64 KB chunks)"
	CostInvocations = "Lambda invocations"
	CostDuration    = "Lambda duration (GB-seconds)"
	CostHTTPAPI     = "HTTP API requests"
	CostLogs        = "CloudWatch Logs ingested (KB)"
)

// Cost prices a million enrollments of v from what the local cloud counted:
// DynamoDB request units as the endpoint's meter billed them per item
// (v.Units: item sizes rounded up per 1 KB written and 4 KB read,
// transactional items twice; global secondary index entries on their own
// line, per 1 KB of the projection), SNS publishes and SQS requests per 64
// KB chunk (v.Units), Lambda invocations and GB-seconds (v.Functions:
// billed milliseconds × memory size), the HTTP API request, and the bytes
// of the functions' log lines, their own and the runtime's START, END and
// REPORT, as CloudWatch Logs ingestion (v.Functions). Data transfer and
// CloudWatch metrics are not included; storage is billed per month kept,
// and priced apart (StorageOf).
func Cost(v RequestVariant, p Prices) []CostLine {
	if v.Enrollments == 0 {
		return nil
	}
	n := float64(v.Enrollments)
	var wru, iru, rru, sns, sqs float64
	for _, u := range v.Units {
		switch u.Service {
		case "dynamodb":
			wru += u.WriteUnits / n
			iru += u.IndexWriteUnits / n
			rru += u.ReadUnits / n
		case "sns":
			if u.Operation == "Publish" || u.Operation == "PublishBatch" {
				sns += float64(u.Billed) / n
			}
		case "sqs":
			sqs += float64(u.Billed) / n
		}
	}
	gbs := v.GBSecondsPerEnrollment()
	inv := v.InvocationsPerEnrollment()
	kb := v.LogBytesPerEnrollment() / 1024
	const million = 1e6
	return []CostLine{
		{Item: CostWriteUnits, Units: wru, USD: wru * p.DynamoDBWriteUnit},
		{Item: CostIndexUnits, Units: iru, USD: iru * p.DynamoDBWriteUnit},
		{Item: CostReadUnits, Units: rru, USD: rru * p.DynamoDBReadUnit},
		{Item: CostSNS, Units: sns, USD: sns * p.SNSPublish},
		{Item: CostSQS, Units: sqs, USD: sqs * p.SQSRequest},
		{Item: CostInvocations, Units: inv, USD: inv * p.LambdaInvocation},
		{Item: CostDuration, Units: gbs, USD: gbs * p.LambdaGBSecond * million},
		{Item: CostHTTPAPI, Units: 1, USD: p.HTTPAPIRequest},
		{Item: CostLogs, Units: kb, USD: kb / (1 << 20) * p.LogsIngestedGB * million},
	}
}

// Storage is what keeping a variant's enrollments costs, apart from the
// per-enrollment estimate because AWS bills it per month they are kept.
type Storage struct {
	// Bytes per enrollment, as DynamoDB bills storage: items and index
	// entries with their overhead; of them, IndexBytes in indexes and
	// ExpiringBytes in items a time-to-live attribute removes.
	Bytes, IndexBytes, ExpiringBytes float64
	// USDPerMonth is the storage of a million enrollments for a month;
	// PITRUSDPerMonth their point-in-time recovery (tables only, not
	// indexes); KeptUSDPerMonth the storage once the items with a
	// time-to-live are gone.
	USDPerMonth, PITRUSDPerMonth, KeptUSDPerMonth float64
}

// StorageOf prices the storage the variant's run added (v.Stored).
func StorageOf(v RequestVariant, p Prices) Storage {
	var all, index, expiring float64
	for _, t := range v.Stored {
		all += float64(t.Bytes + t.IndexBytes)
		index += float64(t.IndexBytes)
		expiring += float64(t.ExpiringBytes)
	}
	s := Storage{
		Bytes:         perEnrollment(all, v.Enrollments),
		IndexBytes:    perEnrollment(index, v.Enrollments),
		ExpiringBytes: perEnrollment(expiring, v.Enrollments),
	}
	const gb, million = 1 << 30, 1e6
	s.USDPerMonth = s.Bytes * million / gb * p.DynamoDBStorageGBMonth
	s.PITRUSDPerMonth = (s.Bytes - s.IndexBytes) * million / gb * p.DynamoDBPITRGBMonth
	s.KeptUSDPerMonth = (s.Bytes - s.ExpiringBytes) * million / gb * p.DynamoDBStorageGBMonth
	return s
}

// LogBytesPerEnrollment is the bytes of log lines the variant's functions
// wrote per enrollment.
func (v RequestVariant) LogBytesPerEnrollment() float64 {
	var b int64
	for _, f := range v.Functions {
		b += f.LogBytes
	}
	return perEnrollment(float64(b), v.Enrollments)
}

// GBSecondsPerEnrollment is the Lambda duration the variant is billed per
// enrollment: each function's billed milliseconds times its memory size.
func (v RequestVariant) GBSecondsPerEnrollment() float64 {
	var gbs float64
	for _, f := range v.Functions {
		gbs += float64(f.BilledMs) / 1000 * float64(f.MemoryMB) / 1024
	}
	return perEnrollment(gbs, v.Enrollments)
}

// TransactionItemsPerEnrollment is how many items the variant wrote in
// transactions per enrollment, as the meter counted them.
func (v RequestVariant) TransactionItemsPerEnrollment() float64 {
	items, _ := v.transactWrites()
	return perEnrollment(float64(items), v.Enrollments)
}

// TransactWriteUnitsPerEnrollment is the write units the variant's
// transactions billed per enrollment, as the meter counted them.
func (v RequestVariant) TransactWriteUnitsPerEnrollment() float64 {
	_, units := v.transactWrites()
	return perEnrollment(units, v.Enrollments)
}

// transactWrites sums the items and write units of the variant's
// TransactWriteItems.
func (v RequestVariant) transactWrites() (items int64, writeUnits float64) {
	for _, u := range v.Units {
		if u.Service == "dynamodb" && u.Operation == "TransactWriteItems" {
			items += u.TransactionItems
			writeUnits += u.WriteUnits
		}
	}
	return items, writeUnits
}

// perEnrollment divides a variant's total by its enrollments (0 when it
// made none).
func perEnrollment(x float64, enrollments int) float64 {
	if enrollments == 0 {
		return 0
	}
	return x / float64(enrollments)
}

// TotalUSD sums a cost estimate.
func TotalUSD(lines []CostLine) float64 {
	var t float64
	for _, l := range lines {
		t += l.USD
	}
	return t
}

// costOf sums the dollars of the named items of a cost estimate.
func costOf(lines []CostLine, items ...string) float64 {
	var usd float64
	for _, l := range lines {
		if slices.Contains(items, l.Item) {
			usd += l.USD
		}
	}
	return usd
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
