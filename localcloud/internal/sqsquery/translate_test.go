package sqsquery

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFormToJSON(t *testing.T) {
	t.Parallel()
	const q = "QueueUrl=http%3A%2F%2Flocalhost%3A4566%2F000000000000%2Fq&"
	const qJSON = `"QueueUrl":"http://localhost:4566/000000000000/q"`
	tests := []struct {
		name   string
		action string
		form   string
		want   string
	}{
		{
			name:   "ListQueues with prefix and page size",
			action: "ListQueues",
			form:   "Action=ListQueues&Version=2012-11-05&QueueNamePrefix=orders&MaxResults=5",
			want:   `{"QueueNamePrefix":"orders","MaxResults":5}`,
		},
		{
			name:   "CreateQueue with attributes and tags",
			action: "CreateQueue",
			form: "QueueName=q.fifo&Attribute.1.Name=FifoQueue&Attribute.1.Value=true" +
				"&Attribute.2.Name=RedrivePolicy&Attribute.2.Value=%7B%22maxReceiveCount%22%3A%223%22%7D" +
				"&Tag.1.Key=team&Tag.1.Value=club&Tag.2.Key=empty&Tag.2.Value=",
			want: `{"QueueName":"q.fifo",
				"Attributes":{"FifoQueue":"true","RedrivePolicy":"{\"maxReceiveCount\":\"3\"}"},
				"tags":{"team":"club","empty":""}}`,
		},
		{
			name:   "TagQueue uses the capitalised Tags member",
			action: "TagQueue",
			form:   q + "Tag.1.Key=a&Tag.1.Value=b",
			want:   `{` + qJSON + `,"Tags":{"a":"b"}}`,
		},
		{
			name:   "UntagQueue",
			action: "UntagQueue",
			form:   q + "TagKey.1=a&TagKey.2=b",
			want:   `{` + qJSON + `,"TagKeys":["a","b"]}`,
		},
		{
			name:   "GetQueueAttributes lists follow the index, not the body order",
			action: "GetQueueAttributes",
			form:   q + "AttributeName.10=Policy&AttributeName.2=QueueArn&AttributeName.1=All",
			want:   `{` + qJSON + `,"AttributeNames":["All","QueueArn","Policy"]}`,
		},
		{
			name:   "SendMessage with every kind of attribute",
			action: "SendMessage",
			form: q + "MessageBody=%3Ca%3E+%26+%E2%82%AC%0A&DelaySeconds=5" +
				"&MessageAttribute.1.Name=kind&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=order" +
				"&MessageAttribute.2.Name=qty&MessageAttribute.2.Value.DataType=Number&MessageAttribute.2.Value.StringValue=007" +
				"&MessageAttribute.3.Name=blob&MessageAttribute.3.Value.DataType=Binary&MessageAttribute.3.Value.BinaryValue=AAEC%2Fw%3D%3D" +
				"&MessageAttribute.4.Name=list&MessageAttribute.4.Value.DataType=String" +
				"&MessageAttribute.4.Value.StringListValue.1=x&MessageAttribute.4.Value.StringListValue.2=y" +
				"&MessageSystemAttribute.1.Name=AWSTraceHeader&MessageSystemAttribute.1.Value.DataType=String" +
				"&MessageSystemAttribute.1.Value.StringValue=Root%3D1-abc" +
				"&MessageGroupId=g1&MessageDeduplicationId=d1",
			want: `{` + qJSON + `,"MessageBody":"<a> & €\n","DelaySeconds":5,
				"MessageAttributes":{
					"kind":{"DataType":"String","StringValue":"order"},
					"qty":{"DataType":"Number","StringValue":"007"},
					"blob":{"DataType":"Binary","BinaryValue":"AAEC/w=="},
					"list":{"DataType":"String","StringListValues":["x","y"]}},
				"MessageSystemAttributes":{"AWSTraceHeader":{"DataType":"String","StringValue":"Root=1-abc"}},
				"MessageGroupId":"g1","MessageDeduplicationId":"d1"}`,
		},
		{
			name:   "SendMessageBatch entries with their own attributes",
			action: "SendMessageBatch",
			form: q + "SendMessageBatchRequestEntry.2.Id=b&SendMessageBatchRequestEntry.2.MessageBody=second" +
				"&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=first" +
				"&SendMessageBatchRequestEntry.1.DelaySeconds=3" +
				"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=n" +
				"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=String" +
				"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue=1",
			want: `{` + qJSON + `,"Entries":[
				{"Id":"a","MessageBody":"first","DelaySeconds":3,
				 "MessageAttributes":{"n":{"DataType":"String","StringValue":"1"}}},
				{"Id":"b","MessageBody":"second"}]}`,
		},
		{
			name:   "ReceiveMessage with every list and number",
			action: "ReceiveMessage",
			form: q + "AttributeName.1=All&MessageSystemAttributeName.1=SentTimestamp" +
				"&MessageAttributeName.1=kind&MessageAttributeName.2=qty" +
				"&MaxNumberOfMessages=10&VisibilityTimeout=0&WaitTimeSeconds=20&ReceiveRequestAttemptId=r1",
			want: `{` + qJSON + `,"AttributeNames":["All"],"MessageSystemAttributeNames":["SentTimestamp"],
				"MessageAttributeNames":["kind","qty"],
				"MaxNumberOfMessages":10,"VisibilityTimeout":0,"WaitTimeSeconds":20,"ReceiveRequestAttemptId":"r1"}`,
		},
		{
			name:   "DeleteMessageBatch",
			action: "DeleteMessageBatch",
			form:   q + "DeleteMessageBatchRequestEntry.1.Id=a&DeleteMessageBatchRequestEntry.1.ReceiptHandle=h1",
			want:   `{` + qJSON + `,"Entries":[{"Id":"a","ReceiptHandle":"h1"}]}`,
		},
		{
			name:   "ChangeMessageVisibilityBatch",
			action: "ChangeMessageVisibilityBatch",
			form: q + "ChangeMessageVisibilityBatchRequestEntry.1.Id=a" +
				"&ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle=h1" +
				"&ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout=60",
			want: `{` + qJSON + `,"Entries":[{"Id":"a","ReceiptHandle":"h1","VisibilityTimeout":60}]}`,
		},
		{
			name:   "AddPermission lists",
			action: "AddPermission",
			form:   q + "Label=l&AWSAccountId.1=111122223333&ActionName.1=SendMessage&ActionName.2=ReceiveMessage",
			want:   `{` + qJSON + `,"Label":"l","AWSAccountIds":["111122223333"],"Actions":["SendMessage","ReceiveMessage"]}`,
		},
		{
			name:   "StartMessageMoveTask is translated although the emulator lacks it",
			action: "StartMessageMoveTask",
			form:   "SourceArn=arn%3Adlq&MaxNumberOfMessagesPerSecond=10",
			want:   `{"SourceArn":"arn:dlq","MaxNumberOfMessagesPerSecond":10}`,
		},
		{
			name:   "undefined parameters are dropped",
			action: "DeleteQueue",
			form:   q + "Action=DeleteQueue&Version=2012-11-05&Unknown=1&X-Amz-Signature=abc",
			want:   `{` + qJSON + `}`,
		},
		{
			name:   "an unknown action keeps its plain parameters as strings",
			action: "FutureAction",
			form:   "Action=FutureAction&Version=2012-11-05&X-Amz-Date=20260101T000000Z&Name=n&Count=3&List.1=x",
			want:   `{"Name":"n","Count":"3"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			form, err := url.ParseQuery(tt.form)
			require.NoError(t, err)
			got, err := formToJSON(tt.action, form)
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(got))
		})
	}
}

func TestFormToJSONRejectsBadParameters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, action, form string
		code, message      string
	}{
		{
			name: "a number that is not", action: "ReceiveMessage", form: "MaxNumberOfMessages=ten",
			code: "InvalidParameterValue", message: "parameter MaxNumberOfMessages",
		},
		{
			name: "a nested number that is not", action: "ChangeMessageVisibilityBatch",
			form: "ChangeMessageVisibilityBatchRequestEntry.2.Id=b&ChangeMessageVisibilityBatchRequestEntry.2.VisibilityTimeout=x",
			code: "InvalidParameterValue", message: "parameter ChangeMessageVisibilityBatchRequestEntry.2.VisibilityTimeout",
		},
		{
			name: "a map entry without its key", action: "CreateQueue", form: "QueueName=q&Attribute.1.Value=5",
			code: "MissingParameter", message: "parameter Attribute.1.Name",
		},
		{
			name: "a message attribute without its name", action: "SendMessage",
			form: "MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=v",
			code: "MissingParameter", message: "parameter MessageAttribute.1.Name",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			form, err := url.ParseQuery(tt.form)
			require.NoError(t, err)
			_, err = formToJSON(tt.action, form)
			var qe *queryError
			require.ErrorAs(t, err, &qe)
			require.Equal(t, tt.code, qe.code)
			require.Equal(t, http.StatusBadRequest, qe.status)
			require.Contains(t, qe.message, tt.message)
		})
	}
}

func TestRenderResult(t *testing.T) {
	t.Parallel()
	const (
		head = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"
		ns   = ` xmlns="http://queue.amazonaws.com/doc/2012-11-05/"`
		meta = `<ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata>`
	)
	tests := []struct {
		name   string
		action string
		json   string
		want   string
	}{
		{
			name:   "CreateQueue",
			action: "CreateQueue",
			json:   `{"QueueUrl":"http://localhost:4566/000000000000/q"}`,
			want: `<CreateQueueResponse` + ns + `><CreateQueueResult>` +
				`<QueueUrl>http://localhost:4566/000000000000/q</QueueUrl>` +
				`</CreateQueueResult>` + meta + `</CreateQueueResponse>`,
		},
		{
			name:   "ListQueues flattens the URL list",
			action: "ListQueues",
			json:   `{"QueueUrls":["http://h/000000000000/a","http://h/000000000000/b"],"NextToken":"t"}`,
			want: `<ListQueuesResponse` + ns + `><ListQueuesResult>` +
				`<QueueUrl>http://h/000000000000/a</QueueUrl><QueueUrl>http://h/000000000000/b</QueueUrl>` +
				`<NextToken>t</NextToken></ListQueuesResult>` + meta + `</ListQueuesResponse>`,
		},
		{
			name:   "ListQueues with no queue still has its result element",
			action: "ListQueues",
			json:   `{}`,
			want:   `<ListQueuesResponse` + ns + `><ListQueuesResult></ListQueuesResult>` + meta + `</ListQueuesResponse>`,
		},
		{
			name:   "GetQueueAttributes writes the map as Attribute Name/Value pairs",
			action: "GetQueueAttributes",
			json:   `{"Attributes":{"QueueArn":"arn:aws:sqs:us-east-1:000000000000:q","VisibilityTimeout":"30"}}`,
			want: `<GetQueueAttributesResponse` + ns + `><GetQueueAttributesResult>` +
				`<Attribute><Name>QueueArn</Name><Value>arn:aws:sqs:us-east-1:000000000000:q</Value></Attribute>` +
				`<Attribute><Name>VisibilityTimeout</Name><Value>30</Value></Attribute>` +
				`</GetQueueAttributesResult>` + meta + `</GetQueueAttributesResponse>`,
		},
		{
			name:   "ListQueueTags writes Tag Key/Value pairs",
			action: "ListQueueTags",
			json:   `{"Tags":{"team":"club"}}`,
			want: `<ListQueueTagsResponse` + ns + `><ListQueueTagsResult>` +
				`<Tag><Key>team</Key><Value>club</Value></Tag>` +
				`</ListQueueTagsResult>` + meta + `</ListQueueTagsResponse>`,
		},
		{
			name:   "ReceiveMessage with attributes, message attributes and escaping",
			action: "ReceiveMessage",
			json: `{"Messages":[{"MessageId":"m1","ReceiptHandle":"r1","MD5OfBody":"5d","Body":"<a> & \"b\"\r\n",` +
				`"Attributes":{"ApproximateReceiveCount":"1","SentTimestamp":"1700000000000"},` +
				`"MD5OfMessageAttributes":"9a",` +
				`"MessageAttributes":{"blob":{"DataType":"Binary","BinaryValue":"AAEC/w=="},` +
				`"kind":{"DataType":"String","StringValue":"order"},` +
				`"list":{"DataType":"String","StringListValues":["x","y"]}}},` +
				`{"MessageId":"m2","ReceiptHandle":"r2","MD5OfBody":"7e","Body":"b"}]}`,
			want: `<ReceiveMessageResponse` + ns + `><ReceiveMessageResult>` +
				`<Message><MessageId>m1</MessageId><ReceiptHandle>r1</ReceiptHandle><MD5OfBody>5d</MD5OfBody>` +
				`<Body>&lt;a&gt; &amp; &#34;b&#34;&#xD;` + "\n" + `</Body>` +
				`<Attribute><Name>ApproximateReceiveCount</Name><Value>1</Value></Attribute>` +
				`<Attribute><Name>SentTimestamp</Name><Value>1700000000000</Value></Attribute>` +
				`<MD5OfMessageAttributes>9a</MD5OfMessageAttributes>` +
				`<MessageAttribute><Name>blob</Name><Value><DataType>Binary</DataType><BinaryValue>AAEC/w==</BinaryValue></Value></MessageAttribute>` +
				`<MessageAttribute><Name>kind</Name><Value><DataType>String</DataType><StringValue>order</StringValue></Value></MessageAttribute>` +
				`<MessageAttribute><Name>list</Name><Value><DataType>String</DataType>` +
				`<StringListValue>x</StringListValue><StringListValue>y</StringListValue></Value></MessageAttribute>` +
				`</Message>` +
				`<Message><MessageId>m2</MessageId><ReceiptHandle>r2</ReceiptHandle><MD5OfBody>7e</MD5OfBody><Body>b</Body></Message>` +
				`</ReceiveMessageResult>` + meta + `</ReceiveMessageResponse>`,
		},
		{
			name:   "SendMessage",
			action: "SendMessage",
			json:   `{"MessageId":"m1","MD5OfMessageBody":"5d","SequenceNumber":"1000"}`,
			want: `<SendMessageResponse` + ns + `><SendMessageResult>` +
				`<MessageId>m1</MessageId><MD5OfMessageBody>5d</MD5OfMessageBody><SequenceNumber>1000</SequenceNumber>` +
				`</SendMessageResult>` + meta + `</SendMessageResponse>`,
		},
		{
			name:   "SendMessageBatch names entries after the action",
			action: "SendMessageBatch",
			json: `{"Successful":[{"Id":"a","MessageId":"m1","MD5OfMessageBody":"5d"}],` +
				`"Failed":[{"Id":"b","SenderFault":true,"Code":"MissingParameter","Message":"no body"}]}`,
			want: `<SendMessageBatchResponse` + ns + `><SendMessageBatchResult>` +
				`<SendMessageBatchResultEntry><Id>a</Id><MessageId>m1</MessageId><MD5OfMessageBody>5d</MD5OfMessageBody></SendMessageBatchResultEntry>` +
				`<BatchResultErrorEntry><Id>b</Id><SenderFault>true</SenderFault><Code>MissingParameter</Code><Message>no body</Message></BatchResultErrorEntry>` +
				`</SendMessageBatchResult>` + meta + `</SendMessageBatchResponse>`,
		},
		{
			name:   "DeleteMessageBatch",
			action: "DeleteMessageBatch",
			json:   `{"Successful":[{"Id":"a"},{"Id":"b"}]}`,
			want: `<DeleteMessageBatchResponse` + ns + `><DeleteMessageBatchResult>` +
				`<DeleteMessageBatchResultEntry><Id>a</Id></DeleteMessageBatchResultEntry>` +
				`<DeleteMessageBatchResultEntry><Id>b</Id></DeleteMessageBatchResultEntry>` +
				`</DeleteMessageBatchResult>` + meta + `</DeleteMessageBatchResponse>`,
		},
		{
			name:   "ChangeMessageVisibilityBatch",
			action: "ChangeMessageVisibilityBatch",
			json:   `{"Successful":[{"Id":"a"}]}`,
			want: `<ChangeMessageVisibilityBatchResponse` + ns + `><ChangeMessageVisibilityBatchResult>` +
				`<ChangeMessageVisibilityBatchResultEntry><Id>a</Id></ChangeMessageVisibilityBatchResultEntry>` +
				`</ChangeMessageVisibilityBatchResult>` + meta + `</ChangeMessageVisibilityBatchResponse>`,
		},
		{
			name:   "an operation without output has only ResponseMetadata",
			action: "DeleteQueue",
			json:   `{}`,
			want:   `<DeleteQueueResponse` + ns + `>` + meta + `</DeleteQueueResponse>`,
		},
		{
			name:   "an empty body is an empty output",
			action: "PurgeQueue",
			json:   ``,
			want:   `<PurgeQueueResponse` + ns + `>` + meta + `</PurgeQueueResponse>`,
		},
		{
			name:   "ListDeadLetterSourceQueues has a lower-case list member",
			action: "ListDeadLetterSourceQueues",
			json:   `{"queueUrls":["http://h/000000000000/src"]}`,
			want: `<ListDeadLetterSourceQueuesResponse` + ns + `><ListDeadLetterSourceQueuesResult>` +
				`<QueueUrl>http://h/000000000000/src</QueueUrl>` +
				`</ListDeadLetterSourceQueuesResult>` + meta + `</ListDeadLetterSourceQueuesResponse>`,
		},
		{
			name:   "ListMessageMoveTasks numbers and nulls",
			action: "ListMessageMoveTasks",
			json:   `{"Results":[{"TaskHandle":"h","Status":"RUNNING","ApproximateNumberOfMessagesMoved":12,"FailureReason":null}]}`,
			want: `<ListMessageMoveTasksResponse` + ns + `><ListMessageMoveTasksResult>` +
				`<ListMessageMoveTasksResultEntry><TaskHandle>h</TaskHandle><Status>RUNNING</Status>` +
				`<ApproximateNumberOfMessagesMoved>12</ApproximateNumberOfMessagesMoved></ListMessageMoveTasksResultEntry>` +
				`</ListMessageMoveTasksResult>` + meta + `</ListMessageMoveTasksResponse>`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := renderResult(tt.action, "req-1", []byte(tt.json))
			require.NoError(t, err)
			require.Equal(t, head+tt.want, string(got))
		})
	}
}

