package profile_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/profile"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name, email, display, wantField string
	}{
		{"valid", "ann@example.com", "Ann", ""},
		{"trimmed", "  ann@example.com ", "  Ann ", ""},
		{"unicode name", "ann@example.com", strings.Repeat("Я", 100), ""},
		{"no email", "", "Ann", "email"},
		{"not an address", "ann", "Ann", "email"},
		{"with display part", "Ann <ann@example.com>", "Ann", "email"},
		{"two addresses", "a@example.com, b@example.com", "Ann", "email"},
		{"too long email", strings.Repeat("a", 250) + "@example.com", "Ann", "email"},
		{"no display name", "ann@example.com", " ", "display_name"},
		{"long display name", "ann@example.com", strings.Repeat("Я", 101), "display_name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := profile.New("u-1", tt.email, tt.display, now)
			if tt.wantField == "" {
				require.NoError(t, err)
				require.Equal(t, strings.TrimSpace(tt.email), p.Email)
				require.Equal(t, strings.TrimSpace(tt.display), p.DisplayName)
				return
			}
			var ve *club.ValidationError
			require.True(t, errors.As(err, &ve), "got %v", err)
			require.Equal(t, tt.wantField, ve.Field)
		})
	}
}

func TestParseAddressPolicy(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]profile.AddressPolicy{
		"": profile.PolicyCurrent, "current": profile.PolicyCurrent, "at_enrollment": profile.PolicyAtEnrollment,
	} {
		got, err := profile.ParseAddressPolicy(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := profile.ParseAddressPolicy("latest")
	require.Error(t, err)
}

type finder map[string]profile.Profile

func (f finder) Get(_ context.Context, id string) (profile.Profile, error) {
	if id == "broken" {
		return profile.Profile{}, errors.New("store unavailable")
	}
	p, ok := f[id]
	if !ok {
		return profile.Profile{}, club.ErrNotFound
	}
	return p, nil
}

func TestResolver(t *testing.T) {
	t.Parallel()
	profiles := finder{"s-1": {UserID: "s-1", Email: "new@example.com"}}
	tests := []struct {
		name      string
		policy    profile.AddressPolicy
		student   string
		captured  string
		want      string
		wantErr   error
		transient bool
	}{
		{"current reads the profile now", profile.PolicyCurrent, "s-1", "old@example.com", "new@example.com", nil, false},
		{"current without profile", profile.PolicyCurrent, "s-2", "old@example.com", "", profile.ErrNoAddress, false},
		{"current with failing store", profile.PolicyCurrent, "broken", "", "", nil, true},
		{"at enrollment uses the captured address", profile.PolicyAtEnrollment, "s-1", "old@example.com", "old@example.com", nil, false},
		{"at enrollment without capture", profile.PolicyAtEnrollment, "s-1", "", "", profile.ErrNoAddress, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := profile.Resolver{Policy: tt.policy, Profiles: profiles}
			got, err := r.Address(context.Background(), tt.student, tt.captured)
			switch {
			case tt.transient:
				require.Error(t, err)
				require.NotErrorIs(t, err, profile.ErrNoAddress, "a store failure is not permanent")
			case tt.wantErr != nil:
				require.ErrorIs(t, err, tt.wantErr)
			default:
				require.NoError(t, err)
				require.Equal(t, tt.want, got)
			}
		})
	}
}
