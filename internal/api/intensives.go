package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/clubdev/club/internal/club/purchase"
)

// Purchases are the paid-intensive use cases; *purchase.Service implements
// them.
type Purchases interface {
	CreateIntensive(ctx context.Context, req purchase.CreateIntensiveRequest) (purchase.Intensive, error)
	GetIntensive(ctx context.Context, id string) (purchase.Intensive, error)
	Purchase(ctx context.Context, req purchase.PurchaseRequest) (purchase.PurchaseResult, error)
	Get(ctx context.Context, id, callerID string) (purchase.Purchase, error)
}

// keyIntensiveID is the log attribute of the intensive a request concerned.
const keyIntensiveID = "intensive_id"

// createIntensive answers POST /intensives (teacher): {title, capacity,
// price: {amount_cents, currency}, hold_seconds (optional, default 900)}.
// The intensive belongs to the caller and starts with every seat free.
func (h *Handler) createIntensive(ctx context.Context, r *request) (response, error) {
	var (
		title       string
		capacity    int
		rawPrice    []byte
		holdSeconds int
		price       purchase.Price
	)
	if err := decodeObject(r.body,
		field{name: "title", dst: &title, kind: "a string"},
		field{name: "capacity", dst: &capacity, kind: "an integer"},
		field{name: "price", dst: (*rawObject)(&rawPrice), kind: "an object"},
		field{name: "hold_seconds", dst: &holdSeconds, kind: "an integer"},
	); err != nil {
		return response{}, err
	}
	if err := decodeMember("price", rawPrice,
		field{name: "amount_cents", dst: &price.AmountCents, kind: "an integer"},
		field{name: "currency", dst: &price.Currency, kind: "a string"},
	); err != nil {
		return response{}, err
	}
	if err := checkText("title", title); err != nil {
		return response{}, err
	}
	in, err := h.purchases.CreateIntensive(ctx, purchase.CreateIntensiveRequest{
		TeacherID: r.caller.subject, Title: title, Capacity: capacity, Price: price, HoldSeconds: holdSeconds,
	})
	if err != nil {
		return response{}, err
	}
	r.annotate(slog.String(keyIntensiveID, in.ID()))
	return jsonResponse(http.StatusCreated, renderIntensive(in))
}

// getIntensive answers GET /intensives/{intensive_id} (anyone signed in),
// with its seat counters as committed.
func (h *Handler) getIntensive(ctx context.Context, r *request) (response, error) {
	in, err := h.purchases.GetIntensive(ctx, r.params["intensive_id"])
	if err != nil {
		return response{}, err
	}
	return jsonResponse(http.StatusOK, renderIntensive(in))
}

// rawObject keeps a member's JSON for decodeMember. JSON null leaves it
// empty, like an absent member.
type rawObject []byte

func (o *rawObject) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not an object")
	}
	*o = append((*o)[:0], b...)
	return nil
}

// decodeMember decodes the object member name (its raw JSON; empty when
// absent) strictly, like decodeObject, naming fields "name.field" in
// errors, as the domain's validation does.
func decodeMember(name string, raw []byte, fields ...field) error {
	err := decodeObject(raw, fields...)
	he, ok := errors.AsType[*httpError](err)
	if !ok || he.field == "" {
		return err
	}
	nested := *he
	nested.field = name + "." + he.field
	nested.message = name + "." + he.message
	return &nested
}

// intensiveDocument is the answer to every intensive route.
type intensiveDocument struct {
	IntensiveID string        `json:"intensive_id"`
	Title       string        `json:"title"`
	Capacity    int           `json:"capacity"`
	SeatsTaken  int           `json:"seats_taken"`
	SeatsHeld   int           `json:"seats_held"`
	SeatsLeft   int           `json:"seats_left"`
	Price       priceDocument `json:"price"`
	HoldSeconds int           `json:"hold_seconds"`
	TeacherID   string        `json:"teacher_id"`
}

type priceDocument struct {
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
}

func renderIntensive(in purchase.Intensive) intensiveDocument {
	return intensiveDocument{
		IntensiveID: in.ID(), Title: in.Title(), Capacity: in.Capacity(),
		SeatsTaken: in.SeatsTaken(), SeatsHeld: in.SeatsHeld(), SeatsLeft: in.SeatsFree(),
		Price:       priceDocument{AmountCents: in.Price().AmountCents, Currency: in.Price().Currency},
		HoldSeconds: in.HoldSeconds(), TeacherID: in.TeacherID(),
	}
}
