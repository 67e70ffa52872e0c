package sqsquery

// kind says how one parameter is spelled in a Query form.
type kind int

const (
	// kindString is a plain `Name=value`.
	kindString kind = iota
	// kindInt is `Name=42`, sent as a JSON number.
	kindInt
	// kindList is a flattened list: `Name.1=a&Name.2=b`.
	kindList
	// kindMap is a flattened map: `Name.1.<key>=k&Name.1.Value=v`, or with a
	// structured value `Name.1.Value.<member>=...`.
	kindMap
	// kindEntries is a flattened list of structures: `Name.1.<member>=...`.
	kindEntries
)

// param maps one member of an action's input between its Query spelling and
// its JSON spelling. The two differ for every collection: the Query protocol
// names a flattened list after its element (AttributeName.1), JSON after the
// whole (AttributeNames).
type param struct {
	query string
	json  string
	kind  kind
	// mapKey names the key field of a kindMap entry ("Name" or "Key").
	mapKey string
	// members are the members of a kindEntries element, or of a kindMap value
	// that is a structure; nil for a kindMap whose values are strings.
	members []param
}

// action describes one SQS operation.
type action struct {
	params []param
	// hasResult says whether the Query response wraps its output in an
	// <ActionResult> element. Operations without output (DeleteQueue, ...)
	// answer with ResponseMetadata alone.
	hasResult bool
}

func str(name string) param             { return param{query: name, json: name, kind: kindString} }
func integer(name string) param         { return param{query: name, json: name, kind: kindInt} }
func list(query, jsonName string) param { return param{query: query, json: jsonName, kind: kindList} }
func entries(query string, members ...param) param {
	return param{query: query, json: "Entries", kind: kindEntries, members: members}
}

var (
	queueURL = str("QueueUrl")

	// messageAttributeValue is the MessageAttributeValue structure, shared by
	// message attributes and message system attributes.
	messageAttributeValue = []param{
		str("StringValue"),
		str("BinaryValue"), // base64 in both protocols
		list("StringListValue", "StringListValues"),
		list("BinaryListValue", "BinaryListValues"),
		str("DataType"),
	}
	messageAttributes = param{query: "MessageAttribute", json: "MessageAttributes", kind: kindMap,
		mapKey: "Name", members: messageAttributeValue}
	messageSystemAttributes = param{query: "MessageSystemAttribute", json: "MessageSystemAttributes", kind: kindMap,
		mapKey: "Name", members: messageAttributeValue}
	queueAttributes = param{query: "Attribute", json: "Attributes", kind: kindMap, mapKey: "Name"}
)

// tags is the tag map. CreateQueue's JSON member is "tags" (lower case) while
// TagQueue's is "Tags"; both are Tag.N.Key/Value in a form.
func tags(jsonName string) param {
	return param{query: "Tag", json: jsonName, kind: kindMap, mapKey: "Key"}
}

// actions is the SQS API (2012-11-05) as of the JSON protocol model, which
// also has the operations added after the Query model was frozen
// (MessageSystemAttributeNames, the message move tasks).
var actions = map[string]action{
	"AddPermission": {params: []param{
		queueURL, str("Label"),
		list("AWSAccountId", "AWSAccountIds"),
		list("ActionName", "Actions"),
	}},
	"CancelMessageMoveTask": {hasResult: true, params: []param{str("TaskHandle")}},
	"ChangeMessageVisibility": {params: []param{
		queueURL, str("ReceiptHandle"), integer("VisibilityTimeout"),
	}},
	"ChangeMessageVisibilityBatch": {hasResult: true, params: []param{
		queueURL,
		entries("ChangeMessageVisibilityBatchRequestEntry",
			str("Id"), str("ReceiptHandle"), integer("VisibilityTimeout")),
	}},
	"CreateQueue": {hasResult: true, params: []param{
		str("QueueName"), queueAttributes, tags("tags"),
	}},
	"DeleteMessage": {params: []param{queueURL, str("ReceiptHandle")}},
	"DeleteMessageBatch": {hasResult: true, params: []param{
		queueURL,
		entries("DeleteMessageBatchRequestEntry", str("Id"), str("ReceiptHandle")),
	}},
	"DeleteQueue": {params: []param{queueURL}},
	"GetQueueAttributes": {hasResult: true, params: []param{
		queueURL, list("AttributeName", "AttributeNames"),
	}},
	"GetQueueUrl": {hasResult: true, params: []param{
		str("QueueName"), str("QueueOwnerAWSAccountId"),
	}},
	"ListDeadLetterSourceQueues": {hasResult: true, params: []param{
		queueURL, str("NextToken"), integer("MaxResults"),
	}},
	"ListMessageMoveTasks": {hasResult: true, params: []param{
		str("SourceArn"), integer("MaxResults"),
	}},
	"ListQueueTags": {hasResult: true, params: []param{queueURL}},
	"ListQueues": {hasResult: true, params: []param{
		str("QueueNamePrefix"), str("NextToken"), integer("MaxResults"),
	}},
	"PurgeQueue": {params: []param{queueURL}},
	"ReceiveMessage": {hasResult: true, params: []param{
		queueURL,
		list("AttributeName", "AttributeNames"),
		list("MessageSystemAttributeName", "MessageSystemAttributeNames"),
		list("MessageAttributeName", "MessageAttributeNames"),
		integer("MaxNumberOfMessages"),
		integer("VisibilityTimeout"),
		integer("WaitTimeSeconds"),
		str("ReceiveRequestAttemptId"),
	}},
	"RemovePermission": {params: []param{queueURL, str("Label")}},
	"SendMessage": {hasResult: true, params: []param{
		queueURL, str("MessageBody"), integer("DelaySeconds"),
		messageAttributes, messageSystemAttributes,
		str("MessageDeduplicationId"), str("MessageGroupId"),
	}},
	"SendMessageBatch": {hasResult: true, params: []param{
		queueURL,
		entries("SendMessageBatchRequestEntry",
			str("Id"), str("MessageBody"), integer("DelaySeconds"),
			messageAttributes, messageSystemAttributes,
			str("MessageDeduplicationId"), str("MessageGroupId")),
	}},
	"SetQueueAttributes": {params: []param{queueURL, queueAttributes}},
	"StartMessageMoveTask": {hasResult: true, params: []param{
		str("SourceArn"), str("DestinationArn"), integer("MaxNumberOfMessagesPerSecond"),
	}},
	"TagQueue":   {params: []param{queueURL, tags("Tags")}},
	"UntagQueue": {params: []param{queueURL, list("TagKey", "TagKeys")}},
}

// takesQueueURL reports whether the action addresses a queue, so that a
// QueueUrl missing from the form may be taken from the request path.
func (a action) takesQueueURL() bool {
	for _, p := range a.params {
		if p.json == "QueueUrl" {
			return true
		}
	}
	return false
}
