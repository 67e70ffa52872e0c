// Package persist measures what keeping the local cloud's data costs at
// start-up (issue 20, must-show 3): a club-local whose state directory holds
// 100,000 DynamoDB items is started and timed until GET /healthz answers,
// and its resident memory is read then; the same for an empty state
// directory. It drives the built binary, as `make run` does, and is run by
// itself (it does not start the in-process stack of package bench):
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 30m ./bench/persist
package persist
