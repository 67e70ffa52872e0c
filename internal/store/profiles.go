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
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.cfg.ClubTable),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create profile of %s: %w", p.UserID, err)
	}
	return true, nil
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
	updated, err := parseTime("updated_at", it.UpdatedAt)
	if err != nil {
		return profile.Profile{}, fmt.Errorf("decode profile of %s: %w", userID, err)
	}
	return profile.Profile{UserID: it.UserID, Email: it.Email, DisplayName: it.DisplayName, UpdatedAt: updated}, nil
}
