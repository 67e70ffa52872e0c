package securitytest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/relay"
	"github.com/clubdev/club/internal/securitytest"
)

// The outbox sweeper writes the club table only to hold its lease: one
// item, LEASE#<lease name> (package store). It may put and delete that
// item and no other.
func TestInfraTemplateScopesTheSweeperToItsLease(t *testing.T) {
	t.Parallel()
	st := loadInfra(t, nil)
	require.Empty(t, problems(securitytest.ItemScopedWrites(st, securitytest.ItemScope{
		Principal: "OutboxSweeperFunction", Table: "ClubTable", LeadingKeys: []string{"LEASE#" + relay.DefaultLeaseName},
	})))
}

func TestItemScopedWritesFindsUnscopedWrites(t *testing.T) {
	t.Parallel()
	scope := securitytest.ItemScope{Principal: "Fn", Table: "Used", LeadingKeys: []string{"LEASE#sweeper"}}
	tests := []struct {
		name     string
		policies string
		want     []string
	}{
		{
			name: "scoped to its item",
			policies: `
        - Statement:
            - Effect: Allow
              Action: [dynamodb:PutItem, dynamodb:DeleteItem]
              Resource: !GetAtt Used.Arn
              Condition: {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["LEASE#sweeper"]}}
            - {Effect: Allow, Action: [dynamodb:GetItem], Resource: !GetAtt Used.Arn}
            - {Effect: Allow, Action: [dynamodb:PutItem], Resource: !GetAtt Other.Arn}
`,
		},
		{
			name:     "anywhere in the table (the sweeper's old lease statement)",
			policies: "        - Statement: [{Effect: Allow, Action: [dynamodb:PutItem, dynamodb:DeleteItem], Resource: !GetAtt Used.Arn}]\n",
			want:     []string{`Fn: statement 1: may write any item of Used: no ForAllValues:StringEquals dynamodb:LeadingKeys condition (want ["LEASE#sweeper"])`},
		},
		{
			name: "another item",
			policies: `
        - Statement:
            - {Effect: Allow, Action: [dynamodb:PutItem], Resource: !GetAtt Used.Arn, Condition: {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["LEASE#sweeper", "PURCHASE#p-1"]}}}
`,
			want: []string{`Fn: statement 1: may write any item of Used: dynamodb:LeadingKeys names "PURCHASE#p-1", not one of ["LEASE#sweeper"]`},
		},
		{
			name: "a pattern, not the keys",
			policies: `
        - Statement:
            - {Effect: Allow, Action: [dynamodb:PutItem], Resource: !GetAtt Used.Arn, Condition: {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["LEASE#*"]}}}
`,
			want: []string{`no ForAllValues:StringEquals dynamodb:LeadingKeys condition`},
		},
		{
			name:     "no write of the table: nothing to scope",
			policies: "        - Statement: [{Effect: Allow, Action: [dynamodb:GetItem], Resource: !GetAtt Used.Arn}]\n",
			want:     []string{"Fn: writes nothing of Used: the item scope checks nothing"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := problems(securitytest.ItemScopedWrites(parse(t, fnTemplate(tt.policies)), scope))
			require.Len(t, got, len(tt.want), "%q", got)
			for i, w := range tt.want {
				require.Contains(t, got[i], w)
			}
		})
	}
	missing := securitytest.ItemScope{Principal: "Gone", Table: "Used", LeadingKeys: []string{"LEASE#sweeper"}}
	require.Equal(t, []string{"Gone: not a function or state machine of this stack"},
		problems(securitytest.ItemScopedWrites(parse(t, fnTemplate("        - Statement: []\n")), missing)))
}