func TestRenderResultRejectsNonObjects(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`[1]`, `"x"`, `{"a":`, `{} {}`, `<xml/>`} {
		_, err := renderResult("ListQueues", "req-1", []byte(body))
		require.Error(t, err, body)
	}
}

func TestErrorFromJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		status      int
		header      http.Header
		body        string
		wantStatus  int
		wantType    string
		wantCode    string
		wantMessage string
	}{
		{
			name:   "kumo writes the Query code of a missing queue",
			status: 400, body: `{"__type":"AWS.SimpleQueueService.NonExistentQueue","message":"The specified queue does not exist"}`,
			wantStatus: 400, wantType: "Sender", wantCode: "AWS.SimpleQueueService.NonExistentQueue",
			wantMessage: "The specified queue does not exist",
		},
		{
			name:   "AWS writes the JSON shape name with its namespace",
			status: 400, body: `{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"gone"}`,
			wantStatus: 400, wantType: "Sender", wantCode: "AWS.SimpleQueueService.NonExistentQueue", wantMessage: "gone",
		},
		{
			name:   "a bare shape name and an upper-case Message",
			status: 400, body: `{"__type":"QueueNameExists","Message":"exists"}`,
			wantStatus: 400, wantType: "Sender", wantCode: "QueueAlreadyExists", wantMessage: "exists",
		},
		{
			name:   "an invalid receipt handle is 404 in the Query protocol",
			status: 400, body: `{"__type":"ReceiptHandleIsInvalid","message":"bad handle"}`,
			wantStatus: 404, wantType: "Sender", wantCode: "ReceiptHandleIsInvalid", wantMessage: "bad handle",
		},
		{
			name:   "batch errors get their AWS.SimpleQueueService prefix",
			status: 400, body: `{"__type":"TooManyEntriesInBatchRequest","message":"max 10"}`,
			wantStatus: 400, wantType: "Sender", wantCode: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", wantMessage: "max 10",
		},
		{
			name:   "a purge in progress is 403",
			status: 400, body: `{"__type":"com.amazonaws.sqs#PurgeQueueInProgress","message":"wait"}`,
			wantStatus: 403, wantType: "Sender", wantCode: "AWS.SimpleQueueService.PurgeQueueInProgress", wantMessage: "wait",
		},
		{
			name:   "KMS errors",
			status: 400, body: `{"__type":"com.amazonaws.sqs#KmsOptInRequired:http://internal.amazon.com/coral/com.amazonaws.sqs/","message":"opt in"}`,
			wantStatus: 403, wantType: "Sender", wantCode: "KMS.OptInRequired", wantMessage: "opt in",
		},
		{
			name:   "the query-error header wins",
			status: 400, header: http.Header{"X-Amzn-Query-Error": {"AWS.SimpleQueueService.NonExistentQueue;Sender"}},
			body:       `{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"gone"}`,
			wantStatus: 400, wantType: "Sender", wantCode: "AWS.SimpleQueueService.NonExistentQueue", wantMessage: "gone",
		},
		{
			name:   "an action the emulator lacks stays its error",
			status: 400, body: `{"__type":"InvalidAction","message":"The action ListDeadLetterSourceQueues is not valid"}`,
			wantStatus: 400, wantType: "Sender", wantCode: "InvalidAction",
			wantMessage: "The action ListDeadLetterSourceQueues is not valid",
		},
		{
			name:   "codes shared by both protocols pass through",
			status: 400, body: `{"__type":"InvalidAttributeName","message":"bad name"}`,
			wantStatus: 400, wantType: "Sender", wantCode: "InvalidAttributeName", wantMessage: "bad name",
		},
		{
			name:   "a server error is the receiver's fault",
			status: 500, body: `{"__type":"InternalError","message":"boom"}`,
			wantStatus: 500, wantType: "Receiver", wantCode: "InternalError", wantMessage: "boom",
		},
		{
			name:   "a proxy failure without an AWS body",
			status: 502, body: ``,
			wantStatus: 502, wantType: "Receiver", wantCode: "InternalFailure",
			wantMessage: "the SQS backend answered HTTP 502 without an AWS error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			header := tt.header
			if header == nil {
				header = http.Header{}
			}
			e := errorFromJSON(tt.status, header, []byte(tt.body))
			require.Equal(t, tt.wantStatus, e.status)
			require.Equal(t, tt.wantType, e.faultType())
			require.Equal(t, tt.wantCode, e.code)
			require.Equal(t, tt.wantMessage, e.message)
		})
	}
}

func TestRenderError(t *testing.T) {
	t.Parallel()
	got := string(renderError(&queryError{status: 400, code: "AWS.SimpleQueueService.NonExistentQueue", message: "a <queue> & more"}, "req-1"))
	want := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><Error><Type>Sender</Type>` +
		`<Code>AWS.SimpleQueueService.NonExistentQueue</Code><Message>a &lt;queue&gt; &amp; more</Message><Detail></Detail>` +
		`</Error><RequestId>req-1</RequestId></ErrorResponse>`
	require.Equal(t, want, got)
}
