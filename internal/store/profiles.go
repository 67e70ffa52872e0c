package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/profile"
)

type profileItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	Entity      string `dynamodbav:"entity"`
	UserID      string `dynamodbav:"user_id"`
	Email       string `dynamodbav:"email"`
	DisplayName string `dynamodbav:"display_name"`
	UpdatedAt   string `dynamodbav:"updated_at"`
}

// Profiles implements profile.Store and enrollment.ProfileSeeder on the club
// table.
type Profiles struct{ *base }

var (
	_ profile.Store            = (*Profiles)(nil)
	_ enrollment.ProfileSeeder = (*Profiles)(nil)
)

// Put replaces the profile (last write wins).
func (s *Profiles) Put(ctx context.Context, p profile.Profile) error {
	item, err := marshalProfile(p)
	if err != nil {
		return fmt.Errorf("put profile of %s: %w", p.UserID, err)
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.cfg.ClubTable), Item: item}); err != nil {
		return fmt.Errorf("put profile of %s: %w", p.UserID, err)
	}
	return nil
}

// CreateIfAbsent puts the profile only if the user has none (a conditional
// put), so a default never overwrites the user's own choice.
func (s *Profiles) CreateIfAbsent(ctx context.Context, p profile.Profile) (bool, error) {
	item, err := marshalProfile(p)
	if err != nil {
		return false, fmt.Errorf("create profile of %s: %w", p.UserID, err)
	}
	created, err := s.putNew(ctx, item)
	if err != nil {
		return false, fmt.Errorf("create profile of %s: %w", p.UserID, err)
	}
	return created, nil
}

func marshalProfile(p profile.Profile) (map[string]types.AttributeValue, error) {
	pk, sk := profileKey(p.UserID)
	return attributevalue.MarshalMap(profileItem{
		PK: pk, SK: sk, Entity: "profile",
		UserID: p.UserID, Email: p.Email, DisplayName: p.DisplayName, UpdatedAt: formatTime(p.UpdatedAt),
	})
}

// Get reads a profile with a strongly consistent read.
func (s *Profiles) Get(ctx context.Context, userID string) (profile.Profile, error) {
	it, err := readItem[profileItem](ctx, s.base, itemKey(profileKey(userID)), "profile of "+userID, club.ErrNotFound)
	if err != nil {
		return profile.Profile{}, err
	}
	return it.profile()
}

// maxBatchGetKeys is DynamoDB's limit of keys in one BatchGetItem.
const maxBatchGetKeys = 100

// GetMany reads the profiles of several users with strongly consistent
// reads, up to 100 in one BatchGetItem. The map holds the profiles it read;
// a user without a profile is absent, and so is one whose key DynamoDB left
// unprocessed (a caller that needs it reads it with Get).
func (s *Profiles) GetMany(ctx context.Context, userIDs []string) (map[string]profile.Profile, error) {
	out := make(map[string]profile.Profile, len(userIDs))
	seen := make(map[string]bool, len(userIDs))
	var keys []map[string]types.AttributeValue
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		res, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			s.cfg.ClubTable: {Keys: keys, ConsistentRead: aws.Bool(true)},
		}})
		keys = nil
		if err != nil {
			return fmt.Errorf("read %d profiles: %w", len(seen), err)
		}
		for _, item := range res.Responses[s.cfg.ClubTable] {
			var it profileItem
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return fmt.Errorf("decode profile: %w", err)
			}
			p, err := it.profile()
			if err != nil {
				return err
			}
			out[p.UserID] = p
		}
		return nil
	}
	for _, id := range userIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		keys = append(keys, itemKey(profileKey(id)))
		if len(keys) == maxBatchGetKeys {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

func (it profileItem) profile() (profile.Profile, error) {
	updated, err := parseTime("updated_at", it.UpdatedAt)
	if err != nil {
		return profile.Profile{}, fmt.Errorf("decode profile of %s: %w", it.UserID, err)
	}
	return profile.Profile{UserID: it.UserID, Email: it.Email, DisplayName: it.DisplayName, UpdatedAt: updated}, nil
}
