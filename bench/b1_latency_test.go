package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/bench"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/mail"
	"github.com/clubdev/club/internal/store"
)

// BenchmarkEnrollmentLatency (benchmark 1) measures enrollment latency with
// the mail sandbox at 0 ms and at 2,000 ms, for the product API and for the
// synchronous baseline, in that order, at the same constant rate.
func BenchmarkEnrollmentLatency(b *testing.B) {
	const (
		rate   = 40.0
		phase  = 6 * time.Second
		rounds = 5
	)
	s := product
	s.waitIdle(b, 5*time.Minute)
	s.mailReset(b)
	s.mailRate(b, 100000)
	sync := httptest.NewServer(syncBaseline(b, s))
	defer sync.Close()

	students := s.students(b, 300)
	async := s.enrollments(students, s.classes(b, 12))
	baseline := s.enrollments(students, s.classes(b, 12))

	// The four phases run in rounds, so that whatever else the machine
	// does weighs on each of them alike.
	result := &bench.LatencyResult{Rate: rate, Duration: rounds * phase}
	run := func(variant string, mailMS int, gen *enrollments, base string) {
		ok, failed, firstErr := createdOf(attack(gen.targeter(base), constant(rate), phase))
		require.Zero(b, failed, "%s at %d ms: every enrollment succeeds (first failure: %v)", variant, mailMS, firstErr)
		ph := result.Phase(variant, mailMS)
		if ph == nil {
			result.Phases = append(result.Phases, bench.LatencyPhase{Variant: variant, MailLatencyMS: mailMS})
			ph = &result.Phases[len(result.Phases)-1]
		}
		ph.Sent += len(ok) + failed
		ph.Created += len(ok)
		for _, c := range ok {
			ph.Samples = append(ph.Samples, c.latency)
		}
	}
	// Warm up both paths (connections, processes, caches); not measured.
	s.mailFaults(b, map[string]any{"mode": "none"})
	createdOf(attack(async.targeter(s.file.APIURL), constant(rate), 2*time.Second))
	createdOf(attack(baseline.targeter(sync.URL), constant(rate), 2*time.Second))
	for i := 0; i < b.N; i++ {
		result.Phases = nil
		for range rounds {
			// The mails held back by the previous slow phases go out first:
			// on this machine their burst would weigh on the next phase.
			s.mailFaults(b, map[string]any{"mode": "none"})
			s.waitIdle(b, 5*time.Minute)
			run(bench.VariantAsync, 0, async, s.file.APIURL)
			run(bench.VariantSync, 0, baseline, sync.URL)
			s.mailFaults(b, map[string]any{"mode": "slow", "rate": 1, "latency_ms": 2000})
			run(bench.VariantAsync, 2000, async, s.file.APIURL)
			run(bench.VariantSync, 2000, baseline, sync.URL)
		}
		s.mailFaults(b, map[string]any{"mode": "none"})
	}
	for _, ph := range result.Phases {
		d := bench.Summarize(ph.Samples)
		b.Logf("%s, mail %d ms: p50 %s p99 %s (%d)", ph.Variant, ph.MailLatencyMS, d.P50, d.P99, d.N)
	}
	p50, p99 := result.Ratios(bench.VariantAsync, 0, 2000)
	s50, s99 := result.Ratios(bench.VariantSync, 0, 2000)
	b.ReportMetric(p50, "async-p50-ratio")
	b.ReportMetric(p99, "async-p99-ratio")
	b.ReportMetric(s50, "sync-p50-ratio")
	b.ReportMetric(s99, "sync-p99-ratio")
	report.Latency = result
	// Let the notifications the slow phases held back go out before the
	// next benchmark.
	s.waitIdle(b, 5*time.Minute)
}

// syncBaseline is the design of the seed's incident, built from the
// product's own parts: the enrollment service on the same DynamoDB store,
// then the confirmation sent with the same mail client, and only then the
// answer. The student comes from headers (there is no authorizer in front
// of it).
func syncBaseline(tb testing.TB, s *stack) http.Handler {
	tb.Helper()
	st, err := store.New(dynamodb.NewFromConfig(s.aws), store.Config{
		ClubTable: s.file.Tables["ClubTable"], OutboxTable: s.file.Tables["OutboxTable"],
	})
	require.NoError(tb, err)
	svc, err := enrollment.NewService(enrollment.Deps{
		Store: st.Enrollments, Classes: st.Classes, Idempotency: st.Idempotency,
		Policy: profile.PolicyCurrent, Profiles: st.Profiles, SeedProfiles: st.Profiles,
	})
	require.NoError(tb, err)
	mailer, err := mail.New(mail.Config{BaseURL: s.file.MailURL})
	require.NoError(tb, err)
	addresses := profile.Resolver{Policy: profile.PolicyCurrent, Profiles: st.Profiles}

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		classID := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/classes/"), "/enrollments")
		student := r.Header.Get("X-Student-Id")
		fp, err := idempotency.Fingerprint(r.Method, r.URL.Path, nil, student)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ctx := r.Context()
		res, err := svc.Enroll(ctx, enrollment.EnrollRequest{
			ClassID: classID, StudentID: student, TokenEmail: r.Header.Get("X-Student-Email"),
			IdempotencyKey: r.Header.Get("Idempotency-Key"), RequestFingerprint: fp,
			Respond: func(e enrollment.Enrollment) (idempotency.Response, error) {
				body, err := json.Marshal(map[string]string{"enrollment_id": e.ID(), "status": "enrolled"})
				return idempotency.Response{Status: http.StatusCreated, Body: body}, err
			},
		})
		if err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, club.ErrClassFull) || errors.Is(err, club.ErrAlreadyEnrolled) {
				status = http.StatusConflict
			}
			http.Error(w, err.Error(), status)
			return
		}
		if !res.Replayed {
			if err := sendConfirmation(ctx, addresses, mailer, res.Enrollment); err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(res.Response.Status)
		_, _ = w.Write(res.Response.Body)
	})
}

func sendConfirmation(ctx context.Context, addresses profile.Resolver, mailer *mail.Client, e enrollment.Enrollment) error {
	to, err := addresses.Address(ctx, e.StudentID(), "")
	if err != nil {
		return err
	}
	_, err = mailer.Send(ctx, "sync-"+e.ID(), mail.Message{
		To: to, Subject: "You are enrolled", Text: "You have a seat in class " + e.ClassID() + ".\n\nEnrollment " + e.ID() + ".",
	})
	return err
}
