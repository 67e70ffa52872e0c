// Package ddbfidelity sits in the local cloud's DynamoDB data path, before
// the stream recorder and the engine, and makes sure that no DynamoDB request
// is accepted and carried out differently from AWS without a word.
//
// For each request it does one of three things:
//
//   - passes it on, when the engine carries it out as AWS does;
//   - corrects the engine's answer where that is cheap and exact: a Query or
//     Scan of a secondary index keeps only the items that carry every key
//     attribute of the index (indexes are sparse), projects them as the
//     index's Projection says (KEYS_ONLY, INCLUDE), and pages them with Limit
//     counting the items read from the index; a table ARN given as TableName;
//     the item of ReturnValuesOnConditionCheckFailure; UnprocessedItems of
//     BatchWriteItem; ConsumedCapacity when asked for; the error of a key or
//     an item that does not fit the table's key schema;
//   - refuses it, with a ValidationException whose message names the feature
//     and says it is the local cloud's refusal, when the engine would carry
//     it out otherwise and the answer cannot be corrected from outside: the
//     legacy conditional parameters (Expected, AttributeUpdates, QueryFilter,
//     ScanFilter, KeyConditions, ConditionalOperator), and what an engine
//     gets wrong (Profile).
//
// Every refusal is counted (Stats). The table descriptions it needs (key
// schema, indexes and their projections) are read from the engine with
// DescribeTable and kept until the table is deleted or updated.
package ddbfidelity
