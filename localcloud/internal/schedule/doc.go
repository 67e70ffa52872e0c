// Package schedule fires the template's scheduled rules in the local cloud,
// which the emulator stores but never fires. A Runner parses a rate() or
// six-field cron() expression (EventBridge syntax, UTC) and invokes its
// function at each fire time with EventBridge's scheduled event
// (events.EventBridgeEvent: detail-type "Scheduled Event", source
// "aws.events", resources [rule ARN], detail {}) or with the target's Input
// verbatim.
//
// Contracts:
//
//   - Delivery is at least once, like EventBridge → Lambda: each fire is
//     invoked in the background, and a failure (function error or failed
//     invoke) is retried twice, one then two seconds apart, then logged and
//     dropped. A slow or failing function never delays the next fire, so
//     deliveries of consecutive fires may overlap.
//   - Fire times are computed in schedule time, which starts at the clock's
//     time when Run starts and runs Options.Speed times faster; the event's
//     time field is the scheduled fire time. Rates fire one interval after
//     the start and then every interval. Fire times missed while the process
//     could not keep up are skipped, not replayed.
//   - FireNow delivers one event at once, synchronously, whatever the
//     schedule's state; it is how people and tools trigger a schedule by hand.
//   - Time comes from a Clock, so tests drive schedules deterministically.
//
// Run, FireNow and Stats are safe for concurrent use.
package schedule
