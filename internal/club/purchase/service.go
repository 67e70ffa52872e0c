package purchase

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/idempotency"
)

// Deps are the Service's collaborators and settings.
type Deps struct {
	Intensives  IntensiveRepository
	Store       Store
	Idempotency idempotency.Store
	// Now and NewID default to the wall clock (UTC) and random UUIDs.
	Now   func() time.Time
	NewID func() string
}

// Service runs the API's purchase use cases: intensives, and the start of a
// purchase. It is stateless and safe for concurrent use: every rule that
// concurrent requests could break (no overselling, one purchase per
// idempotency key) is enforced by the store's conditional writes.
type Service struct {
	intensives IntensiveRepository
	store      Store
	idem       idempotency.Store
	now        func() time.Time
	newID      func() string
}

// NewService checks d and returns a Service.
func NewService(d Deps) (*Service, error) {
	var errs []error
	if d.Intensives == nil {
		errs = append(errs, errors.New("purchase service: Intensives is required"))
	}
	if d.Store == nil {
		errs = append(errs, errors.New("purchase service: Store is required"))
	}
	if d.Idempotency == nil {
		errs = append(errs, errors.New("purchase service: Idempotency is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s := &Service{intensives: d.Intensives, store: d.Store, idem: d.Idempotency, now: d.Now, newID: d.NewID}
	if s.now == nil {
		s.now = func() time.Time { return time.Now().UTC() }
	}
	if s.newID == nil {
		s.newID = events.NewID
	}
	return s, nil
}

// CreateIntensiveRequest is a teacher's new intensive.
type CreateIntensiveRequest struct {
	TeacherID   string // from the verified token
	Title       string
	Capacity    int
	Price       Price
	HoldSeconds int // 0: DefaultHoldSeconds
}

// CreateIntensive validates and stores a new intensive with every seat free.
// Errors: *club.ValidationError, or an infrastructure error.
func (s *Service) CreateIntensive(ctx context.Context, req CreateIntensiveRequest) (Intensive, error) {
	in, err := NewIntensive("i-"+s.newID(), req.TeacherID, req.Title, req.Capacity, req.Price, req.HoldSeconds, s.now())
	if err != nil {
		return Intensive{}, err
	}
	if err := s.intensives.Create(ctx, in); err != nil {
		return Intensive{}, fmt.Errorf("create intensive: %w", err)
	}
	return in, nil
}

// GetIntensive returns an intensive with its seat counters, or
// ErrIntensiveNotFound.
func (s *Service) GetIntensive(ctx context.Context, id string) (Intensive, error) {
	in, err := s.intensives.Get(ctx, id)
	if err != nil {
		return Intensive{}, fmt.Errorf("get intensive %s: %w", id, err)
	}
	return in, nil
}

// PurchaseRequest is a student's request to buy a seat.
type PurchaseRequest struct {
	IntensiveID string
	StudentID   string // from the verified token, never from the body
	// IdempotencyKey and RequestFingerprint (idempotency.Fingerprint)
	// identify the request for replays.
	IdempotencyKey     string
	RequestFingerprint string
	// Respond renders the response for a new purchase. It is stored with
	// the idempotency record in the same transaction, so a replay returns
	// exactly the same status and body.
	Respond func(Purchase) (idempotency.Response, error)
}

// PurchaseResult is the outcome of Purchase.
type PurchaseResult struct {
	// Purchase is the new purchase; zero when Replayed.
	Purchase Purchase
	// Response is what to answer: the new purchase's rendered response, or
	// the stored response of the original request.
	Response idempotency.Response
	// Replayed is true when Response is the stored one.
	Replayed bool
}

// Purchase holds a seat for the student and records the intent to start the
// saga (purchase.requested in the outbox), in one transaction; the saga
// itself starts when the relay delivers the event. The answer is 202: the
// purchase is accepted, not done (docs/principles.md §1.5). Errors:
// club.ErrIdempotencyKeyRequired, club.ErrIdempotencyKeyReused,
// ErrIntensiveNotFound, ErrIntensiveFull, club.ErrContention, or an
// infrastructure error.
func (s *Service) Purchase(ctx context.Context, req PurchaseRequest) (PurchaseResult, error) {
	if err := idempotency.ValidateKey(req.IdempotencyKey); err != nil {
		return PurchaseResult{}, err
	}
	if req.IntensiveID == "" || req.StudentID == "" || req.RequestFingerprint == "" || req.Respond == nil {
		return PurchaseResult{}, errors.New("purchase: IntensiveID, StudentID, RequestFingerprint and Respond are required")
	}
	// Fast path for retries; a duplicate racing past it loses the
	// transaction on the idempotency record and is answered as a replay.
	rec, err := s.idem.Get(ctx, req.StudentID, req.IdempotencyKey)
	switch {
	case err == nil:
		return replay(rec, req.RequestFingerprint)
	case !errors.Is(err, club.ErrNotFound):
		return PurchaseResult{}, fmt.Errorf("purchase: read idempotency record: %w", err)
	}

	in, err := s.intensives.Get(ctx, req.IntensiveID)
	if err != nil {
		return PurchaseResult{}, fmt.Errorf("purchase a seat of %s: %w", req.IntensiveID, err)
	}
	// No seat check here: the transaction decides, so that concurrent
	// purchases cannot oversell.
	now := s.now()
	p, err := New("p-"+s.newID(), in, req.StudentID, now)
	if err != nil {
		return PurchaseResult{}, fmt.Errorf("purchase: %w", err)
	}
	env, err := events.New(s.newID(), now, events.PurchaseRequested{
		PurchaseID: p.ID(), IntensiveID: in.ID(), StudentID: p.StudentID(),
		AmountCents: p.Price().AmountCents, Currency: p.Price().Currency, HoldExpiresAt: p.HoldExpiresAt(),
	})
	if err != nil {
		return PurchaseResult{}, fmt.Errorf("purchase: %w", err)
	}
	resp, err := req.Respond(p)
	if err != nil {
		return PurchaseResult{}, fmt.Errorf("purchase: render response: %w", err)
	}
	err = s.store.Create(ctx, Creation{
		Purchase: p,
		Event:    env,
		Idempotency: idempotency.Record{
			Caller: req.StudentID, Key: req.IdempotencyKey, Fingerprint: req.RequestFingerprint,
			Response: resp, ResourceID: p.ID(), CreatedAt: now,
		},
	})
	if exists, ok := errors.AsType[*idempotency.ExistsError](err); ok {
		return replay(exists.Record, req.RequestFingerprint)
	}
	if err != nil {
		return PurchaseResult{}, fmt.Errorf("purchase a seat of %s for %s: %w", req.IntensiveID, req.StudentID, err)
	}
	return PurchaseResult{Purchase: p, Response: resp}, nil
}

func replay(rec idempotency.Record, fingerprint string) (PurchaseResult, error) {
	resp, err := rec.Replay(fingerprint)
	if err != nil {
		return PurchaseResult{}, fmt.Errorf("purchase: %w", err)
	}
	return PurchaseResult{Response: resp, Replayed: true}, nil
}

// Get returns a purchase its student may see; anyone else gets
// club.ErrNotFound, as for a missing one.
func (s *Service) Get(ctx context.Context, id, callerID string) (Purchase, error) {
	p, err := s.store.Get(ctx, id)
	if err != nil {
		return Purchase{}, fmt.Errorf("get purchase %s: %w", id, err)
	}
	if !p.VisibleTo(callerID) {
		return Purchase{}, fmt.Errorf("get purchase %s: %w", id, club.ErrNotFound)
	}
	return p, nil
}
