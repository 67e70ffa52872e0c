package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/config"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1.5d", want: 36 * time.Hour},
		{in: "0d", want: 0},
		{in: "60s", want: time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "0", want: 0},
		{in: " 2d ", want: 48 * time.Hour},
		{in: "-1d12h", want: -36 * time.Hour},
		{in: "+3d", want: 72 * time.Hour},
		{in: "", wantErr: "invalid duration"},
		{in: "d", wantErr: "invalid duration"},
		{in: "7", wantErr: "missing unit"},
		{in: "7days", wantErr: "unknown unit"},
		{in: "1d5", wantErr: "missing unit"},
		{in: "1d-2h", wantErr: "unknown unit"},
		{in: "1..2d", wantErr: "number of days"},
		{in: "200000d", wantErr: "out of range"},
		{in: "abc", wantErr: "invalid duration"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := config.ParseDuration(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorContains(t, err, "duration", "the message names what failed")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadGlobals(t *testing.T) {
	t.Parallel()
	full := map[string]string{
		"CLUB_TABLE": "stack-club", "OUTBOX_TABLE": "stack-outbox",
		"INBOX_RETENTION": "7d", "OUTBOX_RETENTION": "36h", "ADDRESS_POLICY": "at_enrollment",
	}
	g, err := config.LoadGlobals(env(full))
	require.NoError(t, err)
	require.Equal(t, config.Globals{
		ClubTable: "stack-club", OutboxTable: "stack-outbox",
		InboxRetention: 7 * 24 * time.Hour, OutboxRetention: 36 * time.Hour,
		AddressPolicy: profile.PolicyAtEnrollment,
	}, g)
	sc := g.Store()
	require.Equal(t, "stack-club", sc.ClubTable)
	require.Equal(t, "stack-outbox", sc.OutboxTable)
	require.Equal(t, 7*24*time.Hour, sc.InboxRetention)
	require.Equal(t, 36*time.Hour, sc.OutboxRetention)
	require.NoError(t, sc.Validate())

	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		g, err := config.LoadGlobals(env(map[string]string{"CLUB_TABLE": "c", "OUTBOX_TABLE": "o"}))
		require.NoError(t, err)
		require.Equal(t, profile.DefaultAddressPolicy, g.AddressPolicy)
		require.Zero(t, g.InboxRetention, "zero means the store's default")
		require.Zero(t, g.OutboxRetention)
	})

	t.Run("every problem at once", func(t *testing.T) {
		t.Parallel()
		_, err := config.LoadGlobals(env(map[string]string{
			"INBOX_RETENTION": "soon", "OUTBOX_RETENTION": "-1d", "ADDRESS_POLICY": "sometimes",
		}))
		require.Error(t, err)
		for _, want := range []string{"CLUB_TABLE is required", "OUTBOX_TABLE is required", "INBOX_RETENTION", "OUTBOX_RETENTION", "must be positive", "ADDRESS_POLICY"} {
			require.ErrorContains(t, err, want)
		}
	})
}
