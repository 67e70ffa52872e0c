package ddbstream

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
)

type recordingJournal struct {
	appended map[string][]Record
	infos    map[string]StreamInfo
}

func (j *recordingJournal) Append(arn string, rs []Record) {
	j.appended[arn] = append(j.appended[arn], rs...)
}
func (j *recordingJournal) Described(info StreamInfo) { j.infos[info.StreamARN] = info }

func TestJournalSeesEveryChangeAndRestoreGivesItBack(t *testing.T) {
	arn := StreamARN("arn:aws:dynamodb:us-east-1:000000000000:table/outbox")
	j := &recordingJournal{appended: map[string][]Record{}, infos: map[string]StreamInfo{}}
	log := NewLog()
	log.SetJournal(j)
	log.Enable(StreamInfo{StreamARN: arn, TableName: "outbox", Label: streamLabel, ViewType: ViewNewImage,
		KeySchema: []KeyElement{{AttributeName: "pk", KeyType: "HASH"}}})
	ev := func(id string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventID: id, EventName: "INSERT"}
	}
	log.Append(arn, ev("a"), ev("b"))
	log.Append(arn, ev("c"))
	require.Len(t, j.appended[arn], 3)
	require.Equal(t, uint64(3), j.appended[arn][2].Seq)
	require.Equal(t, SequenceString(3), j.appended[arn][2].Event.Change.SequenceNumber)
	require.Equal(t, ViewNewImage, j.infos[arn].ViewType)
	require.True(t, j.infos[arn].Enabled)
	log.Disable(arn)
	require.False(t, j.infos[arn].Enabled, "a disabled stream is reported")

	// The next run restores the stream and carries on its numbering.
	next := NewLog()
	require.NoError(t, next.Restore(j.infos[arn], j.appended[arn]))
	info, ok := next.Info(arn)
	require.True(t, ok)
	require.Equal(t, j.infos[arn], info)
	got, err := next.Read(context.Background(), arn, 1, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c"}, []string{got[0].Event.EventID, got[1].Event.EventID})
	next.Enable(info)
	require.Equal(t, uint64(4), next.Append(arn, ev("d"))[0].Seq)

	require.ErrorContains(t, next.Restore(info, nil), "holds 4 records", "no restore over records")
	gap := []Record{{Seq: 1}, {Seq: 3}}
	other := StreamARN("arn:aws:dynamodb:us-east-1:000000000000:table/other")
	require.ErrorContains(t, NewLog().Restore(StreamInfo{StreamARN: other, CreatedAt: time.Now()}, gap), "record 2 has sequence number 3")
}
