// Package ddbfidelity sits in the local cloud's DynamoDB data path, before
// the stream recorder and the engine, and makes sure that no DynamoDB request
// is accepted and carried out differently from AWS without a word.
//
// For each request it does one of three things:
//
//   - passes it on, when the engine carries it out as AWS does (a request
//     the layer leaves alone is forwarded byte for byte);
//   - answers as AWS would where the engine is kinder or wrong and the
//     answer can be corrected cheaply and exactly: a Query or Scan of a
//     secondary index keeps only the items that carry every key attribute of
//     the index (indexes are sparse), in the index's key order, projected as
//     the index's Projection says (KEYS_ONLY, INCLUDE), paged with Limit
//     counting the items read from the index (index.go); nested projection
//     paths; a table ARN given as TableName; the item of
//     ReturnValuesOnConditionCheckFailure; UnprocessedItems of
//     BatchWriteItem; ConsumedCapacity when asked for; AWS's validation
//     errors for keys and items that do not fit the key schema, unused
//     expression attribute names and values, updates of key attributes,
//     items over 400 KB, transactions naming an item twice, batches over 25
//     requests or with a key twice, consistent reads of global indexes;
//   - refuses it, with a ValidationException whose message names the feature
//     and says it is the local cloud's refusal, when the engine would carry
//     it out otherwise and the answer cannot be corrected from outside: the
//     legacy conditional parameters (Expected, AttributeUpdates, QueryFilter,
//     ScanFilter, KeyConditions, ConditionalOperator, AttributesToGet), and
//     what an engine gets wrong (Profile): list_append, list-element
//     updates, floating-point arithmetic on numbers it does not hold exactly.
//
// Every refusal is counted by feature and every correction by kind (Stats;
// /_club/stats serves them). The table descriptions it needs (key schema,
// attribute types, indexes and their projections) are read from the engine
// with DescribeTable and kept until the table is deleted or updated.
//
// The conformance suite (localcloud/conformance) holds a case per
// behaviour, on both engines; docs/local-cloud.md lists what is corrected
// and refused, and why.
package ddbfidelity
