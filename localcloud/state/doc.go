// Package state is the on-disk state of a persistent local cloud (`make run`,
// `club-local`): the directory layout, its format version, and the small
// files and journals the local cloud keeps its own state in.
//
// # Layout
//
//	<dir>/
//	  FORMAT              {"format":"club-local-state","version":1}: written first, checked at every start
//	  RUNNING             there while a local cloud runs on it: found at a start, the last run did not stop
//	  kumo/               the emulator's snapshots (KUMO_DATA_DIR): tables, queues, topics, buckets, parameters, …
//	  streams/            the DynamoDB streams: streams.json (their descriptions), <table>.jsonl (records)
//	  checkpoints.json    every stream event source mapping's checkpoint
//	  schedules.json      each schedule's last fire (at real-time speed)
//	  sqs-inflight.jsonl  SQS messages received and not deleted, with their visibility deadline (sqsinflight)
//	  sfn.jsonl           Step Functions executions: start, history, resume points, end (sfn.Journal)
//	  sandboxes/          the mail and payment sandboxes' state (mail.json, payment.json)
//
// # Contracts
//
// Never silently discarded: a directory that is not empty and has no
// FORMAT, a FORMAT that cannot be read, a version newer than Version, or a
// file of the layout that does not parse stops Open with an error naming the
// path and the fix (update the checkout, or start empty with `make reset` /
// `club-local --fresh`). Fresh empties the directory first.
//
// Journals are appended with one write per record batch, without fsync: a
// killed process (kill -9) loses nothing it appended, since the kernel holds
// the written bytes; a power cut may. Snapshot files (WriteJSON) are written
// to a temporary file and renamed, so a reader sees the old or the new file,
// never half of one.
package state
