package profile_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/profile"
)

func TestFromToken(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	long := strings.Repeat("a", 150)
	tests := []struct {
		name, email, wantName, wantErrField string
	}{
		{"local part names the profile", "ann.lee@example.com", "ann.lee", ""},
		{"trimmed", " ann@example.com ", "ann", ""},
		{"long local part is cut to the limit", long + "@example.com", long[:profile.MaxDisplayNameLength], ""},
		{"no claim", "", "", "email"},
		{"not an address", "ann", "", "email"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := profile.FromToken("u-1", tt.email, now)
			if tt.wantErrField != "" {
				var ve *club.ValidationError
				require.True(t, errors.As(err, &ve), "got %v", err)
				require.Equal(t, tt.wantErrField, ve.Field)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "u-1", p.UserID)
			require.Equal(t, strings.TrimSpace(tt.email), p.Email)
			require.Equal(t, tt.wantName, p.DisplayName)
			require.Equal(t, now, p.UpdatedAt)
		})
	}
}
