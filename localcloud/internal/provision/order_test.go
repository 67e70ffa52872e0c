package provision

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/template"
)

func TestDeadLetterQueuesFirst(t *testing.T) {
	t.Parallel()
	queue := func(name, dlq string) template.Queue {
		q := template.Queue{Source: name, ARN: "arn:" + name}
		if dlq != "" {
			q.RedrivePolicy = &template.RedrivePolicy{DeadLetterTargetARN: "arn:" + dlq, MaxReceiveCount: 3}
		}
		return q
	}
	tests := []struct {
		name    string
		queues  []template.Queue
		want    []string
		wantErr string
	}{
		{
			name:   "no redrive keeps the order",
			queues: []template.Queue{queue("A", ""), queue("B", "")},
			want:   []string{"A", "B"},
		},
		{
			name:   "a dead-letter queue moves before its source",
			queues: []template.Queue{queue("Jobs", "JobsDLQ"), queue("JobsDLQ", "")},
			want:   []string{"JobsDLQ", "Jobs"},
		},
		{
			name:   "chains resolve transitively",
			queues: []template.Queue{queue("A", "B"), queue("B", "C"), queue("C", ""), queue("D", "C")},
			want:   []string{"C", "B", "A", "D"},
		},
		{
			name:   "a dead-letter queue outside the stack is not waited for",
			queues: []template.Queue{queue("A", "Elsewhere")},
			want:   []string{"A"},
		},
		{
			name:    "a redrive cycle is an error",
			queues:  []template.Queue{queue("A", "B"), queue("B", "A")},
			wantErr: "provision queue A: its redrive policy leads back to itself",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := deadLetterQueuesFirst(tc.queues)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, q := range got {
				names = append(names, q.Source)
			}
			require.Equal(t, tc.want, names)
		})
	}
}
