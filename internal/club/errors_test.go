package club_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club"
)

func TestValidationErrorSurvivesWrapping(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("create class: %w", club.Invalid("capacity", "must be between %d and %d", 1, 10000))
	var ve *club.ValidationError
	require.True(t, errors.As(err, &ve))
	require.Equal(t, "capacity", ve.Field)
	require.Equal(t, "create class: capacity: must be between 1 and 10000", err.Error())
}
