package enrollment_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/store/memstore"
)

// racingSeeder loses every CreateIfAbsent to a profile put just before it,
// as a concurrent PUT /me/profile would.
type racingSeeder struct {
	*memstore.Profiles
	chosen profile.Profile
}

func (r racingSeeder) CreateIfAbsent(ctx context.Context, p profile.Profile) (bool, error) {
	if err := r.Profiles.Put(ctx, r.chosen); err != nil {
		return false, err
	}
	return r.Profiles.CreateIfAbsent(ctx, p)
}

// directory is a user directory of verified addresses that counts lookups.
type directory struct {
	emails  map[string]string
	lookups *int
}

func (d directory) Email(_ context.Context, userID string) string {
	*d.lookups++
	return d.emails[userID]
}

type failingSeeder struct{ *memstore.Profiles }

func (failingSeeder) CreateIfAbsent(context.Context, profile.Profile) (bool, error) {
	return false, errors.New("profiles unavailable")
}

func TestFirstEnrollmentSeedsTheProfile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	chosen, err := profile.New("s-1", "chosen@example.org", "Chosen", time.Now())
	require.NoError(t, err)

	tests := []struct {
		name       string
		policy     profile.AddressPolicy
		before     *profile.Profile // stored before enrolling
		tokenEmail string
		racing     bool
		// inDirectory, when set, is the user directory's address for s-1.
		inDirectory *string
		// wantEmail is the profile's address afterwards, "" for no profile.
		wantEmail    string
		wantCaptured string
	}{
		{name: "no profile: made from the token", tokenEmail: "ann@example.com", wantEmail: "ann@example.com"},
		{name: "existing profile is kept", before: &chosen, tokenEmail: "ann@example.com", wantEmail: "chosen@example.org"},
		{name: "token without a usable address: no profile", tokenEmail: "not-an-address", wantEmail: ""},
		{name: "token without e-mail: no profile", tokenEmail: "", wantEmail: ""},
		{name: "a concurrent PUT /me/profile wins", racing: true, tokenEmail: "ann@example.com", wantEmail: "chosen@example.org"},
		{name: "at_enrollment captures the seeded address", policy: profile.PolicyAtEnrollment, tokenEmail: "ann@example.com",
			wantEmail: "ann@example.com", wantCaptured: "ann@example.com"},
		{name: "at_enrollment captures the winner of a race", policy: profile.PolicyAtEnrollment, racing: true, tokenEmail: "ann@example.com",
			wantEmail: "chosen@example.org", wantCaptured: "chosen@example.org"},
		{name: "access token without e-mail: made from the directory", inDirectory: ptr("dir@example.com"), wantEmail: "dir@example.com"},
		{name: "access token, the directory has no address: no profile", inDirectory: ptr(""), wantEmail: ""},
		{name: "the token's address wins over the directory", inDirectory: ptr("dir@example.com"), tokenEmail: "ann@example.com", wantEmail: "ann@example.com"},
		{name: "at_enrollment captures the directory's address", policy: profile.PolicyAtEnrollment, inDirectory: ptr("dir@example.com"),
			wantEmail: "dir@example.com", wantCaptured: "dir@example.com"},
		{name: "at_enrollment captures the existing profile", policy: profile.PolicyAtEnrollment, before: &chosen, tokenEmail: "ann@example.com",
			wantEmail: "chosen@example.org", wantCaptured: "chosen@example.org"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mem := memstore.New()
			var seeder enrollment.ProfileSeeder = mem.Profiles
			if tt.racing {
				seeder = racingSeeder{Profiles: mem.Profiles, chosen: chosen}
			}
			deps := enrollment.Deps{Policy: tt.policy, Profiles: mem.Profiles, SeedProfiles: seeder}
			lookups := 0
			if tt.inDirectory != nil {
				deps.Directory = directory{emails: map[string]string{"s-1": *tt.inDirectory}, lookups: &lookups}
			}
			s := newSetup(t, deps)
			if tt.before != nil {
				require.NoError(t, mem.Profiles.Put(ctx, *tt.before))
			}
			req := request("s-1", "key-00000001")
			req.TokenEmail = tt.tokenEmail
			res, err := s.svc.Enroll(ctx, req)
			require.NoError(t, err, "the seat never depends on an address")
			require.Equal(t, tt.wantCaptured, res.Enrollment.CapturedAddress())
			if tt.inDirectory != nil {
				want := 0
				if tt.tokenEmail == "" && tt.before == nil {
					want = 1
				}
				require.Equal(t, want, lookups, "the directory is asked only when the token has no address and there is no profile")
			}

			got, err := mem.Profiles.Get(ctx, "s-1")
			if tt.wantEmail == "" {
				require.ErrorIs(t, err, club.ErrNotFound)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantEmail, got.Email)
		})
	}
}

func TestSeedingHappensBeforeTheCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a failing profile store writes no seat", func(t *testing.T) {
		t.Parallel()
		mem := memstore.New()
		s := newSetup(t, enrollment.Deps{SeedProfiles: failingSeeder{mem.Profiles}})
		req := request("s-1", "key-00000001")
		req.TokenEmail = "ann@example.com"
		_, err := s.svc.Enroll(ctx, req)
		require.ErrorContains(t, err, "profiles unavailable")
		require.Zero(t, s.store.creates.Load())
	})

	t.Run("an unknown class seeds nothing", func(t *testing.T) {
		t.Parallel()
		mem := memstore.New()
		s := newSetup(t, enrollment.Deps{SeedProfiles: mem.Profiles})
		req := request("s-1", "key-00000001")
		req.ClassID, req.TokenEmail = "no-such-class", "ann@example.com"
		_, err := s.svc.Enroll(ctx, req)
		require.ErrorIs(t, err, club.ErrClassNotFound)
		_, err = mem.Profiles.Get(ctx, "s-1")
		require.ErrorIs(t, err, club.ErrNotFound)
	})

	t.Run("without a seeder nothing is created", func(t *testing.T) {
		t.Parallel()
		s := newSetup(t, enrollment.Deps{})
		req := request("s-1", "key-00000001")
		req.TokenEmail = "ann@example.com"
		_, err := s.svc.Enroll(ctx, req)
		require.NoError(t, err)
		_, err = s.mem.Profiles.Get(ctx, "s-1")
		require.ErrorIs(t, err, club.ErrNotFound)
	})
}

func ptr(s string) *string { return &s }

// countingProfiles counts the profile reads of the enrollment service.
type countingProfiles struct {
	*memstore.Profiles
	reads int
}

func (c *countingProfiles) Get(ctx context.Context, userID string) (profile.Profile, error) {
	c.reads++
	return c.Profiles.Get(ctx, userID)
}

func TestAProfileOnceSeenIsNotReadAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	changed, err := profile.New("s-1", "changed@example.org", "Changed", time.Now())
	require.NoError(t, err)

	tests := []struct {
		name       string
		policy     profile.AddressPolicy
		tokenEmail string
		racing     bool // a concurrent PUT /me/profile wins the first seeding
		// wantReads is the profile reads of three enrollments in three
		// classes, the profile changed after the first.
		wantReads    int
		wantCaptured []string
	}{
		{name: "current policy: the first enrollment seeds it, the others need no read",
			tokenEmail: "ann@example.com", wantReads: 1, wantCaptured: []string{"", "", ""}},
		{name: "current policy, a concurrent PUT wins the seeding: its address is not read", racing: true,
			tokenEmail: "ann@example.com", wantReads: 1, wantCaptured: []string{"", "", ""}},
		{name: "current policy, no address to seed: every enrollment looks again",
			tokenEmail: "", wantReads: 3, wantCaptured: []string{"", "", ""}},
		{name: "at_enrollment: every enrollment reads the address it captures", policy: profile.PolicyAtEnrollment,
			tokenEmail: "ann@example.com", wantReads: 3, wantCaptured: []string{"ann@example.com", "changed@example.org", "changed@example.org"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mem := memstore.New()
			counted := &countingProfiles{Profiles: mem.Profiles}
			var seeder enrollment.ProfileSeeder = mem.Profiles
			if tt.racing {
				seeder = racingSeeder{Profiles: mem.Profiles, chosen: changed}
			}
			s := newSetup(t, enrollment.Deps{Policy: tt.policy, Profiles: counted, SeedProfiles: seeder})
			var captured []string
			for i, classID := range []string{"c-1", "c-2", "c-3"} {
				if classID != "c-1" {
					c, err := class.New(classID, "teacher-1", "Go", 2, time.Date(2026, 4, 1, 17, 0, 0, 0, time.UTC))
					require.NoError(t, err)
					require.NoError(t, s.mem.Classes.Create(ctx, c))
				}
				req := request("s-1", fmt.Sprintf("key-%08d", i))
				req.ClassID, req.TokenEmail = classID, tt.tokenEmail
				res, err := s.svc.Enroll(ctx, req)
				require.NoError(t, err)
				captured = append(captured, res.Enrollment.CapturedAddress())
				if i == 0 && tt.tokenEmail != "" {
					require.NoError(t, mem.Profiles.Put(ctx, changed))
				}
			}
			require.Equal(t, tt.wantReads, counted.reads)
			require.Equal(t, tt.wantCaptured, captured)
		})
	}
}
