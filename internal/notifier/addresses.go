package notifier

import (
	"context"

	"github.com/clubdev/club/internal/club/profile"
)

// ProfileReader reads profiles one at a time and several at once; the
// store's Profiles implements it.
type ProfileReader interface {
	profile.Finder
	// GetMany returns the profiles it read, by user id; a user missing from
	// the map may have no profile or may simply not have been read.
	GetMany(ctx context.Context, userIDs []string) (map[string]profile.Profile, error)
}

// BatchAddresses resolves addresses for the messages of one batch. Under the
// current address policy the batch's profiles are read in one request
// (BatchGetItem) before its messages are handled, instead of one read per
// message; the profile is still read at send time, a few milliseconds
// before the batch's sends.
type BatchAddresses interface {
	AddressResolver
	// ForBatch returns the resolver for the messages of a batch whose
	// students are studentIDs. It never fails: if the batch read fails,
	// the returned resolver reads each profile on its own.
	ForBatch(ctx context.Context, studentIDs []string) AddressResolver
}

// Addresses is the notifier's BatchAddresses: profile.Resolver's rules over
// a ProfileReader.
type Addresses struct {
	Policy   profile.AddressPolicy
	Profiles ProfileReader
}

var _ BatchAddresses = Addresses{}

// Address resolves one student's address (see profile.Resolver).
func (a Addresses) Address(ctx context.Context, studentID, captured string) (string, error) {
	return profile.Resolver{Policy: a.Policy, Profiles: a.Profiles}.Address(ctx, studentID, captured)
}

// ForBatch reads the batch's profiles at once under the current policy; the
// at_enrollment policy reads no profile at all.
func (a Addresses) ForBatch(ctx context.Context, studentIDs []string) AddressResolver {
	if a.Policy == profile.PolicyAtEnrollment || len(studentIDs) < 2 {
		return a
	}
	read, err := a.Profiles.GetMany(ctx, studentIDs)
	if err != nil {
		return a
	}
	return profile.Resolver{Policy: a.Policy, Profiles: readProfiles{read: read, next: a.Profiles}}
}

// readProfiles is a profile.Finder over profiles read beforehand; a user it
// does not hold is read from next.
type readProfiles struct {
	read map[string]profile.Profile
	next profile.Finder
}

func (r readProfiles) Get(ctx context.Context, userID string) (profile.Profile, error) {
	if p, ok := r.read[userID]; ok {
		return p, nil
	}
	return r.next.Get(ctx, userID)
}
