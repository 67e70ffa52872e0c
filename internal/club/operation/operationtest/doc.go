// Package operationtest holds the contract suite of the operation port
// (RunStore) and Memory, its in-memory fake. The suite runs against Memory
// here and against the DynamoDB adapter (on kumo, in process) in package
// store, so both keep one contract: the operation and its job are written
// together or not at all, and a finished operation never changes.
package operationtest
