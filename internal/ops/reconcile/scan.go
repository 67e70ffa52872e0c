package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/internal/club/purchase"
)

// Scanner is the part of *dynamodb.Client that Scan uses.
type Scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ Scanner = (*dynamodb.Client)(nil)

// Statuses are the statuses a person must look at, in the order listed. A
// refund_pending purchase is listed only when its refund execution is
// missing or stuck (AssessRefunds).
var Statuses = []purchase.Status{purchase.StatusCheckingPayment, purchase.StatusNeedsReconciliation, purchase.StatusRefundPending}

// Row is a purchase as the club table holds it, reduced to what deciding
// the next step needs.
type Row struct {
	PurchaseID  string
	IntensiveID string
	StudentID   string
	Status      purchase.Status
	// Since is when the purchase entered Status (its last history entry).
	Since     time.Time
	PaymentID string
	// RecordedPaymentStatus is the provider's answer last recorded on the
	// row (a webhook or a status read), empty if none.
	RecordedPaymentStatus purchase.ProviderStatus
	Note                  string
	// Previous is the status before Status (empty for a new purchase).
	Previous purchase.Status
	// RefundAttempts counts the refund intents in the history.
	RefundAttempts int
	// RefundKey is the current refund attempt's key (empty without one);
	// NextRefundKey the key a refund decided now asks the provider with
	// (a new one after a failed refund).
	RefundKey, NextRefundKey string
	// RefundID and RefundStatus are the current refund attempt's provider
	// refund and what the provider last said of it.
	RefundID     string
	RefundStatus purchase.ProviderStatus
}

// item is the stored layout of a purchase row (package store, doc.go).
type item struct {
	PurchaseID    string `dynamodbav:"purchase_id"`
	IntensiveID   string `dynamodbav:"intensive_id"`
	StudentID     string `dynamodbav:"student_id"`
	Status        string `dynamodbav:"status"`
	PaymentID     string `dynamodbav:"payment_id"`
	PaymentStatus string `dynamodbav:"payment_status"`
	Note          string `dynamodbav:"note"`
	RefundID      string `dynamodbav:"refund_id"`
	RefundStatus  string `dynamodbav:"refund_status"`
	Refunds       []struct {
		Key      string `dynamodbav:"key"`
		RefundID string `dynamodbav:"refund_id"`
		Status   string `dynamodbav:"status"`
	} `dynamodbav:"refunds"`
	History []struct {
		Status string `dynamodbav:"status"`
		At     string `dynamodbav:"at"`
	} `dynamodbav:"history"`
}

// Scan reads the purchases of table whose status is one of statuses. The
// order of the rows is the table's.
func Scan(ctx context.Context, db Scanner, table string, statuses []purchase.Status) ([]Row, error) {
	if len(statuses) == 0 {
		return nil, nil
	}
	values := map[string]types.AttributeValue{":sk": &types.AttributeValueMemberS{Value: "PURCHASE"}}
	in := ""
	for i, s := range statuses {
		name := fmt.Sprintf(":s%d", i)
		values[name] = &types.AttributeValueMemberS{Value: string(s)}
		if i > 0 {
			in += ", "
		}
		in += name
	}
	pages := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		FilterExpression:          aws.String("sk = :sk AND #status IN (" + in + ")"),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: values,
		ConsistentRead:            aws.Bool(true),
	})
	var rows []Row
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan purchases in %s: %w", table, err)
		}
		var items []item
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, fmt.Errorf("decode purchases: %w", err)
		}
		for _, it := range items {
			r, err := it.row()
			if err != nil {
				return nil, err
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

func (it item) row() (Row, error) {
	r := Row{
		PurchaseID: it.PurchaseID, IntensiveID: it.IntensiveID, StudentID: it.StudentID,
		Status: purchase.Status(it.Status), PaymentID: it.PaymentID,
		RecordedPaymentStatus: purchase.ProviderStatus(it.PaymentStatus), Note: it.Note,
	}
	for _, h := range it.History {
		if h.Status == string(purchase.StatusRefundPending) {
			r.RefundAttempts++
		}
	}
	var attempts []purchase.RefundAttempt
	for _, a := range it.Refunds {
		attempts = append(attempts, purchase.RefundAttempt{Key: a.Key, RefundID: a.RefundID, Status: purchase.ProviderStatus(a.Status)})
	}
	if len(attempts) == 0 && r.RefundAttempts > 0 {
		// A row from before refunds had attempts (package store).
		attempts = []purchase.RefundAttempt{{Key: purchase.LegacyRefundKey(it.PurchaseID), RefundID: it.RefundID, Status: purchase.ProviderStatus(it.RefundStatus)}}
	}
	if n := len(attempts); n > 0 {
		r.RefundKey, r.RefundID, r.RefundStatus = attempts[n-1].Key, attempts[n-1].RefundID, attempts[n-1].Status
	}
	r.NextRefundKey = purchase.NextRefundKey(it.PurchaseID, attempts)
	// The last entry is the current status: every transition appends one.
	for i := len(it.History) - 1; i >= 0; i-- {
		if it.History[i].Status != it.Status {
			continue
		}
		if i > 0 {
			r.Previous = purchase.Status(it.History[i-1].Status)
		}
		at, err := time.Parse(time.RFC3339Nano, it.History[i].At)
		if err != nil {
			return Row{}, fmt.Errorf("purchase %s: history time %q: %w", it.PurchaseID, it.History[i].At, err)
		}
		r.Since = at
		break
	}
	if r.Since.IsZero() {
		return Row{}, fmt.Errorf("purchase %s: no history entry for its status %s", it.PurchaseID, it.Status)
	}
	return r, nil
}
