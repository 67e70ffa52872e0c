// Package purchasetest holds the contract suite of the purchase domain's
// ports (RunStore) and Memory, their in-memory fake. The suite runs against
// Memory here and against the DynamoDB adapters (on kumo, in process) in
// package store, so both keep one contract: all-or-nothing writes, the same
// conditions and error precedence, never an oversold seat.
package purchasetest
